"""Transit's data verbs (encrypt, decrypt, rewrap, datakey, hmac, hash, random; sign and verify
in `signing`) in Vault's vocabulary, each one item's translation onto the verb of the key's
family.

An item is Vault's: base64 fields (`plaintext`, `context`, `associated_data`, `input`), a
`key_version`, a `reference` echoed back; its answer is Vault's (`vault:v<N>:` and the base64
of the payload, signature or MAC). A single call is a batch of one: `run_items` runs an item
function over a request's items, giving each failed item its error, and
`app.ops.transit.batches` writes each verb's `batch_results` entries as Vault does.
"""

import base64
import binascii
import hashlib
import hmac
import os
import re
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from pydantic import StrictInt

from app.ops.aead import AeadKey
from app.ops.errors import Problem, problem_for
from app.ops.hpke import HpkeKey
from app.ops.keyring import Keyring
from app.ops.keytypes import KEY_TYPES, is_derived
from app.ops.mac import digest
from app.ops.rsa import RsaKey
from app.ops.sealing import SealingKey
from app.ops.sign import MISSING_CONTEXT, SigningKey
from app.ops.transit import hmac_keys
from app.ops.transit.types import is_transit
from app.ops.vault_fields import VaultBody
from app.ops.versioned import VersionedKey
from app.store import KeyNotFoundError, VersionNotFoundError

PREFIX = "vault:v"
_PREFIXED = re.compile(r"vault:v([^:]*):(.*)", re.DOTALL)
# A signature's text: standard base64, or base64url without padding (JWS marshaling).
_BASE64_TEXT = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_JWS_TEXT = re.compile(r"(?:[A-Za-z0-9_-]{4})*(?:[A-Za-z0-9_-]{2,3})?")
# The most digits of a `vault:v<N>:` version read as a number: a longer one names no version.
_VERSION_DIGITS = 10
# Transit's refusals of a version below min_decryption_version (v0 among them, but for a
# ciphertext, whose v0 is v1 as in Vault's first releases).
_TOO_OLD = {
    "signature": "ciphertext or signature version is disallowed by policy (too old)",
    "hmac": "cannot verify HMAC: version is too old (disallowed by policy)",
}
# Transit's hash names -> hashlib's.
HASHES = {
    "sha1": "sha1",  # HMACs and signatures only, as in Vault
    "sha2-224": "sha224",
    "sha2-256": "sha256",
    "sha2-384": "sha384",
    "sha2-512": "sha512",
    "sha3-224": "sha3_224",
    "sha3-256": "sha3_256",
    "sha3-384": "sha3_384",
    "sha3-512": "sha3_512",
}
MAX_RANDOM_BYTES = 128 * 1024
DATAKEY_BITS = (128, 256, 512)


class TransitItem(VaultBody):
    """One item of any Transit data verb, as its body or a `batch_input` entry gives it."""

    # Vault reads a `batch_input` entry strictly (a `key_version` of "2" is refused) and the
    # body's own fields weakly (`TransitDataRequest`).

    plaintext: str | None = None
    ciphertext: str | None = None
    input: str | None = None
    hmac: str | None = None
    signature: str | None = None
    context: str | None = None
    associated_data: str | None = None
    key_version: StrictInt | None = None
    reference: str | None = None


def named_versions(item: TransitItem) -> list[int]:
    """The versions an item names: its `key_version`, and the `vault:v<N>:` of the ciphertext,
    HMAC or signature it opens (0 and 1 alike name the first)."""
    named = [item.key_version] if item.key_version else []
    for text in (item.ciphertext, item.hmac, item.signature):
        match = _PREFIXED.match(text) if text else None
        version = version_number(match.group(1)) if match is not None else None
        if version is not None:
            named.append(version)
    return named


def version_number(text: str) -> int | None:
    """The version `vault:v<N>:` names (0 names the first), None when `N` is not a number of
    at most `_VERSION_DIGITS` ASCII digits: int() would refuse thousands of digits or read
    other scripts' digits, where Vault's parser refuses them all."""
    if not (text.isascii() and text.isdigit() and len(text) <= _VERSION_DIGITS):
        return None
    return int(text) or 1


