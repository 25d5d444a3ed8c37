"""ECIES public API: configuration checks, key forms, bad input, payload tampering, data
types, and a large round trip."""

import array
import dataclasses
import os

import nacl.bindings
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from ecies_configs import CONFIGS

from core import ecies
from core.ecies import keys
from core.errors import DecryptionError, InvalidKeyError

_SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_P25519 = 2**255 - 19
_ED25519_ORDER_2 = bytes.fromhex("ec" + "ff" * 30 + "7f")  # (0, -1)


# Config --------------------------------------------------------------------------------------


def test_config_defaults_match_eciespy() -> None:
    from ecies.config import Config as EciespyConfig

    ours, theirs = ecies.Config(), EciespyConfig()
    assert dataclasses.asdict(ours) == dataclasses.asdict(theirs)


@pytest.mark.parametrize(
    "fields",
    [
        {"elliptic_curve": "p256"},
        {"symmetric_algorithm": "aes-128-gcm"},
        {"symmetric_nonce_length": 24},
        {"symmetric_nonce_length": 8},
        {"symmetric_nonce_length": True},
        {"symmetric_nonce_length": "16"},
        {"symmetric_algorithm": "xchacha20", "symmetric_nonce_length": 32},
        {"is_ephemeral_key_compressed": 1},
        {"is_hkdf_key_compressed": "yes"},
    ],
)
def test_config_rejects_bad_values(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ecies.Config(**fields)  # type: ignore[arg-type]


def test_config_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        ecies.Config().elliptic_curve = "x25519"  # type: ignore[misc]


@pytest.mark.parametrize("nonce_length", [12, 16, 24])
def test_xchacha20_ignores_nonce_length(nonce_length: int) -> None:
    config = ecies.Config(symmetric_algorithm="xchacha20", symmetric_nonce_length=nonce_length)
    secret, public = ecies.generate_keypair()
    payload = ecies.encrypt(public, b"abc", config)
    assert len(payload) == 65 + 24 + 16 + 3
    assert ecies.decrypt(secret, payload, ecies.Config(symmetric_algorithm="xchacha20")) == b"abc"


# Keys ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("curve", ["secp256k1", "x25519", "ed25519"])
def test_generate_keypair(curve: str) -> None:
    secret, public = ecies.generate_keypair(curve)
    assert len(secret) == 32
    assert len(public) == (65 if curve == "secp256k1" else 32)
    assert ecies.public_key(secret, curve) == public
    assert ecies.generate_keypair(curve)[0] != secret


def test_public_key_forms() -> None:
    secret, public = ecies.generate_keypair()
    compressed = ecies.public_key(secret, compressed=True)
    assert compressed[0] in (2, 3) and compressed[1:] == public[1:33]
    assert ecies.public_key(secret.hex()) == ecies.public_key("0X" + secret.hex().upper())
    assert ecies.public_key(bytearray(secret)) == public


def test_known_public_keys() -> None:
    """secp256k1 1·G; RFC 7748 section 6.1 (Alice); RFC 8032 section 7.1 test 1."""
    assert ecies.public_key((1).to_bytes(32, "big"), compressed=True).hex() == (
        "0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"
    )
    x25519_sk = "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"
    assert ecies.public_key(x25519_sk, "x25519").hex() == (
        "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
    )
    ed25519_sk = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
    assert ecies.public_key(ed25519_sk, "ed25519").hex() == (
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    )


def test_unknown_curve() -> None:
    with pytest.raises(ValueError, match="curve"):
        ecies.generate_keypair("p256")
    with pytest.raises(ValueError, match="curve"):
        ecies.public_key(bytes(32), "p256")


@pytest.mark.parametrize(
    "key", ["zz" * 32, "0" * 63, "0x" + "0" * 63, " " + "00" * 32, "00 " * 32, "0x", 12345, None]
)
def test_malformed_key_input(key: object) -> None:
    _, public = ecies.generate_keypair()
    with pytest.raises(InvalidKeyError):
        ecies.encrypt(key, b"x")  # type: ignore[arg-type]
    with pytest.raises(InvalidKeyError):
        ecies.decrypt(key, public)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("curve", "secret"),
    [
        ("secp256k1", bytes(32)),
        ("secp256k1", _SECP256K1_N.to_bytes(32, "big")),
        ("secp256k1", b"\xff" * 32),
        ("secp256k1", bytes(31)),
        ("secp256k1", b"\x01" * 33),
        ("x25519", b"\x01" * 31),
        ("ed25519", b"\x01" * 33),
        ("ed25519", b""),
    ],
)
def test_bad_secret_keys(curve: str, secret: bytes) -> None:
    config = ecies.Config(curve)
    with pytest.raises(InvalidKeyError):
        ecies.decrypt(secret, bytes(200), config)
    with pytest.raises(InvalidKeyError):
        ecies.public_key(secret, curve)
    if curve == "secp256k1":
        _, public = ecies.generate_keypair()
        with pytest.raises(InvalidKeyError):
            ecies.encrypt(public, b"data", config, receiver_sk=secret)


