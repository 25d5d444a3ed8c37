"""Types shared by the request and response models of several routers: base64 bytes, a
request body that refuses unknown fields, a key version."""

import base64
import binascii
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictBool,
    StrictInt,
    WithJsonSchema,
)


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
RAW_ENCRYPTION_VERSION = "the key version to encrypt under; default: the latest"


class DatakeyRequest(RequestBody):
    bytes: StrictInt = Field(32, ge=1, le=1024, description="the data key's length in bytes")
    plaintext: StrictBool = Field(
        True, description="false: only the wrapped form, for a key to be opened later"
    )