def user_error(detail: str) -> Problem:
    """Transit's answer to bad input: 400 with its message."""
    return Problem(400, "invalid-request", "Invalid request", detail)


def _without_breaks(text: str) -> str:
    """`text` without its line breaks, as Go's base64 decoders skip them (`base64` wraps its
    output at 76 columns, a file read with `@` ends in one)."""
    return text.replace("\r", "").replace("\n", "")


def _base64(text: str) -> bytes:
    """Standard base64 as Go decodes it, line breaks skipped; anything else not base64 raises
    binascii.Error (or ValueError)."""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        if "\n" not in text and "\r" not in text:
            raise
    return base64.b64decode(_without_breaks(text), validate=True)


def decoded(value: str | None, field: str) -> bytes:
    """A base64 field (empty for absent)."""
    if not value:
        return b""
    try:
        return _base64(value)
    except (binascii.Error, ValueError):
        raise user_error(f"failed to base64-decode {field}") from None


def prefixed(version: int, data: bytes, urlsafe: bool = False) -> str:
    encoded = base64.urlsafe_b64encode(data).rstrip(b"=") if urlsafe else base64.b64encode(data)
    return f"{PREFIX}{version}:{encoded.decode()}"


def unprefixed(text: str | None, what: str, latest: int, jws: bool = False) -> tuple[int, bytes]:
    """The version and bytes of `vault:v<N>:<base64>` (Transit's messages for the ways it can
    be wrong)."""
    if not text:
        raise user_error(
            f"missing {what} to decrypt" if what == "ciphertext" else f"missing {what}"
        )
    shown = "HMAC" if what == "hmac" else what
    if not text.startswith(PREFIX):
        raise user_error(f"invalid {'HMAC to verify' if what == 'hmac' else what}: no prefix")
    match = _PREFIXED.fullmatch(text)
    if match is None:
        raise user_error(f"invalid {shown}: wrong number of fields")
    version = version_number(match.group(1))
    if version is None:
        raise user_error(f"invalid {shown}: version number could not be decoded")
    if version > latest:
        raise user_error(f"invalid {shown}: version is too new")
    if what != "ciphertext" and int(match.group(1)) == 0:  # only a ciphertext's v0 is v1
        raise user_error(_TOO_OLD[what])
    body = match.group(2)
    if what == "signature":
        return version, _signature_bytes(body, jws)
    try:
        data = _base64(body)
    except (binascii.Error, ValueError):
        raise user_error(f"invalid {what}: could not decode base64") from None
    return version, data


def _signature_bytes(body: str, jws: bool) -> bytes:
    """A signature's bytes as Vault reads them: standard base64, or unpadded base64url under
    JWS marshaling; other text is refused rather than read as an invalid signature."""
    body = _without_breaks(body)
    if not (_JWS_TEXT if jws else _BASE64_TEXT).fullmatch(body):
        raise user_error("invalid base64 signature value")
    if jws:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    return base64.b64decode(body)


@dataclass(frozen=True)
class Params:
    """What an AEAD encryption binds beside its key (`app.ops.aead.Params`)."""

    associated_data: bytes
    context: bytes | None


def context_of(key: VersionedKey, item: TransitItem) -> bytes | None:
    """The item's context for a derived key (400 without one); for another key none: Transit
    ignores a context it does not take."""
    if not is_derived(key.latest.type, key.latest.params):
        return None
    context = decoded(item.context, "context")
    if not context:
        raise user_error(MISSING_CONTEXT)
    return context


def _params(key: VersionedKey, item: TransitItem) -> Params:
    """The item's associated data and context (a context the key ignores must still be
    base64, as Transit decodes every item's before it looks at the key)."""
    decoded(item.context, "context")
    return Params(decoded(item.associated_data, "associated_data"), context_of(key, item))


def _aead(key: VersionedKey, verb: str) -> AeadKey:
    if not isinstance(key, AeadKey):
        raise user_error(f"{verb} not supported for key type {key.latest.type}")
    return key


@dataclass(frozen=True)
class HpkeParams:
    """What an HPKE encryption binds through Transit: `context` as RFC 9180's info,
    `associated_data` as its aad (`app.ops.hpke.Params`)."""

    info: bytes
    aad: bytes


