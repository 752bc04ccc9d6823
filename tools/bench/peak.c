/* The machine's measured peaks, natively: a loop of independent fused
 * multiply-adds (12 register accumulators, enough to hide the FMA latency on
 * two pipes) in AVX2 and AVX-512, and the same loop of the integer tiles'
 * 8-bit multiply-adds (AVX-512 VNNI's vpdpbusd; AVX2's vpmaddubsw, vpmaddwd
 * and vpaddd), where the CPU has them, on 1 and 2 threads; the median of
 * --repeats runs of about --ms milliseconds each. The yardsticks for the
 * kernels' FLOP/s and integer operations per second (tools/bench/flops.py;
 * a multiply-add is 2 operations in both). Beside them the Q8_0 linear
 * alone (linear_int8.h, on the CPU's best integer tiles: an image's code)
 * on operands that stay in L1, so that it measures what the tiles' code
 * reaches of the peak (the 8-bit dots with Q8_0's f32 steps per block),
 * without memory or the rest of an image; and, with AVX-512 VNNI, the
 * bound those f32 steps leave (the VNNI tile's dots and steps in
 * registers):
 *   bench_peak [--repeats 5] [--ms 300]
 * prints one line per instruction set and thread count:
 *   peak native ISA THREADS: gflops=...
 *   peak int8 native ISA THREADS: gops=...
 *   bound q8_0 native avx512vnni THREADS: gops=...
 *   tiles q8_0 native ISA THREADS: gops=... */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/dtype.h"
#include "kernels/dispatch.h"
#include "kernels/linear_int8.h"
#include "native/args.h"
#include "native/clock.h"

#define ACCUMULATORS 12

/* each kernel returns a value that depends on every accumulator, so that
 * the compiler keeps the loop; a = a * m + c converges to 1 (no overflow,
 * no subnormals) */
__attribute__((target("avx2,fma"))) static float fma_avx2(long iterations) {
    __m256 acc[ACCUMULATORS];
    const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
    for (int i = 0; i < ACCUMULATORS; i++) acc[i] = _mm256_set1_ps((float)i);
    for (long n = 0; n < iterations; n++) {
#pragma GCC unroll 12 /* the accumulators stay in registers */
        for (int i = 0; i < ACCUMULATORS; i++) acc[i] = _mm256_fmadd_ps(acc[i], m, c);
    }
    __m256 sum = acc[0];
    for (int i = 1; i < ACCUMULATORS; i++) sum = _mm256_add_ps(sum, acc[i]);
    float lanes[8];
    _mm256_storeu_ps(lanes, sum);
    return lanes[0] + lanes[7];
}

__attribute__((target("avx512f"))) static float fma_avx512(long iterations) {
    __m512 acc[ACCUMULATORS];
    const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
    for (int i = 0; i < ACCUMULATORS; i++) acc[i] = _mm512_set1_ps((float)i);
    for (long n = 0; n < iterations; n++) {
#pragma GCC unroll 12
        for (int i = 0; i < ACCUMULATORS; i++) acc[i] = _mm512_fmadd_ps(acc[i], m, c);
    }
    __m512 sum = acc[0];
    for (int i = 1; i < ACCUMULATORS; i++) sum = _mm512_add_ps(sum, acc[i]);
    return _mm512_reduce_add_ps(sum);
}

/* 64 multiply-adds of unsigned by signed bytes into 16 int32 sums. The
 * instruction is written out: from _mm512_dpbusd_epi32 in this loop gcc 12
 * copied every accumulator to another register before each vpdpbusd, and
 * the loop measured half the rate that Ice Lake's two 512-bit pipes give
 * (314 against 600 G ops/s); every loop over the accumulators is unrolled,
 * so that they stay in registers. */
__attribute__((target("avx512f,avx512vnni"))) static float int8_avx512vnni(long iterations) {
    __m512i acc[ACCUMULATORS];
    const __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-1);
#pragma GCC unroll 12
    for (int i = 0; i < ACCUMULATORS; i++) acc[i] = _mm512_set1_epi32(i);
    for (long n = 0; n < iterations; n++) {
#pragma GCC unroll 12
        for (int i = 0; i < ACCUMULATORS; i++) __asm__ volatile("vpdpbusd %2, %1, %0" : "+v"(acc[i]) : "v"(u), "v"(s));
    }
    __m512i sum = acc[0];
