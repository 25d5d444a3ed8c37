"""Functional encryption with server-held master keys: keygen, encrypt, decrypt.

The authority's master key never leaves the service. Clients ask for functional keys (for a
vector y, or a matrix F for the quadratic schemes) and ciphertexts, which travel as the versioned
bytes of `core.fe`, so they can also be decrypted without the service. Decryption needs no
secret: it checks every point it receives, then reuses cached discrete-log tables and prepared
keys. Limits on dimension and range are checked before any work.
"""

import hashlib
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from app.ops.envelope import Sealed
from app.ops.errors import KNOWN_ERRORS, Problem, invalid_input, wrong_key_type
from app.ops.fe_cache import Cold, FeCaches
from app.ops.fe_policy import FunctionPolicy, KeygenRequest, decide, flatten
from app.ops.fe_pool import Decrypt, Decryption, FePool
from app.ops.keyring import Keyring
from app.ops.work import in_thread
from app.server.metrics import timed
from app.store import FunctionRecord, KeyMaterial
from core.fe import encoding, group
from core.fe.schemes import SCHEMES, Scheme

# A small decryption (a ciphertext of about 20 points at most: a few ms) whose key version,
# table and prepared key are all cached runs on the event loop: a hop to a worker thread costs
# more than a fifth of such a request. Anything that would query the store, build a table,
# prepare a key, search a per-pair range or wait for the RELIC lock goes to a thread.
INLINE_CIPHERTEXT_BYTES = 1024

# A request's FE work is estimated before it starts, in units of about one pairing: one
# decryption pairs about n + 2 times (n² more group operations for a quadratic scheme), and a
# search per pair (bjk, kim) over a range of width w takes about 2·√w steps in gT, 512 of which
# cost about one pairing; an encryption or a functional key about n exponentiations.
SEARCH_STEPS_PER_UNIT = 512


