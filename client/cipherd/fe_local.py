"""Functional encryption on this machine, with what the service publishes.

An analyst's vectors need not travel: `QfeEncryptor` encrypts (x, y) locally under a quadratic
key's public key, and `FeDecryptor` decrypts ciphertexts locally with a functional key the
service issued, searching the result in a discrete-log table built once per bounds and kept.
The ciphertexts are the service's own: the service decrypts what this encrypts and the other
way round. Needs the `core` library (this distribution), imported here only.
"""

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from cipherd.client import Client
from cipherd.models import Ciphertext
from core.fe import group
from core.fe.group import DlogTable
from core.fe.schemes import SCHEMES, Scheme, TableBase

TABLES_KEPT = 8


def _scheme(key_type: str, curve: str | None) -> Scheme:
    if key_type not in SCHEMES:
        raise ValueError(f"{key_type} is not a functional-encryption key type")
    return SCHEMES[key_type].on(curve or group.DEFAULT_CURVE)


@lru_cache(maxsize=TABLES_KEPT)
def _table(base: TableBase, lo: int, hi: int) -> DlogTable:
    return DlogTable(base.element(), lo, hi)


class _Kept:
    """What local decryptions reuse: the last TABLES_KEPT tables, by base and bounds (a
    functional key is prepared once, by the `FeDecryptor` that holds it)."""

    def table(self, base: TableBase, lo: int, hi: int) -> DlogTable:
        return _table(base, lo, hi)

    def prepared_key(self, scheme: Scheme, data: bytes) -> Any:
        return scheme.prepare(scheme.functional_key(data))


_KEPT = _Kept()


class QfeEncryptor:
    """Encrypts (x, y) pairs under a quadratic key version's public key, locally."""

    def __init__(self, key_type: str, curve: str | None, version: int, public_key: bytes):
        self.scheme = _scheme(key_type, curve)
        if not self.scheme.quadratic:
            raise ValueError(f"{key_type} has no public encryption key: the service encrypts")
        self.version = version
        self._public = self.scheme.public_key(public_key)

    @classmethod
    def fetch(cls, client: Client, name: str, version: int | None = None) -> "QfeEncryptor":
        """The encryptor of key `name` (its latest version by default), from the service."""
        key = client.keys.get(name)
        public = client.keys.public(name, version=version)
        assert isinstance(public.public_key, bytes)  # the raw form, the default
        return cls(key.type, key.curve, public.version, public.public_key)

    def encrypt(self, x: Sequence[int], y: Sequence[int]) -> Ciphertext:
        ciphertext = self.scheme.encrypt(self._public, list(x), list(y))
        return Ciphertext(ciphertext.to_bytes(), self.version)


class FeDecryptor:
    """Decrypts ciphertexts locally with one functional key, results searched in [lo, hi]."""

    def __init__(
        self,
        key_type: str,
        curve: str | None,
        functional_key: bytes,
        bounds: Sequence[int],
        public: bytes | None = None,
    ) -> None:
        self.scheme = _scheme(key_type, curve)
        lo, hi = bounds
        if lo > hi:
            raise ValueError(f"bounds: lo ({lo}) is above hi ({hi})")
        self.bounds = (lo, hi)
        decrypt = self.scheme.decryptor_for(_KEPT, functional_key, lo, hi, public)
        assert decrypt is not None  # _KEPT builds what it lacks
        self._decrypt = decrypt

    @classmethod
    def fetch(
        cls,
        client: Client,
        name: str,
        functional_key: bytes,
        bounds: Sequence[int],
        version: int | None = None,
    ) -> "FeDecryptor":
        """The decryptor for a functional key of key `name`: the key's type and curve (and
        tao's decryption base) from the service."""
        key = client.keys.get(name)
        public = None
        if SCHEMES.get(key.type) is not None and SCHEMES[key.type].base_kind == "master":
            base = client.keys.public(name, version=version).public_key
            assert isinstance(base, bytes)  # the raw form, the default
            public = base
        return cls(key.type, key.curve, functional_key, bounds, public)

    def decrypt(self, ciphertext: bytes) -> int | None:
        """The function's value on the ciphertext, or None outside the bounds."""
        return self._decrypt(self.scheme.ciphertext(ciphertext))
