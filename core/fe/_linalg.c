/*
 * Compiled linear algebra for the FE schemes.
 *
 * Exact products of a function matrix of signed 64-bit entries with a vector of integers below
 * 2^256, for the quadratic schemes' key generation (s^T F t needs F·t). In Python each of the
 * n^2 entries costs a checked conversion and a big-integer product; here an entry is one
 * 64x256-bit multiply-accumulate into a signed 384-bit row sum. The checks match
 * `core.fe.linalg.inputs` (operator.index, signed 64-bit range): on anything else this returns
 * None and the caller takes its Python path, which raises the precise error.
 *
 * Inversion of a square matrix modulo an odd modulus below 2^256 (the group orders), for the
 * setup of bjk, tao and kim: an LU factorisation with row pivoting, the inverses of both
 * triangles, and their product, each entry computed as one dot product. The terms of a dot
 * product are full 512-bit products summed without reduction, and each sum is reduced once
 * (Montgomery, R = 2^320, so that a sum of up to 2^64 products stays below r·R); against
 * Gauss-Jordan with a reduction per update this halves the multiplications. The inverse and the
 * determinant of a matrix are unique, so the result is the same as any other exact method's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define T_LIMBS 4   /* 256-bit vector entries, little-endian 64-bit limbs */
#define ACC_LIMBS 6 /* signed 384-bit row sums: n < 2^62 keeps them in range */

typedef unsigned __int128 u128;

/* acc += sign * m * t, two's complement over ACC_LIMBS limbs. */
static void accumulate(uint64_t acc[ACC_LIMBS], const uint64_t t[T_LIMBS], uint64_t m, int negative)
{
    uint64_t product[T_LIMBS + 1];
    uint64_t carry = 0;
    for (int k = 0; k < T_LIMBS; k++) {
        u128 p = (u128)t[k] * m + carry;
        product[k] = (uint64_t)p;
        carry = (uint64_t)(p >> 64);
    }
    product[T_LIMBS] = carry;
    if (!negative) {
        u128 sum = 0;
        for (int k = 0; k < ACC_LIMBS; k++) {
            sum += (u128)acc[k] + (k <= T_LIMBS ? product[k] : 0);
            acc[k] = (uint64_t)sum;
            sum >>= 64;
        }
    } else {
        uint64_t borrow = 0;
        for (int k = 0; k < ACC_LIMBS; k++) {
            uint64_t sub = k <= T_LIMBS ? product[k] : 0;
            u128 diff = (u128)acc[k] - sub - borrow;
            acc[k] = (uint64_t)diff;
            borrow = (uint64_t)(diff >> 64) ? 1 : 0;
        }
    }
}

/* Check one row into a tuple of ints and add its products into acc; -1 on a bad entry. */
static int row_products(PyObject *row, Py_ssize_t n, const uint64_t *t, uint64_t acc[ACC_LIMBS],
                        PyObject **checked)
{
    PyObject *fast = PySequence_Fast(row, "a row of F must be a sequence");
    if (fast == NULL) {
        PyErr_Clear();
        return -1;
    }
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        Py_DECREF(fast);
        return -1;
    }
    PyObject *entries = PyTuple_New(n);
    if (entries == NULL) {
        Py_DECREF(fast);
        return -2;
    }
    PyObject **items = PySequence_Fast_ITEMS(fast);
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *value = PyNumber_Index(items[j]);
        if (value == NULL) {
            PyErr_Clear();
            Py_DECREF(entries);
            Py_DECREF(fast);
            return -1;
        }
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        PyTuple_SET_ITEM(entries, j, value);
        if (overflow) {
            Py_DECREF(entries);
            Py_DECREF(fast);
            return -1;
        }
        if (v != 0) {
            uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
            accumulate(acc, t + j * T_LIMBS, m, v < 0);
        }
    }
    Py_DECREF(fast);
    *checked = entries;
    return 0;
}

/* matrix_products(rows, n, t) -> (F as a tuple of int tuples, n row sums as 48-byte signed
 * little-endian integers concatenated) or None when any check fails. */
