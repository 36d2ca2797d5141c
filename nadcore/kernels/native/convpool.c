/* Fused "convolution -> 2x2 max-pool -> bias -> ReLU" for M small models at once, forward and
 * backward, on the CPU (nadcore.kernels.native; used by train_many for LeNet), and at the end of this file
 * LeNet's exact input gradient for many networks (the gradient NADs).
 *
 * Shapes. Model m, example b is item i = m * B + b. Its input is an (H, W, Cin) array at
 * x + i * xs; the convolution is K x K, stride 1, no padding (Ho = H - K + 1), followed by a 2x2
 * max-pool of stride 2 (Hp = Ho / 2), the bias and a ReLU. The pooled output of channel c at
 * (p, q) is out[i * os + c * ocs + p * oys + q * oxs]; arg (same indexing, one byte) records
 * which of the window's four positions won: 2 * dy + dx, the first maximum in row-major order,
 * as torch.max_pool2d chooses it. With P = 1 instead of 2 there is no pool ("convolution ->
 * bias -> ReLU", Hp = Ho, LeNet without pooling): the same loops with a 1 x 1 window, no arg.
 *
 * Forward: every output position of the convolution is computed (the max-pool needs them all),
 * vectorised over output channels (LeNet's first layer: over pooled columns) in vectors of one
 * register (16 floats with AVX-512, 8 elsewhere), with the outputs of up to five pooling
 * windows in registers for 5 x 5 kernels. Backward: the pool passes each
 * pooled gradient to one convolution output and the ReLU zeroes those whose output is not
 * positive, so only those positions contribute to the weight and input gradients: about an
 * eighth of a dense convolution backward. (LeNet's first layer, whose one input channel leaves
 * a winning position only a 5-float row per kernel row, instead runs branch-free over all pooled
 * positions, vectorised over pooled columns.) Sums over examples run in fixed chunks of CHUNK
 * examples and are added in a fixed order, so results do not depend on the number of threads.
 */
#include <stdint.h>
#include <string.h>
#if defined(__AVX512F__) && defined(__AVX512VL__)
#include <immintrin.h>
#endif

#define CHUNK 16

typedef float vec __attribute__((vector_size(64), aligned(4)));  /* 16 floats, unaligned ok */
typedef int32_t ivec __attribute__((vector_size(64), aligned(4)));
typedef float vec8 __attribute__((vector_size(32), aligned(4)));  /* 8 floats */
typedef int32_t ivec8 __attribute__((vector_size(32), aligned(4)));
#define VW 16 /* output channels are padded to a multiple of VW in the weights' layout */

/* The forward's vectors over output channels: FL floats, as many as one register holds (16 with
 * AVX-512; 8 elsewhere, one AVX2 register, since wider generic vectors would not stay in
 * registers). Each lane is one channel with its own sum, so the width changes the speed only. */
#if defined(__AVX512F__) && defined(__AVX512VL__)
typedef vec fvec;
typedef ivec ifvec;
#define FL 16
#else
typedef vec8 fvec;
typedef ivec8 ifvec;
#define FL 8
#endif

/* LeNet's first layer (Cin = 1, K = 5, inputs at most 32 wide), forward and backward, is
 * vectorised over the pooled columns q. Both read the input as six shifted copies of each row:
 * lane q of X[r][s] is column 2q + s of row r (zero past the row), so the convolution at column
 * 2q + dx, shifted by kx, is lane q of X[r][dx + kx]; one aligned load serves a whole row of
 * pooled outputs. */
enum { F1_K = 5, F1_C = 6, F1_SH = 6 };
/* the inputs first_layer_shifts takes: at most 16 pooled columns, rows on the caller's stack */
#define F1_SHIFTS_FIT(H, W) ((W) <= 32 && (H) <= 64)

/* A pooling window's four convolution outputs a0..a3 (in the order (0,0), (0,1), (1,0), (1,1))
 * -> their first maximum (NaN wins, as in torch), its position into *k -> + bias -> ReLU (which
 * keeps NaN, as torch's does). */
static inline __attribute__((always_inline)) fvec
pool_bias_relu(fvec a0, fvec a1, fvec a2, fvec a3, fvec bias, ifvec *restrict k)
{
    fvec best = a0;
    ifvec s, kk = (ifvec){0};
    s = (a1 > best) | (a1 != a1);
    best = (fvec)(((ifvec)a1 & s) | ((ifvec)best & ~s)); kk = (1 & s) | (kk & ~s);
    s = (a2 > best) | (a2 != a2);
    best = (fvec)(((ifvec)a2 & s) | ((ifvec)best & ~s)); kk = (2 & s) | (kk & ~s);
    s = (a3 > best) | (a3 != a3);
    best = (fvec)(((ifvec)a3 & s) | ((ifvec)best & ~s)); kk = (3 & s) | (kk & ~s);
    *k = kk;
    best += bias;
    s = best <= 0;
    return (fvec)((ifvec)best & ~s);
}

#if defined(__AVX512F__) && defined(__AVX512VL__)
static void first_layer_shifts(int H, int W, const float *restrict xi, float (*restrict X)[F1_SH][16])
{
    const __mmask16 lo = W >= 16 ? 0xFFFF : (__mmask16)((1u << W) - 1);
    const __mmask16 hi = W <= 16 ? 0 : (__mmask16)((1u << (W - 16)) - 1); /* W <= 32 */
    __m512i shift[F1_SH];
    __mmask16 inside[F1_SH];
    for (int s = 0; s < F1_SH; s++) { /* lane q takes column 2q + s (32 and up: zero) */
        shift[s] = _mm512_add_epi32(_mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24,
                                                      26, 28, 30), _mm512_set1_epi32(s));
        inside[s] = _mm512_cmplt_epi32_mask(shift[s], _mm512_set1_epi32(32));
    }
    for (int r = 0; r < H; r++) {
        const __m512 u = _mm512_maskz_loadu_ps(lo, xi + (long)r * W);
        const __m512 v = _mm512_maskz_loadu_ps(hi, xi + (long)r * W + 16);
        _Pragma("GCC unroll 8")
        for (int s = 0; s < F1_SH; s++)
            _mm512_store_ps(X[r][s], _mm512_maskz_permutex2var_ps(inside[s], u, shift[s], v));
    }
}
#else
/* first_layer_shifts without AVX-512 */
static void first_layer_shifts(int H, int W, const float *restrict xi, float (*restrict X)[F1_SH][16])
{
    float row[48] = {0}; /* one input row, zero past its end */
    for (int r = 0; r < H; r++) {
        memcpy(row, xi + (long)r * W, sizeof(float) * W);
        for (int sh = 0; sh < F1_SH; sh++)
            for (int q = 0; q < 16; q++)
                X[r][sh][q] = row[2 * q + sh];
    }
}
#endif

