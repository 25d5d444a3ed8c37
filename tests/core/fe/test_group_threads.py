"""RELIC has one global context: concurrent callers must still get only correct results."""

from __future__ import annotations

import random
import threading

from core.fe import group
from core.fe.dlog import DlogTable

R = group.ORDER


def test_eight_threads_pairings_dlogs_and_decoding() -> None:
    table = DlogTable(group.gt_generator(), -500, 500)
    errors: list[str] = []
    start = threading.Barrier(8)

    def work(seed: int) -> None:
        rng = random.Random(seed)
        start.wait()
        for _ in range(6):
            a = [rng.randrange(-20, 21) for _ in range(4)]
            b = [rng.randrange(-5, 6) for _ in range(4)]
            g1s = group.g1_gen_mul(a)
            g2s = group.g2_gen_mul(b)
            expected = sum(x * y for x, y in zip(a, b, strict=True))
            e = group.pair(g1s, g2s) if seed % 2 else group.pair(g1s, group.prepare_g2(g2s))
            got = table.find(e)
            if got != expected:
                errors.append(f"thread {seed}: {got} != {expected}")
            msm = group.g1_msm(g1s, b)
            if group.g1_to_bytes(msm) != group.g1_to_bytes(group.g1_gen_mul([expected])[0]):
                errors.append(f"thread {seed}: msm mismatch")
            if group.dlog(group.gt_generator(), e, -500, 500) != expected:
                errors.append(f"thread {seed}: dlog mismatch")
            run = b"".join(group.g2_to_bytes(q) for q in g2s)
            if group.g2_vector_from_bytes(run, len(g2s)) != g2s:
                errors.append(f"thread {seed}: G2 decoding mismatch")
            if [group.g1_from_bytes(group.g1_to_bytes(p)) for p in g1s] != g1s:
                errors.append(f"thread {seed}: G1 decoding mismatch")

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
