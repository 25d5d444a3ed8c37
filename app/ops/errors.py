"""The service's errors, as problems a client is shown (RFC 9457), free of any web framework.

Every verb in `app.ops` raises a `Problem` or a library or store error that `problem_for` names;
`app.http` turns them into `application/problem+json` answers. Each problem has a stable slug
(its `type` is `urn:cipherd:problem:<slug>`), a title, an HTTP status and a detail that says what
was wrong with the request. Details never contain secret material.
"""

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from app.store import (
    DeletionProtectedError,
    KeyChangedError,
    KeyExistsError,
    KeyMaterial,
    KeyNotFoundError,
    KeyNotPendingDeletionError,
    KeyPendingDeletionError,
    MountExistsError,
    MountNotFoundError,
    NulInTextError,
    RootKeyMismatchError,
    RootKeyUnreachableError,
    StorageFullError,
    StoreUnavailableError,
    VersionNotFoundError,
)
from core.errors import (
    EncodingError,
    InvalidKeyError,
    KeyMismatchError,
    ShapeError,
)

PROBLEM_TYPE_PREFIX = "urn:cipherd:problem:"

# Seconds a client is asked to wait before retrying after a 503.
RETRY_AFTER_SECONDS = 1


class Problem(Exception):
    """An error to show the client as a problem document."""

    def __init__(self, status: int, slug: str, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.title = title
        self.detail = detail
        # The seconds of a 429's or 503's Retry-After, when not RETRY_AFTER_SECONDS.
        self.retry_after: int | None = None

    def body(self) -> dict[str, Any]:
        return {
            "type": f"{PROBLEM_TYPE_PREFIX}{self.slug}",
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }


# A body can hold millions of errors (one per field a model refuses), and describing one takes
# about 3 us: past this many, none is described, only counted.
MAX_DESCRIBED_ERRORS = 10_000


def first_errors(exc: ValidationError, limit: int) -> list[ErrorDetails]:
    """Up to `limit` of a validation's errors, first first; none when there are more than
    MAX_DESCRIBED_ERRORS (`exc.error_count()` says how many)."""
    if exc.error_count() > MAX_DESCRIBED_ERRORS:
        return []
    return exc.errors(include_url=False)[:limit]


def first_error(exc: ValidationError) -> str:
    """A validation's first error as `where: what` (past MAX_DESCRIBED_ERRORS, their number)."""
    described = first_errors(exc, 1)
    return error_text(described[0]) if described else f"{exc.error_count():,} errors"


def error_text(error: Mapping[str, Any]) -> str:
    """A validation error as `where: what` (`what` alone for the whole input)."""
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])


def invalid_input(detail: str) -> Problem:
    return Problem(422, "invalid-input", "Invalid input", detail)


def unauthorized(detail: str) -> Problem:
    return Problem(401, "unauthorized", "Missing or invalid token", detail)


def forbidden(detail: str) -> Problem:
    return Problem(403, "forbidden", "Outside the token's scope", detail)


def wrong_key_type(name: str, key_type: str, wanted: str) -> Problem:
    return key_type_conflict(f"key {name!r} has type {key_type}, which cannot be used for {wanted}")


def key_type_conflict(detail: str) -> Problem:
    """A key's type, or its derivation, is not the one the request needs."""
    return Problem(409, "wrong-key-type", "Wrong key type", detail)


def key_disabled(name: str) -> Problem:
    return Problem(
        409, "key-disabled", "Key disabled", f"key {name!r} is disabled: enable it to use it"
    )


def failed_with(material: KeyMaterial, slug: str, title: str) -> Problem:
    """A 400 for a payload that does not open under the version used, naming that version:
    payloads do not record theirs, so one made before a rotation needs its key_version."""
    hint = (
        "; a payload made under an earlier version needs that key_version"
        if material.version > 1
        else ""
    )
    detail = f"{title.lower()} with version {material.version} of key {material.name!r}{hint}"
    return Problem(400, slug, title, detail)


def decryptable(material: KeyMaterial) -> KeyMaterial:
    """The material, unless its version is below the key's min_decryption_version (400)."""
    return _at_least(material, material.min_decryption_version, "min_decryption_version", "de")


def encryptable(material: KeyMaterial) -> KeyMaterial:
    """The material, unless its version is below the key's min_encryption_version (400)."""
    return _at_least(material, material.min_encryption_version, "min_encryption_version", "en")


def _at_least(material: KeyMaterial, minimum: int, policy: str, prefix: str) -> KeyMaterial:
    if material.version < minimum:
        raise Problem(
            400,
            "version-too-old",
            "Key version too old",
            f"version {material.version} of key {material.name!r} is below its {policy} "
            f"({minimum}) and no longer {prefix}crypts",
        )
    return material


# Every library and store error a verb may raise, with the problem it stands for: status, slug,
# title and, where the error's own message is not the detail to show, the detail. Subclasses
# come before their bases (the first match wins).
_PROBLEMS: tuple[tuple[type[Exception], int, str, str, str | None], ...] = (
    (ShapeError, 422, "shape-mismatch", "Wrong shape", None),
    (KeyMismatchError, 422, "key-mismatch", "Key mismatch", None),
    (InvalidKeyError, 422, "invalid-input", "Invalid input", None),
    (EncodingError, 422, "invalid-input", "Invalid input", None),
    (KeyNotFoundError, 404, "key-not-found", "Key not found", None),
    (VersionNotFoundError, 404, "key-not-found", "Key not found", None),
    (KeyExistsError, 409, "key-exists", "Key exists", None),
    (KeyChangedError, 409, "key-changed", "Key changed", None),
    (KeyPendingDeletionError, 409, "key-pending-deletion", "Key pending deletion", None),
    (KeyNotPendingDeletionError, 409, "key-not-pending-deletion", "Key not pending deletion", None),
    (DeletionProtectedError, 409, "deletion-protected", "Deletion protected", None),
    (MountExistsError, 409, "mount-exists", "Mount exists", None),
    (MountNotFoundError, 404, "mount-not-found", "Mount not found", None),
    (NulInTextError, 422, "invalid-input", "Invalid input", None),
    (StorageFullError, 503, "storage-full", "Storage full", None),
    (StoreUnavailableError, 503, "store-unavailable", "Store unavailable", None),
    # A keyring term this process cannot open: the root key was rotated and its source still
    # gives the old one. Fail closed until the new one is in place.
    (
        RootKeyMismatchError,
        503,
        "root-key-unavailable",
        "Root key unavailable",
        "a keyring term does not open under this process's root key; it was rotated, and the "
        "new root key must be given to this process",
    ),
    # The token that holds it is out of reach: tried again by a later request.
    (RootKeyUnreachableError, 503, "root-key-unavailable", "Root key unavailable", None),
)

KNOWN_ERRORS: tuple[type[Exception], ...] = (Problem, *(entry[0] for entry in _PROBLEMS))


def problem_for(exc: Exception) -> Problem | None:
    """The problem a known library or store error stands for, or None for a bug."""
    if isinstance(exc, Problem):
        return exc
    for error, status, slug, title, detail in _PROBLEMS:
        if isinstance(exc, error):
            return Problem(status, slug, title, detail if detail is not None else str(exc))
    return None