/* LeNet's first layer, the forward of one item: the pooled columns in vectors of FL lanes, and
 * F1_CG channels at a time, whose 4 F1_CG accumulators (one per channel and position in the
 * pooling window) stay in registers with the six shifted rows: all six channels with AVX-512
 * (24 + 6 of 32 registers), one with 8-float vectors (4 + 6 of 16 AVX2 registers).
 * w: (6, 5, 5), bias: 6 floats. */
#if FL == 16
#define F1_CG F1_C
#else
#define F1_CG 1
#endif
static void forward_first_layer(int H, int W, const float *restrict xi, const float *restrict w,
                                const float *restrict bias, float *restrict out,
                                uint8_t *restrict arg, long ocs, long oys, long oxs)
{
    const int Hp = (H - F1_K + 1) / 2, Wp = (W - F1_K + 1) / 2;
    float X[H][F1_SH][16] __attribute__((aligned(64)));
    first_layer_shifts(H, W, xi, X);
    for (int p = 0; p < Hp; p++) {
        for (int h = 0; h < Wp; h += FL) {
            for (int c0 = 0; c0 < F1_C; c0 += F1_CG) {
                fvec acc[F1_CG][4];
                _Pragma("GCC unroll 8")
                for (int c = 0; c < F1_CG; c++)
                    _Pragma("GCC unroll 4")
                    for (int a = 0; a < 4; a++)
                        acc[c][a] = (fvec){0};
                _Pragma("GCC unroll 8")
                for (int rr = 0; rr < F1_K + 1; rr++) {
                    fvec S[F1_SH];
                    _Pragma("GCC unroll 8")
                    for (int sh = 0; sh < F1_SH; sh++)
                        S[sh] = *(const fvec *)&X[2 * p + rr][sh][h];
                    _Pragma("GCC unroll 8")
                    for (int dy = 0; dy < 2; dy++) {
                        const int ky = rr - dy;
                        if (ky < 0 || ky >= F1_K)
                            continue;
                        _Pragma("GCC unroll 8")
                        for (int c = 0; c < F1_CG; c++)
                            _Pragma("GCC unroll 8")
                            for (int kx = 0; kx < F1_K; kx++) {
                                const float wv = w[((c0 + c) * F1_K + ky) * F1_K + kx];
                                acc[c][2 * dy] += wv * S[kx];
                                acc[c][2 * dy + 1] += wv * S[kx + 1];
                            }
                    }
                }
                _Pragma("GCC unroll 8")
                for (int c = 0; c < F1_CG; c++) {
                    ifvec k;
                    const fvec best = pool_bias_relu(acc[c][0], acc[c][1], acc[c][2], acc[c][3],
                                                     (fvec){0} + bias[c0 + c], &k);
                    const long o = (c0 + c) * ocs + p * oys;
                    for (int q = h; q < Wp && q < h + FL; q++) {
                        out[o + q * oxs] = best[q - h];
                        arg[o + q * oxs] = (uint8_t)k[q - h];
                    }
                }
            }
        }
    }
}

/* pool_bias_relu of one window's four convolution outputs a0..a3 (channels in lanes): channel c's
 * result to out[c * ocs], its winner to arg[c * ocs]. */
static inline __attribute__((always_inline)) void
pool_store(fvec a0, fvec a1, fvec a2, fvec a3, fvec bv, int nc, float *restrict out,
           uint8_t *restrict arg, long ocs)
{
    ifvec k;
    const fvec best = pool_bias_relu(a0, a1, a2, a3, bv, &k);
    for (int c = 0; c < nc; c++) {
        out[(long)c * ocs] = best[c];
        arg[(long)c * ocs] = (uint8_t)k[c];
    }
}

/* Without a pool: bias -> ReLU (which keeps NaN, as torch's does) of one position's convolution
 * outputs a (channels in lanes), channel c's result to out[c * ocs]. */
static inline __attribute__((always_inline)) void
relu_store(fvec a, fvec bv, int nc, float *restrict out, long ocs)
{
    a += bv;
    const ifvec s = a <= 0;
    a = (fvec)((ifvec)a & ~s);
    for (int c = 0; c < nc; c++)
        out[(long)c * ocs] = a[c];
}

/* The generic forward of one item: its input xi (H, W, Cin), weights wm (K, K, Cin, CP) with CP =
 * Cout rounded up to VW (zero padded), bias (CP); vectorised over output channels. P: the pool's
 * side, 2 or 1 (none), a constant at each call site. */
static inline __attribute__((always_inline)) void
forward_item(const int P, int H, int W, int Cin, int Cout, int K, const float *restrict xi,
             const float *restrict wm, const float *restrict bias, float *restrict out,
             uint8_t *restrict arg, long ocs, long oys, long oxs)
{
    const int Hp = (H - K + 1) / P, Wp = (W - K + 1) / P;
    const int CP = (Cout + VW - 1) / VW * VW;
    const long rs = (long)W * Cin; /* row stride of the input */
    for (int t = 0; t < Cout; t += FL) {
        fvec bv;
        memcpy(&bv, bias + t, sizeof bv);
        const int nc = Cout - t < FL ? Cout - t : FL;
        for (int p = 0; p < Hp; p++) {
            for (int q = 0; q < Wp; q++) {
                fvec a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
                const float *x0 = xi + ((long)P * p) * rs + (long)P * q * Cin;
                _Pragma("GCC unroll 8")
                for (int ky = 0; ky < K; ky++) {
                    for (int kx = 0; kx < K; kx++) {
                        const float *xp = x0 + ky * rs + (long)kx * Cin;
                        const float *wp = wm + ((long)(ky * K + kx) * Cin) * CP + t;
                        for (int ci = 0; ci < Cin; ci++) {
                            const fvec w = *(const fvec *)(wp + (long)ci * CP);
                            a0 += w * xp[ci];
                            if (P == 2) { /* the pool's other three positions */
                                a1 += w * xp[ci + Cin];
                                a2 += w * xp[ci + rs];
                                a3 += w * xp[ci + rs + Cin];
                            }
                        }
                    }
                }
                if (P == 2)
                    pool_store(a0, a1, a2, a3, bv, nc, out + p * oys + q * oxs + t * ocs,
                               arg + p * oys + q * oxs + t * ocs, ocs);
                else
                    relu_store(a0, bv, nc, out + p * oys + q * oxs + t * ocs, ocs);
            }
        }
    }
}

/* The forward of one item for 5 x 5 kernels and at most VW output channels (LeNet's second
 * layer), a block of NQ <= 5 pooled columns of pooled row p at a time (P = 2; without a pool,
 * NQ <= 8 columns of row p): the P x P NQ convolution outputs stay in registers, and for each
 * kernel row ky and input channel ci the five weight vectors w[ky][kx][ci] are loaded once and
 * each input value is broadcast once for the up to five outputs it reaches, about three loads
 * per ten multiply-adds (forward_item, one output window at a time, needs one broadcast per
 * multiply-add and runs at about half the rate). */
