/* The Jacobi SVD and the projectors. Natively against LAPACK's sgesvd
 * (OpenBLAS): singular values within 1e-5 sigma_max, and projectors equal
 * within 1e-5 wherever the subspace is unique (a gap in the singular
 * values). Everywhere: reconstruction |A - U S V^T| <= 1e-5 max|A|, U and
 * V orthonormal within 1e-6, rank, the `paper` completion orthonormal and
 * orthogonal to the thin vectors, and the bits of a fixed case equal to a
 * constant, the same on every run, compiler and target. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "prompt/projector.h"

#if defined(SDFED_HAVE_LAPACK)
#endif

/* A portable generator so the fixed case has the same input everywhere. */
static uint64_t lcg_state;
static double lcg(void) {
    lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lcg_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* A = sum_i s_i u_i v_i^T with orthonormal u (S) and v (m) from Gram-Schmidt
 * of random vectors; s gives the spectrum. */
static float *matrix_with_spectrum(int S, int m, const double *s, double scale) {
    double *u = malloc(sizeof *u * S * S), *v = malloc(sizeof *v * S * m);
    for (int i = 0; i < S * S; i++) u[i] = lcg();
    for (int i = 0; i < S * m; i++) v[i] = lcg();
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < S; i++) {
            for (int j = 0; j < i; j++) {
                double du = 0, dv = 0;
                for (int k = 0; k < S; k++) du += u[i * S + k] * u[j * S + k];
                for (int k = 0; k < m; k++) dv += v[i * m + k] * v[j * m + k];
                for (int k = 0; k < S; k++) u[i * S + k] -= du * u[j * S + k];
                for (int k = 0; k < m; k++) v[i * m + k] -= dv * v[j * m + k];
            }
            double nu = 0, nv = 0;
            for (int k = 0; k < S; k++) nu += u[i * S + k] * u[i * S + k];
            for (int k = 0; k < m; k++) nv += v[i * m + k] * v[i * m + k];
            for (int k = 0; k < S; k++) u[i * S + k] /= sqrt(nu);
            for (int k = 0; k < m; k++) v[i * m + k] /= sqrt(nv);
        }
    float *A = malloc(sizeof *A * S * m);
    for (int r = 0; r < S; r++)
        for (int c = 0; c < m; c++) {
            double x = 0;
            for (int i = 0; i < S; i++) x += s[i] * u[r * S + i] * v[i * m + c];
            A[r * m + c] = (float)(x * scale);
        }
    free(u);
    free(v);
    return A;
}

static void check_factorisation(const char *name, const float *A, int S, int m, const sdfed_svd *svd) {
    double amax = 0, err = 0, orth_v = 0, orth_u = 0;
    for (int i = 0; i < S * m; i++) amax = fmax(amax, fabs(A[i]));
    for (int r = 0; r < S; r++)
        for (int c = 0; c < m; c++) {
            double x = 0;
            for (int i = 0; i < svd->rank; i++) x += svd->u[r * S + i] * svd->sigma[i] * svd->vt[i * m + c];
            err = fmax(err, fabs(x - A[r * m + c]));
        }
    for (int i = 0; i < svd->rank; i++)
        for (int j = 0; j < svd->rank; j++) {
            double d = 0;
            for (int c = 0; c < m; c++) d += svd->vt[i * m + c] * svd->vt[j * m + c];
            orth_v = fmax(orth_v, fabs(d - (i == j)));
        }
    for (int i = 0; i < S; i++)
        for (int j = 0; j < S; j++) {
            double d = 0;
            for (int r = 0; r < S; r++) d += svd->u[r * S + i] * svd->u[r * S + j];
            orth_u = fmax(orth_u, fabs(d - (i == j)));
        }
    CHECK(err <= 1e-5 * amax || amax == 0, "%s: reconstruction error %.2e (max |A| %.2e)", name, err, amax);
    CHECK(orth_v <= 1e-6 && orth_u <= 1e-6, "%s: V and U orthonormal (%.2e, %.2e)", name, orth_v, orth_u);
    int sorted = 1;
    for (int i = 1; i < S; i++) sorted &= svd->sigma[i] <= svd->sigma[i - 1];
    CHECK(sorted, "%s: singular values descending", name);
}

