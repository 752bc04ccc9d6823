/* Eight-float vectors that GCC and clang lower to the target's registers
 * (two SSE or WebAssembly SIMD128 registers, one AVX register; a function
 * of them compiled for the widest the CPU runs is kernels/dispatch.h's
 * SDFED_WIDEST_VECTORS), and the exponential the layers take in them: the same bits on
 * every target, since each step is one rounded IEEE operation (never fused
 * into a multiply-add: GCC in ISO C mode does not fuse, and clang is told
 * not to). */
#ifndef SDFED_BASE_VECTORS_H
#define SDFED_BASE_VECTORS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef float sdfed_f32x8 __attribute__((vector_size(32)));
typedef int32_t sdfed_i32x8 __attribute__((vector_size(32)));
typedef uint32_t sdfed_u32x8 __attribute__((vector_size(32))); /* bits whose arithmetic wraps */

/* the lanes of float vector `v` (type F, I its int32 lanes) whose `mask`
 * lane is all ones replaced by `by`'s (a macro: a vector argument's or
 * result's ABI depends on the target's registers, so the helpers here take
 * pointers); SDFED_SELECT_F32X8 in eight lanes */
#define SDFED_SELECT(F, I, mask, by, v) ((F)(((I)(v) & ~(mask)) | ((I)(by) & (mask))))
#define SDFED_SELECT_F32X8(mask, by, v) SDFED_SELECT(sdfed_f32x8, sdfed_i32x8, mask, by, v)

/* *p = the polynomial with the n coefficients c (highest degree first) at
 * *v, by Horner's steps p = p v + c[i], each multiply and add rounded
 * (never fused) */
static inline void sdfed_poly_f32x8(sdfed_f32x8 *p, const sdfed_f32x8 *v, const float *c, int n) {
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
    sdfed_f32x8 acc = (sdfed_f32x8){0} + c[0];
#pragma GCC unroll 16
    for (int i = 1; i < n; i++) acc = acc * *v + c[i];
    *p = acc;
}

/* *v = e^*v lane by lane, within one unit in the last place of the exact
 * value for -87 <= x <= 88 (glibc's and musl's expf are within half of
 * one): x = n ln 2 + r with n an integer and |r| <= ln(2) / 2 (ln 2 in two
 * parts, the first with few enough bits that n times it is exact), e^r by
 * Cephes's degree-7 polynomial, times 2^n built in the exponent's bits.
 * Below -87 it gives 0 (expf: 1.6e-38 down to the subnormals), above 88
 * infinity (expf: up to 3.4e38 by 88.72), NaN for NaN: the lanes out of
 * range are replaced at the end, their arithmetic thrown away. The
 * polynomial is evaluated in three pairs of terms side by side (Estrin's
 * scheme), not in Horner's five dependent steps: a vector's steps depend
 * on each other, so a shorter chain lets more vectors run at once (ViT-B's
 * softmax and QuickGELU are bound by it).
 * The steps are written once for vectors of any width, F of floats, I of
 * int32 and U of uint32 with as many lanes (clip/layers_wide.c takes them
 * in sixteen lanes), in a function that clang is told not to fuse in. */
#define SDFED_EXP_STEPS(F, I, U, v)                                                                                    \
    do {                                                                                                               \
        const F zero = {0};                                                                                            \
        const float magic = 12582912.0f; /* 1.5 2^23: adding it rounds to an integer, in the low bits */               \
        F x = *(v);                                                                                                    \
        I below = x<-87.0f, above = x> 88.0f;                                                                          \
        F t = x * 1.44269504088896341f + magic;                                                                        \
        F n = t - magic;                                                                                               \
        U n_int = (U)t - (U)(zero + magic); /* out of range: any bits, replaced */                                     \
        F r = (x - n * 0.693359375f) - n * -2.12194440e-4f;                                                            \
        F r2 = r * r;                                                                                                  \
        F p =                                                                                                          \
            ((r * 1.9875691500e-4f + 1.3981999507e-3f) * (r2 * r2) + (r * 8.3334519073e-3f + 4.1665795894e-2f) * r2) + \
            (r * 1.6666665459e-1f + 5.0000001201e-1f);                                                                 \
        p = p * r2 + r + 1.0f;                                                                                         \
        F y = p * (F)((n_int + 127) << 23);                                                                            \
        *(v) = SDFED_SELECT(F, I, above, zero + INFINITY, SDFED_SELECT(F, I, below, zero, y));                         \
    } while (0)

static inline void sdfed_exp_f32x8(sdfed_f32x8 *v) {
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
    SDFED_EXP_STEPS(sdfed_f32x8, sdfed_i32x8, sdfed_u32x8, v);
}