static inline __attribute__((always_inline)) void
forward_block5(const int P, const int NQ, int Cin, const float *restrict x0, long rs,
               const float *restrict wm, fvec bv, int nc, float *restrict out,
               uint8_t *restrict arg, long ocs, long oxs)
{
    enum { K = 5 };
    fvec a[2][10]; /* P NQ <= 10 */
    _Pragma("GCC unroll 2")
    for (int dy = 0; dy < P; dy++)
        _Pragma("GCC unroll 16")
        for (int j = 0; j < P * NQ; j++)
            a[dy][j] = (fvec){0};
    for (int ky = 0; ky < K; ky++) {
        for (int ci = 0; ci < Cin; ci++) {
            fvec w[K];
            _Pragma("GCC unroll 5")
            for (int kx = 0; kx < K; kx++)
                w[kx] = *(const fvec *)(wm + ((long)(ky * K + kx) * Cin + ci) * VW);
            _Pragma("GCC unroll 2")
            for (int dy = 0; dy < P; dy++) {
                const float *xr = x0 + (dy + ky) * rs + ci;
                _Pragma("GCC unroll 14")
                for (int X = 0; X < P * NQ + K - 1; X++) {
                    const float v = xr[(long)X * Cin];
                    _Pragma("GCC unroll 5")
                    for (int kx = 0; kx < K; kx++)
                        if (X - kx >= 0 && X - kx < P * NQ)
                            a[dy][X - kx] += w[kx] * v;
                }
            }
        }
    }
    _Pragma("GCC unroll 8")
    for (int q = 0; q < NQ; q++)
        if (P == 2)
            pool_store(a[0][2 * q], a[0][2 * q + 1], a[1][2 * q], a[1][2 * q + 1], bv, nc,
                       out + q * oxs, arg + q * oxs, ocs);
        else
            relu_store(a[0][q], bv, nc, out + q * oxs, ocs);
}

/* forward_block5 along the rows of one item: a block of min(Wp - q, 5) pooled columns (P = 2)
 * or min(Wp - q, 8) output columns (P = 1), each count its own instance */
#define CASES_UP_TO_5(P, ...)                                                                 \
    case 5: forward_block5(P, 5, __VA_ARGS__); break;                                         \
    case 4: forward_block5(P, 4, __VA_ARGS__); break;                                         \
    case 3: forward_block5(P, 3, __VA_ARGS__); break;                                         \
    case 2: forward_block5(P, 2, __VA_ARGS__); break;                                         \
    default: forward_block5(P, 1, __VA_ARGS__); break;
#define POOLED_BLOCK5(...)                                                                    \
    switch (Wp - q < 5 ? Wp - q : 5) { CASES_UP_TO_5(2, __VA_ARGS__) }
#define UNPOOLED_BLOCK8(...)                                                                  \
    switch (Wp - q < 8 ? Wp - q : 8) {                                                        \
    case 8: forward_block5(1, 8, __VA_ARGS__); break;                                         \
    case 7: forward_block5(1, 7, __VA_ARGS__); break;                                         \
    case 6: forward_block5(1, 6, __VA_ARGS__); break;                                         \
    CASES_UP_TO_5(1, __VA_ARGS__)                                                             \
    }

static void forward_rows5(int P, int H, int W, int Cin, int Cout, const float *restrict xi,
                          const float *restrict wm, const float *restrict bias, float *restrict out,
                          uint8_t *restrict arg, long ocs, long oys, long oxs)
{
    const int Hp = (H - 5 + 1) / P, Wp = (W - 5 + 1) / P;
    const long rs = (long)W * Cin;
    for (int t = 0; t < Cout; t += FL) {
        fvec bv;
        memcpy(&bv, bias + t, sizeof bv);
        const int nc = Cout - t < FL ? Cout - t : FL;
        for (int p = 0; p < Hp; p++) {
            if (P == 2) {
                for (int q = 0; q < Wp; q += 5) {
                    uint8_t *g = arg + p * oys + q * oxs + t * ocs;
                    POOLED_BLOCK5(Cin, xi + 2L * p * rs + 2L * q * Cin, rs, wm + t, bv, nc,
                                  out + p * oys + q * oxs + t * ocs, g, ocs, oxs)
                }
            } else {
                for (int q = 0; q < Wp; q += 8)
                    UNPOOLED_BLOCK8(Cin, xi + p * rs + (long)q * Cin, rs, wm + t, bv, nc,
                                    out + p * oys + q * oxs + t * ocs, 0, ocs, oxs)
            }
        }
    }
}

/* The forward of one item: LeNet's first layer (Cin = 1, K = 5, Cout = 6, inputs at most 32
 * wide and 64 high: its shifted rows take up to 24 KB of stack) in forward_first_layer, which
 * reads w (Cout, Cin, K, K) and the first Cout biases; any other layer with 5 x 5 kernels and
 * at most VW channels (LeNet's second) in forward_rows5, the rest in forward_item; these two
 * read wt (K, K, Cin, CP) and CP biases. */
static void forward_any(int P, int H, int W, int Cin, int Cout, int K, const float *restrict xi,
                        const float *restrict wt, const float *restrict w, const float *restrict bias,
                        float *restrict out, uint8_t *restrict arg, long ocs, long oys, long oxs)
{
    if (P == 2 && Cin == 1 && K == F1_K && Cout == F1_C && F1_SHIFTS_FIT(H, W)) {
        forward_first_layer(H, W, xi, w, bias, out, arg, ocs, oys, oxs);
        return;
    }
    if (K == 5 && Cout <= VW) {
        forward_rows5(P, H, W, Cin, Cout, xi, wt, bias, out, arg, ocs, oys, oxs);
        return;
    }
    if (P == 2)
        forward_item(2, H, W, Cin, Cout, K, xi, wt, bias, out, arg, ocs, oys, oxs);
    else
        forward_item(1, H, W, Cin, Cout, K, xi, wt, bias, out, arg, ocs, oys, oxs);
}

/* wt: (M, K, K, Cin, CP) with CP = Cout rounded up to VW (zero padded); bias: (M, CP).
 * w: the same weights as given, (M, Cout, Cin, K, K), which LeNet's first layer reads.
 * P: the pool's side, 2, or 1 for none (then arg is not written and may be NULL). */
void convpool_forward(int M, int B, int H, int W, int Cin, int Cout, int K, int P,
                      const float *restrict x, long xs, const float *restrict wt,
                      const float *restrict bias, const float *restrict w, float *restrict out,
                      uint8_t *restrict arg, long os, long ocs, long oys, long oxs, int nthreads)
{
    const int CP = (Cout + VW - 1) / VW * VW;
    const long items = (long)M * B;
#pragma omp parallel for num_threads(nthreads) schedule(static)
    for (long it = 0; it < items; it++) {
        const int m = (int)(it / B);
        forward_any(P, H, W, Cin, Cout, K, x + it * xs, wt + (long)m * K * K * Cin * CP,
                    w + (long)m * Cout * Cin * K * K, bias + (long)m * CP, out + it * os,
                    arg ? arg + it * os : 0, ocs, oys, oxs);
    }
}

