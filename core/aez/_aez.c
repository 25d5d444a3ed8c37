/*
 * AEZ v5 (Hoang, Krovetz, Rogaway) as a CPython extension: core.aez._aez.
 *
 * The algorithm (hash, PRF, AEZ-tiny, AEZ-core, encrypt/decrypt) is written once, in plain C,
 * over a 16-byte block type. Only the block cipher work goes through a backend: batches of AES4
 * and AES10 calls, and the two bulk passes of AEZ-core. Three backends give identical bytes:
 *
 *   vaes      the bulk passes with 512-bit VAES, 16 pairs (32 blocks) at a time; everything
 *             else as aesni. Picked when CPUID reports VAES and AVX-512F (with OS support).
 *   aesni     AESENC intrinsics, 8 pairs (16 blocks) in flight in the bulk passes, picked when
 *             CPUID reports AES-NI and SSE4.1. Both SIMD backends are compiled with per-function
 *             target attributes, so the file builds without -maes or -mavx512f.
 *   portable  a table-driven AES round (T-tables computed at import). Runs anywhere, but its
 *             table look-ups depend on secret data, so it is not constant-time against cache
 *             timing; it exists for machines without AES-NI and to cross-check the fast path.
 *
 * Tag and padding checks OR-accumulate over every byte (no early exit). The GIL is released
 * around the kernel for messages of GIL_RELEASE_BYTES or more.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define AEZ_HAVE_AESNI 1
#include <immintrin.h>
#endif

#define MAX_TAU 255
#define GIL_RELEASE_BYTES 4096
#define EXTRACTED_KEY_BYTES 48

/* ------------------------------------------------------------------------------------------ */
/* Blocks and GF(2^128) doubling                                                              */

typedef union {
    _Alignas(16) uint8_t b[16];
    uint64_t q[2];
} blk;

static inline blk bx(blk a, blk b) {
    a.q[0] ^= b.q[0];
    a.q[1] ^= b.q[1];
    return a;
}

static inline blk bload(const uint8_t *p) {
    blk r;
    memcpy(r.b, p, 16);
    return r;
}

static inline blk blk_zero(void) {
    blk r = {{0}};
    return r;
}

/* Doubling, big-endian, as in CMAC: shift left by one and reduce by x^128 + x^7 + x^2 + x + 1. */
static inline void blk_dbl(blk *x) {
    uint8_t carry = (uint8_t)(x->b[0] >> 7);
    for (int k = 0; k < 15; k++) {
        x->b[k] = (uint8_t)((x->b[k] << 1) | (x->b[k + 1] >> 7));
    }
    x->b[15] = (uint8_t)((x->b[15] << 1) ^ ((0u - carry) & 0x87u));
}

/* n·x for an arbitrary non-negative integer n. */
static blk blk_mul(uint64_t n, blk x) {
    blk r = blk_zero();
    while (n) {
        if (n & 1) {
            r = bx(r, x);
        }
        blk_dbl(&x);
        n >>= 1;
    }
    return r;
}

/* x (fewer than 16 bytes), then 0x80, then zeros. */
static inline blk pad10(const uint8_t *p, size_t n) {
    blk r = blk_zero();
    if (n) {
        memcpy(r.b, p, n);
    }
    r.b[n] = 0x80;
    return r;
}

