"""Signatures with server-held keys and with a public key given in the request: ECDSA on
secp256k1 (with Ethereum's forms) and on P-256, P-384 and P-521, Ed25519, RSA (PSS or PKCS#1
v1.5) and ML-DSA (FIPS 204, pure, or on an externally computed mu).

Each signing type is a `Scheme`: the options it takes (with their defaults) and how it signs and
verifies. An option a type does not take is a 422 that names what it does take. The signature
is the bytes the type's peers verify (OpenSSL, pyca/cryptography, coincurve, eth-keys,
PyNaCl); the types that came with the envelope answer it in the envelope that names its key
version unless asked not to (`app.ops.envelope`), the first two (ecdsa-secp256k1, ed25519) bare
unless asked for it. Verification uses the `key_version` given, else the envelope's, else any
version a bare payload would be tried against (from the latest down to
`min_decryption_version`, at most `CIPHERD_BARE_PAYLOAD_VERSIONS`): a signature by any of them
is the key's. A malformed signature or public key merely fails to verify; only a malformed
request is a problem.

An Ed25519 key may be derived, as Vault Transit's: every signature and verification then names a
context, and the version signs with the key the context derives from it (`core.sign.ed25519`),
so that each context has its own public key and the key's own is none.
"""

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal, Protocol, cast

from app.ops.envelope import Sealed, sealed
from app.ops.errors import Problem, invalid_input
from app.ops.keytypes import is_derived
from app.ops.versioned import VersionedKey
from app.ops.work import compute
from app.server.metrics import timed
from app.store import KeyMaterial
from core.sign import digests, ecdsa, ecdsa_nist, ed25519, mldsa, rsa

Hash = Literal["sha256", "sha384", "sha512", "keccak256"]
Format = Literal["der", "compact", "recoverable"]
Padding = rsa.Padding
OPTIONS = ("hash", "prehashed", "format", "padding", "mu")


class Options(Protocol):
    """How a signature is made; None: the type's default (or, for an option the type does not
    take, not given)."""

    @property
    def hash(self) -> Hash | None: ...
    @property
    def prehashed(self) -> bool | None: ...
    @property
    def format(self) -> Format | None: ...
    @property
    def padding(self) -> Padding | None: ...
    @property
    def mu(self) -> bool | None: ...


@dataclass(frozen=True)
class GivenOptions:
    """`Options` as another API's signing fields give them (KMS's signing algorithm and message
    type, Transit's fields): None for each they do not set."""

    hash: Any = None
    prehashed: bool | None = None
    format: Any = None
    padding: Any = None
    mu: bool | None = None


@dataclass(frozen=True)
class Settled:
    """The options of one signature, each given or its type's default ("" where the type takes
    none)."""

    hash: str = ""
    prehashed: bool = False
    format: str = ""
    padding: str = ""
    mu: bool = False
    # RSA-PSS's salt length (`core.sign.rsa.Salt`): the native API's is the digest's.
    salt: rsa.Salt = "digest"


@dataclass(frozen=True)
class Scheme:
    """One signing type: the options it takes (the first of each tuple the default), how it
    signs with a prepared version, how it verifies with a verifying key, and that key for a
    stored version (from its secret: never the stored public part) or for the public key a
    caller gives (raw or SubjectPublicKeyInfo DER; None when it is no key of this type)."""

    name: str
    sign: Callable[[KeyMaterial, bytes, Settled], bytes]
    verify: Callable[[Any, bytes, bytes, Settled], bool]
    verifying_key: Callable[[KeyMaterial], Any]
    public_key: Callable[[bytes], Any]
    hashes: tuple[str, ...] = ()
    formats: tuple[str, ...] = ()
    paddings: tuple[str, ...] = ()
    prehashed: bool = False
    mu: bool = False
    # Whether a signature is in the envelope unless asked otherwise.
    enveloped: bool = True

    def settle(self, options: Options) -> Settled:
        """The options of a request, each checked against what this type takes (422)."""
        given = {name: getattr(options, name) for name in OPTIONS}
        takes: dict[str, tuple[str, ...] | bool] = {
            "hash": self.hashes,
            "format": self.formats,
            "padding": self.paddings,
            "prehashed": self.prehashed,
            "mu": self.mu,
        }
        for name, value in given.items():
            allowed = takes[name]
            if value is None or (isinstance(value, bool) and (allowed or not value)):
                continue
            if isinstance(allowed, tuple) and value in allowed:
                continue
            raise invalid_input(f"{name}: {self.name} {self._takes(name, allowed)}")
        return Settled(
            hash=given["hash"] or (self.hashes[0] if self.hashes else ""),
            prehashed=bool(given["prehashed"]),
            format=given["format"] or (self.formats[0] if self.formats else ""),
            padding=given["padding"] or (self.paddings[0] if self.paddings else ""),
            mu=bool(given["mu"]),
        )

    def _takes(self, name: str, allowed: tuple[str, ...] | bool) -> str:
        if isinstance(allowed, tuple) and allowed:
            return f"takes {', '.join(allowed)} (default {allowed[0]})"
        if allowed is True:
            return "takes true or false"
        taken = [o for o in OPTIONS if getattr(self, _FIELDS[o])]
        return f"takes no {name}" + (f"; it takes {', '.join(taken)}" if taken else "")