#pragma GCC unroll 12
    for (int i = 1; i < ACCUMULATORS; i++) sum = _mm512_add_epi32(sum, acc[i]);
    return (float)_mm512_reduce_add_epi32(sum);
}

/* Q8_0's bound on AVX-512 VNNI: one block of the VNNI tile (linear_int8.c's
 * tile_vnni: 6 tokens x 2 panels of 16 outputs) with its operands in
 * registers, no loads of weights or tokens: 12 sums, each started at the
 * panel's correction and taking 8 vpdpbusd, then Q8_0's f32 steps for each
 * (the sum converted, times a token's scale broadcast from memory times the
 * panel's, added to its accumulator), as the tile orders them. Where the f32
 * multiplies share the pipes the dots run on, they cap the tiles below the
 * 8-bit peak whatever the memory does: the tiles alone are measured against
 * this too. */
__attribute__((target("avx512f,avx512vnni"))) static float q8_0_bound_avx512vnni(long iterations) {
    static const float token_scales[6] = {0.25f, 0.5f, 0.75f, 1.25f, 1.5f, 1.75f};
    const __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-1), correction = _mm512_set1_epi32(5);
    __m512 panel_scales[2] = {_mm512_set1_ps(0.01f), _mm512_set1_ps(0.02f)};
    /* a panel's 16 scales, not one known value: a vector multiply per sum, as in the tile */
    __asm__("" : "+v"(panel_scales[0]), "+v"(panel_scales[1]));
    __m512 acc[ACCUMULATORS];
#pragma GCC unroll 12
    for (int i = 0; i < ACCUMULATORS; i++) acc[i] = _mm512_setzero_ps();
    const float *d_x = token_scales;
    for (long n = 0; n < iterations; n++) {
        __asm__ volatile("" : "+r"(d_x)); /* the scales may have changed: read again, as the tile reads them */
        __m512i sum[ACCUMULATORS];
#pragma GCC unroll 12
        for (int i = 0; i < ACCUMULATORS; i++) sum[i] = correction;
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) {
#pragma GCC unroll 12
            for (int i = 0; i < ACCUMULATORS; i++)
                __asm__ volatile("vpdpbusd %2, %1, %0" : "+v"(sum[i]) : "v"(u), "v"(s));
        }
#pragma GCC unroll 12
        for (int i = 0; i < ACCUMULATORS; i++) {
            __m512 scale = _mm512_mul_ps(_mm512_set1_ps(d_x[i / 2]), panel_scales[i % 2]);
            acc[i] = _mm512_add_ps(acc[i], _mm512_mul_ps(_mm512_cvtepi32_ps(sum[i]), scale));
        }
    }
    __m512 total = acc[0];
#pragma GCC unroll 12
    for (int i = 1; i < ACCUMULATORS; i++) total = _mm512_add_ps(total, acc[i]);
    return _mm512_reduce_add_ps(total);
}

/* 32 multiply-adds of unsigned by signed bytes into 8 int32 sums, as the
 * AVX2 integer tile makes them: pairs, then pairs of pairs, then an add */
__attribute__((target("avx2"))) static float int8_avx2(long iterations) {
    __m256i acc[ACCUMULATORS];
    const __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-1), ones = _mm256_set1_epi16(1);
    for (int i = 0; i < ACCUMULATORS; i++) acc[i] = _mm256_set1_epi32(i);
    for (long n = 0; n < iterations; n++) {
#pragma GCC unroll 12
        for (int i = 0; i < ACCUMULATORS; i++) {
            __m256i x = u;
            __asm__ volatile("" : "+x"(x)); /* x may have changed: the products are not hoisted out of the loop */
            acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(x, s), ones));
        }
    }
    __m256i sum = acc[0];
    for (int i = 1; i < ACCUMULATORS; i++) sum = _mm256_add_epi32(sum, acc[i]);
    int lanes[8];
    _mm256_storeu_si256((__m256i *)lanes, sum);
    return (float)(lanes[0] + lanes[7]);
}

/* The Q8_0 linear's operands: Q8_0_TOKENS tokens quantised once (a whole
 * number of every tile's tokens: 3, 4, 6) times a packed weight of the
 * widest tile's Q8_0_ROWS rows; at Q8_0_COLS inputs the weight's panels
 * (20 KB) and the quantised tokens (6 KB) stay in L1. */
