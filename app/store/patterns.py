"""Token scopes (fnmatch globs over key names) as the stores' own matching, so that a key
listing filters in the database: a narrow token pages through a large store without the service
reading every row past its page.

A glob is read as `*`, `?`, bracket sets `[abc]`, `[a-z]`, `[!abc]` whose members are characters
of key names, and literal characters; anything else (a `[` without such a set) is a literal.
Patterns of that form match exactly as `fnmatch.fnmatchcase` does, which stays the access
decision: a token issued before patterns were checked can only see fewer keys listed, never more.
"""

import re
from collections.abc import Callable, Iterator, Sequence

_SET = re.compile(r"\[(!?)([A-Za-z0-9._-]+)\]")


def _parts(glob: str) -> Iterator[tuple[str, str]]:
    """("any" | "one" | "set" | "not-set" | "literal", text) for each piece of `glob`."""
    i = 0
    while i < len(glob):
        char = glob[i]
        bracket = _SET.match(glob, i) if char == "[" else None
        if bracket is not None:
            yield ("not-set" if bracket[1] else "set"), bracket[2]
            i = bracket.end()
            continue
        yield {"*": "any", "?": "one"}.get(char, "literal"), char
        i += 1


def sqlite_glob(glob: str) -> str:
    """The pattern for SQLite's GLOB operator (case-sensitive, `[^...]` for a negated set)."""
    rendered: dict[str, Callable[[str], str]] = {
        "any": lambda _: "*",
        "one": lambda _: "?",
        "set": lambda members: f"[{members}]",
        "not-set": lambda members: f"[^{members}]",
        "literal": lambda char: f"[{char}]" if char in "*?[" else char,
    }
    return "".join(rendered[kind](text) for kind, text in _parts(glob))


def postgres_regex(globs: Sequence[str]) -> str:
    """One anchored regular expression for PostgreSQL's `~` operator matching any of `globs`.

    One, not one per glob: PostgreSQL keeps only a few compiled expressions per session, and a
    token of many patterns made it compile them afresh for every row (bench/README.md).
    """
    rendered: dict[str, Callable[[str], str]] = {
        "any": lambda _: ".*",
        "one": lambda _: ".",
        "set": lambda members: f"[{members}]",
        "not-set": lambda members: f"[^{members}]",
        "literal": lambda char: char if char.isalnum() else f"\\{char}",
    }
    alternatives = ("".join(rendered[kind](text) for kind, text in _parts(g)) for g in globs)
    return "^(" + "|".join(alternatives) + ")$"
