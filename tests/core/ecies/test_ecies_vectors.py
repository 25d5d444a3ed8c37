"""ECIES against the recorded vectors of tests/vectors/ecies (eciespy 0.4.7 and eciesjs 0.5.0
outputs, reject and divergent payloads, and the upstream ecies/rs, ecies/py, ecies/js answers)."""

import json
from pathlib import Path
from typing import Any

import pytest
from ecies_configs import CONFIGS

from core import ecies
from core.ecies import keys, scheme, symmetric
from core.errors import DecryptionError

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "ecies"


def _load(name: str) -> dict[str, Any]:
    return json.loads((VECTORS / f"{name}.json").read_text())


VALID = _load("encrypt_eciespy")["cases"] + _load("encrypt_eciesjs")["cases"]
REJECT = _load("decrypt_reject")["cases"]
DIVERGENT = _load("decrypt_divergent")["cases"]
UPSTREAM = _load("upstream_known")


def _key_forms(hex_key: str) -> list[bytes | str]:
    return [bytes.fromhex(hex_key), hex_key, "0x" + hex_key.upper()]


def test_vector_files_cover_every_configuration() -> None:
    assert len(VALID) == 396
    assert {case["config_id"] for case in VALID} == set(CONFIGS)
    for case in VALID:
        assert ecies.Config(**case["config"]) == CONFIGS[case["config_id"]]


@pytest.mark.parametrize("case", VALID, ids=[case["id"] for case in VALID])
def test_valid_vector(case: dict[str, Any]) -> None:
    config = ecies.Config(**case["config"])
    ciphertext = bytes.fromhex(case["ciphertext"])
    plaintext = bytes.fromhex(case["plaintext"])
    for secret in _key_forms(case["receiver_sk"]):
        assert ecies.decrypt(secret, ciphertext, config) == plaintext

    curve = config.elliptic_curve
    assert (
        ecies.public_key(case["ephemeral_sk"], curve, config.is_ephemeral_key_compressed).hex()
        == case["ephemeral_pk"]
    )
    assert ecies.public_key(case["receiver_sk"], curve).hex() == case["receiver_pk"]

    receivers = _key_forms(case["receiver_pk"])
    if curve == "secp256k1":
        receivers += _key_forms(case["receiver_pk_compressed"])
        receivers.append(bytes.fromhex(case["receiver_pk"])[1:])  # raw X || Y
    nonce = bytes.fromhex(case["nonce"])
    for receiver in receivers:
        again = scheme._encrypt_with(receiver, plaintext, config, case["ephemeral_sk"], nonce)
        assert again == ciphertext
    # The key holder's path ((k·s)·G on secp256k1) writes the same bytes.
    for secret in _key_forms(case["receiver_sk"]):
        owned = scheme._encrypt_with(
            case["receiver_pk"], plaintext, config, case["ephemeral_sk"], nonce, secret
        )
        assert owned == ciphertext


@pytest.mark.parametrize("case", REJECT, ids=[case["id"] for case in REJECT])
def test_reject_vector(case: dict[str, Any]) -> None:
    with pytest.raises(DecryptionError):
        ecies.decrypt(
            case["receiver_sk"], bytes.fromhex(case["ciphertext"]), ecies.Config(**case["config"])
        )


@pytest.mark.parametrize("case", DIVERGENT, ids=[case["id"] for case in DIVERGENT])
def test_divergent_vector_is_rejected(case: dict[str, Any]) -> None:
    """Documented choice (module docstring): hybrid secp256k1 keys, non-canonical x25519 keys
    and small-order ed25519 points are refused, although eciespy decrypts all of them."""
    with pytest.raises(DecryptionError):
        ecies.decrypt(
            case["receiver_sk"], bytes.fromhex(case["ciphertext"]), ecies.Config(**case["config"])
        )


def test_divergent_vectors_would_decrypt_without_the_checks() -> None:
    """The hybrid-key cases are real ciphertexts: with the prefix put back to 04 they decrypt
    to what eciespy reported, so the rejection above is the point check, not a broken payload."""
    hybrid = [case for case in DIVERGENT if "hybrid" in case["mutation"]]
    assert len(hybrid) == 12
    for case in hybrid:
        payload = bytearray.fromhex(case["ciphertext"])
        assert payload[0] in (6, 7)
        payload[0] = 4
        accepted = case["observed"]["eciespy"].removeprefix("accept:")
        config = ecies.Config(**case["config"])
        assert ecies.decrypt(case["receiver_sk"], payload, config).hex() == accepted


