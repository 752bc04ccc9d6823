/* The browser's relaxed-SIMD register tiles: linear_int8's (kernels.h), one
 * packed panel of 8 Q8_0 weight rows times a chunk of quantised tokens with
 * i32x4.relaxed_dot_i8x16_i7x16_add_s, and linear's, one packed panel of 8
 * f32 weight rows times the tokens with f32x4.relaxed_madd. Emscripten's
 * toolchain here cannot emit those instructions, so this file is built on
 * its own by clang-16 and wasm-ld-16 into a small module that imports the
 * client module's memory (kernels_simd128.c packs, calls it through
 * relaxed_simd.js, which instantiates it once per thread). No libc, no
 * data, no stack: functions of plain locals (shared/CMakeLists.txt checks
 * the module uses no global).
 *
 * The relaxed dot is exact and the same on every engine only when its
 * second operand's lanes are in 0..127 (then no engine's pairs of products
 * saturate: at most 2 * 128 * 127). The activations' quants are in
 * -127..127 (d = max|x| / 127), so x = x+ - x- with both in 0..127 are the
 * second operands and any int8 weight the first: with -w = ~w + 1,
 *   x.w = x+.w - x-.w = x+.w + x-.~w + sum(x-),
 * the sums of a block started at sum(x-). Every int32 sum is the exact one,
 * and the f32 steps after it are the definition's.
 *
 * Where the engine's dot is exact on any second operand (relaxed_dot_kind
 * finds which reading of its lanes it takes: x86's AVX-VNNI reads them
 * unsigned, Arm's dot product signed), one dot per 16 products does:
 * x + 128 against w, the sums started at -128 sum(w), or x itself.
 *
 * The relaxed multiply-add is fused on some engines and CPUs and not on
 * others; relaxed_fused says which, and the client runs the f32 tile only
 * where it is fused: then every output is the native linear's in-order FMA
 * chain (linear_fma.h), the same bits as natively. */
#include <stddef.h>
#include <stdint.h>
#include <wasm_simd128.h>

/* the layout, shared with kernels_simd128.c */
#include "kernels/relaxed_tile.h"

typedef float f32x4 __attribute__((vector_size(16)));

/* a * b + acc, fused or not as the engine does it */
static inline v128_t madd(v128_t a, v128_t b, v128_t acc) {
    return (v128_t)__builtin_wasm_relaxed_madd_f32x4((f32x4)a, (f32x4)b, (f32x4)acc);
}

/* acc + the 4-product sums of w (int8) and x in each lane: x in 0..127 on
 * every engine, past it as this engine reads it (relaxed_dot_kind) */
static inline v128_t dot(v128_t w, v128_t x, v128_t acc) {
    return __builtin_wasm_relaxed_dot_i8x16_i7x16_add_s_i32x4(w, x, acc);
}

/* acc + the exact 4-product sums of w (int8) and x read as kind
 * (RELAXED_DOT_UNSIGNED or _SIGNED), in SIMD128 */
static inline v128_t exact_dot(int kind, v128_t w, v128_t x, v128_t acc) {
    v128_t x_lo = kind == RELAXED_DOT_UNSIGNED ? wasm_u16x8_extend_low_u8x16(x) : wasm_i16x8_extend_low_i8x16(x);
    v128_t x_hi = kind == RELAXED_DOT_UNSIGNED ? wasm_u16x8_extend_high_u8x16(x) : wasm_i16x8_extend_high_i8x16(x);
    v128_t lo = wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(w), x_lo);
    v128_t hi = wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(w), x_hi);
    return wasm_i32x4_add(
        acc, wasm_i32x4_add(wasm_i32x4_shuffle(lo, hi, 0, 2, 4, 6), wasm_i32x4_shuffle(lo, hi, 1, 3, 5, 7)));
}

static inline v128_t f32_step(v128_t acc, v128_t sum, v128_t d_x, v128_t d_w) {
    return wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(sum), wasm_f32x4_mul(d_x, d_w)));
}

/* y[j] = out[j] + bias[j] for the panel's first nc rows, lane by lane (an
 * array indexed by nc would live on a stack this module does not have) */
static inline void store_lane(float *y, int j, int nc, float out, const float *bias) {
    if (j < nc) y[j] = bias ? out + bias[j] : out;
}

