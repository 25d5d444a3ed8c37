"""Behaviour of core.aez beyond the vectors: authentication failures, parameter handling,
argument checking, long messages (where the kernels' bulk paths run), the key cache and
threads. Every test runs on each kernel this machine can run."""

import hashlib
import os
import threading
from collections.abc import Iterator

import pytest

from core import aez
from core.aez import _aez

KEY = bytes(range(48))
NONCE = b"nonce-0123456789"
AD = [b"header", b"", b"trailer"]
STRIDED = memoryview(bytearray(b"abcdefgh"))[::2]  # a buffer, but not one contiguous run


@pytest.fixture(params=_aez.backends(), autouse=True)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    _aez.set_backend(request.param)
    yield request.param
    _aez.set_backend("auto")


def flip(data: bytes, position: int) -> bytes:
    out = bytearray(data)
    out[position] ^= 1 << (position % 8)
    return bytes(out)


# Empty (AEZ-prf), AEZ-tiny (n < 32 with the tag), AEZ-core with and without a fragment, and
# one length past a 32-pair group of the VAES kernel.
TAMPER_LENGTHS = [0, 1, 2, 3, 15, 16, 17, 31, 32, 33, 47, 48, 100, 1100]


@pytest.mark.parametrize("length", TAMPER_LENGTHS)
def test_every_flipped_byte_is_rejected(length: int) -> None:
    message = os.urandom(length)
    ciphertext = aez.encrypt(KEY, NONCE, AD, 16, message)
    assert aez.decrypt(KEY, NONCE, AD, 16, ciphertext) == message
    for position in range(len(ciphertext)):
        assert aez.decrypt(KEY, NONCE, AD, 16, flip(ciphertext, position)) is None, position


@pytest.mark.parametrize("length", [0, 5, 40])
def test_truncated_or_extended_ciphertext_is_rejected(length: int) -> None:
    ciphertext = aez.encrypt(KEY, NONCE, AD, 16, os.urandom(length))
    assert aez.decrypt(KEY, NONCE, AD, 16, ciphertext[:-1]) is None
    assert aez.decrypt(KEY, NONCE, AD, 16, ciphertext[1:]) is None
    assert aez.decrypt(KEY, NONCE, AD, 16, ciphertext + b"\0") is None


@pytest.mark.parametrize("length", [0, 7, 64])
def test_wrong_parameters_are_rejected(length: int) -> None:
    message = os.urandom(length)
    ciphertext = aez.encrypt(KEY, NONCE, AD, 16, message)
    other_key = bytes(47) + b"\1"
    assert aez.decrypt(other_key, NONCE, AD, 16, ciphertext) is None
    assert aez.decrypt(KEY + b"\0", NONCE, AD, 16, ciphertext) is None
    assert aez.decrypt(KEY, NONCE[:-1], AD, 16, ciphertext) is None
    assert aez.decrypt(KEY, None, AD, 16, ciphertext) is None
    for ad in ([], None, AD[:2], [*AD, b""], [b"header", b"trailer"], [b"headertrailer"]):
        assert aez.decrypt(KEY, NONCE, ad, 16, ciphertext) is None, ad
    # tau is hashed into Δ: the same bytes under another tau do not verify (tau >= 8 keeps the
    # chance of a chance acceptance below 2^-64; with tau = 1 it would be 1/256).
    for tau in (8, 15, 17):
        assert aez.decrypt(KEY, NONCE, AD, tau, ciphertext) is None, tau


def test_empty_ad_vector_differs_from_one_empty_string() -> None:
    for message in (b"", b"x", bytes(40)):
        without = aez.encrypt(KEY, NONCE, [], 16, message)
        assert aez.encrypt(KEY, NONCE, None, 16, message) == without
        assert aez.encrypt(KEY, NONCE, [b""], 16, message) != without
        assert aez.encrypt(KEY, NONCE, [b"", b""], 16, message) != without
        assert aez.decrypt(KEY, NONCE, [b""], 16, without) is None


def test_null_nonce_is_the_empty_nonce() -> None:
    assert aez.encrypt(KEY, None, AD, 16, b"abc") == aez.encrypt(KEY, b"", AD, 16, b"abc")