/* One task of the backward pass: examples b0..b1-1 of model m, sums into pw (Cout x K x K x Cin
 * weights) and pb (Cout biases). Inlined with constant P, K and Cin for LeNet's two layers, so
 * that the inner loops are unrolled and the weight gradient of one channel stays in registers.
 * Each output that passed the ReLU adds its gradient times the patch under the position that
 * produced it: the window's winner (arg) with a pool, the output's own position without. */
static inline __attribute__((always_inline)) void
backward_task(const int P, const int K, const int Cin, int m, int b0, int b1, int B, int H, int W,
              int Cout,
              const float *restrict x, long xs, const float *restrict wm,
              const float *restrict g, const float *restrict out, const uint8_t *restrict arg,
              long os, long ocs, long oys, long oxs, float *restrict dx,
              float *restrict pw, float *restrict pb)
{
    const int Hp = (H - K + 1) / P, Wp = (W - K + 1) / P;
    const int L = K * Cin;
    const long rs = (long)W * Cin;
    for (int b = b0; b < b1; b++) {
        const long it = (long)m * B + b;
        const float *xi = x + it * xs;
        float *dxi = dx ? dx + it * (long)H * rs : 0;
        if (dxi)
            memset(dxi, 0, sizeof(float) * H * rs);
        for (int c = 0; c < Cout; c++) {
            float acc[K * L];
            float accb = 0;
            memset(acc, 0, sizeof acc);
            const float *wc = wm + (long)c * K * L;
            for (int p = 0; p < Hp; p++) {
                for (int q = 0; q < Wp; q++) {
                    const long o = it * os + (long)c * ocs + p * oys + q * oxs;
                    if (out[o] <= 0)
                        continue; /* the ReLU's gradient is zero */
                    const float gv = g[o];
                    const int k = P == 2 ? arg[o] : 0;
                    const long off = ((long)P * p + (k >> 1)) * rs + ((long)P * q + (k & 1)) * Cin;
                    accb += gv;
                    _Pragma("GCC unroll 8")
                    for (int ky = 0; ky < K; ky++)
                        for (int l = 0; l < L; l++)
                            acc[ky * L + l] += gv * xi[off + ky * rs + l];
                    if (dxi)
                        _Pragma("GCC unroll 8")
                        for (int ky = 0; ky < K; ky++)
                            for (int l = 0; l < L; l++)
                                dxi[off + ky * rs + l] += gv * wc[ky * L + l];
                }
            }
            float *pwc = pw + (long)c * K * L;
            for (int j = 0; j < K * L; j++)
                pwc[j] += acc[j];
            pb[c] += accb;
        }
    }
}

#if defined(__AVX512F__) && defined(__AVX512VL__)
/* backward_task with AVX-512 for 5 x 5 kernels with rows of at most 32 floats (Cin <= 6): each row is
 * one or two masked vectors; the channel's weight gradient (K rows) and, for the input
 * gradient, its weights stay in registers. */
static inline __attribute__((always_inline)) void
backward_task_avx512(const int P, const int Cin, int m, int b0, int b1, int B, int H, int W,
                     int Cout, const float *restrict x, long xs, const float *restrict wm,
                     const float *restrict g, const float *restrict out,
                     const uint8_t *restrict arg, long os, long ocs, long oys, long oxs,
                     float *restrict dx, float *restrict pw, float *restrict pb)
{
    enum { K = 5 }; /* fixed, so that the arrays below are registers */
    const int Hp = (H - K + 1) / P, Wp = (W - K + 1) / P;
    const int L = K * Cin;
    const __mmask16 m0 = L >= 16 ? 0xFFFF : (__mmask16)((1u << L) - 1);
    const __mmask16 m1 = L <= 16 ? 0 : L >= 32 ? 0xFFFF : (__mmask16)((1u << (L - 16)) - 1);
    const long rs = (long)W * Cin;
    /* The input gradient of one example is summed in three buffers used in turn: patches of
     * neighbouring positions overlap, and a load of what the previous position has just stored,
     * shifted, cannot be forwarded from the store buffer (it waits for the store). Each has 16
     * floats of room at the end, so that rows are stored as whole vectors (lanes past a row
     * keep their value). */
    const long n = dx ? H * rs : 0, nb = n + 16;
    float buf[dx ? 3 * nb : 1];
    for (int b = b0; b < b1; b++) {
        const long it = (long)m * B + b;
        const float *xi = x + it * xs;
        float *dxi = dx ? buf : 0, *dxn = dxi + nb, *dxl = dxn + nb; /* in turn */
        if (dxi)
            memset(buf, 0, sizeof(float) * 3 * nb);
        for (int c = 0; c < Cout; c++) {
            __m512 a0[K], a1[K], w0[K], w1[K];
            const float *wc = wm + (long)c * K * L;
            _Pragma("GCC unroll 8")
            for (int ky = 0; ky < K; ky++) {
                a0[ky] = a1[ky] = _mm512_setzero_ps();
                w0[ky] = _mm512_maskz_loadu_ps(m0, wc + ky * L);
                w1[ky] = L > 16 ? _mm512_maskz_loadu_ps(m1, wc + ky * L + 16) : _mm512_setzero_ps();
            }
            float accb = 0;
            for (int p = 0; p < Hp; p++) {
                for (int q = 0; q < Wp; q++) {
                    const long o = it * os + (long)c * ocs + p * oys + q * oxs;
                    if (out[o] <= 0)
                        continue; /* the ReLU's gradient is zero */
                    const float gs = g[o];
                    const int k = P == 2 ? arg[o] : 0;
                    const long off = ((long)P * p + (k >> 1)) * rs + ((long)P * q + (k & 1)) * Cin;
                    const __m512 gv = _mm512_set1_ps(gs);
                    accb += gs;
                    _Pragma("GCC unroll 8")
                    for (int ky = 0; ky < K; ky++) {
                        const float *xr = xi + off + ky * rs;
                        a0[ky] = _mm512_fmadd_ps(gv, _mm512_maskz_loadu_ps(m0, xr), a0[ky]);
                        if (L > 16)
                            a1[ky] = _mm512_fmadd_ps(gv, _mm512_maskz_loadu_ps(m1, xr + 16), a1[ky]);
                    }
                    if (dxi) {
                        _Pragma("GCC unroll 8")
                        for (int ky = 0; ky < K; ky++) {
                            float *dr = dxi + off + ky * rs;
                            _mm512_storeu_ps(dr, _mm512_mask3_fmadd_ps(gv, w0[ky], _mm512_loadu_ps(dr), m0));
                            if (L > 16)
                                _mm512_storeu_ps(dr + 16, _mm512_mask3_fmadd_ps(gv, w1[ky], _mm512_loadu_ps(dr + 16), m1));
                        }
                        float *t = dxi;
                        dxi = dxn, dxn = dxl, dxl = t;
                    }
                }
            }
            float *pwc = pw + (long)c * K * L;
            _Pragma("GCC unroll 8")
            for (int ky = 0; ky < K; ky++) {
                float *r = pwc + ky * L;
                _mm512_mask_storeu_ps(r, m0, _mm512_add_ps(_mm512_maskz_loadu_ps(m0, r), a0[ky]));
                if (L > 16)
                    _mm512_mask_storeu_ps(r + 16, m1, _mm512_add_ps(_mm512_maskz_loadu_ps(m1, r + 16), a1[ky]));
            }
            pb[c] += accb;
        }
        if (dx) {
            float *d = dx + it * n;
            for (long j = 0; j < n; j++)
                d[j] = buf[j] + buf[nb + j] + buf[2 * nb + j];
        }
    }
}

