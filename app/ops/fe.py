"""Functional encryption with server-held master keys: keygen, encrypt, decrypt.

The authority's master key never leaves the service. Clients ask for functional keys (for a
vector y, or a matrix F for the quadratic schemes) and ciphertexts, which travel as the versioned
bytes of `core.fe`, so they can also be decrypted without the service. Decryption needs no
secret: it checks every point it receives, then reuses cached discrete-log tables and prepared
keys. Limits on dimension and range are checked before any work.
"""

import asyncio
import hashlib
import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol, cast

from app.ops.audit import CHANGE_ROOM_BYTES, AuditNote, AuditTrail
from app.ops.audit.record import canonical
from app.ops.envelope import Sealed
from app.ops.errors import (
    Problem,
    decryptable,
    encryptable,
    invalid_input,
    wrong_key_type,
)
from app.ops.fe_cache import FeCaches
from app.ops.fe_policy import Function, FunctionPolicy, KeygenRequest, decide, flatten
from app.ops.fe_pool import Decryption, FePool
from app.ops.keyring import Keyring
from app.ops.versioned import enabled
from app.ops.work import in_thread
from app.server.metrics import timed
from app.store import FunctionRecord, KeyMaterial
from core.errors import ShapeError
from core.fe import encoding, group
from core.fe.schemes import SCHEMES, Scheme

# A small decryption (a ciphertext of about 20 points at most: a few ms) whose key version,
# table and prepared key are all cached runs on the event loop: a hop to a worker thread or a
# pool process costs more than a fifth of such a request. Anything that would query the store,
# build a table, prepare a key, search a per-pair range or wait for the RELIC lock runs elsewhere.
INLINE_CIPHERTEXT_BYTES = 1024

log = logging.getLogger("cipherd.fe")


@dataclass(frozen=True)
class Released:
    """A page of the ledger of one FE key version: what was released, the `after` of the next
    page (None on the last), the rank of the whole version's span, the cap."""

    version: int
    functions: list[FunctionRecord]
    next: int | None
    rank: int
    max_rank: int | None


def _scheme_of(material: KeyMaterial) -> Scheme:
    scheme = SCHEMES.get(material.type)
    if scheme is None:
        raise wrong_key_type(material.name, material.type, "functional encryption")
    return scheme.on(material.params.get("curve", group.DEFAULT_CURVE))


def _scheme(material: KeyMaterial) -> Scheme:
    """The scheme of a key to be used: enabled (409 otherwise), unlike a read of its ledger."""
    return _scheme_of(enabled(material))


def _function(
    material: KeyMaterial, y: Sequence[int] | None, f: Sequence[Sequence[int]] | None
) -> Function:
    """The function a keygen asks of the key: y of n entries, or F of n rows of n (422 else),
    checked before it is hashed, recorded or flattened (a 4,000 × 4,000 F for a key of n = 2
    took 5 s and a 32 MB audit record to refuse)."""
    scheme = _scheme(material)
    function = f if scheme.quadratic else y
    if function is None:
        wanted = "f (an n×n matrix)" if scheme.quadratic else "y (a vector)"
        raise invalid_input(f"key type {material.type} takes {wanted}")
    n = material.params["dimension"]
    rows = f if scheme.quadratic and f is not None else ()
    for entries in (function, *rows):  # y; or F, then each of its rows
        if len(entries) != n:
            raise ShapeError(n, len(entries))
    return function


class _Turns:
    """Whether a decryption already ran on the event loop in its current turn. Requests that
    arrive together start in the same turn, so a second decryption in one turn has others
    waiting behind it: then the pool takes one while the event loop runs the next."""

    def __init__(self) -> None:
        self._ran = False

    def backlog(self) -> bool:
        return self._ran

    def ran(self) -> None:
        if not self._ran:
            self._ran = True
            asyncio.get_running_loop().call_soon(self._next_turn)

    def _next_turn(self) -> None:
        self._ran = False


