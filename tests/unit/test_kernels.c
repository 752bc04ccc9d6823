/* Every kernel backend of this build against the portable one, on random
 * shapes including odd sizes, for F32, F16 and Q8_0 weights. Results may
 * differ only by float rounding: the bound used is the classic one for a
 * sum of k products, |got - want| <= 2 k eps sum |a_i b_i| (plus a tiny
 * absolute term), computed per output element. The Q8_0 x Q8_0 linear
 * (linear_int8) gives the portable definition's bits on every backend and,
 * natively, on every instruction set this CPU runs (the others are named as
 * skipped), with weights packed per call or once beforehand (the native
 * FMA linear too, and the backend's pack; a weight another backend
 * packed changes no bits; natively on Linux, its f32 panels marked for huge
 * pages and its integer panels not); the definition itself is
 * checked against the f32 product with the dequantised weights, within the
 * bound its rounding of x allows. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "check.h"
#include "kernels/kernels.h"
#if defined(SDFED_HAVE_NATIVE_KERNELS)
#include "kernels/linear_fma.h"
#include "kernels/linear_int8.h"
#endif

/* the references compute each rounding step as the kernels do: clang would
 * fuse a product and a sum within an expression */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

static float frand(void) { return (float)((double)rand() / RAND_MAX * 2.0 - 1.0); }

static float *random_floats(size_t n) {
    float *x = malloc(sizeof *x * (n ? n : 1));
    for (size_t i = 0; i < n; i++) x[i] = frand();
    return x;
}

/* Max over elements of |got - want| / bound; <= 1 passes. */
static double worst_ratio(const float *got, const float *want, const double *bound, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i])) return INFINITY;
        double r = fabs((double)got[i] - want[i]) / (bound[i] + 1e-30);
        if (r > worst) worst = r;
    }
    return worst;
}

/* A weight matrix of the given type made from random values; `dense`
 * receives the exact f32 values it holds. */
static void *make_weight(int type, int rows, int cols, float *dense) {
    size_t row_bytes = sdfed_type_row_bytes(type, (uint64_t)cols);
    unsigned char *w = malloc(row_bytes * rows);
    for (int r = 0; r < rows; r++) {
        float *src = dense + (size_t)r * cols;
        for (int c = 0; c < cols; c++) src[c] = frand();
        sdfed_row_from_f32(type, w + r * row_bytes, src, cols);
        sdfed_row_to_f32(type, src, w + r * row_bytes, cols);
    }
    return w;
}

/* want (n, rows) = the in-order FMA chain of x (n, cols) and the rows of
 * dense (rows, cols), + bias: the linear of backends with fma_chains */
static void fma_chain_linear(float *want, const float *x, const float *dense, const float *bias, int n, int rows,
                             int cols) {
    for (int i = 0; i < n; i++)
        for (int r = 0; r < rows; r++) {
            float acc = 0.0f;
            for (int c = 0; c < cols; c++) acc = fmaf(x[(size_t)i * cols + c], dense[(size_t)r * cols + c], acc);
            want[(size_t)i * rows + r] = acc + bias[r];
        }
}

/* k's linear_outputs (where it has one) in three ranges of outputs, the
 * first and last not whole tiles, against the whole call's y */
static void check_outputs_in_ranges(const sdfed_kernels *k, int int8, const float *y, const float *x,
                                    const sdfed_weight *w, const float *bias, int n, float *scratch) {
    if (!k->linear_outputs) return;
    int rows = w->rows, cut1 = rows / 3, cut2 = rows - rows / 4;
    float *got = malloc(sizeof *got * (size_t)n * rows);
    memset(got, 0xff, sizeof *got * (size_t)n * rows);
    k->linear_outputs(int8, got, x, w, bias, n, 0, cut1, scratch);
    k->linear_outputs(int8, got, x, w, bias, n, cut1, cut2, scratch);
    k->linear_outputs(int8, got, x, w, bias, n, cut2, rows, scratch);
    CHECK(!memcmp(got, y, sizeof *got * (size_t)n * rows),
          "%s linear_outputs (int8 %d) %s n=%d rows=%d cols=%d in three ranges: the whole call's bits", k->name, int8,
          sdfed_type_name(w->type), n, rows, w->cols);
    if (int8 && k->int8_outputs && w->type == SDFED_TYPE_Q8_0) {
        /* the pool's two steps: x's rows quantised in two parts, the last first, then three ranges of outputs */
        void *quantised = malloc(k->int8_rows_bytes(n, w->cols));
        memset(got, 0xff, sizeof *got * (size_t)n * rows);
        k->int8_quantise_rows(quantised, x, n, w->cols, n / 3, n);
        k->int8_quantise_rows(quantised, x, n, w->cols, 0, n / 3);
        k->int8_outputs(got, quantised, w, bias, n, cut2, rows, scratch);
        k->int8_outputs(got, quantised, w, bias, n, 0, cut1, scratch);
        k->int8_outputs(got, quantised, w, bias, n, cut1, cut2, scratch);
        CHECK(!memcmp(got, y, sizeof *got * (size_t)n * rows),
              "%s int8_quantise_rows and int8_outputs n=%d rows=%d cols=%d: the whole call's bits", k->name, n, rows,
              w->cols);
        free(quantised);
    }
    free(got);
}

/* C (m, n) = alpha * the in-order FMA chains of op(A) and op(B) (+ beta *
 * C): the gemm of backends with fma_chains */
static void fma_chain_gemm(int ta, int tb, int m, int n, int kk, float alpha, const float *a, int lda, const float *b,
                           int ldb, float beta, float *c, int ldc) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int q = 0; q < kk; q++)
                acc = fmaf(ta ? a[(size_t)q * lda + i] : a[(size_t)i * lda + q],
                           tb ? b[(size_t)j * ldb + q] : b[(size_t)q * ldb + j], acc);
            float *c_ij = c + (size_t)i * ldc + j;
            *c_ij = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c_ij;
        }
}

