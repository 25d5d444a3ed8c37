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
 * the baby steps of a discrete-log table, and fixed-base multiplication with tables of
 * signed-digit windows (see that section).
 *
 * Last, validated decoding of compressed G1 and G2 points, many per call, with subgroup
 * tests by the curve endomorphisms (see the section on decoding below).
 *
 * RELIC is not thread-safe: callers hold the Python-side lock around every function here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if !defined(__x86_64__)
#error "core.fe._pairing is x86-64 only, as are petrelic's wheels (its field arithmetic is x86-64 assembly)"
#endif

#include <cpuid.h>
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
typedef void (*norm_sim_fn)(void *r, const void *t, int n);
typedef int (*is_fn)(const void *p);
typedef void (*bn_fn)(void *b);

static struct {
    line_fn dbl, add;
    fp3_fn fp12_mul_dxs, fp12_mul, fp_mul, fp_add;
    fp2_fn fp12_sqr, fp12_inv_cyc, pp_exp, fp_neg, ep_norm, ep2_norm, ep2_neg;
    fp_dig_fn fp_set_dig, fp12_set_dig;
    is_fn ep_is_infty, ep2_is_infty;
    bn_fn fp_prime_get_par, ep2_curve_get_gen;
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

/*
 * Validated decoding with fast subgroup membership tests.
 *
 * RELIC decompresses a point and checks the curve equation, but the subgroup check that
 * petrelic offers is a scalar multiplication by (a multiple of) the group order. The curve's
 * endomorphisms give cheaper exact tests (M. Scott, "A note on group membership tests for G1,
 * G2 and GT on BLS pairing-friendly curves", ePrint 2021/1130; S. Bowe, ePrint 2019/814), with
 * u the curve parameter (-0xd201000000010000 for BLS12-381):
 *   G1: P is in G1 iff phi(P) = -u^2 P, with phi(x, y) = (beta x, y) and beta the cube root
 *       of unity whose eigenvalue on G1 is -u^2 (chosen in `init` with the generator);
 *   G2: P is in G2 iff psi(P) = u P, with psi the untwist-Frobenius-twist map (ep2_frb).
 * (The same two tests are the ones EIP-2537 specifies for BLS12-381 precompiles.)
 * The multiplications by u^2 (128 bits) and |u| (64 bits, six set bits) are plain
 * double-and-add in Jacobian coordinates over the field routines below, with every exceptional
 * case of the formulas handled, so that they compute the true multiple of any point on the
 * curve, inside the subgroup or not. (RELIC's own scalar multiplications may split the scalar
 * with the endomorphism, which presumes the point is in the subgroup: unusable here.)
 */

#define MAX_LIMBS (2 * FP_LIMBS)

static int check_ready(void);

typedef void (*f_mul_fn)(uint64_t *c, const uint64_t *a, const uint64_t *b);
typedef void (*f_un_fn)(uint64_t *c, const uint64_t *a);
typedef void (*read_fn)(void *p, const uint8_t *bin, int len);
typedef void (*write_fn)(uint8_t *bin, int len, const void *p, int pack);
typedef int (*code_fn)(void);
typedef void (*frb_fn)(void *r, const void *p, int i);
typedef void (*infty_fn)(void *p);
typedef int (*srt_fn)(uint64_t *c, const uint64_t *a);
typedef const uint64_t *(*prime_fn)(void);

typedef struct {
    f_mul_fn mul, add, sub;
    f_un_fn sqr, dbl, inv;
    size_t limbs;
    uint64_t one[MAX_LIMBS];
} field_ops;

typedef struct {
    uint64_t x[MAX_LIMBS], y[MAX_LIMBS], z[MAX_LIMBS];
    int inf;
} jacobian;

static struct {
    field_ops fp, fp2;
    write_fn ep2_write;
    code_fn err_get_code;
    frb_fn ep2_frb;
    infty_fn ep_set_infty, ep2_set_infty;
    fp_t beta;
    uint64_t par_abs, par_sq[2]; /* |u| and u^2 (low word first) */
    read_fn fp2_read;
    f_un_fn fp_hlv;
    fp_t p, r2, half; /* p, 2^768 mod p (to Montgomery form), (p - 1) / 2 */
    uint64_t n0;      /* -1/p mod 2^64 */
    uint8_t exp_digits[FP_BYTES * 2]; /* (p - 3) / 4 in 4-bit digits, most significant first */
    fp_t b1;                          /* b of E: y^2 = x^3 + b */
    fp2_t b2;                         /* b of E': y^2 = x^3 + b */
    int basic;                        /* RELIC's tag of affine coordinates */
    f_mul_fn relic_mul;               /* RELIC's Fp multiplication and squaring, */
    f_un_fn relic_sqr;                /* used where MULX/ADX are missing */
    int adx;                          /* whether this CPU has BMI2 and ADX */
} D;

/*
 * Field arithmetic in RELIC's representation (Montgomery form with R = 2^384, fully reduced),
 * so that decoded points are RELIC points as they are. Additions are done here rather than by
 * calling RELIC through a function pointer for each of them. The multiplication dominates the decoder (about 1,060 per G1 subgroup test, 490 per square root):
 * on CPUs with BMI2 and ADX it is the routine below, about 1.4x the throughput of RELIC's
 * mulq-based one because MULX leaves the flags alone and ADCX/ADOX run two carry chains at
 * once; elsewhere RELIC's fp_mul stays in place.
 */

/*
 * The additions are short assembly blocks too: in C, the final conditional subtraction of p
 * compiled to vector selects whose loads could not take their data from the scalar stores
 * just before them, a stall that cost more than the arithmetic.
 * STORE_REDUCED: c = t or t - p (whichever lies below p) for t < 2p in r8..r13.
 */
#define LIMBS_TO_C                                                                                \
    "movq %%r8, 0(%[c])\n\t"                                                                      \
    "movq %%r9, 8(%[c])\n\t"                                                                      \
    "movq %%r10, 16(%[c])\n\t"                                                                    \
    "movq %%r11, 24(%[c])\n\t"                                                                    \
    "movq %%r12, 32(%[c])\n\t"                                                                    \
    "movq %%r13, 40(%[c])\n\t"
#define STORE_REDUCED                                                                             \
    LIMBS_TO_C                                                                                    \
    "subq 0(%[p]), %%r8\n\t"                                                                      \
    "sbbq 8(%[p]), %%r9\n\t"                                                                      \
    "sbbq 16(%[p]), %%r10\n\t"                                                                    \
    "sbbq 24(%[p]), %%r11\n\t"                                                                    \
    "sbbq 32(%[p]), %%r12\n\t"                                                                    \
    "sbbq 40(%[p]), %%r13\n\t"                                                                    \
    "cmovcq 0(%[c]), %%r8\n\t"                                                                    \
    "cmovcq 8(%[c]), %%r9\n\t"                                                                    \
    "cmovcq 16(%[c]), %%r10\n\t"                                                                  \
    "cmovcq 24(%[c]), %%r11\n\t"                                                                  \
    "cmovcq 32(%[c]), %%r12\n\t"                                                                  \
    "cmovcq 40(%[c]), %%r13\n\t" LIMBS_TO_C
#define LIMBS_CLOBBERED "r8", "r9", "r10", "r11", "r12", "r13", "cc", "memory"

static void fp_add_c(uint64_t *c, const uint64_t *a, const uint64_t *b) {
    /* no carry out of the sum: a + b < 2p < 2^382 */
    __asm__("movq 0(%[a]), %%r8\n\t"
            "addq 0(%[b]), %%r8\n\t"
            "movq 8(%[a]), %%r9\n\t"
            "adcq 8(%[b]), %%r9\n\t"
            "movq 16(%[a]), %%r10\n\t"
            "adcq 16(%[b]), %%r10\n\t"
            "movq 24(%[a]), %%r11\n\t"
            "adcq 24(%[b]), %%r11\n\t"
            "movq 32(%[a]), %%r12\n\t"
            "adcq 32(%[b]), %%r12\n\t"
            "movq 40(%[a]), %%r13\n\t"
            "adcq 40(%[b]), %%r13\n\t" STORE_REDUCED
            :
            : [a] "r"(a), [b] "r"(b), [c] "r"(c), [p] "r"(D.p)
            : LIMBS_CLOBBERED);
}

static void fp_dbl_c(uint64_t *c, const uint64_t *a) {
    fp_add_c(c, a, a);
}

static void fp_sub_c(uint64_t *c, const uint64_t *a, const uint64_t *b) {
    /* a - b, and a - b + p kept instead when a - b borrowed */
    __asm__("movq 0(%[a]), %%r8\n\t"
            "subq 0(%[b]), %%r8\n\t"
            "movq 8(%[a]), %%r9\n\t"
            "sbbq 8(%[b]), %%r9\n\t"
            "movq 16(%[a]), %%r10\n\t"
            "sbbq 16(%[b]), %%r10\n\t"
            "movq 24(%[a]), %%r11\n\t"
            "sbbq 24(%[b]), %%r11\n\t"
            "movq 32(%[a]), %%r12\n\t"
            "sbbq 32(%[b]), %%r12\n\t"
            "movq 40(%[a]), %%r13\n\t"
            "sbbq 40(%[b]), %%r13\n\t"
            "sbbq %%rax, %%rax\n\t" /* all ones after a borrow */
            LIMBS_TO_C
            "addq 0(%[p]), %%r8\n\t"
            "adcq 8(%[p]), %%r9\n\t"
            "adcq 16(%[p]), %%r10\n\t"
            "adcq 24(%[p]), %%r11\n\t"
            "adcq 32(%[p]), %%r12\n\t"
            "adcq 40(%[p]), %%r13\n\t"
            "testq %%rax, %%rax\n\t"
            "cmovzq 0(%[c]), %%r8\n\t"
            "cmovzq 8(%[c]), %%r9\n\t"
            "cmovzq 16(%[c]), %%r10\n\t"
            "cmovzq 24(%[c]), %%r11\n\t"
            "cmovzq 32(%[c]), %%r12\n\t"
            "cmovzq 40(%[c]), %%r13\n\t" LIMBS_TO_C
            :
            : [a] "r"(a), [b] "r"(b), [c] "r"(c), [p] "r"(D.p)
            : "rax", LIMBS_CLOBBERED);
}

/*
 * Montgomery multiplication, one row of the CIOS method per word of b: t += a * b[i] (MULX,
 * with the low halves added on the ADOX chain and the high halves on the ADCX chain), then
 * t = (t + m p) / 2^64 with m = t[0] * n0. The running value t lives in r8..r13 with one extra
 * word in r14; p < 2^382 keeps it below 2p throughout, so one conditional subtraction ends it
 * (the "no-carry" variant: G. Botrel, Y. El Housni, gnark-crypto).
 */
#define MUL_ROW_FIRST                                                                             \
    "movq 0(%[b]), %%rdx\n\t"                                                                     \
    "xorl %%eax, %%eax\n\t"                                                                       \
    "mulxq 0(%[a]), %%r8, %%r9\n\t"                                                               \
    "mulxq 8(%[a]), %%rax, %%r10\n\t"                                                             \
    "adoxq %%rax, %%r9\n\t"                                                                       \
    "mulxq 16(%[a]), %%rax, %%r11\n\t"                                                            \
    "adoxq %%rax, %%r10\n\t"                                                                      \
    "mulxq 24(%[a]), %%rax, %%r12\n\t"                                                            \
    "adoxq %%rax, %%r11\n\t"                                                                      \
    "mulxq 32(%[a]), %%rax, %%r13\n\t"                                                            \
    "adoxq %%rax, %%r12\n\t"                                                                      \
    "mulxq 40(%[a]), %%rax, %%r14\n\t"                                                            \
    "adoxq %%rax, %%r13\n\t"                                                                      \
    "movl $0, %%eax\n\t"                                                                          \
    "adoxq %%rax, %%r14\n\t"
#define MUL_ROW(off)                                                                              \
    "movq " #off "(%[b]), %%rdx\n\t"                                                              \
    "xorl %%eax, %%eax\n\t"                                                                       \
    "mulxq 0(%[a]), %%rax, %%r14\n\t"                                                             \
    "adoxq %%rax, %%r8\n\t"                                                                       \
    "adcxq %%r14, %%r9\n\t"                                                                       \
    "mulxq 8(%[a]), %%rax, %%r14\n\t"                                                             \
    "adoxq %%rax, %%r9\n\t"                                                                       \
    "adcxq %%r14, %%r10\n\t"                                                                      \
    "mulxq 16(%[a]), %%rax, %%r14\n\t"                                                            \
    "adoxq %%rax, %%r10\n\t"                                                                      \
    "adcxq %%r14, %%r11\n\t"                                                                      \
    "mulxq 24(%[a]), %%rax, %%r14\n\t"                                                            \
    "adoxq %%rax, %%r11\n\t"                                                                      \
    "adcxq %%r14, %%r12\n\t"                                                                      \
    "mulxq 32(%[a]), %%rax, %%r14\n\t"                                                            \
    "adoxq %%rax, %%r12\n\t"                                                                      \
    "adcxq %%r14, %%r13\n\t"                                                                      \
    "mulxq 40(%[a]), %%rax, %%r14\n\t"                                                            \
    "adoxq %%rax, %%r13\n\t"                                                                      \
    "movl $0, %%eax\n\t"                                                                          \
    "adcxq %%rax, %%r14\n\t"                                                                      \
    "adoxq %%rax, %%r14\n\t"
#define MUL_REDUCE                                                                                \
    "movq %%r8, %%rdx\n\t"                                                                        \
    "imulq %[n0], %%rdx\n\t"                                                                      \
    "xorl %%eax, %%eax\n\t"                                                                       \
    "mulxq 0(%[p]), %%rax, %%r15\n\t"                                                             \
    "adcxq %%r8, %%rax\n\t"                                                                       \
    "movq %%r15, %%r8\n\t"                                                                        \
    "adcxq %%r9, %%r8\n\t"                                                                        \
    "mulxq 8(%[p]), %%rax, %%r9\n\t"                                                              \
    "adoxq %%rax, %%r8\n\t"                                                                       \
    "adcxq %%r10, %%r9\n\t"                                                                       \
    "mulxq 16(%[p]), %%rax, %%r10\n\t"                                                            \
    "adoxq %%rax, %%r9\n\t"                                                                       \
    "adcxq %%r11, %%r10\n\t"                                                                      \
    "mulxq 24(%[p]), %%rax, %%r11\n\t"                                                            \
    "adoxq %%rax, %%r10\n\t"                                                                      \
    "adcxq %%r12, %%r11\n\t"                                                                      \
    "mulxq 32(%[p]), %%rax, %%r12\n\t"                                                            \
    "adoxq %%rax, %%r11\n\t"                                                                      \
    "adcxq %%r13, %%r12\n\t"                                                                      \
    "mulxq 40(%[p]), %%rax, %%r13\n\t"                                                            \
    "adoxq %%rax, %%r12\n\t"                                                                      \
    "movl $0, %%eax\n\t"                                                                          \
    "adcxq %%rax, %%r13\n\t"                                                                      \
    "adoxq %%r14, %%r13\n\t"

static void fp_mul_adx(uint64_t *c, const uint64_t *a, const uint64_t *b) {
    __asm__(MUL_ROW_FIRST MUL_REDUCE MUL_ROW(8) MUL_REDUCE MUL_ROW(16) MUL_REDUCE MUL_ROW(24)
                MUL_REDUCE MUL_ROW(32) MUL_REDUCE MUL_ROW(40) MUL_REDUCE STORE_REDUCED
            :
            : [a] "r"(a), [b] "r"(b), [c] "r"(c), [p] "r"(D.p), [n0] "m"(D.n0)
            : "rax", "rdx", "r14", "r15", LIMBS_CLOBBERED);
}

static void fp_sqr_adx(uint64_t *c, const uint64_t *a) {
    fp_mul_adx(c, a, a);
}

/* Fp2 = Fp[i], i^2 = -1, on the operations above (RELIC's own Fp2 routines use its Fp
 * multiplication): Karatsuba products, squares as (a0 + a1)(a0 - a1) + 2 a0 a1 i. */
static void fp2_add_c(uint64_t *c, const uint64_t *a, const uint64_t *b) {
    fp_add_c(c, a, b);
    fp_add_c(c + FP_LIMBS, a + FP_LIMBS, b + FP_LIMBS);
}

static void fp2_sub_c(uint64_t *c, const uint64_t *a, const uint64_t *b) {
    fp_sub_c(c, a, b);
    fp_sub_c(c + FP_LIMBS, a + FP_LIMBS, b + FP_LIMBS);
}

static void fp2_dbl_c(uint64_t *c, const uint64_t *a) {
    fp2_add_c(c, a, a);
}

static void fp2_mul_c(uint64_t *c, const uint64_t *a, const uint64_t *b) {
    uint64_t t0[FP_LIMBS], t1[FP_LIMBS], sa[FP_LIMBS], sb[FP_LIMBS];
    fp_add_c(sa, a, a + FP_LIMBS);
    fp_add_c(sb, b, b + FP_LIMBS);
    D.fp.mul(t0, a, b);
    D.fp.mul(t1, a + FP_LIMBS, b + FP_LIMBS);
    D.fp.mul(sa, sa, sb);
    fp_sub_c(c, t0, t1);
    fp_sub_c(sa, sa, t0);
    fp_sub_c(c + FP_LIMBS, sa, t1);
}

static void fp2_sqr_c(uint64_t *c, const uint64_t *a) {
    uint64_t s[FP_LIMBS], d[FP_LIMBS], m[FP_LIMBS];
    fp_add_c(s, a, a + FP_LIMBS);
    fp_sub_c(d, a, a + FP_LIMBS);
    D.fp.mul(m, a, a + FP_LIMBS);
    D.fp.mul(c, s, d);
    fp_add_c(c + FP_LIMBS, m, m);
}

/* c = a^((p - 3) / 4) with 4-bit windows: a times it is a square root of a when there is one,
 * and a square root of -a otherwise; its square is 1/a or -1/a. */
static void fp_pow_p34(uint64_t *c, const uint64_t *a) {
    uint64_t table[16][FP_LIMBS];
    size_t i;
    int k;
    memcpy(table[0], D.fp.one, FP_BYTES);
    memcpy(table[1], a, FP_BYTES);
    for (k = 2; k < 16; k++) {
        D.fp.mul(table[k], table[k - 1], a);
    }
    memcpy(c, table[D.exp_digits[0]], FP_BYTES);
    for (i = 1; i < sizeof D.exp_digits; i++) {
        for (k = 0; k < 4; k++) {
            D.fp.sqr(c, c);
        }
        if (D.exp_digits[i] != 0) {
            D.fp.mul(c, c, table[D.exp_digits[i]]);
        }
    }
}

/* c = a^((p + 1) / 4), the square root of a when a is a square. */
static void fp_root(uint64_t *c, const uint64_t *a) {
    uint64_t w[FP_LIMBS];
    fp_pow_p34(w, a);
    D.fp.mul(c, w, a);
}

static int is_zero(const field_ops *f, const uint64_t *a) {
    size_t i;
    uint64_t acc = 0;
    for (i = 0; i < f->limbs; i++) {
        acc |= a[i];
    }
    return acc == 0;
}

static int equal(const field_ops *f, const uint64_t *a, const uint64_t *b) {
    return memcmp(a, b, f->limbs * 8) == 0;
}

/* t = 2t (dbl-2009-l, a = 0). */
static void jac_dbl(const field_ops *f, jacobian *t) {
    uint64_t a[MAX_LIMBS], b[MAX_LIMBS], c[MAX_LIMBS], d[MAX_LIMBS], e[MAX_LIMBS];
    if (t->inf || is_zero(f, t->y)) {
        t->inf = 1; /* no point of order 2 lies in these groups, but stay exact */
        return;
    }
    f->mul(t->z, t->y, t->z);
    f->dbl(t->z, t->z); /* Z3 = 2YZ */
    f->sqr(a, t->x);
    f->sqr(b, t->y);
    f->sqr(c, b);
    f->add(d, t->x, b);
    f->sqr(d, d);
    f->sub(d, d, a);
    f->sub(d, d, c);
    f->dbl(d, d); /* D = 2((X + B)^2 - A - C) */
    f->dbl(e, a);
    f->add(e, e, a); /* E = 3A */
    f->sqr(t->x, e);
    f->sub(t->x, t->x, d);
    f->sub(t->x, t->x, d); /* X3 = E^2 - 2D */
    f->sub(d, d, t->x);
    f->mul(t->y, e, d);
    f->dbl(c, c);
    f->dbl(c, c);
    f->dbl(c, c);
    f->sub(t->y, t->y, c); /* Y3 = E(D - X3) - 8C */
}

/* t += (x, y) affine (madd-2007-bl), falling back to doubling or infinity when needed. */
static void jac_add_affine(const field_ops *f, jacobian *t, const uint64_t *x, const uint64_t *y) {
    uint64_t zz[MAX_LIMBS], u2[MAX_LIMBS], s2[MAX_LIMBS], h[MAX_LIMBS], hh[MAX_LIMBS];
    uint64_t i4[MAX_LIMBS], j[MAX_LIMBS], r[MAX_LIMBS], v[MAX_LIMBS];
    size_t bytes = f->limbs * 8;
    if (t->inf) {
        memcpy(t->x, x, bytes);
        memcpy(t->y, y, bytes);
        memcpy(t->z, f->one, bytes);
        t->inf = 0;
        return;
    }
    f->sqr(zz, t->z);
    f->mul(u2, x, zz);
    f->mul(s2, y, t->z);
    f->mul(s2, s2, zz);
    f->sub(h, u2, t->x);
    f->sub(r, s2, t->y);
    if (is_zero(f, h)) {
        if (is_zero(f, r)) {
            jac_dbl(f, t);
        } else {
            t->inf = 1;
        }
        return;
    }
    f->dbl(r, r);
    f->sqr(hh, h);
    f->dbl(i4, hh);
    f->dbl(i4, i4);
    f->mul(j, h, i4);
    f->mul(v, t->x, i4);
    f->add(t->z, t->z, h);
    f->sqr(t->z, t->z);
    f->sub(t->z, t->z, zz);
    f->sub(t->z, t->z, hh); /* Z3 = (Z1 + H)^2 - Z1Z1 - HH */
    f->sqr(t->x, r);
    f->sub(t->x, t->x, j);
    f->sub(t->x, t->x, v);
    f->sub(t->x, t->x, v); /* X3 = r^2 - J - 2V */
    f->sub(v, v, t->x);
    f->mul(v, r, v);
    f->mul(j, t->y, j);
    f->dbl(j, j);
    f->sub(t->y, v, j); /* Y3 = r(V - X3) - 2 Y1 J */
}

/* t = k (x, y) by left-to-right double-and-add; k is `words` 64-bit words, low word first. */
static void jac_mul(const field_ops *f, jacobian *t, const uint64_t *x, const uint64_t *y,
                    const uint64_t *k, int words) {
    int i;
    t->inf = 1;
    for (i = words * 64 - 1; i >= 0; i--) {
        jac_dbl(f, t);
        if ((k[i / 64] >> (i % 64)) & 1) {
            jac_add_affine(f, t, x, y);
        }
    }
}

/* Does t equal (x, sign * y) for affine (x, y)? (x = X / Z^2, y = Y / Z^3) */
static int jac_equals(const field_ops *f, const jacobian *t, const uint64_t *x, const uint64_t *y,
                      int negate) {
    uint64_t zz[MAX_LIMBS], a[MAX_LIMBS];
    if (t->inf) {
        return 0; /* (x, y) is a finite point */
    }
    f->sqr(zz, t->z);
    f->mul(a, x, zz);
    if (!equal(f, a, t->x)) {
        return 0;
    }
    f->mul(zz, zz, t->z);
    f->mul(a, y, zz);
    if (negate) {
        f->add(a, a, t->y);
        return is_zero(f, a);
    }
    return equal(f, a, t->y);
}

/* Subgroup tests of affine points (z = 1), normalised by the caller. */
static int g1_member(const ep_st *p) {
    uint64_t bx[FP_LIMBS];
    jacobian t;
    R.fp_mul(bx, D.beta, p->x);
    jac_mul(&D.fp, &t, p->x, p->y, D.par_sq, 2);
    return jac_equals(&D.fp, &t, bx, p->y, 1); /* phi(P) = -u^2 P */
}

static int g2_member(const ep2_st *p) {
    ep2_st q;
    jacobian t;
    D.ep2_frb(&q, p, 1);
    R.ep2_norm(&q, &q);
    jac_mul(&D.fp2, &t, &p->x[0][0], &p->y[0][0], &D.par_abs, 1);
    return jac_equals(&D.fp2, &t, &q.x[0][0], &q.y[0][0], negative_param); /* psi(P) = u P */
}

static int member(int kind, void *p) {
    if (kind == 1) {
        ep_st *q = p;
        if (R.ep_is_infty(q)) {
            return 1;
        }
        R.ep_norm(q, q);
        return g1_member(q);
    }
    {
        ep2_st *q = p;
        if (R.ep2_is_infty(q)) {
            return 1;
        }
        R.ep2_norm(q, q);
        return g2_member(q);
    }
}

/*
 * Square root in Fp2 = Fp[i], i^2 = -1, p = 3 mod 4, with two exponentiations in Fp where
 * RELIC's fp2_srt spends more: a = a0 + a1 i is a square iff its norm n = a0^2 + a1^2 is one
 * in Fp; with s = sqrt(n) and t = (a0 + s) / 2, one power w = t^((p-3)/4) gives x = t w, a
 * square root of t or of -t, and w = 1/x or -1/x. Then
 *   x^2 = t:  sqrt(a) = x + (a1 w / 2) i,     x^2 = -t:  sqrt(a) = -(a1 w / 2) + x i.
 * Returns 0 when a is not a square; the root found is checked by squaring it.
 */
static int fp2_sqrt(uint64_t *c, const uint64_t *a) {
    const field_ops *f = &D.fp;
    const uint64_t *a0 = a, *a1 = a + FP_LIMBS;
    uint64_t *c0 = c, *c1 = c + FP_LIMBS;
    uint64_t n[FP_LIMBS], s[FP_LIMBS], t[FP_LIMBS], w[FP_LIMBS], x[FP_LIMBS];
    uint64_t check[2 * FP_LIMBS];
    if (is_zero(f, a1)) {
        /* a in Fp: its root is sqrt(a0), or sqrt(-a0) i (-1 is not a square in Fp) */
        memset(c, 0, 2 * FP_BYTES);
        fp_root(s, a0);
        f->sqr(t, s);
        if (equal(f, t, a0)) {
            memcpy(c0, s, FP_BYTES);
        } else {
            R.fp_neg(n, a0);
            fp_root(c1, n);
        }
    } else {
        f->sqr(n, a0);
        f->sqr(t, a1);
        f->add(n, n, t);
        fp_root(s, n);
        f->sqr(t, s);
        if (!equal(f, t, n)) {
            return 0;
        }
        f->add(t, a0, s);
        D.fp_hlv(t, t); /* t != 0 because a1 != 0 */
        fp_pow_p34(w, t);
        f->mul(x, t, w);
        f->sqr(n, x);
        f->mul(w, w, a1);
        D.fp_hlv(w, w);
        if (equal(f, n, t)) {
            memcpy(c0, x, FP_BYTES);
            memcpy(c1, w, FP_BYTES);
        } else {
            R.fp_neg(c0, w);
            memcpy(c1, x, FP_BYTES);
        }
    }
    D.fp2.sqr(check, c);
    return equal(&D.fp2, check, a);
}

/* RELIC's decompression of G2, with the square root above: x from the bytes, then the y of
 * y^2 = x^3 + b whose sign RELIC's own writer encodes with the prefix byte given. */
static int g2_read(ep2_st *p, const uint8_t *in, uint8_t *again) {
    uint64_t rhs[2 * FP_LIMBS];
    D.err_get_code(); /* reading the code resets it */
    D.fp2_read(p->x, in + 1, 2 * FP_BYTES);
    if (D.err_get_code() != 0) {
        return 0; /* a coordinate is not below p */
    }
    D.fp2.sqr(rhs, &p->x[0][0]);
    D.fp2.mul(rhs, rhs, &p->x[0][0]);
    D.fp2.add(rhs, rhs, &D.b2[0][0]);
    if (!fp2_sqrt(&p->y[0][0], rhs)) {
        return 0;
    }
    memcpy(p->z, D.fp2.one, sizeof p->z);
    p->coord = D.basic;
    D.ep2_write(again, 2 * FP_BYTES + 1, p, 1);
    if (again[0] != in[0]) {
        memset(rhs, 0, sizeof rhs);
        D.fp2.sub(&p->y[0][0], rhs, &p->y[0][0]);
        D.ep2_write(again, 2 * FP_BYTES + 1, p, 1);
    }
    return 1;
}

static void fp_inv_c(uint64_t *c, const uint64_t *a);
static void fp2_inv_c(uint64_t *c, const uint64_t *a);
static void bn_init(void);

static int decode_init(void *h, int *missing) {
    bn_st par;
    ep_st g1;
    ep2_st g2;
    fp_t b2;
    D.relic_mul = D.fp.mul = (f_mul_fn)sym(h, "fp_mul_integ", missing);
    D.relic_sqr = D.fp.sqr = (f_un_fn)sym(h, "fp_sqr_integ", missing);
    D.fp.add = fp_add_c;
    D.fp.sub = fp_sub_c;
    D.fp.dbl = fp_dbl_c;
    D.fp2.mul = fp2_mul_c;
    D.fp2.add = fp2_add_c;
    D.fp2.sub = fp2_sub_c;
    D.fp2.sqr = fp2_sqr_c;
    D.fp2.dbl = fp2_dbl_c;
    D.fp.inv = fp_inv_c;
    D.fp2.inv = fp2_inv_c;
    D.ep2_write = (write_fn)sym(h, "ep2_write_bin", missing);
    D.err_get_code = (code_fn)sym(h, "err_get_code", missing);
    D.ep2_frb = (frb_fn)sym(h, "ep2_frb", missing);
    D.ep_set_infty = (infty_fn)sym(h, "ep_set_infty", missing);
    D.fp2_read = (read_fn)sym(h, "fp2_read_bin", missing);
    D.fp_hlv = (f_un_fn)sym(h, "fp_hlv_integ", missing);
    D.ep2_set_infty = (infty_fn)sym(h, "ep2_set_infty", missing);
    {
        fp_dig_fn fp2_set_dig_ = (fp_dig_fn)sym(h, "fp2_set_dig", missing);
        srt_fn fp_srt = (srt_fn)sym(h, "fp_srt", missing);
        prime_fn fp_prime_get = (prime_fn)sym(h, "fp_prime_get", missing);
        bn_fn get_gen = (bn_fn)sym(h, "ep_curve_get_gen", missing);
        if (*missing) {
            return -1;
        }
        {
            /* p, -1/p mod 2^64, (p - 1) / 2, the digits of (p - 3) / 4 and 2^768 mod p */
            uint64_t e[FP_LIMBS], inv = 1;
            unsigned ebx, ecx, edx, eax;
            size_t j;
            int i;
            memcpy(D.p, fp_prime_get(), FP_BYTES);
            for (i = 0; i < 6; i++) {
                inv *= 2 - D.p[0] * inv; /* Newton: doubles the correct low bits */
            }
            D.n0 = -inv;
            memcpy(e, D.p, FP_BYTES);
            e[0] -= 3; /* p = 3 mod 4: no borrow */
            for (i = 0; i < FP_LIMBS; i++) {
                D.half[i] = (e[i] >> 1) | (i + 1 < FP_LIMBS ? e[i + 1] << 63 : 0);
                e[i] = (e[i] >> 2) | (i + 1 < FP_LIMBS ? e[i + 1] << 62 : 0);
            }
            D.half[0] |= 1; /* (p - 1) / 2 = (p - 3) / 2 + 1, and (p - 3) / 2 is even */
            for (j = 0; j < sizeof D.exp_digits; j++) {
                size_t bit = 4 * (sizeof D.exp_digits - 1 - j);
                D.exp_digits[j] = (uint8_t)((e[bit / 64] >> (bit % 64)) & 15);
            }
            R.fp_set_dig(D.r2, 1); /* R mod p, then doubled 384 times */
            for (i = 0; i < 64 * FP_LIMBS; i++) {
                fp_dbl_c(D.r2, D.r2);
            }
            D.adx = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ebx & bit_BMI2) &&
                    (ebx & bit_ADX);
            if (D.adx) {
                D.fp.mul = fp_mul_adx;
                D.fp.sqr = fp_sqr_adx;
            }
        }
        D.fp.limbs = FP_LIMBS;
        D.fp2.limbs = 2 * FP_LIMBS;
        memset(D.fp.one, 0, sizeof D.fp.one);
        memset(D.fp2.one, 0, sizeof D.fp2.one);
        R.fp_set_dig(D.fp.one, 1);
        fp2_set_dig_(D.fp2.one, 1);
        memset(&par, 0, sizeof par);
        par.alloc = BN_LIMBS;
        R.fp_prime_get_par(&par);
        if (par.used != 1) {
            return -1;
        }
        D.par_abs = par.dp[0];
        {
            unsigned __int128 sq = (unsigned __int128)par.dp[0] * par.dp[0];
            D.par_sq[0] = (uint64_t)sq;
            D.par_sq[1] = (uint64_t)(sq >> 64);
        }
        /* beta = (-1 + sqrt(-3)) / 2 or its square (the other cube root of unity): whichever
         * acts as -u^2 on G1. */
        R.fp_set_dig(b2, 3);
        R.fp_neg(b2, b2);
        if (!fp_srt(D.beta, b2)) {
            return -1;
        }
        D.fp.sub(D.beta, D.beta, D.fp.one);
        D.fp_hlv(D.beta, D.beta);
        get_gen(&g1);
        R.ep_norm(&g1, &g1);
        /* b = y^2 - x^3 at the generator */
        D.fp.sqr(D.b1, g1.x);
        D.fp.mul(D.b1, D.b1, g1.x);
        D.fp.sqr(b2, g1.y);
        D.fp.sub(D.b1, b2, D.b1);
        if (!g1_member(&g1)) {
            R.fp_mul(b2, D.beta, D.beta);
            memcpy(D.beta, b2, sizeof b2);
            if (!g1_member(&g1)) {
                return -1;
            }
        }
        R.ep2_curve_get_gen(&g2);
        R.ep2_norm(&g2, &g2);
        D.basic = g2.coord;
        /* b = y^2 - x^3 at the generator */
        D.fp2.sqr(&D.b2[0][0], &g2.x[0][0]);
        D.fp2.mul(&D.b2[0][0], &D.b2[0][0], &g2.x[0][0]);
        {
            fp2_t yy;
            D.fp2.sqr(&yy[0][0], &g2.y[0][0]);
            D.fp2.sub(&D.b2[0][0], &yy[0][0], &D.b2[0][0]);
        }
        return g2_member(&g2) ? 0 : -1;
    }
}