@dataclass(eq=False)
class Fe:
    """Functional encryption with the master keys of one keyring."""

    keyring: Keyring
    caches: FeCaches
    audit: AuditTrail
    max_range: int
    max_request_work: int
    pool: FePool | None = None
    _turns: _Turns = field(default_factory=_Turns, init=False, repr=False)
    _warming: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

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
        work = makes * scheme.make_work(n)
        for lo, hi in decrypts:
            if 0 <= hi - lo <= self.max_range:  # else the item fails on its own, unsearched
                work += scheme.decrypt_work(n, lo, hi)
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

    async def key(self, name: str, principal: str, audit: AuditNote, batch: bool) -> "FeKey":
        return FeKey(self, name, principal, audit, batch)

    def keygen(self, principal: str, request: KeygenRequest) -> Sealed:
        """A functional key for y (inner product) or F (quadratic), if the key's policy
        releases it (`app.ops.fe_policy`).

        The key is made first; then the key's function policy decides on it in one store
        transaction, and records it in the ledger in the same transaction if it releases it. A
        key leaves the service only once its release is recorded; one that is refused was made
        for nothing, which bounds the cost of a refusal by that of a keygen.
        """
        material, scheme = self._material(request.name, request.version)
        # A functional key is made with the master key, like a ciphertext, and serves only to
        # decrypt: its version must still do both.
        encryptable(decryptable(material))
        function = _function(material, request.y, request.f)
        vector = flatten(function)
        FunctionPolicy.from_json(material.params.get("fe_policy")).check_function(vector)
        msk = self._master_key(scheme, material)
        with timed("fe", f"{scheme.name}.keygen"):
            key = Sealed(scheme.keygen(msk, function).to_bytes(), material.version)
        refusal = self.keyring.store.ledger.release(
            request.name,
            material.version,
            partial(
                decide,
                principal=principal,
                vector=vector,
                function=function,
                now=self.keyring.store.clock.now(),
            ),
        )
        if refusal is not None:
            raise refusal
        return key

    def functions(self, name: str, version: int | None, after: int, limit: int) -> Released:
        """A page of the functions released under one version of an FE key (the latest by
        default), those after position `after`."""
        material = self.keyring.material(name, version)
        _scheme_of(material)  # an FE key's, disabled or not: what it released stays readable
        page = self.keyring.store.ledger.functions(name, material.version, after=after, limit=limit)
        policy = FunctionPolicy.from_json(material.params.get("fe_policy"))
        return Released(material.version, page.functions, page.next, page.rank, policy.max_rank)

    def encrypt(
        self, name: str, x: Sequence[int], y: Sequence[int] | None, version: int | None
    ) -> Sealed:
        """A ciphertext of x (inner product, under the master key) or of x and y (quadratic,
        under the public key)."""
        material, scheme = self._material(name, version)
        encryptable(material)
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
        self, material: KeyMaterial, functional_key: bytes, bounds: Sequence[int]
    ) -> Decryption:
        """What decrypting under `functional_key` needs, checked against the key version before
        any point is decoded."""
        lo, hi = self._bounds(bounds)
        scheme = _scheme(material)
        decryptable(material)
        job = Decryption(
            key_type=material.type,
            curve=scheme.curve,
            name=material.name,
            version=material.version,
            dimension=material.params["dimension"],
            master_id=encoding.read_master_id(material.secret),
            public=material.public,
            functional_key=functional_key,
            lo=lo,
            hi=hi,
        )
        job.check_header(functional_key, "functional_key")
        return job

    async def decrypt(
        self,
        name: str,
        functional_key: bytes,
        ciphertext: bytes,
        bounds: Sequence[int],
        version: int | None,
    ) -> int | None:
        """The value, or None outside the bounds.

        On the event loop when it is small, everything it needs is cached and the RELIC lock is
        free, as long as the decryptions of this turn of the loop leave the pool nothing to take
        (`_Turns`); else in a pool process when one is free, so that decryptions on this worker
        run side by side rather than queue for its one RELIC lock; else in a thread. A small
        one that went to the pool because this worker's caches were cold warms them for the
        next.
        """
        job = self.decryption(await self.keyring.fetch(name, version), functional_key, bounds)
        pool = self.pool
        small = len(ciphertext) <= INLINE_CIPHERTEXT_BYTES and not job.scheme.searches_per_pair
        to_pool = pool is not None and pool.idle
        cold = False
        if small and not (to_pool and self._turns.backlog()) and group.LOCK.acquire(False):
            try:
                decrypt = job.runner(self.caches.warm)
                if decrypt is not None:
                    self._turns.ran()
                    return decrypt(ciphertext)
                cold = True
            finally:
                group.LOCK.release()
        if pool is not None and to_pool:
            job.check_header(ciphertext, "ciphertext")
            value = await pool.decrypt(job, ciphertext)
            if cold:
                self._warm_up(job)
            return value
        return await in_thread(lambda: job.built(self.caches)(ciphertext))

    def _warm_up(self, job: Decryption) -> None:
        """Build this worker's table and prepared key for `job` in a thread of its own (one at a
        time: else skipped), so that a later small decryption like it runs on the event loop."""
        if not self._warming.acquire(blocking=False):
            return

        def warm() -> None:
            try:
                job.built(self.caches)
            except Exception:
                log.exception("warming the FE caches failed")
            finally:
                self._warming.release()

        threading.Thread(target=warm, name="fe-warm-up", daemon=True).start()