/* *v = erf(*v) lane by lane, within one unit in the last place of the
 * exact value (0.79 at worst in tests/unit/test_vectors.c's sweep; glibc's
 * and musl's erff are within 0.79 but differ from each other on 3% of [0.5,
 * 2]), the same bits on every target as sdfed_exp_f32x8: |x| < 0.75 as
 * x + x q(x^2); below 1.25 as erf(1) + p(|x| - 1); above as 1 - e^-x^2
 * g(1 / |x|), with x^2 in two parts so that e^-x^2 keeps its precision
 * (the square of |x| cut to 12 bits, exact, and the rest, whose
 * exponential is four terms of its series) and g approximating erfc(x)
 * e^(x^2); from 4 on 1 (erf is 1 in float from 3.92);
 * the sign put back, NaN for NaN. The polynomials are near minimax on
 * their intervals, fitted (and this evaluation checked operation by
 * operation) by tools/fit_erf.py. */
static inline void sdfed_erf_f32x8(sdfed_f32x8 *v) {
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
    const sdfed_f32x8 zero = {0};
    const sdfed_i32x8 sign = (sdfed_i32x8){0} + INT32_MIN;
    sdfed_f32x8 x = *v;
    sdfed_f32x8 a = (sdfed_f32x8)((sdfed_i32x8)x & ~sign);

    static const float q_of_s[] = {9.49349924e-05f, -0.000836027146f, 0.0052169594f, -0.0268648062f,
                                   0.112837784f,    -0.376126379f,    0.128379166f};
    sdfed_f32x8 s = a * a;
    sdfed_f32x8 q;
    sdfed_poly_f32x8(&q, &s, q_of_s, 7);
    sdfed_f32x8 small = a + a * q;

    static const float p_of_m[] = {-0.00453552511f, 0.0148951402f, 0.00459546596f, -0.0691725984f, 0.0691850707f,
                                   0.138368964f,    -0.415107489f, 0.415107489f,   1.35210998e-08f};
    sdfed_f32x8 m = a - 1.0f;
    sdfed_f32x8 p;
    sdfed_poly_f32x8(&p, &m, p_of_m, 9);
    sdfed_f32x8 middle = 0.842700779f + p;

    sdfed_f32x8 ac = SDFED_SELECT_F32X8(a > 4.0f, zero + 4.0f, a);
    sdfed_f32x8 ah = (sdfed_f32x8)((sdfed_i32x8)ac & -4096); /* 12 bits: ah * ah is exact */
    sdfed_f32x8 e = -(ah * ah);
    sdfed_exp_f32x8(&e);
    sdfed_f32x8 nd = -((ac - ah) * (ac + ah)); /* -(x^2 - ah^2), at most 2^-6 */
    sdfed_f32x8 e_rest = 1.0f + nd * (1.0f + nd * 0.5f * (1.0f + nd * 0.333333343f));
    static const float g_of_t[] = {0.0763882101f, -0.0362668671f, -0.0221792888f, 0.0600333922f, -0.0759273916f,
                                   0.051797431f,  0.0301025975f,  -0.183032826f,  0.415664792f,  0.26856482f};
    sdfed_f32x8 t = 1.0f / ac - 0.53125f;
    sdfed_f32x8 g;
    sdfed_poly_f32x8(&g, &t, g_of_t, 10);
    sdfed_f32x8 tail = 1.0f - e * e_rest * g;

    sdfed_f32x8 y = SDFED_SELECT_F32X8(a < 0.75f, small, SDFED_SELECT_F32X8(a < 1.25f, middle, tail));
    *v = (sdfed_f32x8)((sdfed_i32x8)y | ((sdfed_i32x8)x & sign));
}

/* *v = the first `count` (<= 8) floats of p, the other lanes `fill`; and
 * back (a whole vector in one move, a part through memory) */
static inline void sdfed_load_f32x8(sdfed_f32x8 *v, const float *p, int count, float fill) {
    if (count == 8) {
        memcpy(v, p, sizeof *v);
        return;
    }
    *v = (sdfed_f32x8){0} + fill;
    memcpy(v, p, sizeof(float) * (size_t)count);
}
static inline void sdfed_store_f32x8(float *p, const sdfed_f32x8 *v, int count) {
    memcpy(p, v, count == 8 ? sizeof *v : sizeof(float) * (size_t)count);
}

/* The statements after `count` for each `lanes` floats of a row of n, `j`
 * their first and `count` how many: the whole vectors in a loop of their
 * own, where count is the constant `lanes` (so that the vectors stay in
 * registers: a part goes through memory), then the last part once. */
#define SDFED_EACH_LANES(lanes, n, j, count, ...)                                                                      \
    do {                                                                                                               \
        int j = 0, count = (lanes);                                                                                    \
        for (; j + (lanes) <= (n); j += (lanes)) {                                                                     \
            __VA_ARGS__;                                                                                               \
        }                                                                                                              \
        if ((count = (n)-j) > 0) {                                                                                     \
            __VA_ARGS__;                                                                                               \
        }                                                                                                              \
    } while (0)
#define SDFED_EACH_F32X8(n, j, count, ...) SDFED_EACH_LANES(8, n, j, count, __VA_ARGS__)

/* the lanes of *v summed in order, lane 0 first */
static inline float sdfed_sum_f32x8(const sdfed_f32x8 *v) {
    float sum = 0.0f;
    for (int l = 0; l < 8; l++) sum += (*v)[l];
    return sum;
}

#endif
