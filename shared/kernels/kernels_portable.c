/* Portable kernels: the reference implementation, plain loops (linear's
 * each output's sum over its inputs in order, 4 tokens' sums by 4 rows'
 * side by side; the others' innermost access contiguous). Weights of any
 * type are converted a row at a time; linear_int8 is the definition of the
 * Q8_0 x Q8_0 product (kernels.h) that the fast paths reproduce bit for bit. */
#include <math.h>
#include <string.h>

#include "base/dtype.h"
#include "kernels/kernels.h"

/* Converts row r of w into f32 (for F32 weights returns the row in place). */
static const float *weight_row(const sdfed_weight *w, int r, float *buf) {
    size_t row_bytes = sdfed_type_row_bytes(w->type, (uint64_t)w->cols);
    const void *src = (const char *)w->data + (size_t)r * row_bytes;
    if (w->type == SDFED_TYPE_F32) return src;
    sdfed_row_to_f32(w->type, buf, src, w->cols);
    return buf;
}

/* tokens and weight rows whose sums linear runs side by side: 16
 * independent chains, which the CPU overlaps (one chain alone waits for
 * each add: test_encoders took 2.3 times as long natively), each x and w
 * value read once for 4 products (under ASan every read is checked:
 * test_encoders_f32 took 113 s there on an Ice Lake Xeon with 8 tokens of
 * one row, 97 s with these) */
#define LINEAR_TOKENS 4
#define LINEAR_ROWS 4

static void linear(float *y, const float *x, const sdfed_weight *w, const float *bias, int n, float *scratch) {
    // x is (n, cols), W is (rows, cols), y is (n, rows); each output's sum over c in order
    int cols = w->cols;
    for (int r0 = 0; r0 < w->rows; r0 += LINEAR_ROWS) {
        /* past the last row, that row again (summed, not stored); each converted into its own scratch row */
        const float *w_r[LINEAR_ROWS];
        for (int k = 0; k < LINEAR_ROWS; k++)
            w_r[k] = weight_row(w, r0 + k < w->rows ? r0 + k : w->rows - 1, scratch + (size_t)k * cols);
        for (int i0 = 0; i0 < n; i0 += LINEAR_TOKENS) {
            /* past the last token, its row again (summed, not stored) */
            const float *x_t[LINEAR_TOKENS];
            for (int t = 0; t < LINEAR_TOKENS; t++) x_t[t] = x + (size_t)(i0 + t < n ? i0 + t : n - 1) * cols;
            float sum[LINEAR_TOKENS][LINEAR_ROWS] = {{0}};
            for (int c = 0; c < cols; c++) {
                float x_c[LINEAR_TOKENS], w_c[LINEAR_ROWS];
#pragma GCC unroll 4 /* LINEAR_TOKENS */
                for (int t = 0; t < LINEAR_TOKENS; t++) x_c[t] = x_t[t][c];
#pragma GCC unroll 4 /* LINEAR_ROWS */
                for (int k = 0; k < LINEAR_ROWS; k++) w_c[k] = w_r[k][c];
#pragma GCC unroll 4
                for (int t = 0; t < LINEAR_TOKENS; t++)
#pragma GCC unroll 4
                    for (int k = 0; k < LINEAR_ROWS; k++) sum[t][k] += x_c[t] * w_c[k];
            }
            for (int t = 0; t < LINEAR_TOKENS && i0 + t < n; t++)
                for (int k = 0; k < LINEAR_ROWS && r0 + k < w->rows; k++)
                    y[(size_t)(i0 + t) * w->rows + r0 + k] = sum[t][k] + (bias ? bias[r0 + k] : 0.0f);
        }
    }
}