/* The weight gradient of LeNet's first layer (Cin = 1, K = 5, no input gradient, inputs at most
 * 32 wide and 64 high, at most 16 channels: FIRST_LAYER_FITS), vectorised over the pooled
 * columns q as forward_first_layer is. The pooled gradient of channel c is split by the window
 * position w = 2 dy + dx that won into four planes G_w (zero where another position won or the
 * ReLU stopped it), so that
 *     dW[c][ky][kx] = sum_w sum_p sum_q G_w[p][q] * x[2p + dy + ky][2q + dx + kx],
 * read from the input's shifted rows X[r][s][q] = x[r][2q + s] (first_layer_shifts, s = dx + kx):
 * all lanes but the two past Wp = 14 do work (before: a 5-float row per winning position). Lanes
 * are summed once per task. */

/* The planes G[c][p][w] of one example (lanes q < Wp), and bias[c] += their sum. Channels-last
 * rows of at most 96 values (LeNet: 14 x 6) are transposed with permutes (a gather costs about
 * 18 cycles here); any other layout is read one value at a time. */
static void first_layer_planes(int Hp, int Wp, int Cout, const float *restrict gi,
                               const float *restrict oi, const uint8_t *restrict ai, long ocs,
                               long oys, long oxs, float (*restrict G)[4][16], __m512 *restrict bias)
{
    const __mmask16 qm = (__mmask16)((1u << Wp) - 1);
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const int n = Wp * Cout, rows = ocs == 1 && oxs == Cout && n <= 96;
    for (int p = 0; p < Hp; p++) {
        __m512 gv[6];
        __m512i av[6];
        for (int j = 0; rows && j < 6; j++) { /* the row, 16 values per vector; zero past n */
            const int left = n - 16 * j;
            const __mmask16 k = left >= 16 ? 0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
            const long o = p * oys + 16L * j;
            const __mmask16 pass = _mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(k, oi + o),
                                                      _mm512_setzero_ps(), _CMP_NLE_UQ); /* ReLU */
            gv[j] = _mm512_maskz_loadu_ps(k & pass, gi + o);
            av[j] = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(k, ai + o));
        }
        for (int c = 0; c < Cout; c++) {
            __m512 gq;
            __m512i aq;
            if (rows) { /* lane q: value q * Cout + c of the row */
                const __m512i e = _mm512_add_epi32(_mm512_mullo_epi32(lane, _mm512_set1_epi32(Cout)),
                                                   _mm512_set1_epi32(c));
                const __mmask16 k2 = _mm512_cmpge_epi32_mask(e, _mm512_set1_epi32(32));
                const __mmask16 k3 = _mm512_cmpge_epi32_mask(e, _mm512_set1_epi32(64));
                gq = _mm512_mask_blend_ps(k2, _mm512_permutex2var_ps(gv[0], e, gv[1]),
                                          _mm512_permutex2var_ps(gv[2], e, gv[3]));
                gq = _mm512_maskz_mov_ps(qm, _mm512_mask_blend_ps(k3, gq, _mm512_permutex2var_ps(gv[4], e, gv[5])));
                aq = _mm512_mask_blend_epi32(k2, _mm512_permutex2var_epi32(av[0], e, av[1]),
                                             _mm512_permutex2var_epi32(av[2], e, av[3]));
                aq = _mm512_mask_blend_epi32(k3, aq, _mm512_permutex2var_epi32(av[4], e, av[5]));
            } else {
                float gs[16] = {0};
                int32_t as[16] = {0};
                for (int q = 0; q < Wp; q++) {
                    const long o = (long)c * ocs + p * oys + (long)q * oxs;
                    gs[q] = oi[o] <= 0 ? 0.f : gi[o];
                    as[q] = ai[o];
                }
                gq = _mm512_loadu_ps(gs);
                aq = _mm512_loadu_si512(as);
            }
            bias[c] = _mm512_add_ps(bias[c], gq);
            for (int w = 0; w < 4; w++)
                _mm512_store_ps(G[c * Hp + p][w],
                                _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(aq, _mm512_set1_epi32(w)), gq));
        }
    }
}

/* a[ky][kx - kx0] (kx0 <= kx < kx0 + NX) += the products of one pooled row p: the planes g[w]
 * with the shifted input rows xp (X[2p]); each input row's shifts are loaded once and serve
 * every (dy, ky) that reads it (NX <= 3: accumulators, planes and shifts fit in registers). */
static inline __attribute__((always_inline)) void
first_layer_row(const int kx0, const int NX, const float *restrict xp, const float (*restrict g)[16],
                __m512 *restrict a)
{
    enum { K = F1_K };
    __m512 gw[4];
    _Pragma("GCC unroll 4")
    for (int w = 0; w < 4; w++)
        gw[w] = _mm512_load_ps(g[w]);
    _Pragma("GCC unroll 8")
    for (int rr = 0; rr < K + 1; rr++) {
        __m512 S[4];
        _Pragma("GCC unroll 4")
        for (int s = 0; s <= NX; s++)
            S[s] = _mm512_load_ps(xp + (rr * F1_SH + kx0 + s) * 16);
        _Pragma("GCC unroll 2")
        for (int dy = 0; dy < 2; dy++) {
            const int ky = rr - dy;
            if (ky < 0 || ky >= K)
                continue;
            _Pragma("GCC unroll 2")
            for (int dx = 0; dx < 2; dx++)
                _Pragma("GCC unroll 4")
                for (int kx = 0; kx < NX; kx++)
                    a[ky * NX + kx] = _mm512_fmadd_ps(gw[2 * dy + dx], S[dx + kx], a[ky * NX + kx]);
        }
    }
}