_FIELDS = {
    "hash": "hashes",
    "format": "formats",
    "padding": "paddings",
    "prehashed": "prehashed",
    "mu": "mu",
}


def _prepared_public(material: KeyMaterial) -> Any:
    return material.prepared.public_key()


def _secp256k1() -> Scheme:
    def sign(material: KeyMaterial, message: bytes, settled: Settled) -> bytes:
        hash, format = cast(ecdsa.Hash, settled.hash), cast(ecdsa.Format, settled.format)
        return ecdsa.sign(material.secret, message, hash, settled.prehashed, format)

    def verify(public: bytes, message: bytes, signature: bytes, settled: Settled) -> bool:
        hash, format = cast(ecdsa.Hash, settled.hash), cast(ecdsa.Format, settled.format)
        return ecdsa.verify(public, message, signature, hash, settled.prehashed, format)

    return Scheme(
        "ecdsa-secp256k1",
        sign,
        verify,
        lambda material: material.public,
        ecdsa.parse_public,
        hashes=("sha256", "keccak256"),
        formats=ecdsa.FORMATS,
        prehashed=True,
        enveloped=False,
    )


def _ed25519() -> Scheme:
    def sign(material: KeyMaterial, message: bytes, settled: Settled) -> bytes:
        signing_key: ed25519.SigningKey = material.prepared  # the keyring's, from the seed
        return signing_key.sign(message)

    def verify(public: bytes, message: bytes, signature: bytes, settled: Settled) -> bool:
        return ed25519.verify(public, message, signature)

    def verifying_key(material: KeyMaterial) -> bytes:
        signing_key: ed25519.SigningKey = material.prepared
        return signing_key.public

    return Scheme("ed25519", sign, verify, verifying_key, ed25519.parse_public, enveloped=False)


def _ecdsa_nist(curve: str) -> Scheme:
    def sign(material: KeyMaterial, message: bytes, settled: Settled) -> bytes:
        return ecdsa_nist.sign(
            material.prepared, message, settled.hash, settled.prehashed, settled.format
        )

    def verify(key: Any, message: bytes, signature: bytes, settled: Settled) -> bool:
        return ecdsa_nist.verify(
            key, message, signature, settled.hash, settled.prehashed, settled.format
        )

    default = ecdsa_nist.DEFAULT_HASH[curve]
    return Scheme(
        f"ecdsa-{curve}",
        sign,
        verify,
        _prepared_public,
        partial(ecdsa_nist.parse_public, curve),
        hashes=(default, *(h for h in digests.HASHES if h != default), digests.NO_HASH),
        formats=ecdsa_nist.FORMATS,
        prehashed=True,
    )


def _rsa(bits: int) -> Scheme:
    def sign(material: KeyMaterial, message: bytes, settled: Settled) -> bytes:
        return rsa.sign(
            material.prepared,
            message,
            settled.hash,
            settled.prehashed,
            settled.padding,
            settled.salt,
        )

    def verify(key: Any, message: bytes, signature: bytes, settled: Settled) -> bool:
        return rsa.verify(
            key, message, signature, settled.hash, settled.prehashed, settled.padding, settled.salt
        )

    return Scheme(
        f"rsa-{bits}",
        sign,
        verify,
        _prepared_public,
        partial(rsa.parse_public, bits),
        hashes=(*digests.HASHES, digests.NO_HASH),
        paddings=rsa.PADDINGS,
        prehashed=True,
    )


def _ml_dsa(level: str) -> Scheme:
    def sign(material: KeyMaterial, message: bytes, settled: Settled) -> bytes:
        return mldsa.sign(material.prepared, message, settled.mu)

    def verify(key: Any, message: bytes, signature: bytes, settled: Settled) -> bool:
        return mldsa.verify(key, message, signature, settled.mu)

    return Scheme(
        f"ml-dsa-{level}",
        sign,
        verify,
        _prepared_public,
        partial(mldsa.parse_public, level),
        mu=True,
    )


