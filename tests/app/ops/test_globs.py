"""The rules' compiled globs: what a check matches, and a cache bounded by what it holds."""

import random
import re
import string
import tracemalloc
import uuid

import pytest
from prometheus_client import REGISTRY

from app.ops import globs
from app.ops.globs import expression_bytes, glob_expression, matcher


def _cached(what: str) -> float:
    return REGISTRY.get_sample_value(f"cipherd_cache_{what}", {"cache": "key_patterns"}) or 0.0


def _misses() -> float:
    labels = {"cache": "key_patterns", "event": "miss"}
    return REGISTRY.get_sample_value("cipherd_cache_events_total", labels) or 0.0


def _letters(random_: random.Random, count: int) -> str:
    return "".join(random_.choices(string.ascii_letters, k=count))


def _rule(random_: random.Random, shape: str) -> tuple[str, ...]:
    """100 globs of 128 characters of one shape, each glob its own (so nothing is shared)."""
    make = {
        "letters": lambda: _letters(random_, 128),
        "stars": lambda: "".join(_letters(random_, 1) + "*" for _ in range(64)),
        "classes": lambda: "".join(f"[{_letters(random_, 2)}]" for _ in range(32)),
        "questions": lambda: "".join(_letters(random_, 1) + "?" for _ in range(64)),
    }[shape]
    return tuple(make() for _ in range(100))


@pytest.mark.parametrize("shape", ["letters", "stars", "classes", "questions"])
def test_the_estimate_is_above_what_an_expression_holds(shape: str) -> None:
    """The cache counts each rule by `expression_bytes`: it must not fall short of what the
    compiled expression holds, or the budget would not bound the memory."""
    random_ = random.Random(shape)
    rules = [_rule(random_, shape) for _ in range(2)]
    re.purge()
    tracemalloc.start()
    try:
        compiled = [glob_expression(rule) for rule in rules]
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(compiled) == 2
    assert held < sum(expression_bytes(rule) for rule in rules)
    assert held > sum(expression_bytes(rule) for rule in rules) / 8  # and not far above it


def test_a_check_matches_the_names_its_globs_match() -> None:
    rule = (f"{uuid.uuid4().hex}-*", "exact", "team-[ab]?")
    expression = matcher(rule)
    assert expression is matcher(rule)  # kept
    names = {f"{rule[0][:-1]}x": True, "exact": True, "exactly": False, "team-a1": True}
    names |= {"team-c1": False, "team-a12": False, "exact\n": False}
    for name, matches in names.items():
        assert (expression.match(name) is not None) is matches, name


def test_the_cache_holds_no_more_than_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rules of 100 globs of 128 characters, 3.5 times the budget's worth by the estimate: the
    cache keeps the latest within the budget, drops the oldest, and reports both; `re`'s own
    cache keeps none of them. Bounded by the count alone, 4,096 such rules would hold 0.5 GB."""
    budget = 2 << 20
    monkeypatch.setattr(globs, "MATCHER_BYTES", budget)
    random_ = random.Random(7)
    rules = [_rule(random_, "letters") for _ in range(20)]
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for rule in rules:
            matcher(rule)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held - before < budget
    assert _cached("bytes") <= budget
    kept = int(budget // expression_bytes(rules[0]))
    assert _cached("entries") == kept
    misses = _misses()
    matcher(rules[-1])  # among the latest: kept
    assert _misses() == misses
    matcher(rules[0])  # the oldest: dropped, compiled again
    assert _misses() == misses + 1
