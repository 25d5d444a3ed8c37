"""The Wycheproof signature vectors of tests/vectors/wycheproof, flattened to one case per test,
each with the service's key type and options it is checked with (README.md there says which
files and cases are read, and why)."""

import gzip
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "wycheproof"
NO_OPTIONS: Mapping[str, Any] = MappingProxyType({})
HASHES = {"SHA-256": "sha256", "SHA-384": "sha384", "SHA-512": "sha512"}
DIGEST_BYTES = {"sha256": 32, "sha384": 48, "sha512": 64}
CURVES = {"secp256r1": "p256", "secp384r1": "p384", "secp521r1": "p521"}


class Case(NamedTuple):
    id: str
    public_key: bytes
    message: bytes
    signature: bytes
    # None: Wycheproof's "acceptable", where either verdict is right.
    valid: bool | None
    key_type: str = ""
    # The options of POST /v1/verify (and of core's verify) the case is checked with.
    options: Mapping[str, Any] = NO_OPTIONS


def agrees(verdict: bool, case: Case) -> bool:
    """Whether a verdict is the one the case expects (either, for an acceptable case)."""
    return case.valid is None or verdict is case.valid


def document(file: str) -> dict[str, Any]:
    """A vectors file, as Wycheproof publishes it (the larger ones gzip-compressed here)."""
    path = VECTORS / file
    data = gzip.decompress(path.read_bytes()) if file.endswith(".gz") else path.read_bytes()
    loaded: dict[str, Any] = json.loads(data)
    return loaded


def _verdict(result: str) -> bool | None:
    assert result in ("valid", "invalid", "acceptable"), result
    return None if result == "acceptable" else result == "valid"


def _tests(file: str) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(case id, group, test) of every test of `file`, all of them (their count checked)."""
    loaded = document(file)
    count = 0
    stem = file.removesuffix(".gz").removesuffix("_test.json")
    for group in loaded["testGroups"]:
        for test in group["tests"]:
            count += 1
            yield f"{stem}-{test['tcId']}", group, test
    assert count == loaded["numberOfTests"]


def cases(file: str, public_key: str) -> list[Case]:
    """Every case of a secp256k1 or Ed25519 file; `public_key` is the group's field that
    holds the key's hex. These files hold no acceptable case: one appearing in a newer copy
    fails here rather than be given a verdict by accident."""
    out = []
    for case_id, group, test in _tests(file):
        assert test["result"] in ("valid", "invalid"), test
        out.append(
            Case(
                case_id,
                bytes.fromhex(group["publicKey"][public_key]),
                bytes.fromhex(test["msg"]),
                bytes.fromhex(test["sig"]),
                test["result"] == "valid",
            )
        )
    return out


def nist_ecdsa(file: str) -> list[Case]:
    """ECDSA on P-256, P-384 or P-521: a DER file's keys as SubjectPublicKeyInfo, a P1363
    file's (our compact form) as SEC1 points, so that both forms of a key are read."""
    compact = "_p1363_" in file
    out = []
    for case_id, group, test in _tests(file):
        key = group["publicKey"]
        public = key["uncompressed"] if compact else group["publicKeyDer"]
        options = {"hash": HASHES[group["sha"]], "format": "compact" if compact else "der"}
        out.append(
            Case(
                case_id,
                bytes.fromhex(public),
                bytes.fromhex(test["msg"]),
                bytes.fromhex(test["sig"]),
                _verdict(test["result"]),
                f"ecdsa-{CURVES[key['curve']]}",
                options,
            )
        )
    return out


def _rsa_case(case_id: str, group: dict[str, Any], test: dict[str, Any], **options: Any) -> Case:
    return Case(
        case_id,
        bytes.fromhex(group["publicKeyDer"]),
        bytes.fromhex(test["msg"]),
        bytes.fromhex(test["sig"]),
        _verdict(test["result"]),
        f"rsa-{group['keySize']}",
        {"hash": HASHES[group["sha"]], **options},
    )


def rsa_pkcs1(file: str) -> list[Case]:
    return [_rsa_case(*found, padding="pkcs1v15") for found in _tests(file)]


def rsa_pss(file: str) -> tuple[list[Case], list[Case]]:
    """A PSS file's cases the service's PSS can express (the message's hash for MGF1 too, a
    key size of ours), split by salt length: the digest's length (the service's default), and
    any other, given as the option `salt`; each with its expected verdict."""
    matching, other_salts = [], []
    for case_id, group, test in _tests(file):
        hash = HASHES.get(group["sha"])
        if hash is None or group["mgfSha"] != group["sha"] or group["keySize"] not in SIZES:
            continue
        if group["sLen"] == DIGEST_BYTES[hash]:
            matching.append(_rsa_case(case_id, group, test, padding="pss"))
        else:
            other_salts.append(_rsa_case(case_id, group, test, padding="pss", salt=group["sLen"]))
    return matching, other_salts


SIZES = (2048, 3072, 4096)