static void secure_zero(void *p, size_t n) {
    volatile uint8_t *v = (volatile uint8_t *)p;
    while (n--) {
        *v++ = 0;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Key material                                                                               */

typedef struct {
    blk I, J, L;  /* the extracted key; also the AES round keys */
    blk I2;       /* 2I: the I part of every tweak with 1 <= i <= 8 */
    blk J3;       /* 3J: tweak of the tau block in AEZ-hash */
    blk Lm[8];    /* 0·L .. 7·L */
    blk JL[8];    /* J ^ ((l+1) mod 8)·L: E^{1,i} tweak without its I part, lane l of a group */
    blk J2L[8];   /* 2J ^ ((l+1) mod 8)·L: the same for E^{2,i} */
} aez_key;

static void key_expand(aez_key *k, const uint8_t ek[EXTRACTED_KEY_BYTES]) {
    k->I = bload(ek);
    k->J = bload(ek + 16);
    k->L = bload(ek + 32);
    k->I2 = k->I;
    blk_dbl(&k->I2);
    blk j2 = k->J;
    blk_dbl(&j2);
    k->J3 = bx(j2, k->J);
    k->Lm[0] = blk_zero();
    k->Lm[1] = k->L;
    for (int m = 2; m < 8; m += 2) {
        k->Lm[m] = k->Lm[m / 2];
        blk_dbl(&k->Lm[m]);
        k->Lm[m + 1] = bx(k->Lm[m], k->L);
    }
    for (int l = 0; l < 8; l++) {
        k->JL[l] = bx(k->J, k->Lm[(l + 1) % 8]);
        k->J2L[l] = bx(j2, k->Lm[(l + 1) % 8]);
    }
    secure_zero(&j2, sizeof j2);
}

/* ------------------------------------------------------------------------------------------ */
/* Backends                                                                                   */

/*
 * aes4/aes10 encipher n independent blocks in place; the caller has already XORed each block
 * with its tweak. AES4 uses the round keys J, I, L, 0 and AES10 uses I, J, L three times then
 * I; every round is a full AESENC round (MixColumns included).
 *
 * pass1 runs AEZ-core's first pass over npairs pairs from `in` to `out` (which may be equal),
 * starting at a pair index that is a multiple of 8 whose I part is *ipart; it advances *ipart
 * past every full group of 8 and XORs each Xb_i into *X. pass2 runs the second pass in place
 * from pair 0 and XORs each Y_i into *Y.
 */
typedef struct {
    const char *name;
    void (*aes4)(const aez_key *k, blk *x, size_t n);
    void (*aes10)(const aez_key *k, blk *x, size_t n);
    void (*pass1)(const aez_key *k, const uint8_t *in, uint8_t *out, size_t npairs, blk *ipart,
                  blk *X);
    void (*pass2)(const aez_key *k, uint8_t *buf, size_t npairs, const blk *S, blk *Y);
} backend;

/* Portable: T-table AES round. ---------------------------------------------------------------- */

static uint32_t T0[256];

static inline uint8_t xtime(uint8_t v) {
    return (uint8_t)((v << 1) ^ ((v >> 7) * 0x1b));
}

static inline uint8_t rotl8(uint8_t v, int s) {
    return (uint8_t)((v << s) | (v >> (8 - s)));
}

/* The S-box from its definition (inverse in GF(2^8), then the affine map), walking the field
 * with the generator 3 and its inverse together, then T0[x] = (2S, S, S, 3S) by row. */
static void tables_init(void) {
    uint8_t sbox[256];
    uint8_t p = 1, q = 1;
    do {
        p = (uint8_t)(p ^ xtime(p));          /* p *= 3 */
        q = (uint8_t)(q ^ (q << 1));          /* q /= 3 */
        q = (uint8_t)(q ^ (q << 2));
        q = (uint8_t)(q ^ (q << 4));
        if (q & 0x80) {
            q ^= 0x09;
        }
        sbox[p] = (uint8_t)(q ^ rotl8(q, 1) ^ rotl8(q, 2) ^ rotl8(q, 3) ^ rotl8(q, 4) ^ 0x63);
    } while (p != 1);
    sbox[0] = 0x63;
    for (int x = 0; x < 256; x++) {
        uint32_t s = sbox[x], s2 = xtime(sbox[x]);
        T0[x] = s2 | (s << 8) | (s << 16) | ((s2 ^ s) << 24);
    }
}

static inline uint32_t rotl32(uint32_t v, int s) {
    return (v << s) | (v >> (32 - s));
}

/* One AESENC round: output column c, row r reads input byte 4((c+r) mod 4) + r. */
static inline void round_p(blk *s, const blk *key) {
    const uint8_t *b = s->b;
    blk o;
    for (int c = 0; c < 4; c++) {
        uint32_t w = T0[b[4 * c]] ^ rotl32(T0[b[(4 * c + 5) & 15]], 8) ^
                     rotl32(T0[b[(4 * c + 10) & 15]], 16) ^ rotl32(T0[b[(4 * c + 15) & 15]], 24);
        o.b[4 * c] = (uint8_t)w;
        o.b[4 * c + 1] = (uint8_t)(w >> 8);
        o.b[4 * c + 2] = (uint8_t)(w >> 16);
        o.b[4 * c + 3] = (uint8_t)(w >> 24);
    }
    *s = bx(o, *key);
}

static const blk ZERO_BLOCK = {{0}};

static inline void aes4_one_p(const aez_key *k, blk *x) {
    round_p(x, &k->J);
    round_p(x, &k->I);
    round_p(x, &k->L);
    round_p(x, &ZERO_BLOCK);
}

static void aes4_p(const aez_key *k, blk *x, size_t n) {
    for (size_t m = 0; m < n; m++) {
        aes4_one_p(k, &x[m]);
    }
}

static void aes10_p(const aez_key *k, blk *x, size_t n) {
    const blk *keys[3] = {&k->I, &k->J, &k->L};
    for (size_t m = 0; m < n; m++) {
        for (int r = 0; r < 10; r++) {
            round_p(&x[m], keys[r % 3]);
        }
    }
}

static void pass1_p(const aez_key *k, const uint8_t *in, uint8_t *out, size_t npairs, blk *ipart,
                    blk *X) {
    for (size_t m = 0; m < npairs; m++, in += 32, out += 32) {
        size_t l = m % 8;
        blk t = bx(bx(bload(in + 16), *ipart), k->JL[l]);
        aes4_one_p(k, &t);
        blk w = bx(bload(in), t);
        blk u = bx(w, k->I);
        aes4_one_p(k, &u);
        blk xb = bx(bload(in + 16), u);
        memcpy(out, w.b, 16);
        memcpy(out + 16, xb.b, 16);
        *X = bx(*X, xb);
        if (l == 7) {
            blk_dbl(ipart);
        }
    }
}

static void pass2_p(const aez_key *k, uint8_t *buf, size_t npairs, const blk *S, blk *Y) {
    blk ipart = k->I2;
    for (size_t m = 0; m < npairs; m++, buf += 32) {
        size_t l = m % 8;
        blk sp = bx(bx(*S, ipart), k->J2L[l]);
        aes4_one_p(k, &sp);
        blk y = bx(bload(buf), sp);
        blk z = bx(bload(buf + 16), sp);
        *Y = bx(*Y, y);
        blk t = bx(z, k->I);
        aes4_one_p(k, &t);
        y = bx(y, t);
        t = bx(bx(y, ipart), k->JL[l]);
        aes4_one_p(k, &t);
        z = bx(z, t);
        memcpy(buf, z.b, 16);
        memcpy(buf + 16, y.b, 16);
        if (l == 7) {
            blk_dbl(&ipart);
        }
    }
}

static const backend PORTABLE = {"portable", aes4_p, aes10_p, pass1_p, pass2_p};

/* AES-NI ---------------------------------------------------------------------------------- */

#ifdef AEZ_HAVE_AESNI
#define NI __attribute__((target("aes,sse4.1")))

NI static inline __m128i ld(const void *p) {
    return _mm_loadu_si128((const __m128i *)p);
}

NI static inline void st(void *p, __m128i v) {
    _mm_storeu_si128((__m128i *)p, v);
}

#define ENC(s, key) ((s) = _mm_aesenc_si128((s), (key)))

/* Four AES4 rounds on the first n lanes; with a constant n the loops unroll into registers. */
#define AES4_LANES(s, n)                    \
    do {                                    \
        _Pragma("GCC unroll 8") for (size_t l_ = 0; l_ < (n); l_++) ENC(s[l_], J); \
        _Pragma("GCC unroll 8") for (size_t l_ = 0; l_ < (n); l_++) ENC(s[l_], I); \
        _Pragma("GCC unroll 8") for (size_t l_ = 0; l_ < (n); l_++) ENC(s[l_], L); \
        _Pragma("GCC unroll 8") for (size_t l_ = 0; l_ < (n); l_++) ENC(s[l_], Z); \
    } while (0)

NI static void aes4_ni(const aez_key *k, blk *x, size_t n) {
    const __m128i J = ld(k->J.b), I = ld(k->I.b), L = ld(k->L.b), Z = _mm_setzero_si128();
    size_t m = 0;
    for (; m + 4 <= n; m += 4) {
        __m128i s[4] = {ld(x[m].b), ld(x[m + 1].b), ld(x[m + 2].b), ld(x[m + 3].b)};
        AES4_LANES(s, 4);
        for (int l = 0; l < 4; l++) {
            st(x[m + l].b, s[l]);
        }
    }
    for (; m < n; m++) {
        __m128i s[1] = {ld(x[m].b)};
        AES4_LANES(s, 1);
        st(x[m].b, s[0]);
    }
}

NI static void aes10_ni(const aez_key *k, blk *x, size_t n) {
    const __m128i I = ld(k->I.b), J = ld(k->J.b), L = ld(k->L.b);
    size_t m = 0;
    for (; m + 4 <= n; m += 4) {
        __m128i s[4] = {ld(x[m].b), ld(x[m + 1].b), ld(x[m + 2].b), ld(x[m + 3].b)};
        for (int r = 0; r < 3; r++) {
            for (int l = 0; l < 4; l++) ENC(s[l], I);
            for (int l = 0; l < 4; l++) ENC(s[l], J);
            for (int l = 0; l < 4; l++) ENC(s[l], L);
        }
        for (int l = 0; l < 4; l++) {
            ENC(s[l], I);
            st(x[m + l].b, s[l]);
        }
    }
    for (; m < n; m++) {
        __m128i s = ld(x[m].b);
        for (int r = 0; r < 3; r++) {
            ENC(s, I);
            ENC(s, J);
            ENC(s, L);
        }
        ENC(s, I);
        st(x[m].b, s);
    }
}

/* blk_dbl in registers: byte-reverse to a little-endian 128-bit integer, shift each 64-bit half
 * left by one, carry the low half's top bit into the high half and fold the high half's top
 * bit back as 0x87. */
NI static inline __m128i dbl_ni(__m128i v) {
    const __m128i reverse = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m128i x = _mm_shuffle_epi8(v, reverse);
    const __m128i tops = _mm_shuffle_epi32(_mm_srli_epi64(x, 63), _MM_SHUFFLE(1, 0, 3, 2));
    const __m128i carry = _mm_and_si128(_mm_sub_epi64(_mm_setzero_si128(), tops),
                                        _mm_set_epi64x(1, 0x87));
    return _mm_shuffle_epi8(_mm_xor_si128(_mm_slli_epi64(x, 1), carry), reverse);
}

/* Pass 1 on n <= 8 pairs of one group, the first of them at lane `lane` (so their J, L
 * tweak parts start at JL[lane]): W = M ^ E^{1,i}(M'), Xb = M' ^ E^{0,0}(W). */
NI static inline __attribute__((always_inline)) __m128i pass1_group(
    const aez_key *k, const uint8_t *in, uint8_t *out, size_t n, size_t lane, __m128i ip,
    __m128i X) {
    const __m128i J = ld(k->J.b), I = ld(k->I.b), L = ld(k->L.b), Z = _mm_setzero_si128();
    __m128i s[8];
    _Pragma("GCC unroll 8") for (size_t l = 0; l < n; l++) {
        s[l] = _mm_xor_si128(_mm_xor_si128(ld(in + 32 * l + 16), ip), ld(k->JL[lane + l].b));
    }
    AES4_LANES(s, n);
    _Pragma("GCC unroll 8") for (size_t l = 0; l < n; l++) {
        __m128i w = _mm_xor_si128(ld(in + 32 * l), s[l]);
        st(out + 32 * l, w);
        s[l] = _mm_xor_si128(w, I);
    }
    AES4_LANES(s, n);
    _Pragma("GCC unroll 8") for (size_t l = 0; l < n; l++) {
        __m128i xb = _mm_xor_si128(ld(in + 32 * l + 16), s[l]);
        st(out + 32 * l + 16, xb);
        X = _mm_xor_si128(X, xb);
    }
    return X;
}

NI static void pass1_ni(const aez_key *k, const uint8_t *in, uint8_t *out, size_t npairs,
                        blk *ipart, blk *Xio) {
    __m128i ip = ld(ipart->b), X = ld(Xio->b);
    size_t m = 0;
    for (; m + 8 <= npairs; m += 8) {
        X = pass1_group(k, in + 32 * m, out + 32 * m, 8, 0, ip, X);
        ip = dbl_ni(ip);
    }
    /* The last n < 8 pairs in runs of 4, 2 and 1, so every run has a constant width. */
    for (size_t width = 4, lane = 0; width; width /= 2) {
        if ((npairs - m) & width) {
            X = pass1_group(k, in + 32 * m, out + 32 * m, width, lane, ip, X);
            m += width;
            lane += width;
        }
    }
    st(ipart->b, ip);
    st(Xio->b, X);
}

/* Pass 2 on n <= 8 pairs: S' = E^{2,i}(S); Y_i = W ^ S', Z_i = Xb ^ S'; Y_i ^= E^{0,0}(Z_i);
 * Z_i ^= E^{1,i}(Y_i); the pair becomes (Z_i, Y_i). Z_i waits in the first slot of its pair. */
NI static inline __attribute__((always_inline)) __m128i pass2_group(
    const aez_key *k, uint8_t *buf, size_t n, size_t lane, __m128i S, __m128i ip, __m128i Y) {
    const __m128i J = ld(k->J.b), I = ld(k->I.b), L = ld(k->L.b), Z = _mm_setzero_si128();
    __m128i s[8], y[8];
    _Pragma("GCC unroll 8") for (size_t l = 0; l < n; l++) {
        s[l] = _mm_xor_si128(_mm_xor_si128(S, ip), ld(k->J2L[lane + l].b));
    }
    AES4_LANES(s, n);
    _Pragma("GCC unroll 8") for (size_t l = 0; l < n; l++) {
        y[l] = _mm_xor_si128(ld(buf + 32 * l), s[l]);
        __m128i z = _mm_xor_si128(ld(buf + 32 * l + 16), s[l]);
        st(buf + 32 * l, z);
        Y = _mm_xor_si128(Y, y[l]);
        s[l] = _mm_xor_si128(z, I);
    }
    AES4_LANES(s, n);
    _Pragma("GCC unroll 8") for (size_t l = 0; l < n; l++) {
        y[l] = _mm_xor_si128(y[l], s[l]);
        s[l] = _mm_xor_si128(_mm_xor_si128(y[l], ip), ld(k->JL[lane + l].b));
    }
    AES4_LANES(s, n);
    _Pragma("GCC unroll 8") for (size_t l = 0; l < n; l++) {
        st(buf + 32 * l, _mm_xor_si128(ld(buf + 32 * l), s[l]));
        st(buf + 32 * l + 16, y[l]);
    }
    return Y;
}

/* Pass 2 from a pair index that is a multiple of 8 whose I part is ip. */
NI static void pass2_tail_ni(const aez_key *k, uint8_t *buf, size_t npairs, const blk *Sb,
                             __m128i ip, blk *Yio) {
    __m128i S = ld(Sb->b), Y = ld(Yio->b);
    size_t m = 0;
    for (; m + 8 <= npairs; m += 8) {
        Y = pass2_group(k, buf + 32 * m, 8, 0, S, ip, Y);
        ip = dbl_ni(ip);
    }
    for (size_t width = 4, lane = 0; width; width /= 2) {
        if ((npairs - m) & width) {
            Y = pass2_group(k, buf + 32 * m, width, lane, S, ip, Y);
            m += width;
            lane += width;
        }
    }
    st(Yio->b, Y);
}

NI static void pass2_ni(const aez_key *k, uint8_t *buf, size_t npairs, const blk *Sb, blk *Yio) {
    pass2_tail_ni(k, buf, npairs, Sb, ld(k->I2.b), Yio);
}

static const backend AESNI = {"aesni", aes4_ni, aes10_ni, pass1_ni, pass2_ni};

/* VAES with 512-bit registers: the bulk passes run 4 blocks per register and VECS registers
 * per stage, so a group is 4 * VECS pairs; what is left over goes through the AES-NI code. */
#define VX __attribute__((target("aes,sse4.1,avx512f,vaes")))
#define VECS 4
#define GROUP (4 * VECS)

#define ENCZ(s, key) ((s) = _mm512_aesenc_epi128((s), (key)))
#define AES4_Z(s)                                                     \
    do {                                                              \
        for (int v_ = 0; v_ < VECS; v_++) ENCZ(s[v_], Jz);            \
        for (int v_ = 0; v_ < VECS; v_++) ENCZ(s[v_], Iz);            \
        for (int v_ = 0; v_ < VECS; v_++) ENCZ(s[v_], Lz);            \
        for (int v_ = 0; v_ < VECS; v_++) ENCZ(s[v_], Zz);            \
    } while (0)

VX static inline __m512i bcast(__m128i v) {
    return _mm512_broadcast_i32x4(v);
}

/* Tweaks of the GROUP pairs from ip (the I part of the group's first 8 pairs): register v
 * holds pairs 4v..4v+3, whose I part is ip doubled v/2 times and whose J, L part is
 * base[v % 2] (JL or J2L, 4 blocks per register). Returns ip doubled VECS/2 times. */
VX static inline __m128i group_tweaks(const blk base[8], __m128i ip, __m512i tw[VECS]) {
    const __m512i b0 = _mm512_loadu_si512(base[0].b), b1 = _mm512_loadu_si512(base[4].b);
    for (int v = 0; v < VECS; v += 2) {
        const __m512i ipz = bcast(ip);
        tw[v] = _mm512_xor_si512(b0, ipz);
        tw[v + 1] = _mm512_xor_si512(b1, ipz);
        ip = dbl_ni(ip);
    }
    return ip;
}

/* Pairs are stored (M, M'): two registers of two pairs each split into the M blocks and the
 * M' blocks of four pairs, and back. */
#define FIRSTS 0x88   /* lanes 0, 2 of a then 0, 2 of b */
#define SECONDS 0xDD  /* lanes 1, 3 of a then 1, 3 of b */

VX static inline void split_pairs(const uint8_t *p, __m512i *first, __m512i *second) {
    const __m512i a = _mm512_loadu_si512(p), b = _mm512_loadu_si512(p + 64);
    *first = _mm512_shuffle_i64x2(a, b, FIRSTS);
    *second = _mm512_shuffle_i64x2(a, b, SECONDS);
}

VX static inline void join_pairs(uint8_t *p, __m512i first, __m512i second) {
    const __m512i lo = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
    const __m512i hi = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
    _mm512_storeu_si512(p, _mm512_permutex2var_epi64(first, lo, second));
    _mm512_storeu_si512(p + 64, _mm512_permutex2var_epi64(first, hi, second));
}

VX static inline __m128i fold(__m512i v) {
    return _mm_xor_si128(
        _mm_xor_si128(_mm512_castsi512_si128(v), _mm512_extracti32x4_epi32(v, 1)),
        _mm_xor_si128(_mm512_extracti32x4_epi32(v, 2), _mm512_extracti32x4_epi32(v, 3)));
}

VX static void pass1_vaes(const aez_key *k, const uint8_t *in, uint8_t *out, size_t npairs,
                          blk *ipart, blk *Xio) {
    const __m512i Jz = bcast(ld(k->J.b)), Iz = bcast(ld(k->I.b)), Lz = bcast(ld(k->L.b));
    const __m512i Zz = _mm512_setzero_si512();
    __m128i ip = ld(ipart->b);
    __m512i X = Zz;
    size_t m = 0;
    for (; m + GROUP <= npairs; m += GROUP) {
        const uint8_t *p = in + 32 * m;
        uint8_t *q = out + 32 * m;
        __m512i tw[VECS], M[VECS], Mp[VECS], s[VECS];
        ip = group_tweaks(k->JL, ip, tw);
        for (int v = 0; v < VECS; v++) {
            split_pairs(p + 128 * v, &M[v], &Mp[v]);
            s[v] = _mm512_xor_si512(Mp[v], tw[v]);
        }
        AES4_Z(s);
        for (int v = 0; v < VECS; v++) {
            M[v] = _mm512_xor_si512(M[v], s[v]);   /* W */
            s[v] = _mm512_xor_si512(M[v], Iz);
        }
        AES4_Z(s);
        for (int v = 0; v < VECS; v++) {
            Mp[v] = _mm512_xor_si512(Mp[v], s[v]);  /* Xb */
            X = _mm512_xor_si512(X, Mp[v]);
            join_pairs(q + 128 * v, M[v], Mp[v]);
        }
    }
    blk x;
    st(x.b, _mm_xor_si128(ld(Xio->b), fold(X)));
    st(ipart->b, ip);
    pass1_ni(k, in + 32 * m, out + 32 * m, npairs - m, ipart, &x);
    *Xio = x;
}

VX static void pass2_vaes(const aez_key *k, uint8_t *buf, size_t npairs, const blk *Sb,
                          blk *Yio) {
    const __m512i Jz = bcast(ld(k->J.b)), Iz = bcast(ld(k->I.b)), Lz = bcast(ld(k->L.b));
    const __m512i Zz = _mm512_setzero_si512(), S = bcast(ld(Sb->b));
    __m128i ip = ld(k->I2.b);
    __m512i Y = Zz;
    size_t m = 0;
    for (; m + GROUP <= npairs; m += GROUP) {
        uint8_t *q = buf + 32 * m;
        __m512i t1[VECS], t2[VECS], y[VECS], z[VECS], s[VECS];
        group_tweaks(k->JL, ip, t1);
        ip = group_tweaks(k->J2L, ip, t2);
        for (int v = 0; v < VECS; v++) {
            s[v] = _mm512_xor_si512(S, t2[v]);
        }
        AES4_Z(s);
        for (int v = 0; v < VECS; v++) {
            split_pairs(q + 128 * v, &y[v], &z[v]);
            y[v] = _mm512_xor_si512(y[v], s[v]);
            z[v] = _mm512_xor_si512(z[v], s[v]);
            Y = _mm512_xor_si512(Y, y[v]);
            s[v] = _mm512_xor_si512(z[v], Iz);
        }
        AES4_Z(s);
        for (int v = 0; v < VECS; v++) {
            y[v] = _mm512_xor_si512(y[v], s[v]);
            s[v] = _mm512_xor_si512(y[v], t1[v]);
        }
        AES4_Z(s);
        for (int v = 0; v < VECS; v++) {
            join_pairs(q + 128 * v, _mm512_xor_si512(z[v], s[v]), y[v]);
        }
    }
    /* The rest: the AES-NI pass 2 starts from pair 0, so run it on a view whose I part
     * sequence is the same as the one here (m is a multiple of GROUP). */
    blk y;
    st(y.b, _mm_xor_si128(ld(Yio->b), fold(Y)));
    pass2_tail_ni(k, buf + 32 * m, npairs - m, Sb, ip, &y);
    *Yio = y;
}

static const backend VAES = {"vaes", aes4_ni, aes10_ni, pass1_vaes, pass2_vaes};
#endif

/* Every backend this build has, fastest first. */
static const backend *const BACKENDS[] = {
#ifdef AEZ_HAVE_AESNI
    &VAES,
    &AESNI,
#endif
    &PORTABLE,
};
#define NBACKENDS (sizeof BACKENDS / sizeof BACKENDS[0])

static const backend *active = &PORTABLE;

/* Whether this CPU (and OS, for the AVX-512 state) can run the backend. */
static int usable(const backend *be) {
#ifdef AEZ_HAVE_AESNI
    __builtin_cpu_init();
    const int ni = __builtin_cpu_supports("aes") && __builtin_cpu_supports("sse4.1");
    if (be == &AESNI) {
        return ni;
    }
    if (be == &VAES) {
        return ni && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vaes");
    }
#endif
    return be == &PORTABLE;
}

static const backend *best_backend(void) {
    for (size_t b = 0; b < NBACKENDS; b++) {
        if (usable(BACKENDS[b])) {
            return BACKENDS[b];
        }
    }
    return &PORTABLE;
}

/* ------------------------------------------------------------------------------------------ */
/* The tweakable block cipher E_K^{j,i} for single blocks                                     */

/* Tweak of E^{j,i}, j >= 0: j·J ^ 2^ceil(i/8)·I ^ (i mod 8)·L. */
static blk tweak4(const aez_key *k, uint64_t j, uint64_t i) {
    blk ipart = k->I;
    for (uint64_t d = (i + 7) / 8; d; d--) {
        blk_dbl(&ipart);
    }
    return bx(bx(blk_mul(j, k->J), ipart), k->Lm[i % 8]);
}

/* E^{0,i} for 1 <= i <= 7, the only single-block AES4 calls AEZ-core and AEZ-tiny make. */
static inline blk tweak0(const aez_key *k, int i) {
    return bx(k->I2, k->Lm[i]);
}

/* ------------------------------------------------------------------------------------------ */
/* AEZ-hash: every block is independent, so blocks wait in a batch of 8 and go out together.  */

typedef struct {
    const backend *be;
    const aez_key *k;
    blk acc;
    blk batch[8];
    size_t n;
} hasher;

static void hash_flush(hasher *h) {
    h->be->aes4(h->k, h->batch, h->n);
    for (size_t m = 0; m < h->n; m++) {
        h->acc = bx(h->acc, h->batch[m]);
    }
    h->n = 0;
}

static inline void hash_push(hasher *h, blk x) {
    h->batch[h->n++] = x;
    if (h->n == 8) {
        hash_flush(h);
    }
}

static void hash_init(hasher *h, const backend *be, const aez_key *k, uint64_t tau_bits) {
    h->be = be;
    h->k = k;
    h->acc = blk_zero();
    h->n = 0;
    blk t = blk_zero();
    for (int m = 0; m < 8; m++) {
        t.b[15 - m] = (uint8_t)(tau_bits >> (8 * m));
    }
    hash_push(h, bx(t, bx(bx(k->J3, k->I2), k->L)));   /* E^{3,1}([tau]_128) */
}

/* String number j (4 for the nonce, 5, 6, ... for the AD strings). */
static void hash_string(hasher *h, uint64_t j, const uint8_t *p, size_t len) {
    const aez_key *k = h->k;
    blk jj = blk_mul(j, k->J);
    blk ipart = k->I2;
    size_t t = 1;
    for (; len >= 16; t++, p += 16, len -= 16) {
        hash_push(h, bx(bx(bload(p), jj), bx(ipart, k->Lm[t % 8])));
        if (t % 8 == 0) {
            blk_dbl(&ipart);
        }
    }
    if (len > 0 || t == 1) {
        hash_push(h, bx(pad10(p, len), bx(jj, k->I)));   /* E^{j,0}(pad10(R)) */
    }
}

static blk hash_final(hasher *h) {
    hash_flush(h);
    return h->acc;
}

/* ------------------------------------------------------------------------------------------ */
/* AEZ-prf: counter mode under E^{-1,3}.                                                      */

static void aez_prf(const backend *be, const aez_key *k, blk delta, uint8_t *out, size_t n) {
    blk base = bx(delta, k->Lm[3]);
    blk batch[8];
    uint64_t ctr = 0;  /* the high 64 bits of the 128-bit counter stay zero for any real n */
    while (n) {
        size_t nb = 0;
        for (; nb < 8 && nb * 16 < n; nb++, ctr++) {
            blk c = blk_zero();
            for (int m = 0; m < 8; m++) {
                c.b[15 - m] = (uint8_t)(ctr >> (8 * m));
            }
            batch[nb] = bx(base, c);
        }
        be->aes10(k, batch, nb);
        for (size_t m = 0; m < nb && n; m++) {
            size_t take = n < 16 ? n : 16;
            memcpy(out, batch[m].b, take);
            out += take;
            n -= take;
        }
    }
    secure_zero(batch, sizeof batch);
}

/* ------------------------------------------------------------------------------------------ */
/* AEZ-tiny: a Feistel network on two halves of 4n bits each, for 1 <= n <= 31 bytes.        */

static void aez_tiny(const backend *be, const aez_key *k, blk delta, const uint8_t *in,
                     uint8_t *out, size_t n, int d) {
    const size_t hb = n / 2, odd = n & 1, hbytes = hb + odd;  /* a half spans hbytes bytes */
    const int rounds = n == 1 ? 24 : n == 2 ? 16 : n < 16 ? 10 : 8;
    const blk tw = bx(delta, tweak0(k, n < 16 ? 7 : 6));
    uint8_t x[32];
    memcpy(x, in, n);

    if (d && n < 16) {
        blk t = blk_zero();
        memcpy(t.b, x, n);
        t.b[0] |= 0x80;
        t = bx(t, bx(delta, tweak0(k, 3)));
        be->aes4(k, &t, 1);
        x[0] ^= t.b[0] & 0x80;
    }

    /* Left-aligned halves: L is the first 4n bits, R the last 4n bits. */
    uint8_t L[16] = {0}, R[16] = {0};
    memcpy(L, x, hbytes);
    if (odd) {
        L[hb] &= 0xf0;
        for (size_t m = 0; m <= hb; m++) {
            R[m] = (uint8_t)((x[hb + m] << 4) | (m < hb ? x[hb + m + 1] >> 4 : 0));
        }
    } else {
        memcpy(R, x + hb, hb);
    }

    int r = d ? rounds - 1 : 0;
    const int step = d ? -1 : 1;
    for (int pair = 0; pair < rounds / 2; pair++, r += 2 * step) {
        for (int half = 0; half < 2; half++) {
            const uint8_t *src = half ? L : R;
            uint8_t *dst = half ? R : L;
            blk f = blk_zero();
            memcpy(f.b, src, hbytes);
            if (odd) {
                f.b[hb] |= 0x08;
            } else {
                f.b[hb] = 0x80;
            }
            f = bx(f, tw);
            f.b[15] ^= (uint8_t)(r + half * step);
            be->aes4(k, &f, 1);
            for (size_t m = 0; m < hb; m++) {
                dst[m] ^= f.b[m];
            }
            if (odd) {
                dst[hb] ^= f.b[hb] & 0xf0;
            }
        }
    }

    /* Output R || L. */
    memcpy(out, R, hb);
    if (odd) {
        out[hb] = (uint8_t)((R[hb] & 0xf0) | (L[0] >> 4));
        for (size_t m = 1; m <= hb; m++) {
            out[hb + m] = (uint8_t)((L[m - 1] << 4) | (L[m] >> 4));
        }
    } else {
        memcpy(out + hb, L, hb);
    }

    if (!d && n < 16) {
        blk t = blk_zero();
        memcpy(t.b, out, n);
        t.b[0] |= 0x80;
        t = bx(t, bx(delta, tweak0(k, 3)));
        be->aes4(k, &t, 1);
        out[0] ^= t.b[0] & 0x80;
    }
    secure_zero(x, sizeof x);
    secure_zero(L, sizeof L);
    secure_zero(R, sizeof R);
}

/* ------------------------------------------------------------------------------------------ */
/* AEZ-core, for n >= 32 bytes.                                                               */

/*
 * Pairs [0, ndirect) are read from `in`; the rest of the input (later pairs, the fragment and
 * the last two blocks) is already in `out` at its own offset. ndirect is a multiple of 8 or
 * equals the number of pairs. The result is written to `out`.
 */
static void aez_core(const backend *be, const aez_key *k, blk delta, const uint8_t *in,
                     uint8_t *out, size_t n, size_t ndirect, int d) {
    const size_t p = (n - 32) / 32, ulen = n - 32 - 32 * p;
    uint8_t *u = out + 32 * p, *xy = out + n - 32;
    blk X = blk_zero(), Y = blk_zero(), ipart = k->I2, b[3];

    be->pass1(k, in, out, ndirect, &ipart, &X);
    be->pass1(k, out + 32 * ndirect, out + 32 * ndirect, p - ndirect, &ipart, &X);

    /* The fragment's share of X and E^{0,1+d}(y) are independent: one batch. */
    size_t nb = 0;
    if (ulen >= 16) {
        b[nb++] = bx(bload(u), tweak0(k, 4));
        b[nb++] = bx(pad10(u + 16, ulen - 16), tweak0(k, 5));
    } else if (ulen > 0) {
        b[nb++] = bx(pad10(u, ulen), tweak0(k, 4));
    }
    const blk x = bload(xy), y = bload(xy + 16);
    b[nb++] = bx(y, tweak0(k, 1 + d));
    be->aes4(k, b, nb);
    for (size_t m = 0; m + 1 < nb; m++) {
        X = bx(X, b[m]);
    }
    const blk sx = bx(bx(x, X), bx(delta, b[nb - 1]));
    blk t = bx(sx, k->Lm[1 + d]);
    be->aes10(k, &t, 1);
    const blk sy = bx(y, t);
    const blk S = bx(sx, sy);

    be->pass2(k, out, p, &S, &Y);

    /* E^{-1,4}(S), E^{-1,5}(S) for the fragment and E^{-1,2-d}(S_y): one AES10 batch. */
    nb = 0;
    if (ulen > 0) {
        b[nb++] = bx(S, k->Lm[4]);
    }
    if (ulen >= 16) {
        b[nb++] = bx(S, k->Lm[5]);
    }
    b[nb++] = bx(sy, k->Lm[2 - d]);
    be->aes10(k, b, nb);
    const blk cy = bx(sx, b[nb - 1]);

    nb = 0;
    if (ulen >= 16) {
        blk c1 = bx(bload(u), b[0]);
        memcpy(u, c1.b, 16);
        for (size_t m = 0; m < ulen - 16; m++) {
            u[16 + m] ^= b[1].b[m];
        }
        b[nb++] = bx(c1, tweak0(k, 4));
        b[nb++] = bx(pad10(u + 16, ulen - 16), tweak0(k, 5));
    } else if (ulen > 0) {
        for (size_t m = 0; m < ulen; m++) {
            u[m] ^= b[0].b[m];
        }
        b[nb++] = bx(pad10(u, ulen), tweak0(k, 4));
    }
    b[nb++] = bx(cy, tweak0(k, 2 - d));
    be->aes4(k, b, nb);
    for (size_t m = 0; m + 1 < nb; m++) {
        Y = bx(Y, b[m]);
    }
    const blk cx = bx(bx(sy, delta), bx(Y, b[nb - 1]));
    memcpy(xy, cx.b, 16);
    memcpy(xy + 16, cy.b, 16);
    secure_zero(b, sizeof b);
}

/* ------------------------------------------------------------------------------------------ */
/* Python glue                                                                                */

static PyObject *blake2b_fn;    /* hashlib.blake2b */
static PyObject *blake2b_kw;    /* {"digest_size": 48} */

/*
 * BLAKE2b through hashlib costs about twice a whole small-message encryption, so the extracted
 * form of recently used keys (of other lengths than 48 bytes, up to KEY_CACHE_MAX bytes) is
 * kept in a small LRU table. A slot is found by a 64-bit FNV-1a tag and confirmed by a
 * constant-time comparison of the whole key. Only touched with the GIL held.
 */
#define KEY_CACHE_SLOTS 16
#define KEY_CACHE_MAX 128

typedef struct {
    uint64_t stamp;  /* 0: empty; otherwise the time of last use */
    uint64_t tag;
    size_t len;
    uint8_t raw[KEY_CACHE_MAX];
    uint8_t ek[EXTRACTED_KEY_BYTES];
} key_slot;

static key_slot key_cache[KEY_CACHE_SLOTS];
static uint64_t key_clock;

static uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325u;
    while (n--) {
        h = (h ^ *p++) * 0x100000001b3u;
    }
    return h;
}

static int ct_equal(const uint8_t *a, const uint8_t *b, size_t n) {
    uint8_t diff = 0;
    for (size_t m = 0; m < n; m++) {
        diff |= (uint8_t)(a[m] ^ b[m]);
    }
    return diff == 0;
}

static key_slot *key_cache_find(const uint8_t *raw, size_t len, uint64_t tag) {
    for (size_t m = 0; m < KEY_CACHE_SLOTS; m++) {
        key_slot *e = &key_cache[m];
        if (e->stamp && e->tag == tag && e->len == len && ct_equal(e->raw, raw, len)) {
            return e;
        }
    }
    return NULL;
}

static void key_cache_put(const uint8_t *raw, size_t len, uint64_t tag,
                          const uint8_t ek[EXTRACTED_KEY_BYTES]) {
    key_slot *e = &key_cache[0];
    for (size_t m = 1; m < KEY_CACHE_SLOTS; m++) {
        if (key_cache[m].stamp < e->stamp) {
            e = &key_cache[m];
        }
    }
    secure_zero(e, sizeof *e);
    e->stamp = ++key_clock;
    e->tag = tag;
    e->len = len;
    memcpy(e->raw, raw, len);
    memcpy(e->ek, ek, EXTRACTED_KEY_BYTES);
}

/* Extract(K): a 48-byte key as it is, any other length through unkeyed BLAKE2b-384. */
static int extract_key(PyObject *obj, uint8_t ek[EXTRACTED_KEY_BYTES]) {
    Py_buffer kb;
    if (PyObject_GetBuffer(obj, &kb, PyBUF_SIMPLE) < 0) {
        PyErr_Format(PyExc_TypeError, "key must be a C-contiguous bytes-like object, not %.100s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (kb.len == EXTRACTED_KEY_BYTES) {
        memcpy(ek, kb.buf, EXTRACTED_KEY_BYTES);
        PyBuffer_Release(&kb);
        return 0;
    }
    const size_t len = (size_t)kb.len;
    const int cacheable = len <= KEY_CACHE_MAX;
    const uint64_t tag = cacheable ? fnv1a(kb.buf, len) : 0;
    key_slot *hit = cacheable ? key_cache_find(kb.buf, len, tag) : NULL;
    if (hit != NULL) {
        memcpy(ek, hit->ek, EXTRACTED_KEY_BYTES);
        hit->stamp = ++key_clock;
        PyBuffer_Release(&kb);
        return 0;
    }
    uint8_t raw[KEY_CACHE_MAX];
    if (cacheable) {
        memcpy(raw, kb.buf, len);
    }
    PyObject *arg = PyMemoryView_FromBuffer(&kb);
    PyObject *argt = arg ? PyTuple_Pack(1, arg) : NULL;
    PyObject *h = argt ? PyObject_Call(blake2b_fn, argt, blake2b_kw) : NULL;
    Py_XDECREF(argt);
    Py_XDECREF(arg);
    PyBuffer_Release(&kb);
    PyObject *digest = h ? PyObject_CallMethod(h, "digest", NULL) : NULL;
    Py_XDECREF(h);
    if (digest == NULL) {
        secure_zero(raw, sizeof raw);
        return -1;
    }
    memcpy(ek, PyBytes_AS_STRING(digest), EXTRACTED_KEY_BYTES);
    if (Py_REFCNT(digest) == 1) {
        secure_zero(PyBytes_AS_STRING(digest), EXTRACTED_KEY_BYTES);
    }
    Py_DECREF(digest);
    if (cacheable) {
        key_cache_put(raw, len, tag, ek);
        secure_zero(raw, len);
    }
    return 0;
}

static PyObject *py_clear_key_cache(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    secure_zero(key_cache, sizeof key_cache);
    Py_RETURN_NONE;
}

static int load_key(PyObject *obj, aez_key *k) {
    uint8_t ek[EXTRACTED_KEY_BYTES];
    if (extract_key(obj, ek) < 0) {
        return -1;
    }
    key_expand(k, ek);
    secure_zero(ek, sizeof ek);
    return 0;
}

static int get_buffer(PyObject *obj, Py_buffer *view, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) {
        PyErr_Format(PyExc_TypeError, "%s must be a C-contiguous bytes-like object, not %.100s",
                     what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    return 0;
}

static int parse_tau(PyObject *obj, size_t *tau) {
    if (!PyLong_Check(obj) || PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "tau must be an int (bytes of expansion), not %.100s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    int overflow;
    long v = PyLong_AsLongAndOverflow(obj, &overflow);
    if (overflow || v < 0 || v > MAX_TAU) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "tau must be between 0 and %d bytes", MAX_TAU);
        }
        return -1;
    }
    *tau = (size_t)v;
    return 0;
}

/* The AD vector: None (no strings) or a list or tuple of bytes-like strings. Returns a new
 * reference to a tuple copy (or Py_None), with every element checked. Only lists and tuples:
 * a set or a dict would give an order that changes from one process to the next. The copy
 * cannot change while it is hashed, even if an element's __buffer__ (Python 3.12+) alters the
 * caller's list. */
static PyObject *parse_ad(PyObject *obj) {
    if (obj == Py_None) {
        return Py_NewRef(Py_None);
    }
    if (PyBytes_Check(obj) || PyByteArray_Check(obj) || PyMemoryView_Check(obj) ||
        PyUnicode_Check(obj)) {
        PyErr_SetString(PyExc_TypeError,
                        "ad must be a list or tuple of bytes-like strings (or None), not a "
                        "single string; wrap it in a list");
        return NULL;
    }
    if (!PyList_Check(obj) && !PyTuple_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "ad must be a list or tuple of bytes-like strings (or None), not %.100s",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyObject *seq = PySequence_Tuple(obj);
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t a = 0; a < m; a++) {
        if (!PyObject_CheckBuffer(items[a])) {
            PyErr_Format(PyExc_TypeError,
                         "ad[%zd] must be a C-contiguous bytes-like object, not %.100s", a,
                         Py_TYPE(items[a])->tp_name);
            Py_DECREF(seq);
            return NULL;
        }
    }
    return seq;
}

/* Feed `items` (nitems buffers) to the hash as strings first_j, first_j + 1, ... */
static int hash_items(hasher *h, uint64_t first_j, PyObject *const *items, Py_ssize_t nitems) {
    for (Py_ssize_t a = 0; a < nitems; a++) {
        Py_buffer v;
        if (get_buffer(items[a], &v, "every AD string") < 0) {
            return -1;
        }
        hash_string(h, first_j + (uint64_t)a, v.buf, (size_t)v.len);
        PyBuffer_Release(&v);
    }
    return 0;
}

/* Everything encrypt and decrypt share: arguments checked, then Δ. */
typedef struct {
    const backend *be;
    aez_key key;
    blk delta;
    size_t tau;
    Py_buffer data;
} request;

static int request_open(request *rq, PyObject *const *args, Py_ssize_t nargs, const char *fn,
                        const char *what) {
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "%s() takes 5 arguments (key, nonce, ad, tau, %s)", fn,
                     what);
        return -1;
    }
    rq->be = active;
    if (!PyObject_CheckBuffer(args[0])) {
        PyErr_Format(PyExc_TypeError, "key must be a C-contiguous bytes-like object, not %.100s",
                     Py_TYPE(args[0])->tp_name);
        return -1;
    }
    if (args[1] != Py_None && !PyObject_CheckBuffer(args[1])) {
        PyErr_Format(PyExc_TypeError,
                     "nonce must be a C-contiguous bytes-like object or None, not %.100s",
                     Py_TYPE(args[1])->tp_name);
        return -1;
    }
    if (parse_tau(args[3], &rq->tau) < 0) {
        return -1;
    }
    PyObject *ad = parse_ad(args[2]);
    if (ad == NULL) {
        return -1;
    }
    if (get_buffer(args[4], &rq->data, what) < 0) {
        Py_DECREF(ad);
        return -1;
    }
    if (load_key(args[0], &rq->key) < 0) {
        goto fail;
    }
    hasher h;
    hash_init(&h, rq->be, &rq->key, 8 * (uint64_t)rq->tau);
    if (args[1] == Py_None) {
        hash_string(&h, 4, NULL, 0);
    } else if (hash_items(&h, 4, &args[1], 1) < 0) {
        goto fail;
    }
    if (ad != Py_None &&
        hash_items(&h, 5, PySequence_Fast_ITEMS(ad), PySequence_Fast_GET_SIZE(ad)) < 0) {
        goto fail;
    }
    rq->delta = hash_final(&h);
    secure_zero(&h, sizeof h);
    Py_DECREF(ad);
    return 0;