static PyObject *py_matrix_products(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *rows;
    Py_ssize_t n;
    Py_buffer t;
    if (!PyArg_ParseTuple(args, "Ony*", &rows, &n, &t))
        return NULL;
    PyObject *result = NULL, *fast = NULL, *matrix = NULL, *sums = NULL;
    if (n < 1 || n > ((Py_ssize_t)1 << 40) || t.len != n * T_LIMBS * 8) {
        PyErr_SetString(PyExc_ValueError, "t must hold n entries of 32 bytes");
        goto done;
    }
    fast = PySequence_Fast(rows, "F must be a sequence of rows");
    if (fast == NULL || PySequence_Fast_GET_SIZE(fast) != n) {
        PyErr_Clear();
        result = Py_NewRef(Py_None);
        goto done;
    }
    matrix = PyTuple_New(n);
    sums = PyBytes_FromStringAndSize(NULL, n * ACC_LIMBS * 8);
    if (matrix == NULL || sums == NULL)
        goto done;
    const uint64_t *limbs = (const uint64_t *)t.buf;
    char *out = PyBytes_AS_STRING(sums);
    PyObject **items = PySequence_Fast_ITEMS(fast);
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t acc[ACC_LIMBS] = {0};
        PyObject *entries = NULL;
        int status = row_products(items[i], n, limbs, acc, &entries);
        if (status == -2)
            goto done;
        if (status == -1) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        PyTuple_SET_ITEM(matrix, i, entries);
        memcpy(out + i * ACC_LIMBS * 8, acc, sizeof acc);
    }
    result = PyTuple_Pack(2, matrix, sums);
done:
    Py_XDECREF(matrix);
    Py_XDECREF(sums);
    Py_XDECREF(fast);
    PyBuffer_Release(&t);
    return result;
}

/* ---- Arithmetic modulo an odd r < 2^256, Montgomery form with R = 2^320 ---- */

#define R_LIMBS 4
#define WIDE_LIMBS 10 /* a reduced sum: below r * 2^320 < 2^576, with room for the carries */

typedef struct {
    uint64_t r[R_LIMBS];
    uint64_t n0;             /* -r^-1 mod 2^64 */
    uint64_t one[R_LIMBS];   /* R mod r */
    uint64_t r2[R_LIMBS];    /* R^2 mod r */
} modulus;

static int geq(const uint64_t *a, const uint64_t *b) {
    for (int k = R_LIMBS - 1; k >= 0; k--) {
        if (a[k] != b[k])
            return a[k] > b[k];
    }
    return 1;
}

static uint64_t sub_in_place(uint64_t *a, const uint64_t *b) {
    uint64_t borrow = 0;
    for (int k = 0; k < R_LIMBS; k++) {
        u128 d = (u128)a[k] - b[k] - borrow;
        a[k] = (uint64_t)d;
        borrow = (uint64_t)(d >> 64) ? 1 : 0;
    }
    return borrow;
}

/* c = a - b mod r for reduced a, b. */
static void mod_sub(const modulus *md, uint64_t *c, const uint64_t *a, const uint64_t *b) {
    uint64_t t[R_LIMBS];
    memcpy(t, a, sizeof t);
    if (sub_in_place(t, b)) {
        uint64_t carry = 0;
        for (int k = 0; k < R_LIMBS; k++) {
            u128 s = (u128)t[k] + md->r[k] + carry;
            t[k] = (uint64_t)s;
            carry = (uint64_t)(s >> 64);
        }
    }
    memcpy(c, t, sizeof t);
}

/* out = t / 2^320 mod r for t < r * 2^320 (t is clobbered). */
static void redc(const modulus *md, uint64_t *out, uint64_t t[WIDE_LIMBS]) {
    for (int i = 0; i < 5; i++) {
        uint64_t q = t[i] * md->n0;
        uint64_t carry = 0;
        for (int k = 0; k < R_LIMBS; k++) {
            u128 s = (u128)q * md->r[k] + t[i + k] + carry;
            t[i + k] = (uint64_t)s;
            carry = (uint64_t)(s >> 64);
        }
        for (int k = i + R_LIMBS; k < WIDE_LIMBS && carry; k++) {
            u128 s = (u128)t[k] + carry;
            t[k] = (uint64_t)s;
            carry = (uint64_t)(s >> 64);
        }
    }
    /* t[5..9] < 2r < 2^257 */
    if (t[9] || geq(t + 5, md->r))
        sub_in_place(t + 5, md->r);
    memcpy(out, t + 5, R_LIMBS * 8);
}

