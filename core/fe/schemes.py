"""One adapter over the eight FE schemes, for code that handles any of them.

The inner-product and quadratic schemes differ in their verbs' arguments (y or F, the master key
or the public key), in their cost, and in how a decryption finds its discrete logarithm: a table
over gT, a table over tao's published base, or a search per (key, ciphertext) pair for bjk and
kim. A `Scheme` states those differences once, so that the service and the conformance tests call
every scheme the same way, as RustPFE's `tests/common` adapters do.

What a decryption reuses from one call to the next (its table, its prepared functional key) it
asks of a `DecryptionCache`: the service's caches keep them per process, and a cache that must
not build anything (the service's event loop) answers None, so the caller runs the decryption
elsewhere.
"""

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any, Literal, Protocol

from core.fe import group
from core.fe.dlog import DlogTable
from core.fe.ipfe import bjk, kim, kks, lin, opt, tao
from core.fe.qfe import bcfg, sgp

BaseKind = Literal["gt", "master", "per-pair"]
Decryptor = Callable[[Any, Any], "int | None"]
KeyDecryptor = Callable[[Any], "int | None"]

# Work is counted in units of about one pairing. A search per pair over a range of width w takes
# about 2·√w steps in gT, SEARCH_STEPS_PER_UNIT of which cost about one pairing.
SEARCH_STEPS_PER_UNIT = 512


@dataclass(frozen=True)
class TableBase:
    """The element of gT a decryption table is built over: `id` names it (equal ids, equal
    elements: a base is compared and hashed by its id), `element` computes it when a table has
    to be built."""

    id: bytes
    element: Callable[[], Any] = field(compare=False)


class DecryptionCache(Protocol):
    """What decryptions reuse, kept between them by the caller."""

    def table(self, base: TableBase, lo: int, hi: int) -> DlogTable | None:
        """A table of `base` searching [lo, hi]; None if the cache will not give one now."""

    def prepared_key(self, scheme: "Scheme", data: bytes) -> Any:
        """The functional key `data` encodes, decoded and checked (and prepared, when the
        cache finds it worth it); None if the cache will not give one now."""


