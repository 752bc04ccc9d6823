/* Thin SVD of a small wide matrix (the global prompt, S x m with S <= m) by
 * one-sided Jacobi (Hestenes) rotations of its rows, in double precision.
 *
 * A = U diag(sigma) V^T: rotations J are applied to the rows of A until they
 * are mutually orthogonal; then sigma_i are the row norms, the rows divided
 * by them are the right singular vectors, and U = J^T. A pair of rows is
 * rotated while |a_p . a_q| > m * DBL_EPSILON * ||a_p|| ||a_q||; a sweep
 * visits every pair in order, and the method stops after a sweep without
 * rotation (at most SDFED_SVD_MAX_SWEEPS).
 *
 * Rank: sigma_i counts when sigma_i > sigma_max * max(S, m) * FLT_EPSILON,
 * the usual numerical-rank rule for float32 data (numpy's matrix_rank
 * default). Right singular vectors exist only for those; the rest of vt is
 * zero. Singular values are sorted descending, ties kept in row order, so
 * the result is a deterministic function of the input bits. */
#ifndef SDFED_SVD_H
#define SDFED_SVD_H

#include "base/arena.h"
#include "base/status.h"

#define SDFED_SVD_MAX_SWEEPS 64

typedef struct sdfed_svd {
    int rows, cols, rank, sweeps;
    double *sigma; /* (rows), descending */
    double *vt;    /* (rows, cols): right singular vectors as rows; rows >= rank are zero */
    double *u;     /* (rows, rows): left singular vectors as columns */
} sdfed_svd;

/* A is (S, m) row-major, 1 <= S <= m; results live in the arena. */
int sdfed_svd_thin(const float *A, int S, int m, sdfed_svd *out, sdfed_arena *arena, sdfed_error *err);

#endif
