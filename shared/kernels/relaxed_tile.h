/* The layout relaxed_tile.c's module reads (kernels_simd128.c writes it).
 * A chunk of tokens, each row of x (RELAXED_X_BLOCK_BYTES per block of 32
 * columns, rows padded with zeros to a multiple of RELAXED_MR): the cols
 * quants of x+ = max(x, 0), then those of x- = max(-x, 0) (x in -127..127,
 * so both in 0..127), then per block the int32 sum of x-; the block scales
 * (blocks f32 per row). A panel of RELAXED_NR weight rows, per block of 32
 * columns: for each group of 4 columns the 4-byte groups of rows 0-3 and
 * 4-7 of w, then the same of ~w = -w - 1 (any int8 fits)
 * (RELAXED_GROUP_BYTES), then the 8 f32 scales.
 * One dot per 16 products (relaxed_one_panel, where the engine's dot is
 * exact on any second operand; relaxed_dot_kind): a row of x is its cols
 * quants (+ 128, as unsigned bytes, for RELAXED_DOT_UNSIGNED), rows padded
 * with zeros to a multiple of RELAXED_ONE_MR, the RELAXED_ONE_MR rows of a
 * tile interleaved: for each group of 4 columns each
 * row's 4 quants in turn; a panel
 * block holds for each group of 4 columns the groups of rows 0-3 and 4-7
 * of w (RELAXED_ONE_GROUP_BYTES), then the 8 f32 scales, then the 8 int32
 * starts of the rows' sums (-128 sum(w) for RELAXED_DOT_UNSIGNED, else 0).
 * The integer tiles keep their f32 sums in the caller's memory between
 * blocks (sums: RELAXED_SUMS floats), so that the engine's registers hold
 * the integer sums, which the dots wait on.
 * The module's exports:
 *   relaxed_panel(blocks, count, xq, xd, panel, y, stride, nc, bias, sums)
 *     y[i * stride + j] = the definition's output for token i < count and
 *     panel row j < nc (+ bias[j] if bias is not NULL);
 *   relaxed_dot_kind()    what the engine's relaxed dot computes on second
 *     operands past 127 (RELAXED_DOT_*), found on test products
 *   relaxed_one_panel(blocks, count, xq, xd, panel, y, stride, nc, bias, sums, how)
 *     relaxed_panel's outputs from the one-dot layout; how: the engine's
 *     dot (RELAXED_ONE_ENGINE) or the exact sums of a kind computed with
 *     SIMD128 (RELAXED_DOT_UNSIGNED, _SIGNED: tests of a kind the engine's
 *     dot is not)
 *   relaxed_fused(a, c)   whether f32x4.relaxed_madd is fused here
 *   relaxed_f32_panel(cols, count, xg, panel, y, stride, nc, bias)
 *     the same for f32 (nc <= RELAXED_F32_NR): x's tokens in groups of
 *     RELAXED_F32_MR, a group's cols columns of RELAXED_F32_MR floats in
 *     turn (token t at column k: xg[(t / MR * cols + k) * MR + t % MR];
 *     a last group of fewer tokens as long, the rest unread), the panel
 *     RELAXED_F32_NR floats per column (the panel rows' weights, zeros
 *     past nc), each output the in-order FMA chain over the columns
 *     (where fused). */
#ifndef SDFED_RELAXED_TILE_H
#define SDFED_RELAXED_TILE_H

#define RELAXED_BLOCK 32
#define RELAXED_NR 8
#define RELAXED_MR 4
/* The one-dot tile's tokens: 5 of 8 weight rows' sums, 10 integer sums in
 * flight, the relaxed dot's latency times its rate where it is one
 * instruction (x86's AVX-VNNI: 4 cycles at two a cycle on Zen 5, 5 on
 * Intel), with the 2 weight vectors and x in 13 of V8's 15 registers, the
 * f32 sums in memory. ViT-B/16's Q8_0 images in Chromium on Zen 5 ran 1.04x
 * as fast as at 4 x 8 with the f32 sums in registers (8 integer sums, two
 * of them spilled by V8 each block), on one thread and on two. */
#define RELAXED_ONE_MR 5
/* the integer tiles' most tokens, and the floats of their f32 sums (two
 * vectors of 4 a token) */
#define RELAXED_MAX_MR (RELAXED_ONE_MR > RELAXED_MR ? RELAXED_ONE_MR : RELAXED_MR)
#define RELAXED_SUMS (RELAXED_MAX_MR * RELAXED_NR)
#define RELAXED_GROUPS (RELAXED_BLOCK / 4)
#define RELAXED_GROUP_BYTES (2 * RELAXED_NR * 4)
#define RELAXED_QS_BYTES (RELAXED_GROUPS * RELAXED_GROUP_BYTES)
#define RELAXED_BLOCK_BYTES (RELAXED_QS_BYTES + RELAXED_NR * 4)
#define RELAXED_X_BLOCK_BYTES (2 * RELAXED_BLOCK + 4)
#define RELAXED_ONE_GROUP_BYTES (RELAXED_NR * 4)
#define RELAXED_ONE_QS_BYTES (RELAXED_GROUPS * RELAXED_ONE_GROUP_BYTES)
#define RELAXED_ONE_BLOCK_BYTES (RELAXED_ONE_QS_BYTES + 2 * RELAXED_NR * 4)
#define RELAXED_ONE_X_BLOCK_BYTES RELAXED_BLOCK
#define RELAXED_F32_NR 12
/* The f32 tile's tokens: 3 of 12 weight rows' sums, 9 vectors in flight,
 * past the fused multiply-add's latency times its ports (8 on x86, which
 * 4 x 8 only met; 5 x 8 and 6 x 8 made V8 spill its loop's registers: 0.79x
 * and 0.76x of 4 x 8, where 3 x 12 ran 1.12x, f32 images in Chromium on Ice
 * Lake). */
#define RELAXED_F32_MR 3

/* relaxed_dot_kind's answers: the sums of a second operand's lanes past 127
 * are neither below (x86 without an 8-bit dot product: its pairs of
 * products saturate at 16 bits); exact, the lanes read as 0..255 (x86's
 * AVX-VNNI); exact, read as -128..127 (Arm's dot product) */
#define RELAXED_DOT_INEXACT 0
#define RELAXED_DOT_UNSIGNED 1
#define RELAXED_DOT_SIGNED 2
/* relaxed_one_panel's how: the engine's relaxed dot */
#define RELAXED_ONE_ENGINE 0

#endif
