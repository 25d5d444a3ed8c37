"""What a call can raise: one class per problem type of the service, and the transport failures.

Every problem document (`application/problem+json`, RFC 9457) becomes an instance of the class
registered for its `type`, or of `ProblemError` for a type this version does not know, so code
written against one release keeps working when the service adds a problem type.
"""

from typing import Any, ClassVar

PROBLEM_TYPE_PREFIX = "urn:cipherd:problem:"


class CipherdError(Exception):
    """Anything this package raises about a call."""


class UnreachableError(CipherdError):
    """The service could not be reached, or the connection broke before an answer came."""


class UntrustedCertificate(UnreachableError):
    """The service's TLS certificate is not one this client trusts (no CA it knows issued it,
    or it names another host): no request was sent."""


class ProblemError(CipherdError):
    """A problem document the service answered with."""

    slug: ClassVar[str] = ""

    def __init__(
        self,
        status: int,
        type: str,
        title: str,
        detail: str,
        request_id: str | None = None,
        errors: list[dict[str, Any]] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {title}: {detail}")
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.request_id = request_id
        self.errors = errors
        self.retry_after = retry_after


class InvalidInput(ProblemError):
    slug = "invalid-input"


class Unauthorized(ProblemError):
    slug = "unauthorized"


class Forbidden(ProblemError):
    slug = "forbidden"


class KeyNotFound(ProblemError):
    slug = "key-not-found"


class TokenNotFound(ProblemError):
    slug = "token-not-found"


class KeyExists(ProblemError):
    slug = "key-exists"


class KeyChanged(ProblemError):
    slug = "key-changed"


class WrongKeyType(ProblemError):
    slug = "wrong-key-type"


class NoPublicPart(ProblemError):
    slug = "no-public-part"


class DecryptionFailed(ProblemError):
    slug = "decryption-failed"


class AuthenticationFailed(ProblemError):
    slug = "authentication-failed"


class ShapeMismatch(ProblemError):
    slug = "shape-mismatch"


class KeyMismatch(ProblemError):
    slug = "key-mismatch"


class TooMuchWork(ProblemError):
    slug = "too-much-work"


class FunctionNotAllowed(ProblemError):
    slug = "function-not-allowed"


class KeygenQuotaExceeded(ProblemError):
    slug = "keygen-quota-exceeded"


class LeakageBudgetExceeded(ProblemError):
    slug = "leakage-budget-exceeded"


class BodyTooLarge(ProblemError):
    slug = "body-too-large"


class UnsupportedMediaType(ProblemError):
    slug = "unsupported-media-type"


class TooManyRequests(ProblemError):
    slug = "too-many-requests"


class Internal(ProblemError):
    slug = "internal"


class StoreUnavailable(ProblemError):
    slug = "store-unavailable"


class ShuttingDown(ProblemError):
    slug = "shutting-down"


PROBLEM_CLASSES: dict[str, type[ProblemError]] = {
    PROBLEM_TYPE_PREFIX + cls.slug: cls for cls in ProblemError.__subclasses__()
}


def problem_from(
    status: int,
    body: Any,
    request_id: str | None,
    retry_after: float | None = None,
) -> ProblemError:
    """The exception for an answer of `status` whose JSON body is `body` (a problem document,
    or anything else a proxy in between may have answered with)."""
    if isinstance(body, dict) and isinstance(body.get("errors"), list) and "type" not in body:
        # Vault's error answer, at Vault's paths (logins, AppRole, response wrapping)
        detail = "; ".join(str(error) for error in body["errors"]) or f"HTTP {status}"
        return ProblemError(
            status, "about:blank", f"HTTP {status}", detail[:500], request_id, None, retry_after
        )
    if not isinstance(body, dict) or not isinstance(body.get("type"), str):
        detail = body if isinstance(body, str) else "the answer is not a problem document"
        return ProblemError(status, "about:blank", f"HTTP {status}", detail[:500], request_id)
    problem_type = body["type"]
    cls = PROBLEM_CLASSES.get(problem_type, ProblemError)
    errors = body.get("errors")
    return cls(
        status,
        problem_type,
        str(body.get("title", "")),
        str(body.get("detail", "")),
        request_id,
        errors if isinstance(errors, list) else None,
        retry_after,
    )
