"""E(p, F, q) = Πⱼ e(Πᵢ pᵢ^{Fᵢⱼ}, qⱼ), the bilinear form both quadratic schemes decrypt with.

The inner products are multi-scalar multiplications with the function's small entries as
scalars; a negative entry is applied to the negated point, so that every scalar stays a small
non-negative integer (the case the group layer's MSM is fast for).
"""

from __future__ import annotations

from collections.abc import Sequence

from petrelic.multiplicative.pairing import G1Element

from core.fe import group
from core.fe.linalg import Matrix


def columns(grp: group.Curve, points: Sequence[G1Element], f: Matrix) -> list[G1Element]:
    """Πᵢ pᵢ^{Fᵢⱼ} for every column j of F."""
    negated = grp.g1_neg(points)
    out = []
    for column in zip(*f, strict=True):
        terms = [(points[i], e) if e > 0 else (negated[i], -e) for i, e in enumerate(column) if e]
        out.append(grp.g1_msm([p for p, _ in terms], [e for _, e in terms]))
    return out