def _sealing(key: VersionedKey, item: TransitItem, verb: str) -> tuple[SealingKey[Any], Any]:
    """The key that encrypts and decrypts the item (AEAD, RSA-OAEP as Transit's RSA keys do,
    or HPKE) and what it binds beside the key."""
    if isinstance(key, RsaKey):
        if item.associated_data:  # OAEP binds none: refused rather than silently left out
            raise user_error(
                f"associated_data provided for non-AEAD cipher suite {key.latest.type}"
            )
        return key, None
    if isinstance(key, HpkeKey):
        info = decoded(item.context, "context")
        return key, HpkeParams(info, decoded(item.associated_data, "associated_data"))
    aead = _aead(key, verb)
    return aead, _params(aead, item)


def made_with(key: VersionedKey, item: TransitItem) -> int | None:
    """The version an item names to encrypt, sign or MAC with (None: the latest). One below the
    key's min_decryption_version is refused, as Vault does: what it made would not decrypt or
    verify."""
    version = item.key_version or None
    floor = key.latest.min_decryption_version
    if version is not None and version < floor:
        raise user_error(
            f"key version {version} is below the key's min_decryption_version ({floor})"
        )
    return version


def encrypt(key: VersionedKey, item: TransitItem) -> dict[str, Any]:
    sealer, params = _sealing(key, item, "message encryption")
    if item.plaintext is None:  # an empty one is encrypted
        raise user_error("missing plaintext to encrypt")
    plaintext = decoded(item.plaintext, "plaintext")
    sealed = sealer.encrypt(plaintext, params, envelope=False, version=made_with(key, item))
    return {"ciphertext": prefixed(sealed.version, sealed.data), "key_version": sealed.version}


def decrypt(key: VersionedKey, item: TransitItem) -> dict[str, Any]:
    sealer, params = _sealing(key, item, "message decryption")
    version, payload = unprefixed(item.ciphertext, "ciphertext", sealer.latest.version)
    opened = sealer.decrypt(payload, params, version)
    return {"plaintext": base64.b64encode(opened.data).decode()}


def rewrap(key: VersionedKey, item: TransitItem) -> dict[str, Any]:
    sealer, params = _sealing(key, item, "message encryption")
    version, payload = unprefixed(item.ciphertext, "ciphertext", sealer.latest.version)
    plaintext = sealer.decrypt(payload, params, version).data
    sealed = sealer.encrypt(plaintext, params, envelope=False, version=made_with(key, item))
    return {"ciphertext": prefixed(sealed.version, sealed.data), "key_version": sealed.version}


