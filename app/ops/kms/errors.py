"""KMS's errors: AWS's exception names (`__type`) and HTTP statuses, and the service's own
problems and store errors in those terms."""

from app.ops.errors import problem_for

# What AWS answers with a status other than 400.
# Statuses other than 400, as AWS documents them (MissingAuthenticationToken: its common errors).
_STATUS = {
    "KMSInternalException": 500,
    "DependencyTimeoutException": 503,
    "MissingAuthenticationTokenException": 403,
}


class KmsError(Exception):
    """An error as KMS answers it: `{"__type": type, "message": message}` with its status."""

    def __init__(self, type_: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.type = type_
        self.message = message
        self.status = status or _STATUS.get(type_, 400)
        # The seconds of a Retry-After to send with it, if any.
        self.retry_after: int | None = None


def not_found(message: str) -> KmsError:
    return KmsError("NotFoundException", message)


def pending_deletion(arn: str) -> KmsError:
    return KmsError("KMSInvalidStateException", f"{arn} is pending deletion.")


def validation(message: str) -> KmsError:
    return KmsError("ValidationException", message)


def access_denied(message: str) -> KmsError:
    return KmsError("AccessDeniedException", message)


def unsupported(message: str) -> KmsError:
    return KmsError("UnsupportedOperationException", message)


# A native problem's slug (or, failing that, its status) as a KMS exception.
_BY_SLUG = {
    "key-not-found": "NotFoundException",
    "key-exists": "AlreadyExistsException",
    "key-pending-deletion": "KMSInvalidStateException",
    "key-not-pending-deletion": "KMSInvalidStateException",
    "deletion-protected": "KMSInvalidStateException",
    "key-changed": "ConflictException",
    "key-disabled": "DisabledException",
    "wrong-key-type": "InvalidKeyUsageException",
    "version-too-old": "InvalidCiphertextException",
    "decryption-failed": "InvalidCiphertextException",
}
# The native detail of a blob that does not open speaks of key versions, which a KMS blob names
# itself: the cause is rather its encryption context, or the blob.
_MESSAGE_BY_SLUG = {"decryption-failed": "The ciphertext is not valid."}
_BY_STATUS = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "NotFoundException",
    409: "KMSInvalidStateException",
    413: "ValidationException",
    415: "ValidationException",
    422: "ValidationException",
    429: "ThrottlingException",
    503: "DependencyTimeoutException",
}


def kms_error(exc: Exception) -> KmsError | None:
    """`exc` as KMS answers it, or None for a bug (answered as the service answers one)."""
    if isinstance(exc, KmsError):
        return exc
    problem = problem_for(exc)
    if problem is None:
        return None
    type_ = _BY_SLUG.get(problem.slug) or _BY_STATUS.get(problem.status, "KMSInternalException")
    error = KmsError(type_, _MESSAGE_BY_SLUG.get(problem.slug, problem.detail))
    error.retry_after = problem.retry_after if problem.status in (429, 503) else None
    if problem.status in (429, 503) and error.retry_after is None:
        error.retry_after = 1
    return error