/* Max |R_a - R_b| of the projectors onto the spans of rows a and b (k x m). */
static double projector_distance(const double *a, const float *b, int k, int m) {
    double worst = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) {
            double ra = 0, rb = 0;
            for (int t = 0; t < k; t++) {
                ra += a[t * m + i] * a[t * m + j];
                rb += (double)b[t * m + i] * b[t * m + j];
            }
            worst = fmax(worst, fabs(ra - rb));
        }
    return worst;
}

#if defined(SDFED_HAVE_LAPACK)
/* LAPACK's sgesvd as OpenBLAS exports it (Fortran: column-major, arguments
 * by reference, the lengths of the two job strings last) */
void sgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, float *a, const int *lda, float *s,
             float *u, const int *ldu, float *vt, const int *ldvt, float *work, const int *lwork, int *info,
             size_t jobu_len, size_t jobvt_len);

/* LAPACK's singular values and right singular vectors (rows of vt) of the
 * row-major A (S, m), S <= m: A's memory is the column-major A^T (m, S),
 * whose left singular vectors, stored column-major, are vt's rows. */
static void lapack_svd(const float *A, int S, int m, float *sigma, float *vt) {
    float *a = malloc(sizeof *a * S * m), query, unused = 0;
    memcpy(a, A, sizeof *a * S * m);
    int lwork = -1, info = 0, one = 1;
    sgesvd_("S", "N", &m, &S, a, &m, sigma, vt, &m, &unused, &one, &query, &lwork, &info, 1, 1);
    lwork = (int)query;
    float *work = malloc(sizeof *work * (size_t)lwork);
    sgesvd_("S", "N", &m, &S, a, &m, sigma, vt, &m, &unused, &one, work, &lwork, &info, 1, 1);
    CHECK(info == 0, "sgesvd info %d", info);
    free(a);
    free(work);
}
#endif

static void test_case(const char *name, int S, int m, const double *s, double scale, int want_rank) {
    float *A = matrix_with_spectrum(S, m, s, scale);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    sdfed_svd svd;
    CHECK(sdfed_svd_thin(A, S, m, &svd, &arena, &err) == SDFED_OK, "%s: %s", name, err.message);
    CHECK(svd.rank == want_rank, "%s: rank %d, expected %d", name, svd.rank, want_rank);
    check_factorisation(name, A, S, m, &svd);
#if defined(SDFED_HAVE_LAPACK)
    float *sigma = malloc(sizeof *sigma * S), *vt = malloc(sizeof *vt * S * m);
    lapack_svd(A, S, m, sigma, vt);
    double worst = 0;
    for (int i = 0; i < S; i++) worst = fmax(worst, fabs(svd.sigma[i] - sigma[i]));
    CHECK(worst <= 1e-5 * fmax(sigma[0], FLT_MIN), "%s: singular values match sgesvd (%.2e of %.2e)", name, worst,
          sigma[0]);
    /* the span of the first k vectors is unique when sigma_k > sigma_k+1 */
    for (int k = 1; k <= svd.rank; k++) {
        if (k < S && svd.sigma[k - 1] - svd.sigma[k] < 1e-3 * svd.sigma[0]) continue;
        double d = projector_distance(svd.vt, vt, k, m);
        CHECK(d <= 1e-5, "%s: projector onto the top %d directions matches sgesvd's (%.2e)", name, k, d);
    }
    free(sigma);
    free(vt);
#endif
    sdfed_arena_free(&arena);
    free(A);
}