/*
 * out = sum a[i] * b[i] over len entries (Montgomery forms in, Montgomery form out). Each limb
 * product's halves are added into 128-bit column sums (no carry chain between columns, which
 * would serialise the additions); the columns are combined once, then reduced once.
 */
static void dot(const modulus *md, uint64_t *out, const uint64_t *a, const uint64_t *b,
                Py_ssize_t len) {
    u128 col[2 * R_LIMBS] = {0};
    for (Py_ssize_t t = 0; t < len; t++) {
        const uint64_t *x = a + t * R_LIMBS, *y = b + t * R_LIMBS;
        for (int i = 0; i < R_LIMBS; i++) {
            for (int j = 0; j < R_LIMBS; j++) {
                u128 p = (u128)x[i] * y[j];
                col[i + j] += (uint64_t)p;
                col[i + j + 1] += (uint64_t)(p >> 64);
            }
        }
    }
    uint64_t acc[WIDE_LIMBS];
    u128 carry = 0;
    for (int k = 0; k < 2 * R_LIMBS; k++) {
        carry += col[k];
        acc[k] = (uint64_t)carry;
        carry >>= 64;
    }
    acc[2 * R_LIMBS] = (uint64_t)carry;
    acc[2 * R_LIMBS + 1] = (uint64_t)(carry >> 64);
    redc(md, out, acc);
}

static void mont_mul(const modulus *md, uint64_t *c, const uint64_t *a, const uint64_t *b) {
    dot(md, c, a, b, 1);
}

/* c = a^(r - 2) = a^-1 for a != 0 (Montgomery forms). */
static void mont_inv(const modulus *md, uint64_t *c, const uint64_t *a) {
    uint64_t e[R_LIMBS], acc[R_LIMBS];
    const uint64_t two[R_LIMBS] = {2, 0, 0, 0};
    memcpy(e, md->r, sizeof e);
    sub_in_place(e, two);
    memcpy(acc, md->one, sizeof acc);
    for (int bit = 64 * R_LIMBS - 1; bit >= 0; bit--) {
        mont_mul(md, acc, acc, acc);
        if ((e[bit / 64] >> (bit % 64)) & 1)
            mont_mul(md, acc, acc, a);
    }
    memcpy(c, acc, sizeof acc);
}

static int is_zero(const uint64_t *a) {
    return (a[0] | a[1] | a[2] | a[3]) == 0;
}

/* Set up the constants of an odd r above 2; 0 when r is not such a modulus. */
static int modulus_init(modulus *md, const uint64_t *r) {
    memcpy(md->r, r, R_LIMBS * 8);
    const uint64_t three[R_LIMBS] = {3, 0, 0, 0};
    if (!(md->r[0] & 1) || !geq(md->r, three))
        return 0;
    uint64_t inv = 1;
    for (int i = 0; i < 7; i++)
        inv *= 2 - md->r[0] * inv;
    md->n0 = (uint64_t)0 - inv;
    /* 2^k mod r by doubling, for k = 320 (one) and then on to 640 (r2). */
    uint64_t x[R_LIMBS] = {1, 0, 0, 0};
    for (int k = 1; k <= 640; k++) {
        uint64_t top = x[R_LIMBS - 1] >> 63;
        for (int j = R_LIMBS - 1; j > 0; j--)
            x[j] = (x[j] << 1) | (x[j - 1] >> 63);
        x[0] <<= 1;
        if (top || geq(x, md->r))
            sub_in_place(x, md->r);
        if (k == 320)
            memcpy(md->one, x, sizeof x);
    }
    memcpy(md->r2, x, sizeof x);
    return 1;
}

/*
 * inv = a^-1 and *det = det a for an m x m matrix a (row-major Montgomery forms, overwritten);
 * returns 0 when a is singular. P a = L U with unit lower L and upper U (the pivot of column k
 * is the first nonzero candidate), then a^-1 = U^-1 L^-1 P. Every entry of L, U, L^-1, U^-1
 * and their product is one dot product over contiguous rows, hence the transposed copies.
 */