/* The sizes of a RELIC point and of its encoding in G1 (kind 1) or G2 (kind 2). */
static int point_sizes(int kind, size_t *size, size_t *encoded) {
    if (kind != 1 && kind != 2) {
        PyErr_SetString(PyExc_ValueError, "kind must be 1 (G1) or 2 (G2)");
        return 0;
    }
    *size = kind == 1 ? sizeof(ep_st) : sizeof(ep2_st);
    *encoded = kind == 1 ? FP_BYTES + 1 : 2 * FP_BYTES + 1;
    return 1;
}

enum { DECODE_OK, BAD_PREFIX, NOT_ON_CURVE, NOT_CANONICAL, NOT_IN_SUBGROUP };

/* Does the big-endian a (48 bytes) stay below p? Otherwise RELIC's reader fails too. */
static int below_p(uint64_t *limbs, const uint8_t *a) {
    int i, k;
    for (i = 0; i < FP_LIMBS; i++) {
        limbs[i] = 0;
        for (k = 0; k < 8; k++) {
            limbs[i] |= (uint64_t)a[FP_BYTES - 1 - 8 * i - k] << (8 * k);
        }
    }
    for (i = FP_LIMBS - 1; i >= 0; i--) {
        if (limbs[i] != D.p[i]) {
            return limbs[i] < D.p[i];
        }
    }
    return 0;
}

