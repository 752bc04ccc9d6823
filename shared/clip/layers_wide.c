/* QuickGELU and the softmax's exponentials in sixteen-float vectors on
 * AVX-512 (see layers_wide.h): the exponential's steps of base/vectors.h,
 * and the sums of a row's exponentials in layers.c's eight lanes, in its
 * order. */
#include "clip/layers_wide.h"

#if defined(SDFED_LAYERS_WIDE)
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/vectors.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

typedef float f32x16 __attribute__((vector_size(64)));
typedef int32_t i32x16 __attribute__((vector_size(64)));
typedef uint32_t u32x16 __attribute__((vector_size(64)));

#define WIDE __attribute__((target("avx512f")))

int sdfed_layers_wide(void) { return sdfed_isa_best_fma() >= SDFED_ISA_AVX512; }

WIDE static inline void exp_f32x16(f32x16 *v) { SDFED_EXP_STEPS(f32x16, i32x16, u32x16, v); }

/* *v = the first `count` (<= 16) floats of p, the other lanes `fill` */
WIDE static inline void load_f32x16(f32x16 *v, const float *p, int count, float fill) {
    *v = (f32x16){0} + fill;
    memcpy(v, p, sizeof(float) * (size_t)count);
}

WIDE static inline void quick_gelu_f32x16(f32x16 *v) {
    f32x16 x = *v, e = x * -1.702f;
    exp_f32x16(&e);
    *v = x / (1.0f + e);
}

WIDE void sdfed_quick_gelu_wide(float *out, const float *inp, int n) {
    f32x16 v;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        memcpy(&v, inp + i, sizeof v);
        quick_gelu_f32x16(&v);
        memcpy(out + i, &v, sizeof v);
    }
    if (i == n) return;
    load_f32x16(&v, inp + i, n - i, 0.0f);
    quick_gelu_f32x16(&v);
    memcpy(out + i, &v, sizeof(float) * (size_t)(n - i));
}

/* e^(v - max) into v, and its two halves added to the eight sums in turn:
 * layers.c's order, eight floats at a time (the lanes past a row are -inf:
 * their e^-inf = +0 leaves a sum's bits as they are) */
WIDE static inline void exps_f32x16(f32x16 *v, float max, sdfed_f32x8 *sums) {
    *v = *v - max;
    exp_f32x16(v);
    sdfed_f32x8 half;
    memcpy(&half, v, sizeof half);
    *sums += half;
    memcpy(&half, (const char *)v + sizeof half, sizeof half);
    *sums += half;
}

WIDE float sdfed_softmax_exps_wide(float *row, int visible, float max) {
    sdfed_f32x8 sums = {0};
    f32x16 v;
    int j = 0;
    for (; j + 16 <= visible; j += 16) {
        memcpy(&v, row + j, sizeof v);
        exps_f32x16(&v, max, &sums);
        memcpy(row + j, &v, sizeof v);
    }
    if (j < visible) {
        load_f32x16(&v, row + j, visible - j, -INFINITY);
        exps_f32x16(&v, max, &sums);
        memcpy(row + j, &v, sizeof(float) * (size_t)(visible - j));
    }
    return sdfed_sum_f32x8(&sums);
}
#endif
