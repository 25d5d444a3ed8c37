/*
 * Prepared pairings over the RELIC library bundled in petrelic (BLS12-381).
 *
 * A product of pairings e(P_j, Q_j) with fixed Q_j spends most of its Miller loop on the G2
 * side: doubling and adding the running point T_j and deriving each line's coefficients. Those
 * depend on Q_j only, so `prepare` runs them once and stores every line; `pair` then evaluates
 * the stored lines at each P_j (a few base-field multiplications per line), multiplies them
 * into one accumulator exactly as RELIC's own multi-pairing does, and applies one final
 * exponentiation. The result is identical to RELIC's `pp_map_sim_oatep_k12`.
 *
 * No RELIC headers ship with petrelic, so the library is reached at run time with
 * dlopen/dlsym (RTLD_NOLOAD: the copy petrelic has already loaded and initialised), and the
 * few types needed are declared here; the Python side checks their sizes against petrelic's.
 *
 * RELIC's line functions write three Fp2 slots of an Fp12: one scaled by the x coordinate of
 * the G1 point, one by its y coordinate, one independent of it. Which slots those are depends on
 * the twist type, so `init` finds them by evaluating one line at three probe points.
 *
 * The module also keeps the two other loops that are too slow driven call by call from Python:
 * the baby steps of a discrete-log table, and fixed-base multiplication with a table of 8-bit
 * windows (32 windows of 255 affine multiples each: at most 32 mixed additions per scalar,
 * against ~64 doublings and additions for RELIC's comb method with its 16-entry table).
 *
 * RELIC is not thread-safe: callers hold the Python-side lock around every function here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FP_LIMBS 6
#define FP_BYTES (FP_LIMBS * 8)
#define FP12_PARTS 12
#define BN_LIMBS 34
#define MAX_NAF 72

typedef uint64_t fp_t[FP_LIMBS];
typedef fp_t fp2_t[2];
typedef fp2_t fp12_t[2][3];
typedef struct { fp_t x, y, z; int coord; } ep_st;
typedef struct { fp2_t x, y, z; int coord; } ep2_st;
typedef struct { int alloc, used, sign; uint64_t dp[BN_LIMBS]; } bn_st;

_Static_assert(sizeof(fp12_t) == 576, "fp12 layout");
_Static_assert(sizeof(ep_st) == 152, "ep_st layout");
_Static_assert(sizeof(ep2_st) == 296, "ep2_st layout");
_Static_assert(sizeof(bn_st) == 288, "bn_st layout");

enum { PART_ZERO, PART_CONST, PART_X, PART_Y };
enum { STEP_SQR = 1, STEP_DBL = 2, STEP_ADD = 4, STEP_SUB = 8 };

typedef void (*line_fn)(void *l, void *r, const void *q, const void *p);
typedef void (*fp3_fn)(void *c, const void *a, const void *b);
typedef void (*fp2_fn)(void *c, const void *a);
typedef void (*fp_dig_fn)(void *c, uint64_t d);
typedef int (*is_fn)(const void *p);
typedef void (*bn_fn)(void *b);
typedef void (*norm_sim_fn)(void *r, const void *t, int n);

static struct {
    line_fn dbl, add;
    fp3_fn fp12_mul_dxs, fp12_mul, fp_mul, fp_add;
    fp2_fn fp12_sqr, fp12_inv_cyc, pp_exp, fp_neg, ep_norm, ep2_norm, ep2_neg;
    fp_dig_fn fp_set_dig, fp12_set_dig;
    is_fn ep_is_infty, ep2_is_infty;
    bn_fn fp_prime_get_par, ep2_curve_get_gen;
    fp3_fn ep_add, ep2_add;
    norm_sim_fn ep_norm_sim, ep2_norm_sim;
} R;

static int ready;
static int parts_dbl[FP12_PARTS], parts_add[FP12_PARTS];
static int nz_dbl, nz_add;
static unsigned char steps[MAX_NAF * 2];
static int n_steps, negative_param;
static size_t lines_per_point; /* in Fp elements */

