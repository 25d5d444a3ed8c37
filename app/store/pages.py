"""Reads of stored text that end at a weight: an audit record's details and a released FE
function can each weigh megabytes (a quadratic key's matrix at n = 128 is some 350 KB of JSON,
and an FE keygen's audit record names its functions), so a page of them, or a window of a chain
being verified, is bounded by the bytes it holds as well as by its count."""

from collections.abc import Sequence
from typing import Any

from app.store.database import Cursor, Dialect

# What one read holds at most, in bytes of its weighed text, the row that crosses it included.
PAGE_BYTES = 4 << 20


def read_weighed(
    cursor: Cursor,
    dialect: Dialect,
    columns: str,
    text: str,
    source: str,
    params: Sequence[Any],
    limit: int,
) -> tuple[Sequence[tuple[Any, ...]], bool]:
    """The first `limit` rows of `SELECT columns source` (its table, conditions and order, with
    `params`), up to the one whose `text` brings them to PAGE_BYTES; and whether that weight
    cut them short of rows that follow. The database weighs the rows first, which costs a
    tenth of reading them, and lists their weights only when they weigh more: it never ships
    more than the page."""
    weight = dialect.byte_length.format(text)
    cursor.execute(
        f"SELECT sum(weight) FROM (SELECT {weight} AS weight {source} LIMIT ?) AS page",
        [*params, limit],
    )
    row = cursor.fetchone()
    cut = False
    if row is not None and row[0] is not None and row[0] >= PAGE_BYTES:
        cursor.execute(f"SELECT {weight} {source} LIMIT ?", [*params, limit])
        weights = cursor.fetchall()
        running = 0
        for count, (size,) in enumerate(weights, 1):
            running += size
            if running >= PAGE_BYTES:
                cut, limit = count < len(weights), count
                break
    cursor.execute(f"SELECT {columns} {source} LIMIT ?", [*params, limit])
    return cursor.fetchall(), cut
