"""The hash chains: each record's MAC, each chain's head, the register of chains, and `verify`.

Each process writes its own chain: record n carries an HMAC-SHA256, under a key the store keeps
wrapped under the root key's hierarchy, over its content and the MAC of record n - 1, and the
chain's head (its last position) is kept with a tag of its own. Every chain is named in a chain
of its own, the register, before its first records reach the store. Without the root key nobody
can forge a record, change one, reorder or drop records, cut a chain short, or remove a chain
whole without `verify` finding it.
"""

import functools
import hashlib
import hmac
import json
import secrets
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.ops.audit.record import SYSTEM, AuditRecord, canonical
from app.store import AuditHead, AuditRow, KeyStore, journal

# The chain that names every chain as it begins; chains named in it begin with "r" (the older,
# unregistered ones were plain hex).
REGISTER = "@chains"
REGISTERED_PREFIX = "r"

_NONE = (0xFFFFFFFF).to_bytes(4, "big")  # the encoding of a missing field: no length is this
_SHA256_BLOCK = 64
# Records read per query: few round trips, a few MB at a time.
_VERIFY_PAGE = 10_000


class KeyedSha256:
    """HMAC-SHA256 under one key, from its inner and outer hash states computed once (RFC 2104).
    The same MAC as `hmac.digest`, which lets go of the interpreter lock at every call: on the
    event loop, that handed it to the audit mover, and the loop waited for the mover's turn."""

    __slots__ = ("inner", "outer")

    def __init__(self, key: bytes) -> None:
        if len(key) > _SHA256_BLOCK:
            key = hashlib.sha256(key).digest()
        key = key.ljust(_SHA256_BLOCK, b"\0")
        self.inner = hashlib.sha256(bytes(byte ^ 0x36 for byte in key))
        self.outer = hashlib.sha256(bytes(byte ^ 0x5C for byte in key))

    def digest(self, message: bytes) -> bytes:
        inner = self.inner.copy()
        inner.update(message)
        outer = self.outer.copy()
        outer.update(inner.digest())
        return outer.digest()


# The MAC key's states, made once per key (a process has one; `verify` may meet another).
_keyed = functools.lru_cache(maxsize=4)(KeyedSha256)


def _mac(key: bytes, columns: bytes, previous: bytes) -> bytes:
    """HMAC-SHA256 over a record's columns but its MAC (`journal.columns`: a JSON array in
    table order, the journal line's own text) and the MAC of the record before it in its
    chain."""
    return _keyed(key).digest(b"record" + columns + previous)


def record_mac(key: bytes, row: AuditRow, previous: bytes) -> bytes:
    return _mac(key, journal.columns(row[:-1]).encode(), previous)


def _field(value: str | None) -> bytes:
    if value is None:
        return _NONE
    data = value.encode()
    return len(data).to_bytes(4, "big") + data


def head_tag(key: bytes, chain: str, seq: int, last_mac: bytes) -> bytes:
    message = b"head" + _field(chain) + _field(str(seq)) + _field(last_mac.hex())
    return _keyed(key).digest(message)


def head_of(key: bytes, last: AuditRow) -> AuditHead:
    """The head of a chain whose last record is `last`."""
    return AuditHead(last.chain, last.seq, head_tag(key, last.chain, last.seq, last.mac))


class Chain:
    """The chain a process writes: its name, and the position and MAC of its last record."""

    __slots__ = ("last_mac", "name", "seq")

    def __init__(self) -> None:
        self.name = REGISTERED_PREFIX + secrets.token_hex(8)
        self.seq = 0
        self.last_mac = b""

    def seal(self, key: bytes, records: Sequence[AuditRecord]) -> tuple[list[AuditRow], bytes]:
        """`records` as the rows that follow the chain's last record, each with its MAC, and
        the journal lines that hold them. The chain stays where it is until `advance`."""
        rows: list[AuditRow] = []
        lines: list[str] = []
        chain, seq, last_mac = self.name, self.seq, self.last_mac
        for record in records:
            seq += 1
            values = (
                chain,
                seq,
                record.time,
                record.request_id,
                record.client,
                record.principal,
                record.operation,
                record.key,
                None if record.key_version is None else canonical(record.key_version),
                record.status,
                record.problem,
                canonical(record.details),
            )
            columns = journal.columns(values)
            last_mac = _mac(key, columns.encode(), last_mac)
            rows.append(AuditRow(*values, mac=last_mac))
            lines.append(journal.line(columns, last_mac))
        return rows, "".join(lines).encode()

    def advance(self, last: AuditRow) -> None:
        """Move the chain on to `last`, a row `seal` made and the journal took."""
        self.seq, self.last_mac = last.seq, last.mac


def register(store: KeyStore, key: bytes, chain: str) -> None:
    """Name `chain` in the register of chains (once), before its first records reach the store:
    a chain removed whole, head and all, is then still found missing."""

    def extend(register: Sequence[AuditRow]) -> tuple[list[AuditRow], AuditHead | None]:
        if any(json.loads(row.details)["chain"] == chain for row in register):
            return [], None
        seq = len(register) + 1
        values = (
            REGISTER,
            seq,
            store.clock.now(),
            secrets.token_hex(16),
            None,
            SYSTEM,
            "audit_chain_begun",
            None,
            None,
            200,
            None,
            canonical({"chain": chain}),
        )
        mac = _mac(key, journal.columns(values).encode(), register[-1].mac if register else b"")
        row = AuditRow(*values, mac=mac)
        return [row], head_of(key, row)

    store.audit.extend_chain(REGISTER, extend)


