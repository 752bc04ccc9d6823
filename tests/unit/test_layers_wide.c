/* The layers' sixteen-lane loops (clip/layers_wide.h) give the bits of the
 * eight-lane ones (the same layers with the instruction sets capped below
 * AVX-512): QuickGELU over every length up to 48 and a ViT-B/16 MLP row's
 * 3072 + 5, on values across the exponential's range and its edges (0
 * below -87 / 1.702, infinity, NaN, -0); the attention's softmax on rows
 * of every visible length up to 40 (causal spans after a context) and of
 * 197, on scores from ordinary to ones whose differences underflow, and
 * rows holding infinities and NaN. On a CPU without AVX-512 there is no
 * sixteen-lane path: the test checks that it is not chosen, and says so. A
 * NaN matches any NaN (same_bits). Native builds only (wasm has no such
 * loops). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "clip/clip_model.h"
#include "clip/layers.h"
#include "clip/layers_wide.h"
#include "kernels/dispatch.h"
#include "kernels/kernels.h"

#if defined(SDFED_LAYERS_WIDE)
/* a value for index i: ordinary ones, the range's edges and specials among them */
static float value_at(uint32_t *state, int i, float scale) {
    static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -52.0f, 52.0f, -51.1f, 88.5f, -1e30f};
    *state = *state * 1664525u + 1013904223u;
    if (i % 7 == 3) return specials[(*state >> 8) % (sizeof specials / sizeof specials[0])];
    return ((float)(*state >> 8) / 16777216.0f - 0.5f) * scale;
}

static void fill(float *x, size_t n, float scale, uint32_t seed) {
    uint32_t state = seed;
    for (size_t i = 0; i < n; i++) x[i] = value_at(&state, (int)i, scale);
}

/* a and b hold the same floats bit for bit, where a NaN matches any NaN:
 * which of two NaNs an addition passes on is the compiler's choice of
 * operand order (clang's sums of NaN rows came out +NaN in one path and -NaN
 * in the other; C and IEEE 754 leave a NaN's sign and payload open) */
static int same_bits(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(a + i, b + i, sizeof *a) && !(isnan(a[i]) && isnan(b[i]))) return 0;
    return 1;
}

/* out of both paths for one call of `run`, capped and not */
static void run_both(void (*run)(void *ctx, float *out), void *ctx, float *narrow, float *wide) {
    sdfed_isa_cap(SDFED_ISA_AVX2);
    CHECK(!sdfed_layers_wide(), "capped at AVX2, the sixteen-lane loops do not run");
    run(ctx, narrow);
    sdfed_isa_cap(SDFED_ISA_COUNT - 1);
    CHECK(sdfed_layers_wide(), "uncapped on an AVX-512 CPU, the sixteen-lane loops run");
    run(ctx, wide);
}

typedef struct gelu_case {
    const float *x;
    int n;
} gelu_case;

static void run_gelu(void *ctx, float *out) {
    const gelu_case *c = ctx;
    sdfed_activation_forward(out, c->x, c->n, SDFED_ACT_QUICK_GELU);
}

static void test_quick_gelu(void) {
    int lengths[50];
    for (int i = 0; i < 49; i++) lengths[i] = i; /* 0 to 48: every tail of 16 */
    lengths[49] = 3072 + 5;
    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++)
        for (int s = 0; s < 2; s++) {
            int n = lengths[l];
            float *x = malloc(sizeof *x * (size_t)(n + 1)), *a = malloc(sizeof *a * (size_t)(n + 1)),
                  *b = malloc(sizeof *b * (size_t)(n + 1));
            fill(x, (size_t)n, s ? 120.0f : 8.0f, 7u + (uint32_t)n);
            memset(a, 0x55, sizeof *a * (size_t)(n + 1));
            memset(b, 0x55, sizeof *b * (size_t)(n + 1));
            gelu_case c = {.x = x, .n = n};
            run_both(run_gelu, &c, a, b);
            CHECK(same_bits(a, b, (size_t)(n + 1)),
                  "QuickGELU of %d values (scale %s): the sixteen-lane loop gives the eight-lane bits, and writes "
                  "no further",
                  n, s ? "120" : "8");
            free(x);
            free(a);
            free(b);
        }
}

