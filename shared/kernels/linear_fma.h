/* The native linear layer whose outputs do not depend on the batch:
 * y (n, rows) = x (n, cols) @ W^T + bias, where every output is one fused
 * multiply-add chain over the inputs in order,
 *     acc = 0; for c in 0..cols-1: acc = fma(x[i][c], W[r][c], acc); y = acc + bias[r]
 * so y[i] depends on x[i] alone: not on the other rows of the batch, where
 * the batch starts, the tile a row lands in, or the CPU (AVX-512, AVX2 and
 * scalar fmaf round each step the same way). BLAS libraries give no such
 * promise (their kernels and thread splits change with the shape and the
 * CPU), which made an image's features depend on its neighbours.
 *
 * Weights of any type are converted into packed panels (NR output rows
 * interleaved along cols), then multiplied by register tiles of MR x NR
 * outputs; the instruction set is chosen at run time (kernels/dispatch.h). The panels are
 * packed on every call, a tile's worth at a time, unless the whole weight
 * was packed once beforehand (sdfed_fma_pack; the same panels, the same
 * bits). */
#ifndef SDFED_LINEAR_FMA_H
#define SDFED_LINEAR_FMA_H

#include <stddef.h>

#include "kernels/dispatch.h"
#include "kernels/kernels.h"

/* Scratch rows of `cols` floats that sdfed_linear_fma needs. */
#define SDFED_FMA_SCRATCH_ROWS 64

/* The linear layer above on instruction set isa (<= sdfed_isa_best_fma()),
 * outputs [first, end) of each row of y only (0 and w->rows: all of them),
 * with scratch of SDFED_FMA_SCRATCH_ROWS * w->cols floats; it reads
 * w->packed when w was packed for it (packed_int8 0). Same bits for every
 * isa and range, packed or not. */
void sdfed_linear_fma(int isa, float *y, const float *x, const sdfed_weight *w, const float *bias, int n, int first,
                      int end, float *scratch);

/* Floats of w packed whole by sdfed_fma_pack: its panels of 16 rows, the
 * last one padded with zero rows (any instruction set reads the same
 * layout; a tile spans only the panels its outputs need). */
size_t sdfed_fma_packed_floats(const sdfed_weight *w);
/* Packs all of w (any type) into packed (sdfed_fma_packed_floats(w)
 * floats), converting F16 and Q8_0 rows in scratch of
 * SDFED_FMA_SCRATCH_ROWS * w->cols floats. */
void sdfed_fma_pack(const sdfed_weight *w, float *packed, float *scratch);

/* The general product of the native backend (kernels.h's gemm, BLAS
 * conventions, row-major): C (m, n) = alpha * op(A) @ op(B) + beta * C, each
 * output one FMA chain over k in order,
 *     acc = 0; for q in 0..k-1: acc = fma(op(A)[i][q], op(B)[q][j], acc)
 *     C[i][j] = alpha * acc                      (beta == 0: C is not read)
 *     C[i][j] = alpha * acc + beta * C[i][j]     (otherwise; three roundings)
 * on the tiles of the linear layer above (op(B)'s columns packed as its
 * panels), so that an output depends on its row of op(A) and column of
 * op(B) alone, never on the shapes around it or the CPU. It takes its
 * working memory from malloc, and without it runs the chain above in
 * scalar fmaf (the same bits). */
void sdfed_gemm_fma(int isa, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                    const float *b, int ldb, float beta, float *c, int ldc);

/* y[j] = out[j] + bias[j] (bias NULL: y[j] = out[j]) for j < count: a
 * register tile's row of outputs into the layer's output, in vector
 * steps (the native linears' store of a tile that covers part of its
 * columns, linear_int8's too; a whole tile writes its rows itself). */
void sdfed_store_outputs(float *restrict y, const float *restrict out, const float *restrict bias, int count);

#endif
