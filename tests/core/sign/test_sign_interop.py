"""`core.sign` beside the real peers: coincurve (libsecp256k1's own API), eth-keys (Ethereum's
recovery of addresses), PyNaCl (libsodium) and OpenSSL through `cryptography`; and known
answers (RFC 8032's first Ed25519 test, Keccak-256 of the empty string)."""

import hashlib
import os

import coincurve
import eth_keys
import nacl.signing
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from core.errors import EncodingError, InvalidKeyError
from core.sign import ecdsa, ed25519

N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
# Ids of their own: a random message's bytes would make each test process's ids differ.
MESSAGES = [
    pytest.param(b"", id="empty"),
    pytest.param(b"abc", id="abc"),
    pytest.param(os.urandom(1000), id="random-1000"),
]


def test_keccak256_known_answer() -> None:
    # Keccak-256 of the empty string, as Ethereum's yellow paper uses it (not SHA3-256's a7ffc6...).
    assert ecdsa.keccak256(b"").hex() == (
        "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
    )


@pytest.mark.parametrize("message", MESSAGES)
def test_ecdsa_matches_coincurve(message: bytes) -> None:
    secret, public = ecdsa.generate_keypair()
    peer = coincurve.PrivateKey(secret)
    assert public == peer.public_key.format(compressed=False)
    # Both draw the RFC 6979 nonce, so the signatures are equal byte for byte.
    der = ecdsa.sign(secret, message)
    assert der == peer.sign(message)
    assert ecdsa.sign(secret, message, format="recoverable") == peer.sign_recoverable(message)
    compact = ecdsa.sign(secret, message, format="compact")
    assert compact == peer.sign_recoverable(message)[:64]
    assert peer.public_key.verify(der, message)
    assert ecdsa.verify(public, message, peer.sign(message))
    assert ecdsa.verify(public, message, compact, format="compact")


def test_ecdsa_signatures_are_low_s() -> None:
    secret, _ = ecdsa.generate_keypair()
    for _ in range(64):
        signature = ecdsa.sign(secret, os.urandom(32), format="recoverable")
        assert int.from_bytes(signature[32:64]) <= N // 2
        assert signature[64] in (0, 1)


def test_ecdsa_high_s_verifies_but_low_s_is_made() -> None:
    secret, public = ecdsa.generate_keypair()
    compact = ecdsa.sign(secret, b"m", format="compact")
    high = compact[:32] + (N - int.from_bytes(compact[32:])).to_bytes(32)
    assert ecdsa.verify(public, b"m", high, format="compact")
    assert not ecdsa.verify(public, b"n", high, format="compact")


@pytest.mark.parametrize("message", MESSAGES)
def test_ecdsa_recoverable_gives_the_ethereum_address(message: bytes) -> None:
    secret, public = ecdsa.generate_keypair()
    peer = eth_keys.keys.PrivateKey(secret)
    digest = ecdsa.keccak256(message)
    signature = ecdsa.sign(secret, message, hash="keccak256", format="recoverable")
    assert signature == peer.sign_msg_hash(digest).to_bytes()
    recovered = eth_keys.keys.Signature(signature).recover_public_key_from_msg_hash(digest)
    assert recovered.to_checksum_address() == peer.public_key.to_checksum_address()
    assert ecdsa.recover(message, signature, hash="keccak256") == public
    prehashed = ecdsa.sign(secret, digest, prehashed=True, format="recoverable")
    assert prehashed == signature
    assert ecdsa.verify(
        public, digest, peer.sign_msg_hash(digest).to_bytes(), prehashed=True, format="recoverable"
    )