static int invert_lu(const modulus *md, uint64_t *a, Py_ssize_t m, uint64_t *inv, uint64_t *det) {
#define AT(base, i, j) ((base) + ((size_t)(i) * (size_t)m + (size_t)(j)) * R_LIMBS)
    size_t cells = (size_t)m * (size_t)m * R_LIMBS;
    uint64_t *ut = malloc(cells * 8), *xt = malloc(cells * 8), *y = malloc(cells * 8);
    uint64_t *pivot_inv = malloc((size_t)m * R_LIMBS * 8);
    Py_ssize_t *perm = malloc((size_t)m * sizeof *perm);
    uint64_t s[R_LIMBS];
    int swaps = 0, ok = 0;
    if (ut == NULL || xt == NULL || y == NULL || pivot_inv == NULL || perm == NULL)
        goto done;
    memcpy(det, md->one, R_LIMBS * 8);
    for (Py_ssize_t i = 0; i < m; i++)
        perm[i] = i;
    for (Py_ssize_t k = 0; k < m; k++) {
        Py_ssize_t p = -1;
        for (Py_ssize_t i = k; i < m; i++) {
            dot(md, s, AT(a, i, 0), AT(ut, k, 0), k);
            mod_sub(md, AT(a, i, k), AT(a, i, k), s);
            if (p < 0 && !is_zero(AT(a, i, k)))
                p = i;
        }
        if (p < 0) {
            ok = -1;
            goto done;
        }
        if (p != k) {
            for (Py_ssize_t j = 0; j < m; j++) {
                uint64_t t[R_LIMBS];
                memcpy(t, AT(a, k, j), sizeof t);
                memcpy(AT(a, k, j), AT(a, p, j), sizeof t);
                memcpy(AT(a, p, j), t, sizeof t);
            }
            Py_ssize_t t = perm[k];
            perm[k] = perm[p];
            perm[p] = t;
            swaps ^= 1;
        }
        memcpy(AT(ut, k, k), AT(a, k, k), R_LIMBS * 8);
        mont_mul(md, det, det, AT(a, k, k));
        mont_inv(md, pivot_inv + k * R_LIMBS, AT(a, k, k));
        for (Py_ssize_t j = k + 1; j < m; j++) {
            dot(md, s, AT(a, k, 0), AT(ut, j, 0), k);
            mod_sub(md, AT(a, k, j), AT(a, k, j), s);
            memcpy(AT(ut, j, k), AT(a, k, j), R_LIMBS * 8);
        }
        for (Py_ssize_t i = k + 1; i < m; i++)
            mont_mul(md, AT(a, i, k), AT(a, i, k), pivot_inv + k * R_LIMBS);
    }
    const uint64_t zero[R_LIMBS] = {0};
    /* X = L^-1, stored transposed: xt[j][i] = X[i][j] for i >= j. */
    for (Py_ssize_t j = 0; j < m; j++) {
        memcpy(AT(xt, j, j), md->one, R_LIMBS * 8);
        for (Py_ssize_t i = j + 1; i < m; i++) {
            dot(md, s, AT(a, i, j), AT(xt, j, j), i - j);
            mod_sub(md, AT(xt, j, i), zero, s);
        }
    }
    /* Y = U^-1 column by column (into ut, no longer needed), then row-major into y. */
    for (Py_ssize_t j = 0; j < m; j++) {
        memcpy(AT(ut, j, j), pivot_inv + j * R_LIMBS, R_LIMBS * 8);
        for (Py_ssize_t i = j - 1; i >= 0; i--) {
            dot(md, s, AT(a, i, i + 1), AT(ut, j, i + 1), j - i);
            mod_sub(md, s, zero, s);
            mont_mul(md, AT(ut, j, i), s, pivot_inv + i * R_LIMBS);
        }
        for (Py_ssize_t i = 0; i <= j; i++)
            memcpy(AT(y, i, j), AT(ut, j, i), R_LIMBS * 8);
    }
    /* a^-1[i][perm[k]] = (Y X)[i][k], a sum over c >= max(i, k). */
    for (Py_ssize_t i = 0; i < m; i++) {
        for (Py_ssize_t k = 0; k < m; k++) {
            Py_ssize_t from = i > k ? i : k;
            dot(md, AT(inv, i, perm[k]), AT(y, i, from), AT(xt, k, from), m - from);
        }
    }
    if (swaps)
        mod_sub(md, det, zero, det);
    ok = 1;
done:
    free(ut);
    free(xt);
    free(y);
    free(pivot_inv);
    free(perm);
    return ok;
#undef AT
}

