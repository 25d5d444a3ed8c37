"""core.hpke: the published vectors of its KEMs (RFC 9180 Appendix A for DHKEM(X25519),
draft-ietf-hpke-pq for MLKEM768-X25519), payloads pyca's HPKE opens and makes, keys in the
service's encodings."""

import hashlib
import os
from typing import Any

import pytest
from cryptography.hazmat.primitives import hpke as pyca_hpke
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import mlkem, x25519

from core import hpke
from core.errors import DecryptionError, InvalidKeyError
from tests.core.encryption.vectors import HPKE_PQ_MLKEM768_X25519, RFC9180_X25519

KEMS = {"x25519": pyca_hpke.KEM.X25519, "mlkem768-x25519": pyca_hpke.KEM.MLKEM768_X25519}
KDFS = {1: pyca_hpke.KDF.HKDF_SHA256, 17: pyca_hpke.KDF.SHAKE256}
AEADS = {
    1: pyca_hpke.AEAD.AES_128_GCM,
    2: pyca_hpke.AEAD.AES_256_GCM,
    3: pyca_hpke.AEAD.CHACHA20_POLY1305,
}


def _secret(vector: dict[str, Any]) -> tuple[str, bytes]:
    """The KEM and the recipient's secret in the service's encoding: X25519's private key as
    it is; the hybrid's 32-byte seed expanded as X-Wing does (SHAKE256 to 96 bytes: the ML-KEM
    seed d ‖ z, then the X25519 private key)."""
    sk = bytes.fromhex(vector["skRm"])
    if vector["kem_id"] == 0x20:
        return "x25519", sk
    assert vector["kem_id"] == 0x647A
    return "mlkem768-x25519", hashlib.shake_256(sk).digest(96)


VECTORS = RFC9180_X25519 + HPKE_PQ_MLKEM768_X25519


def test_the_vectors_are_the_published_ones() -> None:
    suites = [(v["kem_id"], v["kdf_id"], v["aead_id"]) for v in VECTORS]
    assert suites == [(0x20, 1, 1), (0x20, 1, 3), (0x647A, 1, 3), (0x647A, 17, 3)]


@pytest.mark.parametrize(
    "vector", VECTORS, ids=lambda v: f"kem{v['kem_id']}-kdf{v['kdf_id']}-aead{v['aead_id']}"
)
def test_published_vectors(vector: dict[str, Any]) -> None:
    """The recipient's key gives the published public key, and the first encryption of the
    context (sequence number 0: what a single-shot Seal makes) opens to its plaintext with the
    info and aad given; a changed byte of the payload, info or aad does not."""
    kem, secret = _secret(vector)
    assert hpke.public_bytes(kem, secret).hex() == vector["pkRm"]
    suite = hpke.suite(kem, KDFS[vector["kdf_id"]], AEADS[vector["aead_id"]])
    first = vector["encryptions"][0]
    assert first.get("sequence_number", 0) == 0 and first["nonce"] == vector["base_nonce"]
    payload = bytes.fromhex(vector["enc"] + first["ct"])
    info, aad = bytes.fromhex(vector["info"]), bytes.fromhex(first["aad"])
    private = hpke.private_key(kem, secret)
    assert hpke.open_payload(kem, private, payload, info, aad, suite) == bytes.fromhex(first["pt"])
    for bad_payload, bad_info, bad_aad in (
        (payload[:-1] + bytes([payload[-1] ^ 1]), info, aad),
        (bytes([payload[0] ^ 1]) + payload[1:], info, aad),
        (payload, info + b"x", aad),
        (payload, info, aad + b"x"),
    ):
        with pytest.raises(DecryptionError):
            hpke.open_payload(kem, private, bad_payload, bad_info, bad_aad, suite)


@pytest.mark.parametrize("kem", ["x25519", "mlkem768-x25519"])
def test_payloads_open_both_ways_with_pyca(kem: str) -> None:
    secret, public = hpke.generate(kem)
    assert (len(secret), len(public)) == (hpke.SECRET_BYTES[kem], hpke.PUBLIC_BYTES[kem])
    if kem == "x25519":
        theirs_private: Any = x25519.X25519PrivateKey.from_private_bytes(secret)
    else:
        theirs_private = pyca_hpke.MLKEM768X25519PrivateKey(
            mlkem.MLKEM768PrivateKey.from_seed_bytes(secret[:64]),
            x25519.X25519PrivateKey.from_private_bytes(secret[64:]),
        )
    suite = pyca_hpke.Suite(KEMS[kem], pyca_hpke.KDF.HKDF_SHA256, pyca_hpke.AEAD.AES_256_GCM)
    for size in (0, 1, 1000):
        plaintext, info = os.urandom(size), os.urandom(size % 5)
        payload = hpke.seal(kem, hpke.public_key(kem, public), plaintext, info)
        assert len(payload) == hpke.ENC_BYTES[kem] + size + 16
        assert suite.decrypt(payload, theirs_private, info) == plaintext
        theirs = suite.encrypt(plaintext, theirs_private.public_key(), info)
        assert hpke.open_payload(kem, hpke.private_key(kem, secret), theirs, info) == plaintext
    # With associated data, the same RFC 9180 Seal as pyca's (its tests' own entry point).
    from cryptography.hazmat.bindings._rust import openssl as rust_openssl

    sealed = hpke.seal(kem, hpke.public_key(kem, public), b"m", b"i", b"a")
    assert rust_openssl.hpke._decrypt_with_aad(suite, sealed, theirs_private, b"i", b"a") == b"m"
    with pytest.raises(DecryptionError):
        hpke.open_payload(kem, hpke.private_key(kem, secret), sealed, b"i")


def test_keys_in_the_services_encodings() -> None:
    secret, public = hpke.generate("x25519")
    der = hpke.x25519_der(public)
    assert (
        x25519.X25519PublicKey.from_public_bytes(public).public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        == der
    )
    payload = hpke.seal("x25519", hpke.x25519_from_der(der), b"m")
    assert hpke.open_payload("x25519", hpke.private_key("x25519", secret), payload) == b"m"
    for bad in (
        lambda: hpke.public_key("x25519", public[:31]),
        lambda: hpke.public_key("mlkem768-x25519", public),
        lambda: hpke.public_key("mlkem768-x25519", b"\xff" * 1216),  # coefficients not reduced
        lambda: hpke.private_key("mlkem768-x25519", secret),
        lambda: hpke.x25519_from_der(public),
        lambda: hpke.x25519_from_der(
            mlkem.MLKEM768PrivateKey.generate()
            .public_key()
            .public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        ),
    ):
        with pytest.raises(InvalidKeyError):
            bad()
    short = hpke.seal("x25519", hpke.public_key("x25519", public), b"")
    with pytest.raises(DecryptionError):
        hpke.open_payload("x25519", hpke.private_key("x25519", secret), short[:-1])