void sdfed_q8_0_activations(const float *x, int cols, signed char *q, float *d) {
    for (int b = 0; b < cols / SDFED_Q8_0_BLOCK; b++) {
        const float *x_b = x + (size_t)b * SDFED_Q8_0_BLOCK;
        float amax = 0.0f;
        for (int i = 0; i < SDFED_Q8_0_BLOCK; i++) amax = fmaxf(amax, fabsf(x_b[i]));
        float d_b = amax / 127.0f, id = d_b != 0.0f ? 1.0f / d_b : 0.0f;
        d[b] = d_b;
        /* |x id| <= 127 (plus rounding), so the quant fits */
        for (int i = 0; i < SDFED_Q8_0_BLOCK; i++) q[b * SDFED_Q8_0_BLOCK + i] = (signed char)lrintf(x_b[i] * id);
    }
}

static void linear_int8(float *y, const float *x, const sdfed_weight *w, const float *bias, int n, float *scratch) {
    if (w->type != SDFED_TYPE_Q8_0) {
        linear(y, x, w, bias, n, scratch);
        return;
    }
    // x is (n, cols), W is (rows, cols) in Q8_0 blocks, y is (n, rows); scratch holds one quantised row of x
    int cols = w->cols, blocks = cols / SDFED_Q8_0_BLOCK;
    float *d_x = scratch;
    signed char *q_x = (signed char *)(scratch + blocks);
    for (int i = 0; i < n; i++) {
        sdfed_q8_0_activations(x + (size_t)i * cols, cols, q_x, d_x);
        for (int r = 0; r < w->rows; r++) {
            const sdfed_block_q8_0 *w_r = (const sdfed_block_q8_0 *)w->data + (size_t)r * blocks;
            float acc = 0.0f;
            for (int b = 0; b < blocks; b++) {
                int32_t dot = 0;
                for (int c = 0; c < SDFED_Q8_0_BLOCK; c++) dot += q_x[b * SDFED_Q8_0_BLOCK + c] * w_r[b].qs[c];
                float scale = d_x[b] * sdfed_f16_to_f32(w_r[b].d);
                acc = acc + (float)dot * scale;
            }
            y[(size_t)i * w->rows + r] = bias ? acc + bias[r] : acc;
        }
    }
}

static void linear_backward(float *dx, const float *dy, const sdfed_weight *w, int n, float *scratch) {
    // dy is (n, rows), W is (rows, cols), dx is (n, cols)
    for (int r = 0; r < w->rows; r++) {
        const float *w_r = weight_row(w, r, scratch);
        for (int i = 0; i < n; i++) {
            float g = dy[(size_t)i * w->rows + r];
            float *dx_i = dx + (size_t)i * w->cols;
            for (int c = 0; c < w->cols; c++) dx_i[c] += g * w_r[c];
        }
    }
}

static void gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda, const float *b,
                 int ldb, float beta, float *c, int ldc) {
    for (int i = 0; i < m; i++) {
        float *c_i = c + (size_t)i * ldc;
        if (beta == 0.0f)
            memset(c_i, 0, sizeof(float) * (size_t)n);
        else if (beta != 1.0f)
            for (int j = 0; j < n; j++) c_i[j] *= beta;
        if (!trans_b) {
            /* C_i += alpha * sum_p op(A)[i][p] * B[p]: contiguous rows of B */
            for (int p = 0; p < k; p++) {
                float a_ip = alpha * (trans_a ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p]);
                const float *b_p = b + (size_t)p * ldb;
                for (int j = 0; j < n; j++) c_i[j] += a_ip * b_p[j];
            }
        } else {
            /* C[i][j] += alpha * dot(op(A)[i], B[j]) */
            for (int j = 0; j < n; j++) {
                const float *b_j = b + (size_t)j * ldb;
                float sum = 0.0f;
                for (int p = 0; p < k; p++) sum += (trans_a ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p]) * b_j[p];
                c_i[j] += alpha * sum;
            }
        }
    }
}

/* one row at a time */
const sdfed_kernels sdfed_kernels_portable = {.name = "portable",
                                              .min_panel_rows = LINEAR_ROWS, /* linear's scratch: its rows */
                                              .linear = linear,
                                              .linear_int8 = linear_int8,
                                              .reentrant_backward = 1,
                                              .linear_backward = linear_backward,
                                              .gemm = gemm};
