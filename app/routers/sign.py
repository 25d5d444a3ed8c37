"""Signature routes: sign and verify with a server-held signing key (ECDSA, Ed25519, RSA,
ML-DSA; single or batch), and verify against a public key given in the request
(`app.ops.sign`)."""

from collections.abc import Awaitable

from fastapi import APIRouter
from pydantic import BaseModel, Field, StrictBool

from app.http.operation import Family, KeyCall
from app.http.schemas import Base64Bytes, PayloadVersion, RequestBody, SealedAnswer
from app.ops import sign as signatures
from app.ops.grants import Operation
from app.ops.sign import SigningKey


def _signing_key(call: KeyCall) -> Awaitable[SigningKey]:
    return call.services.signer.key(call.name)


signing = Family("sign", _signing_key)
verifying = Family("verify", _signing_key)
routers: tuple[APIRouter, ...] = (signing.router, verifying.router)


class SignOptions(RequestBody):
    hash: signatures.Hash | None = Field(
        None,
        description="the message's hash: ecdsa-secp256k1 sha256 (default) or keccak256; "
        "ecdsa-p256, -p384 and -p521 sha256, sha384 or sha512 (default: sha256, sha384 and "
        "sha512 respectively); RSA sha256 (default), sha384 or sha512",
    )
    prehashed: StrictBool | None = Field(
        None,
        description="ECDSA and RSA: the message is itself the hash's digest (32, 48 or 64 "
        "bytes); default false",
    )
    format: signatures.Format | None = Field(
        None,
        description="ECDSA: DER (the default), compact r ‖ s (each the curve's size: 32, 48 or "
        "66 bytes) or, ecdsa-secp256k1 only, recoverable r ‖ s ‖ v (65 bytes, v the recovery "
        "id 0 or 1)",
    )
    padding: signatures.Padding | None = Field(
        None,
        description="RSA: pss (the default; MGF1 with the message's hash, a salt as long as "
        "the digest) or pkcs1v15",
    )
    mu: StrictBool | None = Field(
        None,
        description="ML-DSA: the message is μ, FIPS 204's 64-byte message representative "
        "computed by the caller (as AWS KMS's EXTERNAL_MU); default false",
    )


CONTEXT = "derived ed25519 keys only, and always for them: the key is derived from it"


class SignRequest(SignOptions):
    message: Base64Bytes
    context: Base64Bytes | None = Field(None, description=CONTEXT)
    envelope: StrictBool | None = Field(
        None,
        description="true: the signature in the envelope that names its key version "
        "(cipherd:v<N>:); false: the bare signature that other libraries verify. Default: "
        "bare for ecdsa-secp256k1 and ed25519, in the envelope for the other types",
    )


class VerifyRequest(SignOptions):
    message: Base64Bytes
    signature: Base64Bytes = Field(description="bare, or in the envelope that names its version")
    key_version: PayloadVersion = None
    context: Base64Bytes | None = Field(None, description=CONTEXT)


class PublicVerifyRequest(SignOptions):
    type: signatures.SigningType
    public_key: Base64Bytes = Field(
        description="raw, or a SubjectPublicKeyInfo (DER) for every type: ecdsa-secp256k1 "
        "SEC1, 33 or 65 bytes (or 64, X ‖ Y); ecdsa-p256, -p384, -p521 SEC1; ed25519 32 bytes; "
        "ML-DSA FIPS 204's encoding; RSA the SubjectPublicKeyInfo only"
    )
    message: Base64Bytes
    signature: Base64Bytes


class Signature(SealedAnswer):
    data_field = "signature"
    signature: Base64Bytes
    key_version: int


class Verdict(BaseModel):
    valid: bool


@signing.operation(
    "/{name}",
    access=Operation.SIGN,
    summary="Sign with a server-held signing key (ECDSA, Ed25519, RSA, ML-DSA)",
    batch="Sign many messages with a server-held key",
    hot=True,
)
def sign(key: SigningKey, item: SignRequest) -> Signature:
    return Signature.of(key.sign(item.message, item, item.envelope, context=item.context))


@verifying.operation(
    "/{name}",
    access=Operation.VERIFY,
    summary="Verify a signature with a server-held key (verify or public scope)",
    batch="Verify many signatures with a server-held key",
    payload="signature",
    hot=True,
)
def verify(key: SigningKey, item: VerifyRequest) -> Verdict:
    valid = key.verify(item.message, item.signature, item, item.key_version, context=item.context)
    return Verdict(valid=valid)


@verifying.keyless(
    "",
    access=Operation.VERIFY,
    summary="Verify a signature against a public key given in the request (no stored key)",
)
async def verify_with_public_key(item: PublicVerifyRequest) -> Verdict:
    valid = await signatures.verify_with(
        item.type, item.public_key, item.message, item.signature, item
    )
    return Verdict(valid=valid)