def test_ethereum_address_of_a_published_key() -> None:
    # The key and address of web3.js's accounts documentation (privateKeyToAccount).
    secret = bytes.fromhex("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
    signature = ecdsa.sign(secret, b"hello", hash="keccak256", format="recoverable")
    recovered = eth_keys.keys.Signature(signature).recover_public_key_from_msg_hash(
        ecdsa.keccak256(b"hello")
    )
    assert recovered.to_checksum_address() == "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23"
    assert ecdsa.keccak256(ecdsa.public_key(secret)[1:])[12:].hex() == (
        "2c7536e3605d9c16a7a3d7b1898e529396a65c23"
    )


@pytest.mark.parametrize("message", MESSAGES)
def test_ecdsa_with_openssl(message: bytes) -> None:
    secret, public = ecdsa.generate_keypair()
    peer = ec.derive_private_key(int.from_bytes(secret), ec.SECP256K1())
    # OpenSSL draws a random nonce; its high-S half of signatures verifies as well.
    for _ in range(8):
        assert ecdsa.verify(public, message, peer.sign(message, ec.ECDSA(hashes.SHA256())))
    der = ecdsa.sign(secret, message)
    peer.public_key().verify(der, message, ec.ECDSA(hashes.SHA256()))
    r, s = decode_dss_signature(der)
    assert ecdsa.sign(secret, message, format="compact") == r.to_bytes(32) + s.to_bytes(32)
    with pytest.raises(InvalidSignature):
        peer.public_key().verify(der, message + b"x", ec.ECDSA(hashes.SHA256()))


def test_ecdsa_malformed_input_fails_to_verify() -> None:
    secret, public = ecdsa.generate_keypair()
    der = ecdsa.sign(secret, b"m")
    recoverable = ecdsa.sign(secret, b"m", format="recoverable")
    assert not ecdsa.verify(public[:-1], b"m", der)
    assert not ecdsa.verify(b"\x04" + bytes(64), b"m", der)
    assert not ecdsa.verify(public, b"m", der[:-1])
    assert not ecdsa.verify(public, b"m", b"")
    assert not ecdsa.verify(public, b"m", der, format="compact")
    assert not ecdsa.verify(public, b"m", recoverable[:64] + b"\x04", format="recoverable")
    assert not ecdsa.verify(public, b"m", recoverable[:64], format="recoverable")
    assert ecdsa.verify(
        public, b"m", recoverable[:64] + bytes([recoverable[64] + 27]), format="recoverable"
    )
    assert not ecdsa.verify(public, b"m", b"\xff" * 64, format="compact")
    # The key's compressed form verifies the same signatures.
    compressed = coincurve.PublicKey(public).format(compressed=True)
    assert ecdsa.verify(compressed, b"m", der)
    assert ecdsa.verify(compressed, b"m", recoverable, format="recoverable")


def test_ecdsa_malformed_request_raises() -> None:
    secret, public = ecdsa.generate_keypair()
    with pytest.raises(EncodingError, match="32-byte digest"):
        ecdsa.sign(secret, b"short", prehashed=True)
    with pytest.raises(EncodingError, match="32-byte digest"):
        ecdsa.verify(public, b"short", b"", prehashed=True)
    with pytest.raises(EncodingError, match="hash"):
        ecdsa.sign(secret, b"m", hash="md5")  # type: ignore[arg-type]
    with pytest.raises(EncodingError, match="format"):
        ecdsa.sign(secret, b"m", format="pem")  # type: ignore[arg-type]
    with pytest.raises(InvalidKeyError):
        ecdsa.sign(bytes(32), b"m")
    with pytest.raises(InvalidKeyError):
        ecdsa.sign(N.to_bytes(32), b"m")


def test_sha256_is_the_default_hash() -> None:
    secret, _ = ecdsa.generate_keypair()
    digest = hashlib.sha256(b"m").digest()
    assert ecdsa.sign(secret, b"m") == ecdsa.sign(secret, digest, prehashed=True)


def test_ed25519_rfc8032_test_1() -> None:
    # RFC 8032, section 7.1, TEST 1 (the empty message).
    secret = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
    public = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
    signature = bytes.fromhex(
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
    )
    assert ed25519.public_key(secret) == public
    assert ed25519.SigningKey(secret).sign(b"") == signature
    assert ed25519.verify(public, b"", signature)


@pytest.mark.parametrize("message", MESSAGES)
def test_ed25519_matches_pynacl_and_openssl(message: bytes) -> None:
    secret, public = ed25519.generate_keypair()
    peer = nacl.signing.SigningKey(secret)
    assert bytes(peer.verify_key) == public
    signature = ed25519.SigningKey(secret).sign(message)
    assert signature == peer.sign(message).signature
    # OpenSSL makes the same deterministic signature, and verifies it.
    openssl = Ed25519PrivateKey.from_private_bytes(secret)
    assert openssl.sign(message) == signature
    openssl.public_key().verify(signature, message)
    peer.verify_key.verify(message, signature)
    assert ed25519.verify(public, message, peer.sign(message).signature)
    assert not ed25519.verify(public, message + b"x", signature)
    assert not ed25519.verify(public, message, signature[:-1])
    assert not ed25519.verify(public[:-1], message, signature)


def test_ed25519_bad_secret() -> None:
    with pytest.raises(InvalidKeyError):
        ed25519.SigningKey(bytes(31))
