/* The subspace-refinement projector R of SDFed, built from the global prompt
 * G_s (S x m) each local step, applied as G~ = G R. Three modes, selected by
 * name, with lambda in [0, 1] and r = floor(lambda * m):
 *
 *   complement (default)  R = I - X_k X_k^T, X_k the top k = min(r, rank G_s)
 *                         right singular vectors: removes the dominant global
 *                         directions; independent of any basis choice.
 *   paper                 the paper's Eq. (8)-(10): X = a full orthonormal
 *                         basis of R^m, X_2 = its columns r+1..m, R = X_2 X_2^T.
 *                         X is the thin right singular vectors of G_s (rank of
 *                         them, by descending singular value) followed by a
 *                         completion: columns rank+1..m of the Q factor of the
 *                         Householder QR of those vectors (m x rank), in order.
 *                         A fixed rule, computed in double, so the same input
 *                         bits give the same basis on every run and target.
 *   rowspace              what the FedPHA code does: r' = floor(lambda * S),
 *                         X_2 = thin right singular vectors r'+1..rank,
 *                         R = X_2 X_2^T (vectors past the rank do not exist).
 *
 * R is kept as an orthonormal basis B (n_basis x m) with R = B^T B or
 * R = I - B^T B, never as an m x m matrix. */
#ifndef SDFED_PROJECTOR_H
#define SDFED_PROJECTOR_H

#include "base/arena.h"
#include "base/names.h"
#include "base/status.h"
#include "kernels/kernels.h"
#include "prompt/svd.h"

enum { SDFED_PROJECTOR_COMPLEMENT, SDFED_PROJECTOR_PAPER, SDFED_PROJECTOR_ROWSPACE, SDFED_PROJECTOR_COUNT };

typedef struct sdfed_projector {
    int m;
    int n_basis;
    float *basis;  /* (n_basis, m), orthonormal rows */
    int subtract;  /* 1: R = I - B^T B, 0: R = B^T B */
    sdfed_svd svd; /* of G_s */
} sdfed_projector;

/* The modes' names, indexed by SDFED_PROJECTOR_*. */
extern const sdfed_name sdfed_projector_names[SDFED_PROJECTOR_COUNT];
const char *sdfed_projector_name(int mode);
int sdfed_projector_from_name(const char *name); /* -1 if unknown */

/* Builds R from G_s (S, m); everything lives in the arena. */
int sdfed_projector_build(const float *Gs, int S, int m, int mode, float lambda, sdfed_projector *out,
                          sdfed_arena *arena, sdfed_error *err);

/* Y (n, m) = X (n, m) R; Y must not alias X. */
int sdfed_projector_apply(const sdfed_projector *p, const sdfed_kernels *k, const float *X, int n, float *Y,
                          sdfed_arena *arena, sdfed_error *err);

/* R as a dense (m, m) matrix (for tests and the reference check). */
void sdfed_projector_matrix(const sdfed_projector *p, float *R);

#endif
