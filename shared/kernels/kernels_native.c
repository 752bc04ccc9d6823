/* Native kernels, all the project's own, so that a product's bits depend
 * on its operands alone (never on the batch, the shapes around it or the
 * CPU): the forward linear layer and the general product on the FMA tiles
 * (linear_fma.h), the Q8_0 x Q8_0 linear on the integer tiles
 * (linear_int8.h). For linear_backward F32 weights are the product's B
 * directly; F16 and Q8_0 weights are dequantised a panel of rows at a time
 * (up to 4 MB: a whole ViT-B matrix, a quarter of a ViT-L MLP matrix) into
 * the caller's scratch and multiplied panel by panel (each panel's sum
 * added to dx in turn), so that no dequantised copy of the model exists.
 * pack gives the forward linears their panels of a whole weight once: f32
 * panels for linear (4 bytes a weight: 3.76x a Q8_0 matrix), the integer
 * layout for linear_int8 on Q8_0 (1.18x); the f32 panels in huge pages
 * where Linux gives them (packed_memory). */
#define _DEFAULT_SOURCE /* glibc's madvise and MADV_HUGEPAGE, beside POSIX */
#include "kernels/dispatch.h"
#if defined(SDFED_HAVE_NATIVE_KERNELS)
#include <stdlib.h>
#include <sys/mman.h>

#include "base/dtype.h"
#include "kernels/kernels.h"
#include "kernels/linear_fma.h"
#include "kernels/linear_int8.h"

/* Dequantises rows [r0, r0 + count) of w into panel (count, cols). */
static void dequantise_panel(const sdfed_weight *w, int r0, int count, float *panel) {
    size_t row_bytes = sdfed_type_row_bytes(w->type, (uint64_t)w->cols);
    for (int r = 0; r < count; r++)
        sdfed_row_to_f32(w->type, panel + (size_t)r * w->cols, (const char *)w->data + (size_t)(r0 + r) * row_bytes,
                         w->cols);
}

static void linear_outputs(int int8, float *y, const float *x, const sdfed_weight *w, const float *bias, int n,
                           int first, int end, float *scratch) {
    if (int8 && w->type == SDFED_TYPE_Q8_0)
        sdfed_linear_int8(sdfed_isa_best_int8(), y, x, w, bias, n, first, end, scratch);
    else
        sdfed_linear_fma(sdfed_isa_best_fma(), y, x, w, bias, n, first, end, scratch);
}

static void linear(float *y, const float *x, const sdfed_weight *w, const float *bias, int n, float *scratch) {
    linear_outputs(0, y, x, w, bias, n, 0, w->rows, scratch);
}

static size_t int8_rows_bytes(int n, int cols) { return sdfed_int8_rows_bytes(sdfed_isa_best_int8(), n, cols); }

static void int8_quantise_rows(void *rows, const float *x, int n, int cols, int begin, int end) {
    sdfed_int8_quantise_rows(sdfed_isa_best_int8(), rows, x, n, cols, begin, end);
}

static void int8_outputs(float *y, const void *rows, const sdfed_weight *w, const float *bias, int n, int first,
                         int end, float *scratch) {
    sdfed_linear_int8_rows(sdfed_isa_best_int8(), y, rows, w, bias, n, first, end, scratch);
}

static void linear_int8(float *y, const float *x, const sdfed_weight *w, const float *bias, int n, float *scratch) {
    linear_outputs(1, y, x, w, bias, n, 0, w->rows, scratch);
}

#define HUGE_PAGE_BYTES ((size_t)2 << 20)

/* Memory for `bytes` of packed panels (free() gives it back); with `huge`
 * where it spans whole 2 MB pages, aligned to them and marked for Linux's
 * transparent huge pages (Debian's default gives them to memory so marked
 * only). ViT-B/16's f32 panels in 4 KB pages ran its images at 1.6 to 5.4
 * images/s from one process to the next on one thread of Zen 5 (a quarter of
 * the processes under 2.7), in huge pages at 4.0 to 5.2, and loaded the
 * model faster. Its Q8_0 panels in huge pages ran 8% slower on one thread
 * (4% faster on two): they stay in 4 KB pages. */