@pytest.mark.parametrize("tau", [1, 16, 32, aez.MAX_TAU])
def test_ciphertext_shorter_than_tau_is_rejected(tau: int) -> None:
    for length in {0, 1, tau // 2, tau - 1} - {tau}:  # a 1-byte ciphertext is not short at tau 1
        assert aez.decrypt(KEY, NONCE, AD, tau, os.urandom(length)) is None


def test_tau_zero_authenticates_nothing() -> None:
    assert aez.encrypt(KEY, NONCE, AD, 0, b"") == b""
    assert aez.decrypt(KEY, NONCE, AD, 0, b"") == b""
    for length in (1, 20, 100):
        ciphertext = aez.encrypt(KEY, NONCE, AD, 0, bytes(length))
        assert len(ciphertext) == length
        forged = aez.decrypt(KEY, NONCE, AD, 0, flip(ciphertext, 0))
        assert forged is not None
        assert len(forged) == length
        assert forged != bytes(length)


def test_expansion_is_tau_bytes() -> None:
    for tau in (0, 1, 8, 16, 31, 32, 100, aez.MAX_TAU):
        for length in (0, 1, 31, 32, 200):
            message = os.urandom(length)
            ciphertext = aez.encrypt(KEY, NONCE, AD, tau, message)
            assert len(ciphertext) == length + tau
            assert aez.decrypt(KEY, NONCE, AD, tau, ciphertext) == message


def test_bytes_like_inputs() -> None:
    message = os.urandom(77)
    expected = aez.encrypt(KEY, NONCE, AD, 16, message)
    got = aez.encrypt(
        bytearray(KEY),
        memoryview(NONCE),
        tuple(bytearray(a) for a in AD),
        16,
        memoryview(message),
    )
    assert got == expected
    assert aez.decrypt(memoryview(KEY), bytearray(NONCE), AD, 16, bytearray(expected)) == message


# Pair counts around the 8-pair (AES-NI) and 32-pair (VAES) groups, with and without a
# fragment, and tau values that push the zero bytes into the pairs.
LONG_LENGTHS = sorted(
    {
        32 * pairs + 32 + fragment - 16
        for pairs in (7, 8, 9, 31, 32, 33, 64, 65, 257)
        for fragment in (0, 5, 16, 21)
    }
    | {4095, 4096, 100_000, (1 << 20) + 3}
)


@pytest.mark.parametrize("tau", [0, 16, aez.MAX_TAU])
def test_long_messages_agree_across_kernels(tau: int) -> None:
    for length in LONG_LENGTHS:
        message = os.urandom(length)
        ciphertexts = set()
        for name in _aez.backends():
            _aez.set_backend(name)
            ciphertext = aez.encrypt(KEY, NONCE, AD, tau, message)
            assert aez.decrypt(KEY, NONCE, AD, tau, ciphertext) == message
            ciphertexts.add(ciphertext)
        assert len(ciphertexts) == 1, length


def test_long_nonce_and_ad_agree_across_kernels() -> None:
    nonce, ad = os.urandom(1000), [os.urandom(n) for n in (0, 16, 17, 300, 4096)]
    results = set()
    for name in _aez.backends():
        _aez.set_backend(name)
        results.add(aez.encrypt(KEY, nonce, ad, 16, b"payload"))
    assert len(results) == 1


def test_key_extraction_and_cache() -> None:
    """Keys of any length other than 48 go through BLAKE2b-384; cached or not, and past the
    cache's capacity, the result is the same."""
    keys = [os.urandom(n) for n in (*range(0, 47), 49, 64, 127, 128, 129, 300)]
    expected = [
        aez.encrypt(hashlib.blake2b(k, digest_size=48).digest(), NONCE, AD, 16, b"m") for k in keys
    ]
    for _ in range(2):
        assert [_aez.extract(k) for k in keys] == [
            hashlib.blake2b(k, digest_size=48).digest() for k in keys
        ]
        assert [aez.encrypt(k, NONCE, AD, 16, b"m") for k in keys] == expected
    _aez.clear_key_cache()
    assert [aez.encrypt(k, NONCE, AD, 16, b"m") for k in keys] == expected
    assert _aez.extract(KEY) == KEY


def test_threads_share_nothing() -> None:
    """Long messages run without the GIL; concurrent calls must not disturb each other."""
    jobs = [(os.urandom(48), os.urandom(200_000 + n)) for n in range(8)]
    expected = [aez.encrypt(k, NONCE, AD, 16, m) for k, m in jobs]
    results: list[bytes | None] = [None] * len(jobs)

    def work(index: int) -> None:
        k, m = jobs[index]
        for _ in range(3):
            results[index] = aez.decrypt(k, NONCE, AD, 16, aez.encrypt(k, NONCE, AD, 16, m))
            assert aez.encrypt(k, NONCE, AD, 16, m) == expected[index]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [m for _, m in jobs]


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((KEY, NONCE, AD, True, b""), TypeError, "tau must be an int"),
        ((KEY, NONCE, AD, 16.0, b""), TypeError, "tau must be an int"),
        ((KEY, NONCE, AD, "16", b""), TypeError, "tau must be an int"),
        ((KEY, NONCE, AD, -1, b""), ValueError, "tau must be between 0 and 255"),
        ((KEY, NONCE, AD, 256, b""), ValueError, "tau must be between 0 and 255"),
        ((KEY, NONCE, AD, 1 << 70, b""), ValueError, "tau must be between 0 and 255"),
        (("key", NONCE, AD, 16, b""), TypeError, "key must be a C-contiguous bytes-like object"),
        ((None, NONCE, AD, 16, b""), TypeError, "key must be a C-contiguous bytes-like object"),
        (
            (KEY, "nonce", AD, 16, b""),
            TypeError,
            "nonce must be a C-contiguous bytes-like object or None",
        ),
        ((KEY, NONCE, b"ad", 16, b""), TypeError, "not a single string"),
        ((KEY, NONCE, "ad", 16, b""), TypeError, "not a single string"),
        ((KEY, NONCE, 5, 16, b""), TypeError, "ad must be a list or tuple"),
        # A set's order changes with the process's hash seed: the same call would not decrypt.
        ((KEY, NONCE, {b"a", b"b"}, 16, b""), TypeError, "ad must be a list or tuple"),
        ((KEY, NONCE, {b"a": 1}, 16, b""), TypeError, "ad must be a list or tuple"),
        ((KEY, NONCE, iter([b"a"]), 16, b""), TypeError, "ad must be a list or tuple"),
        ((KEY, NONCE, [STRIDED], 16, b""), TypeError, "must be a C-contiguous bytes-like"),
        ((KEY, NONCE, AD, 16, STRIDED), TypeError, "must be a C-contiguous bytes-like"),
        (
            (KEY, NONCE, [b"a", 1], 16, b""),
            TypeError,
            r"ad\[1\] must be a C-contiguous bytes-like object",
        ),
        (
            (KEY, NONCE, [b"a", "b"], 16, b""),
            TypeError,
            r"ad\[1\] must be a C-contiguous bytes-like object",
        ),
        ((KEY, NONCE, AD, 16, "text"), TypeError, "must be a C-contiguous bytes-like object"),
        ((KEY, NONCE, AD, 16, None), TypeError, "must be a C-contiguous bytes-like object"),
    ],
)
def test_bad_arguments_raise(args: tuple[object, ...], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        aez.encrypt(*args)  # type: ignore[arg-type]
    with pytest.raises(error, match=match):
        aez.decrypt(*args)  # type: ignore[arg-type]


def test_backend_selection() -> None:
    names = _aez.backends()
    assert "portable" in names
    for name in names:
        _aez.set_backend(name)
        assert _aez.backend() == name
        assert aez.is_hardware_accelerated() == (name != "portable")
    _aez.set_backend("auto")
    assert _aez.backend() == names[0]
    with pytest.raises(ValueError, match="unknown backend"):
        _aez.set_backend("fastest")
    with pytest.raises(TypeError):
        _aez.set_backend(1)  # type: ignore[arg-type]


def test_internal_functions_check_their_arguments() -> None:
    with pytest.raises(ValueError, match="i at most"):
        _aez.e(KEY, 0, 1 << 40, bytes(16))
    with pytest.raises(ValueError, match="16 bytes"):
        _aez.e(KEY, 0, 1, bytes(15))
    with pytest.raises(ValueError, match="j at least -1"):
        _aez.e(KEY, -2, 1, bytes(16))
    with pytest.raises(ValueError, match="delta must be 16 bytes"):
        _aez.prf(KEY, bytes(8), 16)
    with pytest.raises(TypeError, match="not a single string"):
        _aez.hash(KEY, 128, b"nonce")
    with pytest.raises(OverflowError, match="negative"):  # not wrapped to 2^64 - 1
        _aez.hash(KEY, -1, [b"nonce"])
