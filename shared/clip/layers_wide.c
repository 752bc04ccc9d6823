/* QuickGELU and the softmax in sixteen-float vectors on AVX-512 (see
 * layers_wide.h): the exponential's steps of base/vectors.h, and the sums
 * of a row's exponentials in layers.c's eight lanes, in its order. */
#include "clip/layers_wide.h"

#if defined(SDFED_LAYERS_WIDE)
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

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

/* the first `count` (<= 16) lanes of a vector */
WIDE static inline __mmask16 first_lanes(int count) { return (__mmask16)((1u << count) - 1u); }

/* *v = the first `count` floats of p, the other lanes `fill`; and back
 * (base/vectors.h's eight-lane ones, in sixteen): masked loads and stores,
 * which a row's last part takes without a copy through memory (the
 * softmax's rows of 197 spent more on their last parts than on the rest) */
WIDE static inline void load_f32x16(f32x16 *v, const float *p, int count, float fill) {
    *v = (f32x16)_mm512_mask_loadu_ps(_mm512_set1_ps(fill), first_lanes(count), p);
}
WIDE static inline void store_f32x16(float *p, const f32x16 *v, int count) {
    _mm512_mask_storeu_ps(p, first_lanes(count), (__m512)*v);
}

/* a vector's lanes 0-7 and 8-15 */
WIDE static inline sdfed_f32x8 low_half(f32x16 v) { return (sdfed_f32x8)_mm512_castps512_ps256((__m512)v); }
WIDE static inline sdfed_f32x8 high_half(f32x16 v) {
    return (sdfed_f32x8)_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd((__m512)v), 1));
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
    float max = _mm512_reduce_max_ps((__m512)maxes);
    /* e^(x - max), each vector's halves added to the eight sums in turn:
     * layers.c's order (past the row, e^-inf = +0 leaves a sum's bits) */
    sdfed_f32x8 sums = {0};
    SDFED_EACH_LANES(16, visible, j, count, {
        f32x16 v;
        load_f32x16(&v, row + j, count, -INFINITY);
        v = v - max;
        exp_f32x16(&v);
        sums += low_half(v);
        sums += high_half(v);
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
