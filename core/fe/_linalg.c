/*
 * Exact products of a function matrix of signed 64-bit entries with a vector of integers below
 * 2^256, for the quadratic schemes' key generation (s^T F t needs F·t).
 *
 * In Python each of the n^2 entries costs a checked conversion and a big-integer product; here
 * an entry is one 64x256-bit multiply-accumulate into a signed 384-bit row sum. The checks match
 * `core.fe.linalg.inputs` (operator.index, signed 64-bit range): on anything else this returns
 * None and the caller takes its Python path, which raises the precise error.
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

static PyMethodDef methods[] = {
    {"matrix_products", py_matrix_products, METH_VARARGS,
     "Check an n x n matrix of signed 64-bit ints and give its exact products with a vector."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_linalg", "Exact integer matrix products for FE key generation.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__linalg(void) { return PyModule_Create(&module); }