static inline void store_row4(float *y, v128_t v, int nc, const float *bias) {
    store_lane(y, 0, nc, wasm_f32x4_extract_lane(v, 0), bias);
    store_lane(y, 1, nc, wasm_f32x4_extract_lane(v, 1), bias);
    store_lane(y, 2, nc, wasm_f32x4_extract_lane(v, 2), bias);
    store_lane(y, 3, nc, wasm_f32x4_extract_lane(v, 3), bias);
}

static inline void store_row(float *y, v128_t lo, v128_t hi, int nc, const float *bias) {
    store_row4(y, lo, nc, bias);
    if (nc > 4) store_row4(y + 4, hi, nc - 4, bias ? bias + 4 : NULL);
}

/* int8_panel's forms: relaxed_panel's sign split; relaxed_one_panel's one
 * dot per 16 products, the engine's or the exact sums of a kind (tests) */
#define SIGN_SPLIT 0
#define ONE_DOT 1
#define ONE_DOT_EXACT 2

/* a one-dot form's dot */
static inline __attribute__((always_inline)) v128_t one_dot(const int form, int kind, v128_t w, v128_t x, v128_t acc) {
    return form == ONE_DOT ? dot(w, x, acc) : exact_dot(kind, w, x, acc);
}

/* relaxed_panel (form SIGN_SPLIT) or relaxed_one_panel (ONE_DOT, or
 * ONE_DOT_EXACT of kind), form a constant where inlined; the f32 sums
 * in sums between blocks (relaxed_tile.h) */
static inline __attribute__((always_inline)) void int8_panel(const int form, int kind, int blocks, int count,
                                                             const int8_t *xq, const float *xd,
                                                             const unsigned char *panel, float *y, int stride, int nc,
                                                             const float *bias, float *sums) {
    const int split = form == SIGN_SPLIT;
    const int mr = split ? RELAXED_MR : RELAXED_ONE_MR;
    const int block_bytes = split ? RELAXED_BLOCK_BYTES : RELAXED_ONE_BLOCK_BYTES;
    const int qs_bytes = split ? RELAXED_QS_BYTES : RELAXED_ONE_QS_BYTES;
    const int group_bytes = split ? RELAXED_GROUP_BYTES : RELAXED_ONE_GROUP_BYTES;
    /* a group of 4 columns of x: the sign split's rows are row bytes apart, the
     * one-dot forms' tile interleaves them (4 bytes apart, the tile's groups
     * in turn), so that its loads are a pointer and constant offsets */
    const int x_group_bytes = split ? 4 : 4 * mr;
    int cols = blocks * RELAXED_BLOCK, row = blocks * (split ? RELAXED_X_BLOCK_BYTES : RELAXED_ONE_X_BLOCK_BYTES);
    const size_t token_bytes = split ? (size_t)row : 4;
    for (int i0 = 0; i0 < count; i0 += mr) {
        const int8_t *x = xq + (size_t)i0 * row;
        const float *d = xd + (size_t)i0 * blocks;
#pragma clang loop unroll(full)
        for (int i = 0; i < 2 * mr; i++) wasm_v128_store(sums + 4 * i, wasm_f32x4_splat(0.0f));
        for (int b = 0; b < blocks; b++) {
            const unsigned char *p_b = panel + (size_t)b * block_bytes;
            /* the sums start at the token's sum(x-) (split), or the rows' starts */
            v128_t s[RELAXED_MAX_MR][2];
#pragma clang loop unroll(full)
            for (int i = 0; i < mr; i++) {
                s[i][0] = split ? wasm_v128_load32_splat(x + (size_t)i * row + 2 * cols + 4 * b)
                                : wasm_v128_load(p_b + qs_bytes + RELAXED_NR * 4);
                s[i][1] = split ? s[i][0] : wasm_v128_load(p_b + qs_bytes + RELAXED_NR * 4 + 16);
            }
            const int8_t *x_g = x + (size_t)b * RELAXED_GROUPS * x_group_bytes;
            for (const unsigned char *p_g = p_b; p_g != p_b + qs_bytes; p_g += group_bytes, x_g += x_group_bytes) {
                v128_t w0 = wasm_v128_load(p_g), w1 = wasm_v128_load(p_g + 16);
#pragma clang loop unroll(full)
                for (int i = 0; i < mr; i++) {
                    const int8_t *x_ig = x_g + i * token_bytes;
                    v128_t x_ig4 = wasm_v128_load32_splat(x_ig); /* x+ (split), or x (+ 128) */
                    s[i][0] = split ? dot(w0, x_ig4, s[i][0]) : one_dot(form, kind, w0, x_ig4, s[i][0]);
                    s[i][1] = split ? dot(w1, x_ig4, s[i][1]) : one_dot(form, kind, w1, x_ig4, s[i][1]);
                    if (split) {
                        v128_t minus = wasm_v128_load32_splat(x_ig + cols);
                        s[i][0] = dot(wasm_v128_load(p_g + 32), minus, s[i][0]);
                        s[i][1] = dot(wasm_v128_load(p_g + 48), minus, s[i][1]);
                    }
                }
            }
            v128_t d0 = wasm_v128_load(p_b + qs_bytes), d1 = wasm_v128_load(p_b + qs_bytes + 16);
#pragma clang loop unroll(full)
            for (int i = 0; i < mr; i++) {
                v128_t d_x = wasm_f32x4_splat(d[(size_t)i * blocks + b]);
                float *sums_i = sums + RELAXED_NR * i;
                wasm_v128_store(sums_i, f32_step(wasm_v128_load(sums_i), s[i][0], d_x, d0));
                wasm_v128_store(sums_i + 4, f32_step(wasm_v128_load(sums_i + 4), s[i][1], d_x, d1));
            }
            /* read back from memory next block: else clang keeps them in
             * registers too, and V8 spills the integer sums */
            __asm__ volatile("" ::: "memory");
        }
#pragma clang loop unroll(full)
        for (int i = 0; i < mr; i++)
            if (i0 + i < count)
                store_row(y + (size_t)(i0 + i) * stride, wasm_v128_load(sums + RELAXED_NR * i),
                          wasm_v128_load(sums + RELAXED_NR * i + 4), nc, bias);
    }
}

