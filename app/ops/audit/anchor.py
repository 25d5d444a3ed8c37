"""Anchors: each chain's head, published now and then where whoever writes the database cannot
roll it back, so that `verify` sees a trail that was cut short, wiped or put back to an older
copy, which the store alone cannot show (a consistent older state of the tables verifies).

An anchor names a chain, a position in it and the head's tag at that position, with the time it
was published and a MAC under a key derived from the trail's MAC key (which the store keeps
wrapped under the root key): nobody without the root key can forge one. A process publishes the
head of its chain at its first record, then every `every_records` records or `every_seconds`
(whichever comes first), and at a clean stop; always after the journal holding the records it
names is on disk, so that a crash cannot leave an anchor ahead of the records.

Where (`CIPHERD_AUDIT_ANCHOR`): `file`, one append-only file per chain, `<chain>.anchor`, in
`CIPHERD_AUDIT_ANCHOR_DIR` (`audit-anchors` beside the journal's directory unless set: replicas
that verify each other share one); `audit-file`, a line of `CIPHERD_AUDIT_FILE`; `log`, a line
of the service's log. Every form is the same JSON object, `{"audit_anchor": {...}}`, so that
verify finds anchors in any file that holds them (`cipherd local audit verify --anchors FILE`).
"""

import hmac
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.ops.audit.chain import Anchor, head_tag
from app.ops.audit.record import canonical, moment
from app.settings import Settings
from app.store import AuditRow
from app.store.journal import Segment, sync_directory

log = logging.getLogger("cipherd.audit")

Where = Literal["file", "audit-file", "log"]
SUFFIX = ".anchor"
# A chain's anchor file is cut back to its last anchor once it holds this much.
COMPACT_BYTES = 64 << 10
_MARK = '{"audit_anchor":'
_KEY_LABEL = b"cipherd audit anchor key"


def anchor_key(mac_key: bytes) -> bytes:
    """The anchors' MAC key, derived from the trail's: the store never holds it."""
    return hmac.digest(mac_key, _KEY_LABEL, "sha256")


def _anchor_mac(key: bytes, chain: str, seq: int, tag: str, published: str) -> bytes:
    return hmac.digest(key, b"anchor" + canonical([chain, seq, tag, published]).encode(), "sha256")


def anchor_line(key: bytes, anchor: Anchor) -> str:
    """The JSON line that publishes `anchor`, MAC'd under `key` (`anchor_key`)."""
    tag = anchor.tag.hex()
    mac = _anchor_mac(key, anchor.chain, anchor.seq, tag, anchor.time).hex()
    fields = {"chain": anchor.chain, "seq": anchor.seq, "tag": tag, "time": anchor.time}
    return canonical({"audit_anchor": fields | {"mac": mac}})


class Publisher:
    """This process's anchors: the writer notes each chain's last record as it writes it, and
    the mover's thread publishes those that are due."""

    def __init__(
        self,
        where: Where,
        directory: Path,
        audit_file: Path | None = None,
        every_records: int = 1000,
        every_seconds: float = 5.0,
    ) -> None:
        if where == "audit-file" and audit_file is None:
            raise ValueError("anchors in the audit file need CIPHERD_AUDIT_FILE")
        self.where = where
        self.directory = directory
        self._audit_file = audit_file
        self._every_records = every_records
        self._every_seconds = every_seconds
        self._lock = threading.Lock()
        # Per chain: the last record written and its segment, not yet published.
        self._pending: dict[str, tuple[Segment, AuditRow]] = {}
        # Per chain: the position last published, and when (monotonic).
        self._published: dict[str, tuple[int, float]] = {}

    @classmethod
    def for_settings(cls, settings: Settings) -> "Publisher":
        return cls(
            settings.audit_anchor,
            anchor_directory(settings),
            settings.audit_file,
            settings.audit_anchor_records,
            settings.audit_anchor_seconds,
        )

    def noted(self, segment: Segment, last: AuditRow) -> None:
        """The writer appended records to `segment`, `last` the last of them."""
        with self._lock:
            self._pending[last.chain] = (segment, last)

    def due_in(self, longest: float) -> float:
        """Seconds until the next anchor is due by time, `longest` at most."""
        with self._lock:
            chains = list(self._pending)
        due = min((self._due_at(chain) for chain in chains), default=time.monotonic() + longest)
        return min(longest, max(0.0, due - time.monotonic()))

    def _due_at(self, chain: str) -> float:
        published = self._published.get(chain)
        return 0.0 if published is None else published[1] + self._every_seconds

    def publish(self, mac_key: bytes, now: Callable[[], float], every: bool = False) -> None:
        """Publish the anchors that are due (`every`: all that wait, as at a stop)."""
        with self._lock:
            waiting = list(self._pending.items())
        for chain, (segment, last) in waiting:
            published = self._published.get(chain)
            due = (
                every
                or published is None
                or last.seq - published[0] >= self._every_records
                or time.monotonic() >= self._due_at(chain)
            )
            if not due:
                continue
            segment.sync()  # the records it names are on disk before it says so
            tag = head_tag(mac_key, chain, last.seq, last.mac)
            anchor = Anchor(chain, last.seq, tag, moment(now()))
            self._write(chain, anchor_line(anchor_key(mac_key), anchor))
            self._published[chain] = (last.seq, time.monotonic())
            with self._lock:
                if self._pending.get(chain) == (segment, last):
                    del self._pending[chain]

    def _write(self, chain: str, line: str) -> None:
        if self.where == "log":
            log.info("audit anchor %s", line)
            return
        if self.where == "audit-file":
            assert self._audit_file is not None
            _append(self._audit_file, line)
            return
        path = self.directory / f"{chain}{SUFFIX}"
        if not self.directory.is_dir():
            self.directory.mkdir(parents=True, mode=0o700)
        if _append(path, line) > COMPACT_BYTES:
            _replace(path, line)

    def sources(self) -> list[Path]:
        """The files that hold the anchors published as this process publishes them."""
        if self.where == "audit-file":
            assert self._audit_file is not None
            return [self._audit_file] if self._audit_file.exists() else []
        if self.where == "log" or not self.directory.is_dir():
            return []
        return sorted(self.directory.glob(f"*{SUFFIX}"))