static PyObject *limbs_to_int(const uint64_t *limbs) {
    return _PyLong_FromByteArray((const unsigned char *)limbs, R_LIMBS * 8, 1, 0);
}

/* A non-negative int below 2^256 into limbs; -1 with an exception set otherwise. */
static int int_to_limbs(PyObject *v, uint64_t *limbs) {
    if (!PyLong_Check(v)) {
        PyErr_SetString(PyExc_TypeError, "entries must be ints");
        return -1;
    }
#if PY_VERSION_HEX >= 0x030D0000
    return _PyLong_AsByteArray((PyLongObject *)v, (unsigned char *)limbs, R_LIMBS * 8, 1, 0, 1);
#else
    return _PyLong_AsByteArray((PyLongObject *)v, (unsigned char *)limbs, R_LIMBS * 8, 1, 0);
#endif
}

static int read_modulus(PyObject *r, modulus *md) {
    uint64_t limbs[R_LIMBS];
    if (int_to_limbs(r, limbs) < 0 || !modulus_init(md, limbs)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "the modulus must be an odd int in (2, 2^256)");
        return 0;
    }
    return 1;
}

/* invert(rows, r, dual=False, scale=1, by_det=False) -> (inverse as a tuple of int tuples,
 * det) or None when singular, for an m x m matrix of ints in [0, r). With dual, the transpose of
 * the inverse; every entry multiplied by scale (an int in [0, r)) and, with by_det, by det: the
 * dual bases of bjk, tao and kim without a pass over the matrix in Python. */
static PyObject *py_invert(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *rows_in, *r, *scale_in = NULL, *fast = NULL, *result = NULL;
    uint64_t *a = NULL, *inv = NULL, scale[R_LIMBS] = {1, 0, 0, 0};
    int dual = 0, by_det = 0;
    modulus md;
    if (!PyArg_ParseTuple(args, "OO|pOp", &rows_in, &r, &dual, &scale_in, &by_det) ||
        !read_modulus(r, &md))
        return NULL;
    if (scale_in != NULL && (int_to_limbs(scale_in, scale) < 0 || geq(scale, md.r))) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "scale must be an int in [0, r)");
        return NULL;
    }
    fast = PySequence_Fast(rows_in, "the matrix must be a sequence of rows");
    if (fast == NULL)
        return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(fast);
    if (m < 1 || m > (1 << 14)) {
        PyErr_SetString(PyExc_ValueError, "the matrix must have 1 to 2^14 rows");
        goto done;
    }
    size_t cells = (size_t)m * (size_t)m * R_LIMBS;
    a = malloc(cells * 8);
    inv = malloc(cells * 8);
    if (a == NULL || inv == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *row = PySequence_Fast(PySequence_Fast_GET_ITEM(fast, i), "rows must be sequences");
        if (row == NULL)
            goto done;
        int bad = PySequence_Fast_GET_SIZE(row) != m;
        for (Py_ssize_t j = 0; !bad && j < m; j++) {
            uint64_t *cell = a + ((size_t)i * (size_t)m + (size_t)j) * R_LIMBS;
            bad = int_to_limbs(PySequence_Fast_GET_ITEM(row, j), cell) < 0 || geq(cell, md.r);
        }
        Py_DECREF(row);
        if (bad) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "the matrix must be square, of ints in [0, r)");
            goto done;
        }
    }
    uint64_t det[R_LIMBS];
    int ok;
    Py_BEGIN_ALLOW_THREADS
    for (size_t c = 0; c < cells; c += R_LIMBS)
        mont_mul(&md, a + c, a + c, md.r2);
    ok = invert_lu(&md, a, m, inv, det);
    if (ok == 1) {
        /* A Montgomery form times a plain factor is the plain product. */
        const uint64_t one[R_LIMBS] = {1, 0, 0, 0};
        uint64_t factor[R_LIMBS];
        if (by_det)
            mont_mul(&md, factor, det, scale);
        else
            memcpy(factor, scale, sizeof factor);
        for (size_t c = 0; c < cells; c += R_LIMBS)
            mont_mul(&md, inv + c, inv + c, factor);
        mont_mul(&md, det, det, one);
    }
    Py_END_ALLOW_THREADS
    if (ok == 0) {
        PyErr_NoMemory();
        goto done;
    }
    if (ok < 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *rows = PyTuple_New(m);
    if (rows == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *row = PyTuple_New(m);
        if (row == NULL) {
            Py_DECREF(rows);
            goto done;
        }
        PyTuple_SET_ITEM(rows, i, row);
        for (Py_ssize_t j = 0; j < m; j++) {
            size_t at = dual ? (size_t)j * (size_t)m + (size_t)i : (size_t)i * (size_t)m + (size_t)j;
            PyObject *v = limbs_to_int(inv + at * R_LIMBS);
            if (v == NULL) {
                Py_DECREF(rows);
                goto done;
            }
            PyTuple_SET_ITEM(row, j, v);
        }
    }
    PyObject *d = limbs_to_int(det);
    if (d == NULL) {
        Py_DECREF(rows);
        goto done;
    }
    result = PyTuple_Pack(2, rows, d);
    Py_DECREF(rows);
    Py_DECREF(d);
done:
    free(a);
    free(inv);
    Py_XDECREF(fast);
    return result;
}