static uint64_t *part(fp12_t f, int k) {
    return f[k / 6][(k / 2) % 3][k % 2];
}

static void *sym(void *handle, const char *name, int *missing) {
    void *f = dlsym(handle, name);
    if (f == NULL) {
        *missing = 1;
    }
    return f;
}

/* Line of a copy of `t` (doubled, or plus `q`) evaluated at the probe point (x, y). */
static void probe_line(fp12_t out, const ep2_st *t, const ep2_st *q, uint64_t x, uint64_t y) {
    ep2_st tt = *t;
    ep_st p;
    memset(out, 0, sizeof(fp12_t));
    memset(&p, 0, sizeof p);
    R.fp_set_dig(p.x, x);
    R.fp_set_dig(p.y, y);
    R.fp_set_dig(p.z, 1);
    p.coord = 1;
    if (q == NULL) {
        R.dbl(out, &tt, &tt, &p);
    } else {
        R.add(out, &tt, q, &p);
    }
}

static int classify(int *parts, const ep2_st *t, const ep2_st *q) {
    fp12_t unit, by_x, by_y;
    int k, count = 0;
    probe_line(unit, t, q, 1, 1);
    probe_line(by_x, t, q, 2, 1);
    probe_line(by_y, t, q, 1, 2);
    for (k = 0; k < FP12_PARTS; k++) {
        if (memcmp(part(unit, k), part(by_x, k), FP_BYTES) != 0) {
            parts[k] = PART_X;
        } else if (memcmp(part(unit, k), part(by_y, k), FP_BYTES) != 0) {
            parts[k] = PART_Y;
        } else {
            static const fp_t zero = {0};
            parts[k] = memcmp(part(unit, k), zero, FP_BYTES) ? PART_CONST : PART_ZERO;
        }
        count += parts[k] != PART_ZERO;
    }
    return count;
}

/* Signed binary digits (NAF) of |x|, most significant first, as the step schedule. */
static int build_schedule(void) {
    bn_st par;
    unsigned __int128 k;
    int8_t naf[MAX_NAF];
    int len = 0, i;
    memset(&par, 0, sizeof par);
    par.alloc = BN_LIMBS;
    R.fp_prime_get_par(&par);
    if (par.used != 1) {
        return -1;
    }
    negative_param = par.sign != 0;
    for (k = par.dp[0]; k != 0; k >>= 1) {
        int8_t d = 0;
        if (k & 1) {
            d = (int8_t)(2 - (int)(k & 3));
            k = d > 0 ? k - 1 : k + 1;
        }
        naf[len++] = d;
    }
    n_steps = 0;
    lines_per_point = 0;
    for (i = len - 2; i >= 0; i--) {
        unsigned char s = (unsigned char)(STEP_DBL | (i < len - 2 ? STEP_SQR : 0));
        lines_per_point += (size_t)nz_dbl;
        if (naf[i] != 0) {
            s |= naf[i] > 0 ? STEP_ADD : STEP_SUB;
            lines_per_point += (size_t)nz_add;
        }
        steps[n_steps++] = s;
    }
    return 0;
}