static void test_linear(const sdfed_kernels *k, int type, int n, int rows, int cols) {
    float *dense = malloc(sizeof *dense * (size_t)rows * cols);
    void *data = make_weight(type, rows, cols, dense);
    sdfed_weight w = {.type = type, .rows = rows, .cols = cols, .data = data};
    float *x = random_floats((size_t)n * cols), *bias = random_floats((size_t)rows);
    float *y = malloc(sizeof *y * (size_t)n * rows), *y_ref = malloc(sizeof *y * (size_t)n * rows);
    double *bound = malloc(sizeof *bound * (size_t)n * (rows > cols ? rows : cols));
    float *scratch = malloc(sizeof *scratch * sdfed_kernel_scratch_floats(k, cols));
    sdfed_kernels_portable.linear(y_ref, x, &w, bias, n, scratch);
    k->linear(y, x, &w, bias, n, scratch);
    for (int i = 0; i < n; i++)
        for (int r = 0; r < rows; r++) {
            double s = fabs(bias[r]);
            for (int c = 0; c < cols; c++) s += fabs((double)x[i * cols + c] * dense[(size_t)r * cols + c]);
            bound[i * rows + r] = 2.0 * (cols + 1) * FLT_EPSILON * s + 1e-30;
        }
    double ratio = worst_ratio(y, y_ref, bound, (size_t)n * rows);
    CHECK(ratio <= 1.0, "%s linear %s n=%d rows=%d cols=%d: error %.2f x bound", k->name, sdfed_type_name(type), n,
          rows, cols, ratio);
    if (k->fma_chains && k->fma_chains()) {
        fma_chain_linear(y_ref, x, dense, bias, n, rows, cols);
        CHECK(!memcmp(y, y_ref, sizeof *y * (size_t)n * rows),
              "%s linear %s n=%d rows=%d cols=%d: the FMA chain's bits", k->name, sdfed_type_name(type), n, rows, cols);
    }
    check_outputs_in_ranges(k, 0, y, x, &w, bias, n, scratch);
    if (type != SDFED_TYPE_Q8_0) { /* linear_int8 on other weights is the backend's linear */
        k->linear_int8(y_ref, x, &w, bias, n, scratch);
        CHECK(!memcmp(y, y_ref, sizeof *y * (size_t)n * rows),
              "%s linear_int8 on %s weights n=%d rows=%d cols=%d: linear's bits", k->name, sdfed_type_name(type), n,
              rows, cols);
    }

    /* backward: dx += dy W, starting from a non-zero dx */
    float *dy = random_floats((size_t)n * rows), *dx = random_floats((size_t)n * cols);
    float *dx_ref = malloc(sizeof *dx_ref * (size_t)n * cols);
    memcpy(dx_ref, dx, sizeof *dx * (size_t)n * cols);
    sdfed_kernels_portable.linear_backward(dx_ref, dy, &w, n, scratch);
    for (int i = 0; i < n; i++)
        for (int c = 0; c < cols; c++) {
            double s = fabs(dx[i * cols + c]);
            for (int r = 0; r < rows; r++) s += fabs((double)dy[i * rows + r] * dense[(size_t)r * cols + c]);
            bound[i * cols + c] = 2.0 * (rows + 1) * FLT_EPSILON * s + 1e-30;
        }
    float *dx_chain = malloc(sizeof *dx_chain * (size_t)n * cols);
    memcpy(dx_chain, dx, sizeof *dx * (size_t)n * cols);
    k->linear_backward(dx, dy, &w, n, scratch);
    ratio = worst_ratio(dx, dx_ref, bound, (size_t)n * cols);
    CHECK(ratio <= 1.0, "%s linear_backward %s n=%d rows=%d cols=%d: error %.2f x bound", k->name,
          sdfed_type_name(type), n, rows, cols, ratio);
    if (k->fma_chains && k->fma_chains()) { /* dx + the chains over all rows (F32) or each panel in turn */
        int panel_rows = type == SDFED_TYPE_F32 ? rows : sdfed_fma_backward_panel_rows(cols);
        for (int r0 = 0; r0 < rows; r0 += panel_rows) {
            int count = rows - r0 < panel_rows ? rows - r0 : panel_rows;
            fma_chain_gemm(0, 0, n, cols, count, 1.0f, dy + r0, rows, dense + (size_t)r0 * cols, cols, 1.0f, dx_chain,
                           cols);
        }
        CHECK(!memcmp(dx, dx_chain, sizeof *dx * (size_t)n * cols),
              "%s linear_backward %s n=%d rows=%d cols=%d: the FMA chains' bits (panels of %d rows)", k->name,
              sdfed_type_name(type), n, rows, cols, panel_rows);
    } else { /* a backend without the FMA chains runs the portable definition's (SIMD128's tile) */
        CHECK(!memcmp(dx, dx_ref, sizeof *dx * (size_t)n * cols),
              "%s linear_backward %s n=%d rows=%d cols=%d: the portable definition's bits", k->name,
              sdfed_type_name(type), n, rows, cols);
    }
    free(dx_chain);
    free(dense);
    free(data);
    free(x);
    free(bias);
    free(y);
    free(y_ref);
    free(bound);
    free(scratch);
    free(dy);
    free(dx);
    free(dx_ref);
}

/* The activation rule: d = max|x| / 127, |q| <= 127, x within half a step
 * of d q, and an all-zero block gives zeros. */
