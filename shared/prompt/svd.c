/* One-sided Jacobi SVD (see svd.h for the method and its tolerances). */
#include "prompt/svd.h"

#include <float.h>
#include <math.h>
#include <string.h>

static double dot(const double *a, const double *b, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* [a; b] <- [c a - s b; s a + c b] */
static void rotate(double *a, double *b, int n, double c, double s) {
    for (int i = 0; i < n; i++) {
        double x = a[i], y = b[i];
        a[i] = c * x - s * y;
        b[i] = s * x + c * y;
    }
}

/* Sweeps of rotations orthogonalising the rows of a (S, m), accumulating
 * them in j (S, S); returns the number of sweeps. */
static int orthogonalise_rows(double *a, double *j, int S, int m) {
    double tol = m * DBL_EPSILON;
    int sweep = 0;
    for (; sweep < SDFED_SVD_MAX_SWEEPS; sweep++) {
        int rotated = 0;
        for (int p = 0; p < S - 1; p++)
            for (int q = p + 1; q < S; q++) {
                double *ap = a + (size_t)p * m, *aq = a + (size_t)q * m;
                double alpha = dot(ap, ap, m), beta = dot(aq, aq, m), gamma = dot(ap, aq, m);
                if (alpha == 0.0 || beta == 0.0 || fabs(gamma) <= tol * sqrt(alpha) * sqrt(beta)) continue;
                /* the rotation that zeroes the off-diagonal of the 2x2 Gram matrix */
                double zeta = (beta - alpha) / (2.0 * gamma);
                double t = (zeta >= 0.0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1.0 + zeta * zeta));
                double c = 1.0 / sqrt(1.0 + t * t), s = c * t;
                rotate(ap, aq, m, c, s);
                rotate(j + (size_t)p * S, j + (size_t)q * S, S, c, s);
                rotated = 1;
            }
        if (!rotated) break;
    }
    return sweep + 1;
}

int sdfed_svd_thin(const float *A, int S, int m, sdfed_svd *out, sdfed_arena *arena, sdfed_error *err) {
    if (S < 1 || m < S) return sdfed_fail(err, SDFED_ERR_ARG, "svd: need 1 <= rows <= cols, got %d x %d", S, m);
    for (size_t i = 0; i < (size_t)S * m; i++)
        if (!isfinite(A[i])) return sdfed_fail(err, SDFED_ERR_NUMERIC, "svd: the matrix holds NaN or Inf");
    double *a = sdfed_arena_alloc(arena, sizeof *a * (size_t)S * m);
    double *j = sdfed_arena_alloc(arena, sizeof *j * (size_t)S * S);
    double *norms = sdfed_arena_alloc(arena, sizeof *norms * (size_t)S);
    int *order = sdfed_arena_alloc(arena, sizeof *order * (size_t)S);
    out->sigma = sdfed_arena_alloc(arena, sizeof *out->sigma * (size_t)S);
    out->vt = sdfed_arena_alloc(arena, sizeof *out->vt * (size_t)S * m);
    out->u = sdfed_arena_alloc(arena, sizeof *out->u * (size_t)S * S);
    if (!a || !j || !norms || !order || !out->sigma || !out->vt || !out->u)
        return sdfed_fail(err, SDFED_ERR_NOMEM, "svd: out of memory");
    for (size_t i = 0; i < (size_t)S * m; i++) a[i] = A[i];
    memset(j, 0, sizeof *j * (size_t)S * S);
    for (int i = 0; i < S; i++) j[(size_t)i * S + i] = 1.0;
    out->rows = S;
    out->cols = m;
    out->sweeps = orthogonalise_rows(a, j, S, m);

    /* sort by norm, descending; insertion sort keeps ties in row order */
    for (int i = 0; i < S; i++) {
        norms[i] = sqrt(dot(a + (size_t)i * m, a + (size_t)i * m, m));
        int k = i;
        while (k > 0 && norms[order[k - 1]] < norms[i]) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
    double sigma_max = norms[order[0]];
    double cutoff = sigma_max * (double)m * FLT_EPSILON;
    out->rank = 0;
    for (int r = 0; r < S; r++) {
        int i = order[r];
        out->sigma[r] = norms[i];
        double *v = out->vt + (size_t)r * m;
        if (sigma_max > 0.0 && norms[i] > cutoff) {
            for (int c = 0; c < m; c++) v[c] = a[(size_t)i * m + c] / norms[i];
            out->rank++;
        } else {
            memset(v, 0, sizeof *v * (size_t)m);
        }
        for (int row = 0; row < S; row++) out->u[(size_t)row * S + r] = j[(size_t)i * S + row];
    }
    return SDFED_OK;
}