static PyObject *py_init(PyObject *self, PyObject *args) {
    const char *path;
    int missing = 0;
    void *h;
    ep2_st g, g2;
    (void)self;
    if (!PyArg_ParseTuple(args, "s", &path)) {
        return NULL;
    }
    h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (h == NULL) {
        PyErr_Format(PyExc_OSError, "cannot reach librelic: %s", dlerror());
        return NULL;
    }
    R.dbl = (line_fn)sym(h, "pp_dbl_k12_projc_lazyr", &missing);
    R.add = (line_fn)sym(h, "pp_add_k12_projc_lazyr", &missing);
    R.fp12_mul_dxs = (fp3_fn)sym(h, "fp12_mul_dxs_lazyr", &missing);
    R.fp12_mul = (fp3_fn)sym(h, "fp12_mul_lazyr", &missing);
    R.fp12_sqr = (fp2_fn)sym(h, "fp12_sqr_lazyr", &missing);
    R.fp12_inv_cyc = (fp2_fn)sym(h, "fp12_inv_cyc", &missing);
    R.pp_exp = (fp2_fn)sym(h, "pp_exp_k12", &missing);
    R.fp_mul = (fp3_fn)sym(h, "fp_mul_integ", &missing);
    R.fp_add = (fp3_fn)sym(h, "fp_add_integ", &missing);
    R.fp_neg = (fp2_fn)sym(h, "fp_neg_integ", &missing);
    R.ep_norm = (fp2_fn)sym(h, "ep_norm", &missing);
    R.ep2_norm = (fp2_fn)sym(h, "ep2_norm", &missing);
    R.ep2_neg = (fp2_fn)sym(h, "ep2_neg", &missing);
    R.fp_set_dig = (fp_dig_fn)sym(h, "fp_set_dig", &missing);
    R.fp12_set_dig = (fp_dig_fn)sym(h, "fp12_set_dig", &missing);
    R.ep_is_infty = (is_fn)sym(h, "ep_is_infty", &missing);
    R.ep2_is_infty = (is_fn)sym(h, "ep2_is_infty", &missing);
    R.fp_prime_get_par = (bn_fn)sym(h, "fp_prime_get_par", &missing);
    R.ep2_curve_get_gen = (bn_fn)sym(h, "ep2_curve_get_gen", &missing);
    R.ep_add = (fp3_fn)sym(h, "ep_add_projc", &missing);
    R.ep2_add = (fp3_fn)sym(h, "ep2_add_projc", &missing);
    R.ep_norm_sim = (norm_sim_fn)sym(h, "ep_norm_sim", &missing);
    R.ep2_norm_sim = (norm_sim_fn)sym(h, "ep2_norm_sim", &missing);
    if (missing) {
        PyErr_SetString(PyExc_OSError, "librelic lacks a function the prepared pairing needs");
        return NULL;
    }
    /* Probe with T = 2G (doubling) and 2G + G (addition), both in RELIC's own state. */
    R.ep2_curve_get_gen(&g);
    R.ep2_norm(&g, &g);
    g2 = g;
    {
        fp12_t scratch;
        ep_st p;
        memset(&p, 0, sizeof p);
        R.fp_set_dig(p.x, 1);
        R.fp_set_dig(p.y, 1);
        R.fp_set_dig(p.z, 1);
        R.dbl(scratch, &g2, &g2, &p);
    }
    nz_dbl = classify(parts_dbl, &g, NULL);
    nz_add = classify(parts_add, &g2, &g);
    if (nz_dbl == 0 || nz_add == 0 || build_schedule() != 0) {
        PyErr_SetString(PyExc_OSError, "unexpected line layout in librelic");
        return NULL;
    }
    ready = 1;
    Py_RETURN_NONE;
}

static int check_ready(void) {
    if (!ready) {
        PyErr_SetString(PyExc_RuntimeError, "init() has not run");
        return 0;
    }
    return 1;
}

static uint64_t *store_line(uint64_t *dst, fp12_t line, const int *parts) {
    int k;
    for (k = 0; k < FP12_PARTS; k++) {
        if (parts[k] != PART_ZERO) {
            memcpy(dst, part(line, k), FP_BYTES);
            dst += FP_LIMBS;
        }
    }
    return dst;
}

