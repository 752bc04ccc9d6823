/* The browser's measured peaks. f32: WebAssembly SIMD128 has no fused
 * multiply-add, so the loop is a multiply and an add on 4 lanes (8 flops),
 * in 12 independent accumulators; relaxed SIMD's f32x4.relaxed_madd (what
 * the simd128-relaxed kernels' f32 tile runs where the engine fuses it),
 * likewise. Integers: the SIMD128 integer tile's step, i32x4.dot_i16x8_s (8
 * multiply-adds of int16 pairs, 16 operations) and an add, likewise; and
 * relaxed SIMD's 8-bit dot, i32x4.relaxed_dot_i8x16_i7x16_add_s (16
 * multiply-adds of bytes and the add, 32 operations: the simd128-relaxed
 * integer tile's step, one instruction where the engine has one). Built
 * alone (no libc) by peak_browser.mjs (clang-16: Debian's clang 14 has no
 * relaxed SIMD; wasm-ld-16 directly, as binaryen's wasm-opt mangles it):
 *   clang-16 --target=wasm32 -O2 -msimd128 -mrelaxed-simd -c
 *   wasm-ld-16 --no-entry --export-dynamic
 * exports peak(iterations), peak_relaxed_madd(iterations),
 * peak_int16(iterations) and peak_relaxed_dot(iterations), whose results
 * only keep the loops alive. */
#include <wasm_simd128.h>

#define ACCUMULATORS 12

typedef float f32x4 __attribute__((vector_size(16)));

/* acc * m + c in 12 accumulators, a multiply and an add or (fused, a
 * constant where inlined) relaxed SIMD's multiply-add */
static inline __attribute__((always_inline)) float f32_loop(int iterations, int fused) {
    v128_t acc[ACCUMULATORS];
    const v128_t m = wasm_f32x4_splat(0.999999f), c = wasm_f32x4_splat(1e-6f);
    for (int i = 0; i < ACCUMULATORS; i++) acc[i] = wasm_f32x4_splat((float)i);
    for (int n = 0; n < iterations; n++) {
#pragma GCC unroll 12 /* the accumulators stay in registers */
        for (int i = 0; i < ACCUMULATORS; i++)
            acc[i] = fused ? (v128_t)__builtin_wasm_relaxed_madd_f32x4((f32x4)acc[i], (f32x4)m, (f32x4)c)
                           : wasm_f32x4_add(wasm_f32x4_mul(acc[i], m), c);
    }
    v128_t sum = acc[0];
    for (int i = 1; i < ACCUMULATORS; i++) sum = wasm_f32x4_add(sum, acc[i]);
    return wasm_f32x4_extract_lane(sum, 0) + wasm_f32x4_extract_lane(sum, 3);
}

__attribute__((export_name("peak"))) float peak(int iterations) { return f32_loop(iterations, 0); }

__attribute__((export_name("peak_relaxed_madd"))) float peak_relaxed_madd(int iterations) {
    return f32_loop(iterations, 1);
}

__attribute__((export_name("peak_int16"))) int peak_int16(int iterations) {
    v128_t acc[ACCUMULATORS];
    const v128_t b = wasm_i16x8_splat(1), c = wasm_i32x4_splat(1);
    for (int i = 0; i < ACCUMULATORS; i++) acc[i] = wasm_i32x4_splat(i);
    for (int n = 0; n < iterations; n++) {
#pragma GCC unroll 12 /* each dot takes its accumulator's lanes as int16, so that none is loop-invariant */
        for (int i = 0; i < ACCUMULATORS; i++) acc[i] = wasm_i32x4_add(wasm_i32x4_dot_i16x8(acc[i], b), c);
    }
    v128_t sum = acc[0];
    for (int i = 1; i < ACCUMULATORS; i++) sum = wasm_i32x4_add(sum, acc[i]);
    return wasm_i32x4_extract_lane(sum, 0) + wasm_i32x4_extract_lane(sum, 3);
}

__attribute__((export_name("peak_relaxed_dot"))) int peak_relaxed_dot(int iterations) {
    v128_t acc[ACCUMULATORS];
    const v128_t a = wasm_i8x16_splat(3), b = wasm_i8x16_splat(1); /* b's bytes 0..127: the same sums on any engine */
    for (int i = 0; i < ACCUMULATORS; i++) acc[i] = wasm_i32x4_splat(i);
    for (int n = 0; n < iterations; n++) {
#pragma GCC unroll 12 /* the dot adds into its accumulator: none is loop-invariant */
        for (int i = 0; i < ACCUMULATORS; i++)
            acc[i] = __builtin_wasm_relaxed_dot_i8x16_i7x16_add_s_i32x4(a, b, acc[i]);
    }
    v128_t sum = acc[0];
    for (int i = 1; i < ACCUMULATORS; i++) sum = wasm_i32x4_add(sum, acc[i]);
    return wasm_i32x4_extract_lane(sum, 0) + wasm_i32x4_extract_lane(sum, 3);
}