static void test_q8_0_activations(void) {
    enum { COLS = 4 * SDFED_Q8_0_BLOCK };
    float x[COLS];
    signed char q[COLS];
    float d[COLS / SDFED_Q8_0_BLOCK];
    for (int c = 0; c < COLS; c++) x[c] = c < SDFED_Q8_0_BLOCK ? 0.0f : frand() * (float)(c % 7 + 1);
    x[40] = -9.0f; /* a block whose largest value is negative */
    sdfed_q8_0_activations(x, COLS, q, d);
    int ok = d[0] == 0.0f;
    for (int c = 0; c < COLS; c++) {
        const float *x_b = x + c / SDFED_Q8_0_BLOCK * SDFED_Q8_0_BLOCK;
        float amax = 0.0f;
        for (int i = 0; i < SDFED_Q8_0_BLOCK; i++) amax = fmaxf(amax, fabsf(x_b[i]));
        float d_b = d[c / SDFED_Q8_0_BLOCK];
        ok &= d_b == amax / 127.0f && q[c] >= -127;
        ok &= fabs((double)x[c] - (double)d_b * q[c]) <= 0.5 * d_b * (1 + 1e-5);
    }
    CHECK(ok && q[40] == -127, "q8_0 activations: scale max|x| / 127, quants within half a step");
}

/* A Q8_0 weight matrix and inputs for linear_int8; dense gets W's values. */
typedef struct int8_case {
    int n, rows, cols;
    float *dense, *x, *bias, *want;
    void *data;
    sdfed_weight w;
} int8_case;

static int8_case int8_case_make(int n, int rows, int cols) {
    int8_case t = {.n = n, .rows = rows, .cols = cols};
    t.dense = malloc(sizeof *t.dense * (size_t)rows * cols);
    t.data = make_weight(SDFED_TYPE_Q8_0, rows, cols, t.dense);
    /* a quant of -128, which ggml's quantiser never writes but a file may
     * hold (relaxed SIMD's path packs its complement ~w = 127) */
    sdfed_block_q8_0 *last_row = (sdfed_block_q8_0 *)t.data + (size_t)(rows - 1) * (cols / SDFED_Q8_0_BLOCK);
    last_row->qs[0] = -128;
    t.dense[(size_t)(rows - 1) * cols] = -128.0f * sdfed_f16_to_f32(last_row->d);
    t.w = (sdfed_weight){.type = SDFED_TYPE_Q8_0, .rows = rows, .cols = cols, .data = t.data};
    t.x = random_floats((size_t)n * cols);
    for (int c = 0; c < cols; c++) t.x[c] *= 1e-3f * (float)(c % 5); /* small and zero blocks in the first row */
    if (n > 1) { /* ties in the second row's first block: its scale 1, x / d = c - 15.5, rounded to even */
        for (int c = 0; c < SDFED_Q8_0_BLOCK - 1; c++) t.x[cols + c] = (float)c - 15.5f;
        t.x[cols + SDFED_Q8_0_BLOCK - 1] = -127.0f;
    }
    t.bias = random_floats((size_t)rows);
    t.want = malloc(sizeof *t.want * (size_t)n * rows);
    float *scratch = malloc(sizeof *scratch * sdfed_kernel_scratch_floats(&sdfed_kernels_portable, cols));
    sdfed_kernels_portable.linear_int8(t.want, t.x, &t.w, t.bias, n, scratch);
    free(scratch);
    return t;
}

static void int8_case_free(int8_case *t) {
    free(t->dense);
    free(t->data);
    free(t->x);
    free(t->bias);
    free(t->want);
}

/* The definition against the f32 product with the dequantised weights:
 * quantising x moves each x_c by at most d_x / 2, so |y8 - y| <= sum_c
 * |w_c| d_x,b(c) / 2, plus float rounding of both sums. */
static void test_int8_definition(int n, int rows, int cols) {
    int8_case t = int8_case_make(n, rows, cols);
    int blocks = cols / SDFED_Q8_0_BLOCK, ok = 1;
    signed char *q = malloc((size_t)cols);
    float *d = malloc(sizeof *d * (size_t)blocks);
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        const float *x_i = t.x + (size_t)i * cols;
        sdfed_q8_0_activations(x_i, cols, q, d);
        for (int r = 0; r < rows; r++) {
            const float *w_r = t.dense + (size_t)r * cols;
            double exact = t.bias[r], bound = 0.0, mag = fabs(t.bias[r]);
            for (int c = 0; c < cols; c++) {
                exact += (double)x_i[c] * w_r[c];
                bound += 0.5 * d[c / SDFED_Q8_0_BLOCK] * fabs(w_r[c]);
                mag += fabs((double)x_i[c] * w_r[c]);
            }
            bound += 2.0 * (cols + 1) * FLT_EPSILON * (mag + bound) + 1e-30;
            double ratio = fabs(t.want[(size_t)i * rows + r] - exact) / bound;
            worst = fmax(worst, ratio);
            ok &= ratio <= 1.0;
        }
    }
    CHECK(ok, "int8 definition n=%d rows=%d cols=%d: within the quantisation bound of the f32 product (%.2f x bound)",
          n, rows, cols, worst);
    free(q);
    free(d);
    int8_case_free(&t);
}

