/* numpy's PCG64 uniform float32 draws for many networks at once (nadcore.kernels.native.pcg64_uniform;
 * used by nadcore.kernels.draw.draw_parameters).
 *
 * numpy seeds PCG64 from four 64-bit words (state = words[0] << 64 | words[1], stream = words[2]
 * << 64 | words[3]; pcg64_set_seed) and each random_raw output is the XSL-RR output of the next
 * 128-bit LCG state. Generator.random(dtype=float32) takes 32 bits at a time (an output's low
 * half, then its high half) as (bits >> 8) * 2^-24. Here row b gets the first n such floats of
 * its generator, scaled as draw_parameters scales them: (bits >> 8) * mul[i] - sub[i] in float32,
 * rounded after the product and after the difference, exactly as numpy's two passes round them.
 * A step of the LCG waits for the previous one, so several generators advance side by side:
 * sixteen in AVX-512 lanes, four in the portable C path. */
#include <stdint.h>
#include <string.h>

typedef unsigned __int128 u128;

#define MULT (((u128)2549297995355413924ULL << 64) | 4865540595714422341ULL)
#if defined(__AVX512F__) && defined(__AVX512DQ__)
#define LANES 16 /* G = 2 vectors of eight 64-bit lanes */
#else
#define LANES 4
#endif

static inline u128 seeded(const uint64_t *w, u128 *inc)
{
    const u128 init = ((u128)w[0] << 64) | w[1], seq = ((u128)w[2] << 64) | w[3];
    *inc = (seq << 1) | 1;
    u128 s = *inc;          /* state 0, one step */
    s += init;
    return s * MULT + *inc; /* one more step */
}

static inline uint64_t output(u128 s)
{
    const uint64_t v = (uint64_t)(s >> 64) ^ (uint64_t)s;
    const unsigned r = (unsigned)(s >> 122);
    return (v >> r) | (v << ((-r) & 63));
}

/* The raw words of row o (n of them, as uint32) become (bits >> 8) * mul in one pass and then
 * lose sub in another: two loops in two functions, so that the compiler cannot fuse the product
 * and the difference into one multiply-add (which would round once instead of twice). */
static __attribute__((noinline)) void to_products(float *restrict o, long n, const float *restrict mul)
{
    for (long i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, o + i, 4); /* the raw word stored there (no type-punned pointer) */
        o[i] = (float)(bits >> 8) * mul[i];
    }
}

static __attribute__((noinline)) void minus(float *restrict o, long n, const float *restrict sub)
{
    for (long i = 0; i < n; i++)
        o[i] -= sub[i];
}

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h>

/* Eight generators in the lanes of two vectors (the states' high and low halves): one step, s =
 * s * MULT + inc mod 2^128, with the 64 x 64 -> 128 bit product of the low halves from four
 * 32 x 32 bit products; returns the XSL-RR outputs. */
static inline __m512i step8(__m512i *hi, __m512i *lo, __m512i ihi, __m512i ilo)
{
    const __m512i mh = _mm512_set1_epi64((long long)(MULT >> 64));
    const __m512i ml = _mm512_set1_epi64((long long)(uint64_t)MULT);
    const __m512i ml1 = _mm512_set1_epi64((long long)((uint64_t)MULT >> 32));
    const __m512i m32 = _mm512_set1_epi64(0xFFFFFFFFLL);
    const __m512i a1 = _mm512_srli_epi64(*lo, 32);
    const __m512i p00 = _mm512_mul_epu32(*lo, ml), p01 = _mm512_mul_epu32(*lo, ml1);
    const __m512i p10 = _mm512_mul_epu32(a1, ml), p11 = _mm512_mul_epu32(a1, ml1);
    const __m512i mid = _mm512_add_epi64(_mm512_add_epi64(_mm512_srli_epi64(p00, 32), _mm512_and_si512(p01, m32)),
                                         _mm512_and_si512(p10, m32));
    __m512i h = _mm512_add_epi64(_mm512_add_epi64(p11, _mm512_srli_epi64(p01, 32)),
                                 _mm512_add_epi64(_mm512_srli_epi64(p10, 32), _mm512_srli_epi64(mid, 32)));
    h = _mm512_add_epi64(h, _mm512_add_epi64(_mm512_mullo_epi64(*hi, ml), _mm512_mullo_epi64(*lo, mh)));
    __m512i l = _mm512_or_si512(_mm512_slli_epi64(mid, 32), _mm512_and_si512(p00, m32));
    l = _mm512_add_epi64(l, ilo);
    const __mmask8 carry = _mm512_cmplt_epu64_mask(l, ilo);
    h = _mm512_mask_add_epi64(_mm512_add_epi64(h, ihi), carry, _mm512_add_epi64(h, ihi), _mm512_set1_epi64(1));
    *hi = h, *lo = l;
    return _mm512_rorv_epi64(_mm512_xor_si512(h, l), _mm512_srli_epi64(h, 58));
}