fail:
    Py_DECREF(ad);
    PyBuffer_Release(&rq->data);
    secure_zero(&rq->key, sizeof rq->key);
    return -1;
}

static void request_close(request *rq) {
    PyBuffer_Release(&rq->data);
    secure_zero(&rq->key, sizeof rq->key);
    secure_zero(&rq->delta, sizeof rq->delta);
}

/* Encipher (d = 0) or decipher (d = 1) n >= 1 bytes; `in` holds `inlen` bytes of the input and
 * the rest (up to n) is zero. Called without the GIL for long inputs. */
static void encipher(const request *rq, const uint8_t *in, size_t inlen, uint8_t *out, size_t n,
                     int d) {
    if (n < 32) {
        uint8_t x[32] = {0};
        memcpy(x, in, inlen);
        aez_tiny(rq->be, &rq->key, rq->delta, x, out, n, d);
        secure_zero(x, sizeof x);
        return;
    }
    size_t p = (n - 32) / 32, ndirect = inlen / 32;
    if (ndirect >= p) {
        ndirect = p;
    } else {
        ndirect &= ~(size_t)7;
    }
    memcpy(out + 32 * ndirect, in + 32 * ndirect, inlen - 32 * ndirect);
    memset(out + inlen, 0, n - inlen);
    aez_core(rq->be, &rq->key, rq->delta, in, out, n, ndirect, d);
}