def decrypt_work(scheme: Scheme, n: int, lo: int, hi: int) -> int:
    """The estimated work of one decryption at dimension n over [lo, hi]."""
    work = n + 2 + (n * n // 64 if scheme.quadratic else 0)
    if scheme.base_kind == "per-pair":
        work += 2 * math.isqrt(hi - lo + 1) // SEARCH_STEPS_PER_UNIT + 1
    return work


def make_work(n: int) -> int:
    """The estimated work of one encryption or functional key at dimension n."""
    return n + 1


@dataclass(frozen=True)
class Released:
    """The ledger of one FE key version: what was released, the rank of its span, the cap."""

    version: int
    functions: list[FunctionRecord]
    rank: int
    max_rank: int | None


def _scheme(material: KeyMaterial) -> Scheme:
    scheme = SCHEMES.get(material.type)
    if scheme is None:
        raise wrong_key_type(material.name, material.type, "functional encryption")
    return scheme.on(material.params.get("curve", group.DEFAULT_CURVE))


class Fe:
    """Functional encryption with the master keys of one keyring."""

    def __init__(
        self,
        keyring: Keyring,
        caches: FeCaches,
        max_range: int,
        max_request_work: int,
        pool: FePool | None = None,
    ) -> None:
        self.keyring = keyring
        self.caches = caches
        self.max_range = max_range
        self.max_request_work = max_request_work
        self.pool = pool

    def _material(self, name: str, version: int | None) -> tuple[KeyMaterial, Scheme]:
        material = self.keyring.material(name, version)
        return material, _scheme(material)

    def charge(self, name: str, makes: int = 0, decrypts: Sequence[Sequence[int]] = ()) -> None:
        """Fail unless `name` is an FE key, and refuse a request whose work is over
        CIPHERD_FE_MAX_REQUEST_WORK before any of it is done: `makes` encryptions or
        functional keys, and one decryption per bounds in `decrypts`, at the latest version's
        dimension (an item of a version of another dimension fails on its own)."""
        material, scheme = self._material(name, None)
        n = material.params["dimension"]
        work = makes * make_work(n)
        for lo, hi in decrypts:
            if 0 <= hi - lo <= self.max_range:  # else the item fails on its own, unsearched
                work += decrypt_work(scheme, n, lo, hi)
        if work > self.max_request_work:
            raise Problem(
                422,
                "too-much-work",
                "Too much work",
                f"this request would take about {work} units of FE work (one unit is about one "
                f"pairing), over this service's maximum of {self.max_request_work} per request "
                "(CIPHERD_FE_MAX_REQUEST_WORK): split it, or narrow its bounds",
            )

    def _master_key(self, scheme: Scheme, material: KeyMaterial) -> Any:
        return self.caches.decoded(
            "master", scheme, material.name, material.version, material.secret, scheme.master_key
        )

    @staticmethod
    def released(y: Sequence[int] | None, f: Sequence[Sequence[int]] | None) -> dict[str, Any]:
        """What the audit trail records of a function whose key is asked for: the function
        itself (what its key reveals of every ciphertext: not a secret, and what an auditor of
        an FE policy needs), the SHA-256 of its canonical JSON and its dimension (the vector's
        length, the matrix's rows)."""
        function: Any = f if f is not None else y
        if function is None:
            return {}
        digest = hashlib.sha256(json.dumps(function, separators=(",", ":")).encode()).hexdigest()
        return {"function": function, "function_sha256": digest, "dimension": len(function)}

    def keygen(self, principal: str, request: KeygenRequest) -> Sealed:
        """A functional key for y (inner product) or F (quadratic), if the key's policy
        releases it (`app.ops.fe_policy`)."""
        (outcome,) = self.keygen_many(principal, [request])
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def keygen_many(
        self, principal: str, requests: Sequence[KeygenRequest]
    ) -> list[Sealed | Exception]:
        """Functional keys for many functions, in order: one outcome per request, a key or the
        error that refused it.

        Each key is made first; then the key's function policy decides on all of them in one
        store transaction per key version, in order, and records those it releases in the
        ledger in the same transaction. A key leaves the service only once its release is
        recorded; one that is refused was made for nothing, which bounds the cost of a refusal
        by that of a keygen.
        """
        outcomes: list[Sealed | Exception | None] = [None] * len(requests)
        pending: dict[tuple[str, int], list[tuple[int, list[int], Any, Sealed]]] = {}
        for index, request in enumerate(requests):
            try:
                material, scheme = self._material(request.name, request.version)
                function = request.f if scheme.quadratic else request.y
                if function is None:
                    wanted = "f (an n×n matrix)" if scheme.quadratic else "y (a vector)"
                    raise invalid_input(f"key type {material.type} takes {wanted}")
                vector = flatten(function)
                FunctionPolicy.from_json(material.params.get("fe_policy")).check_function(vector)
                msk = self._master_key(scheme, material)
                with timed("fe", f"{scheme.name}.keygen"):
                    key = scheme.keygen(msk, function)
                pending.setdefault((request.name, material.version), []).append(
                    (
                        index,
                        vector,
                        function,
                        Sealed(key.to_bytes(), material.version),
                    )
                )
            except KNOWN_ERRORS as exc:
                outcomes[index] = exc
        for (name, version), made in pending.items():
            decided = self.keyring.store.release_functions(
                name, version, partial(decide, principal=principal, made=made, now=time.time())
            )
            for (index, _, _, key), refusal in zip(made, decided, strict=True):
                outcomes[index] = key if refusal is None else refusal
        return [outcome for outcome in outcomes if outcome is not None]

    def functions(self, name: str, version: int | None) -> Released:
        """The functions released under one version of an FE key (the latest by default)."""
        material, _ = self._material(name, version)
        records = self.keyring.store.functions(name, material.version)
        policy = FunctionPolicy.from_json(material.params.get("fe_policy"))
        rank = records[-1].rank if records else 0
        return Released(material.version, list(records), rank, policy.max_rank)

    def encrypt(
        self, name: str, x: Sequence[int], y: Sequence[int] | None, version: int | None
    ) -> Sealed:
        """A ciphertext of x (inner product, under the master key) or of x and y (quadratic,
        under the public key)."""
        material, scheme = self._material(name, version)
        if scheme.quadratic:
            if y is None:
                raise invalid_input(f"key type {material.type} encrypts a pair: give x and y")
            assert material.public is not None
            key = self.caches.decoded(
                "public", scheme, name, material.version, material.public, scheme.public_key
            )
        else:
            if y is not None:
                raise invalid_input(f"key type {material.type} encrypts one vector: give only x")
            key = self._master_key(scheme, material)
        with timed("fe", f"{scheme.name}.encrypt"):
            ciphertext = scheme.encrypt(key, x, y)
        return Sealed(ciphertext.to_bytes(), material.version)

    def _bounds(self, bounds: Sequence[int]) -> tuple[int, int]:
        lo, hi = bounds
        if lo > hi:
            raise invalid_input(f"bounds: lo ({lo}) must not be above hi ({hi})")
        if hi - lo > self.max_range:
            raise invalid_input(
                f"bounds: the range spans {hi - lo}, over this service's maximum of "
                f"{self.max_range} (CIPHERD_FE_MAX_RANGE)"
            )
        return lo, hi

    def decryption(
        self, name: str, functional_key: bytes, bounds: Sequence[int], version: int | None
    ) -> Decryption:
        """What decrypting under `functional_key` needs, checked against the key version
        before any point is decoded (may query the store)."""
        return self._decryption(self.keyring.material(name, version), functional_key, bounds)

    def _decryption(
        self, material: KeyMaterial, functional_key: bytes, bounds: Sequence[int]
    ) -> Decryption:
        lo, hi = self._bounds(bounds)
        scheme = _scheme(material)
        job = Decryption(
            key_type=material.type,
            curve=scheme.curve,
            name=material.name,
            version=material.version,
            dimension=material.params["dimension"],
            master_id=encoding.read_master_id(material.secret),
            base=material.public if scheme.base_kind == "master" else None,
            functional_key=functional_key,
            lo=lo,
            hi=hi,
        )
        job.check_header(functional_key, "functional_key")
        return job

    def decryptor(
        self,
        name: str,
        functional_key: bytes,
        bounds: Sequence[int],
        version: int | None,
        warm_only: bool = False,
    ) -> Decrypt:
        """Decryption of ciphertexts under one functional key: decoded, tabled and prepared once.

        With `warm_only` it raises `Cold` rather than query the store, build a table, decode or
        prepare a key, or search a per-pair range: the caller is the event loop.
        """
        material = (
            self.keyring.cached(name, version)
            if warm_only
            else self.keyring.material(name, version)
        )
        if material is None:
            raise Cold
        return self._decryption(material, functional_key, bounds).runner(self.caches, warm_only)

    async def decrypt(
        self,
        name: str,
        functional_key: bytes,
        ciphertext: bytes,
        bounds: Sequence[int],
        version: int | None,
    ) -> int | None:
        """The value, or None outside the bounds.

        In a pool process when one is free, so that decryptions on this worker run side by side
        rather than queue for its one RELIC lock; else on the event loop when everything it
        needs is cached and that lock is free (a few milliseconds at most); else in a thread.
        """

        def run(warm_only: bool) -> int | None:
            decrypt = self.decryptor(name, functional_key, bounds, version, warm_only)
            return decrypt(ciphertext)

        pool = self.pool
        if pool is not None and pool.idle:
            material = await self.keyring.fetch(name, version)
            job = self._decryption(material, functional_key, bounds)
            job.check_header(ciphertext, "ciphertext")
            return await pool.decrypt(job, ciphertext)
        if len(ciphertext) <= INLINE_CIPHERTEXT_BYTES and group.LOCK.acquire(blocking=False):
            try:
                return run(warm_only=True)
            except Cold:
                pass
            finally:
                group.LOCK.release()
        return await in_thread(run, False)