/* linear_int8 of backend k gives the definition's bits. */
static void test_int8_backend(const sdfed_kernels *k, int n, int rows, int cols) {
    int8_case t = int8_case_make(n, rows, cols);
    float *got = malloc(sizeof *got * (size_t)n * rows);
    float *scratch = malloc(sizeof *scratch * sdfed_kernel_scratch_floats(k, cols));
    memset(got, 0xff, sizeof *got * (size_t)n * rows);
    k->linear_int8(got, t.x, &t.w, t.bias, n, scratch);
    CHECK(!memcmp(got, t.want, sizeof *got * (size_t)n * rows),
          "%s linear_int8 n=%d rows=%d cols=%d: the definition's bits", k->name, n, rows, cols);
    check_outputs_in_ranges(k, 1, t.want, t.x, &t.w, t.bias, n, scratch);
    /* without a bias too */
    float *no_bias = malloc(sizeof *no_bias * (size_t)n * rows);
    sdfed_kernels_portable.linear_int8(no_bias, t.x, &t.w, NULL, n, scratch);
    k->linear_int8(got, t.x, &t.w, NULL, n, scratch);
    CHECK(!memcmp(got, no_bias, sizeof *got * (size_t)n * rows), "%s linear_int8 without bias n=%d rows=%d cols=%d",
          k->name, n, rows, cols);
    free(got);
    free(scratch);
    free(no_bias);
    int8_case_free(&t);
}

#if defined(SDFED_HAVE_NATIVE_KERNELS)
/* The native integer kernel on every instruction set this CPU runs. */
static void test_int8_isas(int n, int rows, int cols) {
    int8_case t = int8_case_make(n, rows, cols);
    float *got = malloc(sizeof *got * (size_t)n * rows);
    float *scratch = malloc(sizeof *scratch * SDFED_INT8_SCRATCH_ROWS * (size_t)cols);
    /* the weight packed whole beforehand (over NaN bytes, which no output may read) */
    size_t packed_bytes = sdfed_int8_packed_bytes(&t.w);
    sdfed_weight packed = t.w;
    packed.packed = malloc(packed_bytes);
    packed.packed_int8 = 1;
    memset(packed.packed, 0xff, packed_bytes);
    sdfed_int8_pack(&t.w, packed.packed);
    for (int isa = 0; isa <= sdfed_isa_best_int8(); isa++)
        for (int once = 0; once < 2; once++) {
            const sdfed_weight *w = once ? &packed : &t.w;
            memset(got, 0xff, sizeof *got * (size_t)n * rows);
            /* in three ranges of outputs, the first and last not whole tiles */
            int cut1 = rows / 3, cut2 = rows - rows / 4;
            sdfed_linear_int8(isa, got, t.x, w, t.bias, n, 0, cut1, scratch);
            sdfed_linear_int8(isa, got, t.x, w, t.bias, n, cut1, cut2, scratch);
            sdfed_linear_int8(isa, got, t.x, w, t.bias, n, cut2, rows, scratch);
            CHECK(!memcmp(got, t.want, sizeof *got * (size_t)n * rows),
                  "int8 linear on %s, weights packed %s, n=%d rows=%d cols=%d, in three ranges of outputs: the "
                  "definition's bits",
                  sdfed_isa_name(isa), once ? "once" : "per call", n, rows, cols);
            /* in two steps: x's rows quantised in two parts (the last pads them), the outputs in three ranges */
            size_t rows_bytes = sdfed_int8_rows_bytes(isa, n, cols);
            unsigned char *quantised = malloc(rows_bytes);
            memset(quantised, 0xff, rows_bytes);
            memset(got, 0xff, sizeof *got * (size_t)n * rows);
            sdfed_int8_quantise_rows(isa, quantised, t.x, n, cols, n / 3, n);
            sdfed_int8_quantise_rows(isa, quantised, t.x, n, cols, 0, n / 3);
            sdfed_linear_int8_rows(isa, got, quantised, w, t.bias, n, cut2, rows, scratch);
            sdfed_linear_int8_rows(isa, got, quantised, w, t.bias, n, 0, cut1, scratch);
            sdfed_linear_int8_rows(isa, got, quantised, w, t.bias, n, cut1, cut2, scratch);
            CHECK(!memcmp(got, t.want, sizeof *got * (size_t)n * rows),
                  "int8 linear on %s in two steps, weights packed %s, n=%d rows=%d cols=%d: the definition's bits",
                  sdfed_isa_name(isa), once ? "once" : "per call", n, rows, cols);
            free(quantised);
        }
    free(got);
    free(scratch);
    free(packed.packed);
    int8_case_free(&t);
}
#endif

#if defined(SDFED_HAVE_NATIVE_KERNELS)
/* counts each item of [begin, end) once, after some work (so that a job
 * lasts long enough for the workers to wake and take part) */
static void count_items(void *ctx, int begin, int end) {
    int *counts = ctx;
    for (int i = begin; i < end; i++) {
        for (volatile int work = 0; work < 2000; work++) {
        }
        __atomic_add_fetch(&counts[i], 1, __ATOMIC_RELAXED);
    }
}

/* The pool's jobs end when their items are run, whichever threads ran them
 * (a worker that claimed none is not waited for): over many small jobs on
 * more threads than this machine may have cores, every item of a job is run
 * once by the time the job returns, and none of an ended job is run again
 * by a worker late to it. */
static void test_pool_jobs(void) {
    enum { JOBS = 3000, ITEMS = 48 };
    const sdfed_kernels *split = sdfed_kernels_threaded(sdfed_kernels_default(), 4, NULL);
    static int counts[JOBS][ITEMS];
    int unfinished = 0;
    for (int j = 0; j < JOBS; j++) {
        split->parallel(ITEMS, 1e6, count_items, counts[j]); /* 1e6 multiply-adds an item: worth splitting */
        for (int i = 0; i < ITEMS; i++) unfinished += __atomic_load_n(&counts[j][i], __ATOMIC_RELAXED) != 1;
    }
    CHECK(unfinished == 0, "%d items of %d jobs were not run exactly once when their job returned", unfinished, JOBS);
    int again = 0;
    for (int j = 0; j < JOBS; j++)
        for (int i = 0; i < ITEMS; i++) again += __atomic_load_n(&counts[j][i], __ATOMIC_RELAXED) != 1;
    CHECK(again == 0, "%d items of ended jobs were run again", again);
    CHECK(sdfed_kernels_thread_count() >= 2, "the pool has %d threads", sdfed_kernels_thread_count());
}
#endif