/* RELIC's decompression of G1 without its generic reader: the y of y^2 = x^3 + b whose sign
 * bit, the one RELIC's writer puts in the prefix (y > (p - 1) / 2 as an integer), matches the
 * prefix. Re-encoding such a point gives the input back, so canonical form needs no writer. */
static int g1_read(ep_st *p, const uint8_t *in) {
    const field_ops *f = &D.fp;
    static const fp_t one = {1};
    uint64_t raw[FP_LIMBS], rhs[FP_LIMBS], check[FP_LIMBS];
    int i, high = 0;
    if (!below_p(raw, in + 1)) {
        return NOT_ON_CURVE;
    }
    f->mul(p->x, raw, D.r2); /* to Montgomery form */
    f->sqr(rhs, p->x);
    f->mul(rhs, rhs, p->x);
    f->add(rhs, rhs, D.b1);
    fp_root(p->y, rhs);
    f->sqr(check, p->y);
    if (!equal(f, check, rhs)) {
        return NOT_ON_CURVE;
    }
    f->mul(raw, p->y, one); /* out of Montgomery form */
    for (i = FP_LIMBS - 1; i >= 0 && raw[i] == D.half[i]; i--) {
    }
    high = i >= 0 && raw[i] > D.half[i];
    if (high != (in[0] & 1)) {
        if (is_zero(f, p->y)) {
            return NOT_CANONICAL; /* y = 0 has no odd sign (and no point of order 2 exists) */
        }
        R.fp_neg(p->y, p->y);
    }
    memcpy(p->z, D.fp.one, sizeof p->z);
    p->coord = D.basic;
    return DECODE_OK;
}