static void backward_first_layer(int m, int b0, int b1, int B, int H, int W, int Cout,
                                 const float *restrict x, long xs, const float *restrict g,
                                 const float *restrict out, const uint8_t *restrict arg, long os,
                                 long ocs, long oys, long oxs, float *restrict pw, float *restrict pb)
{
    enum { K = F1_K };
    const int Hp = (H - K + 1) / 2, Wp = (W - K + 1) / 2;
    float X[H][F1_SH][16] __attribute__((aligned(64)));
    float G[Cout * Hp][4][16] __attribute__((aligned(64)));
    __m512 acc[Cout][K * K], bias[Cout]; /* acc[c]: kx 0..2 of each row, then kx 3..4 */
    const __m512 zero = _mm512_setzero_ps();
    for (int c = 0; c < Cout; c++) {
        bias[c] = zero;
        for (int j = 0; j < K * K; j++)
            acc[c][j] = zero;
    }
    for (int b = b0; b < b1; b++) {
        const long it = (long)m * B + b;
        first_layer_shifts(H, W, x + it * xs, X);
        first_layer_planes(Hp, Wp, Cout, g + it * os, out + it * os, arg + it * os, ocs, oys, oxs, G, bias);
        for (int c = 0; c < Cout; c++) {
            __m512 a[15];
            _Pragma("GCC unroll 16")
            for (int j = 0; j < 15; j++)
                a[j] = acc[c][j];
            for (int p = 0; p < Hp; p++)
                first_layer_row(0, 3, X[2 * p][0], G[c * Hp + p], a);
            _Pragma("GCC unroll 16")
            for (int j = 0; j < 15; j++)
                acc[c][j] = a[j];
            _Pragma("GCC unroll 16")
            for (int j = 0; j < 10; j++)
                a[j] = acc[c][15 + j];
            for (int p = 0; p < Hp; p++)
                first_layer_row(3, 2, X[2 * p][0], G[c * Hp + p], a);
            _Pragma("GCC unroll 16")
            for (int j = 0; j < 10; j++)
                acc[c][15 + j] = a[j];
        }
    }
    for (int c = 0; c < Cout; c++) {
        for (int ky = 0; ky < K; ky++)
            for (int kx = 0; kx < K; kx++)
                pw[((long)c * K + ky) * K + kx] +=
                    _mm512_reduce_add_ps(kx < 3 ? acc[c][ky * 3 + kx] : acc[c][15 + ky * 2 + kx - 3]);
        pb[c] += _mm512_reduce_add_ps(bias[c]);
    }
}
#define FAST_TASK(p, k, cin) backward_task_avx512(p, cin, m, b0, b1, B, H, W, Cout, x, xs, wm, \
                                                  g, out, arg, os, ocs, oys, oxs, dx, pw, pb)
#define FIRST_LAYER_FITS (F1_SHIFTS_FIT(H, W) && Cout <= 16) /* its scratch: under 200 KB of stack */
#define FIRST_LAYER_TASK backward_first_layer(m, b0, b1, B, H, W, Cout, x, xs, g, out, arg, os, \
                                             ocs, oys, oxs, pw, pb)
#else
#define FIRST_LAYER_FITS 1
#define FIRST_LAYER_TASK FAST_TASK(2, 5, 1)
#define FAST_TASK(p, k, cin) backward_task(p, k, cin, m, b0, b1, B, H, W, Cout, x, xs, wm, g, out, \
                                           arg, os, ocs, oys, oxs, dx, pw, pb)
#endif

/* The weight gradient of a first layer without a pool (Cin = 1, K = 5, no input gradient, inputs
 * at most 32 wide and 64 high, at most 16 channels: NOPOOL_FIRST_FITS), dense and branch-free,
 * vectorised over output columns: the per-output loop of backward_task mispredicts its ReLU
 * branch here, where about half the outputs pass. Per example, the gradient that passed the ReLU
 * is laid out as planes G[c][y][x] (zero where the ReLU stopped it and past the row), the input
 * as rows X[r] zero-padded for the shifted loads; then for each channel c and kernel row ky the
 * five sums over kx stay in registers while the rows run:
 * A[c][ky][kx] += G[c][y][x..] * X[y + ky][x + kx..]. */
#define NOPOOL_FIRST_FITS (W <= 32 && H <= 64 && Cout <= 16) /* scratch: under 160 KB of stack */
static void backward_first_layer_nopool(int m, int b0, int b1, int B, int H, int W, int Cout,
                                        const float *restrict x, long xs, const float *restrict g,
                                        const float *restrict out, long os, long ocs, long oys,
                                        long oxs, float *restrict pw, float *restrict pb)
{
    enum { K = 5 };
    const int Ho = H - K + 1, Wo = W - K + 1;
    const int WG = (Wo + FL - 1) / FL * FL, WX = WG + FL;
    float X[H][WX] __attribute__((aligned(64)));
    float G[Cout][Ho][WG] __attribute__((aligned(64)));
    fvec A[Cout][K][K], Ab[Cout]; /* the sums of the weights' and the biases' gradients */
    memset(A, 0, sizeof A);
    memset(Ab, 0, sizeof Ab);
    memset(X, 0, sizeof X);
    memset(G, 0, sizeof G);
    for (int b = b0; b < b1; b++) {
        const long it = (long)m * B + b;
        for (int r = 0; r < H; r++)
            memcpy(X[r], x + it * xs + (long)r * W, sizeof(float) * W);
        for (int c = 0; c < Cout; c++)
            for (int y = 0; y < Ho; y++)
                for (int q = 0; q < Wo; q++) {
                    /* g where the output passed the ReLU (NaN passes, as in torch), else 0: by a
                     * mask, since a branch here is mispredicted half the time */
                    const long o = it * os + c * ocs + y * oys + q * oxs;
                    uint32_t v;
                    memcpy(&v, g + o, sizeof v);
                    v &= -(uint32_t)!(out[o] <= 0);
                    memcpy(&G[c][y][q], &v, sizeof v);
                }
        for (int c = 0; c < Cout; c++) {
            for (int ky = 0; ky < K; ky++) {
                fvec a[K];
                _Pragma("GCC unroll 5")
                for (int kx = 0; kx < K; kx++)
                    a[kx] = A[c][ky][kx];
                fvec ab = Ab[c];
                for (int y = 0; y < Ho; y++) {
                    const float *xr = X[y + ky], *gr = G[c][y];
                    for (int q = 0; q < WG; q += FL) {
                        const fvec gv = *(const fvec *)(gr + q);
                        _Pragma("GCC unroll 5")
                        for (int kx = 0; kx < K; kx++)
                            a[kx] += gv * *(const fvec *)(xr + q + kx);
                        if (ky == 0)
                            ab += gv;
                    }
                }
                Ab[c] = ab;
                _Pragma("GCC unroll 5")
                for (int kx = 0; kx < K; kx++)
                    A[c][ky][kx] = a[kx];
            }
        }
    }
    for (int c = 0; c < Cout; c++) {
        for (int j = 0; j < K * K; j++) {
            float sum = 0;
            for (int l = 0; l < FL; l++)
                sum += A[c][j / K][j % K][l];
            pw[(long)c * K * K + j] += sum;
        }
        float sum = 0;
        for (int l = 0; l < FL; l++)
            sum += Ab[c][l];
        pb[c] += sum;
    }
}