static PyObject *py_encrypt(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    request rq;
    if (request_open(&rq, args, nargs, "encrypt", "plaintext") < 0) {
        return NULL;
    }
    size_t mlen = (size_t)rq.data.len, n = mlen + rq.tau;
    PyObject *res = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (res != NULL) {
        uint8_t *out = (uint8_t *)PyBytes_AS_STRING(res);
        if (mlen == 0) {
            aez_prf(rq.be, &rq.key, rq.delta, out, rq.tau);
        } else if (n >= GIL_RELEASE_BYTES) {
            Py_BEGIN_ALLOW_THREADS
            encipher(&rq, rq.data.buf, mlen, out, n, 0);
            Py_END_ALLOW_THREADS
        } else {
            encipher(&rq, rq.data.buf, mlen, out, n, 0);
        }
    }
    request_close(&rq);
    return res;
}

static PyObject *py_decrypt(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    request rq;
    if (request_open(&rq, args, nargs, "decrypt", "ciphertext") < 0) {
        return NULL;
    }
    const size_t n = (size_t)rq.data.len, tau = rq.tau;
    const uint8_t *ct = rq.data.buf;
    PyObject *res = NULL;
    uint8_t diff = 0;
    if (n < tau) {
        res = Py_NewRef(Py_None);
    } else if (n == tau) {
        uint8_t expect[MAX_TAU];
        aez_prf(rq.be, &rq.key, rq.delta, expect, tau);
        for (size_t m = 0; m < tau; m++) {
            diff |= (uint8_t)(expect[m] ^ ct[m]);
        }
        secure_zero(expect, sizeof expect);
        res = diff ? Py_NewRef(Py_None) : PyBytes_FromStringAndSize(NULL, 0);
    } else {
        res = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
        if (res != NULL) {
            uint8_t *out = (uint8_t *)PyBytes_AS_STRING(res);
            if (n >= GIL_RELEASE_BYTES) {
                Py_BEGIN_ALLOW_THREADS
                encipher(&rq, ct, n, out, n, 1);
                Py_END_ALLOW_THREADS
            } else {
                encipher(&rq, ct, n, out, n, 1);
            }
            for (size_t m = n - tau; m < n; m++) {
                diff |= out[m];
            }
            if (diff) {
                secure_zero(out, n);
                Py_SETREF(res, Py_NewRef(Py_None));
            } else if (tau && _PyBytes_Resize(&res, (Py_ssize_t)(n - tau)) < 0) {
                res = NULL;
            }
        }
    }
    request_close(&rq);
    return res;
}

