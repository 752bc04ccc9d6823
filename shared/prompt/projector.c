/* The refinement projector: SVD of G_s, basis selection per mode, and the
 * deterministic completion of the right singular vectors to R^m. */
#include "prompt/projector.h"

#include <assert.h>
#include <math.h>
#include <string.h>

const sdfed_name sdfed_projector_names[] = {
    [SDFED_PROJECTOR_COMPLEMENT] = {.name = "complement", .value = SDFED_PROJECTOR_COMPLEMENT},
    [SDFED_PROJECTOR_PAPER] = {.name = "paper", .value = SDFED_PROJECTOR_PAPER},
    [SDFED_PROJECTOR_ROWSPACE] = {.name = "rowspace", .value = SDFED_PROJECTOR_ROWSPACE},
};
static_assert(sizeof sdfed_projector_names / sizeof sdfed_projector_names[0] == SDFED_PROJECTOR_COUNT,
              "a name per projector mode");

const char *sdfed_projector_name(int mode) { return sdfed_name_of(sdfed_projector_names, SDFED_PROJECTOR_COUNT, mode); }

int sdfed_projector_from_name(const char *name) {
    return sdfed_name_value(sdfed_projector_names, SDFED_PROJECTOR_COUNT, name);
}

/* Completes the k orthonormal rows of v (k, m) to a basis of R^m: out
 * ((m - k), m) receives Q e_j for j = k..m-1, where Q = H_0 ... H_{k-1} is
 * the Householder QR factor of v^T. */
static int complete_basis(const double *v, int k, int m, double *out, sdfed_arena *arena) {
    double *a = sdfed_arena_alloc(arena, sizeof *a * (size_t)k * m); /* the columns of v^T, reduced in place */
    double *h = sdfed_arena_alloc(arena, sizeof *h * (size_t)k * m); /* Householder vectors, one per row */
    if (!a || !h) return SDFED_ERR_NOMEM;
    memcpy(a, v, sizeof *a * (size_t)k * m);
    memset(h, 0, sizeof *h * (size_t)k * m);
    for (int i = 0; i < k; i++) {
        /* H_i maps column i (entries i..m-1) onto a multiple of e_i */
        double *col = a + (size_t)i * m, *hv = h + (size_t)i * m;
        double norm = 0.0;
        for (int r = i; r < m; r++) norm += col[r] * col[r];
        norm = sqrt(norm);
        double alpha = col[i] >= 0.0 ? -norm : norm;
        for (int r = i; r < m; r++) hv[r] = col[r];
        hv[i] -= alpha;
        double hh = 0.0;
        for (int r = i; r < m; r++) hh += hv[r] * hv[r];
        if (hh == 0.0) continue; /* column already reduced: H_i = I */
        for (int c = i; c < k; c++) {
            double *x = a + (size_t)c * m, d = 0.0;
            for (int r = i; r < m; r++) d += hv[r] * x[r];
            d = 2.0 * d / hh;
            for (int r = i; r < m; r++) x[r] -= d * hv[r];
        }
        for (int r = i; r < m; r++) hv[r] /= sqrt(hh); /* now H_i = I - 2 hv hv^T */
    }
    for (int j = k; j < m; j++) {
        double *q = out + (size_t)(j - k) * m;
        memset(q, 0, sizeof *q * (size_t)m);
        q[j] = 1.0;
        for (int i = k - 1; i >= 0; i--) {
            const double *hv = h + (size_t)i * m;
            double d = 0.0;
            for (int r = i; r < m; r++) d += hv[r] * q[r];
            for (int r = i; r < m; r++) q[r] -= 2.0 * d * hv[r];
        }
    }
    return SDFED_OK;
}

static void take_rows(float *dst, const double *src, int rows, int m) {
    for (size_t i = 0; i < (size_t)rows * m; i++) dst[i] = (float)src[i];
}