def anchor_directory(settings: Settings) -> Path:
    return settings.audit_anchor_dir or default_directory(settings.audit_journal_dir)


def default_directory(journal: Path) -> Path:
    """Beside the journal's directory: the anchors outlive the segments they name."""
    return journal.parent / "audit-anchors"


def _append(path: Path, line: str) -> int:
    """Append `line` to `path`, on disk when this returns; the file's size after."""
    created = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        data = (line + "\n").encode()
        while data:
            data = data[os.write(fd, data) :]
        os.fsync(fd)
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if created:
        sync_directory(path.parent)
    return size


def _replace(path: Path, line: str) -> None:
    """`path` cut back to its last anchor, atomically: an older anchor says less than it."""
    staged = path.with_name(path.name + ".new")
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(staged, path)
    sync_directory(path.parent)


@dataclass(frozen=True)
class Found:
    """The anchors read from some files: the latest of each chain, and the lines that claim to
    be anchors but do not verify."""

    latest: dict[str, Anchor]
    forged: list[str]

    @property
    def time(self) -> str | None:
        return max((anchor.time for anchor in self.latest.values()), default=None)


def read_anchors(mac_key: bytes, paths: Iterable[Path]) -> Found:
    """The latest verified anchor of each chain in `paths` (anchor files, an audit file, a log:
    any file whose lines hold `{"audit_anchor": ...}`, in JSON logs inside their message)."""
    key = anchor_key(mac_key)
    latest: dict[str, Anchor] = {}
    forged: list[str] = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as lines:
            for number, line in enumerate(lines, 1):
                if "audit_anchor" not in line or not line.endswith("\n"):
                    continue  # not an anchor, or one whose writing was cut off
                text = _anchor_text(line)
                if text is None:
                    continue
                anchor = _parse(key, text)
                if anchor is None:
                    forged.append(f"{path} line {number}")
                elif anchor.chain not in latest or anchor.seq >= latest[anchor.chain].seq:
                    latest[anchor.chain] = anchor
    return Found(latest, forged)


def _anchor_text(line: str) -> str | None:
    """The text from the anchor on in `line`, or None if it holds none (a record of the audit
    file that merely mentions one, say: JSON escapes the quotes of a string's content)."""
    start = line.find(_MARK)
    if start >= 0:
        return line[start:]
    try:  # a JSON log line: the anchor is inside its message
        message = json.loads(line).get("message", "")
    except (ValueError, AttributeError):
        return None
    start = message.find(_MARK) if isinstance(message, str) else -1
    return message[start:] if start >= 0 else None


def _parse(key: bytes, text: str) -> Anchor | None:
    """The anchor `text` begins with if its MAC verifies; None if it does not."""
    try:
        fields, _ = json.JSONDecoder().raw_decode(text)
        body = fields["audit_anchor"]
        chain, seq, tag, published, mac = (
            body["chain"],
            body["seq"],
            body["tag"],
            body["time"],
            body["mac"],
        )
        if not (isinstance(chain, str) and type(seq) is int and isinstance(published, str)):
            return None
        expected = _anchor_mac(key, chain, seq, tag, published)
        if not hmac.compare_digest(bytes.fromhex(mac), expected):
            return None
        return Anchor(chain, seq, bytes.fromhex(tag), published)
    except (ValueError, KeyError, TypeError):
        return None


def anchor_files(paths: Sequence[Path]) -> list[Path]:
    """`paths` with each directory replaced by the anchor files in it."""
    found: list[Path] = []
    for path in paths:
        found += sorted(path.glob(f"*{SUFFIX}")) if path.is_dir() else [path]
    return found
