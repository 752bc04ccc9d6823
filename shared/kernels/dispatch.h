/* The kernels' CPU dispatch, all of it: which backends a build has (by the
 * target it is compiled for), which instruction set this CPU runs for the
 * native tiles (asked at run time, within a host's cap), the size of a
 * core's L2 cache, and the attribute that compiles a function of vectors
 * for the widest the CPU runs. A backend's file compiles under its macro
 * here; kernels.c lists it. */
#ifndef SDFED_KERNELS_DISPATCH_H
#define SDFED_KERNELS_DISPATCH_H

#include <stddef.h>

/* The backends beside the portable one, by the build's target */
#if defined(__wasm_simd128__)
#define SDFED_KERNELS_SIMD128 1 /* WebAssembly SIMD128 (-msimd128) */
#endif
#if defined(__wasm_simd128__) && defined(__EMSCRIPTEN__)
#define SDFED_KERNELS_SIMD128_RELAXED 1 /* the browser's, with relaxed_tile.c's module */
#endif
#if !defined(__wasm__)
#define SDFED_HAVE_NATIVE_KERNELS 1 /* any host that is not WebAssembly */
#endif

/* The native tiles' x86-64 instruction sets are compiled in */
#if defined(SDFED_HAVE_NATIVE_KERNELS) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SDFED_X86_TILES 1
#endif

/* A function of the vectors of base/vectors.h with this attribute is, on
 * x86-64, compiled for AVX-512, AVX2 and the SSE2 baseline, the widest the
 * CPU runs chosen when the program loads (the same bits: the same
 * operations lane by lane). */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define SDFED_WIDEST_VECTORS __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef SDFED_WIDEST_VECTORS
#define SDFED_WIDEST_VECTORS
#endif

/* The native tiles' instruction sets, each running where the ones below it
 * run; a tile table (linear_fma.c, linear_int8.c) has an entry for each. */
enum {
    SDFED_ISA_PORTABLE, /* C: any host */
    SDFED_ISA_AVX2,     /* x86-64 with AVX2 (and FMA for the FMA tiles) */
    SDFED_ISA_AVX512,   /* x86-64 with AVX-512F (and BW and VNNI for the integer tiles) */
    SDFED_ISA_COUNT
};

/* The best instruction set this CPU runs, at most the cap, for the FMA
 * tiles (linear_fma.h) and for the integer tiles (linear_int8.h). */
int sdfed_isa_best_fma(void);
int sdfed_isa_best_int8(void);
/* Caps both at isa (<= sdfed_isa_best_fma()) for the rest of the process:
 * the same bits as a CPU that has nothing better (sdfed sim --isa). A
 * host's choice, made before any kernel runs. */
void sdfed_isa_cap(int isa);
/* The cap (SDFED_ISA_COUNT - 1 until a host sets one). */
int sdfed_isa_capped(void);
/* The L2 cache of one core in bytes, as the C library reads it from the
 * CPU (512 KB where it does not say): how many rows of x the native f32
 * linear takes at a time (linear_fma.c), which moves no bit. */
size_t sdfed_cpu_l2_bytes(void);
/* The ways of a core's L1 data cache (8 where the C library does not
 * say): how many rows 4 KB apart a native f32 tile takes at once, which
 * moves no bit either. */
int sdfed_cpu_l1_ways(void);
/* "portable", "avx2", "avx512"; the instruction set of a name, or -1. */
const char *sdfed_isa_name(int isa);
int sdfed_isa_by_name(const char *name);

#endif