/* prepare(points: n RELIC ep2 structs) -> (lines, present) */
static PyObject *py_prepare(PyObject *self, PyObject *args) {
    Py_buffer pts;
    PyObject *lines = NULL, *present = NULL, *result;
    Py_ssize_t n, j;
    ep_st unit;
    (void)self;
    if (!check_ready() || !PyArg_ParseTuple(args, "y*", &pts)) {
        return NULL;
    }
    if (pts.len % (Py_ssize_t)sizeof(ep2_st) != 0) {
        PyBuffer_Release(&pts);
        PyErr_SetString(PyExc_ValueError, "points buffer is not a whole number of G2 points");
        return NULL;
    }
    n = pts.len / (Py_ssize_t)sizeof(ep2_st);
    lines = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)(lines_per_point * FP_BYTES));
    present = PyBytes_FromStringAndSize(NULL, n);
    if (lines == NULL || present == NULL) {
        Py_XDECREF(lines);
        Py_XDECREF(present);
        PyBuffer_Release(&pts);
        return NULL;
    }
    memset(&unit, 0, sizeof unit);
    R.fp_set_dig(unit.x, 1);
    R.fp_set_dig(unit.y, 1);
    R.fp_set_dig(unit.z, 1);
    unit.coord = 1;
    Py_BEGIN_ALLOW_THREADS
    for (j = 0; j < n; j++) {
        uint64_t *dst = (uint64_t *)PyBytes_AS_STRING(lines) + j * lines_per_point * FP_LIMBS;
        ep2_st q, nq, t;
        fp12_t l;
        int s;
        memcpy(&q, (const char *)pts.buf + j * sizeof(ep2_st), sizeof q);
        PyBytes_AS_STRING(present)[j] = !R.ep2_is_infty(&q);
        if (!PyBytes_AS_STRING(present)[j]) {
            memset(dst, 0, lines_per_point * FP_BYTES);
            continue;
        }
        R.ep2_norm(&q, &q);
        R.ep2_neg(&nq, &q);
        t = q;
        memset(l, 0, sizeof l);
        for (s = 0; s < n_steps; s++) {
            R.dbl(l, &t, &t, &unit);
            dst = store_line(dst, l, parts_dbl);
            if (steps[s] & (STEP_ADD | STEP_SUB)) {
                R.add(l, &t, (steps[s] & STEP_ADD) ? &q : &nq, &unit);
                dst = store_line(dst, l, parts_add);
            }
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&pts);
    result = PyTuple_Pack(2, lines, present);
    Py_DECREF(lines);
    Py_DECREF(present);
    return result;
}

/* Multiply the accumulator by a stored line evaluated at (x, y). */
static const uint64_t *apply_line(fp12_t acc, fp12_t l, const uint64_t *src, const int *parts,
                                  const uint64_t *x, const uint64_t *y) {
    int k;
    for (k = 0; k < FP12_PARTS; k++) {
        switch (parts[k]) {
            case PART_X:
                R.fp_mul(part(l, k), src, x);
                src += FP_LIMBS;
                break;
            case PART_Y:
                R.fp_mul(part(l, k), src, y);
                src += FP_LIMBS;
                break;
            case PART_CONST:
                memcpy(part(l, k), src, FP_BYTES);
                src += FP_LIMBS;
                break;
            default:
                break;
        }
    }
    R.fp12_mul_dxs(acc, acc, l);
    return src;
}

