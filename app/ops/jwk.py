"""Public keys as JSON Web Keys (RFC 7517): EC (RFC 7518, and secp256k1 as RFC 8812 names it),
RSA (RFC 7518), OKP for Ed25519 and X25519 (RFC 8037), AKP for ML-DSA (RFC 9964); and what a
key version adds to them: its `kid`, `<name>:v<N>`, and for a signing key `use` `sig` and the
JWS algorithm it signs with (none for RSA, which signs PS256 and RS256 alike).
"""

import base64
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec, ed25519, mldsa, rsa, x25519

# The JWK curve names of the curves pyca names by their SEC names.
_CURVES = {
    "secp256r1": "P-256",
    "secp384r1": "P-384",
    "secp521r1": "P-521",
    "secp256k1": "secp256k1",
}
_ML_DSA: tuple[tuple[Any, str], ...] = (
    (mldsa.MLDSA44PublicKey, "ML-DSA-44"),
    (mldsa.MLDSA65PublicKey, "ML-DSA-65"),
    (mldsa.MLDSA87PublicKey, "ML-DSA-87"),
)


def b64url(data: bytes) -> str:
    """Base64url without padding, as JOSE writes every binary member."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _uint(value: int, size: int | None = None) -> str:
    """A non-negative integer big-endian, in `size` bytes or the fewest that hold it."""
    return b64url(value.to_bytes(size or max(1, (value.bit_length() + 7) // 8)))


def jwk(key: Any) -> dict[str, str]:
    """The JWK members of a pyca public key (TypeError for a kind JOSE has no form for)."""
    if isinstance(key, ec.EllipticCurvePublicKey):
        point = key.public_numbers()
        size = (key.curve.key_size + 7) // 8
        return {
            "kty": "EC",
            "crv": _CURVES[key.curve.name],
            "x": _uint(point.x, size),
            "y": _uint(point.y, size),
        }
    if isinstance(key, rsa.RSAPublicKey):
        numbers = key.public_numbers()
        return {"kty": "RSA", "n": _uint(numbers.n), "e": _uint(numbers.e)}
    if isinstance(key, ed25519.Ed25519PublicKey):
        return {"kty": "OKP", "crv": "Ed25519", "x": b64url(key.public_bytes_raw())}
    if isinstance(key, x25519.X25519PublicKey):
        return {"kty": "OKP", "crv": "X25519", "x": b64url(key.public_bytes_raw())}
    for kind, alg in _ML_DSA:
        if isinstance(key, kind):
            return {"kty": "AKP", "alg": alg, "pub": b64url(key.public_bytes_raw())}
    raise TypeError(f"no JWK form for {type(key).__name__}")


# The JWS algorithms (RFC 7518, RFC 8037, RFC 8812, RFC 9964) each signing type signs with, the
# default first.
_RSA = ("PS256", "PS384", "PS512", "RS256", "RS384", "RS512")
JWS_ALGORITHMS: dict[str, tuple[str, ...]] = {
    "ecdsa-secp256k1": ("ES256K",),
    "ed25519": ("EdDSA",),
    "ecdsa-p256": ("ES256",),
    "ecdsa-p384": ("ES384",),
    "ecdsa-p521": ("ES512",),
    "rsa-2048": _RSA,
    "rsa-3072": _RSA,
    "rsa-4096": _RSA,
    "ml-dsa-44": ("ML-DSA-44",),
    "ml-dsa-65": ("ML-DSA-65",),
    "ml-dsa-87": ("ML-DSA-87",),
}


def kid(name: str, version: int) -> str:
    """The key id of a version, as JWTs and key sets name it."""
    return f"{name}:v{version}"


def members(name: str, version: int, key_type: str) -> dict[str, str]:
    """What a key version adds to its JWK: `kid`, and for a signing key `use` and, when it
    signs with one algorithm only, `alg`."""
    added = {"kid": kid(name, version)}
    algorithms = JWS_ALGORITHMS.get(key_type)
    if algorithms is not None:
        added["use"] = "sig"
        if len(algorithms) == 1:
            added["alg"] = algorithms[0]
    return added