__attribute__((export_name("relaxed_panel"))) void relaxed_panel(int blocks, int count, const int8_t *xq,
                                                                 const float *xd, const unsigned char *panel, float *y,
                                                                 int stride, int nc, const float *bias, float *sums) {
    int8_panel(SIGN_SPLIT, 0, blocks, count, xq, xd, panel, y, stride, nc, bias, sums);
}

__attribute__((export_name("relaxed_one_panel"))) void relaxed_one_panel(int blocks, int count, const int8_t *xq,
                                                                         const float *xd, const unsigned char *panel,
                                                                         float *y, int stride, int nc,
                                                                         const float *bias, float *sums, int how) {
    if (how == RELAXED_ONE_ENGINE)
        int8_panel(ONE_DOT, 0, blocks, count, xq, xd, panel, y, stride, nc, bias, sums);
    else
        int8_panel(ONE_DOT_EXACT, how, blocks, count, xq, xd, panel, y, stride, nc, bias, sums);
}

/* the linear congruential generator's next lanes */
static inline v128_t next_random(v128_t state) {
    return wasm_i32x4_add(wasm_i32x4_mul(state, wasm_i32x4_splat(1664525)), wasm_i32x4_splat(1013904223));
}

/* 1 if every lane of the engine's dot equals the exact one of kind */
static inline int dot_is(const int kind, v128_t w, v128_t x, v128_t acc) {
    return wasm_i32x4_all_true(wasm_i32x4_eq(dot(w, x, acc), exact_dot(kind, w, x, acc)));
}

/* What the engine's dot is (RELAXED_DOT_*), from products whose second
 * operand's lanes go past 127: the extremes (every product -128 x 255 or
 * 127 x 255, whose pairs saturate at 16 bits) and 64 of pseudo-random
 * bytes (a linear congruential generator's lanes), each checked against
 * both exact readings. */
__attribute__((export_name("relaxed_dot_kind"))) int relaxed_dot_kind(void) {
    v128_t ones = wasm_i8x16_splat(-1), low = wasm_i8x16_splat(-128), high = wasm_i8x16_splat(127);
    int is_unsigned = dot_is(RELAXED_DOT_UNSIGNED, low, ones, ones) && dot_is(RELAXED_DOT_UNSIGNED, high, ones, low);
    int is_signed = dot_is(RELAXED_DOT_SIGNED, low, ones, ones) && dot_is(RELAXED_DOT_SIGNED, high, ones, low);
    v128_t state = wasm_i32x4_make(0x2545f491, 0x6c078965, 0x5851f42d, 0x14057b7f);
    for (int t = 0; t < 64; t++) {
        v128_t w = next_random(state), x = next_random(w), acc = next_random(x);
        state = acc;
        is_unsigned &= dot_is(RELAXED_DOT_UNSIGNED, w, x, acc);
        is_signed &= dot_is(RELAXED_DOT_SIGNED, w, x, acc);
    }
    if (is_unsigned) return RELAXED_DOT_UNSIGNED;
    return is_signed ? RELAXED_DOT_SIGNED : RELAXED_DOT_INEXACT;
}