static void test_projectors(void) {
    int S = 8, m = 96;
    double s[8] = {5, 4, 3, 2.5, 2, 1, 0.5, 0.25};
    lcg_state = 11;
    float *A = matrix_with_spectrum(S, m, s, 1.0);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    sdfed_projector p;
    float *R = malloc(sizeof *R * m * m);
    /* complement with r >= rank: R annihilates every row of A */
    CHECK(sdfed_projector_build(A, S, m, SDFED_PROJECTOR_COMPLEMENT, 0.6f, &p, &arena, &err) == SDFED_OK, "complement");
    CHECK(p.subtract && p.n_basis == 8, "complement keeps I - the 8 thin directions");
    float *Y = malloc(sizeof *Y * S * m);
    sdfed_projector_apply(&p, sdfed_kernels_default(), A, S, Y, &arena, &err);
    double worst = 0;
    for (int i = 0; i < S * m; i++) worst = fmax(worst, fabs(Y[i]));
    CHECK(worst < 1e-5, "G_s R = 0 for the complement projector (%.2e)", worst);
    /* complement with lambda = 3/96: only the top 3 directions go */
    sdfed_projector_build(A, S, m, SDFED_PROJECTOR_COMPLEMENT, 3.0f / 96, &p, &arena, &err);
    CHECK(p.n_basis == 3, "complement with r = 3 removes 3 directions (%d)", p.n_basis);
    /* rowspace: r' = floor(0.5 * 8) = 4, R projects on thin vectors 5..8 */
    sdfed_projector_build(A, S, m, SDFED_PROJECTOR_ROWSPACE, 0.5f, &p, &arena, &err);
    CHECK(!p.subtract && p.n_basis == 4, "rowspace keeps thin vectors 5..8 (%d)", p.n_basis);
    double dist = projector_distance(p.svd.vt + 4 * m, p.basis, 4, m);
    CHECK(dist < 1e-6, "rowspace basis is those vectors (%.2e)", dist);
    /* paper: X_2 = columns r+1..m of [thin vectors, completion], r = 57 */
    sdfed_projector_build(A, S, m, SDFED_PROJECTOR_PAPER, 0.6f, &p, &arena, &err);
    CHECK(!p.subtract && p.n_basis == m - 57, "paper keeps m - r = %d vectors (%d)", m - 57, p.n_basis);
    double orth = 0, against_thin = 0;
    for (int i = 0; i < p.n_basis; i++) {
        for (int j = 0; j < p.n_basis; j++) {
            double d = 0;
            for (int c = 0; c < m; c++) d += (double)p.basis[i * m + c] * p.basis[j * m + c];
            orth = fmax(orth, fabs(d - (i == j)));
        }
        for (int t = 0; t < p.svd.rank; t++) {
            double d = 0;
            for (int c = 0; c < m; c++) d += (double)p.basis[i * m + c] * p.svd.vt[t * m + c];
            against_thin = fmax(against_thin, fabs(d));
        }
    }
    CHECK(orth < 1e-6, "paper completion is orthonormal (%.2e)", orth);
    CHECK(against_thin < 1e-6, "paper completion is orthogonal to the thin vectors (%.2e)", against_thin);
    sdfed_projector_matrix(&p, R);
    double idem = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) {
            double d = 0;
            for (int t = 0; t < m; t++) d += (double)R[i * m + t] * R[t * m + j];
            idem = fmax(idem, fabs(d - R[i * m + j]));
        }
    CHECK(idem < 1e-5, "paper R is a projector, R R = R (%.2e)", idem);
    /* lambda 0 keeps everything; lambda 1 removes everything */
    sdfed_projector_build(A, S, m, SDFED_PROJECTOR_PAPER, 0.0f, &p, &arena, &err);
    CHECK(p.n_basis == m, "paper with lambda 0 keeps the whole basis");
    sdfed_projector_build(A, S, m, SDFED_PROJECTOR_PAPER, 1.0f, &p, &arena, &err);
    CHECK(p.n_basis == 0, "paper with lambda 1 keeps nothing");
    CHECK(sdfed_projector_build(A, S, m, SDFED_PROJECTOR_PAPER, 1.5f, &p, &arena, &err) == SDFED_ERR_ARG,
          "lambda outside [0, 1] refused");
    CHECK(sdfed_projector_from_name("complement") == SDFED_PROJECTOR_COMPLEMENT &&
              sdfed_projector_from_name("paper") == SDFED_PROJECTOR_PAPER &&
              sdfed_projector_from_name("rowspace") == SDFED_PROJECTOR_ROWSPACE && sdfed_projector_from_name("x") < 0,
          "projector names");
    sdfed_arena_free(&arena);
    free(A);
    free(R);
    free(Y);
}

