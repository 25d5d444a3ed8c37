"""Vectors and matrices mod r, and the input checks the schemes share."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import ShapeError
from core.fe import _mcl, linalg
from core.fe.group import ORDER

BN254_ORDER = _mcl.ORDER


def test_inverse_needs_a_pivot_swap() -> None:
    m = [[0, 2], [3, 0]]
    inverted = linalg.invert(m)
    assert inverted is not None
    inv, det = inverted
    assert det == -6 % ORDER
    assert linalg.mat_vec(inv, linalg.mat_vec(m, [5, 7])) == [5, 7]


def test_singular_matrix_has_no_inverse() -> None:
    assert linalg.invert([[1, 2], [2, 4]]) is None
    assert linalg.invert([[0, 0], [0, 0]]) is None


def test_random_invertible_inverse_and_determinant() -> None:
    m, inv, det = linalg.random_invertible(6, random.Random(1))
    identity = [linalg.vec_mat(row, inv) for row in m]
    assert identity == [[int(i == j) for j in range(6)] for i in range(6)]
    # det(M)·det(M⁻¹) = 1, and the 1×1 case is the entry itself.
    assert det * linalg.invert(inv)[1] % ORDER == 1
    assert linalg.invert([[7]]) == (((pow(7, -1, ORDER),),), 7)


def test_determinant_of_a_permutation_with_scaling() -> None:
    # Rows (0,0,3), (0,2,0), (1,0,0): one swap, det = −6.
    assert linalg.invert([[0, 0, 3], [0, 2, 0], [1, 0, 0]])[1] == -6 % ORDER


def test_vector_operations() -> None:
    assert linalg.dot([1, 2, 3], [4, 5, -6]) == -4 % ORDER
    assert linalg.add([ORDER - 1, 2], [1, 3]) == [0, 5]
    assert linalg.scale([1, -1], 3) == [3, ORDER - 3]
    assert linalg.vec_mat([1, 2], [[1, 2, 3], [4, 5, 6]]) == [9, 12, 15]
    assert linalg.mat_vec([[1, 2, 3], [4, 5, 6]], [1, 0, -1]) == [ORDER - 2, ORDER - 2]
    assert linalg.transpose([[1, 2, 3], [4, 5, 6]]) == ((1, 4), (2, 5), (3, 6))
    assert linalg.scale_matrix([[1, 2]], -1) == ((ORDER - 1, ORDER - 2),)
    # Signed, unreduced coefficients and zero rows give the reduced product.
    assert linalg.vec_mat([-1, 0, ORDER + 2], [[1, 2], [7, 7], [3, 4]]) == [5, 6]
    assert linalg.vec_mat([0, 0], [[1, 2], [3, 4]]) == [0, 0]


@pytest.mark.parametrize(
    "op",
    [
        lambda: linalg.dot([1, 2], [1, 2, 3]),
        lambda: linalg.add([1, 2, 3], [1, 2]),
        lambda: linalg.vec_mat([1, 2, 3], [[1, 2], [3, 4]]),
        lambda: linalg.vec_mat([1, 2], [[1, 2], [3]]),
        lambda: linalg.mat_vec([[1, 2], [3, 4]], [1, 2, 3]),
        lambda: linalg.invert([[1, 2], [3]]),
        lambda: linalg.invert([[1, 2, 3], [4, 5, 6]]),
    ],
    ids=["dot", "add", "vec_mat", "vec_mat ragged", "mat_vec", "ragged", "not square"],
)
def test_length_mismatches_raise(op: Callable[[], object]) -> None:
    # ShapeError for a wrong length, ValueError (strict zip) for ragged rows.
    with pytest.raises(ValueError):
        op()


def test_input_checks() -> None:
    assert linalg.inputs([-(2**63), 2**63 - 1], 2) == [-(2**63), 2**63 - 1]
    with pytest.raises(ShapeError) as err:
        linalg.inputs([1, 2, 3], 2)
    assert (err.value.expected, err.value.actual) == (2, 3)
    with pytest.raises(ValueError, match="64-bit"):
        linalg.check_i64(2**63)
    with pytest.raises(TypeError):
        linalg.check_i64("1")  # type: ignore[arg-type]
    assert linalg.check_dimension(True) == 1
    with pytest.raises(ShapeError):
        linalg.check_dimension(0)
    with pytest.raises(TypeError):
        linalg.check_dimension(2.0)  # type: ignore[arg-type]
    linalg.same_dimension(3, 3)
    with pytest.raises(ShapeError):
        linalg.same_dimension(3, 4)


def test_function_matrix_checks_rows_then_each_row() -> None:
    assert linalg.function_matrix([[1, -2], [3, 4]], 2) == ((1, -2), (3, 4))
    with pytest.raises(ShapeError) as err:
        linalg.function_matrix([[1, 2, 3]], 2)
    assert (err.value.expected, err.value.actual) == (2, 1)
    with pytest.raises(ShapeError) as err:
        linalg.function_matrix([[1, 2], [3]], 2)
    assert (err.value.expected, err.value.actual) == (2, 1)


def test_random_vector_uses_the_given_rng() -> None:
    a = linalg.random_vector(3, random.Random(9))
    assert a == linalg.random_vector(3, random.Random(9))
    assert all(0 <= v < ORDER for v in a)
    assert len(set(linalg.random_vector(4))) == 4


def test_packed_matrix_agrees_with_plain_products(products_path: str) -> None:
    rng = random.Random(4)
    m = [[rng.randrange(ORDER) for _ in range(7)] for _ in range(5)]
    m[2] = [ORDER - 1] * 7
    packed = linalg.PackedMatrix(m)
    vectors = [
        [rng.randrange(ORDER) for _ in range(5)],
        [-(2**63), 2**63 - 1, 0, -1, 1],
        [ORDER - 1] * 5,
        [0] * 5,
        [ORDER * 3 + 2, -ORDER * 5, 2**300, -(2**255), 7],  # reduced before packing
    ]
    for v in vectors:
        assert packed.vec_mul(v) == linalg.vec_mat(v, m)
    with pytest.raises(ShapeError):
        packed.vec_mul([1, 2, 3])
    # 32-byte limbs compiled; in Python, rows of 67-byte slots whose top slot holds < 32 bytes
    low, high = (35 * 32, 35 * 32) if products_path == "compiled" else (5 * 6 * 67, 5 * 7 * 67)
    assert low <= packed.nbytes <= high


@settings(max_examples=100, deadline=None)
@given(data=st.data(), rows=st.integers(1, 8), cols=st.integers(1, 8))
def test_compiled_vector_products_match_python(data: st.DataObject, rows: int, cols: int) -> None:
    entry = st.one_of(st.sampled_from([0, 1, ORDER - 1]), st.integers(0, ORDER - 1))
    m = [data.draw(st.lists(entry, min_size=cols, max_size=cols)) for _ in range(rows)]
    coefficient = st.one_of(
        st.sampled_from([0, 1, -1, 2**64, -(2**64), 2**255 - 1, -(2**255) + 1]),
        st.integers(-(2**63), 2**63),
        st.integers(-(2**300), 2**300),
    )
    v = data.draw(st.lists(coefficient, min_size=rows, max_size=rows))
    assert linalg.PackedMatrix(m).vec_mul(v) == linalg.vec_mat(v, m)


def test_compiled_vector_products_refuse_bad_input() -> None:
    compiled = linalg._compiled
    assert compiled is not None
    one = (1).to_bytes(32, "little")
    with pytest.raises(ValueError, match="entries"):
        compiled.vec_mat(one, 2, [1], ORDER)
    with pytest.raises(ValueError, match="entries"):
        compiled.vec_mat(one, 0, [], ORDER)
    with pytest.raises(ValueError, match="2\\^256"):
        compiled.vec_mat(one, 1, [2**256], ORDER)
    with pytest.raises(TypeError):
        compiled.vec_mat(one, 1, [1.0], ORDER)
    with pytest.raises(ValueError, match="modulus"):
        compiled.vec_mat(one, 1, [1], 4)
    assert compiled.vec_mat(one, 1, [-(2**256) + 1], ORDER) == [(-(2**256) + 1) % ORDER]


def test_packed_matrix_bounds() -> None:
    with pytest.raises(ValueError, match="rows"):
        linalg.PackedMatrix([])
    with pytest.raises(ValueError, match="rows"):
        linalg.PackedMatrix([[0]] * (linalg.PackedMatrix.MAX_ROWS + 1))
    with pytest.raises(ShapeError):
        linalg.PackedMatrix([[1, 2], [3]])


@pytest.fixture(params=["compiled", "python"])
def products_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run `function_products` through its compiled path and through its Python path."""
    if request.param == "python":
        monkeypatch.setattr(linalg, "_compiled", None)
    else:
        assert linalg._compiled is not None
    return request.param