#if defined(SDFED_HAVE_NATIVE_KERNELS) && defined(__linux__)
/* The kernel's flags of the mapping that holds address p (/proc/self/smaps'
 * VmFlags line, e.g. "rd wr mr mw me ac hg"), into flags; 0 if not found. */
static int mapping_flags(const void *p, char *flags, size_t size) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return 0;
    char line[512];
    int holds = 0, found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        uintptr_t start, end;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &start, &end) == 2)
            holds = (uintptr_t)p >= start && (uintptr_t)p < end;
        else if (holds && !strncmp(line, "VmFlags:", 8)) {
            size_t n = strcspn(line + 8, "\n");
            n = n < size ? n : size - 1;
            memcpy(flags, line + 8, n);
            flags[n] = '\0';
            found = 1;
        }
    }
    fclose(f);
    return found;
}

/* The native pack's memory: f32 panels of 2 MB and more marked for
 * transparent huge pages (the kernel's "hg" flag, set by madvise whether
 * or not it has huge pages free; not checked on a kernel without them),
 * Q8_0's integer panels not (kernels_native.c's packed_memory). */
static void test_packed_pages(void) {
    const size_t huge_page = (size_t)2 << 20;
    const sdfed_kernels *native = sdfed_kernels_by_name("native");
    float *dense = malloc(sizeof *dense * 2048 * 1024);
    sdfed_weight f32 = {.type = SDFED_TYPE_F32, .rows = 1024, .cols = 1024},
                 q8 = {.type = SDFED_TYPE_Q8_0, .rows = 2048, .cols = 1024};
    f32.data = make_weight(f32.type, f32.rows, f32.cols, dense);
    q8.data = make_weight(q8.type, q8.rows, q8.cols, dense);
    size_t f32_bytes = native->pack(&f32, 0), q8_bytes = native->pack(&q8, 1);
    char f32_flags[256] = "", q8_flags[256] = "";
    FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!thp || !mapping_flags(f32.packed, f32_flags, sizeof f32_flags) ||
        !mapping_flags(q8.packed, q8_flags, sizeof q8_flags))
        printf("packed pages: a kernel without transparent huge pages, or no /proc/self/smaps (not checked)\n");
    else {
        CHECK(f32_bytes >= huge_page && (uintptr_t)f32.packed % huge_page == 0 && strstr(f32_flags, " hg"),
              "f32 panels (%zu bytes) 2 MB aligned and marked for huge pages: %p, flags%s", f32_bytes, f32.packed,
              f32_flags);
        CHECK(q8_bytes >= huge_page && q8.packed_int8 && !strstr(q8_flags, " hg"),
              "Q8_0's integer panels (%zu bytes) not marked for huge pages: flags%s", q8_bytes, q8_flags);
    }
    if (thp) fclose(thp);
    sdfed_weight_unpack(&f32);
    sdfed_weight_unpack(&q8);
    free((void *)f32.data);
    free((void *)q8.data);
    free(dense);
}
#endif

/* A backend's pack: the weight packed once by `packer` for linear (int8
 * 0) or linear_int8 (int8 1) gives backend k (the packer, or another: the
 * page can change linear_int8's path after packing) the bits both give it
 * unpacked (a layout not its own is ignored), and sdfed_weight_unpack
 * drops it. */
static void test_pack(const sdfed_kernels *packer, const sdfed_kernels *k, int type, int int8, int n, int rows,
                      int cols) {
    float *dense = malloc(sizeof *dense * (size_t)rows * cols);
    sdfed_weight w = {.type = type, .rows = rows, .cols = cols, .data = make_weight(type, rows, cols, dense)};
    float *x = random_floats((size_t)n * cols), *bias = random_floats((size_t)rows);
    size_t outputs = (size_t)n * rows;
    float *want = malloc(sizeof *want * 2 * outputs), *got = malloc(sizeof *got * 2 * outputs);
    float *scratch = malloc(sizeof *scratch * sdfed_kernel_scratch_floats(k, cols));
    k->linear(want, x, &w, bias, n, scratch);
    k->linear_int8(want + outputs, x, &w, bias, n, scratch);
    size_t bytes = packer->pack(&w, int8);
    memset(got, 0xff, sizeof *got * 2 * outputs);
    k->linear(got, x, &w, bias, n, scratch);
    k->linear_int8(got + outputs, x, &w, bias, n, scratch);
    /* every backend packs for linear_int8; SIMD128's have no layout of their own for linear */
    int for_int8 = int8 && type == SDFED_TYPE_Q8_0, may_decline = !for_int8 && !strncmp(packer->name, "simd128", 7);
    CHECK((bytes > 0 || may_decline) && !w.packed == !bytes && w.packed_int8 == (bytes && for_int8) &&
              !memcmp(got, want, sizeof *got * 2 * outputs),
          "%s packed %s for %s (%zu bytes), n=%d rows=%d cols=%d: %s's linear and linear_int8 give the per-call bits",
          packer->name, sdfed_type_name(type), int8 ? "linear_int8" : "linear", bytes, n, rows, cols, k->name);
    sdfed_weight_unpack(&w);
    CHECK(!w.packed && !w.packed_int8, "%s: unpacked", packer->name);
    free(dense);
    free((void *)w.data);
    free(x);
    free(bias);
    free(want);
    free(got);
    free(scratch);
}