@pytest.mark.parametrize(
    "case", UPSTREAM["cases"], ids=[case["source"].split(" ")[0] for case in UPSTREAM["cases"]]
)
def test_upstream_known_answer(case: dict[str, Any]) -> None:
    config = ecies.Config(**case["config"])
    plaintext = ecies.decrypt(case["receiver_sk"], bytes.fromhex(case["ciphertext"]), config)
    assert plaintext.hex() == case["plaintext"]


def _scalar(value: int) -> bytes:
    return value.to_bytes(32, "big")


def test_upstream_component_answers() -> None:
    answers = UPSTREAM["component_known_answers"]
    assert len(answers) == 8
    assert (
        keys.hkdf_sha256(b"secret").hex()
        == answers["hkdf_sha256(ikm=b'secret', salt=empty, info=empty, L=32)"]
    )
    three_g = ecies.public_key(_scalar(3))
    for compressed, label in ((False, "hkdf_uncompressed"), (True, "hkdf_compressed")):
        config = ecies.Config(is_hkdf_key_compressed=compressed)
        _, shared = scheme._encapsulate(three_g, _scalar(2), config)
        name = f"encapsulate(secp256k1, eph_sk=2, receiver_pk=3*G, {label})"
        assert shared.hex() == answers[name]
    for curve in ("x25519", "ed25519"):
        receiver = ecies.public_key(_scalar(3), curve)
        _, shared = scheme._encapsulate(receiver, _scalar(2), ecies.Config(curve))
        name = f"encapsulate({curve}, eph_sk=2 (32-byte BE{' seed' if curve == 'ed25519' else ''})"
        assert shared.hex() == answers[f"{name}, receiver sk=3)"]


@pytest.mark.parametrize(
    ("algorithm", "key", "nonce", "tag", "ciphertext", "label"),
    [
        (
            "aes-256-gcm",
            "00" * 32,
            "f3e1ba810d2c8900b11312b7c725565f",
            "ec3b71e17c11dbe31484da9450edcf6c",
            "02d2ffed93b856f148b9",
            "sym aes-256-gcm n16",
        ),
        ("aes-256-gcm", "00" * 32, "00" * 12, "530f8afbc74536b9a963b4f1c4cb738b", "", "n12"),
        (
            "xchacha20",
            "27bd6ec46292a3b421cdaf8a3f0ca759cbc67bcbe7c5855aa0d1e0700fd0e828",
            "fbd5dd10431af533c403d6f4fa629931e5f31872d2f7e7b6",
            "5b5ccc27324af03b7ca92dd067ad6eb5",
            "aa0664f3c00a09d098bf",
            "sym xchacha20",
        ),
    ],
)
def test_upstream_symmetric_answers(
    algorithm: str, key: str, nonce: str, tag: str, ciphertext: str, label: str
) -> None:
    [expected] = [
        value
        for name, value in UPSTREAM["component_known_answers"].items()
        if name.startswith("sym") and label in name and f"tag={tag}" in name
    ]
    plain = bytearray(len(ciphertext) // 2)
    symmetric.open_into(
        algorithm,
        bytes.fromhex(key),
        bytes.fromhex(nonce),
        memoryview(bytes.fromhex(tag)),
        memoryview(bytes.fromhex(ciphertext)),
        memoryview(plain),
    )
    assert plain.hex() == expected
    sealed = bytearray(len(plain))
    new_tag = symmetric.seal_into(
        algorithm, bytes.fromhex(key), bytes.fromhex(nonce), memoryview(plain), memoryview(sealed)
    )
    assert (new_tag.hex(), sealed.hex()) == (tag, ciphertext)


def test_hchacha20_draft_vector() -> None:
    """draft-irtf-cfrg-xchacha-03, section 2.2.1."""
    key = bytes(range(32))
    nonce = bytes.fromhex("000000090000004a0000000031415927")
    expected = "82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc"
    assert symmetric.hchacha20(key, nonce).hex() == expected