static void *packed_memory(size_t bytes, int huge) {
    void *memory = NULL;
    huge = huge && bytes >= HUGE_PAGE_BYTES;
    if (posix_memalign(&memory, huge ? HUGE_PAGE_BYTES : 64, bytes)) return NULL;
#if defined(MADV_HUGEPAGE)
    if (huge) madvise(memory, bytes, MADV_HUGEPAGE); /* a hint: where refused, 4 KB pages as before */
#endif
    return memory;
}

/* Packs w whole for linear_outputs(int8, ...): the layout of the kernel
 * that call runs. */
static size_t pack(sdfed_weight *w, int int8) {
    int for_int8 = int8 && w->type == SDFED_TYPE_Q8_0;
    size_t bytes = for_int8 ? sdfed_int8_packed_bytes(w) : sizeof(float) * sdfed_fma_packed_floats(w);
    void *packed = packed_memory(bytes, !for_int8);
    float *scratch = for_int8 ? NULL : malloc(sizeof *scratch * SDFED_FMA_SCRATCH_ROWS * (size_t)w->cols);
    if (!packed || (!for_int8 && !scratch)) {
        free(packed);
        free(scratch);
        return 0;
    }
    if (for_int8)
        sdfed_int8_pack(w, packed);
    else
        sdfed_fma_pack(w, packed, scratch);
    free(scratch);
    w->packed = packed;
    w->packed_int8 = for_int8;
    return bytes;
}

static void linear_backward(float *dx, const float *dy, const sdfed_weight *w, int n, float *scratch) {
    // dy is (n, rows), W is (rows, cols), dx is (n, cols)
    int isa = sdfed_isa_best_fma();
    if (w->type == SDFED_TYPE_F32) {
        sdfed_gemm_fma(isa, 0, 0, n, w->cols, w->rows, 1.0f, dy, w->rows, w->data, w->cols, 1.0f, dx, w->cols);
        return;
    }
    int panel_rows = sdfed_fma_backward_panel_rows(w->cols);
    for (int r0 = 0; r0 < w->rows; r0 += panel_rows) {
        int count = w->rows - r0 < panel_rows ? w->rows - r0 : panel_rows;
        dequantise_panel(w, r0, count, scratch);
        sdfed_gemm_fma(isa, 0, 0, n, w->cols, count, 1.0f, dy + r0, w->rows, scratch, w->cols, 1.0f, dx, w->cols);
    }
}

static void gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda, const float *b,
                 int ldb, float beta, float *c, int ldc) {
    sdfed_gemm_fma(sdfed_isa_best_fma(), trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

_Static_assert(SDFED_FMA_PANEL_MIN_ROWS >= SDFED_FMA_SCRATCH_ROWS, "the scratch holds the FMA linear's rows");

/* linear is the FMA chain on every CPU (the tiles' promise) */
static int always(void) { return 1; }

const sdfed_kernels sdfed_kernels_native = {.name = "native",
                                            .fma_chains = always,
                                            .panel_floats = SDFED_FMA_PANEL_FLOATS,
                                            .min_panel_rows = SDFED_FMA_PANEL_MIN_ROWS,
                                            .int8_scratch_rows = SDFED_INT8_SCRATCH_ROWS,
                                            .linear = linear,
                                            .linear_int8 = linear_int8,
                                            .linear_outputs = linear_outputs,
                                            .int8_rows_bytes = int8_rows_bytes,
                                            .int8_quantise_rows = int8_quantise_rows,
                                            .int8_outputs = int8_outputs,
                                            .pack = pack,
                                            .linear_backward = linear_backward,
                                            .gemm = gemm};
#endif