typedef struct attention_case {
    const float *qkv;
    const sdfed_attn_span *spans;
    const size_t *offset;
    size_t n_att;
    int n_spans, C, heads, causal;
} attention_case;

/* out: the probabilities, then the attention's outputs */
static void run_attention(void *ctx, float *out) {
    const attention_case *c = ctx;
    sdfed_attention_forward(&sdfed_kernels_portable, out + c->n_att, out, c->qkv, c->spans, c->offset, c->n_spans, c->C,
                            c->heads, c->causal);
}

static void test_softmax(int causal, int n, float scale) {
    /* causal: a context of 5 rows, then a span of n - 5 seeing it and itself up to each row (visible 6 to n);
     * not causal: one span of n rows */
    int C = 16, heads = 2, n_spans = causal ? 2 : 1;
    sdfed_attn_span spans[2] = {{.q0 = 0, .nq = causal ? 5 : n, .c0 = 0, .nc = 0},
                                {.q0 = 5, .nq = n - 5, .c0 = 0, .nc = 5}};
    size_t offset[2];
    size_t n_att = sdfed_attention_size(spans, offset, n_spans, heads), n_out = n_att + (size_t)n * C;
    float *qkv = malloc(sizeof *qkv * (size_t)n * 3 * C), *a = malloc(sizeof *a * n_out),
          *b = malloc(sizeof *b * n_out);
    fill(qkv, (size_t)n * 3 * C, scale, 11u + (uint32_t)n);
    if (scale < 100.0f) /* ordinary scores: no specials, or every row would be NaN */
        for (size_t i = 0; i < (size_t)n * 3 * C; i++)
            if (!isfinite(qkv[i]) || fabsf(qkv[i]) > scale) qkv[i] = 0.25f;
    memset(a, 0x55, sizeof *a * n_out);
    memset(b, 0x55, sizeof *b * n_out);
    attention_case c = {.qkv = qkv,
                        .spans = spans,
                        .offset = offset,
                        .n_att = n_att,
                        .n_spans = n_spans,
                        .C = C,
                        .heads = heads,
                        .causal = causal};
    run_both(run_attention, &c, a, b);
    CHECK(same_bits(a, b, n_out),
          "softmax of %d rows (causal %d, scale %g): the sixteen-lane softmax gives the eight-lane bits", n, causal,
          (double)scale);
    free(qkv);
    free(a);
    free(b);
}

#endif

int main(void) {
#if defined(SDFED_LAYERS_WIDE)
    sdfed_isa_cap(SDFED_ISA_COUNT - 1);
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) { /* nothing to compare: check that they are never chosen */
        CHECK(!sdfed_layers_wide(), "without AVX-512 the sixteen-lane loops do not run");
        printf("test_layers_wide: this CPU lacks AVX-512: the sixteen-lane loops never run here\n");
        return check_report("test_layers_wide");
    }
    if (check_case("quick_gelu")) test_quick_gelu();
    if (check_case("softmax")) {
        for (int n = 6; n <= 45; n++) test_softmax(1, n, 3.0f);
        test_softmax(0, 197, 3.0f);
        test_softmax(0, 197, 40.0f); /* differences past -87: e^x underflows to 0 */
        test_softmax(0, 197, 1e20f); /* infinite scores and NaN rows, with the specials */
        test_softmax(1, 45, 1e20f);
    }
    return check_report("test_layers_wide");
#else
    printf("test_layers_wide: not an x86-64 build: no sixteen-lane loops to compare\n");
    return 0;
#endif
}
