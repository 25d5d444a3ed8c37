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
    `params`), up to the one whose `text` brings them to PAGE_BYTES; and whether rows follow
    them. The database weighs the rows first, which costs a tenth of reading them, and counts
    one row past the page (so that row is never read); it lists their weights only when they
    weigh more: it never ships more than the page."""
    weight = dialect.byte_length.format(text)
    cursor.execute(
        f"SELECT sum(weight), count(*) FROM (SELECT {weight} AS weight {source} LIMIT ?) AS page",
        [*params, limit + 1],
    )
    total, found = cursor.fetchone() or (None, 0)
    more = found > limit
    if total is not None and total >= PAGE_BYTES:
        cursor.execute(f"SELECT {weight} {source} LIMIT ?", [*params, limit])
        weights = cursor.fetchall()
        running = 0
        for count, (size,) in enumerate(weights, 1):
            running += size
            if running >= PAGE_BYTES:
                more, limit = more or count < len(weights), count
                break
    cursor.execute(f"SELECT {columns} {source} LIMIT ?", [*params, limit])
    return cursor.fetchall(), more
