"""Properties of `core.sign` over generated input: every form round-trips, any change to a
signature or its message fails to verify, and arbitrary bytes as a signature or public key give
False, never an exception."""

from hypothesis import given, settings
from hypothesis import strategies as st

from core.sign import ecdsa, ed25519

ECDSA_SECRET, ECDSA_PUBLIC = ecdsa.generate_keypair()
ED_SECRET, ED_PUBLIC = ed25519.generate_keypair()
FORMATS = st.sampled_from(ecdsa.FORMATS)
HASHES = st.sampled_from(ecdsa.HASHES)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), HASHES, FORMATS, st.data())
def test_ecdsa_round_trip_and_any_flipped_bit_fails(
    message: bytes, hash: ecdsa.Hash, form: ecdsa.Format, data: st.DataObject
) -> None:
    signature = ecdsa.sign(ECDSA_SECRET, message, hash, format=form)
    assert ecdsa.verify(ECDSA_PUBLIC, message, signature, hash, format=form)
    bit = data.draw(st.integers(0, len(signature) * 8 - 1))
    flipped = bytearray(signature)
    flipped[bit // 8] ^= 1 << (bit % 8)
    # A recovery id of 1 flipped to 0 (or back) names the other key: not ours either.
    assert not ecdsa.verify(ECDSA_PUBLIC, message, bytes(flipped), hash, format=form)
    assert not ecdsa.verify(ECDSA_PUBLIC, message + b"\0", signature, hash, format=form)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.data())
def test_ed25519_round_trip_and_any_flipped_bit_fails(message: bytes, data: st.DataObject) -> None:
    signature = ed25519.SigningKey(ED_SECRET).sign(message)
    assert ed25519.verify(ED_PUBLIC, message, signature)
    bit = data.draw(st.integers(0, 511))
    flipped = bytearray(signature)
    flipped[bit // 8] ^= 1 << (bit % 8)
    assert not ed25519.verify(ED_PUBLIC, message, bytes(flipped))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80), st.binary(max_size=80), st.binary(max_size=40), FORMATS)
def test_arbitrary_bytes_are_false_not_errors(
    public: bytes, signature: bytes, message: bytes, form: ecdsa.Format
) -> None:
    assert ecdsa.verify(public, message, signature, format=form) in (True, False)
    assert ecdsa.verify(ECDSA_PUBLIC, message, signature, format=form) is False
    assert ed25519.verify(public, message, signature) in (True, False)
    assert ed25519.verify(ED_PUBLIC, message, signature) is False
