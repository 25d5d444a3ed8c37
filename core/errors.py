"""Exceptions shared by every family in `core`.

Few and named for what happened, so that the service can map each one to one HTTP problem type
without looking at messages.
"""


class CipherdError(Exception):
    """Base class of every error `core` raises on purpose."""


class InvalidKeyError(CipherdError, ValueError):
    """A key is malformed: wrong length, bad encoding, or a point not on the curve."""


class DecryptionError(CipherdError):
    """A ciphertext could not be decrypted: bad tag, bad point or truncated data.

    Deliberately carries no detail about which check failed.
    """


class EncodingError(CipherdError, ValueError):
    """Serialised bytes are malformed: truncated, wrong version, or a point off the curve or
    outside the subgroup."""


class ShapeError(CipherdError, ValueError):
    """An input has the wrong number of entries for the scheme's dimension."""

    def __init__(self, expected: int, actual: int) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(f"input has {actual} entries where {expected} are needed")


class KeyMismatchError(CipherdError, ValueError):
    """A functional key and a ciphertext come from different master keys (or versions of one):
    decrypting them would give no meaningful value."""
