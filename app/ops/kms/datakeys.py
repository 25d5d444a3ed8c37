"""KMS's data keys and random bytes: GenerateDataKey and GenerateDataKeyWithoutPlaintext (a
fresh key of `KeySpec` AES_128 or AES_256, or of `NumberOfBytes` 1 to 1024),
GenerateDataKeyPair and its WithoutPlaintext form (an RSA or elliptic-curve pair, its private
key PKCS#8 DER, its public key SubjectPublicKeyInfo DER), each sealed under a symmetric key as
Encrypt seals (`app.ops.kms.crypto`, the native AES-GCM verb), and GenerateRandom.
"""

import os
from typing import Annotated, Any, Literal

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from pydantic import Field

from app.ops.aead import AeadKey
from app.ops.grants import Operation
from app.ops.kms.actions import GrantTokenList, KeyIdField, KmsCall, action
from app.ops.kms.crypto import (
    SYMMETRIC,
    BlobRequest,
    Context,
    NumberOfBytesField,
    b64,
    dry_run,
    encryption_key,
    no_recipient,
    seal,
)
from app.ops.kms.errors import KmsError, validation
from app.ops.work import in_thread

DATA_KEY_BYTES = {"AES_128": 16, "AES_256": 32}
KeySpecField = Literal["AES_256", "AES_128"]
KeyPairSpecField = Literal[
    "RSA_2048",
    "RSA_3072",
    "RSA_4096",
    "ECC_NIST_P256",
    "ECC_NIST_P384",
    "ECC_NIST_P521",
    "ECC_SECG_P256K1",
    "SM2",
    "ECC_NIST_EDWARDS25519",
    "ML_KEM_512",
    "ML_KEM_768",
    "ML_KEM_1024",
]
# The key pairs drawn: KeyPairSpec -> RSA modulus bits or elliptic curve.
KEY_PAIRS: dict[str, int | ec.EllipticCurve] = {
    "RSA_2048": 2048,
    "RSA_3072": 3072,
    "RSA_4096": 4096,
    "ECC_NIST_P256": ec.SECP256R1(),
    "ECC_NIST_P384": ec.SECP384R1(),
    "ECC_NIST_P521": ec.SECP521R1(),
    "ECC_SECG_P256K1": ec.SECP256K1(),
}


class DataKeyRequest(BlobRequest):
    KeyId: KeyIdField
    EncryptionContext: Context = None
    NumberOfBytes: NumberOfBytesField | None = None
    KeySpec: KeySpecField | None = None
    GrantTokens: GrantTokenList = None
    DryRun: bool = False


class DataKeyWithPlaintextRequest(DataKeyRequest):
    Recipient: dict[str, Any] | None = None


async def _sealing_key(call: KmsCall, key_id: str) -> tuple[str, AeadKey]:
    """The name of the symmetric key `key_id` names and the key, which a data key or a data
    key pair is sealed under (the native data key scope)."""
    name = await call.key(key_id, "aead_datakey", Operation.ENCRYPT)
    key = await encryption_key(call, name, SYMMETRIC)
    if not isinstance(key, AeadKey):
        raise KmsError(
            "InvalidKeyUsageException", f"{call.arn(name)} is not a symmetric encryption key"
        )
    return name, key


async def _data_key(call: KmsCall, request: DataKeyRequest) -> tuple[str, bytes, bytes]:
    """The key's name, a fresh data key and its blob under the key (symmetric keys only)."""
    if (request.NumberOfBytes is None) == (request.KeySpec is None):
        raise validation("Specify either KeySpec or NumberOfBytes, but not both")
    name, key = await _sealing_key(call, request.KeyId)
    dry_run(request.DryRun)
    size = request.NumberOfBytes or DATA_KEY_BYTES[request.KeySpec or ""]
    plaintext = os.urandom(size)
    blob = seal(key, plaintext, request.EncryptionContext)
    call.record("aead_datakey", name)
    return name, plaintext, blob