def test_function_products_are_exact(products_path: str) -> None:
    rng = random.Random(11)
    edges = [-(2**63), 2**63 - 1, -1, 0, 1, True]
    for _ in range(200):
        n = rng.randint(1, 9)
        v = [rng.choice([rng.randrange(2**256), 2**256 - 1, 0]) for _ in range(n)]
        f = [
            [rng.choice([rng.randint(-(2**63), 2**63 - 1), rng.choice(edges)]) for _ in range(n)]
            for _ in range(n)
        ]
        matrix, products = linalg.function_products(f, n, v)
        assert matrix == tuple(tuple(int(x) for x in row) for row in f)
        assert products == [sum(int(a) * b for a, b in zip(row, v, strict=True)) for row in f]


@pytest.mark.parametrize(
    ("f", "error"),
    [
        ([[1, 2], [3, 4], [5, 6]], ShapeError),  # three rows
        ([[1, 2], [3]], ShapeError),  # a short row
        ([[1, 2], [3, 4, 5]], ShapeError),  # a long row
        ([[1, 2.5], [3, 4]], TypeError),  # not an integer
        ([[1, "2"], [3, 4]], TypeError),
        ([[1, 2], [3, 2**63]], ValueError),  # outside signed 64-bit
        ([[1, 2], [-(2**63) - 1, 4]], ValueError),
        ([[1, 2], 7], TypeError),  # a row that is not a sequence
        (5, TypeError),
    ],
)
def test_function_products_refuse_what_function_matrix_refuses(
    products_path: str, f: object, error: type[Exception]
) -> None:
    with pytest.raises(error):
        linalg.function_products(f, 2, [3, 4])  # type: ignore[arg-type]


