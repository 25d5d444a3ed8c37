"""AEZ v5 authenticated encryption (Hoang, Krovetz, Rogaway: "AEZ v5: Authenticated Encryption
by Enciphering", CAESAR submission, 2017), checked against the public AEZ v5 vectors.

AEZ enciphers ``plaintext || tau zero bytes`` as one wide block, so the ciphertext is exactly
``tau`` bytes longer than the plaintext, any change to it scrambles the whole message, and
decryption checks that the ``tau`` trailing bytes came back as zeros.

Parameters, as in the reference code and the npm package ``aez``:

* ``key``: any length. A 48-byte key is used as it is; any other length (the empty key too)
  is first hashed with unkeyed BLAKE2b-384. Extracted keys of recently used non-48-byte keys
  stay in a small wiped-on-eviction LRU table inside the kernel (``_aez.clear_key_cache()``
  empties it), because BLAKE2b would otherwise dominate the cost of small messages.
* ``nonce``: any length; ``None`` is the same as ``b""``.
* ``ad``: a list or tuple of byte strings, or ``None`` for none. ``[]`` and ``[b""]`` differ,
  and so do ``[a, b]`` and ``[a + b]``. A single ``bytes`` object is refused (it is a sequence
  of ints), and so are sets and other iterables, whose order need not be the same next time.
* ``tau``: the expansion in **bytes**, ``0 <= tau <= MAX_TAU``. With ``tau = 0`` nothing is
  authenticated and every ciphertext decrypts.

All byte inputs may be any C-contiguous object with the buffer protocol (``bytes``,
``bytearray``, ``memoryview``). Bad arguments raise ``TypeError`` or ``ValueError`` before any
work.

Difference from the npm package ``aez`` 1.0.1: its ``decrypt`` accepts a ciphertext shorter
than ``tau`` (with ``tau = 16`` the empty ciphertext "decrypts" to an empty message under any
key and nonce). Here such a ciphertext is rejected: ``decrypt`` returns ``None``.

The work runs in the C extension ``core.aez._aez``: AES-NI (or VAES with AVX-512 for the bulk
of long messages) chosen at import by a CPUID check, and a portable table-driven fallback that
gives the same bytes but is not hardened against cache-timing attacks. ``_aez.set_backend``
forces one; ``is_hardware_accelerated()`` says which kind runs.
"""

from collections.abc import Sequence

from core.aez import _aez

Bytes = bytes | bytearray | memoryview
# A list or a tuple at run time (see above); Sequence so that a list[bytes] type-checks.
AssociatedData = Sequence[Bytes]

MAX_TAU: int = _aez.MAX_TAU
"""Largest accepted expansion, in bytes."""

__all__ = ["MAX_TAU", "decrypt", "encrypt", "is_hardware_accelerated"]


def encrypt(
    key: Bytes, nonce: Bytes | None, ad: AssociatedData | None, tau: int, plaintext: Bytes
) -> bytes:
    """Encrypt ``plaintext``; the result is ``len(plaintext) + tau`` bytes long."""
    return _aez.encrypt(key, nonce, ad, tau, plaintext)


def decrypt(
    key: Bytes, nonce: Bytes | None, ad: AssociatedData | None, tau: int, ciphertext: Bytes
) -> bytes | None:
    """Decrypt ``ciphertext``, or return ``None`` when it is not authentic (or shorter than tau).

    The zero check runs in constant time over the whole expansion.
    """
    return _aez.decrypt(key, nonce, ad, tau, ciphertext)


def is_hardware_accelerated() -> bool:
    """Whether the AES-NI (or VAES) kernel runs, rather than the portable fallback."""
    return _aez.backend() != "portable"