/* Internal functions, for known-answer tests of each stage. ------------------------------- */

static PyObject *py_extract(PyObject *self, PyObject *key) {
    (void)self;
    uint8_t ek[EXTRACTED_KEY_BYTES];
    if (extract_key(key, ek) < 0) {
        return NULL;
    }
    PyObject *res = PyBytes_FromStringAndSize((const char *)ek, EXTRACTED_KEY_BYTES);
    secure_zero(ek, sizeof ek);
    return res;
}

static PyObject *py_hash(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *key, *tau_obj, *strings;
    if (!PyArg_ParseTuple(args, "OOO:hash", &key, &tau_obj, &strings)) {
        return NULL;
    }
    unsigned long long tau_bits = PyLong_AsUnsignedLongLong(tau_obj); /* refuses negatives */
    if (tau_bits == (unsigned long long)-1 && PyErr_Occurred()) {
        return NULL;
    }
    PyObject *seq = parse_ad(strings);
    if (seq == NULL) {
        return NULL;
    }
    aez_key k;
    hasher h;
    PyObject *res = NULL;
    if (load_key(key, &k) == 0) {
        hash_init(&h, active, &k, tau_bits);
        if (seq == Py_None || hash_items(&h, 4, PySequence_Fast_ITEMS(seq),
                                         PySequence_Fast_GET_SIZE(seq)) == 0) {
            blk delta = hash_final(&h);
            res = PyBytes_FromStringAndSize((const char *)delta.b, 16);
        }
        secure_zero(&k, sizeof k);
    }
    Py_DECREF(seq);
    return res;
}

