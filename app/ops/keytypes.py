"""Key types: what each one draws, takes in from elsewhere, shows of its public part and gives
out on export. A new type is one entry of `KEY_TYPES`; the verbs of `app.ops.keys` (creation,
rotation, the public part, export), `app.ops.backup` and `app.ops.byok` read only these hooks.

A version is stored as a secret and, for the types that have one, a public part. The secret is
what `generate` draws or `take` gives back, in the type's own form (a raw key, an FE master key's
encoding); the public part is the type's raw public key where it has one (SEC1 uncompressed for
the EC types, the 32 bytes of X25519 and Ed25519, FIPS 204's encoding for ML-DSA, the scheme's
encoding for FE; RSA, which has no raw form, its SubjectPublicKeyInfo).
"""

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, x25519
from cryptography.hazmat.primitives.asymmetric import mldsa as pyca_mldsa

from app.ops.errors import Problem
from app.ops.jwk import jwk
from core import aead, ecies, hpke
from core.fe.group import DEFAULT_CURVE
from core.fe.schemes import SCHEMES, Scheme
from core.sign import ecdsa, ecdsa_nist, mldsa, rsa
from core.sign import ed25519 as ed25519_signatures

AEZ_KEY_BYTES = 48
# 64 bytes: as long as SHA-512's output, the longest an HMAC key needs (RFC 2104, section 3).
HMAC_KEY_BYTES = 64
# The sizes of HMAC key a BYOK import or a Transit restore takes.
HMAC_TAKEN_BYTES = (32, 512)

# A version's (secret, public part or None).
Pair = tuple[bytes, bytes | None]
PublicFormat = Literal["raw", "der", "pem", "jwk"]
PUBLIC_FORMATS: tuple[PublicFormat, ...] = ("raw", "der", "pem", "jwk")


def _same(secret: bytes) -> bytes:
    return secret


@dataclass(frozen=True)
class KeyType:
    """One key type and the hooks every verb on keys reads."""

    name: str
    # The family whose verbs use it (a type some families share names the first).
    family: str
    # Fresh material for the key's creation parameters.
    generate: Callable[[dict[str, Any]], Pair]
    # Material made elsewhere (BYOK, or a backup's version) as it will be stored, once it is
    # one this type could have drawn with these parameters: InvalidKeyError or ValueError with
    # what is wrong otherwise. Nothing is stored before it answers.
    take: Callable[[bytes, dict[str, Any]], Pair]
    # Whether BYOK (POST /v1/keys/import with wrapped_material) takes it: types whose material
    # needs creation parameters (FE) come only from backups.
    byok: bool = True
    # Whether the stored public part is itself the raw public key (RSA has none).
    raw_public: bool = True
    # The stored public part as a pyca public key, for its SPKI (der, pem) and JWK forms; None
    # where no standard form exists (FE).
    load_public: Callable[[bytes], Any] | None = None
    # The stored secret as export (and BYOK) gives it.
    export: Callable[[bytes], bytes] = _same
    # What the verbs use of a version, made from its secret once per version the keyring holds
    # (an Ed25519 signing key with its expanded secret, an ML-DSA key expanded from its seed),
    # and about how much memory that holds beyond the secret and public part (OpenSSL's, which
    # the keyring's byte budget counts).
    prepare: Callable[[bytes], Any] | None = None
    prepared_bytes: int = 0

    def public(self, public: bytes, form: PublicFormat) -> bytes | str | dict[str, str]:
        """The stored public part in `form`: raw or der as bytes, pem as text, jwk as an object;
        409 for a form this type has none of."""
        if form == "raw" and self.raw_public:
            return public
        if form != "raw" and self.load_public is not None:
            key = self.load_public(public)
            if form == "jwk":
                return jwk(key)
            encoding = serialization.Encoding.PEM if form == "pem" else serialization.Encoding.DER
            encoded = key.public_bytes(encoding, serialization.PublicFormat.SubjectPublicKeyInfo)
            return encoded.decode() if form == "pem" else bytes(encoded)
        has = [f for f in PUBLIC_FORMATS if self._has(f)]
        raise Problem(
            409,
            "no-public-format",
            "No such public form",
            f"a {self.name} public key has no {form} form; it has {', '.join(has)}",
        )

    def _has(self, form: PublicFormat) -> bool:
        return self.raw_public if form == "raw" else self.load_public is not None