SCHEMES: dict[str, Scheme] = {
    scheme.name: scheme
    for scheme in (
        _secp256k1(),
        _ed25519(),
        *(_ecdsa_nist(curve) for curve in ecdsa_nist.CURVES),
        *(_rsa(bits) for bits in rsa.SIZES),
        *(_ml_dsa(level) for level in mldsa.PUBLIC_BYTES),
    )
}
SigningType = Literal[
    "ecdsa-secp256k1",
    "ed25519",
    "ecdsa-p256",
    "ecdsa-p384",
    "ecdsa-p521",
    "rsa-2048",
    "rsa-3072",
    "rsa-4096",
    "ml-dsa-44",
    "ml-dsa-65",
    "ml-dsa-87",
]


def sign_settled(material: KeyMaterial, message: bytes, settled: Settled) -> bytes:
    """A signature of `message` with one version, its options settled."""
    with timed("sign", "sign"):
        return SCHEMES[material.type].sign(material, message, settled)


def _verify(scheme: Scheme, key: Any, message: bytes, signature: bytes, settled: Settled) -> bool:
    with timed("sign", "verify"):
        return key is not None and scheme.verify(key, message, signature, settled)


MISSING_CONTEXT = (
    "missing 'context' for key derivation; the key was created using a derived key, which means "
    "additional, per-request information must be included in order to perform operations with "
    "the key"
)


def check_context(material: KeyMaterial, context: bytes | None) -> None:
    """A derived key takes a context in every call, any other none (422 each)."""
    if not is_derived(material.type, material.params):
        if context is not None:
            raise invalid_input(
                f"context: key {material.name!r} is not derived: it takes no context"
            )
    elif not context:
        raise invalid_input(MISSING_CONTEXT)


def for_context(material: KeyMaterial, context: bytes | None) -> KeyMaterial:
    """The version as it signs for `context`: a derived key's, the key the context derives;
    any other's, itself."""
    check_context(material, context)
    if not context:
        return material
    derived = ed25519.derive(material.prepared, material.secret, context)
    return replace(material, secret=b"", public=derived.public, prepared=derived)


def underived(material: KeyMaterial) -> KeyMaterial:
    """The version, unless its key is derived: then it has no public key of its own (409)."""
    if is_derived(material.type, material.params):
        raise Problem(
            409,
            "no-public-part",
            "No public part",
            f"key {material.name!r} is derived: each context has its own public key",
        )
    return material


class SigningKey(VersionedKey):
    """A signing key of a request, of any signing type."""

    types = frozenset(SCHEMES)
    used_for = "signatures"

    @property
    def scheme(self) -> Scheme:
        return SCHEMES[self.latest.type]

    def sign(
        self,
        message: bytes,
        options: Options,
        enveloped: bool | None,
        version: int | None = None,
        salt: rsa.Salt = "digest",
        context: bytes | None = None,
    ) -> Sealed:
        """A signature under `version` (default: the latest), in the envelope when asked (or by
        default for the type); `salt`: RSA-PSS's salt length; `context`: a derived key's."""
        material = self.latest if version is None else self.encryption(version)
        material = for_context(material, context)
        scheme = SCHEMES[material.type]
        settled = replace(scheme.settle(options), salt=salt)
        signature = sign_settled(material, message, settled)
        return sealed(
            material.version, signature, scheme.enveloped if enveloped is None else enveloped
        )

    def verify(
        self,
        message: bytes,
        signature: bytes,
        options: Options,
        version: int | None,
        salt: rsa.Salt = "digest",
        context: bytes | None = None,
    ) -> bool:
        scheme = self.scheme
        settled = replace(scheme.settle(options), salt=salt)
        check_context(self.latest, context)  # before any version is tried
        return self.verified(
            signature,
            version,
            lambda material, bare: _verify(
                scheme,
                scheme.verifying_key(for_context(material, context)),
                message,
                bare,
                settled,
            ),
        )


def _verify_given(
    key_type: str, public: bytes, message: bytes, signature: bytes, options: Options
) -> bool:
    scheme = SCHEMES[key_type]
    settled = scheme.settle(options)
    return _verify(scheme, scheme.public_key(public), message, signature, settled)


async def verify_with(
    key_type: SigningType, public: bytes, message: bytes, signature: bytes, options: Options
) -> bool:
    """Verification against a public key given by the caller: no stored key."""
    return await compute(len(message), _verify_given, key_type, public, message, signature, options)
