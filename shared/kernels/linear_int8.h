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
 * register tile of MR tokens x 16 or 32 rows runs over the panel. The
 * instruction set is chosen at run time:
 *   portable     C on the packed layout (any host)
 *   avx2         vpmaddubsw on |w| and x with w's sign, then vpmaddwd
 *   avx512vnni   vpdpbusd on x + 128 (unsigned) and w, the offset's
 *                128 sum(w) taken off by starting the sums at -128 sum(w) */
#ifndef SDFED_LINEAR_INT8_H
#define SDFED_LINEAR_INT8_H

#include "kernels/kernels.h"

enum {
    SDFED_INT8_PORTABLE,
    SDFED_INT8_AVX2,       /* x86-64 with AVX2 */
    SDFED_INT8_AVX512VNNI, /* x86-64 with AVX-512 F, BW and VNNI */
    SDFED_INT8_ISA_COUNT
};

/* The best instruction set this CPU runs (each one below it runs too). */
int sdfed_int8_isa_best(void);
const char *sdfed_int8_isa_name(int isa);

/* Scratch rows of `cols` floats that sdfed_linear_int8 needs. */
#define SDFED_INT8_SCRATCH_ROWS 85

/* The Q8_0 x Q8_0 linear layer on instruction set isa (<= the best),
 * outputs [first, end) of each row of y only (0 and w->rows: all of them;
 * an output's bits do not depend on the range), w->type must be Q8_0;
 * scratch of SDFED_INT8_SCRATCH_ROWS * w->cols floats. */
void sdfed_linear_int8(int isa, float *y, const float *x, const sdfed_weight *w, const float *bias, int n, int first,
                       int end, float *scratch);

#endif
