"""`covers`, which bounds what a token may give the tokens it makes: when it says one glob
covers another, every name the inner one matches, the outer one matches too; and the regular
expressions a token's globs are matched by on PostgreSQL."""

import fnmatch
import itertools
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from app.store.patterns import covers, parse, postgres_regexes

# Names over a small alphabet, every one up to five characters: enough for the parts to meet.
ALPHABET = "ab-"
NAMES = ["".join(chars) for n in range(6) for chars in itertools.product(ALPHABET, repeat=n)]
PART = st.sampled_from(["a", "b", "-", "*", "?", "[ab]", "[!a]", "[a-b]", "[-a]"])
GLOB = st.lists(PART, max_size=5).map("".join)


@settings(max_examples=400, deadline=None)
@given(outer=GLOB, inner=GLOB)
def test_a_cover_is_proof(outer: str, inner: str) -> None:
    if covers(outer, inner):
        assert all(fnmatch.fnmatchcase(n, outer) for n in NAMES if fnmatch.fnmatchcase(n, inner))


def test_the_covers_a_scope_is_narrowed_by() -> None:
    for outer, inner in (
        ("*", "orders-*"),
        ("orders-*", "orders-eu"),
        ("orders-*", "orders-*"),
        ("orders-*", "orders-eu-*"),
        ("orders-?", "orders-[ab]"),
        ("a*b", "a*x*b"),
        ("[!x]*", "y*"),
        ("[a-c]", "b"),
    ):
        assert covers(outer, inner), (outer, inner)


def test_what_is_wider_or_beside_is_not_covered() -> None:
    for outer, inner in (
        ("orders-*", "*"),
        ("orders-*", "order*"),
        ("orders-[ab]", "orders-?"),
        ("[!x]*", "?*"),
        ("k", "k*"),
        ("x", "y"),
        ("a[", "a"),  # outside the grammar: never a cover
    ):
        assert not covers(outer, inner), (outer, inner)


def test_many_globs_are_packed_into_regexes_of_bounded_size_that_match_the_same() -> None:
    globs = ["a*", "b?", "[!ab]-x", "ab", "-", "?b*", "x" * 120, "[a-b]*-", "a-b-*", "*--"]
    parsed = [parse(glob) for glob in globs]
    (whole,) = postgres_regexes(parsed, 10**6)
    for most_chars in (1, 20, 40, 100, 200):
        regexes = postgres_regexes(parsed, most_chars)
        # In order, each as long as it may be: the alternatives, one after another, are all.
        alternatives = [a for regex in regexes for a in regex[2:-2].split("|")]
        assert "^(" + "|".join(alternatives) + ")$" == whole
        for regex, following in itertools.zip_longest(regexes, regexes[1:]):
            assert len(regex) <= most_chars or "|" not in regex, (most_chars, regex)
            if following is not None:
                first = following[2:-2].split("|")[0]
                assert len(regex) + len(first) + 1 > most_chars
        for name in [*NAMES, "x" * 120, "a-b-c", "b--"]:
            wanted = any(fnmatch.fnmatchcase(name, glob) for glob in globs)
            assert any(re.match(regex, name) for regex in regexes) == wanted, (most_chars, name)
    assert postgres_regexes([], 100) == []
