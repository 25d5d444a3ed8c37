"""JSON Web Tokens signed by the service's signing keys, and the key set their verifiers read.

A token is a compact JWS (RFC 7515) of the caller's claims: its header is the caller's, with
`alg` the key's (RFC 7518's ES256, ES384, ES512, PS256 to PS512 or RS256 to RS512; EdDSA of RFC
8037, ES256K of RFC 8812, RFC 9964's ML-DSA-44, -65, -87) and `kid` the version that signed
(`<name>:v<N>`), which the caller may repeat but not change. ECDSA signatures are r ‖ s, as JWS
has them.

The key set (RFC 7517) holds one JWK per live version, the newest first: the stored versions
that still verify (from `min_decryption_version` up), at most `MAX_JWKS_KEYS`, so that a
verifier finds the `kid` of any token the key's current versions signed.
"""

import json
from typing import Any

from app.ops import jwk
from app.ops.errors import invalid_input, wrong_key_type
from app.ops.keyring import Keyring
from app.ops.keytypes import KEY_TYPES
from app.ops.sign import Settled, SigningKey, sign_settled, underived
from app.ops.versioned import enabled

# The most versions one key set lists (the newest): a key with more live versions retires the
# older ones with min_decryption_version.
MAX_JWKS_KEYS = 100
# How each algorithm signs, in the terms of /v1/sign's options.
SETTLED = {
    "ES256": Settled(hash="sha256", format="compact"),
    "ES384": Settled(hash="sha384", format="compact"),
    "ES512": Settled(hash="sha512", format="compact"),
    "ES256K": Settled(hash="sha256", format="compact"),
    "EdDSA": Settled(),
    **{f"PS{bits}": Settled(hash=f"sha{bits}", padding="pss") for bits in (256, 384, 512)},
    **{f"RS{bits}": Settled(hash=f"sha{bits}", padding="pkcs1v15") for bits in (256, 384, 512)},
    **{f"ML-DSA-{level}": Settled() for level in ("44", "65", "87")},
}
_FIXED = ("alg", "kid")
# Registered header members that would tell a verifier to read the token otherwise (`crit`,
# RFC 7797's unencoded `b64`), or to trust a key or certificate the header carries or points
# to (`jku`, `jwk`, `x5u`, `x5c`) rather than the key set; and JWE's, for a JWS.
_REFUSED = ("crit", "b64", "jku", "jwk", "x5u", "x5c", "x5t", "x5t#S256", "zip", "enc")
_TEXT = ("typ", "cty")


def _b64url_json(value: Any) -> str:
    encoded = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    return jwk.b64url(encoded)


def sign(
    key: SigningKey, claims: dict[str, Any], header: dict[str, Any] | None, alg: str | None
) -> tuple[str, int]:
    """A compact JWS of `claims` under the key's latest version, and that version: `alg` one
    the key's type signs with (its default when None), `header`'s fields added to the token's
    (422 for one that would change `alg` or `kid`)."""
    material = underived(key.latest)  # a verifier's JWKS names one public key a version
    algorithms = jwk.JWS_ALGORITHMS[material.type]
    chosen = alg or algorithms[0]
    if chosen not in algorithms:
        raise invalid_input(
            f"alg: a {material.type} key signs {', '.join(algorithms)}, not {chosen}"
        )
    fixed = {"alg": chosen, "kid": jwk.kid(material.name, material.version)}
    given = header or {}
    for name in _REFUSED:
        if name in given:
            raise invalid_input(
                f"header.{name}: not taken; the token is verified with the key set's keys, as "
                "its header's alg and kid name them"
            )
    for name in _TEXT:
        if name in given and not isinstance(given[name], str):
            raise invalid_input(f"header.{name}: a string")
    for name in _FIXED:
        if name in given and given[name] != fixed[name]:
            raise invalid_input(
                f"header.{name}: the token's {name} is {fixed[name]!r}, which the header may "
                "repeat but not change"
            )
    protected = {"typ": "JWT", **given, **fixed}
    signing_input = f"{_b64url_json(protected)}.{_b64url_json(claims)}"
    signature = sign_settled(material, signing_input.encode(), SETTLED[chosen])
    return f"{signing_input}.{jwk.b64url(signature)}", material.version


def jwks(keyring: Keyring, name: str) -> list[dict[str, str]]:
    """The JWK of every live version of a signing key, the newest first (409 for a key of
    another type)."""
    latest = keyring.material(name)
    if latest.type not in jwk.JWS_ALGORITHMS:
        raise wrong_key_type(name, latest.type, "signatures (a JSON Web Key Set)")
    underived(enabled(latest))
    info = keyring.store.keys.get(name)
    live = [v.version for v in info.versions if v.version >= latest.min_decryption_version]
    keys = []
    for version in sorted(live, reverse=True)[:MAX_JWKS_KEYS]:
        material = latest if version == latest.version else keyring.material(name, version)
        assert material.public is not None
        public = KEY_TYPES[material.type].public(material.public, "jwk")
        assert isinstance(public, dict)
        keys.append({**public, **jwk.members(name, version, material.type)})
    return keys
