"""Transit's signatures (`sign/:name`, `verify/:name`) in Vault's vocabulary: its fields as the
native signing options (`hash_algorithm`, `prehashed`, `signature_algorithm`,
`marshaling_algorithm`, `salt_length`, read for every key type as Vault reads them), and an
item's signature or verdict; a verification of HMACs goes by `TransitKey.verify_hmac`."""

import base64
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from app.ops.sign import GivenOptions, SigningKey, for_context
from app.ops.transit.crypto import (
    HASHES,
    TransitItem,
    TransitKey,
    algorithm_of,
    context_of,
    decoded,
    made_with,
    prefixed,
    unprefixed,
    user_error,
)
from app.ops.versioned import VersionedKey
from core.sign import rsa
from core.sign.digests import NO_HASH


def signing_hash_of(name: str | None) -> str:
    """A signature's `hash_algorithm`: a hash, or "none" (prehashed bytes signed as given)."""
    return NO_HASH if name == NO_HASH else algorithm_of(name)


@dataclass(frozen=True)
class SignOptions(GivenOptions):
    """Transit's signing fields as the native signing options, with RSA-PSS's salt length."""

    # RSA-PSS's salt length: Transit's "auto" (the longest to sign, any to verify) by default.
    salt: Any = "auto"
    # `marshaling_algorithm=jws`, for every key type: the signature in unpadded base64url.
    jws: bool = False


# Transit's marshaling algorithms -> the native signature formats.
_FORMATS = {"asn1": "der", "jws": "compact"}
_GO_INT = re.compile(r"[+-]?[0-9]{1,18}")


def salt_length_of(given: str | int | None) -> str | int:
    """Transit's `salt_length` as Go's RSA reads it, for every key type as Transit reads it:
    "auto" (or 0), "hash" (or -1) in any case, or a number of bytes."""
    text = "auto" if given is None else str(given).lower()
    if text in ("auto", "hash"):
        return text
    if not _GO_INT.fullmatch(text):
        raise user_error(f"salt length neither 'auto', 'hash', nor an int: {given}")
    number = int(text)
    if number < -1:
        raise user_error(f"salt length is invalid: {number}")
    return {0: "auto", -1: "hash"}.get(number, number)


def _salt(salt_length: str | int, hash_algorithm: str) -> rsa.Salt:
    """A salt length as the native one: "auto", "digest" for the hash's length, or a number of
    bytes (which the key's size bounds when it signs)."""
    if salt_length == "auto":
        return "auto"
    if salt_length in ("hash", hashlib.new(HASHES[hash_algorithm]).digest_size):
        return "digest"
    assert isinstance(salt_length, int)  # `salt_length_of` leaves no other text
    return salt_length


def sign_options(
    key_type: str,
    hash_algorithm: str,
    prehashed: bool,
    marshaling: str,
    padding: str | None,
    salt_length: str | int | None = None,
) -> SignOptions:
    """The native options of a Transit signature: Ed25519 and ML-DSA take none of Transit's
    fields (Transit ignores them for Ed25519); ECDSA takes the hash, prehashing and the
    marshaling; RSA the hash, prehashing, PSS or PKCS#1 v1.5 (`signature_algorithm`) and PSS's
    salt length."""
    marshaling = marshaling.lower()  # Vault reads it in any case
    if marshaling not in _FORMATS:
        raise user_error(f"invalid marshaling type {marshaling!r}")
    jws = marshaling == "jws"
    salt_length = salt_length_of(salt_length)
    if key_type == "ed25519" or key_type.startswith("ml-dsa"):
        return SignOptions(jws=jws)
    unhashed = hash_algorithm == NO_HASH
    if unhashed and (not prehashed or padding != "pkcs1v15"):  # for ECDSA too, as in Transit
        raise user_error(
            "hash_algorithm=none requires both prehashed=true and signature_algorithm=pkcs1v15"
        )
    chosen = NO_HASH if unhashed else HASHES[hash_algorithm]
    if key_type.startswith("rsa-"):
        if padding not in (None, "", "pss", "pkcs1v15"):
            raise user_error(f"unsupported rsa signature algorithm {padding}")
        salt = "auto" if unhashed else _salt(salt_length, hash_algorithm)
        padding = padding or "pss"
        return SignOptions(hash=chosen, prehashed=prehashed, padding=padding, salt=salt, jws=jws)
    # A prehashed ECDSA input is signed as given, of any length and whatever hash is named, as
    # Vault signs it.
    signed = NO_HASH if prehashed else chosen
    return SignOptions(hash=signed, prehashed=prehashed, format=_FORMATS[marshaling], jws=jws)