static PyObject *py_prf(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *key;
    Py_buffer delta;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "Oy*n:prf", &key, &delta, &n)) {
        return NULL;
    }
    PyObject *res = NULL;
    aez_key k;
    if (delta.len != 16 || n < 0) {
        PyErr_SetString(PyExc_ValueError, "delta must be 16 bytes and n non-negative");
    } else if (load_key(key, &k) == 0) {
        res = PyBytes_FromStringAndSize(NULL, n);
        if (res != NULL) {
            aez_prf(active, &k, bload(delta.buf), (uint8_t *)PyBytes_AS_STRING(res), (size_t)n);
        }
        secure_zero(&k, sizeof k);
    }
    PyBuffer_Release(&delta);
    return res;
}

/* Tweak indices for e(): far beyond any real message, small enough to compute at once. */
#define MAX_TWEAK_I (1 << 24)

static PyObject *py_e(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *key;
    long long j;
    unsigned long long i;
    Py_buffer block;
    if (!PyArg_ParseTuple(args, "OLKy*:e", &key, &j, &i, &block)) {
        return NULL;
    }
    PyObject *res = NULL;
    aez_key k;
    if (block.len != 16 || j < -1 || i > MAX_TWEAK_I) {
        PyErr_Format(PyExc_ValueError,
                     "block must be 16 bytes, j at least -1 and i at most %d", MAX_TWEAK_I);
    } else if (load_key(key, &k) == 0) {
        blk x = bload(block.buf);
        if (j == -1) {
            x = bx(x, blk_mul(i, k.L));
            active->aes10(&k, &x, 1);
        } else {
            x = bx(x, tweak4(&k, (uint64_t)j, i));
            active->aes4(&k, &x, 1);
        }
        res = PyBytes_FromStringAndSize((const char *)x.b, 16);
        secure_zero(&k, sizeof k);
    }
    PyBuffer_Release(&block);
    return res;
}

