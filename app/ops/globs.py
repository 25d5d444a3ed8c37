"""Key-name globs as compiled expressions, and the process's cache of a rule's, bounded in bytes.

A token's check matches the key's name against each of its rules; compiling a rule of 100 long
globs takes milliseconds, so each rule's expression is kept for the requests that follow. The
cache is bounded by what the compiled expressions hold, not only by their number: bounded by the
count alone, 4,096 rules of 100 globs of 128 characters would hold 0.5 GB (letters) to 1.6 GB
(globs of 64 stars), at the 128 and 397 KB a rule measured in `tests/app/ops/test_globs.py`.
"""

import fnmatch
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence

from app.server.metrics import CACHE_BYTES, CACHE_ENTRIES, CACHE_EVENTS

MAX_RULES_CACHED = 4_096
MATCHER_BYTES = 64 << 20
# What a compiled expression holds, measured with tracemalloc over many globs (CPython 3.11):
# at most about 1 KiB for the expression, and 0.5 KiB plus 32 bytes a character for each glob
# (the most, 3.9 KiB for 128 characters, by globs of 64 stars).
_EXPRESSION_BYTES = 1_024
_GLOB_BYTES = 512
_CHARACTER_BYTES = 32
_CACHE = "key_patterns"


def glob_expression(globs: Sequence[str]) -> re.Pattern[str]:
    """Globs as one expression: a check is one match, not one per glob. Policies of 40,000
    globs in all took 1.4 s a request, each glob matched alone (and fnmatch's own cache, of
    32,768, compiled them again each time).

    The expression is kept only where the caller keeps it: `re` holds the last 512 it compiled
    whatever their size (a rule of 100 long globs holds about 0.4 MB), so its cache is emptied."""
    expression = re.compile("|".join(fnmatch.translate(glob) for glob in globs))
    re.purge()
    return expression


def expression_bytes(globs: Sequence[str]) -> int:
    """An upper estimate of what `glob_expression(globs)` holds in memory."""
    return _EXPRESSION_BYTES + sum(_GLOB_BYTES + _CHARACTER_BYTES * len(glob) for glob in globs)


class _Matchers:
    """The least recently used rules' expressions, within MATCHER_BYTES and MAX_RULES_CACHED.

    A hit is a dictionary lookup and a move to the end, without the lock (each step is atomic):
    every request checks its token's rules here. The lock guards what a miss changes."""

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[str, ...], tuple[re.Pattern[str], int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._missed = CACHE_EVENTS.labels(_CACHE, "miss")

    def __call__(self, globs: tuple[str, ...]) -> re.Pattern[str]:
        entry = self._entries.get(globs)
        if entry is not None:
            # Not contextlib.suppress: it would triple the cost of a hit.
            try:  # noqa: SIM105
                self._entries.move_to_end(globs)
            except KeyError:  # dropped by another thread in between: the expression still holds
                pass
            return entry[0]
        return self._compile(globs)

    def _compile(self, globs: tuple[str, ...]) -> re.Pattern[str]:
        self._missed.inc()
        expression = glob_expression(globs)
        weight = expression_bytes(globs)
        with self._lock:
            old = self._entries.pop(globs, None)
            self._bytes += weight - (old[1] if old else 0)
            self._entries[globs] = (expression, weight)
            while self._bytes > MATCHER_BYTES or len(self._entries) > MAX_RULES_CACHED:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped
            CACHE_ENTRIES.labels(_CACHE).set(len(self._entries))
            CACHE_BYTES.labels(_CACHE).set(self._bytes)
        return expression


matcher = _Matchers()