/* sample(data, r) -> the ints below r among data's 32-byte little-endian words, each masked
 * to the bit length of r (rejection sampling: uniform in [0, r) for uniform data). */
static PyObject *py_sample(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data;
    PyObject *r, *out = NULL;
    modulus md;
    if (!PyArg_ParseTuple(args, "y*O", &data, &r))
        return NULL;
    if (!read_modulus(r, &md))
        goto done;
    int top = R_LIMBS - 1;
    while (md.r[top] == 0)
        top--;
    uint64_t mask = ~(uint64_t)0 >> __builtin_clzll(md.r[top]);
    out = PyList_New(0);
    for (Py_ssize_t at = 0; out != NULL && at + R_LIMBS * 8 <= data.len; at += R_LIMBS * 8) {
        uint64_t v[R_LIMBS];
        memcpy(v, (const char *)data.buf + at, sizeof v);
        for (int k = top + 1; k < R_LIMBS; k++)
            v[k] = 0;
        v[top] &= mask;
        if (geq(v, md.r))
            continue;
        PyObject *x = limbs_to_int(v);
        if (x == NULL || PyList_Append(out, x) < 0)
            Py_CLEAR(out);
        Py_XDECREF(x);
    }
done:
    PyBuffer_Release(&data);
    return out;
}

/* A signed int with |v| < 2^256 as its sign and magnitude; -1 with an exception otherwise. */
static int signed_to_limbs(PyObject *v, uint64_t *limbs, int *negative) {
    if (!PyLong_Check(v)) {
        PyErr_SetString(PyExc_TypeError, "coefficients must be ints");
        return -1;
    }
    *negative = _PyLong_Sign(v) < 0;
    if (!*negative)
        return int_to_limbs(v, limbs);
    PyObject *magnitude = PyNumber_Negative(v);
    if (magnitude == NULL)
        return -1;
    int status = int_to_limbs(magnitude, limbs);
    Py_DECREF(magnitude);
    return status;
}

/* t mod r for t < r * 2^320 (t clobbered): REDC gives t / 2^320, a product with R^2 undoes it. */
static void reduce_plain(const modulus *md, uint64_t *out, uint64_t t[WIDE_LIMBS]) {
    redc(md, out, t);
    mont_mul(md, out, out, md->r2);
}

/* The WIDE_LIMBS integer of 2 * R_LIMBS 128-bit column sums. */
static void combine_columns(uint64_t acc[WIDE_LIMBS], const u128 *col) {
    u128 carry = 0;
    for (int k = 0; k < 2 * R_LIMBS; k++) {
        carry += col[k];
        acc[k] = (uint64_t)carry;
        carry >>= 64;
    }
    acc[2 * R_LIMBS] = (uint64_t)carry;
    acc[2 * R_LIMBS + 1] = (uint64_t)(carry >> 64);
}

