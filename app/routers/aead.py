"""AEAD routes: AES-GCM and ChaCha20-Poly1305 encrypt, decrypt, data keys and rewrap with a
server-held key, JSON or raw, single or in batches (`app.ops.aead`)."""

from fastapi import APIRouter
from pydantic import Field, StrictBool

from app.http.operation import RawQuery
from app.http.schemas import (
    Base64Bytes,
    DatakeyAnswer,
    DatakeyRequest,
    EncryptionVersion,
    PayloadVersion,
    RequestBody,
)
from app.http.sealing import SealingFamily
from app.ops.aead import AeadKey

ASSOCIATED_DATA = "authenticated, not encrypted; decryption needs the same"
CONTEXT = (
    "derived keys only, and always for them: the key is derived from it; decryption needs the same"
)
BARE = "false: the bare nonce ‖ ciphertext ‖ tag"


class AeadParams(RequestBody):
    associated_data: Base64Bytes = Field(b"", description=ASSOCIATED_DATA)
    context: Base64Bytes | None = Field(None, description=CONTEXT)


class AeadEncryptRequest(AeadParams):
    plaintext: Base64Bytes
    envelope: StrictBool = Field(
        True,
        description="the payload in the envelope that names its key version; " + BARE,
    )
    key_version: EncryptionVersion = None


class AeadDecryptRequest(AeadParams):
    ciphertext: Base64Bytes
    key_version: PayloadVersion = None


class AeadRewrapRequest(AeadDecryptRequest):
    envelope: StrictBool = Field(True, description=BARE)


class AeadDatakeyRequest(DatakeyRequest):
    associated_data: Base64Bytes = Field(b"", description=ASSOCIATED_DATA)
    context: Base64Bytes | None = Field(None, description=CONTEXT)


class AeadDatakey(DatakeyAnswer):
    pass


class AeadParamsQuery(RawQuery):
    """The parameters of a raw (application/octet-stream) request."""

    associated_data: Base64Bytes = Field(
        b"", description="base64 (percent-encode it in the URL); " + ASSOCIATED_DATA
    )
    context: Base64Bytes | None = Field(
        None, description="base64 (percent-encode it in the URL); " + CONTEXT
    )


family = SealingFamily(
    "aead",
    lambda call: call.services.aead.key(call.name),
    params=AeadParamsQuery,
    bare=BARE,
    sealed="ciphertext",
)
router: APIRouter = family.router


family.encrypt(AeadEncryptRequest, "Encrypt with a server-held AES-GCM or ChaCha20-Poly1305 key")
family.decrypt(AeadDecryptRequest, "Decrypt with a server-held AES-GCM or ChaCha20-Poly1305 key")


@family.datakey("A fresh data key and its ciphertext under a server-held AEAD key")
def datakey(key: AeadKey, item: AeadDatakeyRequest) -> AeadDatakey:
    return AeadDatakey.of(*key.datakey(item.bytes, item), item)


family.rewrap(
    AeadRewrapRequest,
    "A ciphertext of an older version under the latest (same associated data and context), its "
    "plaintext kept in the service",
)
