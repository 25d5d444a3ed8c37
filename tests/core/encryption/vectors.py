"""The encryption vectors of tests/vectors, one case per test: Wycheproof's AES-GCM,
ChaCha20-Poly1305, XChaCha20-Poly1305 and RSA-OAEP (tests/vectors/wycheproof), the HPKE vectors
of RFC 9180 and of draft-ietf-hpke-pq (tests/vectors/hpke)."""

import json
from pathlib import Path
from typing import Any, NamedTuple

VECTORS = Path(__file__).resolve().parents[2] / "vectors"


class AeadCase(NamedTuple):
    id: str
    algorithm: str
    key: bytes
    associated_data: bytes
    plaintext: bytes
    payload: bytes  # nonce ‖ ciphertext ‖ tag
    valid: bool


class OaepCase(NamedTuple):
    id: str
    key_type: str
    private_key: bytes  # PKCS#8 DER
    plaintext: bytes
    ciphertext: bytes
    valid: bool


def _document(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((VECTORS / "wycheproof" / name).read_text())
    count = sum(len(group["tests"]) for group in document["testGroups"])
    assert count == document["numberOfTests"]
    return document


def _verdict(test: dict[str, Any]) -> bool:
    # The files hold no "acceptable" case; one in a newer copy fails here rather than being
    # given a verdict by accident.
    assert test["result"] in ("valid", "invalid"), test
    return bool(test["result"] == "valid")


def aead_cases(name: str, algorithms: dict[int, str], nonce_bits: int = 96) -> list[AeadCase]:
    """The cases of `name` with a nonce of `nonce_bits` and a 128-bit tag, and a key of a size
    `algorithms` maps to a key type: the payloads the service takes."""
    cases = []
    for group in _document(name)["testGroups"]:
        algorithm = algorithms.get(group["keySize"])
        if group["ivSize"] != nonce_bits or group["tagSize"] != 128 or algorithm is None:
            continue
        for test in group["tests"]:
            cases.append(
                AeadCase(
                    f"{name.removesuffix('_test.json')}-{test['tcId']}",
                    algorithm,
                    bytes.fromhex(test["key"]),
                    bytes.fromhex(test["aad"]),
                    bytes.fromhex(test["msg"]),
                    bytes.fromhex(test["iv"] + test["ct"] + test["tag"]),
                    _verdict(test),
                )
            )
    return cases


def oaep_cases(name: str, key_type: str) -> list[OaepCase]:
    """The cases of `name` with the empty label, the service's."""
    cases = []
    for group in _document(name)["testGroups"]:
        private_key = bytes.fromhex(group["privateKeyPkcs8"])
        for test in group["tests"]:
            if test["label"]:
                continue
            cases.append(
                OaepCase(
                    f"{name.removesuffix('_test.json')}-{test['tcId']}",
                    key_type,
                    private_key,
                    bytes.fromhex(test["msg"]),
                    bytes.fromhex(test["ct"]),
                    _verdict(test),
                )
            )
    return cases


AES_GCM = aead_cases("aes_gcm_test.json", {128: "aes128-gcm", 256: "aes256-gcm"})
CHACHA20_POLY1305 = aead_cases("chacha20_poly1305_test.json", {256: "chacha20-poly1305"})
XCHACHA20_POLY1305 = aead_cases(
    "xchacha20_poly1305_test.json", {256: "xchacha20-poly1305"}, nonce_bits=192
)
RSA_OAEP = [
    case
    for bits in (2048, 3072, 4096)
    for case in oaep_cases(f"rsa_oaep_{bits}_sha256_mgf1sha256_test.json", f"rsa-{bits}")
]


def hpke_vectors(name: str) -> list[dict[str, Any]]:
    """The HPKE vectors of tests/vectors/hpke/`name`: base mode, one suite each."""
    vectors: list[dict[str, Any]] = json.loads((VECTORS / "hpke" / name).read_text())
    assert all(vector["mode"] == 0 for vector in vectors)
    return vectors


RFC9180_X25519 = hpke_vectors("rfc9180_x25519_base.json")
HPKE_PQ_MLKEM768_X25519 = hpke_vectors("hpke_pq_mlkem768_x25519.json")
