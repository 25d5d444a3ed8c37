"""core.aead: Wycheproof's verdicts, the payloads pyca's AESGCM and ChaCha20Poly1305 and
libsodium's XChaCha20-Poly1305 read and make, Transit's derivation, and convergent nonces that
repeat only for equal inputs."""

import hashlib
import hmac
import os
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from nacl import bindings

from core import aead
from core.errors import DecryptionError, InvalidKeyError
from tests.core.encryption.vectors import (
    AES_GCM,
    CHACHA20_POLY1305,
    XCHACHA20_POLY1305,
    AeadCase,
)


class LibsodiumXChaCha:
    """libsodium's XChaCha20-Poly1305 called directly, as pyca's AEADs are called."""

    def __init__(self, key: bytes) -> None:
        self.key = key

    def encrypt(self, nonce: bytes, data: bytes, ad: bytes) -> bytes:
        return bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(data, ad, nonce, self.key)

    def decrypt(self, nonce: bytes, data: bytes, ad: bytes) -> bytes:
        return bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(data, ad, nonce, self.key)


PEERS: dict[str, Any] = {
    "aes128-gcm": AESGCM,
    "aes256-gcm": AESGCM,
    "chacha20-poly1305": ChaCha20Poly1305,
    "xchacha20-poly1305": LibsodiumXChaCha,
}
VECTORS = AES_GCM + CHACHA20_POLY1305 + XCHACHA20_POLY1305


def test_the_vectors_cover_every_type() -> None:
    assert (len(AES_GCM), len(CHACHA20_POLY1305), len(XCHACHA20_POLY1305)) == (133, 316, 306)
    kinds = {(case.algorithm, case.valid) for case in VECTORS}
    assert kinds == {(algorithm, valid) for algorithm in PEERS for valid in (True, False)}
    assert set(PEERS) == set(aead.KEY_BYTES)


def test_xchacha_draft_vector() -> None:
    """draft-irtf-cfrg-xchacha-03, A.3.1: the AEAD's example."""
    plaintext = (
        b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for "
        b"the future, sunscreen would be it."
    )
    key = aead.cipher("xchacha20-poly1305", bytes(range(0x80, 0xA0)))
    nonce, ad = bytes(range(0x40, 0x58)), bytes.fromhex("50515253c0c1c2c3c4c5c6c7")
    payload = aead.seal(key, plaintext, ad, nonce)
    assert payload[24:-16].hex().startswith("bd6d179d3e83d43b9576579493c0e939572a1700252bfacc")
    assert payload[-16:].hex() == "c0875924c1c7987947deafd8780acf49"


@pytest.mark.parametrize("case", VECTORS, ids=lambda case: case.id)
def test_wycheproof(case: AeadCase) -> None:
    key = aead.cipher(case.algorithm, case.key)
    if case.valid:
        assert aead.open_payload(key, case.payload, case.associated_data) == case.plaintext
        nonce = case.payload[: aead.nonce_bytes(key)]
        assert aead.seal(key, case.plaintext, case.associated_data, nonce) == case.payload
    else:
        with pytest.raises(DecryptionError):
            aead.open_payload(key, case.payload, case.associated_data)


@pytest.mark.parametrize("algorithm", sorted(PEERS))
def test_payloads_open_both_ways_with_the_peer(algorithm: str) -> None:
    secret = os.urandom(aead.KEY_BYTES[algorithm])
    key, theirs = aead.cipher(algorithm, secret), PEERS[algorithm](secret)
    n = aead.nonce_bytes(key)
    assert n == (24 if algorithm == "xchacha20-poly1305" else 12)
    for size in (0, 1, 64, 4097):
        plaintext, ad = os.urandom(size), os.urandom(size % 7)
        payload = aead.seal(key, plaintext, ad)
        assert len(payload) == n + size + aead.TAG_BYTES
        assert theirs.decrypt(payload[:n], payload[n:], ad) == plaintext
        nonce = os.urandom(n)
        assert aead.open_payload(key, nonce + theirs.encrypt(nonce, plaintext, ad), ad) == plaintext


def test_every_failure_is_one_error() -> None:
    key = aead.cipher("aes256-gcm", os.urandom(32))
    payload = aead.seal(key, b"attack at dawn", b"header")
    for bad, ad in (
        (payload, b"other"),
        (payload[:-1], b"header"),
        (payload[: aead.NONCE_BYTES + aead.TAG_BYTES - 1], b"header"),
        (b"", b""),
        (payload[:5] + bytes([payload[5] ^ 1]) + payload[6:], b"header"),
    ):
        with pytest.raises(DecryptionError):
            aead.open_payload(key, bad, ad)
    with pytest.raises(InvalidKeyError):
        aead.cipher("aes128-gcm", os.urandom(32))


@pytest.mark.parametrize("algorithm", sorted(PEERS))
def test_derivation_is_transits_hkdf(algorithm: str) -> None:
    master, context = os.urandom(aead.KEY_BYTES[algorithm]), b"user-42"
    size = aead.KEY_BYTES[algorithm]
    expected = HKDF(hashes.SHA256(), size, None, context).derive(master)
    derived = aead.derive(algorithm, master, context, convergent=False)
    assert derived.nonce_keys is None
    payload = aead.seal(derived.key, b"hello")
    n = aead.nonce_bytes(derived.key)
    assert PEERS[algorithm](expected).decrypt(payload[:n], payload[n:], b"") == b"hello"
    # Convergent: the same key, then Transit's nonce key, then the one for associated data.
    okm = HKDF(hashes.SHA256(), size + 64, None, context).derive(master)
    convergent = aead.derive(algorithm, master, context, convergent=True)
    assert convergent.nonce_keys == (okm[size : size + 32], okm[size + 32 :])
    assert aead.open_payload(convergent.key, payload) == b"hello"
    with pytest.raises(InvalidKeyError):
        aead.derive(algorithm, master, b"", convergent=False)


def test_convergent_nonces_repeat_only_for_equal_inputs() -> None:
    master = os.urandom(32)
    keys = aead.derive("aes256-gcm", master, b"ctx", convergent=True).nonce_keys
    assert keys is not None
    # Without associated data, Transit's convergent version 3: HMAC-SHA256 of the plaintext.
    assert aead.convergent_nonce(keys, b"p") == hmac.digest(keys.plain, b"p", hashlib.sha256)[:12]
    inputs = [(b"p", b""), (b"q", b""), (b"p", b"a"), (b"p", b"b"), (b"", b"p"), (b"pa", b"")]
    nonces = [aead.convergent_nonce(keys, plaintext, ad) for plaintext, ad in inputs]
    assert len(set(nonces)) == len(inputs)
    assert nonces == [aead.convergent_nonce(keys, plaintext, ad) for plaintext, ad in inputs]
    # The length of the associated data is bound: moving bytes between it and the plaintext
    # changes the nonce.
    assert aead.convergent_nonce(keys, b"bc", b"a") != aead.convergent_nonce(keys, b"c", b"ab")
    other = aead.derive("aes256-gcm", master, b"ctx2", convergent=True).nonce_keys
    assert other is not None and aead.convergent_nonce(other, b"p") != nonces[0]
