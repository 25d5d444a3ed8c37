"""KMS's key specs and usages and the service's key types, and a key's KeyMetadata.

SYMMETRIC_DEFAULT             aes256-gcm        ENCRYPT_DECRYPT
RSA_2048, RSA_3072, RSA_4096  rsa-2048, ...     ENCRYPT_DECRYPT or SIGN_VERIFY
ECC_NIST_P256, _P384, _P521   ecdsa-p256, ...   SIGN_VERIFY
ECC_SECG_P256K1               ecdsa-secp256k1   SIGN_VERIFY
ECC_NIST_EDWARDS25519         ed25519           SIGN_VERIFY
HMAC_224 to HMAC_512          hmac              GENERATE_VERIFY_MAC
ML_DSA_44, _65, _87           ml-dsa-44, ...    SIGN_VERIFY
"""

from dataclasses import dataclass
from typing import Any, Protocol

from app.ops.versioned import disabled
from app.settings import Settings
from app.store import KeyInfo

ENCRYPT_DECRYPT = "ENCRYPT_DECRYPT"
SIGN_VERIFY = "SIGN_VERIFY"
GENERATE_VERIFY_MAC = "GENERATE_VERIFY_MAC"
_RSA_SIGNING = [
    f"RSASSA_{scheme}_SHA_{bits}" for scheme in ("PSS", "PKCS1_V1_5") for bits in (256, 384, 512)
]


@dataclass(frozen=True)
class Spec:
    """A key spec: the service's type, the usages it may have (the first by default) and its
    algorithms for each."""

    native: str
    usages: tuple[str, ...]
    algorithms: dict[str, list[str]]


SPECS: dict[str, Spec] = {
    "SYMMETRIC_DEFAULT": Spec(
        "aes256-gcm", (ENCRYPT_DECRYPT,), {ENCRYPT_DECRYPT: ["SYMMETRIC_DEFAULT"]}
    ),
    **{
        f"RSA_{bits}": Spec(
            f"rsa-{bits}",
            (ENCRYPT_DECRYPT, SIGN_VERIFY),
            {ENCRYPT_DECRYPT: ["RSAES_OAEP_SHA_256"], SIGN_VERIFY: _RSA_SIGNING},
        )
        for bits in (2048, 3072, 4096)
    },
    **{
        f"ECC_NIST_P{bits}": Spec(
            f"ecdsa-p{bits}", (SIGN_VERIFY,), {SIGN_VERIFY: [f"ECDSA_SHA_{min(bits, 512)}"]}
        )
        for bits in (256, 384, 521)
    },
    "ECC_SECG_P256K1": Spec("ecdsa-secp256k1", (SIGN_VERIFY,), {SIGN_VERIFY: ["ECDSA_SHA_256"]}),
    # Pure Ed25519 only: Ed25519ph (ED25519_PH_SHA_512) is not made here.
    "ECC_NIST_EDWARDS25519": Spec("ed25519", (SIGN_VERIFY,), {SIGN_VERIFY: ["ED25519_SHA_512"]}),
    **{
        f"HMAC_{bits}": Spec(
            "hmac", (GENERATE_VERIFY_MAC,), {GENERATE_VERIFY_MAC: [f"HMAC_SHA_{bits}"]}
        )
        for bits in (256, 384, 512, 224)  # HMAC_256 first: a native hmac key's spec
    },
    **{
        f"ML_DSA_{level}": Spec(
            f"ml-dsa-{level}", (SIGN_VERIFY,), {SIGN_VERIFY: ["ML_DSA_SHAKE_256"]}
        )
        for level in (44, 65, 87)
    },
}
# AWS's key specs this service does not make.
NOT_MADE = ("SM2", "ML_KEM_512", "ML_KEM_768", "ML_KEM_1024")
# A native key's spec: the first spec of its type (HMAC keys are HMAC_256's); its KeyUsage, the
# spec's first (AWS's default), though it serves them all (`usages_of`).
_BY_NATIVE: dict[str, str] = {}
for _spec_name, _spec in SPECS.items():
    _BY_NATIVE.setdefault(_spec.native, _spec_name)
_ALGORITHM_MEMBER = {
    ENCRYPT_DECRYPT: "EncryptionAlgorithms",
    SIGN_VERIFY: "SigningAlgorithms",
    GENERATE_VERIFY_MAC: "MacAlgorithms",
}


class Typed(Protocol):
    """A key's type and parameters, as its information or one version's material has them."""

    @property
    def type(self) -> str: ...
    @property
    def params(self) -> dict[str, Any]: ...


def described(info: Typed) -> tuple[str, str] | None:
    """A key's (key spec, key usage): as CreateKey made it, else from its type; None for a
    type KMS has no spec for (AEZ, ECIES, FE, ...)."""
    kms = info.params.get("kms")
    if kms is not None:
        return kms["spec"], kms["usage"]
    spec = _BY_NATIVE.get(info.type)
    return None if spec is None else (spec, SPECS[spec].usages[0])


def usages_of(info: Typed) -> tuple[str, ...]:
    """The usages a key serves: the one CreateKey gave it, else every one of its type's spec
    (a key made outside KMS is bound to none: a native `rsa-*` key encrypts and signs)."""
    kms = info.params.get("kms")
    if kms is not None:
        return (kms["usage"],)
    spec = _BY_NATIVE.get(info.type)
    return () if spec is None else SPECS[spec].usages


def legacy_spec(spec: str) -> dict[str, str]:
    """The deprecated `CustomerMasterKeySpec` member, for the specs it names: none newer than
    its deprecation (ML-DSA, Ed25519)."""
    newer = spec.startswith("ML_DSA_") or spec == "ECC_NIST_EDWARDS25519"
    return {} if newer else {"CustomerMasterKeySpec": spec}


def key_state(info: KeyInfo) -> str:
    if info.state == "pending-deletion":
        return "PendingDeletion"
    return "Disabled" if disabled(info.params) else "Enabled"


def metadata(info: KeyInfo, arn: str, settings: Settings) -> dict[str, Any]:
    """The key's KeyMetadata, as DescribeKey and CreateKey answer it."""
    spec_usage = described(info)
    state = key_state(info)
    answer: dict[str, Any] = {
        "AWSAccountId": settings.aws_account_id,
        "KeyId": info.name,
        "Arn": arn,
        "CreationDate": info.created_at,
        "Enabled": state == "Enabled",
        "Description": info.params.get("kms", {}).get("description", ""),
        "KeyState": state,
        "Origin": "AWS_KMS",
        "KeyManager": "CUSTOMER",
        "MultiRegion": False,
    }
    if spec_usage is not None:
        spec, usage = spec_usage
        answer |= {"KeyUsage": usage, "KeySpec": spec, **legacy_spec(spec)}
        for served in usages_of(info):
            answer[_ALGORITHM_MEMBER[served]] = SPECS[spec].algorithms[served]
    if info.deletion_date is not None:
        answer["DeletionDate"] = info.deletion_date
    return answer
