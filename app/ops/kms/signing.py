"""KMS's signing and MAC actions, each the native verb on the key under the native scope: Sign
and Verify (`app.ops.sign`), GetPublicKey (`app.ops.keys.public_part`), GenerateMac and
VerifyMac (`app.ops.mac`).

AWS's signing algorithms are the native options: ECDSA_SHA_* a DER signature over the hash
(the curve's own, as AWS allows one per curve), RSASSA_PSS_SHA_* PSS with MGF1 and a salt as
long as the digest, RSASSA_PKCS1_V1_5_SHA_* PKCS#1 v1.5, ED25519_SHA_512 pure Ed25519 (RFC 8032;
not Ed25519ph), ML_DSA_SHAKE_256 FIPS 204's pure ML-DSA with an empty context. MessageType
DIGEST signs the digest given (as long as the hash's output), EXTERNAL_MU an ML-DSA message
representative (64 bytes). A signature or MAC that does not verify is
KMSInvalidSignatureException or KMSInvalidMacException, as AWS answers it.
"""

from typing import Annotated, Any, Literal

from pydantic import Field

from app.ops import envelope, keys
from app.ops.grants import Operation
from app.ops.kms import specs
from app.ops.kms.actions import GrantTokenList, KeyIdField, KmsCall, action
from app.ops.kms.crypto import BlobRequest, b64, dry_run, usable
from app.ops.kms.errors import KmsError, unsupported, validation
from app.ops.mac import MacKey
from app.ops.sign import GivenOptions, SigningKey
from app.ops.work import in_thread
from app.store import KeyMaterial

MessageField = Annotated[bytes, Field(min_length=1, max_length=4096)]
SignatureField = Annotated[bytes, Field(min_length=1, max_length=6144)]
MessageTypeField = Literal["RAW", "DIGEST", "EXTERNAL_MU"]
SigningAlgorithmField = Literal[
    "RSASSA_PSS_SHA_256",
    "RSASSA_PSS_SHA_384",
    "RSASSA_PSS_SHA_512",
    "RSASSA_PKCS1_V1_5_SHA_256",
    "RSASSA_PKCS1_V1_5_SHA_384",
    "RSASSA_PKCS1_V1_5_SHA_512",
    "ECDSA_SHA_256",
    "ECDSA_SHA_384",
    "ECDSA_SHA_512",
    "SM2DSA",
    "ML_DSA_SHAKE_256",
    "ED25519_SHA_512",
    "ED25519_PH_SHA_512",
]
# AWS's algorithms this service does not make, for keys it makes (SM2DSA's keys it does not).
NOT_MADE = ("ED25519_PH_SHA_512",)
MacAlgorithmField = Literal["HMAC_SHA_224", "HMAC_SHA_256", "HMAC_SHA_384", "HMAC_SHA_512"]
# The hash of each algorithm that names one, as the native options name it.
_HASHES = {"SHA_224": "sha224", "SHA_256": "sha256", "SHA_384": "sha384", "SHA_512": "sha512"}


def sign_options(algorithm: str, message_type: str) -> GivenOptions:
    """The native options of `algorithm` (one the key has) for `message_type`."""
    if algorithm == "ML_DSA_SHAKE_256":
        if message_type == "DIGEST":
            raise validation(
                "MessageType DIGEST is not valid with ML_DSA_SHAKE_256: use RAW or EXTERNAL_MU"
            )
        return GivenOptions(mu=message_type == "EXTERNAL_MU")
    if message_type == "EXTERNAL_MU":
        raise validation(
            f"MessageType EXTERNAL_MU is valid only with ML_DSA_SHAKE_256, not {algorithm}"
        )
    if algorithm == "ED25519_SHA_512":
        if message_type == "DIGEST":
            raise validation("MessageType DIGEST is not valid with ED25519_SHA_512: use RAW")
        return GivenOptions()
    hash = _HASHES[algorithm[-7:]]
    digest = message_type == "DIGEST"
    if algorithm.startswith("ECDSA_"):
        return GivenOptions(hash=hash, prehashed=digest, format="der")
    padding = "pss" if algorithm.startswith("RSASSA_PSS_") else "pkcs1v15"
    return GivenOptions(hash=hash, prehashed=digest, padding=padding)


def _has_algorithm(spec: str, usage: str, algorithm: str, member: str) -> None:
    if algorithm not in specs.SPECS[spec].algorithms[usage]:
        raise KmsError(
            "InvalidKeyUsageException", f"{member} {algorithm} is not valid for a {spec} key"
        )


async def _material(call: KmsCall, key_id: str, native: str, access: Operation) -> KeyMaterial:
    name = await call.key(key_id, native, access)
    return await call.services.keyring.fetch(name)


