"""Types shared by the request and response models of several routers: base64 bytes, a
request body that refuses unknown fields, a key version, a listing's page size."""

import base64
import binascii
from typing import Annotated, Any, ClassVar, Self

from fastapi import Query
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictBool,
    StrictInt,
    WithJsonSchema,
)

from app.ops.envelope import Sealed
from app.ops.vault_fields import writable_json

# The items a listing answers at most in one page (keys, tokens, audit records, FE functions).
MAX_PAGE = 1000
PageSize = Annotated[int, Query(ge=1, le=MAX_PAGE)]


def _decode_base64(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str):
        raise ValueError("must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("is not valid base64 (RFC 4648, with padding)") from None


# Base64 with its padding, as `_decode_base64` takes it: fuzzers generate valid values from it.
BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"

Base64Bytes = Annotated[
    bytes,
    BeforeValidator(_decode_base64),
    PlainSerializer(lambda raw: base64.b64encode(raw).decode("ascii"), return_type=str),
    WithJsonSchema(
        {
            "type": "string",
            "contentEncoding": "base64",
            "pattern": BASE64_PATTERN,
            "description": "base64 (RFC 4648)",
        }
    ),
]


class RequestBody(BaseModel):
    """A JSON request body or a set of query parameters. A field it does not name is refused
    (422) rather than dropped: a misspelt option (`exportible`) or one the operation does not
    take (`key_version` on an encryption) would otherwise pass unnoticed, with its default."""

    model_config = ConfigDict(extra="forbid")


# A key version in JSON: a number, not `true` (which pydantic would take as 1) nor "2".
KeyVersion = Annotated[
    StrictInt | None, Field(ge=1, description="the key version; default: the latest")
]


# The key version of an ECIES or AEZ decryption, which its payload's envelope may name.
PayloadVersion = Annotated[
    StrictInt | None,
    Field(
        ge=1,
        description="the key version, used exactly; default: the envelope's, or for a bare "
        "payload the versions from the latest down",
    ),
]
EncryptionVersion = Annotated[
    StrictInt | None,
    Field(
        ge=1,
        description="the key version to encrypt under, at least the key's "
        "min_encryption_version; default: the latest",
    ),
]


# A JSON object given as it is (a token's claims, a role's bound claims), kept or signed as
# given: its numbers finite, as 1e400 reads as an infinity that JSON cannot write back.
JsonObject = Annotated[dict[str, Any], AfterValidator(writable_json)]


class DatakeyRequest(RequestBody):
    bytes: StrictInt = Field(32, ge=1, le=1024, description="the data key's length in bytes")
    plaintext: StrictBool = Field(
        True, description="false: only the wrapped form, for a key to be opened later"
    )


class DatakeyAnswer(BaseModel):
    ciphertext: Base64Bytes = Field(description="the data key, encrypted as by encrypt")
    plaintext: Base64Bytes | None = Field(None, description="the data key; null if not asked")
    key_version: int

    @classmethod
    def of(cls, data_key: bytes, sealed: Sealed, request: DatakeyRequest) -> Self:
        """The data key sealed, and itself only if the request asks for it."""
        return cls(
            ciphertext=sealed.data,
            plaintext=data_key if request.plaintext else None,
            key_version=sealed.version,
        )


class SealedAnswer(BaseModel):
    # Bytes made under one key version, in the field `data_field` names, and that version. No
    # docstring: it would describe every subclass in the document.
    data_field: ClassVar[str]

    @classmethod
    def of(cls, sealed: Sealed) -> Self:
        return cls(**{cls.data_field: sealed.data, "key_version": sealed.version})

    def raw(self) -> tuple[bytes, int]:
        """The bytes and the key version of a raw (application/octet-stream) answer."""
        return self.__dict__[self.data_field], self.__dict__["key_version"]


class CiphertextAnswer(SealedAnswer):
    data_field = "ciphertext"
    ciphertext: Base64Bytes
    key_version: int


class PlaintextAnswer(SealedAnswer):
    data_field = "plaintext"
    plaintext: Base64Bytes
    key_version: int