/* RELIC's decompression of G2 by g2_read, then its writer to confirm canonical form. */
static int g2_decode(ep2_st *p, const uint8_t *in) {
    uint8_t again[2 * FP_BYTES + 1];
    if (!g2_read(p, in, again)) {
        return NOT_ON_CURVE;
    }
    return memcmp(again, in, sizeof again) == 0 ? DECODE_OK : NOT_CANONICAL;
}

/* decode(kind, data, out) -> None, or (index, reason) of the first invalid encoding. */
static PyObject *py_decode(PyObject *self, PyObject *args) {
    Py_buffer data, out;
    int kind, reason = DECODE_OK;
    size_t size, encoded;
    Py_ssize_t n = 0, i = 0;
    PyObject *ret = NULL;
    (void)self;
    if (!check_ready() || !PyArg_ParseTuple(args, "iy*w*", &kind, &data, &out)) {
        return NULL;
    }
    if (!point_sizes(kind, &size, &encoded)) {
        goto done;
    }
    n = data.len / (Py_ssize_t)encoded;
    if (data.len % (Py_ssize_t)encoded != 0 || out.len != n * (Py_ssize_t)size) {
        PyErr_SetString(PyExc_ValueError, "buffer sizes do not match");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (i = 0; i < n; i++) {
        const uint8_t *in = (const uint8_t *)data.buf + i * (Py_ssize_t)encoded;
        void *p = (char *)out.buf + i * (Py_ssize_t)size;
        size_t k;
        uint8_t any = 0;
        for (k = 0; k < encoded; k++) {
            any |= in[k];
        }
        if (!any) {
            (kind == 1 ? D.ep_set_infty : D.ep2_set_infty)(p); /* all zero: the identity */
            continue;
        }
        if (in[0] != 2 && in[0] != 3) {
            reason = BAD_PREFIX;
            break;
        }
        reason = kind == 1 ? g1_read(p, in) : g2_decode(p, in);
        if (reason != DECODE_OK) {
            break;
        }
        if (!member(kind, p)) {
            reason = NOT_IN_SUBGROUP;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    if (reason == DECODE_OK) {
        ret = Py_None;
        Py_INCREF(ret);
    } else {
        ret = Py_BuildValue("(ni)", i, reason);
    }
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&out);
    return ret;
}

/* in_subgroup(kind, points) -> one byte per RELIC point: 1 when in the prime-order subgroup.
 * The points must lie on the curve (as every decoded point does). */
static PyObject *py_in_subgroup(PyObject *self, PyObject *args) {
    Py_buffer pts;
    int kind;
    size_t size, encoded;
    PyObject *ret = NULL;
    (void)self;
    if (!check_ready() || !PyArg_ParseTuple(args, "iy*", &kind, &pts)) {
        return NULL;
    }
    if (!point_sizes(kind, &size, &encoded)) {
        goto done;
    }
    if (pts.len % (Py_ssize_t)size != 0) {
        PyErr_SetString(PyExc_ValueError, "points buffer is not a whole number of points");
        goto done;
    }
    ret = PyBytes_FromStringAndSize(NULL, pts.len / (Py_ssize_t)size);
    if (ret != NULL) {
        Py_ssize_t i, n = PyBytes_GET_SIZE(ret);
        char *flags = PyBytes_AS_STRING(ret);
        union { ep_st p1; ep2_st p2; } tmp;
        Py_BEGIN_ALLOW_THREADS
        for (i = 0; i < n; i++) {
            memcpy(&tmp, (const char *)pts.buf + i * (Py_ssize_t)size, size);
            flags[i] = (char)member(kind, &tmp);
        }
        Py_END_ALLOW_THREADS
    }
done:
    PyBuffer_Release(&pts);
    return ret;
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
    R.ep_norm_sim = (norm_sim_fn)sym(h, "ep_norm_sim", &missing);
    bn_init();
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
    if (decode_init(h, &missing) != 0) {
        PyErr_SetString(PyExc_OSError, "librelic lacks what the subgroup tests need");
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

/*
 * Fixed-base multiplication with a table of signed-digit windows.
 *
 * A scalar k < 2^255 is written k = sum d_i 2^(w i) with digits |d_i| <= 2^(w-1), ceil(256 / w)
 * of them; the table holds j 2^(w i) P for 1 <= j <= 2^(w-1) as affine points, so each nonzero
 * digit costs one mixed addition (the negative ones negate y). Sums run in Jacobian
 * coordinates on the decoder's field routines, and a whole batch of results is made affine
 * with one field inversion (Montgomery's trick), so the points come out with z = 1: encoding
 * them and pairing them skips RELIC's per-point normalisation.
 *
 * Table layout: an 8-byte header (kind, w, 1 when P is the identity), then the entries, each
 * x then y in RELIC's Montgomery form, window by window.
 */
#define FIXED_HEADER 8
#define MIN_WINDOW 2
#define MAX_WINDOW 12

/*
 * BN254 as mcl lays it out (kinds 3 and 4: G1 and G2 of the `mclbn256` wheel): Fp in
 * Montgomery form with R = 2^256 over four limbs, Fp2 = Fp[i] with i^2 = -1, points as
 * Jacobian (x, y, z) with z = 0 at infinity. Only the field operations the fixed-base code
 * needs are here, on the same Jacobian formulas as BLS12-381's.
 */
#define BN_LIMBS_FP 4
static struct {
    uint64_t p[BN_LIMBS_FP], n0;
    field_ops fp, fp2;
} BN;

static const uint64_t BN_P[BN_LIMBS_FP] = {0xa700000000000013ULL, 0x6121000000000013ULL,
                                           0xba344d8000000008ULL, 0x2523648240000001ULL};

static int bn_geq_p(const uint64_t *a) {
    for (int k = BN_LIMBS_FP - 1; k >= 0; k--) {
        if (a[k] != BN.p[k]) {
            return a[k] > BN.p[k];
        }
    }
    return 1;
}

static void bn_sub_p(uint64_t *a) {
    uint64_t borrow = 0;
    for (int k = 0; k < BN_LIMBS_FP; k++) {
        unsigned __int128 d = (unsigned __int128)a[k] - BN.p[k] - borrow;
        a[k] = (uint64_t)d;
        borrow = (uint64_t)(d >> 64) ? 1 : 0;
    }
}

static void bn_add(uint64_t *c, const uint64_t *a, const uint64_t *b) {
    uint64_t t[BN_LIMBS_FP], carry = 0;
    for (int k = 0; k < BN_LIMBS_FP; k++) {
        unsigned __int128 x = (unsigned __int128)a[k] + b[k] + carry;
        t[k] = (uint64_t)x;
        carry = (uint64_t)(x >> 64);
    }
    if (carry || bn_geq_p(t)) {
        bn_sub_p(t);
    }
    memcpy(c, t, sizeof t);
}

static void bn_sub(uint64_t *c, const uint64_t *a, const uint64_t *b) {
    uint64_t t[BN_LIMBS_FP], borrow = 0, carry = 0;
    for (int k = 0; k < BN_LIMBS_FP; k++) {
        unsigned __int128 d = (unsigned __int128)a[k] - b[k] - borrow;
        t[k] = (uint64_t)d;
        borrow = (uint64_t)(d >> 64) ? 1 : 0;
    }
    if (borrow) {
        for (int k = 0; k < BN_LIMBS_FP; k++) {
            unsigned __int128 x = (unsigned __int128)t[k] + BN.p[k] + carry;
            t[k] = (uint64_t)x;
            carry = (uint64_t)(x >> 64);
        }
    }
    memcpy(c, t, sizeof t);
}

static void bn_dbl(uint64_t *c, const uint64_t *a) {
    bn_add(c, a, a);
}

/* Montgomery multiplication (CIOS); p < 2^254 keeps the running value below 2p. */
static void bn_mul(uint64_t *c, const uint64_t *a, const uint64_t *b) {
    uint64_t t[BN_LIMBS_FP + 2] = {0};
    for (int i = 0; i < BN_LIMBS_FP; i++) {
        unsigned __int128 s;
        uint64_t carry = 0, m;
        for (int j = 0; j < BN_LIMBS_FP; j++) {
            s = (unsigned __int128)a[j] * b[i] + t[j] + carry;
            t[j] = (uint64_t)s;
            carry = (uint64_t)(s >> 64);
        }
        s = (unsigned __int128)t[BN_LIMBS_FP] + carry;
        t[BN_LIMBS_FP] = (uint64_t)s;
        t[BN_LIMBS_FP + 1] = (uint64_t)(s >> 64);
        m = t[0] * BN.n0;
        s = (unsigned __int128)m * BN.p[0] + t[0];
        carry = (uint64_t)(s >> 64);
        for (int j = 1; j < BN_LIMBS_FP; j++) {
            s = (unsigned __int128)m * BN.p[j] + t[j] + carry;
            t[j - 1] = (uint64_t)s;
            carry = (uint64_t)(s >> 64);
        }
        s = (unsigned __int128)t[BN_LIMBS_FP] + carry;
        t[BN_LIMBS_FP - 1] = (uint64_t)s;
        t[BN_LIMBS_FP] = t[BN_LIMBS_FP + 1] + (uint64_t)(s >> 64);
    }
    if (t[BN_LIMBS_FP] || bn_geq_p(t)) {
        bn_sub_p(t);
    }
    memcpy(c, t, BN_LIMBS_FP * 8);
}

static void bn_sqr(uint64_t *c, const uint64_t *a) {
    bn_mul(c, a, a);
}

/* c = a^(p - 2) = 1/a for a != 0. */
static void bn_inv(uint64_t *c, const uint64_t *a) {
    uint64_t e[BN_LIMBS_FP], acc[BN_LIMBS_FP], base[BN_LIMBS_FP];
    memcpy(e, BN.p, sizeof e);
    e[0] -= 2; /* p is odd and above 2: no borrow */
    memcpy(acc, BN.fp.one, sizeof acc);
    memcpy(base, a, sizeof base);
    for (int bit = 64 * BN_LIMBS_FP - 1; bit >= 0; bit--) {
        bn_sqr(acc, acc);
        if ((e[bit / 64] >> (bit % 64)) & 1) {
            bn_mul(acc, acc, base);
        }
    }
    memcpy(c, acc, sizeof acc);
}

static void bn2_add(uint64_t *c, const uint64_t *a, const uint64_t *b) {
    bn_add(c, a, b);
    bn_add(c + BN_LIMBS_FP, a + BN_LIMBS_FP, b + BN_LIMBS_FP);
}

static void bn2_sub(uint64_t *c, const uint64_t *a, const uint64_t *b) {
    bn_sub(c, a, b);
    bn_sub(c + BN_LIMBS_FP, a + BN_LIMBS_FP, b + BN_LIMBS_FP);
}

static void bn2_dbl(uint64_t *c, const uint64_t *a) {
    bn2_add(c, a, a);
}

static void bn2_mul(uint64_t *c, const uint64_t *a, const uint64_t *b) {
    uint64_t t0[BN_LIMBS_FP], t1[BN_LIMBS_FP], s0[BN_LIMBS_FP], s1[BN_LIMBS_FP];
    bn_mul(t0, a, b);
    bn_mul(t1, a + BN_LIMBS_FP, b + BN_LIMBS_FP);
    bn_add(s0, a, a + BN_LIMBS_FP);
    bn_add(s1, b, b + BN_LIMBS_FP);
    bn_mul(s0, s0, s1);
    bn_sub(s0, s0, t0);
    bn_sub(c + BN_LIMBS_FP, s0, t1);
    bn_sub(c, t0, t1);
}

static void bn2_sqr(uint64_t *c, const uint64_t *a) {
    uint64_t s[BN_LIMBS_FP], d[BN_LIMBS_FP], m[BN_LIMBS_FP];
    bn_add(s, a, a + BN_LIMBS_FP);
    bn_sub(d, a, a + BN_LIMBS_FP);
    bn_mul(m, a, a + BN_LIMBS_FP);
    bn_mul(c, s, d);
    bn_dbl(c + BN_LIMBS_FP, m);
}

static void bn2_inv(uint64_t *c, const uint64_t *a) {
    uint64_t t[BN_LIMBS_FP], u[BN_LIMBS_FP], zero[BN_LIMBS_FP] = {0};
    bn_sqr(t, a);
    bn_sqr(u, a + BN_LIMBS_FP);
    bn_add(t, t, u);
    bn_inv(t, t);
    bn_mul(c, a, t);
    bn_mul(u, a + BN_LIMBS_FP, t);
    bn_sub(c + BN_LIMBS_FP, zero, u);
}

static void bn_init(void) {
    uint64_t inv = 1, x[BN_LIMBS_FP] = {1, 0, 0, 0};
    memcpy(BN.p, BN_P, sizeof BN.p);
    for (int i = 0; i < 6; i++) {
        inv *= 2 - BN.p[0] * inv;
    }
    BN.n0 = (uint64_t)0 - inv;
    for (int i = 0; i < 64 * BN_LIMBS_FP; i++) {
        bn_dbl(x, x); /* 2^256 mod p: R, the Montgomery form of 1 */
    }
    BN.fp = (field_ops){bn_mul, bn_add, bn_sub, bn_sqr, bn_dbl, bn_inv, BN_LIMBS_FP, {0}};
    BN.fp2 = (field_ops){bn2_mul, bn2_add, bn2_sub, bn2_sqr, bn2_dbl, bn2_inv, 2 * BN_LIMBS_FP, {0}};
    memcpy(BN.fp.one, x, sizeof x);
    memcpy(BN.fp2.one, x, sizeof x);
}

/* The field of kind 1, 2 (BLS12-381 G1, G2 in RELIC) or 3, 4 (BN254 G1, G2 in mcl). */
static const field_ops *field_of(int kind) {
    switch (kind) {
        case 1: return &D.fp;
        case 2: return &D.fp2;
        case 3: return &BN.fp;
        default: return &BN.fp2;
    }
}

/* The size of a point of a kind in its library's layout; 0 with an exception for a bad kind. */
static size_t point_bytes(int kind) {
    if (kind == 1 || kind == 2) {
        return kind == 1 ? sizeof(ep_st) : sizeof(ep2_st);
    }
    if (kind == 3 || kind == 4) {
        return 3 * field_of(kind)->limbs * 8;
    }
    PyErr_SetString(PyExc_ValueError, "kind must be 1, 2 (BLS12-381 G1, G2) or 3, 4 (BN254)");
    return 0;
}

static int fixed_digits(int w) {
    return (256 + w - 1) / w;
}

static size_t fixed_entry_bytes(int kind) {
    return 2 * field_of(kind)->limbs * 8;
}

static size_t fixed_table_bytes(int kind, int w) {
    return FIXED_HEADER + (size_t)fixed_digits(w) * ((size_t)1 << (w - 1)) * fixed_entry_bytes(kind);
}

/* c = 1/a in Fp for a != 0: (a^((p-3)/4))^4 a = a^(p-2). */
static void fp_inv_c(uint64_t *c, const uint64_t *a) {
    uint64_t w[FP_LIMBS];
    fp_pow_p34(w, a);
    D.fp.sqr(w, w);
    D.fp.sqr(w, w);
    D.fp.mul(c, w, a);
}

/* c = 1/a in Fp2 = Fp[i], i^2 = -1: conj(a) / (a0^2 + a1^2). */
static void fp2_inv_c(uint64_t *c, const uint64_t *a) {
    uint64_t t[FP_LIMBS], u[FP_LIMBS], zero[FP_LIMBS] = {0};
    D.fp.sqr(t, a);
    D.fp.sqr(u, a + FP_LIMBS);
    D.fp.add(t, t, u);
    fp_inv_c(t, t);
    D.fp.mul(c, a, t);
    D.fp.mul(u, a + FP_LIMBS, t);
    D.fp.sub(c + FP_LIMBS, zero, u);
}

/* Make every finite point of pts affine (z = 1) with one inversion; scratch holds n elements. */
static void normalize_batch(int kind, jacobian *pts, size_t n, uint64_t *scratch) {
    const field_ops *f = field_of(kind);
    size_t limbs = f->limbs, i;
    uint64_t acc[MAX_LIMBS], zi[MAX_LIMBS], zz[MAX_LIMBS];
    memcpy(acc, f->one, limbs * 8);
    for (i = 0; i < n; i++) {
        if (!pts[i].inf) {
            memcpy(scratch + i * limbs, acc, limbs * 8);
            f->mul(acc, acc, pts[i].z);
        }
    }
    f->inv(acc, acc);
    for (i = n; i-- > 0;) {
        if (pts[i].inf) {
            continue;
        }
        f->mul(zi, acc, scratch + i * limbs);
        f->mul(acc, acc, pts[i].z);
        f->sqr(zz, zi);
        f->mul(pts[i].x, pts[i].x, zz);
        f->mul(zz, zz, zi);
        f->mul(pts[i].y, pts[i].y, zz);
        memcpy(pts[i].z, f->one, limbs * 8);
    }
}

/* A point of a kind in its library's layout as an affine (or infinite) Jacobian point. */
static void read_point(int kind, const void *in, jacobian *t) {
    const field_ops *f = field_of(kind);
    size_t bytes = f->limbs * 8;
    if (kind == 1 || kind == 2) {
        union { ep_st p1; ep2_st p2; } q;
        memcpy(&q, in, kind == 1 ? sizeof(ep_st) : sizeof(ep2_st));
        t->inf = kind == 1 ? R.ep_is_infty(&q) : R.ep2_is_infty(&q);
        if (!t->inf) {
            (kind == 1 ? R.ep_norm : R.ep2_norm)(&q, &q);
            memcpy(t->x, kind == 1 ? q.p1.x : &q.p2.x[0][0], bytes);
            memcpy(t->y, kind == 1 ? q.p1.y : &q.p2.y[0][0], bytes);
            memcpy(t->z, f->one, bytes);
        }
        return;
    }
    {
        uint64_t scratch[MAX_LIMBS];
        const uint64_t *v = in;
        memcpy(t->x, v, bytes);
        memcpy(t->y, v + f->limbs, bytes);
        memcpy(t->z, v + 2 * f->limbs, bytes);
        t->inf = is_zero(f, t->z);
        normalize_batch(kind, t, 1, scratch);
    }
}

/* An affine or infinite Jacobian point in its library's layout. */
static void write_point(int kind, void *out, const jacobian *t) {
    const field_ops *f = field_of(kind);
    size_t bytes = f->limbs * 8;
    if (kind == 3 || kind == 4) {
        uint64_t *v = out;
        memset(v, 0, 3 * bytes);
        if (!t->inf) {
            memcpy(v, t->x, bytes);
            memcpy(v + f->limbs, t->y, bytes);
            memcpy(v + 2 * f->limbs, f->one, bytes);
        }
        return;
    }
    if (t->inf) {
        (kind == 1 ? D.ep_set_infty : D.ep2_set_infty)(out);
        return;
    }
    if (kind == 1) {
        ep_st *p = out;
        memcpy(p->x, t->x, bytes);
        memcpy(p->y, t->y, bytes);
        memcpy(p->z, f->one, bytes);
        p->coord = D.basic;
    } else {
        ep2_st *p = out;
        memcpy(p->x, t->x, bytes);
        memcpy(p->y, t->y, bytes);
        memcpy(p->z, f->one, bytes);
        p->coord = D.basic;
    }
}

/* fixed_table(kind, point, w) -> the table of a point (in its library's layout) for windows of
 * w bits. */
static PyObject *py_fixed_table(PyObject *self, PyObject *args) {
    Py_buffer pt;
    int kind, w;
    size_t size;
    PyObject *table = NULL;
    (void)self;
    if (!check_ready() || !PyArg_ParseTuple(args, "iy*i", &kind, &pt, &w)) {
        return NULL;
    }
    if ((size = point_bytes(kind)) == 0) {
        goto done;
    }
    if (pt.len != (Py_ssize_t)size || w < MIN_WINDOW || w > MAX_WINDOW) {
        PyErr_SetString(PyExc_ValueError, "bad point buffer or window size");
        goto done;
    }
    table = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)fixed_table_bytes(kind, w));
    if (table == NULL) {
        goto done;
    }
    {
        /* The window bases 2^(w i) P by doublings, made affine together; then every multiple
         * j 2^(w i) P by mixed additions, made affine together: two inversions in all. */
        const field_ops *f = field_of(kind);
        size_t limbs = f->limbs, half = (size_t)1 << (w - 1), entry = fixed_entry_bytes(kind);
        size_t digits = (size_t)fixed_digits(w), count = digits * half, i, j;
        int infinite = 0;
        unsigned char *out = (unsigned char *)PyBytes_AS_STRING(table);
        jacobian *bases = malloc(digits * sizeof *bases), *all = malloc(count * sizeof *all);
        uint64_t *scratch = malloc(count * limbs * 8);
        if (bases == NULL || all == NULL || scratch == NULL) {
            free(bases);
            free(all);
            free(scratch);
            Py_CLEAR(table);
            PyErr_NoMemory();
            goto done;
        }
        memset(out, 0, fixed_table_bytes(kind, w));
        out[0] = (unsigned char)kind;
        out[1] = (unsigned char)w;
        Py_BEGIN_ALLOW_THREADS
        read_point(kind, pt.buf, &bases[0]);
        if (bases[0].inf) {
            out[2] = 1;
        } else {
            for (i = 1; i < digits; i++) {
                int k;
                bases[i] = bases[i - 1];
                for (k = 0; k < w; k++) {
                    jac_dbl(f, &bases[i]);
                }
            }
            normalize_batch(kind, bases, digits, scratch);
            for (i = 0; i < digits; i++) {
                infinite |= bases[i].inf;
            }
            for (i = 0; i < digits && !infinite; i++) {
                all[i * half] = bases[i];
                for (j = 1; j < half; j++) {
                    all[i * half + j] = all[i * half + j - 1];
                    jac_add_affine(f, &all[i * half + j], bases[i].x, bases[i].y);
                }
            }
            if (!infinite) {
                normalize_batch(kind, all, count, scratch);
                for (i = 0; i < count; i++) {
                    unsigned char *e = out + FIXED_HEADER + i * entry;
                    infinite |= all[i].inf;
                    memcpy(e, all[i].x, limbs * 8);
                    memcpy(e + limbs * 8, all[i].y, limbs * 8);
                }
            }
        }
        Py_END_ALLOW_THREADS
        free(bases);
        free(all);
        free(scratch);
        if (infinite) {
            /* only a point outside the prime-order subgroup has such small multiples */
            Py_CLEAR(table);
            PyErr_SetString(PyExc_ValueError, "the point is not in the prime-order subgroup");
        }
    }
done:
    PyBuffer_Release(&pt);
    return table;
}

/* fixed_mul(table, scalars, out): scalars are 32-byte little-endian integers below 2^255;
 * out receives one affine (or infinite) point per scalar, in the layout of the table's kind. */
static PyObject *py_fixed_mul(PyObject *self, PyObject *args) {
    Py_buffer table, scalars, out;
    int kind, w, bad = 0;
    size_t size;
    Py_ssize_t n = 0;
    PyObject *ret = NULL;
    jacobian *acc = NULL;
    uint64_t *scratch = NULL;
    (void)self;
    if (!check_ready() || !PyArg_ParseTuple(args, "y*y*w*", &table, &scalars, &out)) {
        return NULL;
    }
    if (table.len < FIXED_HEADER) {
        PyErr_SetString(PyExc_ValueError, "not a fixed-base table");
        goto done;
    }
    kind = ((const unsigned char *)table.buf)[0];
    w = ((const unsigned char *)table.buf)[1];
    if ((size = point_bytes(kind)) == 0 || w < MIN_WINDOW || w > MAX_WINDOW ||
        (size_t)table.len != fixed_table_bytes(kind, w)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "not a fixed-base table");
        goto done;
    }
    n = scalars.len / 32;
    if (scalars.len % 32 != 0 || out.len != n * (Py_ssize_t)size) {
        PyErr_SetString(PyExc_ValueError, "buffer sizes do not match");
        goto done;
    }
    acc = malloc((size_t)(n > 0 ? n : 1) * sizeof *acc);
    scratch = malloc((size_t)(n > 0 ? n : 1) * MAX_LIMBS * 8);
    if (acc == NULL || scratch == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    {
        const field_ops *f = field_of(kind);
        const unsigned char *t = (const unsigned char *)table.buf;
        size_t limbs = f->limbs, half = (size_t)1 << (w - 1), entry = fixed_entry_bytes(kind);
        int digits = fixed_digits(w), identity = t[2];
        uint64_t neg_y[MAX_LIMBS], zero[MAX_LIMBS] = {0};
        Py_ssize_t i;
        for (i = 0; i < n && !bad; i++) {
            uint64_t k[4];
            int d, carry = 0;
            const unsigned char *entries[256 / MIN_WINDOW];
            int signs[256 / MIN_WINDOW], used = 0, u;
            memcpy(k, (const unsigned char *)scalars.buf + 32 * i, 32);
            bad = (int)(k[3] >> 63);
            acc[i].inf = 1;
            for (d = 0; d < digits && !identity; d++) {
                int bit = d * w, digit;
                uint64_t chunk = k[bit / 64] >> (bit % 64);
                if (bit % 64 + w > 64 && bit / 64 < 3) {
                    chunk |= k[bit / 64 + 1] << (64 - bit % 64);
                }
                digit = (int)(chunk & (((uint64_t)1 << w) - 1)) + carry;
                carry = digit > (int)half;
                digit -= carry << w;
                if (digit != 0) {
                    entries[used] = t + FIXED_HEADER + ((size_t)d * half + (size_t)abs(digit) - 1) * entry;
                    signs[used++] = digit < 0;
                }
            }
            /* The entries a scalar needs are known before the first addition: each is fetched
             * from memory while the one before it is added (a table is megabytes). */
            for (u = 0; u < used; u++) {
                const uint64_t *e = (const uint64_t *)entries[u];
                const uint64_t *y = e + limbs;
                if (u + 1 < used) {
                    size_t line;
                    for (line = 0; line < entry; line += 64) {
                        __builtin_prefetch(entries[u + 1] + line);
                    }
                }
                if (signs[u]) {
                    f->sub(neg_y, zero, y);
                    y = neg_y;
                }
                jac_add_affine(f, &acc[i], e, y);
            }
        }
        if (!bad) {
            normalize_batch(kind, acc, (size_t)n, scratch);
            for (i = 0; i < n; i++) {
                write_point(kind, (char *)out.buf + i * (Py_ssize_t)size, &acc[i]);
            }
        }
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "a scalar is not below 2^255");
        goto done;
    }
    ret = Py_None;
    Py_INCREF(ret);
done:
    free(acc);
    free(scratch);
    PyBuffer_Release(&table);
    PyBuffer_Release(&scalars);
    PyBuffer_Release(&out);
    return ret;
}

/* Make the finite points of a RELIC array affine in place, with one inversion for all those
 * that are not yet (RELIC's batch normalisation, which must not see the point at infinity). */
static int normalize_relic(int kind, char *pts, Py_ssize_t n) {
    size_t size = kind == 1 ? sizeof(ep_st) : sizeof(ep2_st);
    Py_ssize_t i, k = 0;
    Py_ssize_t *at = malloc((size_t)(n > 0 ? n : 1) * sizeof *at);
    char *tmp = malloc((size_t)(n > 0 ? n : 1) * size);
    if (at == NULL || tmp == NULL) {
        free(at);
        free(tmp);
        return 0;
    }
    for (i = 0; i < n; i++) {
        char *q = pts + i * (Py_ssize_t)size;
        int coord = kind == 1 ? ((ep_st *)q)->coord : ((ep2_st *)q)->coord;
        int inf = kind == 1 ? R.ep_is_infty(q) : R.ep2_is_infty(q);
        if (!inf && coord != D.basic) {
            memcpy(tmp + k * (Py_ssize_t)size, q, size);
            at[k++] = i;
        }
    }
    if (k > 0) {
        (kind == 1 ? R.ep_norm_sim : R.ep2_norm_sim)(tmp, tmp, (int)k);
    }
    for (i = 0; i < k; i++) {
        memcpy(pts + at[i] * (Py_ssize_t)size, tmp + i * (Py_ssize_t)size, size);
    }
    free(at);
    free(tmp);
    return 1;
}

/* normalize(kind, points): make RELIC points affine in place (one inversion per call). */
static PyObject *py_normalize(PyObject *self, PyObject *args) {
    Py_buffer pts;
    int kind, ok = 1;
    size_t size, encoded;
    (void)self;
    if (!check_ready() || !PyArg_ParseTuple(args, "iw*", &kind, &pts)) {
        return NULL;
    }
    if (!point_sizes(kind, &size, &encoded) || pts.len % (Py_ssize_t)size != 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "points buffer is not a whole number of points");
        }
        PyBuffer_Release(&pts);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    ok = normalize_relic(kind, pts.buf, pts.len / (Py_ssize_t)size);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&pts);
    if (!ok) {
        return PyErr_NoMemory();
    }
    Py_RETURN_NONE;
}

