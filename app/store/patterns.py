"""Token scopes (globs over key names): one grammar, from which both stores' matching is built, so
that a key listing filters in the database and a pattern that is accepted works on both.

The grammar: `*` (any run of characters), `?` (one character), a bracket set `[...]` or its
negation `[!...]` whose members are key-name characters and ranges `x-y` of letters or digits
with x at most y (a `-` of its own only as the set's first or last member), and key-name
characters standing for themselves. Nothing else: a `[` that opens no such set, a range such as
`[z-a]` or `[a-z-9]`, or a character no key name has is refused when a token is created, where
PostgreSQL's regular expressions would otherwise refuse it at every listing. Patterns of this
form match exactly as `fnmatch.fnmatchcase` does, which stays the access decision. A stored
pattern outside the grammar (a token issued before it was checked) lists no key.
"""

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

# The characters of key names (app.ops.keys.KEY_NAME_PATTERN).
NAME_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
# The most wildcards (`*`, `?` and sets) one pattern may have: each multiplies the work of
# matching it against every name.
MAX_WILDCARDS = 16

_SET = re.compile(r"\[(!?)([^\]]*)\]")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


class PatternError(ValueError):
    """A glob outside the grammar; the message says what is wrong with it."""


@dataclass(frozen=True)
class Part:
    """One piece of a glob: "any" (`*`), "one" (`?`), "literal" (`chars` is the character) or
    "set" (`ranges` are its members as (first, last) pairs, `negated` for `[!...]`)."""

    kind: str
    chars: str = ""
    ranges: tuple[tuple[str, str], ...] = ()
    negated: bool = False


GlobParts = tuple[Part, ...]


def _members(glob: str, text: str) -> tuple[tuple[str, str], ...]:
    if not text:
        raise PatternError(f"{glob!r}: an empty set []")
    ranges = []
    i = 0
    while i < len(text):
        first = text[i]
        if first not in NAME_CHARACTERS:
            raise PatternError(f"{glob!r}: {first!r} in a set is no key-name character")
        if first == "-" and 0 < i < len(text) - 1:
            raise PatternError(
                f"{glob!r}: a '-' in a set must be its first or last member, or join a range"
            )
        if first != "-" and i + 2 < len(text) and text[i + 1] == "-":
            last = text[i + 2]
            if first not in _ALNUM or last not in _ALNUM:
                raise PatternError(f"{glob!r}: a range {first}-{last} must join letters or digits")
            if first > last:
                raise PatternError(f"{glob!r}: the range {first}-{last} is empty")
            ranges.append((first, last))
            i += 3
        else:
            ranges.append((first, first))
            i += 1
    return tuple(ranges)


@functools.lru_cache(maxsize=4096)
def parse(glob: str) -> GlobParts:
    """The parts of `glob`, or `PatternError` if it is outside the grammar (kept for the globs
    used most: a token's are parsed again for each listing and each scope it gives)."""
    parts: list[Part] = []
    i = 0
    while i < len(glob):
        char = glob[i]
        if char == "[":
            bracket = _SET.match(glob, i)
            if bracket is None:
                raise PatternError(f"{glob!r}: a '[' that no ']' closes")
            parts.append(Part("set", ranges=_members(glob, bracket[2]), negated=bool(bracket[1])))
            i = bracket.end()
            continue
        if char == "*":
            parts.append(Part("any"))
        elif char == "?":
            parts.append(Part("one"))
        elif char in NAME_CHARACTERS:
            parts.append(Part("literal", char))
        else:
            raise PatternError(f"{glob!r}: {char!r} is neither a wildcard nor a key-name character")
        i += 1
    wildcards = sum(part.kind != "literal" for part in parts)
    if wildcards > MAX_WILDCARDS:
        raise PatternError(f"{glob!r}: {wildcards} wildcards, where at most {MAX_WILDCARDS} are")
    return tuple(parts)


@functools.lru_cache(maxsize=1024)  # few distinct parts, asked for at every step of `covers`
def _characters(part: Part) -> frozenset[str]:
    """The key-name characters a one-character part (literal, `?` or set) matches."""
    if part.kind == "literal":
        return frozenset(part.chars)
    if part.kind == "one":
        return NAME_CHARACTERS
    inside = frozenset(c for c in NAME_CHARACTERS for a, b in part.ranges if a <= c <= b)
    return NAME_CHARACTERS - inside if part.negated else inside