static void test_gemm(const sdfed_kernels *k, int ta, int tb, int m, int n, int kk, float alpha, float beta) {
    /* leading dimensions larger than the rows, to test strides */
    int lda = (ta ? m : kk) + 3, ldb = (tb ? kk : n) + 2, ldc = n + 1;
    float *a = random_floats((size_t)(ta ? kk : m) * lda), *b = random_floats((size_t)(tb ? n : kk) * ldb);
    float *c = random_floats((size_t)m * ldc), *c_ref = malloc(sizeof *c * (size_t)m * ldc);
    double *bound = malloc(sizeof *bound * (size_t)m * ldc);
    memcpy(c_ref, c, sizeof *c * (size_t)m * ldc);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < ldc; j++) {
            double s = j < n ? fabs((double)beta * c[i * ldc + j]) : 0.0;
            for (int p = 0; p < kk && j < n; p++)
                s += fabs((double)alpha * (ta ? a[p * lda + i] : a[i * lda + p]) *
                          (tb ? b[j * ldb + p] : b[p * ldb + j]));
            bound[i * ldc + j] = 2.0 * (kk + 2) * FLT_EPSILON * s + 1e-30;
        }
    sdfed_kernels_portable.gemm(ta, tb, m, n, kk, alpha, a, lda, b, ldb, beta, c_ref, ldc);
    float *c_chain = malloc(sizeof *c * (size_t)m * ldc);
    memcpy(c_chain, c, sizeof *c * (size_t)m * ldc);
    k->gemm(ta, tb, m, n, kk, alpha, a, lda, b, ldb, beta, c, ldc);
    double ratio = worst_ratio(c, c_ref, bound, (size_t)m * ldc);
    CHECK(ratio <= 1.0, "%s gemm ta=%d tb=%d m=%d n=%d k=%d alpha=%g beta=%g: error %.2f x bound", k->name, ta, tb, m,
          n, kk, alpha, beta, ratio);
    if (k->fma_chains && k->fma_chains()) {
        fma_chain_gemm(ta, tb, m, n, kk, alpha, a, lda, b, ldb, beta, c_chain, ldc);
        CHECK(!memcmp(c, c_chain, sizeof *c * (size_t)m * ldc),
              "%s gemm ta=%d tb=%d m=%d n=%d k=%d alpha=%g beta=%g: the FMA chains' bits (C's padding untouched)",
              k->name, ta, tb, m, n, kk, alpha, beta);
    } else { /* a backend without the FMA chains runs the portable definition's (SIMD128's tile) */
        CHECK(!memcmp(c, c_ref, sizeof *c * (size_t)m * ldc),
              "%s gemm ta=%d tb=%d m=%d n=%d k=%d alpha=%g beta=%g: the portable definition's bits", k->name, ta, tb, m,
              n, kk, alpha, beta);
    }
    free(c_chain);
    free(a);
    free(b);
    free(c);
    free(c_ref);
    free(bound);
}

/* The portable gemm against a double-precision product, so the reference
 * itself is checked. */
static void test_portable_gemm_exactness(void) {
    int m = 7, n = 9, kk = 13;
    float *a = random_floats((size_t)m * kk), *b = random_floats((size_t)kk * n), *c = calloc((size_t)m * n, 4);
    sdfed_kernels_portable.gemm(0, 0, m, n, kk, 1.0f, a, kk, b, n, 0.0f, c, n);
    double worst = 0.0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0.0, mag = 0.0;
            for (int p = 0; p < kk; p++) {
                s += (double)a[i * kk + p] * b[p * n + j];
                mag += fabs((double)a[i * kk + p] * b[p * n + j]);
            }
            worst = fmax(worst, fabs(c[i * n + j] - s) / (2.0 * kk * FLT_EPSILON * mag));
        }
    CHECK(worst <= 1.0, "portable gemm within the rounding bound of the exact product (%.2f)", worst);
    free(a);
    free(b);
    free(c);
}

#if defined(SDFED_HAVE_NATIVE_KERNELS)
/* The native linear layer on every instruction set this CPU runs gives, bit
 * for bit, the in-order FMA chain it promises (linear_fma.h), for shapes
 * that leave partial tiles and panels in both directions. */
static void test_linear_fma_exact(int type, int n, int rows, int cols) {
    float *dense = malloc(sizeof *dense * (size_t)rows * cols);
    void *data = make_weight(type, rows, cols, dense);
    sdfed_weight w = {.type = type, .rows = rows, .cols = cols, .data = data};
    float *x = random_floats((size_t)n * cols), *bias = random_floats((size_t)rows);
    float *want = malloc(sizeof *want * (size_t)n * rows), *got = malloc(sizeof *got * (size_t)n * rows);
    float *scratch = malloc(sizeof *scratch * SDFED_FMA_SCRATCH_ROWS * (size_t)cols);
    fma_chain_linear(want, x, dense, bias, n, rows, cols);
    /* the weight packed whole beforehand (over NaNs, which no output may read) */
    size_t packed_floats = sdfed_fma_packed_floats(&w);
    sdfed_weight packed = w;
    packed.packed = malloc(sizeof(float) * packed_floats);
    memset(packed.packed, 0xff, sizeof(float) * packed_floats);
    sdfed_fma_pack(&w, packed.packed, scratch);
    for (int isa = 0; isa <= sdfed_isa_best_fma(); isa++)
        for (int once = 0; once < 2; once++) {
            const sdfed_weight *w_isa = once ? &packed : &w;
            memset(got, 0xff, sizeof *got * (size_t)n * rows);
            /* in three ranges of outputs, the first and last not whole tiles */
            int cut1 = rows / 3, cut2 = rows - rows / 4;
            sdfed_linear_fma(isa, got, x, w_isa, bias, n, 0, cut1, scratch);
            sdfed_linear_fma(isa, got, x, w_isa, bias, n, cut1, cut2, scratch);
            sdfed_linear_fma(isa, got, x, w_isa, bias, n, cut2, rows, scratch);
            CHECK(!memcmp(got, want, sizeof *got * (size_t)n * rows),
                  "fma linear on %s, %s weights packed %s, n=%d rows=%d cols=%d, in three ranges of outputs: the FMA "
                  "chain's bits",
                  sdfed_isa_name(isa), sdfed_type_name(type), once ? "once" : "per call", n, rows, cols);
        }
    free(dense);
    free(data);
    free(x);
    free(bias);
    free(want);
    free(got);
    free(scratch);
    free(packed.packed);
}

