/* The layout relaxed_tile.c's module reads (kernels_simd128.c writes it).
 * A chunk of tokens, each row of x (RELAXED_X_BLOCK_BYTES per block of 32
 * columns, rows padded with zeros to a multiple of RELAXED_MR): the cols
 * quants of x+ = max(x, 0), then those of x- = max(-x, 0) (x in -127..127,
 * so both in 0..127), then per block the int32 sum of x-; the block scales
 * (blocks f32 per row). A panel of RELAXED_NR weight rows, per block of 32
 * columns: for each group of 4 columns the 4-byte groups of rows 0-3 and
 * 4-7 of w, then the same of ~w = -w - 1 (any int8 fits)
 * (RELAXED_GROUP_BYTES), then the 8 f32 scales.
 * The module's exports:
 *   relaxed_panel(blocks, count, xq, xd, panel, y, stride, nc, bias)
 *     y[i * stride + j] = the definition's output for token i < count and
 *     panel row j < nc (+ bias[j] if bias is not NULL);
 *   relaxed_fused(a, c)   whether f32x4.relaxed_madd is fused here
 *   relaxed_f32_panel(cols, count, x, ldx, panel, y, stride, nc, bias)
 *     the same for f32: x's rows ldx floats apart, the panel RELAXED_NR
 *     floats per column (the panel rows' weights, zeros past nc), each
 *     output the in-order FMA chain over the columns (where fused). */
#ifndef SDFED_RELAXED_TILE_H
#define SDFED_RELAXED_TILE_H

#define RELAXED_BLOCK 32
#define RELAXED_NR 8
#define RELAXED_MR 4
#define RELAXED_GROUPS (RELAXED_BLOCK / 4)
#define RELAXED_GROUP_BYTES (2 * RELAXED_NR * 4)
#define RELAXED_QS_BYTES (RELAXED_GROUPS * RELAXED_GROUP_BYTES)
#define RELAXED_BLOCK_BYTES (RELAXED_QS_BYTES + RELAXED_NR * 4)
#define RELAXED_X_BLOCK_BYTES (2 * RELAXED_BLOCK + 4)

#endif