async def _signing_key(
    call: KmsCall, request: "SignRequest", native: str, access: Operation
) -> tuple[SigningKey, GivenOptions]:
    material = await _material(call, request.KeyId, native, access)
    spec = usable(call, material, specs.SIGN_VERIFY)
    if request.SigningAlgorithm in NOT_MADE:
        raise unsupported(f"{request.SigningAlgorithm} is not supported by this service")
    _has_algorithm(spec, specs.SIGN_VERIFY, request.SigningAlgorithm, "SigningAlgorithm")
    options = sign_options(request.SigningAlgorithm, request.MessageType)
    dry_run(request.DryRun)
    settings = call.services.settings
    return SigningKey(call.services.keyring, material, settings.bare_payload_versions), options


class SignRequest(BlobRequest):
    KeyId: KeyIdField
    Message: MessageField
    MessageType: MessageTypeField = "RAW"
    GrantTokens: GrantTokenList = None
    SigningAlgorithm: SigningAlgorithmField
    DryRun: bool = False


@action("Sign")
async def sign(call: KmsCall, request: SignRequest) -> dict[str, Any]:
    key, options = await _signing_key(call, request, "sign_sign", Operation.SIGN)
    signature = key.sign(request.Message, options, enveloped=False).data
    return {
        "KeyId": call.arn(key.name),
        "Signature": b64(signature),
        "SigningAlgorithm": request.SigningAlgorithm,
    }


class VerifyRequest(SignRequest):
    Signature: SignatureField


@action("Verify")
async def verify(call: KmsCall, request: VerifyRequest) -> dict[str, Any]:
    key, options = await _signing_key(call, request, "verify_verify", Operation.VERIFY)
    if not key.verify(request.Message, request.Signature, options, None):
        raise KmsError("KMSInvalidSignatureException", "The signature is not valid.")
    return {
        "KeyId": call.arn(key.name),
        "SignatureValid": True,
        "SigningAlgorithm": request.SigningAlgorithm,
    }


class GetPublicKeyRequest(BlobRequest):
    KeyId: KeyIdField
    GrantTokens: GrantTokenList = None


@action("GetPublicKey")
async def get_public_key(call: KmsCall, request: GetPublicKeyRequest) -> dict[str, Any]:
    """The key's SubjectPublicKeyInfo (DER), its spec, usage and algorithms."""
    material = await _material(call, request.KeyId, "keys_public_key", Operation.PUBLIC)
    described = specs.described(material)
    if (
        described is None
        or described[1] == specs.GENERATE_VERIFY_MAC
        or described[0] == "SYMMETRIC_DEFAULT"
    ):
        raise unsupported(
            f"{call.arn(material.name)} is not an asymmetric KMS key: it has no public key"
        )
    spec, usage = described
    usable(call, material, usage)
    _, _, public = await in_thread(
        keys.public_part, call.services.keyring, material.name, None, "der"
    )
    assert isinstance(public, bytes)
    member = "EncryptionAlgorithms" if usage == specs.ENCRYPT_DECRYPT else "SigningAlgorithms"
    return specs.legacy_spec(spec) | {
        "KeyId": call.arn(material.name),
        "PublicKey": b64(public),
        "KeySpec": spec,
        "KeyUsage": usage,
        member: specs.SPECS[spec].algorithms[usage],
    }


class MacRequest(BlobRequest):
    Message: MessageField
    KeyId: KeyIdField
    MacAlgorithm: MacAlgorithmField
    GrantTokens: GrantTokenList = None
    DryRun: bool = False


async def _mac_key(call: KmsCall, request: MacRequest, native: str) -> tuple[MacKey, Any]:
    material = await _material(call, request.KeyId, native, Operation.HMAC)
    spec = usable(call, material, specs.GENERATE_VERIFY_MAC)
    _has_algorithm(spec, specs.GENERATE_VERIFY_MAC, request.MacAlgorithm, "MacAlgorithm")
    dry_run(request.DryRun)
    key = MacKey(call.services.keyring, material, call.services.settings.bare_payload_versions)
    return key, _HASHES[request.MacAlgorithm[-7:]]


@action("GenerateMac")
async def generate_mac(call: KmsCall, request: MacRequest) -> dict[str, Any]:
    key, algorithm = await _mac_key(call, request, "hmac_hmac")
    _, mac = envelope.parse(key.hmac(request.Message, algorithm).data)
    return {"Mac": b64(mac), "MacAlgorithm": request.MacAlgorithm, "KeyId": call.arn(key.name)}


class VerifyMacRequest(MacRequest):
    Mac: SignatureField


@action("VerifyMac")
async def verify_mac(call: KmsCall, request: VerifyMacRequest) -> dict[str, Any]:
    key, algorithm = await _mac_key(call, request, "hmac_verify")
    if not key.verify(request.Message, request.Mac, algorithm, None):
        raise KmsError("KMSInvalidMacException", "The MAC is not valid.")
    return {"KeyId": call.arn(key.name), "MacValid": True, "MacAlgorithm": request.MacAlgorithm}