/* The native product on every instruction set this CPU runs gives, bit for
 * bit, the in-order FMA chain linear_fma.h defines, for both transposes,
 * leading dimensions wider than the rows, partial tiles, and beta 0 over a
 * C of NaNs (which it must not read). */
static void test_gemm_fma_exact(int ta, int tb, int m, int n, int kk, float alpha, float beta) {
    int lda = (ta ? m : kk) + (m % 2), ldb = (tb ? kk : n) + 3, ldc = n + 1;
    float *a = random_floats((size_t)(ta ? kk : m) * lda), *b = random_floats((size_t)(tb ? n : kk) * ldb);
    float *c0 = random_floats((size_t)m * ldc), *want = malloc(sizeof *want * (size_t)m * ldc),
          *got = malloc(sizeof *got * (size_t)m * ldc);
    if (beta == 0.0f) memset(c0, 0xff, sizeof *c0 * (size_t)m * ldc);
    memcpy(want, c0, sizeof *want * (size_t)m * ldc);
    fma_chain_gemm(ta, tb, m, n, kk, alpha, a, lda, b, ldb, beta, want, ldc);
    for (int isa = 0; isa <= sdfed_isa_best_fma(); isa++) {
        memcpy(got, c0, sizeof *got * (size_t)m * ldc);
        sdfed_gemm_fma(isa, ta, tb, m, n, kk, alpha, a, lda, b, ldb, beta, got, ldc);
        CHECK(!memcmp(got, want, sizeof *got * (size_t)m * ldc),
              "fma gemm on %s ta=%d tb=%d m=%d n=%d k=%d alpha=%g beta=%g: the FMA chain's bits (and C's padding "
              "untouched)",
              sdfed_isa_name(isa), ta, tb, m, n, kk, alpha, beta);
    }
    free(a);
    free(b);
    free(c0);
    free(want);
    free(got);
}
#endif