static PyObject *py_set_backend(PyObject *self, PyObject *arg) {
    (void)self;
    const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (name == NULL) {
        PyErr_SetString(PyExc_TypeError, "backend name must be a str");
        return NULL;
    }
    if (strcmp(name, "auto") == 0) {
        active = best_backend();
        Py_RETURN_NONE;
    }
    for (size_t b = 0; b < NBACKENDS; b++) {
        if (strcmp(name, BACKENDS[b]->name) == 0) {
            if (!usable(BACKENDS[b])) {
                PyErr_Format(PyExc_RuntimeError, "backend %R needs CPU features this machine lacks",
                             arg);
                return NULL;
            }
            active = BACKENDS[b];
            Py_RETURN_NONE;
        }
    }
    PyErr_Format(PyExc_ValueError,
                 "unknown backend %R (use 'vaes', 'aesni', 'portable' or 'auto')", arg);
    return NULL;
}

static PyObject *py_backend(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyUnicode_FromString(active->name);
}

static PyObject *py_backends(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *names = PyList_New(0);
    for (size_t b = 0; names != NULL && b < NBACKENDS; b++) {
        if (!usable(BACKENDS[b])) {
            continue;
        }
        PyObject *name = PyUnicode_FromString(BACKENDS[b]->name);
        if (name == NULL || PyList_Append(names, name) < 0) {
            Py_CLEAR(names);
        }
        Py_XDECREF(name);
    }
    return names ? PyList_AsTuple(names) : NULL;
}