def _sized(
    size: int, name: str, public_of: Callable[[bytes], bytes] | None
) -> Callable[[bytes, dict[str, Any]], Pair]:
    """`take` for a type whose secret is `size` raw bytes, its public part (if any) computed."""

    def take(secret: bytes, params: dict[str, Any]) -> Pair:
        if len(secret) != size:
            raise ValueError(f"a secret of {size} bytes for {name}, not {len(secret)}")
        return secret, None if public_of is None else public_of(secret)

    return take


def _hmac_take(secret: bytes, params: dict[str, Any]) -> Pair:
    """An HMAC key brought in: from 32 bytes (SHA-256's block of security) to 512 (Vault's
    largest), so that the keys of Transit's `hmac` type move here whatever their size."""
    if not HMAC_TAKEN_BYTES[0] <= len(secret) <= HMAC_TAKEN_BYTES[1]:
        low, high = HMAC_TAKEN_BYTES
        raise ValueError(f"an hmac key of {low} to {high} bytes, not {len(secret)}")
    return secret, None


def _random(size: int) -> Callable[[dict[str, Any]], Pair]:
    def generate(params: dict[str, Any]) -> Pair:
        return os.urandom(size), None

    return generate


def _secp256k1_point(public: bytes) -> ec.EllipticCurvePublicKey:
    return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256K1(), public)


def _ecies(curve: str) -> KeyType:
    def generate(params: dict[str, Any]) -> Pair:
        return ecies.generate_keypair(curve)

    name = f"ecies-{curve}"
    loads: dict[str, Callable[[bytes], Any]] = {
        "secp256k1": _secp256k1_point,
        "x25519": x25519.X25519PublicKey.from_public_bytes,
        "ed25519": ed25519.Ed25519PublicKey.from_public_bytes,
    }
    public_of = lambda secret: ecies.public_key(secret, curve)  # noqa: E731
    return KeyType(name, "ecies", generate, _sized(32, name, public_of), load_public=loads[curve])


def _aead(algorithm: str) -> KeyType:
    size = aead.KEY_BYTES[algorithm]
    return KeyType(
        algorithm,
        "aead",
        _random(size),
        _sized(size, algorithm, None),
        prepare=partial(aead.cipher, algorithm),
    )


def _hpke(kem: str) -> KeyType:
    def generate(params: dict[str, Any]) -> Pair:
        return hpke.generate(kem)

    name = f"hpke-{kem}"
    return KeyType(
        name,
        "hpke",
        generate,
        _sized(hpke.SECRET_BYTES[kem], name, partial(hpke.public_bytes, kem)),
        # The hybrid's public key has no SubjectPublicKeyInfo nor JWK yet: raw only.
        load_public=x25519.X25519PublicKey.from_public_bytes if kem == "x25519" else None,
        prepare=partial(hpke.private_key, kem),
    )


def _fe(scheme: Scheme) -> KeyType:
    def generate(params: dict[str, Any]) -> Pair:
        return scheme.on(params.get("curve", DEFAULT_CURVE)).setup_bytes(params["dimension"])

    def take(secret: bytes, params: dict[str, Any]) -> Pair:
        on = scheme.on(params["curve"])
        master = on.master_key(secret)
        if master.n != params["dimension"] or master.curve != params["curve"]:
            raise ValueError(
                f"a master key of dimension {master.n} on {master.curve}, where the key is of "
                f"dimension {params['dimension']} on {params['curve']}"
            )
        return secret, on.public_bytes(master)

    return KeyType(scheme.key_type, "fe", generate, take, byok=False)


def _ecdsa_secp256k1() -> KeyType:
    def generate(params: dict[str, Any]) -> Pair:
        return ecdsa.generate_keypair()

    name = "ecdsa-secp256k1"
    take = _sized(32, name, ecdsa.public_key)
    return KeyType(name, "sign", generate, take, load_public=_secp256k1_point)


def _ed25519() -> KeyType:
    def generate(params: dict[str, Any]) -> Pair:
        return ed25519_signatures.generate_keypair()

    return KeyType(
        "ed25519",
        "sign",
        generate,
        _sized(32, "ed25519", ed25519_signatures.public_key),
        load_public=ed25519.Ed25519PublicKey.from_public_bytes,
        prepare=ed25519_signatures.SigningKey,
    )


