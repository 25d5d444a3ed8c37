"""Property tests for core.aez: round trips, lengths, tamper detection and agreement of the
kernels, on inputs drawn by hypothesis."""

from hypothesis import given, settings
from hypothesis import strategies as st

from core import aez
from core.aez import _aez

keys = st.binary(min_size=0, max_size=80) | st.binary(min_size=48, max_size=48)
nonces = st.none() | st.binary(max_size=40)
ads = st.none() | st.lists(st.binary(max_size=40), max_size=6)
taus = st.sampled_from([0, 1, 4, 16, 32, aez.MAX_TAU]) | st.integers(0, aez.MAX_TAU)
messages = st.binary(max_size=600) | st.binary(min_size=1000, max_size=5000)


@settings(max_examples=300, deadline=None)
@given(keys, nonces, ads, taus, messages)
def test_round_trip(
    key: bytes, nonce: bytes | None, ad: list[bytes] | None, tau: int, message: bytes
) -> None:
    ciphertext = aez.encrypt(key, nonce, ad, tau, message)
    assert len(ciphertext) == len(message) + tau
    assert aez.decrypt(key, nonce, ad, tau, ciphertext) == message


@settings(max_examples=200, deadline=None)
@given(keys, nonces, ads, st.integers(8, aez.MAX_TAU), messages, st.data())
def test_any_bit_flip_is_rejected(
    key: bytes,
    nonce: bytes | None,
    ad: list[bytes] | None,
    tau: int,
    message: bytes,
    data: st.DataObject,
) -> None:
    # tau >= 8: a forgery then succeeds with probability at most 2^-64.
    ciphertext = bytearray(aez.encrypt(key, nonce, ad, tau, message))
    position = data.draw(st.integers(0, len(ciphertext) - 1))
    ciphertext[position] ^= 1 << data.draw(st.integers(0, 7))
    assert aez.decrypt(key, nonce, ad, tau, bytes(ciphertext)) is None


@settings(max_examples=200, deadline=None)
@given(keys, nonces, ads, taus, messages)
def test_kernels_agree(
    key: bytes, nonce: bytes | None, ad: list[bytes] | None, tau: int, message: bytes
) -> None:
    results = set()
    try:
        for name in _aez.backends():
            _aez.set_backend(name)
            results.add(aez.encrypt(key, nonce, ad, tau, message))
    finally:
        _aez.set_backend("auto")
    assert len(results) == 1
