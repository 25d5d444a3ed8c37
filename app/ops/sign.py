"""Signatures with server-held keys (ecdsa-secp256k1, ed25519) and with a public key given in
the request.

A signature is answered bare, the bytes coincurve, eth-keys, PyNaCl or OpenSSL verify, unless
the caller asks for the envelope that names its key version (`app.ops.envelope`). Verification
uses the `key_version` given, else the envelope's, else any version a bare payload would be
tried against (from the latest down to `min_decryption_version`, at most
`CIPHERD_BARE_PAYLOAD_VERSIONS`): a signature by any of them is the key's. A malformed
signature or public key merely fails to verify; only a malformed request is a problem.
"""

from collections.abc import Callable
from functools import partial
from typing import Literal, Protocol

from app.ops import envelope
from app.ops.envelope import Sealed, sealed, warm
from app.ops.errors import invalid_input, wrong_key_type
from app.ops.keyring import Keyring
from app.ops.work import compute
from app.server.metrics import timed
from app.store import KeyMaterial
from core.sign import ecdsa, ed25519

SIGNING_TYPES = ("ecdsa-secp256k1", "ed25519")
SigningType = Literal["ecdsa-secp256k1", "ed25519"]
Hash = ecdsa.Hash
Format = ecdsa.Format


class Options(Protocol):
    """How ECDSA hashes and encodes; None: the default (SHA-256, not prehashed, DER). Ed25519
    takes none of them: it signs the message itself."""

    @property
    def hash(self) -> Hash | None: ...
    @property
    def prehashed(self) -> bool | None: ...
    @property
    def format(self) -> Format | None: ...


def _ed25519_options(options: Options) -> None:
    given = [f for f in ("hash", "prehashed", "format") if getattr(options, f) is not None]
    if given:
        raise invalid_input(
            f"{given[0]}: ed25519 signs the message itself (RFC 8032, pure); hash, prehashed "
            "and format are for ecdsa-secp256k1"
        )


def _sign(material: KeyMaterial, message: bytes, options: Options) -> bytes:
    with timed("sign", "sign"):
        if material.type == "ed25519":
            _ed25519_options(options)
            signing_key: ed25519.SigningKey = material.prepared  # the keyring's, from the seed
            return signing_key.sign(message)
        return ecdsa.sign(
            material.secret,
            message,
            options.hash or "sha256",
            bool(options.prehashed),
            options.format or "der",
        )


def _verify(
    key_type: str, public: bytes, message: bytes, signature: bytes, options: Options
) -> bool:
    with timed("sign", "verify"):
        if key_type == "ed25519":
            _ed25519_options(options)
            return ed25519.verify(public, message, signature)
        return ecdsa.verify(
            public,
            message,
            signature,
            options.hash or "sha256",
            bool(options.prehashed),
            options.format or "der",
        )


def _checked(material: KeyMaterial) -> KeyMaterial:
    if material.type not in SIGNING_TYPES:
        raise wrong_key_type(material.name, material.type, "signatures")
    return material


class Signer:
    """Signatures with the keys of one keyring; `trial_versions` bounds the versions a bare
    signature is checked against."""

    def __init__(self, keyring: Keyring, trial_versions: int) -> None:
        self.keyring = keyring
        self.trial_versions = trial_versions

    async def sign(self, name: str, message: bytes, options: Options, enveloped: bool) -> Sealed:
        material = _checked(await self.keyring.fetch(name))
        return await compute(len(message), _signed, material, message, options, enveloped)

    async def verify(
        self, name: str, message: bytes, signature: bytes, options: Options, version: int | None
    ) -> bool:
        await warm(self.keyring, name, signature, version, self.trial_versions)
        return await compute(len(message), self._verify, name, message, signature, options, version)

    def _verify(
        self, name: str, message: bytes, signature: bytes, options: Options, version: int | None
    ) -> bool:
        return envelope.verified(
            self.keyring,
            name,
            signature,
            version,
            self.trial_versions,
            _checked,
            lambda m, bare: _verify(m.type, m.public or b"", message, bare, options),
        )

    def signer(self, name: str) -> Callable[[bytes, Options, bool], Sealed]:
        """Signatures of many messages under the latest version, read once."""
        return partial(_signed, _checked(self.keyring.material(name)))

    def verifier(self, name: str) -> Callable[[bytes, bytes, Options, int | None], bool]:
        """Verification of many signatures, each under its version (or tried, when bare)."""
        _checked(self.keyring.material(name))
        return partial(self._verify, name)


def _signed(material: KeyMaterial, message: bytes, options: Options, enveloped: bool) -> Sealed:
    return sealed(material.version, _sign(material, message, options), enveloped)


async def verify_with(
    key_type: SigningType, public: bytes, message: bytes, signature: bytes, options: Options
) -> bool:
    """Verification against a public key given by the caller: no stored key."""
    return await compute(len(message), _verify, key_type, public, message, signature, options)