def test_function_products_need_a_vector_of_length_n() -> None:
    with pytest.raises(ShapeError):
        linalg.function_products([[1, 2], [3, 4]], 2, [1, 2, 3])


ORDERS = [ORDER, BN254_ORDER]
_ENTRY = st.one_of(st.sampled_from([0, 1, 2, ORDER - 1]), st.integers(0, 2**256 - 1))


@st.composite
def _square_matrices(draw: st.DrawFn) -> list[list[int]]:
    """Square matrices with edge entries, some made singular by a repeated or zero row."""
    size = draw(st.integers(1, 9))
    m = [[draw(_ENTRY) for _ in range(size)] for _ in range(size)]
    if size > 1 and draw(st.booleans()):
        i, j = draw(st.integers(0, size - 1)), draw(st.integers(0, size - 1))
        m[i] = list(m[j]) if i != j else [0] * size
    return m


@settings(max_examples=300, deadline=None)
@given(m=_square_matrices(), order=st.sampled_from(ORDERS))
def test_compiled_inverse_matches_elimination(m: list[list[int]], order: int) -> None:
    zr = linalg.Zr(order)
    assert zr.invert(m) == zr.invert_by_elimination(m)


@pytest.mark.parametrize("order", ORDERS)
def test_compiled_inverse_of_setup_sizes(order: int) -> None:
    zr = linalg.Zr(order)
    rng = random.Random(order)
    m, inv, det = zr.random_invertible(40, rng)
    assert zr.invert_by_elimination(m) == (inv, det)
    # At bjk's size for n = 100: M·M⁻¹ = I, and det(M)·det(M⁻¹) = 1.
    m, inv, det = zr.random_invertible(204, rng)
    packed = linalg.PackedMatrix(inv, order)
    assert [packed.vec_mul(row) for row in m] == [
        [int(i == j) for j in range(204)] for i in range(204)
    ]
    assert det * zr.invert(inv)[1] % order == 1  # type: ignore[index]


