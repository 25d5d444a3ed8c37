"""RSA encryption routes: RSAES-OAEP (SHA-256, MGF1-SHA-256, empty label) with a server-held
`rsa-*` key, JSON or raw, single or in batches (`app.ops.rsa`)."""

from fastapi import APIRouter
from pydantic import Field, StrictBool

from app.http.operation import RawQuery
from app.http.schemas import (
    Base64Bytes,
    EncryptionVersion,
    PayloadVersion,
    RequestBody,
)
from app.http.sealing import SealingFamily

BARE = "false: the bare OAEP ciphertext, as long as the modulus"


class RsaEncryptRequest(RequestBody):
    plaintext: Base64Bytes = Field(
        description="at most 190 bytes for rsa-2048, 318 for rsa-3072, 446 for rsa-4096"
    )
    envelope: StrictBool = Field(
        True, description="the ciphertext in the envelope that names its key version; " + BARE
    )
    key_version: EncryptionVersion = None


class RsaDecryptRequest(RequestBody):
    ciphertext: Base64Bytes
    key_version: PayloadVersion = None


# OAEP's hash and label are fixed: a raw request's query names only the envelope and version.
family = SealingFamily(
    "rsa",
    lambda call: call.services.rsa.key(call.name),
    params=RawQuery,
    bare=BARE,
    sealed="ciphertext",
)
router: APIRouter = family.router


family.encrypt(RsaEncryptRequest, "Encrypt with a server-held RSA key (RSAES-OAEP, SHA-256)")
family.decrypt(RsaDecryptRequest, "Decrypt with a server-held RSA key (RSAES-OAEP, SHA-256)")
