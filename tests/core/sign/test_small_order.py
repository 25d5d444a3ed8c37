"""Ed25519 verification refuses public keys A and signature halves R of small order, in every
encoding, as libsodium does: the 8 × 8 torsion signatures (S = 0) and their non-canonical
encodings give False for any message, and libsodium agrees case by case; Wycheproof's vectors
give libsodium's verdicts too."""

import nacl.bindings
import nacl.exceptions
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from core.sign import ed25519
from tests.core.sign.small_order import CANONICAL, FORGERIES, IDENTITY_FORGERY, Forgery
from tests.core.sign.wycheproof import ED25519, Case

MESSAGES = [b"", b"transfer everything to mallory", bytes(range(256))]


def libsodium_verifies(public: bytes, message: bytes, signature: bytes) -> bool:
    try:
        nacl.bindings.crypto_sign_open(signature + message, public)
    except nacl.exceptions.BadSignatureError:
        return False
    return True


def openssl_verifies(public: bytes, message: bytes, signature: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def test_the_identity_forgery_is_real_without_the_checks() -> None:
    """What the checks are for: OpenSSL's verification alone, cofactorless, accepts A = R = the
    identity with S = 0 for any message (and other torsion cases for some messages)."""
    forgery = IDENTITY_FORGERY
    assert all(openssl_verifies(forgery.public_key, m, forgery.signature) for m in MESSAGES)
    accepted = sum(openssl_verifies(f.public_key, b"", f.signature) for f in FORGERIES)
    assert accepted > 1


def test_there_are_8_by_8_canonical_cases_and_132_more() -> None:
    assert len(CANONICAL) == 8 and len(FORGERIES) == 14 * 14


@pytest.mark.parametrize("forgery", FORGERIES, ids=[f.id for f in FORGERIES])
def test_small_order_a_or_r_never_verifies(forgery: Forgery) -> None:
    for message in MESSAGES:
        assert ed25519.verify(forgery.public_key, message, forgery.signature) is False
        assert libsodium_verifies(forgery.public_key, message, forgery.signature) is False


def test_a_real_signature_with_a_small_order_r_spliced_in_fails() -> None:
    secret, public = ed25519.generate_keypair()
    signature = ed25519.SigningKey(secret).sign(b"m")
    assert ed25519.verify(public, b"m", signature)
    for r in CANONICAL:
        assert not ed25519.verify(public, b"m", r + signature[32:])


@pytest.mark.parametrize("case", ED25519, ids=[c.id for c in ED25519])
def test_wycheproof_gives_libsodiums_verdicts(case: Case) -> None:
    assert libsodium_verifies(case.public_key, case.message, case.signature) is case.valid
