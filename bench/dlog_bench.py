"""Benchmark of the FE group layer: discrete-log tables, batched primitives, point decoding.

Prints three Markdown tables: DlogTable build time, memory and lookup time per range; the
median time of each primitive next to the same work done one element at a time with
petrelic's plain operators; and validated point decoding by the compiled decoder next to the
pure-Python path (RELIC's reader, re-encoding, petrelic's `is_valid`), per point and for whole
opt keys and ciphertexts. Run: `.venv/bin/python bench/dlog_bench.py [--repeat N]`.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from petrelic.multiplicative.pairing import G1, G2, GT

from core.fe import _relic, encoding, group
from core.fe.dlog import DlogTable
from core.fe.ipfe import opt

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


def _without_compiled(fn: Callable[[], object]) -> Callable[[], object]:
    """`fn` run on the pure-Python decoding path (the compiled module set aside)."""

    def run() -> object:
        ext, _relic.pairing_ext = _relic.pairing_ext, None
        try:
            return fn()
        finally:
            _relic.pairing_ext = ext

    return run


def decode_rows(rng: random.Random, repeat: int) -> list[str]:
    g1s = group.g1_gen_mul([rng.randrange(R) for _ in range(100)])
    g2s = group.g2_gen_mul([rng.randrange(R) for _ in range(100)])
    b1, b2 = group.g1_to_bytes(g1s[0]), group.g2_to_bytes(g2s[0])
    run1 = b"".join(group.g1_to_bytes(p) for p in g1s)
    run2 = b"".join(group.g2_to_bytes(q) for q in g2s)
    ext = _relic.pairing_ext
    buf1 = _relic.ffi.buffer(g1s[0].pt, _relic.G1_POINT_SIZE)
    buf2 = _relic.ffi.buffer(g2s[0].pt, _relic.G2_POINT_SIZE)

    def is_valid(point: object) -> Callable[[], object]:
        def run() -> object:
            with group.LOCK:
                return point.is_valid()  # type: ignore[attr-defined]

        return run

    def endomorphism(kind: int, buf: object) -> Callable[[], object]:
        def run() -> object:
            with group.LOCK:
                return ext.in_subgroup(kind, buf)

        return run

    cases: list[tuple[str, Callable[[], object], Callable[[], object] | None, int]] = [
        ("subgroup test G1", endomorphism(1, buf1), is_valid(g1s[0]), 1),
        ("subgroup test G2", endomorphism(2, buf2), is_valid(g2s[0]), 1),
        ("decode G1 per point (one call per point)", lambda: group.g1_from_bytes(b1), None, 1),
        ("decode G2 per point (one call per point)", lambda: group.g2_from_bytes(b2), None, 1),
        (
            "decode G1 per point (runs of 100)",
            lambda: group.g1_vector_from_bytes(run1, 100),
            None,
            100,
        ),
        (
            "decode G2 per point (runs of 100)",
            lambda: group.g2_vector_from_bytes(run2, 100),
            None,
            100,
        ),
    ]
    for n in (10, 100):
        msk = opt.setup(n, rng)
        ct = opt.encrypt(msk, [rng.randrange(-100, 100) for _ in range(n)], rng).to_bytes()
        sk = opt.keygen(msk, [rng.randrange(-100, 100) for _ in range(n)], rng).to_bytes()
        cases += [
            (
                f"opt.Ciphertext.from_bytes, n = {n}",
                lambda ct=ct: opt.Ciphertext.from_bytes(ct),
                None,
                1,
            ),
            (f"opt.Key.from_bytes, n = {n}", lambda sk=sk: opt.Key.from_bytes(sk), None, 1),
            (
                f"the same {n + 4} G1 points as one run",
                lambda ct=ct, n=n: group.g1_vector_from_bytes(
                    ct, n + 4, offset=encoding.HEADER_BYTES
                ),
                None,
                1,
            ),
            (
                f"the same {n + 4} G2 points as one run",
                lambda sk=sk, n=n: group.g2_vector_from_bytes(
                    sk, n + 4, offset=encoding.HEADER_BYTES
                ),
                None,
                1,
            ),
        ]
    rows = ["| operation | compiled decoder | pure-Python path |", "|---|---:|---:|"]
    for name, fast, slow, per in cases:
        slow = slow or _without_compiled(fast)
        t_fast = fmt(median_time(fast, repeat) / per)
        t_slow = fmt(median_time(slow, repeat) / per)
        rows.append(f"| {name} | {t_fast} | {t_slow} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="timed runs per primitive")
    parser.add_argument("--lookups", type=int, default=50, help="lookups per dlog range")
    parser.add_argument("--decode-only", action="store_true", help="only the decoding table")
    args = parser.parse_args()
    rng = random.Random(2024)
    if args.decode_only:
        print("\n".join(decode_rows(rng, args.repeat)))
        return
    compiled = "compiled prepared pairing" if group._relic.pairing_ext else "no compiled module"
    print(f"### DlogTable (base gT, {compiled})\n")
    print("\n".join(dlog_rows(rng, args.lookups)))
    print("\n### Primitives (BLS12-381, medians)\n")
    print("\n".join(primitive_rows(rng, args.repeat)))
    if group._relic.pairing_ext is not None:
        print("\n### Validated point decoding (medians)\n")
        print("\n".join(decode_rows(rng, args.repeat)))


if __name__ == "__main__":
    main()