/* g, out, arg: as out in the forward (g the gradient of the pooled, ReLU'd output); P as there.
 * wb: (M, Cout, K, K, Cin). dw: (M, Cout, K, K, Cin), db: (M, Cout), both overwritten.
 * dx (may be NULL): (M * B) items of (H, W, Cin), contiguous, overwritten.
 * part: scratch of M * ceil(B / CHUNK) * Cout * (K * K * Cin + 1) floats. */
void convpool_backward(int M, int B, int H, int W, int Cin, int Cout, int K, int P,
                       const float *restrict x, long xs, const float *restrict wb,
                       const float *restrict g, const float *restrict out,
                       const uint8_t *restrict arg, long os, long ocs, long oys, long oxs,
                       float *restrict dw, float *restrict db, float *restrict dx,
                       float *restrict part, int nthreads)
{
    const long NW = (long)Cout * K * K * Cin; /* weights per model */
    const int nch = (B + CHUNK - 1) / CHUNK;
    const long tasks = (long)M * nch;
#pragma omp parallel for num_threads(nthreads) schedule(static)
    for (long tk = 0; tk < tasks; tk++) {
        const int m = (int)(tk / nch), ch = (int)(tk % nch);
        float *pw = part + tk * (NW + Cout), *pb = pw + NW;
        memset(pw, 0, sizeof(float) * (NW + Cout));
        const float *wm = wb + m * NW;
        const int b0 = ch * CHUNK, b1 = (ch + 1) * CHUNK < B ? (ch + 1) * CHUNK : B;
        if (P == 2 && K == 5 && Cin == 1 && !dx && FIRST_LAYER_FITS)
            FIRST_LAYER_TASK;
        else if (P == 2 && K == 5 && Cin == 6)
            FAST_TASK(2, 5, 6); /* LeNet's second layer, with constant sizes */
        else if (P == 2 && K == 5 && Cin == 1)
            FAST_TASK(2, 5, 1);
        else if (P == 1 && K == 5 && Cin == 6)
            FAST_TASK(1, 5, 6); /* the same without pooling */
        else if (P == 1 && K == 5 && Cin == 1 && !dx && NOPOOL_FIRST_FITS)
            backward_first_layer_nopool(m, b0, b1, B, H, W, Cout, x, xs, g, out, os, ocs, oys, oxs,
                                        pw, pb);
        else if (P == 1 && K == 5 && Cin == 1)
            FAST_TASK(1, 5, 1);
        else if (P == 2)
            backward_task(2, K, Cin, m, b0, b1, B, H, W, Cout, x, xs, wm, g, out, arg, os, ocs,
                          oys, oxs, dx, pw, pb);
        else
            backward_task(1, K, Cin, m, b0, b1, B, H, W, Cout, x, xs, wm, g, out, arg, os, ocs,
                          oys, oxs, dx, pw, pb);
    }
    /* add the chunks of each model in order */
#pragma omp parallel for num_threads(nthreads) schedule(static)
    for (int m = 0; m < M; m++) {
        float *dwm = dw + m * NW, *dbm = db + (long)m * Cout;
        memset(dwm, 0, sizeof(float) * NW);
        memset(dbm, 0, sizeof(float) * Cout);
        for (int ch = 0; ch < nch; ch++) {
            const float *pw = part + ((long)m * nch + ch) * (NW + Cout);
            for (long j = 0; j < NW; j++)
                dwm[j] += pw[j];
            for (int c = 0; c < Cout; c++)
                dbm[c] += pw[NW + c];
        }
    }
}

/* ---- LeNet's exact input gradients (nadcore.kernels.native.lenet_input_gradients) ----
 * M LeNets at one shared input x (S, S, C), channels-last: conv (6, 5x5) -> pool -> ReLU ->
 * conv (16, 5x5) -> pool -> ReLU -> flatten (channel-major) -> fc1 -> ReLU -> fc2 -> ReLU -> fc3,
 * and the gradient of fc3's first output with respect to x. One network per thread, all of it
 * in that thread's cache: its parameters are read right after the draw wrote them, and the
 * backward pass visits only what passed the pools and ReLUs. */
enum { L_K = 5, L_C1 = 6, L_C2 = 16 };

static float dotf(const float *restrict a, const float *restrict b, int n)
{
    vec s0 = {0}, s1 = {0};
    int i = 0;
    for (; i + 2 * VW <= n; i += 2 * VW) {
        s0 += *(const vec *)(a + i) * *(const vec *)(b + i);
        s1 += *(const vec *)(a + i + VW) * *(const vec *)(b + i + VW);
    }
    for (; i + VW <= n; i += VW)
        s0 += *(const vec *)(a + i) * *(const vec *)(b + i);
    s0 += s1;
    float r = 0;
    for (int k = 0; k < VW; k++)
        r += s0[k];
    for (; i < n; i++)
        r += a[i] * b[i];
    return r;
}