int main(void) {
    srand(4);
    const sdfed_kernels *const *all = sdfed_kernels_all();
    int n_backends = 0;
    for (const sdfed_kernels *const *k = all; *k; k++) n_backends++;
    printf("backends:");
    for (const sdfed_kernels *const *k = all; *k; k++) printf(" %s", (*k)->name);
    printf(" (default %s)\n", sdfed_kernels_default()->name);
#if defined(SDFED_KERNELS_SIMD128_RELAXED)
    /* relaxed SIMD where the engine runs it (Chromium), simd128 elsewhere */
    const sdfed_kernels *relaxed = sdfed_kernels_by_name("simd128-relaxed");
    int relaxed_dot = relaxed && relaxed->relaxed_dot();
    printf("relaxed SIMD: %s%s%s%s%s\n", relaxed ? "runs here" : "not here (or turned off)",
           relaxed && relaxed->fma_chains() ? ", its linear the FMA chains (fused multiply-add)" : "",
           relaxed_dot ? ", linear_int8 on its 8-bit dot (" : "", relaxed_dot ? sdfed_kernels_relaxed_dot_form() : "",
           relaxed_dot ? ")" : "");
    CHECK(sdfed_kernels_default() == (relaxed ? relaxed : sdfed_kernels_by_name("simd128")),
          "the browser build defaults to simd128-relaxed where it runs, else simd128");
#elif defined(SDFED_KERNELS_SIMD128)
    CHECK(!strcmp(sdfed_kernels_default()->name, "simd128"), "the wasm SIMD build defaults to simd128");
#elif defined(SDFED_HAVE_NATIVE_KERNELS)
    CHECK(!strcmp(sdfed_kernels_default()->name, "native"), "the native build defaults to native");
#endif
    CHECK(n_backends >= 1 && all[0] == &sdfed_kernels_portable, "portable backend first");
    CHECK(sdfed_kernels_by_name("portable") == &sdfed_kernels_portable && !sdfed_kernels_by_name("nope"), "by name");
    if (check_case("portable_gemm_exactness")) test_portable_gemm_exactness();
#if defined(SDFED_HAVE_NATIVE_KERNELS)
    if (check_case("fma")) {
        printf("fma linear: best instruction set here %s\n", sdfed_isa_name(sdfed_isa_best_fma()));
        /* (n, rows, cols); 1024 columns: rows 4 KB apart, fewer to a tile where the L1 cache has few ways */
        static const int fma_shapes[][3] = {{1, 1, 32},    {5, 17, 64},   {13, 33, 96},
                                            {25, 48, 128}, {40, 100, 32}, {14, 35, 1024}};
        for (size_t s = 0; s < sizeof fma_shapes / sizeof fma_shapes[0]; s++) {
            test_linear_fma_exact(SDFED_TYPE_F32, fma_shapes[s][0], fma_shapes[s][1], fma_shapes[s][2]);
            test_linear_fma_exact(SDFED_TYPE_Q8_0, fma_shapes[s][0], fma_shapes[s][1], fma_shapes[s][2]);
        }
        test_linear_fma_exact(SDFED_TYPE_F16, 7, 19, 13);
        /* x three times the 3/4 of this CPU's L2 that the linear takes at a time, and a partial tile: chunks */
        test_linear_fma_exact(SDFED_TYPE_F32, (int)(sdfed_cpu_l2_bytes() / 4 * 3 * 3 / (1000 * sizeof(float))) + 7, 21,
                              1000);
        for (int trial = 0; trial < 48; trial++) {
            int m = 1 + rand() % 30, n = 1 + rand() % 70, kk = rand() % 90;
            float beta = trial % 3 == 0 ? 0.0f : 1.0f;
            if (trial % 3 == 2) beta = frand();
            test_gemm_fma_exact(trial & 1, (trial >> 1) & 1, m, n, kk, trial % 4 == 0 ? 1.0f : frand(), beta);
        }
        test_gemm_fma_exact(0, 0, 24, 33, 64, 1.0f, 1.0f); /* op(A) read in place: whole tiles, lda == k */
    }
#if defined(__linux__)
    if (check_case("packed_pages")) test_packed_pages();
#endif
    if (check_case("pool_jobs")) test_pool_jobs();
    int best = sdfed_isa_best_int8();
    printf("int8 linear: tested on");
    for (int isa = 0; isa <= best; isa++) printf(" %s", sdfed_isa_name(isa));
    printf(best + 1 < SDFED_ISA_COUNT ? "; skipped (this CPU lacks them):" : "; none skipped");
    for (int isa = best + 1; isa < SDFED_ISA_COUNT; isa++) printf(" %s", sdfed_isa_name(isa));
    printf("\n");
#endif
    if (check_case("q8_0_activations")) test_q8_0_activations();
    if (check_case("int8")) {
        /* partial tiles, panels and chunks (264 tokens natively, 200 in wasm) in both directions */
        /* ... and rows of 25 blocks, an odd count past 16; and 3072 inputs, whose packed panels a tile spans
         * take 123 KB: the native tiles take them a group of tiles at a time (up to a quarter of L2, 2 MB on
         * the largest L2 of the CPUs we run on: 4 tiles), so 300 outputs are several groups, the cuts inside them */
        static const int int8_shapes[][3] = {{1, 1, 32},    {5, 17, 64},    {13, 33, 96},   {25, 48, 128},
                                             {40, 100, 32}, {7, 31, 160},   {271, 20, 64},  {250, 70, 256},
                                             {9, 40, 800},  {197, 96, 800}, {13, 300, 3072}};
#if defined(SDFED_HAVE_NATIVE_KERNELS)
        /* natively also split over the thread pool (the last shape is worth splitting: x quantised once by the
         * threads, the outputs claimed in groups) */
        const sdfed_kernels *split = sdfed_kernels_threaded(sdfed_kernels_default(), 2, NULL);
#endif
        for (size_t s = 0; s < sizeof int8_shapes / sizeof int8_shapes[0]; s++) {
            int n = int8_shapes[s][0], rows = int8_shapes[s][1], cols = int8_shapes[s][2];
            test_int8_definition(n, rows, cols);
            for (const sdfed_kernels *const *k = all; *k; k++) test_int8_backend(*k, n, rows, cols);
#if defined(SDFED_HAVE_NATIVE_KERNELS)
            test_int8_isas(n, rows, cols);
            test_int8_backend(split, n, rows, cols);
#endif
        }
    }

    if (check_case("linear_and_gemm")) {
        static const int shapes[][3] = {{1, 1, 32},
                                        {1, 4, 32},
                                        {2, 5, 64},
                                        {3, 7, 96},
                                        {5, 64, 128},
                                        {7, 65, 160},
                                        {16, 130, 64},
                                        {33, 3, 224},
                                        {9, 129, 512},
                                        /* more tokens than the browser's FMA tile groups at a time (198): its
                                           chunks, the last with a group of 2 */
                                        {203, 14, 96},
                                        /* more rows than the native backend's 4 MB panel holds */
                                        {3, 300, 4096}};
        for (const sdfed_kernels *const *k = all; *k; k++) {
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                test_linear(*k, SDFED_TYPE_F32, shapes[s][0], shapes[s][1], shapes[s][2]);
                test_linear(*k, SDFED_TYPE_F16, shapes[s][0], shapes[s][1], shapes[s][2]);
                test_linear(*k, SDFED_TYPE_Q8_0, shapes[s][0], shapes[s][1], shapes[s][2]);
            }
            static const int packed_types[] = {SDFED_TYPE_F32, SDFED_TYPE_F16, SDFED_TYPE_Q8_0};
            for (size_t s = 0; (*k)->pack && s < sizeof shapes / sizeof shapes[0]; s++)
                for (int int8 = 0; int8 < 2; int8++)
                    for (size_t t = 0; t < sizeof packed_types / sizeof packed_types[0]; t++)
                        test_pack(*k, *k, packed_types[t], int8, shapes[s][0], shapes[s][1], shapes[s][2]);
            for (const sdfed_kernels *const *packer = all; *packer; packer++)
                if (*packer != *k && (*packer)->pack) test_pack(*packer, *k, SDFED_TYPE_Q8_0, 1, 9, 129, 512);
            /* f32 and f16 rows need not be multiples of 32 */
            test_linear(*k, SDFED_TYPE_F32, 3, 5, 7);
            test_linear(*k, SDFED_TYPE_F16, 4, 3, 13);
            for (int trial = 0; trial < 40; trial++) {
                int ta = trial & 1, tb = (trial >> 1) & 1;
                int m = 1 + rand() % 40, n = 1 + rand() % 40, kk = 1 + rand() % 70;
                float alpha = trial % 5 == 0 ? 1.0f : frand();
                float beta = trial % 3 == 0 ? 0.0f : 1.0f;
                if (trial % 3 == 2) beta = frand(); /* after alpha's: the same random inputs as ever */
                test_gemm(*k, ta, tb, m, n, kk, alpha, beta);
            }
        }
    }
    return check_report("test_kernels");
}
