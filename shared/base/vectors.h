/* Eight-float vectors that GCC and clang lower to the target's registers
 * (two SSE or WebAssembly SIMD128 registers, one AVX register), the
 * attribute that compiles a function of them for the widest vectors the
 * CPU runs, and the exponential the layers take in them: the same bits on
 * every target, since each step is one rounded IEEE operation (never fused
 * into a multiply-add: GCC in ISO C mode does not fuse, and clang is told
 * not to). */
#ifndef SDFED_BASE_VECTORS_H
#define SDFED_BASE_VECTORS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef float f32x8 __attribute__((vector_size(32)));
typedef int32_t i32x8 __attribute__((vector_size(32)));

/* On x86-64 such a function is compiled for AVX-512, AVX2 and the SSE2
 * baseline, the widest the CPU runs chosen when the program loads (the same
 * bits: the same operations lane by lane). */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define SDFED_WIDEST_VECTORS __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef SDFED_WIDEST_VECTORS
#define SDFED_WIDEST_VECTORS
#endif

/* the lanes of f32x8 `v` whose i32x8 `mask` lane is all ones replaced by
 * `by`'s (a macro: a vector argument's or result's ABI depends on the
 * target's registers, so the helpers here take pointers) */
#define SDFED_SELECT_F32X8(mask, by, v) ((f32x8)(((i32x8)(v) & ~(mask)) | ((i32x8)(by) & (mask))))

/* *v = e^*v lane by lane, within one unit in the last place of the exact
 * value for -87 <= x <= 88 (glibc's and musl's expf are within half of
 * one): x = n ln 2 + r with n an integer and |r| <= ln(2) / 2 (ln 2 in two
 * parts, the first with few enough bits that n times it is exact), e^r by
 * Cephes's degree-7 polynomial, times 2^n built in the exponent's bits.
 * Below -87 it gives 0 (expf: 1.6e-38 down to the subnormals), above 88
 * infinity (expf: up to 3.4e38 by 88.72), NaN for NaN. */
static inline void sdfed_exp_f32x8(f32x8 *v) {
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
    const f32x8 zero = {0};
    const float magic = 12582912.0f; /* 1.5 2^23: adding it rounds to an integer, in the low bits */
    f32x8 x = *v;
    i32x8 below = x<-87.0f, above = x> 88.0f;
    f32x8 xc = SDFED_SELECT_F32X8(above, zero + 88.0f, SDFED_SELECT_F32X8(below, zero - 87.0f, x));
    f32x8 t = xc * 1.44269504088896341f + magic;
    f32x8 n = t - magic;
    i32x8 n_int = (i32x8)t - (i32x8)(zero + magic);
    f32x8 r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
    f32x8 p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    f32x8 y = p * (f32x8)((n_int + 127) << 23);
    *v = SDFED_SELECT_F32X8(above, zero + INFINITY, SDFED_SELECT_F32X8(below, zero, y));
}

/* *v = the first `count` (<= 8) floats of p, the other lanes `fill`; and
 * back (a whole vector in one move, a part through memory) */
static inline void sdfed_load_f32x8(f32x8 *v, const float *p, int count, float fill) {
    if (count == 8) {
        memcpy(v, p, sizeof *v);
        return;
    }
    *v = (f32x8){0} + fill;
    memcpy(v, p, sizeof(float) * (size_t)count);
}
static inline void sdfed_store_f32x8(float *p, const f32x8 *v, int count) {
    memcpy(p, v, count == 8 ? sizeof *v : sizeof(float) * (size_t)count);
}

/* The statements after `count` for each eight floats of a row of n, `j`
 * their first and `count` how many: the whole vectors in a loop of their
 * own, where count is the constant 8 (so that the vectors stay in
 * registers: a part goes through memory), then the last part once. */
#define SDFED_EACH_F32X8(n, j, count, ...) \
    do { \
        int j = 0, count = 8; \
        for (; j + 8 <= (n); j += 8) { __VA_ARGS__; } \
        if ((count = (n) - j) > 0) { __VA_ARGS__; } \
    } while (0)

/* the lanes of *v summed in order, lane 0 first */
static inline float sdfed_sum_f32x8(const f32x8 *v) {
    float sum = 0.0f;
    for (int l = 0; l < 8; l++) sum += (*v)[l];
    return sum;
}

#endif