@pytest.mark.parametrize("curve", ["x25519", "ed25519"])
def test_receiver_secret_is_not_needed_off_secp256k1(curve: str) -> None:
    config = ecies.Config(curve)
    secret, public = ecies.generate_keypair(curve)
    payload = ecies.encrypt(public, b"data", config, receiver_sk=secret)
    assert ecies.decrypt(secret, payload, config) == b"data"


def test_hkdf_sha256_against_rfc_5869_and_cryptography() -> None:
    # RFC 5869 appendix A.3 (SHA-256, empty salt and info): the first 32 bytes of its OKM.
    okm = "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d"
    assert keys.hkdf_sha256(b"\x0b" * 22).hex() == okm
    for length in (*range(0, 140), 1000, 100_000):
        ikm = os.urandom(length)
        reference = HKDF(hashes.SHA256(), 32, salt=None, info=None).derive(ikm)
        assert keys.hkdf_sha256(ikm) == reference, length


def test_key_errors_do_not_echo_secret_bytes() -> None:
    secret = "ab" * 31  # 31 bytes: wrong length
    with pytest.raises(InvalidKeyError) as raised:
        ecies.decrypt(secret, bytes(200))
    assert "31" in str(raised.value)
    assert "abab" not in str(raised.value)


_G = ecies.public_key((1).to_bytes(32, "big"))


@pytest.mark.parametrize(
    ("curve", "public"),
    [
        ("secp256k1", _G[:32]),
        ("secp256k1", _G + b"\x00"),
        ("secp256k1", b"\x06" + _G[1:]),  # hybrid form of G (y is even)
        ("secp256k1", b"\x05" + _G[1:33]),
        ("secp256k1", b"\x02" + (5).to_bytes(32, "big")),  # x = 5 is not on the curve
        ("secp256k1", b"\x04" + _G[1:33] + (1).to_bytes(32, "big")),
        ("secp256k1", b"\x02" + b"\xff" * 32),  # x >= p
        ("x25519", bytes(31)),
        ("x25519", bytes(32)),  # u = 0, low order
        ("x25519", (1).to_bytes(32, "little")),  # u = 1, low order
        ("x25519", (_P25519 + 9).to_bytes(32, "little")),  # 9 + p: non-canonical base point
        ("x25519", bytes.fromhex("09" + "00" * 30 + "80")),  # base point with bit 255 set
        ("ed25519", bytes(33)),
        ("ed25519", (1).to_bytes(32, "little")),  # identity
        ("ed25519", _ED25519_ORDER_2),
        ("ed25519", (2).to_bytes(32, "little")),  # y = 2 has no x
        ("ed25519", (_P25519 + 1).to_bytes(32, "little")),  # identity, non-canonical
    ],
)
def test_bad_public_keys(curve: str, public: bytes) -> None:
    with pytest.raises(InvalidKeyError):
        ecies.encrypt(public, b"data", ecies.Config(curve))


def test_ed25519_mixed_order_public_key_is_refused() -> None:
    _, public = ecies.generate_keypair("ed25519")
    mixed = nacl.bindings.crypto_core_ed25519_add(public, _ED25519_ORDER_2)
    with pytest.raises(InvalidKeyError, match="prime-order"):
        ecies.encrypt(mixed, b"data", ecies.Config("ed25519"))


def test_ed25519_mixed_order_ephemeral_point_is_refused() -> None:
    """Adding a torsion point leaves the shared point unchanged under a clamped scalar, so
    accepting it would make payloads malleable."""
    config = ecies.Config("ed25519")
    secret, public = ecies.generate_keypair("ed25519")
    payload = ecies.encrypt(public, b"data", config)
    mixed = nacl.bindings.crypto_core_ed25519_add(payload[:32], _ED25519_ORDER_2)
    with pytest.raises(DecryptionError):
        ecies.decrypt(secret, mixed + payload[32:], config)