/* The 8 x 8 transpose of eight vectors of 64-bit words, in registers. */
static inline void transpose8(const __m512i *r, __m512i *c)
{
    const __m512i ia = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13), ib = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    const __m512i ic = _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11), id = _mm512_setr_epi64(4, 5, 6, 7, 12, 13, 14, 15);
    __m512i t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm512_unpacklo_epi64(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi64(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm512_permutex2var_epi64(t[i], ia, t[i + 2]);
        u[i + 1] = _mm512_permutex2var_epi64(t[i], ib, t[i + 2]);
        u[i + 2] = _mm512_permutex2var_epi64(t[i + 1], ia, t[i + 3]);
        u[i + 3] = _mm512_permutex2var_epi64(t[i + 1], ib, t[i + 3]);
    }
    c[0] = _mm512_permutex2var_epi64(u[0], ic, u[4]), c[4] = _mm512_permutex2var_epi64(u[0], id, u[4]);
    c[2] = _mm512_permutex2var_epi64(u[1], ic, u[5]), c[6] = _mm512_permutex2var_epi64(u[1], id, u[5]);
    c[1] = _mm512_permutex2var_epi64(u[2], ic, u[6]), c[5] = _mm512_permutex2var_epi64(u[2], id, u[6]);
    c[3] = _mm512_permutex2var_epi64(u[3], ic, u[7]), c[7] = _mm512_permutex2var_epi64(u[3], id, u[7]);
}

/* Rows of generators 0..nb-1 (nb <= LANES = 8 G): G groups of eight generators step side by
 * side (one group alone would wait on its own latency), eight steps at a time, transposed in
 * registers so that each generator's eight outputs (sixteen 32-bit words) become sixteen floats
 * of its row in one vector. The product and the difference use the explicitly rounded
 * intrinsics, which the compiler never fuses into a multiply-add. */
enum { G = 2 };
#define NEAREST (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
static void rows(const u128 *s, const u128 *inc, int nb, long n, const float *restrict mul,
                 const float *restrict sub, float *const *o)
{
    uint64_t t[8 * G][4];
    for (int k = 0; k < 8 * G; k++)
        t[k][0] = (uint64_t)(s[k] >> 64), t[k][1] = (uint64_t)s[k], t[k][2] = (uint64_t)(inc[k] >> 64),
        t[k][3] = (uint64_t)inc[k];
    const __m512i col = _mm512_setr_epi64(0, 4, 8, 12, 16, 20, 24, 28);
    __m512i hi[G], lo[G], ihi[G], ilo[G];
    for (int g = 0; g < G; g++) {
        hi[g] = _mm512_i64gather_epi64(col, &t[8 * g][0], 8), lo[g] = _mm512_i64gather_epi64(col, &t[8 * g][1], 8);
        ihi[g] = _mm512_i64gather_epi64(col, &t[8 * g][2], 8), ilo[g] = _mm512_i64gather_epi64(col, &t[8 * g][3], 8);
    }
    const long words = (n + 1) / 2;
    for (long j = 0; j < words; j += 8) {
        __m512i r[G][8], c[8];
        for (int i = 0; i < 8; i++)
            for (int g = 0; g < G; g++)
                r[g][i] = step8(&hi[g], &lo[g], ihi[g], ilo[g]);
        const long left = n - 2 * j; /* 32-bit words still to write */
        const __mmask16 keep = left >= 16 ? 0xFFFF : (__mmask16)((1u << left) - 1);
        const __m512 mv = _mm512_maskz_loadu_ps(keep, mul + 2 * j), sv = _mm512_maskz_loadu_ps(keep, sub + 2 * j);
        for (int g = 0; g < G; g++) {
            transpose8(r[g], c);
            for (int k = 0; k < 8 && 8 * g + k < nb; k++) {
                const __m512 u = _mm512_cvtepu32_ps(_mm512_srli_epi32(c[k], 8)); /* exact: < 2^24 */
                const __m512 v = _mm512_sub_round_ps(_mm512_mul_round_ps(u, mv, NEAREST), sv, NEAREST);
                _mm512_mask_storeu_ps(o[8 * g + k] + 2 * j, keep, v);
            }
        }
    }
}
#endif

/* words: (B, 4); out: row b at out + b * ld, n floats, overwritten. */
void pcg64_uniform(int B, long n, const uint64_t *words, const float *mul, const float *sub,
                   float *out, long ld, int nthreads)
{
    const long groups = (B + LANES - 1) / LANES;
#pragma omp parallel for num_threads(nthreads) schedule(static)
    for (long gi = 0; gi < groups; gi++) {
        const int b0 = (int)gi * LANES, nb = B - b0 < LANES ? B - b0 : LANES;
        u128 s[LANES], inc[LANES];
        float *o[LANES];
        for (int k = 0; k < LANES; k++) {
            const int b = b0 + (k < nb ? k : 0); /* spare lanes repeat row b0, unused */
            s[k] = seeded(words + 4L * b, &inc[k]);
            o[k] = out + (long)b * ld;
        }
#if defined(__AVX512F__) && defined(__AVX512DQ__)
        if (LANES == 8 * G) {
            rows(s, inc, nb, n, mul, sub, o);
            continue;
        }
#endif
        long i = 0;
        for (; i + 2 <= n; i += 2)
            for (int k = 0; k < LANES; k++) {
                s[k] = s[k] * MULT + inc[k];
                const uint64_t v = output(s[k]);
                if (k < nb)
                    memcpy(o[k] + i, &v, 8); /* low half first (little-endian), as numpy */
            }
        if (i < n)
            for (int k = 0; k < nb; k++) {
                s[k] = s[k] * MULT + inc[k];
                const uint32_t v = (uint32_t)output(s[k]);
                memcpy(o[k] + i, &v, 4);
            }
        for (int k = 0; k < nb; k++) {
            to_products(o[k], n, mul);
            minus(o[k], n, sub);
        }
    }
}