def _ecdsa_nist(curve: str) -> KeyType:
    def generate(params: dict[str, Any]) -> Pair:
        return ecdsa_nist.generate(curve)

    def take(material: bytes, params: dict[str, Any]) -> Pair:
        return ecdsa_nist.take(curve, material)

    def load_public(public: bytes) -> ec.EllipticCurvePublicKey:
        return ec.EllipticCurvePublicKey.from_encoded_point(ecdsa_nist.CURVES[curve], public)

    return KeyType(
        f"ecdsa-{curve}",
        "sign",
        generate,
        take,
        load_public=load_public,
        prepare=ecdsa_nist.signing_key,
        prepared_bytes=2048,
    )


def _rsa(bits: int) -> KeyType:
    def generate(params: dict[str, Any]) -> Pair:
        return rsa.generate(bits)

    def take(material: bytes, params: dict[str, Any]) -> Pair:
        return rsa.take(bits, material)

    return KeyType(
        f"rsa-{bits}",
        "sign",
        generate,
        take,
        raw_public=False,  # the stored public part is the SubjectPublicKeyInfo
        load_public=serialization.load_der_public_key,
        prepare=rsa.signing_key,
        prepared_bytes=8192,
    )


# The public keys of the ML-DSA levels, and what an expanded key holds in OpenSSL's memory (its
# vectors of polynomials: about 21 and 40 KiB measured for ML-DSA-44 and ML-DSA-87).
_ML_DSA_PUBLIC: dict[str, tuple[Any, int]] = {
    "44": (pyca_mldsa.MLDSA44PublicKey, 24 * 1024),
    "65": (pyca_mldsa.MLDSA65PublicKey, 32 * 1024),
    "87": (pyca_mldsa.MLDSA87PublicKey, 44 * 1024),
}


def _ml_dsa(level: str) -> KeyType:
    def generate(params: dict[str, Any]) -> Pair:
        return mldsa.generate(level)

    def take(material: bytes, params: dict[str, Any]) -> Pair:
        return mldsa.take(level, material)

    public, memory = _ML_DSA_PUBLIC[level]
    return KeyType(
        f"ml-dsa-{level}",
        "sign",
        generate,
        take,
        load_public=public.from_public_bytes,
        export=partial(mldsa.export, level),
        prepare=partial(mldsa.signing_key, level),
        prepared_bytes=memory,
    )


KEY_TYPES: dict[str, KeyType] = {
    kt.name: kt
    for kt in (
        _ecies("secp256k1"),
        _ecies("x25519"),
        _ecies("ed25519"),
        KeyType("aez", "aez", _random(AEZ_KEY_BYTES), _sized(AEZ_KEY_BYTES, "aez", None)),
        _ecdsa_secp256k1(),
        _ed25519(),
        *(_ecdsa_nist(curve) for curve in ecdsa_nist.CURVES),
        *(_rsa(bits) for bits in rsa.SIZES),
        *(_ml_dsa(level) for level in mldsa.PUBLIC_BYTES),
        KeyType("hmac", "hmac", _random(HMAC_KEY_BYTES), _hmac_take),
        *(_aead(algorithm) for algorithm in aead.KEY_BYTES),
        *(_hpke(kem) for kem in hpke.SECRET_BYTES),
        *(_fe(scheme) for scheme in SCHEMES.values()),
    )
}


def stored_key(type_name: str, secret: bytes) -> Any:
    """A stored version's secret as its library's key: read without the checks it passed when
    it was drawn or taken in (OpenSSL's check of an RSA-4096 key costs a quarter of a second)."""
    prepare = KEY_TYPES[type_name].prepare
    assert prepare is not None, f"{type_name} keys are used as their bytes"
    return prepare(secret)


def derivable(type_name: str) -> bool:
    """Whether keys of the type may be derived (Vault Transit's `derived`): the AEAD types, and
    Ed25519 signing keys."""
    return KEY_TYPES[type_name].family == "aead" or type_name == "ed25519"


def is_derived(type_name: str, params: dict[str, Any]) -> bool:
    """Whether a key is derived: set at creation, on a type that may be (a flag on another
    type, which older restores of Transit backups stored, means nothing)."""
    return bool(params.get("derived")) and derivable(type_name)