# Payloads ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_truncation_and_bit_flip_is_rejected(name: str) -> None:
    config = CONFIGS[name]
    secret, public = ecies.generate_keypair(config.elliptic_curve)
    payload = ecies.encrypt(public, b"0123456789", config)
    assert ecies.decrypt(secret, payload, config) == b"0123456789"
    for length in range(len(payload)):
        with pytest.raises(DecryptionError):
            ecies.decrypt(secret, payload[:length], config)
    with pytest.raises(DecryptionError):
        ecies.decrypt(secret, payload + b"\x00", config)
    for index in range(len(payload)):
        tampered = bytearray(payload)
        tampered[index] ^= 0x01 << (index % 8)
        with pytest.raises(DecryptionError) as raised:
            ecies.decrypt(secret, tampered, config)
        assert str(raised.value) == "decryption failed"


@pytest.mark.parametrize("name", list(CONFIGS))
def test_empty_message(name: str) -> None:
    config = CONFIGS[name]
    secret, public = ecies.generate_keypair(config.elliptic_curve)
    payload = ecies.encrypt(public, b"", config)
    assert len(payload) == config.ephemeral_key_length + config.nonce_length + 16
    assert ecies.decrypt(secret, payload, config) == b""
    with pytest.raises(DecryptionError):
        ecies.decrypt(secret, payload[:-1] + bytes([payload[-1] ^ 1]), config)


def test_wrong_receiver_is_rejected() -> None:
    _, public = ecies.generate_keypair()
    other, _ = ecies.generate_keypair()
    with pytest.raises(DecryptionError):
        ecies.decrypt(other, ecies.encrypt(public, b"secret"))


def test_each_encryption_is_fresh() -> None:
    secret, public = ecies.generate_keypair()
    first, second = ecies.encrypt(public, b"same"), ecies.encrypt(public, b"same")
    assert first[:65] != second[:65] and first[65:81] != second[65:81]
    assert ecies.decrypt(secret, first) == ecies.decrypt(secret, second) == b"same"


def test_bytes_like_inputs() -> None:
    secret, public = ecies.generate_keypair("x25519")
    config = ecies.Config("x25519")
    message = os.urandom(4096)
    words = array.array("I", message)
    for data in (message, bytearray(message), memoryview(message), words):
        payload = ecies.encrypt(public, data, config)
        assert type(payload) is bytes
        plain = ecies.decrypt(secret, memoryview(bytearray(payload)), config)
        assert type(plain) is bytes and plain == message
    window = memoryview(b"xx" + message + b"yy")[2:-2]
    assert ecies.decrypt(secret, ecies.encrypt(public, window, config), config) == message


def test_results_are_independent_immutable_bytes() -> None:
    secret, public = ecies.generate_keypair()
    source = bytearray(b"abcdef" * 100)
    payload = ecies.encrypt(public, source)
    source[:] = bytes(len(source))
    plain = ecies.decrypt(secret, payload)
    assert plain == b"abcdef" * 100
    assert hash(plain) == hash(b"abcdef" * 100)
    with pytest.raises(TypeError):
        memoryview(plain)[0] = 0  # type: ignore[index]


@pytest.mark.parametrize("data", ["text", 42, None, [1, 2]])
def test_non_bytes_data(data: object) -> None:
    secret, public = ecies.generate_keypair()
    with pytest.raises(TypeError, match="bytes-like"):
        ecies.encrypt(public, data)
    with pytest.raises(TypeError, match="bytes-like"):
        ecies.decrypt(secret, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["secp256k1-ephU-hkdfU-aes256gcm-n16", "x25519-xchacha20"])
def test_200_mib_round_trip(name: str) -> None:
    config = CONFIGS[name]
    secret, public = ecies.generate_keypair(config.elliptic_curve)
    message = os.urandom(200 << 20)
    payload = ecies.encrypt(public, message, config)
    header = config.ephemeral_key_length + config.nonce_length + 16
    assert len(payload) == header + len(message)
    plain = ecies.decrypt(secret, payload, config)
    assert plain == message
    del plain
    tampered = bytearray(payload)
    del payload
    tampered[-1] ^= 1
    with pytest.raises(DecryptionError):
        ecies.decrypt(secret, tampered, config)