@dataclass(frozen=True)
class Scheme:
    """One scheme on one curve (`on` gives it on another)."""

    module: ModuleType
    quadratic: bool
    # Where decryption's discrete-log base comes from: gT, the master key's published base
    # (tao), or each key/ciphertext pair (bjk, kim: no reusable table).
    base_kind: BaseKind
    curve: str = group.DEFAULT_CURVE

    @property
    def name(self) -> str:
        return str(self.module.NAME)

    @property
    def key_type(self) -> str:
        """The service's key type: `ipfe-opt`, `qfe-sgp`, ..."""
        return f"{'qfe' if self.quadratic else 'ipfe'}-{self.name}"

    @property
    def id(self) -> str:
        return f"{self.name}-{self.curve}"

    def on(self, curve: str) -> "Scheme":
        return replace(self, curve=curve)

    def setup(self, n: int, rng: Any = None) -> Any:
        """The scheme's own setup: a master key (IPFE), or (public key, master key) (QFE)."""
        return self.module.setup(n, rng, curve=self.curve)

    def setup_bytes(self, n: int) -> tuple[bytes, bytes | None]:
        """(secret master key, public part) as stored: QFE's public key, tao's decryption base,
        nothing for the other inner-product schemes."""
        if self.quadratic:
            pk, msk = self.setup(n)
            return msk.to_bytes(), pk.to_bytes()
        msk = self.setup(n)
        return msk.to_bytes(), self.public_bytes(msk)

    def public_bytes(self, master: Any) -> bytes | None:
        """The public part stored beside a master key, computed from it: QFE's public key,
        tao's decryption base, nothing for the other inner-product schemes."""
        if self.quadratic:
            return bytes(self.module.public_key(master).to_bytes())
        if self.base_kind == "master":
            return bytes(group.curve(self.curve).gt_to_bytes(master.base))
        return None

    def keygen(self, master: Any, function: Sequence[Any], rng: Any = None) -> Any:
        """A functional key for y (IPFE) or F (QFE); sgp's keygen draws nothing."""
        if self.module is sgp:
            return sgp.keygen(master, function)
        return self.module.keygen(master, function, rng)

    def encrypt(
        self, key: Any, x: Sequence[int], y: Sequence[int] | None = None, rng: Any = None
    ) -> Any:
        """A ciphertext of x under the master key (IPFE), or of (x, y) under the public key
        (QFE)."""
        if self.quadratic:
            return self.module.encrypt(key, x, y, rng)
        return self.module.encrypt(key, x, rng)

    def prepare(self, key: Any) -> Any:
        return self.module.prepare(key)

    @property
    def searches_per_pair(self) -> bool:
        """Whether each decryption searches its range afresh (bjk, kim): no table is reused."""
        return self.base_kind == "per-pair"

    def decrypt_work(self, n: int, lo: int, hi: int) -> int:
        """The estimated work of one decryption at dimension n over [lo, hi], in units of about
        one pairing: about n + 2 pairings (n² more group operations for a quadratic scheme), and
        for a search per pair about 2·√(hi − lo) steps in gT."""
        work = n + 2 + (n * n // 64 if self.quadratic else 0)
        if self.searches_per_pair:
            work += 2 * math.isqrt(hi - lo + 1) // SEARCH_STEPS_PER_UNIT + 1
        return work

    @staticmethod
    def make_work(n: int) -> int:
        """The estimated work of one encryption or functional key at dimension n (about n
        exponentiations), in the units of `decrypt_work`."""
        return n + 1

    def base(self, master: Any = None) -> Any:
        """The element of gT that decryption tables are built over: tao's is the master key's
        (or its published part), every other table scheme's the pairing of the generators."""
        if self.base_kind == "per-pair":
            raise ValueError(f"{self.name} searches per pair: it has no table base")
        return master.base if self.base_kind == "master" else self.module.base(self.curve)

    def decryptor(self, lo: int, hi: int, master: Any = None) -> Decryptor:
        """Decryption of (key, ciphertext) pairs with results in [lo, hi]: one table reused for
        every pair, or a search per pair for bjk and kim."""
        table = None if self.searches_per_pair else DlogTable(self.base(master), lo, hi)
        return self._decrypting(table, lo, hi)

    def decryptor_for(
        self,
        cache: DecryptionCache,
        functional_key: bytes,
        lo: int,
        hi: int,
        public: bytes | None = None,
    ) -> KeyDecryptor | None:
        """Decryption of ciphertexts under the functional key `functional_key` encodes, with
        results in [lo, hi], its table and prepared key from `cache`; None when the cache did not
        give them. `public` is the key version's public part (tao's tables are over it)."""
        key = cache.prepared_key(self, functional_key)
        if key is None:
            return None
        table = None
        if not self.searches_per_pair:
            table = cache.table(self._table_base(public), lo, hi)
            if table is None:
                return None
        decrypt = self._decrypting(table, lo, hi)
        return lambda ciphertext: decrypt(key, ciphertext)

    def _table_base(self, public: bytes | None) -> TableBase:
        curve = group.curve(self.curve)
        if self.base_kind == "master":
            if public is None:
                raise ValueError(f"{self.name} decrypts over its published base: give it")
            return TableBase(public, lambda: curve.gt_from_bytes(public))
        return TableBase(f"gT:{curve.name}".encode(), curve.gt_generator)

    def _decrypting(self, table: DlogTable | None, lo: int, hi: int) -> Decryptor:
        if table is None:
            return lambda key, ct: self.module.decrypt(key, ct, lo, hi)
        return lambda key, ct: self.module.decrypt(table, key, ct)

    def master_key(self, data: bytes) -> Any:
        return self.module.MasterKey.from_bytes(data)

    def public_key(self, data: bytes) -> Any:
        return self.module.PublicKey.from_bytes(data)

    def functional_key(self, data: bytes) -> Any:
        return self.module.Key.from_bytes(data)

    def ciphertext(self, data: bytes) -> Any:
        return self.module.Ciphertext.from_bytes(data)


SCHEMES: dict[str, Scheme] = {
    scheme.key_type: scheme
    for scheme in (
        Scheme(bjk, quadratic=False, base_kind="per-pair"),
        Scheme(tao, quadratic=False, base_kind="master"),
        Scheme(kim, quadratic=False, base_kind="per-pair"),
        Scheme(lin, quadratic=False, base_kind="gt"),
        Scheme(kks, quadratic=False, base_kind="gt"),
        Scheme(opt, quadratic=False, base_kind="gt"),
        Scheme(bcfg, quadratic=True, base_kind="gt"),
        Scheme(sgp, quadratic=True, base_kind="gt"),
    )
}
