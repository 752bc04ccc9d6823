/* The forward layers that the exponential bounds, QuickGELU and the
 * attention's softmax, in sixteen-float vectors where the CPU has AVX-512
 * (x86-64): lane for lane the steps of layers.c's eight-float loops, so the
 * same bits. Their own functions because GCC 12 keeps 64-byte vectors in
 * registers only in a function compiled for AVX-512 itself: in a
 * target_clones clone, or in an inline helper of the baseline's, it lowers
 * their comparisons to one per lane. The exponential, bound by its chain of
 * dependent steps rather than by the instructions it issues, runs nearly
 * twice as many lanes an instruction (QuickGELU over ViT-B/16's MLP: 1.3x
 * to 2.6x on Ice Lake). */
#ifndef SDFED_CLIP_LAYERS_WIDE_H
#define SDFED_CLIP_LAYERS_WIDE_H

#include "kernels/dispatch.h"

#if defined(SDFED_X86_TILES)
#define SDFED_LAYERS_WIDE 1

/* Whether these run here: the CPU has AVX-512 and the host's cap
 * (sdfed_isa_cap) allows it. */
int sdfed_layers_wide(void);

/* out = x s(1.702 x) on n floats (layers.c's quick_gelu_lanes). */
void sdfed_quick_gelu_wide(float *out, const float *inp, int n);

/* The softmax of a row's first `visible` floats, in place (layers.c's
 * softmax_row: its largest, in any order, the same; the exponentials'
 * sum added as there, eight sums lane by lane, then the lanes in order). */
void sdfed_softmax_row_wide(float *row, int visible);
#endif

#endif