def as_signer(key: VersionedKey) -> SigningKey:
    """The key as a signer (400 for a key that cannot sign, a batch's whole answer too)."""
    if not isinstance(key, SigningKey):
        raise user_error(f"message signing not supported for key type {key.latest.type}")
    return key


def _message(item: TransitItem) -> bytes:
    """What is signed or verified: an entry without `input` is refused (the router gives a
    single call's missing one as empty, as Transit does)."""
    if item.input is None:
        raise user_error("missing input")
    return decoded(item.input, "input")


def sign_item(signer: SigningKey, item: TransitItem, options: SignOptions) -> dict[str, Any]:
    """One entry's signature, by a key the request checked can sign (`as_signer`)."""
    message = _message(item)
    version = made_with(signer, item)
    context = context_of(signer, item)
    sealed = signer.sign(message, options, False, version, options.salt, context)
    signed = {
        "signature": prefixed(sealed.version, sealed.data, urlsafe=options.jws),
        "key_version": sealed.version,
    }
    if context is not None:  # as Transit: the public key the context derives
        material = for_context(signer.encryption(sealed.version), context)
        signed["public_key"] = base64.b64encode(material.public or b"").decode()
    return signed


def verify_item(
    key: VersionedKey, item: TransitItem, algorithm: str, options: SignOptions
) -> dict[str, Any]:
    """`verify/:name`: a signature, or with `hmac` an HMAC (any key type)."""
    message = _message(item)
    if item.hmac is not None:
        if not isinstance(key, TransitKey):
            raise user_error("hmac verification needs the key as Transit's")
        return {"valid": key.verify_hmac(message, algorithm, item.hmac)}
    signer = as_signer(key)
    latest = signer.latest.version
    version, signature = unprefixed(item.signature, "signature", latest, options.jws)
    if signer.latest.type.startswith("ecdsa-p") and not options.jws and not _der(signature):
        raise user_error("supplied signature is invalid")  # as Vault: not a verdict
    valid = signer.verify(message, signature, options, version, options.salt, context_of(key, item))
    return {"valid": valid}


def _der(signature: bytes) -> bool:
    """Whether an ECDSA signature is DER, as Vault parses it before verifying."""
    try:
        decode_dss_signature(signature)
    except ValueError:
        return False
    return True


def verifies_hmacs(batch: Sequence[TransitItem] | None, single: TransitItem) -> bool:
    """Whether a verification is of HMACs, not signatures (its `batch`, or the `single` item
    of a call without one): an entry with a `signature` is one of a signature; entries that mix
    the two or give neither are refused, as Transit refuses them."""
    items = [single] if batch is None else batch
    signatures = any(item.signature is not None for item in items)
    hmacs = any(item.signature is None and item.hmac is not None for item in items)
    missing = any(item.signature is None and item.hmac is None for item in items)
    if missing and batch is None:
        raise user_error("neither a 'signature' nor an 'hmac' were given to verify")
    if signatures and hmacs:
        raise user_error(
            "elements of batch_input must all provide 'signature' or all provide 'hmac'"
        )
    if missing:
        given = "signature" if signatures else "hmac" if hmacs else None
        raise user_error(
            f"some elements of batch_input are missing '{given}'"
            if given
            else "no batch_input elements have 'signature' or 'hmac'"
        )
    return hmacs
