"""`audit verify` as the command line and `POST /v1/audit/verify` answer it: every chain checked
against itself, the register and the latest anchors, and the journal segments set aside, in
words, each fault with its chain and position. Whatever goes wrong while checking is a fault of
the report too, never an error of its own: a trail that cannot be read does not verify.
"""

import logging
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from app.ops.audit.anchor import Found, Publisher, anchor_files, read_anchors
from app.ops.audit.chain import ChainFault, verify
from app.ops.audit.mover import adopt_orphans
from app.settings import Settings
from app.store import KeyStore, journal
from app.store.journal import CorruptJournal

log = logging.getLogger("cipherd.audit")

# A live process's records reach the store a moment after its anchor may name them: verify
# waits for chains behind their anchor while they still move on, up to this long without.
CATCH_UP_SECONDS = 1.0


def report(
    store: KeyStore, settings: Settings, anchors_from: Sequence[Path] = ()
) -> dict[str, Any]:
    """The trail's verification: `verified`, `records`, `chains`, `faults` (chain, seq,
    problem) and `anchor` (where it was read, when it was published, how many chains; None
    when none was found). `anchors_from`: files (a log, say) and directories to read the
    anchors from instead of where the settings put them."""
    try:
        return _report(store, settings, anchors_from)
    except Exception as exc:  # any fault is the report's, in words
        log.exception("audit verify could not read the trail")
        why = " ".join(str(exc).split()) or type(exc).__name__
        problem = f"the audit trail could not be read: {why}"
        return {
            "verified": False,
            "records": 0,
            "chains": 0,
            "faults": [{"chain": None, "seq": None, "problem": problem}],
            "anchor": None,
        }


def _report(store: KeyStore, settings: Settings, anchors_from: Sequence[Path]) -> dict[str, Any]:
    # The journals of processes that have ended hold their last records.
    adopt_orphans(store, settings.audit_journal_dir)
    key = store.audit.mac_key()
    sources = anchor_files(anchors_from) or Publisher.for_settings(settings).sources()
    found = read_anchors(key, sources)
    _catch_up(store, found)
    count, faults = verify(store, found.latest)
    faults += [
        ChainFault(None, None, f"the anchor at {where} does not verify: it was forged or damaged")
        for where in found.forged
    ]
    faults += _set_aside(settings.audit_journal_dir)
    anchor = None
    if found.latest:
        anchor = {"source": settings.audit_anchor, "time": found.time, "chains": len(found.latest)}
    return {
        "verified": not faults,
        "records": count,
        "chains": len(store.audit.heads()),
        "faults": [asdict(fault) for fault in faults],
        "anchor": anchor,
    }


def _catch_up(store: KeyStore, found: Found) -> None:
    """Wait while chains behind their anchors still move on in the store (their processes'
    movers at work), until none does for CATCH_UP_SECONDS."""
    behind = _behind(store, found)
    settled = time.monotonic() + CATCH_UP_SECONDS
    while behind and time.monotonic() < settled:
        time.sleep(0.05)
        now_behind = _behind(store, found)
        if now_behind != behind:
            behind, settled = now_behind, time.monotonic() + CATCH_UP_SECONDS


def _behind(store: KeyStore, found: Found) -> dict[str, int]:
    heads = {head.chain: head.seq for head in store.audit.heads()}
    return {
        chain: heads.get(chain, 0)
        for chain, anchor in found.latest.items()
        if heads.get(chain, 0) < anchor.seq
    }


def _set_aside(directory: Path) -> list[ChainFault]:
    """A fault for each journal segment set aside: where it stopped being adopted, and why."""
    faults = []
    for path in journal.set_aside_segments(directory):
        chain, first = journal.segment_place(path.name)
        try:
            rows, why = journal.decode(path.read_bytes()), "it"
        except CorruptJournal as corrupt:
            rows, why = corrupt.rows, f"its {corrupt}"
        faults.append(
            ChainFault(
                chain,
                first + len(rows),
                f"the journal segment {path} was set aside: {why}; the {len(rows)} records "
                "before that line reached the store, the rest of the segment did not",
            )
        )
    return faults