/*
 * column_sums(points, f, out): out[j] = sum_i f[i][j] points[i] in G1, for an n x m matrix f
 * of signed 64-bit entries (native byte order, row by row) and n RELIC points; the m sums come
 * out affine. Each column runs double-and-add over the bits of its largest entry with all
 * rows at once, so entries of a few bits cost a few additions per row.
 */
static PyObject *py_column_sums(PyObject *self, PyObject *args) {
    Py_buffer pts, f, out;
    Py_ssize_t n, m = 0, i, j;
    PyObject *ret = NULL;
    jacobian *acc = NULL;
    uint64_t *negy = NULL, *scratch = NULL;
    char *affine = NULL;
    (void)self;
    if (!check_ready() || !PyArg_ParseTuple(args, "y*y*w*", &pts, &f, &out)) {
        return NULL;
    }
    n = pts.len / (Py_ssize_t)sizeof(ep_st);
    if (pts.len % (Py_ssize_t)sizeof(ep_st) != 0 || n == 0 || f.len % (n * 8) != 0) {
        PyErr_SetString(PyExc_ValueError, "buffer sizes do not match");
        goto done;
    }
    m = f.len / (n * 8);
    if (out.len != m * (Py_ssize_t)sizeof(ep_st)) {
        PyErr_SetString(PyExc_ValueError, "buffer sizes do not match");
        goto done;
    }
    acc = malloc((size_t)(m > 0 ? m : 1) * sizeof *acc);
    negy = malloc((size_t)n * FP_BYTES);
    scratch = malloc((size_t)(m > 0 ? m : 1) * FP_BYTES);
    affine = malloc((size_t)n * sizeof(ep_st));
    if (acc == NULL || negy == NULL || scratch == NULL || affine == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(affine, pts.buf, (size_t)n * sizeof(ep_st));
    if (!normalize_relic(1, affine, n)) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    {
        const ep_st *p = (const ep_st *)affine;
        const int64_t *fm = f.buf;
        uint64_t zero[FP_LIMBS] = {0};
        for (i = 0; i < n; i++) {
            D.fp.sub(negy + i * FP_LIMBS, zero, p[i].y);
        }
        for (j = 0; j < m; j++) {
            uint64_t top = 0;
            int bit;
            acc[j].inf = 1;
            for (i = 0; i < n; i++) {
                int64_t v = fm[i * m + j];
                top |= v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
            }
            for (bit = top ? 63 - __builtin_clzll(top) : -1; bit >= 0; bit--) {
                jac_dbl(&D.fp, &acc[j]);
                for (i = 0; i < n; i++) {
                    int64_t v = fm[i * m + j];
                    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
                    if ((mag >> bit) & 1 && !R.ep_is_infty(&p[i])) {
                        jac_add_affine(&D.fp, &acc[j], p[i].x, v < 0 ? negy + i * FP_LIMBS : p[i].y);
                    }
                }
            }
        }
        normalize_batch(1, acc, (size_t)m, scratch);
        for (j = 0; j < m; j++) {
            write_point(1, (char *)out.buf + j * (Py_ssize_t)sizeof(ep_st), &acc[j]);
        }
    }
    Py_END_ALLOW_THREADS
    ret = Py_None;
    Py_INCREF(ret);
done:
    free(acc);
    free(negy);
    free(scratch);
    free(affine);
    PyBuffer_Release(&pts);
    PyBuffer_Release(&f);
    PyBuffer_Release(&out);
    return ret;
}

/* set_multiplication("adx" | "relic"): the Fp multiplication the decoder uses (the default is
 * "adx" where the CPU has it), so that the tests run the decoder on both. */
static PyObject *py_set_multiplication(PyObject *self, PyObject *arg) {
    const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    (void)self;
    if (!check_ready()) {
        return NULL;
    }
    if (name != NULL && strcmp(name, "relic") == 0) {
        D.fp.mul = D.relic_mul;
        D.fp.sqr = D.relic_sqr;
        Py_RETURN_NONE;
    }
    if (name != NULL && strcmp(name, "adx") == 0) {
        if (!D.adx) {
            PyErr_SetString(PyExc_RuntimeError, "this CPU lacks BMI2 or ADX");
            return NULL;
        }
        D.fp.mul = fp_mul_adx;
        D.fp.sqr = fp_sqr_adx;
        Py_RETURN_NONE;
    }
    PyErr_Format(PyExc_ValueError, "unknown multiplication %R (use 'adx' or 'relic')", arg);
    return NULL;
}

static PyMethodDef methods[] = {
    {"init", py_init, METH_VARARGS, "Bind to the loaded librelic and learn its line layout."},
    {"prepare", py_prepare, METH_VARARGS, "Miller-loop lines of G2 points."},
    {"pair", py_pair, METH_VARARGS, "Product of pairings with prepared G2 points."},
    {"baby_steps", py_baby_steps, METH_VARARGS, "First limbs of successive powers in GT."},
    {"fixed_table", py_fixed_table, METH_VARARGS, "Signed-window table of a point."},
    {"fixed_mul", py_fixed_mul, METH_VARARGS, "Fixed-base multiplications with a window table."},
    {"normalize", py_normalize, METH_VARARGS, "Make RELIC points affine, one inversion in all."},
    {"column_sums", py_column_sums, METH_VARARGS, "Sums of G1 points weighted by matrix columns."},
    {"decode", py_decode, METH_VARARGS, "Decode and validate consecutive compressed points."},
    {"in_subgroup", py_in_subgroup, METH_VARARGS, "Endomorphism subgroup tests of points."},
    {"set_multiplication", py_set_multiplication, METH_O, "Choose the decoder's Fp multiplication."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_pairing", "Prepared pairings over petrelic's RELIC.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__pairing(void) {
    return PyModule_Create(&module);
}