def ml_dsa_verify(file: str) -> list[Case]:
    """ML-DSA verification with the empty context: the cases with a context of their own are
    left out (the service signs and verifies with the empty one)."""
    level = file.removeprefix("mldsa_")[:2]
    return [
        Case(
            case_id,
            bytes.fromhex(group["publicKey"]),
            bytes.fromhex(test["msg"]),
            bytes.fromhex(test["sig"]),
            _verdict(test["result"]),
            f"ml-dsa-{level}",
        )
        for case_id, group, test in _tests(file)
        if not test.get("ctx")
    ]


class Seed(NamedTuple):
    """A key of an ML-DSA sign file: its seed and the public key FIPS 204's KeyGen gives
    (None for a seed of the wrong length, which must be refused)."""

    id: str
    key_type: str
    seed: bytes
    public_key: bytes | None


def ml_dsa_sign(file: str) -> tuple[list[Seed], list[Case]]:
    """The keys of a sign file, and its signatures with the empty context as cases against
    the group's public key: of the message, and (`mu`) of its μ where the file gives it. The
    signatures are deterministic ML-DSA's; the service's are hedged, so it checks these
    rather than make them again."""
    level = file.removeprefix("mldsa_")[:2]
    seeds: dict[str, Seed] = {}
    signed = []
    for case_id, group, test in _tests(file):
        public = bytes.fromhex(group["publicKey"]) if group.get("publicKey") else None
        seed = Seed(case_id, f"ml-dsa-{level}", bytes.fromhex(group["privateSeed"]), public)
        seeds.setdefault(group["privateSeed"] + str(public is None), seed)
        if public is None or test.get("ctx") or test["result"] != "valid":
            continue
        signature = bytes.fromhex(test["sig"])
        if "msg" in test:
            message = bytes.fromhex(test["msg"])
            signed.append(Case(case_id, public, message, signature, True, seed.key_type))
        if "mu" in test:
            mu = bytes.fromhex(test["mu"])
            signed.append(
                Case(f"{case_id}-mu", public, mu, signature, True, seed.key_type, {"mu": True})
            )
    return list(seeds.values()), signed


ECDSA_DER = cases("ecdsa_secp256k1_sha256_test.json", "uncompressed")
ECDSA_P1363 = cases("ecdsa_secp256k1_sha256_p1363_test.json", "uncompressed")
ED25519 = cases("ed25519_test.json", "pk")

NIST_ECDSA = [
    case
    for file in (
        "ecdsa_secp256r1_sha256",
        "ecdsa_secp256r1_sha512",
        "ecdsa_secp384r1_sha256",
        "ecdsa_secp384r1_sha384",
        "ecdsa_secp384r1_sha512",
        "ecdsa_secp521r1_sha512",
        "ecdsa_secp256r1_sha256_p1363",
        "ecdsa_secp256r1_sha512_p1363",
        "ecdsa_secp384r1_sha384_p1363",
        "ecdsa_secp384r1_sha512_p1363",
        "ecdsa_secp521r1_sha512_p1363",
    )
    for case in nist_ecdsa(f"{file}_test.json.gz")
]
RSA_PKCS1 = [
    case
    for bits in SIZES
    for hash in ("sha256", "sha384", "sha512")
    for case in rsa_pkcs1(f"rsa_signature_{bits}_{hash}_test.json.gz")
]
_PSS = [
    rsa_pss(f"rsa_pss_{name}_test.json.gz")
    for name in (
        "2048_sha256_mgf1_32",
        "2048_sha384_mgf1_48",
        "3072_sha256_mgf1_32",
        "4096_sha256_mgf1_32",
        "4096_sha384_mgf1_48",
        "4096_sha512_mgf1_64",
        "misc",
    )
]
RSA_PSS = [case for matching, _ in _PSS for case in matching]
# The cases of other salt lengths, verified with theirs (Transit's `salt_length`).
RSA_PSS_SALTED = [case for _, other in _PSS for case in other]
# The same, which the digest's salt length (the native API's, that length exactly) must refuse,
# whatever Wycheproof says under the group's own parameters.
RSA_PSS_OTHER_SALTS = [
    case._replace(valid=False, options={k: v for k, v in case.options.items() if k != "salt"})
    for case in RSA_PSS_SALTED
]
ML_DSA = [
    case
    for level in ("44", "65", "87")
    for case in ml_dsa_verify(f"mldsa_{level}_verify_test.json.gz")
]
_SIGNED = [ml_dsa_sign(f"mldsa_{level}_sign_seed_test.json.gz") for level in ("44", "65", "87")]
ML_DSA_SEEDS = [seed for seeds, _ in _SIGNED for seed in seeds]
ML_DSA_SIGNED = [case for _, signed in _SIGNED for case in signed]
# Every case of the types OpenSSL signs for the service, checked with a key in the request.
OPENSSL_CASES = NIST_ECDSA + RSA_PKCS1 + RSA_PSS + RSA_PSS_OTHER_SALTS + ML_DSA + ML_DSA_SIGNED
