"""`covers`, which bounds what a token may give the tokens it makes: when it says one glob
covers another, every name the inner one matches, the outer one matches too."""

import fnmatch
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from app.store.patterns import covers

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