#define Q8_0_TOKENS 12
#define Q8_0_ROWS 32
#define Q8_0_COLS 512

static sdfed_weight q8_0_weight;
static void *q8_0_tokens;
static int q8_0_isa; /* the CPU's best integer tiles */

/* bytes of memory on a cache line's start (as the model's packed weights
 * are), or the program ends saying memory is short */
static void *allocated(size_t bytes) {
    void *memory = NULL;
    if (posix_memalign(&memory, 64, bytes)) {
        fputs("bench_peak: out of memory\n", stderr);
        exit(CLI_FAILED);
    }
    return memory;
}

/* Makes the operands (once; exits where memory is short): the weight's
 * quants a fixed pseudo-random sequence, its scales seven values in turn. */
static void q8_0_operands(void) {
    int blocks = Q8_0_COLS / SDFED_Q8_0_BLOCK;
    q8_0_isa = sdfed_isa_best_int8();
    sdfed_block_q8_0 *data = allocated(sizeof *data * Q8_0_ROWS * blocks);
    float *x = allocated(sizeof *x * Q8_0_TOKENS * Q8_0_COLS);
    q8_0_tokens = allocated(sdfed_int8_rows_bytes(q8_0_isa, Q8_0_TOKENS, Q8_0_COLS));
    q8_0_weight = (sdfed_weight){.type = SDFED_TYPE_Q8_0, .rows = Q8_0_ROWS, .cols = Q8_0_COLS, .data = data};
    void *packed = allocated(sdfed_int8_packed_bytes(&q8_0_weight));
    unsigned state = 1;
    for (int b = 0; b < Q8_0_ROWS * blocks; b++) {
        data[b].d = sdfed_f32_to_f16(0.01f + 0.001f * (float)(b % 7));
        for (int k = 0; k < SDFED_Q8_0_BLOCK; k++)
            data[b].qs[k] = (signed char)((state = state * 1103515245u + 12345u) >> 24);
    }
    for (int i = 0; i < Q8_0_TOKENS * Q8_0_COLS; i++) x[i] = (float)((i * 37) % 201 - 100) / 50.0f;
    sdfed_int8_pack(&q8_0_weight, packed);
    q8_0_weight.packed = packed;
    q8_0_weight.packed_int8 = 1;
    sdfed_int8_quantise_rows(q8_0_isa, q8_0_tokens, x, Q8_0_TOKENS, Q8_0_COLS, 0, Q8_0_TOKENS);
    free(x);
}

static void q8_0_free(void) {
    free(q8_0_weight.packed);
    free((void *)q8_0_weight.data);
    free(q8_0_tokens);
}

/* the Q8_0 linear on the operands, `iterations` times, into this thread's outputs */
static float q8_0_tiles(long iterations) {
    float *y = allocated(sizeof *y * Q8_0_TOKENS * Q8_0_ROWS);
    float *scratch = allocated(sizeof *scratch * SDFED_INT8_SCRATCH_ROWS * Q8_0_COLS);
    for (long n = 0; n < iterations; n++)
        sdfed_linear_int8_rows(q8_0_isa, y, q8_0_tokens, &q8_0_weight, NULL, Q8_0_TOKENS, 0, Q8_0_ROWS, scratch);
    float result = y[0];
    free(y);
    free(scratch);
    return result;
}