@dataclass(frozen=True)
class Anchor:
    """A chain's head as published out of the store's reach (`app.ops.audit.anchor`): the
    chain held `seq` records at `time`, the last of them giving the head tag `tag`."""

    chain: str
    seq: int
    tag: bytes
    time: str


@dataclass(frozen=True)
class ChainFault:
    """What does not verify: the first record concerned of a chain (none: the trail as a
    whole), and why."""

    chain: str | None
    seq: int | None
    problem: str

    def __str__(self) -> str:
        if self.chain is None:
            return self.problem
        if self.seq is None:
            return f"chain {self.chain}: {self.problem}"
        return f"chain {self.chain} record {self.seq}: {self.problem}"


def verify(
    store: KeyStore, anchors: Mapping[str, Anchor] | None = None
) -> tuple[int, list[ChainFault]]:
    """Check every chain, that every chain the register names is there and every registered
    kind of chain is named in it, and that every chain reaches its latest anchor with the same
    head there: the number of records read, and each chain's first fault."""
    key = store.audit.mac_key()
    anchors = anchors or {}
    count, faults = 0, []
    heads = store.audit.heads()
    for head in heads:
        checked, fault = _verify_chain(store, key, head, anchors.get(head.chain))
        if head.chain != REGISTER:  # records of what was done, not of the trail's bookkeeping
            count += checked
        if fault is not None:
            faults.append(fault)
    registered = {json.loads(row.details)["chain"] for row in _chain_rows(store, REGISTER)}
    present = {head.chain for head in heads}
    for chain in sorted(registered - present):
        faults.append(ChainFault(chain, 1, "registered when it began, but gone: it was removed"))
    for chain in sorted(present - registered):
        if chain.startswith(REGISTERED_PREFIX):
            faults.append(ChainFault(chain, 1, "not in the register of chains"))
    for chain in sorted(set(anchors) - present - registered):
        faults.append(ChainFault(chain, 1, _short_of(anchors[chain], 0)))
    return count, faults


def _short_of(anchor: Anchor, held: int) -> str:
    if held == 0:
        return (
            f"gone from the store: its anchor of {anchor.time} says it held {anchor.seq} "
            "records (the chain was removed, or the audit tables emptied)"
        )
    missing = (
        f"record {anchor.seq} is"
        if held + 1 == anchor.seq
        else (f"records {held + 1} to {anchor.seq} are")
    )
    return (
        f"{missing} missing: its anchor of {anchor.time} says the chain reached record "
        f"{anchor.seq} (its tail was cut and an older head put back, or the journal that held "
        "them was lost)"
    )


def _verify_chain(
    store: KeyStore, key: bytes, head: AuditHead, anchor: Anchor | None
) -> tuple[int, ChainFault | None]:
    # The MAC of each record inline (`record_mac`, without its calls): this loop is what
    # verifying costs, some 4 of the 7 us a record takes.
    keyed = _keyed(key)
    inner_state, outer_state, columns = keyed.inner, keyed.outer, journal.columns
    compare = hmac.compare_digest
    expected, last_mac, anchored_mac, head_mac = 1, b"", b"", b""
    anchored = 0 if anchor is None else anchor.seq
    for page in _pages(store, head.chain):
        for row in page:
            if row[1] != expected:
                return expected - 1, ChainFault(
                    head.chain, expected, f"missing (the chain goes on at record {row[1]})"
                )
            inner = inner_state.copy()
            inner.update(b"record" + columns(row[:-1]).encode() + last_mac)
            outer = outer_state.copy()
            outer.update(inner.digest())
            last_mac = row[-1]
            if not compare(last_mac, outer.digest()):
                return expected - 1, ChainFault(
                    head.chain, expected, "its MAC does not verify: the record was changed or moved"
                )
            if expected == anchored:
                anchored_mac = last_mac
            if expected == head.seq:
                head_mac = last_mac
            expected += 1
    last = expected - 1
    if head.seq == 0 and not head.tag:
        return last, ChainFault(head.chain, 1, "the chain has no head: it was tampered with")
    if head.seq > last:
        return last, ChainFault(
            head.chain, last + 1, f"missing (the chain's head says {head.seq} records)"
        )
    if not compare(head.tag, head_tag(key, head.chain, head.seq, head_mac)):
        return last, ChainFault(head.chain, head.seq, "the chain's head does not verify")
    # Records past the head read before them: written since, with a head of their own (which
    # the next verification checks), or put there without one.
    if head.seq < last and store.audit.head(head.chain).seq < last:
        return last, ChainFault(
            head.chain, head.seq + 1, "past the chain's head: not written by it"
        )
    if anchor is None:
        return last, None
    if last < anchor.seq:
        return last, ChainFault(head.chain, last + 1, _short_of(anchor, last))
    if not compare(anchor.tag, head_tag(key, head.chain, anchor.seq, anchored_mac)):
        return last, ChainFault(
            head.chain,
            anchor.seq,
            f"differs from its anchor of {anchor.time}: the chain was rewritten",
        )
    return last, None


def _chain_rows(store: KeyStore, chain: str) -> Iterator[AuditRow]:
    for page in _pages(store, chain):
        yield from map(AuditRow._make, page)


def _pages(store: KeyStore, chain: str) -> Iterator[Sequence[tuple[Any, ...]]]:
    """A chain's records as stored when its reading began, a window of positions at a time
    (a window with a gap, or one cut short by its weight, is short; one wholly missing, empty):
    each window starts after the last record read."""
    after, last = 0, store.audit.last_seq(chain)
    while after < last:
        page = store.audit.chain(chain, after, _VERIFY_PAGE)
        yield page
        after = page[-1][1] if page else after + _VERIFY_PAGE