def datakey(
    key: VersionedKey, item: TransitItem, bits: int, with_plaintext: bool
) -> dict[str, Any]:
    sealer, params = _sealing(key, item, "message encryption")
    if bits not in DATAKEY_BITS:
        raise user_error(f"invalid bit length {bits}; one of 128, 256, 512")
    plain = os.urandom(bits // 8)
    sealed = sealer.encrypt(plain, params, envelope=False, version=made_with(key, item))
    data = {"ciphertext": prefixed(sealed.version, sealed.data), "key_version": sealed.version}
    if with_plaintext:
        data["plaintext"] = base64.b64encode(plain).decode()
    return data


class TransitKey(VersionedKey):
    """Any key Transit may use, for what Transit does with every type: HMAC."""

    types = frozenset(name for name in KEY_TYPES if is_transit(name))
    used_for = "Transit"

    def hmac(self, message: bytes, algorithm: str, version: int | None) -> dict[str, Any]:
        material = self.encryption(version)
        mac = digest(hmac_keys.of(material), message, HASHES[algorithm])
        return {"hmac": prefixed(material.version, mac)}

    def verify_hmac(self, message: bytes, algorithm: str, mac_text: str | None) -> bool:
        version, mac = unprefixed(mac_text, "hmac", self.latest.version)
        material = self.opening(version)
        expected = digest(hmac_keys.of(material), message, HASHES[algorithm])
        return hmac.compare_digest(expected, mac)

    def opening(self, version: int) -> Any:
        """A version that may still decrypt and verify (400 below min_decryption_version)."""
        material = self.version(version)
        if version < material.min_decryption_version:
            raise user_error(_TOO_OLD["signature"])
        return material


def algorithm_of(name: str | None, default: str = "sha2-256") -> str:
    algorithm = name or default
    if algorithm not in HASHES:
        raise user_error(f"unsupported algorithm {algorithm}")
    return algorithm


def hmac_item(key: TransitKey, item: TransitItem, algorithm: str) -> dict[str, Any]:
    if item.input is None:  # an empty one is HMACed
        raise user_error("missing input for HMAC")
    return key.hmac(decoded(item.input, "input"), algorithm, made_with(key, item))


def run_items(
    items: Sequence[TransitItem], run: Callable[[TransitItem], dict[str, Any]]
) -> tuple[list[dict[str, Any]], bool]:
    """Each item's answer or `{"error": ...}`; and whether any failed."""
    results: list[dict[str, Any]] = []
    failed = False
    for item in items:
        try:
            result = run(item)
        except Exception as exc:
            problem = problem_for(exc)
            if problem is None:
                raise
            result, failed = {"error": problem.detail}, True
        results.append(result)
    return results, failed


def hash_sum(data: bytes, algorithm: str, output: str) -> str:
    if algorithm == "sha1":
        raise user_error("unsupported algorithm sha1")
    if output not in ("hex", "base64"):
        raise user_error(f'unsupported encoding format {output}; must be "hex" or "base64"')
    value = hashlib.new(HASHES[algorithm], data).digest()
    return value.hex() if output == "hex" else base64.b64encode(value).decode()


def random_bytes(count: int, output: str) -> str:
    if output not in ("hex", "base64"):
        raise user_error(f'unsupported encoding format {output}; must be "hex" or "base64"')
    if not 1 <= count <= MAX_RANDOM_BYTES:
        raise user_error(f"the number of bytes is from 1 to {MAX_RANDOM_BYTES}")
    value = os.urandom(count)
    return value.hex() if output == "hex" else base64.b64encode(value).decode()


class TransitKeys:
    """The key objects Transit's verbs run on, by the key's family."""

    def __init__(self, keyring: Keyring, trial_versions: int) -> None:
        self.keyring = keyring
        self.trial_versions = trial_versions

    async def warm(self, key: VersionedKey, item: TransitItem) -> None:
        """Bring into the cache the versions a single item names, so that running it on the
        event loop reads no store; one the store does not have is the item's to report."""
        for version in named_versions(item):
            if 0 < version < key.latest.version:
                with suppress(VersionNotFoundError):
                    await self.keyring.fetch(key.name, version)

    async def found(self, name: str, sealing: bool = False) -> VersionedKey | None:
        """The key as `key` gives it, or None where there is none (one in the cache is found
        without asking the store)."""
        try:
            return await self.key(name, sealing=sealing)
        except KeyNotFoundError:
            return None

    async def key(
        self,
        name: str,
        any_type: bool = False,
        sealing: bool = False,
        missing: str | None = None,
    ) -> VersionedKey:
        """The key as its family's verbs take it; `any_type`: as Transit's own (HMAC);
        `sealing`: an RSA key as the one that encrypts (Transit's RSA keys encrypt and sign),
        an HPKE key as HPKE's. A key that does not exist is Vault's 400 with the words
        `missing`, if given (else KeyNotFoundError)."""
        try:
            latest = await self.keyring.fetch(name)
        except KeyNotFoundError:
            if missing is None:
                raise
            raise user_error(missing) from None
        if any_type:
            return TransitKey(self.keyring, latest, self.trial_versions)
        if sealing and latest.type in RsaKey.types:
            return RsaKey(self.keyring, latest, self.trial_versions)
        if sealing and latest.type in HpkeKey.types:
            return HpkeKey(self.keyring, latest, self.trial_versions)
        kind = KEY_TYPES[latest.type].family if latest.type in KEY_TYPES else ""
        if kind == "aead":
            return AeadKey(self.keyring, latest, self.trial_versions)
        if kind == "sign":
            return SigningKey(self.keyring, latest, self.trial_versions)
        return TransitKey(self.keyring, latest, self.trial_versions)