/* pair(lines, present, g1_points, out): out = prod e(P_j, Q_j), final exponentiation applied. */
static PyObject *py_pair(PyObject *self, PyObject *args) {
    Py_buffer lines, present, pts, out;
    Py_ssize_t n, j;
    int s, used = 0;
    PyObject *ret = NULL;
    (void)self;
    if (!check_ready() || !PyArg_ParseTuple(args, "y*y*y*w*", &lines, &present, &pts, &out)) {
        return NULL;
    }
    n = present.len;
    if (pts.len != n * (Py_ssize_t)sizeof(ep_st) ||
        lines.len != n * (Py_ssize_t)(lines_per_point * FP_BYTES) ||
        out.len != (Py_ssize_t)sizeof(fp12_t)) {
        PyErr_SetString(PyExc_ValueError, "buffer sizes do not match the prepared points");
        goto done;
    }
    {
        /* Per pair: (3x, -y) for doubling lines and (x, y) for addition lines, as RELIC. */
        uint64_t (*xy)[4][FP_LIMBS] = malloc((size_t)(n > 0 ? n : 1) * sizeof *xy);
        const uint64_t **src = malloc((size_t)(n > 0 ? n : 1) * sizeof *src);
        fp12_t acc, l;
        if (xy == NULL || src == NULL) {
            free(xy);
            free(src);
            PyErr_NoMemory();
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        for (j = 0; j < n; j++) {
            ep_st p;
            memcpy(&p, (const char *)pts.buf + j * sizeof(ep_st), sizeof p);
            src[j] = NULL;
            if (!((const char *)present.buf)[j] || R.ep_is_infty(&p)) {
                continue;
            }
            R.ep_norm(&p, &p);
            R.fp_add(xy[used][0], p.x, p.x);
            R.fp_add(xy[used][0], xy[used][0], p.x);
            R.fp_neg(xy[used][1], p.y);
            memcpy(xy[used][2], p.x, FP_BYTES);
            memcpy(xy[used][3], p.y, FP_BYTES);
            src[used++] = (const uint64_t *)lines.buf + j * lines_per_point * FP_LIMBS;
        }
        R.fp12_set_dig(acc, 1);
        if (used > 0) {
            memset(l, 0, sizeof l);
            for (s = 0; s < n_steps; s++) {
                if (steps[s] & STEP_SQR) {
                    R.fp12_sqr(acc, acc);
                }
                for (j = 0; j < used; j++) {
                    src[j] = apply_line(acc, l, src[j], parts_dbl, xy[j][0], xy[j][1]);
                    if (steps[s] & (STEP_ADD | STEP_SUB)) {
                        src[j] = apply_line(acc, l, src[j], parts_add, xy[j][2], xy[j][3]);
                    }
                }
            }
            if (negative_param) {
                R.fp12_inv_cyc(acc, acc);
            }
            R.pp_exp(acc, acc);
        }
        memcpy(out.buf, acc, sizeof acc);
        Py_END_ALLOW_THREADS
        free(xy);
        free(src);
    }
    ret = Py_None;
    Py_INCREF(ret);
done:
    PyBuffer_Release(&lines);
    PyBuffer_Release(&present);
    PyBuffer_Release(&pts);
    PyBuffer_Release(&out);
    return ret;
}

/* baby_steps(base, out): out[j] = first limb of base^j for j < len(out) / 8. */
static PyObject *py_baby_steps(PyObject *self, PyObject *args) {
    Py_buffer base, out;
    Py_ssize_t m, j;
    fp12_t cur, b;
    (void)self;
    if (!check_ready() || !PyArg_ParseTuple(args, "y*w*", &base, &out)) {
        return NULL;
    }
    if (base.len != (Py_ssize_t)sizeof(fp12_t) || out.len % 8 != 0) {
        PyBuffer_Release(&base);
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "bad buffer sizes");
        return NULL;
    }
    m = out.len / 8;
    memcpy(b, base.buf, sizeof b);
    Py_BEGIN_ALLOW_THREADS
    R.fp12_set_dig(cur, 1);
    for (j = 0; j < m; j++) {
        ((uint64_t *)out.buf)[j] = cur[0][0][0][0];
        R.fp12_mul(cur, cur, b);
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&base);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

#define WINDOWS 32
#define DIGITS 255

/* The point size, addition and batch normalisation of G1 (kind 1) or G2 (kind 2). */
static int curve_ops(int kind, size_t *size, fp3_fn *add, norm_sim_fn *norm_sim) {
    if (kind == 1) {
        *size = sizeof(ep_st);
        *add = R.ep_add;
        *norm_sim = R.ep_norm_sim;
    } else if (kind == 2) {
        *size = sizeof(ep2_st);
        *add = R.ep2_add;
        *norm_sim = R.ep2_norm_sim;
    } else {
        PyErr_SetString(PyExc_ValueError, "kind must be 1 (G1) or 2 (G2)");
        return 0;
    }
    return 1;
}

/* fixed_table(kind, point) -> table of d * 256^w * point, w < 32, 1 <= d <= 255, affine. */
static PyObject *py_fixed_table(PyObject *self, PyObject *args) {
    Py_buffer pt;
    int kind, w, d;
    size_t size;
    fp3_fn add;
    norm_sim_fn norm_sim;
    PyObject *table;
    char *base, *row;
    (void)self;
    if (!check_ready() || !PyArg_ParseTuple(args, "iy*", &kind, &pt)) {
        return NULL;
    }
    if (!curve_ops(kind, &size, &add, &norm_sim) || pt.len != (Py_ssize_t)size) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "point buffer has the wrong size");
        }
        PyBuffer_Release(&pt);
        return NULL;
    }
    table = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(WINDOWS * DIGITS * size));
    base = malloc(size);
    if (table == NULL || base == NULL) {
        Py_XDECREF(table);
        free(base);
        PyBuffer_Release(&pt);
        return PyErr_NoMemory();
    }
    memcpy(base, pt.buf, size);
    Py_BEGIN_ALLOW_THREADS
    for (w = 0; w < WINDOWS; w++) {
        row = PyBytes_AS_STRING(table) + (size_t)w * DIGITS * size;
        memcpy(row, base, size);
        for (d = 1; d < DIGITS; d++) {
            add(row + (size_t)d * size, row + (size_t)(d - 1) * size, base);
        }
        add(base, row + (size_t)(DIGITS - 1) * size, base); /* 256 * base */
        norm_sim(row, row, DIGITS);
    }
    Py_END_ALLOW_THREADS
    free(base);
    PyBuffer_Release(&pt);
    return table;
}