int sdfed_projector_build(const float *Gs, int S, int m, int mode, float lambda, sdfed_projector *out,
                          sdfed_arena *arena, sdfed_error *err) {
    if (!sdfed_projector_name(mode)) return sdfed_fail(err, SDFED_ERR_ARG, "projector: unknown mode %d", mode);
    if (!(lambda >= 0.0f && lambda <= 1.0f))
        return sdfed_fail(err, SDFED_ERR_ARG, "projector: lambda %g is outside [0, 1]", lambda);
    memset(out, 0, sizeof *out);
    int rc = sdfed_svd_thin(Gs, S, m, &out->svd, arena, err);
    if (rc) return rc;
    int rank = out->svd.rank;
    int r = (int)floorf(lambda * (float)m);
    out->m = m;
    switch (mode) {
    case SDFED_PROJECTOR_COMPLEMENT:
        out->subtract = 1;
        out->n_basis = r < rank ? r : rank;
        out->basis = sdfed_arena_floats(arena, (size_t)out->n_basis * m + 1);
        if (!out->basis) return sdfed_fail(err, SDFED_ERR_NOMEM, "projector: out of memory");
        take_rows(out->basis, out->svd.vt, out->n_basis, m);
        break;
    case SDFED_PROJECTOR_ROWSPACE: {
        int first = (int)floorf(lambda * (float)S);
        out->n_basis = rank > first ? rank - first : 0;
        out->basis = sdfed_arena_floats(arena, (size_t)out->n_basis * m + 1);
        if (!out->basis) return sdfed_fail(err, SDFED_ERR_NOMEM, "projector: out of memory");
        take_rows(out->basis, out->svd.vt + (size_t)first * m, out->n_basis, m);
        break;
    }
    case SDFED_PROJECTOR_PAPER: {
        /* X = [thin vectors; completion]; keep rows r..m-1 of X */
        double *completion = sdfed_arena_alloc(arena, sizeof(double) * (size_t)(m - rank) * m + 1);
        if (!completion || complete_basis(out->svd.vt, rank, m, completion, arena))
            return sdfed_fail(err, SDFED_ERR_NOMEM, "projector: out of memory");
        out->n_basis = m - r;
        out->basis = sdfed_arena_floats(arena, (size_t)out->n_basis * m + 1);
        if (!out->basis) return sdfed_fail(err, SDFED_ERR_NOMEM, "projector: out of memory");
        for (int row = r; row < m; row++) {
            const double *src = row < rank ? out->svd.vt + (size_t)row * m : completion + (size_t)(row - rank) * m;
            take_rows(out->basis + (size_t)(row - r) * m, src, 1, m);
        }
        break;
    }
    }
    return SDFED_OK;
}

int sdfed_projector_apply(const sdfed_projector *p, const sdfed_kernels *k, const float *X, int n, float *Y,
                          sdfed_arena *arena, sdfed_error *err) {
    // Z (n, nb) = X B^T; Y = Z B (keep) or X - Z B (subtract)
    int m = p->m, nb = p->n_basis;
    if (p->subtract)
        memcpy(Y, X, sizeof *Y * (size_t)n * m);
    else
        memset(Y, 0, sizeof *Y * (size_t)n * m);
    if (nb == 0) return SDFED_OK;
    float *Z = sdfed_arena_floats(arena, (size_t)n * nb);
    if (!Z) return sdfed_fail(err, SDFED_ERR_NOMEM, "projector: out of memory");
    k->gemm(0, 1, n, nb, m, 1.0f, X, m, p->basis, m, 0.0f, Z, nb);
    k->gemm(0, 0, n, m, nb, p->subtract ? -1.0f : 1.0f, Z, nb, p->basis, m, 1.0f, Y, m);
    return SDFED_OK;
}

void sdfed_projector_matrix(const sdfed_projector *p, float *R) {
    int m = p->m;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) {
            double s = 0.0;
            for (int b = 0; b < p->n_basis; b++) s += (double)p->basis[(size_t)b * m + i] * p->basis[(size_t)b * m + j];
            R[(size_t)i * m + j] = (float)(p->subtract ? (i == j) - s : s);
        }
}
