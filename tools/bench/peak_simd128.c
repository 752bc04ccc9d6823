/* The browser's measured f32 peak: WebAssembly SIMD128 has no fused
 * multiply-add, so the loop is a multiply and an add on 4 lanes (8 flops),
 * in 12 independent accumulators. Built alone (no libc) by peak_browser.mjs:
 *   clang --target=wasm32 -O2 -msimd128 -nostdlib -Wl,--no-entry
 * exports peak(iterations), whose result only keeps the loop alive. */
#include <wasm_simd128.h>

#define ACCUMULATORS 12

__attribute__((export_name("peak"))) float peak(int iterations) {
    v128_t acc[ACCUMULATORS];
    const v128_t m = wasm_f32x4_splat(0.999999f), c = wasm_f32x4_splat(1e-6f);
    for (int i = 0; i < ACCUMULATORS; i++) acc[i] = wasm_f32x4_splat((float)i);
    for (int n = 0; n < iterations; n++) {
#pragma GCC unroll 12 /* the accumulators stay in registers */
        for (int i = 0; i < ACCUMULATORS; i++) acc[i] = wasm_f32x4_add(wasm_f32x4_mul(acc[i], m), c);
    }
    v128_t sum = acc[0];
    for (int i = 1; i < ACCUMULATORS; i++) sum = wasm_f32x4_add(sum, acc[i]);
    return wasm_f32x4_extract_lane(sum, 0) + wasm_f32x4_extract_lane(sum, 3);
}
