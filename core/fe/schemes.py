"""One adapter over the eight FE schemes, for code that handles any of them.

The inner-product and quadratic schemes differ in their verbs' arguments (y or F, the master key
or the public key) and in how a decryption finds its discrete logarithm: a table over gT, a
table over tao's published base, or a search per (key, ciphertext) pair for bjk and kim. A
`Scheme` states those differences once, so that the service and the conformance tests call every
scheme the same way, as RustPFE's `tests/common` adapters do.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any, Literal

from core.fe import group
from core.fe.ipfe import bjk, kim, kks, lin, opt, tao
from core.fe.qfe import bcfg, sgp

BaseKind = Literal["gt", "master", "per-pair"]
Decryptor = Callable[[Any, Any], "int | None"]


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
        public = (
            group.curve(self.curve).gt_to_bytes(msk.base) if self.base_kind == "master" else None
        )
        return msk.to_bytes(), public

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

    def base(self, master: Any = None) -> Any:
        """The element of gT that decryption tables are built over: tao's is the master key's
        (or its published part), every other table scheme's the pairing of the generators."""
        if self.base_kind == "per-pair":
            raise ValueError(f"{self.name} searches per pair: it has no table base")
        return master.base if self.base_kind == "master" else self.module.base(self.curve)

    def decryptor(self, lo: int, hi: int, master: Any = None) -> Decryptor:
        """Decryption of (key, ciphertext) pairs with results in [lo, hi]: one table reused for
        every pair, or a search per pair for bjk and kim."""
        if self.base_kind == "per-pair":
            return lambda key, ct: self.module.decrypt(key, ct, lo, hi)
        table = group.DlogTable(self.base(master), lo, hi)
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