/* vec_mat(matrix, cols, v, r) -> v·M mod r as a list of cols ints. matrix: rows * cols reduced
 * 32-byte little-endian entries, row by row; v: rows signed ints with |v_i| < 2^256. Every
 * column's positive and negative terms are summed unreduced (a small coefficient costs one
 * limb product per matrix limb), then reduced once each. */
static PyObject *py_vec_mat(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer matrix;
    Py_ssize_t cols;
    PyObject *v, *r, *fast = NULL, *out = NULL;
    u128 *sums = NULL;
    modulus md;
    if (!PyArg_ParseTuple(args, "y*nOO", &matrix, &cols, &v, &r))
        return NULL;
    if (!read_modulus(r, &md))
        goto done;
    fast = PySequence_Fast(v, "v must be a sequence");
    if (fast == NULL)
        goto done;
    Py_ssize_t rows = PySequence_Fast_GET_SIZE(fast);
    if (cols < 1 || rows > (1 << 16) || matrix.len != rows * cols * R_LIMBS * 8) {
        PyErr_SetString(PyExc_ValueError, "the matrix must hold len(v) * cols entries of 32 bytes");
        goto done;
    }
    /* per column: 2 * R_LIMBS sums of positive terms, then as many of negative ones */
    size_t width = 4 * R_LIMBS;
    sums = calloc((size_t)cols * width, sizeof *sums);
    if (sums == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const uint64_t *m = matrix.buf;
    for (Py_ssize_t i = 0; i < rows; i++) {
        uint64_t c[R_LIMBS];
        int negative;
        if (signed_to_limbs(PySequence_Fast_GET_ITEM(fast, i), c, &negative) < 0) {
            if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
                PyErr_Clear();
                PyErr_SetString(PyExc_ValueError, "coefficients must lie in (-2^256, 2^256)");
            }
            goto done;
        }
        int used = R_LIMBS;
        while (used > 0 && c[used - 1] == 0)
            used--;
        if (used == 0)
            continue;
        const uint64_t *row = m + (size_t)i * (size_t)cols * R_LIMBS;
        for (Py_ssize_t j = 0; j < cols; j++) {
            u128 *col = sums + (size_t)j * width + (negative ? 2 * R_LIMBS : 0);
            const uint64_t *e = row + (size_t)j * R_LIMBS;
            for (int a = 0; a < used; a++) {
                for (int b = 0; b < R_LIMBS; b++) {
                    u128 p = (u128)c[a] * e[b];
                    col[a + b] += (uint64_t)p;
                    col[a + b + 1] += (uint64_t)(p >> 64);
                }
            }
        }
    }
    out = PyList_New(cols);
    for (Py_ssize_t j = 0; out != NULL && j < cols; j++) {
        uint64_t t[WIDE_LIMBS], pos[R_LIMBS], neg[R_LIMBS];
        combine_columns(t, sums + (size_t)j * width);
        reduce_plain(&md, pos, t);
        combine_columns(t, sums + (size_t)j * width + 2 * R_LIMBS);
        reduce_plain(&md, neg, t);
        mod_sub(&md, pos, pos, neg);
        PyObject *x = limbs_to_int(pos);
        if (x == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, j, x);
    }
done:
    free(sums);
    Py_XDECREF(fast);
    PyBuffer_Release(&matrix);
    return out;
}

static PyMethodDef methods[] = {
    {"matrix_products", py_matrix_products, METH_VARARGS,
     "Check an n x n matrix of signed 64-bit ints and give its exact products with a vector."},
    {"invert", py_invert, METH_VARARGS, "Inverse and determinant of a square matrix mod r."},
    {"sample", py_sample, METH_VARARGS, "The words of random bytes that lie below r."},
    {"vec_mat", py_vec_mat, METH_VARARGS, "A vector times a fixed matrix mod r."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_linalg", "Compiled linear algebra for the FE schemes.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__linalg(void) { return PyModule_Create(&module); }
