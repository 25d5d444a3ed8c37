"""Ed25519's points of small order, derived here from the curve's equation, and their
encodings, canonical and not: the 8 × 8 "torsion" signatures (A and R each one of the eight
points, S = 0) and those with non-canonical encodings of A or R.

With A and R of small order and S = 0, the cofactorless equation [S]B = R + [k]A holds whenever
[k]A = -R, which for A = R = the identity is every message: a universal forgery for a verifier
that takes the public key from the signer. The derivation uses affine Edwards arithmetic
(RFC 8032, section 5.1.4) on Python integers; each point's order is checked by adding it to
itself, and libsodium's verification (through PyNaCl) refuses every case, which the tests check.
"""

from typing import NamedTuple

P = 2**255 - 19
D = -121665 * pow(121666, P - 2, P) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)

Point = tuple[int, int]
IDENTITY: Point = (0, 1)


def add(a: Point, b: Point) -> Point:
    (x1, y1), (x2, y2) = a, b
    t = D * x1 * x2 * y1 * y2 % P
    x3 = (x1 * y2 + x2 * y1) * pow(1 + t, P - 2, P)
    y3 = (y1 * y2 + x1 * x2) * pow(1 - t, P - 2, P)
    return x3 % P, y3 % P


def on_curve(point: Point) -> bool:
    x, y = point
    return (-x * x + y * y - 1 - D * x * x * y * y) % P == 0


def order(point: Point) -> int:
    """The order of a point of order at most 8."""
    multiple, n = point, 1
    while multiple != IDENTITY:
        multiple, n = add(multiple, point), n + 1
        assert n <= 8, "not of small order"
    return n


def sqrt(a: int) -> int | None:
    """A square root mod p (p = 5 mod 8), or None."""
    root = pow(a, (P + 3) // 8, P)
    if root * root % P != a % P:
        root = root * SQRT_M1 % P
    return root if root * root % P == a % P else None


def encode(x: int, y: int) -> bytes:
    """RFC 8032's encoding: y little-endian, the sign (parity) of x in the top bit; x and y
    need not be reduced, which makes the non-canonical encodings."""
    return (y | (x & 1) << 255).to_bytes(32, "little")


def _points() -> list[Point]:
    points = [IDENTITY, (0, P - 1), (SQRT_M1, 0), (P - SQRT_M1, 0)]
    # Order 8: 2P has y = 0, i.e. x² = -y², so d·y⁴ + 2y² - 1 = 0.
    root = sqrt(1 + D)
    assert root is not None
    for y2 in ((-1 + root) * pow(D, P - 2, P) % P, (-1 - root) * pow(D, P - 2, P) % P):
        y = sqrt(y2)
        if y is None:
            continue
        for y_ in (y, P - y):
            x = sqrt(-y_ * y_ % P)
            assert x is not None
            points += [(x, y_), (P - x, y_)]
    return points


SMALL_ORDER = _points()
assert len(set(SMALL_ORDER)) == 8 and all(on_curve(point) for point in SMALL_ORDER)
assert sorted(order(point) for point in SMALL_ORDER) == [1, 2, 4, 4, 8, 8, 8, 8]

CANONICAL = [encode(x, y) for x, y in SMALL_ORDER]
# The same points, encoded otherwise: x = 0 with its sign bit set ("-0"), and y + p where that
# is below 2^255 (y = 0 and y = 1 only), with either sign bit.
NON_CANONICAL = [
    encode(1, 1),
    encode(1, P - 1),
    encode(0, P + 1),
    encode(1, P + 1),
    encode(SQRT_M1, P),
    encode(P - SQRT_M1, P),
]
assert len(set(CANONICAL + NON_CANONICAL)) == 14


class Forgery(NamedTuple):
    id: str
    public_key: bytes
    signature: bytes


def _forgeries() -> list[Forgery]:
    encodings = [(f"c{i}", e) for i, e in enumerate(CANONICAL)]
    encodings += [(f"n{i}", e) for i, e in enumerate(NON_CANONICAL)]
    return [
        Forgery(f"A={a_id}-R={r_id}", a, r + bytes(32))
        for a_id, a in encodings
        for r_id, r in encodings
    ]


# A and R each one of the 14 encodings, S = 0: the 8 × 8 canonical cases and the 132 with a
# non-canonical A or R.
FORGERIES = _forgeries()
IDENTITY_FORGERY = FORGERIES[0]  # A and R the identity: valid for every message, cofactorless