/* fixed_mul(kind, table, scalars, out): scalars are 32-byte little-endian integers. */
static PyObject *py_fixed_mul(PyObject *self, PyObject *args) {
    Py_buffer table, scalars, out;
    int kind;
    size_t size;
    fp3_fn add;
    norm_sim_fn norm_sim;
    PyObject *ret = NULL;
    (void)self;
    if (!check_ready() || !PyArg_ParseTuple(args, "iy*y*w*", &kind, &table, &scalars, &out)) {
        return NULL;
    }
    if (!curve_ops(kind, &size, &add, &norm_sim)) {
        goto done;
    }
    if (table.len != (Py_ssize_t)(WINDOWS * DIGITS * size) || scalars.len % WINDOWS != 0 ||
        out.len != scalars.len / WINDOWS * (Py_ssize_t)size) {
        PyErr_SetString(PyExc_ValueError, "buffer sizes do not match");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    {
        Py_ssize_t i, n = scalars.len / WINDOWS;
        const unsigned char *k = scalars.buf;
        const char *t = table.buf;
        int w;
        for (i = 0; i < n; i++) {
            char *r = (char *)out.buf + i * (Py_ssize_t)size;
            memset(r, 0, size); /* z = 0: the point at infinity */
            for (w = 0; w < WINDOWS; w++) {
                unsigned d = k[i * WINDOWS + w];
                if (d != 0) {
                    add(r, r, t + ((size_t)w * DIGITS + d - 1) * size);
                }
            }
        }
    }
    Py_END_ALLOW_THREADS
    ret = Py_None;
    Py_INCREF(ret);
done:
    PyBuffer_Release(&table);
    PyBuffer_Release(&scalars);
    PyBuffer_Release(&out);
    return ret;
}

static PyMethodDef methods[] = {
    {"init", py_init, METH_VARARGS, "Bind to the loaded librelic and learn its line layout."},
    {"prepare", py_prepare, METH_VARARGS, "Miller-loop lines of G2 points."},
    {"pair", py_pair, METH_VARARGS, "Product of pairings with prepared G2 points."},
    {"baby_steps", py_baby_steps, METH_VARARGS, "First limbs of successive powers in GT."},
    {"fixed_table", py_fixed_table, METH_VARARGS, "Window table for fixed-base multiplication."},
    {"fixed_mul", py_fixed_mul, METH_VARARGS, "Fixed-base multiplications with a window table."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_pairing", "Prepared pairings over petrelic's RELIC.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__pairing(void) {
    return PyModule_Create(&module);
}