/* Whether madd is fused here: a * a - (1 + 2^-11) for a = 1 + 2^-12 (the
 * client passes both) is 2^-24 fused and 0 rounded first (a * a = 1 + 2^-11
 * + 2^-24 rounds to 1 + 2^-11). */
__attribute__((export_name("relaxed_fused"))) int relaxed_fused(float a, float c) {
    v128_t r = madd(wasm_f32x4_splat(a), wasm_f32x4_splat(a), wasm_f32x4_splat(c));
    return wasm_f32x4_extract_lane(r, 0) != 0.0f && wasm_f32x4_extract_lane(r, 3) != 0.0f;
}

/* mr tokens of the f32 tile, a group's (xg: its columns of RELAXED_F32_MR
 * floats): acc = fma(x[k], w[k], acc) over the columns in order,
 * RELAXED_F32_NR weight rows in three vectors (mr a constant where
 * inlined). A column's loads are two pointers and constant offsets, which
 * V8 folds into the loads (with a row pointer per token and an index, V8
 * spent an imul and five adds a column among the 9 madds, on the ports the
 * madds need). */
static inline __attribute__((always_inline)) void f32_tile(int mr, int cols, const float *xg, const float *panel,
                                                           float *y, int stride, int nc, const float *bias) {
    _Static_assert(RELAXED_F32_NR == 12, "three vectors of weights a column");
    v128_t acc[RELAXED_F32_MR][3];
#pragma clang loop unroll(full)
    for (int i = 0; i < mr; i++) acc[i][0] = acc[i][1] = acc[i][2] = wasm_f32x4_splat(0.0f);
    const float *x_k = xg, *end = panel + (size_t)cols * RELAXED_F32_NR;
    for (const float *w_k = panel; w_k != end; w_k += RELAXED_F32_NR, x_k += RELAXED_F32_MR) {
        v128_t w0 = wasm_v128_load(w_k), w1 = wasm_v128_load(w_k + 4), w2 = wasm_v128_load(w_k + 8);
#pragma clang loop unroll(full)
        for (int i = 0; i < mr; i++) {
            v128_t x_ik = wasm_v128_load32_splat(x_k + i);
            acc[i][0] = madd(x_ik, w0, acc[i][0]);
            acc[i][1] = madd(x_ik, w1, acc[i][1]);
            acc[i][2] = madd(x_ik, w2, acc[i][2]);
        }
    }
#pragma clang loop unroll(full)
    for (int i = 0; i < mr; i++) {
        float *y_i = y + (size_t)i * stride;
        store_row(y_i, acc[i][0], acc[i][1], nc, bias);
        if (nc > 8) store_row4(y_i + 8, acc[i][2], nc - 8, bias ? bias + 8 : NULL);
    }
}

/* y[i * stride + j] = the chain for token i < count (x in groups of
 * RELAXED_F32_MR tokens, relaxed_tile.h) and panel row j < nc, + bias[j]
 * if bias is not NULL; the panel: for each of the cols columns the
 * RELAXED_F32_NR rows' weights (zeros past nc) */
__attribute__((export_name("relaxed_f32_panel"))) void relaxed_f32_panel(int cols, int count, const float *xg,
                                                                         const float *panel, float *y, int stride,
                                                                         int nc, const float *bias) {
    size_t group = (size_t)cols * RELAXED_F32_MR;
    int i = 0;
    for (; i + RELAXED_F32_MR <= count; i += RELAXED_F32_MR, xg += group)
        f32_tile(RELAXED_F32_MR, cols, xg, panel, y + (size_t)i * stride, stride, nc, bias);
    _Static_assert(RELAXED_F32_MR == 3, "the last tokens' tiles below");
    float *y_i = y + (size_t)i * stride;
    switch (count - i) {
    case 2: f32_tile(2, cols, xg, panel, y_i, stride, nc, bias); break;
    case 1: f32_tile(1, cols, xg, panel, y_i, stride, nc, bias); break;
    }
}