static int has_avx2(void) { return __builtin_cpu_supports("avx2"); }
static int has_avx2_fma(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
static int has_avx512(void) { return __builtin_cpu_supports("avx512f"); }
static int has_avx512vnni(void) { return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni"); }
static int always(void) { return 1; }

typedef struct loop {
    const char *label, *name; /* a line's start ("peak int8 native"), then the instruction set's name */
    const char *unit;         /* gflops for f32 FMAs, gops for 8-bit multiply-adds */
    double multiply_adds;     /* per iteration */
    int (*supported)(void);   /* whether this CPU has it (after __builtin_cpu_init) */
    float (*kernel)(long iterations);
} loop;

typedef struct run {
    const loop *loop;
    long iterations;
    float result;
} run;

static void *run_thread(void *arg) {
    run *r = arg;
    r->result = r->loop->kernel(r->iterations);
    return NULL;
}

/* GFLOP/s of `threads` threads each running `iterations` */
static double measure(const loop *s, int threads, long iterations) {
    pthread_t ids[2];
    run runs[2];
    double t0 = native_clock_seconds(native_clock_monotonic_ns());
    for (int t = 0; t < threads; t++) {
        runs[t] = (run){.loop = s, .iterations = iterations, .result = 0};
        if (t > 0) pthread_create(&ids[t], NULL, run_thread, &runs[t]);
    }
    run_thread(&runs[0]);
    for (int t = 1; t < threads; t++) pthread_join(ids[t], NULL);
    double seconds = native_clock_seconds(native_clock_monotonic_ns()) - t0;
    if (runs[0].result != runs[0].result) fprintf(stderr, "bench_peak: NaN\n");   /* keeps the result alive */
    return 2.0 * s->multiply_adds * (double)iterations * threads / seconds / 1e9; /* G ops/s */
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    const char *repeats_s = "5", *ms_s = "300";
    int help = 0;
    const native_cli_option options[] = {{.name = "--repeats", .value = &repeats_s, .flag = NULL},
                                         {.name = "--ms", .value = &ms_s, .flag = NULL},
                                         {.name = "--help", .value = NULL, .flag = &help}};
    native_cli_set_program("bench_peak");
    if (native_cli_parse(argc - 1, argv + 1, options, 3, NULL, NULL)) return CLI_USAGE;
    if (help) {
        fputs("usage: bench_peak [--repeats N (5)] [--ms MILLISECONDS (300)]\n", stdout);
        return CLI_OK;
    }
    long long repeats, ms;
    if (native_cli_integer(repeats_s, "--repeats", 1, 99, &repeats) ||
        native_cli_integer(ms_s, "--ms", 1, 3600000, &ms))
        return CLI_USAGE;
    __builtin_cpu_init();
    q8_0_operands();
    const loop loops[] = {
        {.label = "peak native",
         .name = "avx2",
         .unit = "gflops",
         .multiply_adds = 8 * ACCUMULATORS,
         .supported = has_avx2_fma,
         .kernel = fma_avx2},
        {.label = "peak native",
         .name = "avx512",
         .unit = "gflops",
         .multiply_adds = 16 * ACCUMULATORS,
         .supported = has_avx512,
         .kernel = fma_avx512},
        {.label = "peak int8 native",
         .name = "avx2",
         .unit = "gops",
         .multiply_adds = 32 * ACCUMULATORS,
         .supported = has_avx2,
         .kernel = int8_avx2},
        {.label = "peak int8 native",
         .name = "avx512vnni",
         .unit = "gops",
         .multiply_adds = 64 * ACCUMULATORS,
         .supported = has_avx512vnni,
         .kernel = int8_avx512vnni},
        {.label = "bound q8_0 native",
         .name = "avx512vnni",
         .unit = "gops",
         .multiply_adds = 8 * 64 * ACCUMULATORS,
         .supported = has_avx512vnni,
         .kernel = q8_0_bound_avx512vnni},
        {.label = "tiles q8_0 native",
         .name = sdfed_isa_name(q8_0_isa),
         .unit = "gops",
         .multiply_adds = (double)Q8_0_TOKENS * Q8_0_ROWS * Q8_0_COLS,
         .supported = always,
         .kernel = q8_0_tiles},
    };
    for (size_t i = 0; i < sizeof loops / sizeof loops[0]; i++) {
        const loop *s = &loops[i];
        if (!s->supported()) {
            printf("%s %s: not on this CPU\n", s->label, s->name);
            continue;
        }
        /* iterations for about ms milliseconds on one thread, from a first run of some 10^8 operations */
        long iterations = (long)(1e8 / (2.0 * s->multiply_adds)) + 1;
        double gflops = measure(s, 1, iterations);
        iterations = (long)(gflops * 1e9 * ms / 1e3 / (2.0 * s->multiply_adds));
        if (iterations < 1) iterations = 1;
        for (int threads = 1; threads <= 2; threads++) {
            double rates[99];
            for (int r = 0; r < repeats; r++) rates[r] = measure(s, threads, iterations);
            qsort(rates, (size_t)repeats, sizeof *rates, compare_double);
            printf("%s %s %d: %s=%.1f\n", s->label, s->name, threads, s->unit, rates[repeats / 2]);
        }
    }
    q8_0_free();
    return CLI_OK;
}
