"""HPKE routes (RFC 9180, base mode, single shot): encrypt and decrypt with a server-held
`hpke-x25519` or `hpke-mlkem768-x25519` key, JSON or raw, single or in batches, and encrypt to a
public key given in the request (`app.ops.hpke`)."""

from fastapi import APIRouter
from pydantic import BaseModel, Field, StrictBool

from app.http.operation import RawQuery
from app.http.schemas import (
    Base64Bytes,
    EncryptionVersion,
    PayloadVersion,
    RequestBody,
)
from app.http.sealing import SealingFamily
from app.ops import hpke
from app.ops.grants import Operation

INFO = "RFC 9180's info, bound to the key schedule; decryption needs the same"
AAD = "associated data, authenticated, not encrypted; decryption needs the same"
BARE = "false: the bare enc ‖ ciphertext that RFC 9180 implementations read"


class HpkeParams(RequestBody):
    info: Base64Bytes = Field(b"", description=INFO)
    aad: Base64Bytes = Field(b"", description=AAD)


class HpkeEncryptRequest(HpkeParams):
    plaintext: Base64Bytes
    envelope: StrictBool = Field(
        True, description="the payload in the envelope that names its key version; " + BARE
    )
    key_version: EncryptionVersion = None


class HpkeDecryptRequest(HpkeParams):
    ciphertext: Base64Bytes
    key_version: PayloadVersion = None


class HpkeParamsQuery(RawQuery):
    """The parameters of a raw (application/octet-stream) request."""

    info: Base64Bytes = Field(b"", description="base64 (percent-encode it in the URL); " + INFO)
    aad: Base64Bytes = Field(b"", description="base64 (percent-encode it in the URL); " + AAD)


class HpkePublicEncryptRequest(HpkeParams):
    type: hpke.KeyType
    public_key: Base64Bytes = Field(
        description="raw: 32 bytes for hpke-x25519; for hpke-mlkem768-x25519 the ML-KEM-768 "
        "encapsulation key (1,184 bytes) followed by the X25519 public key (32). der: the "
        "SubjectPublicKeyInfo, hpke-x25519 only"
    )
    format: hpke.PublicFormat = Field("raw", description="the public key's encoding")
    plaintext: Base64Bytes


class HpkePublicCiphertext(BaseModel):
    ciphertext: Base64Bytes = Field(description="enc ‖ ciphertext")


family = SealingFamily(
    "hpke",
    lambda call: call.services.hpke.key(call.name),
    params=HpkeParamsQuery,
    bare=BARE,
    sealed="payload",
    to_key=True,
)
router: APIRouter = family.router


family.encrypt(
    HpkeEncryptRequest, "Encrypt to a server-held HPKE key (RFC 9180 base mode, single shot)"
)
family.decrypt(HpkeDecryptRequest, "Decrypt with a server-held HPKE key")


@family.keyless(
    "/encrypt",
    access=Operation.ENCRYPT,
    summary="Encrypt to an HPKE public key given in the request (no stored key)",
)
async def encrypt_to_public_key(item: HpkePublicEncryptRequest) -> HpkePublicCiphertext:
    ciphertext = await hpke.encrypt_to(
        item.type, item.public_key, item.format, item.plaintext, item
    )
    return HpkePublicCiphertext(ciphertext=ciphertext)