class Decryptions(Protocol):
    """A decryption item: its bounds are what its work depends on."""

    @property
    def bounds(self) -> Sequence[int]: ...


class FeKey:
    """An FE key of a request, and who asks: its verbs place their own work (the event loop, a
    thread or a pool process, `Fe.decrypt`). A keygen notes the function it releases in the
    request's audit record (`functions`, one per item, for a batch)."""

    def __init__(self, fe: "Fe", name: str, principal: str, audit: AuditNote, batch: bool) -> None:
        self.fe = fe
        self.name = name
        self.principal = principal
        self.audit = audit
        self.batch = batch

    def admit(self, items: Sequence[object]) -> None:
        """Refuse items whose FE work is over CIPHERD_FE_MAX_REQUEST_WORK (`Fe.charge`)."""
        if items and hasattr(items[0], "bounds"):
            self.fe.charge(self.name, decrypts=[cast(Decryptions, i).bounds for i in items])
        else:
            self.fe.charge(self.name, makes=len(items))

    async def warm(self, payload: bytes | None, version: int | None) -> None:
        """Nothing: FE verbs fetch what they need themselves, off the event loop."""

    async def keygen(
        self, y: Sequence[int] | None, f: Sequence[Sequence[int]] | None, version: int | None
    ) -> Sealed:
        _function(await self.fe.keyring.fetch(self.name, version), y, f)
        released = Fe.released(y, f)
        # The ledger takes this function: a change, whose record names the function.
        room = len(canonical(released)) + (0 if self.audit.change else CHANGE_ROOM_BYTES)
        await self.fe.audit.admit_change(self.audit, room)
        if self.batch:
            self.audit.details.setdefault("functions", []).append(released)
        else:
            self.audit.details.update(released)
        request = KeygenRequest(self.name, y, f, version)
        return await in_thread(self.fe.keygen, self.principal, request)

    async def encrypt(
        self, x: Sequence[int], y: Sequence[int] | None, version: int | None
    ) -> Sealed:
        return await in_thread(self.fe.encrypt, self.name, x, y, version)

    async def decrypt(
        self, functional_key: bytes, ciphertext: bytes, bounds: Sequence[int], version: int | None
    ) -> int | None:
        return await self.fe.decrypt(self.name, functional_key, ciphertext, bounds, version)

    async def check_functional_key(
        self, functional_key: bytes, bounds: Sequence[int], version: int | None
    ) -> None:
        """Refuse a functional key, bounds or version that every decryption of a request
        shares, once for the request rather than once per ciphertext."""
        self.fe.decryption(await self.fe.keyring.fetch(self.name, version), functional_key, bounds)