def test_compiled_inverse_refuses_bad_input() -> None:
    compiled = linalg._compiled
    assert compiled is not None
    for bad in ([[ORDER]], [[-1]], [[1.0]], [[1, 2], [3]], [[1, 2]], []):
        with pytest.raises(ValueError):
            compiled.invert(bad, ORDER)
    for modulus in (ORDER + 1, 1, -ORDER, 2**256 + 1, "7"):
        with pytest.raises(ValueError, match="modulus"):
            compiled.invert([[1]], modulus)
    # Zr.invert reduces what the compiled module would refuse.
    assert linalg.invert([[ORDER + 7, -1], [0, 2 * ORDER + 1]]) == linalg.Zr(
        ORDER
    ).invert_by_elimination([[7, ORDER - 1], [0, 1]])


@pytest.mark.parametrize("order", ORDERS)
def test_sample_keeps_the_masked_words_below_r(order: int) -> None:
    compiled = linalg._compiled
    assert compiled is not None
    bits = order.bit_length()
    words = [order - 1, order, 0, 2**bits - 1, (1 << 256) - 1, order + (1 << bits), (1 << bits) | 3]
    data = b"".join(w.to_bytes(32, "little") for w in words) + b"\x01" * 31  # a partial word
    # Masked to `bits` bits: order + 2^bits becomes order (refused), 2^bits + 3 becomes 3.
    assert compiled.sample(data, order) == [order - 1, 0, 3]


@pytest.mark.parametrize("order", ORDERS)
def test_random_vector_from_the_os_is_uniform_looking(order: int) -> None:
    values = linalg.Zr(order).random_vector(4000)
    assert len(values) == 4000 and len(set(values)) == 4000
    assert all(0 <= v < order for v in values)
    # About half of the draws lie below r / 2 (six standard deviations either side).
    half = order // 2
    assert 1800 < sum(v < half for v in values) < 2200


def test_python_paths(products_path: str) -> None:
    """invert and random_vector where the extension is missing (products_path patches it)."""
    zr = linalg.Zr(ORDER)
    m = [[0, 2], [3, 0]]
    assert zr.invert(m) == zr.invert_by_elimination(m)
    values = zr.random_vector(50)
    assert len(set(values)) == 50 and all(0 <= v < ORDER for v in values)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("size", [1, 2, 5, 17])
def test_dual_basis_is_the_scaled_transposed_inverse(
    products_path: str, order: int, size: int
) -> None:
    zr = linalg.Zr(order)
    m, inv, det = zr.random_invertible(size, random.Random(size))
    for scale, by_det in ((1, False), (order - 3, False), (7, True), (0, True)):
        b, dual, det2 = zr.random_dual_basis(size, random.Random(size), scale, by_det)
        factor = scale * det if by_det else scale
        assert (b, det2) == (m, det)  # the same draws
        assert dual == zr.scale_matrix(linalg.transpose(inv), factor)


def test_dual_basis_refuses_a_bad_scale() -> None:
    compiled = linalg._compiled
    assert compiled is not None
    for scale in (ORDER, -1, 1.5):
        with pytest.raises(ValueError, match="scale"):
            compiled.invert([[1]], ORDER, True, scale, False)
