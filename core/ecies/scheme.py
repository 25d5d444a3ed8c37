"""ECIES encryption and decryption: `ephemeral_pk || nonce || tag || ciphertext`.

A large payload is written once, into one output object, with no intermediate copy of the
message (see `core.ecies._buffers` for the figures behind that choice). Up to ONE_SHOT_BYTES the
AEAD is one call and its `ct || tag` is reordered with a copy, which costs less than setting
up the in-place path (see `core.ecies.symmetric`).
"""

import os

from core.ecies import keys, secp256k1
from core.ecies._buffers import new_bytes
from core.ecies.config import Config
from core.ecies.keys import KeyInput
from core.ecies.symmetric import (
    ONE_SHOT_BYTES,
    TAG_LENGTH,
    open_into,
    seal,
    seal_into,
    unseal,
)
from core.errors import DecryptionError, InvalidKeyError

_DEFAULT = Config()


def _byte_view(data: object) -> memoryview:
    """A flat byte view of any C-contiguous bytes-like object, without copying it."""
    if isinstance(data, str):
        raise TypeError("data must be a bytes-like object, not str")
    try:
        return memoryview(data).cast("B")  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"data must be a bytes-like object, not {type(data).__name__}") from None


def _encapsulate(
    receiver_pk: KeyInput,
    ephemeral_sk: KeyInput,
    config: Config,
    receiver_sk: KeyInput | None = None,
) -> tuple[bytes, bytes]:
    """(ephemeral public key as written in the payload, symmetric key)."""
    curve = config.elliptic_curve
    ephemeral_sk = keys.secret_key(ephemeral_sk, curve)
    if curve == "secp256k1":
        ephemeral = secp256k1.base_multiple(ephemeral_sk)
        if receiver_sk is None:
            receiver = secp256k1.parse(keys.key_bytes(receiver_pk, "secp256k1 public key"))
            shared = secp256k1.multiply(receiver, ephemeral_sk)
        else:
            secret = keys.secret_key(receiver_sk, curve)
            shared = secp256k1.base_multiple(secp256k1.scalar_product(ephemeral_sk, secret))
        written = secp256k1.encode(ephemeral, config.is_ephemeral_key_compressed)
        sym_key = keys.secp256k1_kdf(ephemeral, written, shared, config.is_hkdf_key_compressed)
        return written, sym_key
    raw = keys.key_bytes(receiver_pk, f"{curve} public key")
    written = keys.public_key(ephemeral_sk, curve)
    if curve == "x25519":
        return written, keys.x25519_shared(ephemeral_sk, keys.x25519_point(raw), written)
    return written, keys.ed25519_shared(ephemeral_sk, keys.ed25519_point(raw), written)


def _decapsulate(receiver_sk: bytes, ephemeral: bytes, config: Config) -> bytes:
    """Symmetric key from the payload's ephemeral key; InvalidKeyError if that key is bad."""
    curve = config.elliptic_curve
    if curve == "secp256k1":
        point = secp256k1.parse(ephemeral)
        shared = secp256k1.multiply(point, receiver_sk)
        return keys.secp256k1_kdf(point, ephemeral, shared, config.is_hkdf_key_compressed)
    if curve == "x25519":
        return keys.x25519_shared(receiver_sk, keys.x25519_point(ephemeral), ephemeral)
    return keys.ed25519_shared(receiver_sk, keys.ed25519_point(ephemeral), ephemeral)


def _encrypt_with(
    receiver_pk: KeyInput,
    data: object,
    config: Config,
    ephemeral_sk: KeyInput,
    nonce: bytes,
    receiver_sk: KeyInput | None = None,
) -> bytes:
    """Encrypt with a given ephemeral secret and nonce (known-answer tests only: both must be
    fresh and random for every message, which `encrypt` guarantees)."""
    plaintext = _byte_view(data)
    if len(nonce) != config.nonce_length:
        raise ValueError(f"nonce must be {config.nonce_length} bytes")
    written, sym_key = _encapsulate(receiver_pk, ephemeral_sk, config, receiver_sk)
    if len(plaintext) <= ONE_SHOT_BYTES:
        sealed = memoryview(seal(config.symmetric_algorithm, sym_key, nonce, plaintext))
        return b"".join((written, nonce, sealed[-TAG_LENGTH:], sealed[:-TAG_LENGTH]))
    start = len(written) + len(nonce)
    body = start + TAG_LENGTH
    out, view = new_bytes(body + len(plaintext))
    with view:
        view[: len(written)] = written
        view[len(written) : start] = nonce
        tag = seal_into(config.symmetric_algorithm, sym_key, nonce, plaintext, view[body:])
        view[start:body] = tag
    return out


def encrypt(
    receiver_pk: KeyInput,
    data: object,
    config: Config = _DEFAULT,
    *,
    receiver_sk: KeyInput | None = None,
) -> bytes:
    """Encrypt `data` (any bytes-like object) to `receiver_pk` (bytes or hex).

    secp256k1 public keys may be 33, 65 or 64 (raw X || Y) bytes. Raises InvalidKeyError for a
    malformed key.

    `receiver_sk`, the secret key of `receiver_pk`, is for a caller that holds it (a key
    service encrypting to its own keys). On secp256k1 the shared point is then computed as
    (k·s)·G, two multiplications of the generator from libsecp256k1's precomputed table, which
    gives the same payload faster (docs/performance/choices.md); `receiver_pk` is not read, nor
    checked against it. Other curves do not use it.
    """
    ephemeral_sk = keys.random_secret(config.elliptic_curve)
    nonce = os.urandom(config.nonce_length)
    return _encrypt_with(receiver_pk, data, config, ephemeral_sk, nonce, receiver_sk)


def decrypt(receiver_sk: KeyInput, data: object, config: Config = _DEFAULT) -> bytes:
    """Decrypt a payload with `receiver_sk` (bytes or hex).

    Raises InvalidKeyError for a malformed secret key and DecryptionError, with no detail, for
    anything wrong with the payload: too short, bad ephemeral key, failed authentication.
    """
    secret = keys.secret_key(receiver_sk, config.elliptic_curve)
    payload = _byte_view(data)
    key_end = config.ephemeral_key_length
    nonce_end = key_end + config.nonce_length
    body = nonce_end + TAG_LENGTH
    if len(payload) < body:
        raise DecryptionError("decryption failed")
    try:
        sym_key = _decapsulate(secret, bytes(payload[:key_end]), config)
    except InvalidKeyError:
        raise DecryptionError("decryption failed") from None
    nonce = bytes(payload[key_end:nonce_end])
    tag = payload[nonce_end:body]
    ciphertext = payload[body:]
    if len(ciphertext) <= ONE_SHOT_BYTES:
        sealed = b"".join((ciphertext, tag))
        return unseal(config.symmetric_algorithm, sym_key, nonce, sealed)
    out, view = new_bytes(len(ciphertext))
    with view:
        open_into(config.symmetric_algorithm, sym_key, nonce, tag, ciphertext, view)
    return out
