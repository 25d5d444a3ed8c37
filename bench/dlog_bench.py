"""Benchmark of the FE group layer: discrete-log tables and the batched pairing primitives.

Prints two Markdown tables: DlogTable build time, memory and lookup time per range, and the
median time of each primitive next to the same work done one element at a time with
petrelic's plain operators. Run: `.venv/bin/python bench/dlog_bench.py [--repeat N]`.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from petrelic.multiplicative.pairing import G1, G2, GT

from core.fe import group
from core.fe.dlog import DlogTable

R = group.ORDER
RANGES = [(0, 10**4), (-(10**6), 10**6), (0, 10**8)]


def median_time(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of `fn` in seconds, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def dlog_rows(rng: random.Random, lookups: int) -> list[str]:
    gt = group.gt_generator()
    rows = [
        "| range | baby steps | build | memory | lookup (median) |",
        "|---|---:|---:|---:|---:|",
    ]
    for lo, hi in RANGES:
        start = time.perf_counter()
        table = DlogTable(gt, lo, hi)
        build = time.perf_counter() - start
        xs = [rng.randint(lo, hi) for _ in range(lookups)]
        with group.LOCK:
            targets = [gt ** (x % R) for x in xs]
        times = []
        for x, t in zip(xs, targets, strict=True):
            start = time.perf_counter()
            found = table.find(t)
            times.append(time.perf_counter() - start)
            assert found == x
        rows.append(
            f"| [{lo}, {hi}] | {table.baby_steps} | {fmt(build)} | "
            f"{table.nbytes / 2**20:.2f} MiB | {fmt(statistics.median(times))} |"
        )
    return rows


def primitive_rows(rng: random.Random, repeat: int) -> list[str]:
    def scalars(n: int) -> list[int]:
        return [rng.randrange(R) for _ in range(n)]

    def small(n: int) -> list[int]:
        return [rng.choice([-1, 0, 1, 2, -2]) for _ in range(n)]

    g1s = group.g1_gen_mul(scalars(100))
    g2s = group.g2_gen_mul(scalars(100))
    prepared = {k: group.prepare_g2(g2s[:k]) for k in (10, 100)}
    big, tiny = scalars(100), small(100)

    def naive_pairs(k: int) -> Callable[[], object]:
        def run() -> object:
            with group.LOCK:
                acc = GT.neutral_element()
                for a, b in zip(g1s[:k], g2s[:k], strict=True):
                    acc = acc * a.pair(b)
                return acc

        return run

    def naive_msm(points: list, ks: list[int], neutral: Callable[[], object]) -> Callable:
        def run() -> object:
            with group.LOCK:
                acc = neutral()
                for p, s in zip(points, ks, strict=True):
                    acc = acc * p ** (s % R)
                return acc

        return run

    def naive_gen(gen: Callable[[], object], ks: list[int]) -> Callable[[], object]:
        def run() -> object:
            with group.LOCK:
                g = gen()
                return [g ** (s % R) for s in ks]

        return run

    cases: list[tuple[str, Callable[[], object], Callable[[], object] | None, int]] = [
        ("pairing (1 pair)", lambda: group.pair(g1s[:1], g2s[:1]), naive_pairs(1), 1),
        ("multi-pairing k=10", lambda: group.pair(g1s[:10], g2s[:10]), naive_pairs(10), 1),
        ("multi-pairing k=10, prepared", lambda: group.pair(g1s[:10], prepared[10]), None, 1),
        ("multi-pairing k=100", lambda: group.pair(g1s, g2s), naive_pairs(100), 1),
        ("multi-pairing k=100, prepared", lambda: group.pair(g1s, prepared[100]), None, 1),
        ("prepare_g2, 10 points", lambda: group.prepare_g2(g2s[:10]), None, 1),
        (
            "MSM G1 n=100, 255-bit",
            lambda: group.g1_msm(g1s, big),
            naive_msm(g1s, big, G1.neutral_element),
            1,
        ),
        (
            "MSM G1 n=100, small (|s| ≤ 2)",
            lambda: group.g1_msm(g1s, tiny),
            naive_msm(g1s, tiny, G1.neutral_element),
            1,
        ),
        (
            "MSM G2 n=100, 255-bit",
            lambda: group.g2_msm(g2s, big),
            naive_msm(g2s, big, G2.neutral_element),
            1,
        ),
        (
            "MSM G2 n=100, small (|s| ≤ 2)",
            lambda: group.g2_msm(g2s, tiny),
            naive_msm(g2s, tiny, G2.neutral_element),
            1,
        ),
        (
            "fixed-base G1, per scalar (batch 100)",
            lambda: group.g1_gen_mul(big),
            naive_gen(G1.generator, big),
            100,
        ),
        (
            "fixed-base G2, per scalar (batch 100)",
            lambda: group.g2_gen_mul(big),
            naive_gen(G2.generator, big),
            100,
        ),
        (
            "one G1 point × 100 scalars, per scalar",
            lambda: group.g1_mul(g1s[7], big),
            naive_gen(lambda: g1s[7], big),
            100,
        ),
    ]
    rows = ["| operation | group layer | petrelic one at a time |", "|---|---:|---:|"]
    for name, fast, naive, per in cases:
        t_fast = median_time(fast, repeat) / per
        t_naive = fmt(median_time(naive, repeat) / per) if naive is not None else "–"
        rows.append(f"| {name} | {fmt(t_fast)} | {t_naive} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="timed runs per primitive")
    parser.add_argument("--lookups", type=int, default=50, help="lookups per dlog range")
    args = parser.parse_args()
    rng = random.Random(2024)
    compiled = "compiled prepared pairing" if group._relic.pairing_ext else "no compiled module"
    print(f"### DlogTable (base gT, {compiled})\n")
    print("\n".join(dlog_rows(rng, args.lookups)))
    print("\n### Primitives (BLS12-381, medians)\n")
    print("\n".join(primitive_rows(rng, args.repeat)))


if __name__ == "__main__":
    main()