static uint64_t fnv1a(const void *data, size_t n, uint64_t h) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* The bits of the paper basis and the singular values of a fixed input;
 * the constant was printed by the native build and holds on every target. */
static void test_determinism(void) {
    int S = 8, m = 512;
    lcg_state = 2026;
    float *A = malloc(sizeof *A * S * m);
    for (int i = 0; i < S * m; i++) A[i] = (float)(0.02 * lcg());
    uint64_t hashes[2];
    for (int run = 0; run < 2; run++) {
        sdfed_arena arena;
        sdfed_arena_init(&arena);
        sdfed_projector p;
        sdfed_projector_build(A, S, m, SDFED_PROJECTOR_PAPER, 0.6f, &p, &arena, NULL);
        hashes[run] = fnv1a(p.basis, sizeof(float) * p.n_basis * m, 14695981039346656037ull);
        hashes[run] = fnv1a(p.svd.sigma, sizeof(double) * S, hashes[run]);
        sdfed_arena_free(&arena);
    }
    printf("paper basis hash: %016llx\n", (unsigned long long)hashes[0]);
    CHECK(hashes[0] == hashes[1], "the same bits on every run");
    CHECK(hashes[0] == 0xabb3167c8729a800ull, "the same bits as every other build (%016llx)",
          (unsigned long long)hashes[0]);
    free(A);
}

static void test_errors(void) {
    float A[8] = {1, 2, 3, 4, 5, 6, 7, NAN};
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_svd svd;
    sdfed_error err = {0};
    CHECK(sdfed_svd_thin(A, 2, 4, &svd, &arena, &err) == SDFED_ERR_NUMERIC, "NaN refused: %s", err.message);
    CHECK(sdfed_svd_thin(A, 4, 2, &svd, &arena, &err) == SDFED_ERR_ARG, "tall matrix refused: %s", err.message);
    sdfed_arena_free(&arena);
}

int main(void) {
    double full8[8] = {9, 7, 5, 4, 3, 2, 1.5, 1};
    double full64[64], rank3[8] = {3, 2, 1, 0, 0, 0, 0, 0}, zero[8] = {0}, repeated[8] = {3, 3, 3, 1, 1, 0.5, 0.5, 0.1};
    for (int i = 0; i < 64; i++) full64[i] = 10.0 / (1 + i);
    double one[1] = {2.5};
    lcg_state = 1;
    test_case("8x512", 8, 512, full8, 1.0, 8);
    test_case("64x512", 64, 512, full64, 1.0, 64);
    test_case("64x1024", 64, 1024, full64, 1.0, 64);
    test_case("1x512", 1, 512, one, 1.0, 1);
    test_case("rank-deficient 8x512 (rank 3)", 8, 512, rank3, 1.0, 3);
    test_case("all zero 8x512", 8, 512, zero, 1.0, 0);
    test_case("repeated singular values", 8, 512, repeated, 1.0, 8);
    test_case("large scale (1e30)", 8, 512, full8, 1e30, 8);
    test_case("small scale (1e-30)", 8, 512, full8, 1e-30, 8);
    test_projectors();
    test_determinism();
    test_errors();
    return check_report("test_svd");
}