static PyMethodDef methods[] = {
    {"encrypt", (PyCFunction)(void (*)(void))py_encrypt, METH_FASTCALL,
     "encrypt(key, nonce, ad, tau, plaintext) -> bytes"},
    {"decrypt", (PyCFunction)(void (*)(void))py_decrypt, METH_FASTCALL,
     "decrypt(key, nonce, ad, tau, ciphertext) -> bytes | None"},
    {"extract", py_extract, METH_O, "extract(key) -> 48-byte extracted key"},
    {"hash", py_hash, METH_VARARGS, "hash(key, tau_bits, [nonce, ad1, ...]) -> 16-byte delta"},
    {"prf", py_prf, METH_VARARGS, "prf(key, delta, n) -> n bytes"},
    {"e", py_e, METH_VARARGS, "e(key, j, i, block) -> E_K^{j,i}(block), j = -1 for AES10"},
    {"set_backend", py_set_backend, METH_O, "set_backend('vaes' | 'aesni' | 'portable' | 'auto')"},
    {"backend", py_backend, METH_NOARGS, "backend() -> name of the active backend"},
    {"backends", py_backends, METH_NOARGS, "backends() -> names of the usable backends"},
    {"clear_key_cache", py_clear_key_cache, METH_NOARGS,
     "clear_key_cache(): forget (and wipe) every cached extracted key"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_aez", "AEZ v5 kernel (AES-NI with a portable fallback).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__aez(void) {
    tables_init();
    active = best_backend();
    PyObject *hashlib = PyImport_ImportModule("hashlib");
    if (hashlib == NULL) {
        return NULL;
    }
    blake2b_fn = PyObject_GetAttrString(hashlib, "blake2b");
    Py_DECREF(hashlib);
    blake2b_kw = Py_BuildValue("{s:i}", "digest_size", EXTRACTED_KEY_BYTES);
    if (blake2b_fn == NULL || blake2b_kw == NULL) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "MAX_TAU", MAX_TAU) < 0) {
        Py_CLEAR(m);
    }
    return m;
}