def covers(outer: str, inner: str) -> bool:
    """Whether every key name `inner` matches, `outer` matches too. Sound, not complete: a
    `*` of `outer` may take any run of `inner`'s parts, any other part of `outer` one part of
    `inner` whose characters it all takes; a True is proof, a False may be too cautious (either
    glob outside the grammar: False)."""
    try:
        big, small = parse(outer), parse(inner)
    except PatternError:
        return False

    @functools.cache
    def match(i: int, j: int) -> bool:  # small[i:] within big[j:]
        if j == len(big):
            return i == len(small)
        if big[j].kind == "any":
            return match(i, j + 1) or (i < len(small) and match(i + 1, j))
        return (
            i < len(small)
            and small[i].kind != "any"
            and _characters(small[i]) <= _characters(big[j])
            and match(i + 1, j + 1)
        )

    return match(0, 0)


def usable(globs: Iterable[str]) -> list[GlobParts]:
    """The parts of each glob within the grammar; a stored one outside it matches nothing."""
    parsed = []
    for glob in globs:
        try:
            parsed.append(parse(glob))
        except PatternError:
            continue
    return parsed


def prefix_globs(prefixes: Iterable[str]) -> list[GlobParts]:
    """Globs of the names that start with one of `prefixes` (each taken literally); none for a
    prefix with a character no key name has, as no name starts with it."""
    return [
        (*(Part("literal", char) for char in prefix), Part("any"))
        for prefix in prefixes
        if NAME_CHARACTERS.issuperset(prefix)
    ]


# Where an operation of a token reaches, as a listing asks the store to filter by it: groups of
# key-name globs, each with the name prefixes it excludes (a Transit mount's rule: the other
# mounts' keys); a name is reached when one group's globs match it and it starts with none of
# that group's prefixes.
Scope = Sequence[tuple[Sequence[str], Sequence[str]]]


def _render(
    parts: GlobParts, any_: str, one: str, negation: str, escape: Callable[[str], str]
) -> str:
    out = []
    for part in parts:
        if part.kind == "any":
            out.append(any_)
        elif part.kind == "one":
            out.append(one)
        elif part.kind == "literal":
            out.append(escape(part.chars))
        else:
            # A lone '-' goes first, where every dialect reads it as itself.
            members = sorted(part.ranges, key=lambda r: r != ("-", "-"))
            inner = "".join(escape(a) if a == b else f"{a}-{b}" for a, b in members)
            out.append(f"[{negation if part.negated else ''}{inner}]")
    return "".join(out)


def _glob_literal(char: str) -> str:
    return char  # no key-name character is special to GLOB outside a set


def _regex_literal(char: str) -> str:
    return char if char in _ALNUM else f"\\{char}"


def sqlite_glob(parts: GlobParts) -> str:
    """The pattern for SQLite's GLOB operator (case-sensitive, `[^...]` for a negated set)."""
    return _render(parts, "*", "?", "^", _glob_literal)


def postgres_regexes(globs: Sequence[GlobParts], most_chars: int) -> list[str]:
    """As few anchored regular expressions as match what `globs` match between them, each of at
    most `most_chars` characters (but for a glob longer than that on its own), the globs in
    order. As few: PostgreSQL keeps only a few compiled expressions per session, and a token of
    many patterns, one expression each, made it compile them afresh for every row
    (docs/performance/choices.md). Bounded: it refuses an expression of some hundred thousand
    characters as too complex (10,000 patterns of 120 characters: after 36 s), and matches a
    smaller one faster."""
    regexes: list[str] = []
    alternatives: list[str] = []
    chars = 0
    for glob in globs:
        alternative = _regex_alternative(glob)
        if alternatives and len(_ANCHORS) + chars + len(alternative) > most_chars:
            regexes.append(_anchored(alternatives))
            alternatives, chars = [], 0
        alternatives.append(alternative)
        chars += len(alternative) + len("|")
    if alternatives:
        regexes.append(_anchored(alternatives))
    return regexes


_ANCHORS = "^()$"


def _regex_alternative(glob: GlobParts) -> str:
    return _render(glob, ".*", ".", "^", _regex_literal)


def _anchored(alternatives: Sequence[str]) -> str:
    return "^(" + "|".join(alternatives) + ")$"
