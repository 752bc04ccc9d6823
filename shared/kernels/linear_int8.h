/* The native Q8_0 x Q8_0 linear layer: kernels.h's linear_int8 for Q8_0
 * weights, y (n, rows) = q8_0(x) (n, cols) @ W^T + bias, with the integer
 * products of each 32-value block pair in SIMD registers and the same f32
 * steps, in the same order, as the portable definition: the same bits on
 * every instruction set.
 *
 * Blocked for registers and cache: the rows of x are quantised a chunk of
 * tokens at a time (up to 264: a ViT-B image's tokens at once), the weight rows
 * are packed a panel of 16 rows at a time (4-byte groups of 16 rows
 * interleaved, then the 16 block scales and 16 offset corrections), and a
 * register tile of MR tokens x 16 or 32 rows runs over the panel (or over
 * the panels of the whole weight packed once beforehand, sdfed_int8_pack:
 * the same layout, the same bits). The
 * instruction set is chosen at run time (kernels/dispatch.h):
 *   portable     C on the packed layout (any host)
 *   avx2         vpmaddubsw on |w| and x with w's sign, then vpmaddwd
 *   avx512       with VNNI: vpdpbusd on x + 128 (unsigned) and w, the offset's
 *                128 sum(w) taken off by starting the sums at -128 sum(w) */
#ifndef SDFED_LINEAR_INT8_H
#define SDFED_LINEAR_INT8_H

#include "kernels/dispatch.h"
#include "kernels/kernels.h"

/* Scratch rows of `cols` floats that sdfed_linear_int8 needs. */
#define SDFED_INT8_SCRATCH_ROWS 85

/* The Q8_0 x Q8_0 linear layer on instruction set isa (<= sdfed_isa_best_int8()),
 * outputs [first, end) of each row of y only (0 and w->rows: all of them;
 * an output's bits do not depend on the range), w->type must be Q8_0;
 * scratch of SDFED_INT8_SCRATCH_ROWS * w->cols floats; it reads w->packed
 * when w was packed for it (packed_int8 1). */
void sdfed_linear_int8(int isa, float *y, const float *x, const sdfed_weight *w, const float *bias, int n, int first,
                       int end, float *scratch);

/* The same layer in two steps, so that threads sharing its outputs quantise
 * x once between them: bytes of n rows of `cols` inputs quantised for isa's
 * tiles (the scales, the quants, padded to whole tiles); rows [begin, end)
 * of x quantised into them (x holds n rows; the part whose end is n pads
 * them too), from any threads at once for distinct parts; and outputs
 * [first, end) from the n quantised rows, with scratch as above: the bits
 * of sdfed_linear_int8. */
size_t sdfed_int8_rows_bytes(int isa, int n, int cols);
void sdfed_int8_quantise_rows(int isa, void *rows, const float *x, int n, int cols, int begin, int end);
void sdfed_linear_int8_rows(int isa, float *y, const void *rows, const sdfed_weight *w, const float *bias, int n,
                            int first, int end, float *scratch);

/* Bytes of Q8_0 weight w packed whole by sdfed_int8_pack: its panels of 16
 * rows, the last one padded with zero rows, then a zero panel for the tiles
 * that span two (every instruction set reads the same layout): 640 bytes
 * per 16 x 32 values, against Q8_0's 544. */
size_t sdfed_int8_packed_bytes(const sdfed_weight *w);
/* Packs all of Q8_0 weight w into packed (sdfed_int8_packed_bytes(w)). */
void sdfed_int8_pack(const sdfed_weight *w, unsigned char *packed);

#endif
