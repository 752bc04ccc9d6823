/* QuickGELU and the softmax in sixteen-float vectors on AVX-512 (see
 * layers_wide.h): the exponential's steps of base/vectors.h, and the sums
 * of a row's exponentials in layers.c's eight lanes, in its order. */
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

/* *v = the first `count` (<= 16) floats of p, the other lanes `fill`; and
 * back (base/vectors.h's eight-lane ones, in sixteen) */
WIDE static inline void load_f32x16(f32x16 *v, const float *p, int count, float fill) {
    if (count == 16) {
        memcpy(v, p, sizeof *v);
        return;
    }
    *v = (f32x16){0} + fill;
    memcpy(v, p, sizeof(float) * (size_t)count);
}
WIDE static inline void store_f32x16(float *p, const f32x16 *v, int count) {
    memcpy(p, v, count == 16 ? sizeof *v : sizeof(float) * (size_t)count);
}

WIDE void sdfed_quick_gelu_wide(float *out, const float *inp, int n) {
    SDFED_EACH_LANES(16, n, i, count, {
        f32x16 x, e;
        load_f32x16(&x, inp + i, count, 0.0f);
        e = x * -1.702f;
        exp_f32x16(&e);
        x = x / (1.0f + e);
        store_f32x16(out + i, &x, count);
    });
}

WIDE void sdfed_softmax_row_wide(float *row, int visible) {
    f32x16 maxes = (f32x16){0} - INFINITY;
    SDFED_EACH_LANES(16, visible, j, count, {
        f32x16 v;
        load_f32x16(&v, row + j, count, -INFINITY);
        maxes = SDFED_SELECT(f32x16, i32x16, v > maxes, v, maxes);
    });
    /* the largest in any order: the value eight lanes find (but for a zero's
     * sign, which changes no x - max but a zero's sign, and e^0 = e^-0) */
    float max = -INFINITY;
    for (int l = 0; l < 16; l++) max = maxes[l] > max ? maxes[l] : max;
    /* e^(x - max), each vector's halves added to the eight sums in turn:
     * layers.c's order (past the row, e^-inf = +0 leaves a sum's bits) */
    sdfed_f32x8 sums = {0};
    SDFED_EACH_LANES(16, visible, j, count, {
        f32x16 v;
        load_f32x16(&v, row + j, count, -INFINITY);
        v = v - max;
        exp_f32x16(&v);
        sdfed_f32x8 half;
        memcpy(&half, &v, sizeof half);
        sums += half;
        memcpy(&half, (const char *)&v + sizeof half, sizeof half);
        sums += half;
        store_f32x16(row + j, &v, count);
    });
    float inv = 1.0f / sdfed_sum_f32x8(&sums);
    SDFED_EACH_LANES(16, visible, j, count, {
        f32x16 v;
        load_f32x16(&v, row + j, count, 0.0f);
        v = v * inv;
        store_f32x16(row + j, &v, count);
    });
}
#endif