@action("GenerateDataKey")
async def generate_data_key(call: KmsCall, request: DataKeyWithPlaintextRequest) -> dict[str, Any]:
    no_recipient(request.Recipient)
    name, plaintext, blob = await _data_key(call, request)
    return {"CiphertextBlob": b64(blob), "Plaintext": b64(plaintext), "KeyId": call.arn(name)}


@action("GenerateDataKeyWithoutPlaintext")
async def generate_data_key_without_plaintext(
    call: KmsCall, request: DataKeyRequest
) -> dict[str, Any]:
    name, _, blob = await _data_key(call, request)
    return {"CiphertextBlob": b64(blob), "KeyId": call.arn(name)}


class DataKeyPairRequest(BlobRequest):
    EncryptionContext: Context = None
    KeyId: KeyIdField
    KeyPairSpec: KeyPairSpecField
    GrantTokens: GrantTokenList = None
    DryRun: bool = False


class DataKeyPairWithPlaintextRequest(DataKeyPairRequest):
    Recipient: dict[str, Any] | None = None


def key_pair(spec: str) -> tuple[bytes, bytes]:
    """A fresh pair as OpenSSL draws it: (PKCS#8 DER private key, SubjectPublicKeyInfo DER)."""
    drawn = KEY_PAIRS[spec]
    private = (
        rsa.generate_private_key(65537, drawn)
        if isinstance(drawn, int)
        else ec.generate_private_key(drawn)
    )
    return private.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ), private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


async def _data_key_pair(call: KmsCall, request: DataKeyPairRequest) -> dict[str, Any]:
    """The answer without the private key in clear, and that key under `PrivateKeyPlaintext`
    (the caller drops it for the WithoutPlaintext action)."""
    spec = request.KeyPairSpec
    if spec not in KEY_PAIRS:
        raise KmsError(
            "UnsupportedOperationException", f"KeyPairSpec {spec} is not supported by this service"
        )
    name, key = await _sealing_key(call, request.KeyId)
    dry_run(request.DryRun)
    private, public = await in_thread(key_pair, spec)  # RSA-4096: about a second
    blob = seal(key, private, request.EncryptionContext)
    call.record("aead_datakey", name)
    return {
        "PrivateKeyCiphertextBlob": b64(blob),
        "PrivateKeyPlaintext": b64(private),
        "PublicKey": b64(public),
        "KeyId": call.arn(name),
        "KeyPairSpec": spec,
    }


@action("GenerateDataKeyPair")
async def generate_data_key_pair(
    call: KmsCall, request: DataKeyPairWithPlaintextRequest
) -> dict[str, Any]:
    no_recipient(request.Recipient)
    return await _data_key_pair(call, request)


@action("GenerateDataKeyPairWithoutPlaintext")
async def generate_data_key_pair_without_plaintext(
    call: KmsCall, request: DataKeyPairRequest
) -> dict[str, Any]:
    answer = await _data_key_pair(call, request)
    del answer["PrivateKeyPlaintext"]
    return answer


class RandomRequest(BlobRequest):
    NumberOfBytes: NumberOfBytesField | None = None
    CustomKeyStoreId: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    Recipient: dict[str, Any] | None = None


@action("GenerateRandom")
async def generate_random(call: KmsCall, request: RandomRequest) -> dict[str, Any]:
    """Random bytes from the operating system's CSPRNG, for any valid token (as the native
    `POST /v1/random`)."""
    call.record("random_random")
    no_recipient(request.Recipient)
    if request.CustomKeyStoreId is not None:
        raise KmsError("CustomKeyStoreNotFoundException", "This service has no custom key stores")
    if request.NumberOfBytes is None:
        raise validation("NumberOfBytes is required: from 1 to 1024")
    return {"Plaintext": b64(os.urandom(request.NumberOfBytes))}