static inline __attribute__((always_inline)) void axpyf(float *restrict y, float a, const float *restrict x, int n)
{
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

/* The weights of one convolution, w (Cout, Cin, K, K), in the layouts the forward (wt: K, K,
 * Cin, VW-padded Cout) and the backward (wb: Cout, K, K, Cin) read; padded bias bp. */
static void conv_layouts(int Cout, int Cin, const float *restrict w, const float *restrict b,
                         float *restrict wt, float *restrict wb, float *restrict bp)
{
    const int CP = (Cout + VW - 1) / VW * VW;
    memset(wt, 0, sizeof(float) * L_K * L_K * Cin * CP);
    memset(bp, 0, sizeof(float) * CP);
    memcpy(bp, b, sizeof(float) * Cout);
    for (int co = 0; co < Cout; co++)
        for (int ci = 0; ci < Cin; ci++)
            for (int k = 0; k < L_K * L_K; k++) {
                const float v = w[(co * Cin + ci) * L_K * L_K + k];
                wt[(k * Cin + ci) * CP + co] = v;
                wb[(co * L_K * L_K + k) * Cin + ci] = v;
            }
}

/* dx (.., W, Cin) += the input gradient of a conv -> pool -> ReLU stage (K = L_K) whose pooled
 * ReLU'd output out, winners arg and incoming gradient g share the indexing
 * c * ocs + p * oys + q * oxs (Cout x Hp x Wp); wb (Cout, K, K, Cin). */
static void stage_input_gradient(int W, int Cin, int Cout, int Hp, int Wp, const float *restrict g,
                                 const float *restrict out, const uint8_t *restrict arg, long ocs,
                                 long oys, long oxs, const float *restrict wb, float *restrict dx)
{
    const int L = L_K * Cin;
    const long rs = (long)W * Cin;
    for (int c = 0; c < Cout; c++)
        for (int p = 0; p < Hp; p++)
            for (int q = 0; q < Wp; q++) {
                const long o = c * ocs + p * oys + q * oxs;
                if (!(out[o] > 0)) /* the ReLU stopped it (as torch: NaN stops too) */
                    continue;
                const int y = 2 * p + (arg[o] >> 1), xx = 2 * q + (arg[o] & 1);
                float *d = dx + y * rs + (long)xx * Cin;
                const float *wc = wb + (long)c * L_K * L;
                for (int ky = 0; ky < L_K; ky++)
                    axpyf(d + ky * rs, g[o], wc + ky * L, L);
            }
}

/* stage_input_gradient for LeNet's first layer with one input channel, into dxp (S rows of S + 8):
 * branch-free (a unit the ReLU stopped adds zeros), each kernel row one 8-wide vector (the
 * weights zero-padded), and the pooled columns in the order 0, 3, 6, .., 1, 4, .., so that
 * consecutive windows never overlap (their stores would stall the next loads). */
static void first_layer_input_gradient(int S, int h, const float *restrict g, const float *restrict out,
                                       const uint8_t *restrict arg, const float *restrict w,
                                       float *restrict dxp)
{
    const int rs = S + 8;
    vec8 wr[L_C1][L_K];
    int order[h], n = 0;
    for (int c = 0; c < L_C1; c++)
        for (int ky = 0; ky < L_K; ky++)
            for (int k = 0; k < 8; k++)
                wr[c][ky][k] = k < L_K ? w[(c * L_K + ky) * L_K + k] : 0.0f;
    for (int start = 0; start < 3; start++)
        for (int q = start; q < h; q += 3)
            order[n++] = q;
    for (int c = 0; c < L_C1; c++)
        for (int p = 0; p < h; p++)
            for (int j = 0; j < h; j++) {
                const int q = order[j];
                const long o = ((long)p * h + q) * L_C1 + c;
                const float gv = out[o] > 0 ? g[o] : 0.0f;
                float *d = dxp + (2 * p + (arg[o] >> 1)) * rs + 2 * q + (arg[o] & 1);
                _Pragma("GCC unroll 8")
                for (int ky = 0; ky < L_K; ky++)
                    *(vec8 *)(d + ky * rs) += gv * wr[c][ky];
            }
}

/* p[0..8]: conv1.weight (6, C, 5, 5), conv1.bias, conv2.weight (16, 6, 5, 5), conv2.bias,
 * fc1.weight (F1, 16 s s), fc1.bias, fc2.weight (F2, F1), fc2.bias, fc3.weight (., F2); network
 * m's at p[k] + m * ps[k], each contiguous. grad: (M, C * S * S) float64 in the (C, S, S) order,
 * overwritten. Each network is computed by one thread alone: results do not depend on nthreads. */
void lenet_input_gradients(int M, int C, int S, int F1, int F2, const float *restrict x,
                           const float *const *p, const long *ps, double *restrict grad, int nthreads)
{
    const int h = (S - L_K + 1) / 2, s = (h - L_K + 1) / 2, F0 = L_C2 * s * s;
#pragma omp parallel for num_threads(nthreads) schedule(static)
    for (int m = 0; m < M; m++) {
        const float *w1 = p[0] + m * ps[0], *b1 = p[1] + m * ps[1], *w2 = p[2] + m * ps[2],
                    *b2 = p[3] + m * ps[3], *f1w = p[4] + m * ps[4], *f1b = p[5] + m * ps[5],
                    *f2w = p[6] + m * ps[6], *f2b = p[7] + m * ps[7], *f3w = p[8] + m * ps[8];
        float wt1[L_K * L_K * C * VW], wb1[L_C1 * L_K * L_K * C], bp1[VW];
        float wt2[L_K * L_K * L_C1 * VW], wb2[L_C2 * L_K * L_K * L_C1], bp2[VW];
        float P1[h * h * L_C1], dP1[h * h * L_C1], P2[F0], gf[F0], h1[F1], g1[F1], h2[F2];
        float dx[C == 1 ? S * (S + 8) : S * S * C];
        uint8_t a1[h * h * L_C1], a2[F0];
        conv_layouts(L_C1, C, w1, b1, wt1, wb1, bp1);
        conv_layouts(L_C2, L_C1, w2, b2, wt2, wb2, bp2);
        /* forward: P1 (h, h, 6) channels-last, P2 (16, s, s) in fc1's order */
        forward_any(2, S, S, C, L_C1, L_K, x, wt1, w1, bp1, P1, a1, 1, (long)h * L_C1, L_C1);
        forward_any(2, h, h, L_C1, L_C2, L_K, P1, wt2, w2, bp2, P2, a2, (long)s * s, s, 1);
        for (int i = 0; i < F1; i++) {
            const float v = f1b[i] + dotf(f1w + (long)i * F0, P2, F0);
            h1[i] = v > 0 ? v : 0;
        }
        for (int j = 0; j < F2; j++) {
            const float v = f2b[j] + dotf(f2w + (long)j * F1, h1, F1);
            h2[j] = v > 0 ? v : 0;
        }
        /* backward from fc3's first output, through the units the ReLUs passed */
        memset(g1, 0, sizeof g1);
        for (int j = 0; j < F2; j++)
            if (h2[j] > 0)
                axpyf(g1, f3w[j], f2w + (long)j * F1, F1);
        memset(gf, 0, sizeof gf);
        for (int i = 0; i < F1; i++)
            if (h1[i] > 0)
                axpyf(gf, g1[i], f1w + (long)i * F0, F0);
        memset(dP1, 0, sizeof dP1);
        stage_input_gradient(h, L_C1, L_C2, s, s, gf, P2, a2, (long)s * s, s, 1, wb2, dP1);
        memset(dx, 0, sizeof dx);
        double *gm = grad + (long)m * C * S * S;
        if (C == 1) {
            first_layer_input_gradient(S, h, dP1, P1, a1, w1, dx);
            for (int r = 0; r < S; r++)
                for (int col = 0; col < S; col++)
                    gm[r * S + col] = dx[r * (S + 8) + col];
        } else {
            stage_input_gradient(S, C, L_C1, h, h, dP1, P1, a1, 1, (long)h * L_C1, L_C1, wb1, dx);
            for (int r = 0; r < S * S; r++)
                for (int ci = 0; ci < C; ci++)
                    gm[(long)ci * S * S + r] = dx[(long)r * C + ci];
        }
    }
}
