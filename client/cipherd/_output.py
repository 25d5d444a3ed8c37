"""What the command prints: answers as JSON or as a table, and a progress bar for transfers.

A table shows each answer's short set of columns (`COLUMNS`; every field with `--output wide`),
one row per item; JSON shows every field. Bytes print as base64 and times in ISO 8601 either way.
"""

import base64
import dataclasses
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from cipherd import models
from cipherd._transport import Progress

FORMATS = ("json", "table", "wide")
# A bar for transfers from this size on, and for those of unknown size.
PROGRESS_FROM = 4 << 20

# The columns a table shows by default, for the answers that have more than a few fields.
COLUMNS: dict[type, tuple[str, ...]] = {
    models.Key: ("name", "type", "latest_version", "state", "created_at"),
    models.Token: ("id", "description", "keys", "operations", "expires_at"),
    models.IssuedToken: ("id", "token", "keys", "operations", "expires_at"),
    models.Login: ("token", "policies", "lease_duration"),
    models.AuditRecord: ("time", "operation", "key", "principal", "status"),
    models.ReleasedFunction: ("function", "principal", "time", "key_version"),
    models.AuditVerification: ("verified", "records", "chains", "faults"),
}


def plain(value: Any) -> Any:
    """An answer as JSON values: bytes in base64, times in ISO 8601."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value


def show(answer: Any, output: str) -> None:
    """Print an answer (a typed answer, a list of them, or plain values) as `output` says."""
    if output == "json":
        print(json.dumps(plain(answer), indent=2))
        return
    rows = list(answer) if isinstance(answer, list) else [answer]
    columns = _columns(rows, wide=output == "wide")
    cells = [[_cell(_field(row, column)) for column in columns] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    for line in [[c.upper() for c in columns], *cells]:
        print("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip())


def _columns(rows: Sequence[Any], wide: bool) -> list[str]:
    kinds = {type(row) for row in rows}
    if len(kinds) == 1 and not wide and (kind := kinds.pop()) in COLUMNS:
        return list(COLUMNS[kind])
    names: dict[str, None] = {}
    for row in rows:
        fields = (
            [f.name for f in dataclasses.fields(row)]
            if dataclasses.is_dataclass(row)
            else list(row)
            if isinstance(row, dict)
            else ["value"]
        )
        names.update(dict.fromkeys(fields))
    return list(names)


def _field(row: Any, column: str) -> Any:
    if dataclasses.is_dataclass(row):
        return getattr(row, column)
    return row.get(column) if isinstance(row, dict) else row


def _cell(value: Any) -> str:
    """A table cell: lists of scalars joined by commas, lists of records counted."""
    value = plain(value)
    if value is None:
        return "-"
    if isinstance(value, list):
        if any(isinstance(item, dict | list) for item in value):
            return f"({len(value)})"
        return ",".join(map(str, value))
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


@contextmanager
def progress_bar(label: str, length: int | None) -> Iterator[Progress | None]:
    """A bar on stderr with size, percentage, rate and time left while a body of `length`
    bytes (None: unknown) is sent, when stderr is a terminal and the body is large or of
    unknown size; else no bar (None)."""
    if not sys.stderr.isatty() or (length is not None and length < PROGRESS_FROM):
        yield None
        return
    from tqdm import tqdm

    with tqdm(
        total=length, desc=label, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr
    ) as bar:

        def advance(sent: int, total: int | None) -> None:
            bar.update(sent - bar.n)

        yield advance
