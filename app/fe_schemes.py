"""The FE key types in service terms: one adapter over the eight `core.fe` schemes.

The inner-product and quadratic schemes differ in their verbs' arguments (y or F, the master key
or the public key) and in how a decryption finds its discrete logarithm (a table over gT, over
tao's base, or a search per pair for bjk and kim). This module hides those differences so that
the router states each operation once.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal

from core.fe import group
from core.fe.ipfe import bjk, kim, kks, lin, opt, tao
from core.fe.qfe import bcfg, sgp

BaseKind = Literal["gt", "master", "per-pair"]


@dataclass(frozen=True)
class FeScheme:
    key_type: str
    module: ModuleType
    quadratic: bool
    # Where decryption's discrete-log base comes from: gT, the master key's published base
    # (tao), or each key/ciphertext pair (bjk, kim: no reusable table).
    base: BaseKind

    @property
    def name(self) -> str:
        return self.module.NAME

    def setup(self, n: int, curve: str = group.DEFAULT_CURVE) -> tuple[bytes, bytes | None]:
        """(secret master key, public part): QFE's public key, tao's decryption base."""
        if self.quadratic:
            pk, msk = self.module.setup(n, curve=curve)
            return msk.to_bytes(), pk.to_bytes()
        msk = self.module.setup(n, curve=curve)
        public = group.curve(curve).gt_to_bytes(msk.base) if self.base == "master" else None
        return msk.to_bytes(), public

    def master_key(self, secret: bytes) -> Any:
        return self.module.MasterKey.from_bytes(secret)

    def public_key(self, public: bytes) -> Any:
        return self.module.PublicKey.from_bytes(public)

    def keygen(self, msk: Any, function: Sequence[Any]) -> bytes:
        return self.module.keygen(msk, function).to_bytes()

    def encrypt(self, secret_or_public: Any, x: Sequence[int], y: Sequence[int] | None) -> bytes:
        if self.quadratic:
            return self.module.encrypt(secret_or_public, x, y).to_bytes()
        return self.module.encrypt(secret_or_public, x).to_bytes()

    def functional_key(self, data: bytes) -> Any:
        return self.module.Key.from_bytes(data)

    def ciphertext(self, data: bytes) -> Any:
        return self.module.Ciphertext.from_bytes(data)

    def prepare(self, key: Any) -> Any:
        return self.module.prepare(key)


FE_SCHEMES: dict[str, FeScheme] = {
    scheme.key_type: scheme
    for scheme in (
        FeScheme("ipfe-bjk", bjk, quadratic=False, base="per-pair"),
        FeScheme("ipfe-tao", tao, quadratic=False, base="master"),
        FeScheme("ipfe-kim", kim, quadratic=False, base="per-pair"),
        FeScheme("ipfe-lin", lin, quadratic=False, base="gt"),
        FeScheme("ipfe-kks", kks, quadratic=False, base="gt"),
        FeScheme("ipfe-opt", opt, quadratic=False, base="gt"),
        FeScheme("qfe-bcfg", bcfg, quadratic=True, base="gt"),
        FeScheme("qfe-sgp", sgp, quadratic=True, base="gt"),
    )
}
