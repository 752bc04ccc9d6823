/* Tests of FedOTP's optimal transport (prompt/transport.h): the balanced
 * plan against the closed form of a 2 x 2 problem and against a long-run
 * matrix-scaling reference written here, its marginals met to 1e-5; the
 * partial plan's fixed-point equations and constraints, and with mass 1 the
 * balanced plan; FedOTP's stopping rule; the score against its definition
 * and its gradient (the plan a constant) by central differences, through the
 * L2 normalisation of the prompt features; and every refusal. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "check.h"
#include "clip/layers.h"
#include "prompt/transport.h"

/* every problem's kernel and scalings (the largest problem here is 196 x 2) */
static double scratch[4096];

/* rows (n, D) of unit length, random directions */
static void unit_rows(float *x, int n, int D, sdfed_rng *r) {
    for (int i = 0; i < n * D; i++) x[i] = (float)sdfed_rng_normal(r);
    float *norms = malloc(sizeof(float) * n);
    sdfed_l2_normalize_forward(x, norms, x, n, D);
    free(norms);
}

/* sim (M, N) = x (M, D) @ y (N, D)^T in double */
static void cosines(float *sim, const float *x, const float *y, int M, int N, int D) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = 0;
            for (int d = 0; d < D; d++) s += (double)x[m * D + d] * y[n * D + d];
            sim[m * N + n] = (float)s;
        }
}

/* largest |row sum - a| and |column sum - b| of plan (M, N) */
static void marginal_errors(const float *plan, int M, int N, double a, double b, double *row_err, double *col_err) {
    *row_err = 0;
    *col_err = 0;
    for (int m = 0; m < M; m++) {
        double s = 0;
        for (int n = 0; n < N; n++) s += plan[m * N + n];
        *row_err = fmax(*row_err, fabs(s - a));
    }
    for (int n = 0; n < N; n++) {
        double s = 0;
        for (int m = 0; m < M; m++) s += plan[m * N + n];
        *col_err = fmax(*col_err, fabs(s - b));
    }
}

static double max_abs_diff(const float *p, const double *q, int n) {
    double e = 0;
    for (int i = 0; i < n; i++) e = fmax(e, fabs(p[i] - q[i]));
    return e;
}

/* The balanced 2 x 2 problem in closed form: with marginals a = b = (1/2,
 * 1/2) the plan is [[x, 1/2 - x], [1/2 - x, x]], and T = diag(u) K diag(v)
 * means T11 T22 / (T12 T21) = q = K11 K22 / (K12 K21), so
 * x^2 = q (1/2 - x)^2, x = sqrt(q) / (2 (1 + sqrt(q))). */
static void test_balanced_2x2(void) {
    const float sims[2][4] = {{0.9f, 0.2f, -0.3f, 0.6f}, {0.31f, 0.3f, 0.28f, 0.33f}};
    const double epsilons[2] = {0.1, 0.5};
    for (int c = 0; c < 2; c++)
        for (int e = 0; e < 2; e++) {
            const float *sim = sims[c];
            double eps = epsilons[e], K[4];
            for (int i = 0; i < 4; i++) K[i] = exp(-(1.0 - sim[i]) / eps);
            double rq = sqrt(K[0] * K[3] / (K[1] * K[2]));
            double x = rq / (2 * (1 + rq));
            double want[4] = {x, 0.5 - x, 0.5 - x, x};
            sdfed_transport t = {.kind = SDFED_TRANSPORT_BALANCED,
                                 .epsilon = eps,
                                 .mass = 1.0,
                                 .max_iterations = 200000,
                                 .threshold = 0.0};
            float plan[4];
            double u[2], v[2];
            int iterations = 0;
            sdfed_error err = {0};
            CHECK(sdfed_transport_plan(&t, sim, 2, 2, plan, u, v, &iterations, scratch, &err) == SDFED_OK, "2x2: %s",
                  err.message);
            CHECK(iterations == 200000, "threshold 0 runs every iteration (%d)", iterations);
            double e_plan = max_abs_diff(plan, want, 4), row_err, col_err;
            marginal_errors(plan, 2, 2, 0.5, 0.5, &row_err, &col_err);
            CHECK(e_plan < 1e-7, "2x2 case %d, eps %g: the plan is the closed form (max |diff| %.2e)", c, eps, e_plan);
            CHECK(row_err < 1e-5 && col_err < 1e-5, "2x2 case %d, eps %g: marginals met (%.2e, %.2e)", c, eps, row_err,
                  col_err);
        }
}

/* Sinkhorn-Knopp on the matrix itself, in double: scale the rows to a, then
 * the columns to b, `rounds` times. */
static void reference_plan(double *P, const float *sim, int M, int N, double eps, double a, double b, int rounds) {
    for (int i = 0; i < M * N; i++) P[i] = exp(-(1.0 - sim[i]) / eps);
    for (int r = 0; r < rounds; r++) {
        for (int m = 0; m < M; m++) {
            double s = 0;
            for (int n = 0; n < N; n++) s += P[m * N + n];
            for (int n = 0; n < N; n++) P[m * N + n] *= a / s;
        }
        for (int n = 0; n < N; n++) {
            double s = 0;
            for (int m = 0; m < M; m++) s += P[m * N + n];
            for (int m = 0; m < M; m++) P[m * N + n] *= b / s;
        }
    }
}

/* Patches x prompts of FedOTP's shapes (ViT-B/16: 196 patches; 2 prompts)
 * and a small odd one, real cosines of random unit vectors. */
static void test_balanced_reference(void) {
    const int shapes[3][3] = {{7, 3, 16}, {196, 2, 64}, {49, 4, 32}};
    const double epsilons[2] = {0.1, 0.01};
    sdfed_rng r;
    sdfed_rng_seed(&r, 7);
    for (int s = 0; s < 3; s++)
        for (int e = 0; e < 2; e++) {
            int M = shapes[s][0], N = shapes[s][1], D = shapes[s][2];
            double eps = epsilons[e];
            float *x = malloc(sizeof(float) * M * D), *y = malloc(sizeof(float) * N * D);
            float *sim = malloc(sizeof(float) * M * N), *plan = malloc(sizeof(float) * M * N);
            double *want = malloc(sizeof(double) * M * N), *u = malloc(sizeof(double) * M),
                   *v = malloc(sizeof(double) * N);
            unit_rows(x, M, D, &r);
            unit_rows(y, N, D, &r);
            cosines(sim, x, y, M, N, D);
            reference_plan(want, sim, M, N, eps, 1.0 / M, 1.0 / N, 20000);
            sdfed_transport t = {.kind = SDFED_TRANSPORT_BALANCED,
                                 .epsilon = eps,
                                 .mass = 1.0,
                                 .max_iterations = 20000,
                                 .threshold = 1e-15};
            sdfed_error err = {0};
            int iterations;
            CHECK(sdfed_transport_plan(&t, sim, M, N, plan, u, v, &iterations, scratch, &err) == SDFED_OK, "%s",
                  err.message);
            double row_err, col_err;
            marginal_errors(plan, M, N, 1.0 / M, 1.0 / N, &row_err, &col_err);
            CHECK(row_err < 1e-5 && col_err < 1e-5, "%dx%d eps %g: marginals met (rows %.2e, columns %.2e)", M, N, eps,
                  row_err, col_err);
            double e_plan = max_abs_diff(plan, want, M * N);
            CHECK(e_plan < 1e-7, "%dx%d eps %g: the plan is the long-run reference's (max |diff| %.2e, %d iterations)",
                  M, N, eps, e_plan, iterations);

            /* FedOTP's settings: columns exact after every iteration, stops
             * early on the row scalings' mean change */
            sdfed_transport fedotp = {.kind = SDFED_TRANSPORT_BALANCED,
                                      .epsilon = eps,
                                      .mass = 1.0,
                                      .max_iterations = 100,
                                      .threshold = 1e-3};
            sdfed_transport_plan(&fedotp, sim, M, N, plan, u, v, &iterations, scratch, &err);
            marginal_errors(plan, M, N, 1.0 / M, 1.0 / N, &row_err, &col_err);
            CHECK(col_err < 1e-6 && iterations >= 1 && iterations <= 100,
                  "%dx%d eps %g, FedOTP's 100 iterations / 1e-3: columns met (%.2e) in %d iterations", M, N, eps,
                  col_err, iterations);
            free(x);
            free(y);
            free(sim);
            free(plan);
            free(want);
            free(u);
            free(v);
        }
}

/* The partial plan (FedOTP's COT): after a long run u = min(a / (K v), 1)
 * and v = b / (K^T u) hold, T^T 1 = b, T 1 <= a, the total mass is `mass`,
 * and some patches are left partly unused; with mass 1 it is the balanced
 * plan. */
static void test_partial(void) {
    const int M = 49, N = 4, D = 32;
    sdfed_rng r;
    sdfed_rng_seed(&r, 8);
    float x[49 * 32], y[4 * 32], sim[49 * 4], plan[49 * 4], balanced[49 * 4];
    double u[49], v[4], u_b[49], v_b[4];
    unit_rows(x, M, D, &r);
    unit_rows(y, N, D, &r);
    cosines(sim, x, y, M, N, D);
    const double epsilons[2] = {0.1, 0.01}, masses[2] = {0.8, 0.5};
    sdfed_error err = {0};
    for (int e = 0; e < 2; e++)
        for (int g = 0; g < 2; g++) {
            double eps = epsilons[e], mass = masses[g], a = 1.0 / M, b = mass / N;
            sdfed_transport t = {.kind = SDFED_TRANSPORT_PARTIAL,
                                 .epsilon = eps,
                                 .mass = mass,
                                 .max_iterations = 5000,
                                 .threshold = 1e-15};
            CHECK(sdfed_transport_plan(&t, sim, M, N, plan, u, v, NULL, scratch, &err) == SDFED_OK, "%s", err.message);
            double worst_u = 0, worst_v = 0, over = 0, total = 0;
            int unused = 0, full = 0;
            for (int m = 0; m < M; m++) {
                double Kv = 0, row = 0;
                for (int n = 0; n < N; n++) {
                    Kv += exp(-(1.0 - sim[m * N + n]) / eps) * v[n];
                    row += plan[m * N + n];
                }
                worst_u = fmax(worst_u, fabs(u[m] - fmin(a / Kv, 1.0)) / u[m]);
                over = fmax(over, row - a);
                total += row;
                if (row < a * (1 - 1e-3)) unused++;
                if (fabs(row - a) < 1e-6 * a) full++;
            }
            for (int n = 0; n < N; n++) {
                double Ku = 0;
                for (int m = 0; m < M; m++) Ku += exp(-(1.0 - sim[m * N + n]) / eps) * u[m];
                worst_v = fmax(worst_v, fabs(v[n] - b / Ku) / v[n]);
            }
            double row_err, col_err;
            marginal_errors(plan, M, N, a, b, &row_err, &col_err);
            CHECK(worst_u < 1e-9 && worst_v < 1e-9, "eps %g mass %g: the fixed point holds (u %.2e, v %.2e)", eps, mass,
                  worst_u, worst_v);
            CHECK(col_err < 1e-6 && over < 1e-7 && fabs(total - mass) < 1e-5,
                  "eps %g mass %g: T^T 1 = b (%.2e), T 1 <= a (over by %.2e), mass %.6f", eps, mass, col_err, over,
                  total);
            CHECK(unused > 0 && full > 0, "eps %g mass %g: %d patches partly unused, %d used in full", eps, mass,
                  unused, full);
        }

    /* mass 1: nothing can be left unused, the balanced optimum */
    sdfed_transport partial = {
        .kind = SDFED_TRANSPORT_PARTIAL, .epsilon = 0.1, .mass = 1.0, .max_iterations = 20000, .threshold = 1e-15};
    sdfed_transport full = {
        .kind = SDFED_TRANSPORT_BALANCED, .epsilon = 0.1, .mass = 1.0, .max_iterations = 20000, .threshold = 1e-15};
    sdfed_transport_plan(&partial, sim, M, N, plan, u, v, NULL, scratch, &err);
    sdfed_transport_plan(&full, sim, M, N, balanced, u_b, v_b, NULL, scratch, &err);
    double diff = 0;
    for (int i = 0; i < M * N; i++) diff = fmax(diff, fabs((double)plan[i] - balanced[i]));
    CHECK(diff < 1e-7, "partial transport of mass 1 is the balanced plan (max |diff| %.2e)", diff);
}

/* FedOTP's loop: with threshold t it stops at the first iteration whose mean
 * change of the watched scaling is below t; a tighter threshold runs longer;
 * the same inputs give the same bits. */
static void test_stopping(void) {
    const int M = 196, N = 2, D = 64;
    sdfed_rng r;
    sdfed_rng_seed(&r, 9);
    float *x = malloc(sizeof(float) * M * D), y[2 * 64], sim[196 * 2], plan[196 * 2], again[196 * 2];
    double u[196], v[2];
    unit_rows(x, M, D, &r);
    unit_rows(y, N, D, &r);
    cosines(sim, x, y, M, N, D);
    sdfed_error err = {0};
    for (int kind = 0; kind < SDFED_TRANSPORT_KINDS; kind++) {
        double mass = kind == SDFED_TRANSPORT_PARTIAL ? 0.8 : 1.0;
        sdfed_transport loose = {.kind = kind, .epsilon = 0.1, .mass = mass, .max_iterations = 100, .threshold = 1e-3},
                        tight = {kind, 0.1, mass, 100000, 1e-12};
        int n_loose, n_tight, n_before;
        sdfed_transport_plan(&loose, sim, M, N, plan, u, v, &n_loose, scratch, &err);
        sdfed_transport_plan(&loose, sim, M, N, again, u, v, NULL, scratch, &err);
        CHECK(!memcmp(plan, again, sizeof plan), "kind %d: the same inputs give the same bits", kind);
        sdfed_transport_plan(&tight, sim, M, N, plan, u, v, &n_tight, scratch, &err);
        CHECK(n_loose < 100 && n_tight > n_loose && n_tight < 100000,
              "kind %d: FedOTP's threshold stops early (%d iterations), 1e-12 later (%d)", kind, n_loose, n_tight);
        /* one iteration fewer than the loose run took: the change was still
         * above the threshold then (the run did not stop early) */
        sdfed_transport shorter = {
            .kind = kind, .epsilon = 0.01, .mass = mass, .max_iterations = n_loose - 1, .threshold = 1e-3};
        if (n_loose > 1) {
            sdfed_transport_plan(&shorter, sim, M, N, plan, u, v, &n_before, scratch, &err);
            CHECK(n_before == n_loose - 1, "kind %d: no earlier stop (%d)", kind, n_before);
        }
    }
    free(x);
}

/* s = sum T * sim: the forward against the definition, and the gradient
 * with the plan held constant against central differences of
 * s(y) = sum_mn T_mn x_m . y_n / ||y_n|| in unnormalised prompt features y. */
static void test_score(void) {
    const int M = 16, N = 3, D = 24;
    sdfed_rng r;
    sdfed_rng_seed(&r, 10);
    float x[16 * 24], raw[3 * 24], y[3 * 24], norms[3], sim[16 * 3], plan[16 * 3];
    unit_rows(x, M, D, &r);
    for (int i = 0; i < N * D; i++) raw[i] = (float)(0.3 * sdfed_rng_normal(&r));
    sdfed_l2_normalize_forward(y, norms, raw, N, D);
    sdfed_transport t = {
        .kind = SDFED_TRANSPORT_PARTIAL, .epsilon = 0.1, .mass = 0.8, .max_iterations = 100, .threshold = 1e-3};
    sdfed_error err = {0};
    double score;
    CHECK(sdfed_transport_score_forward(&t, &score, sim, plan, x, y, M, N, D, scratch, &err) == SDFED_OK, "%s",
          err.message);
    double direct = 0, worst_sim = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = 0;
            for (int d = 0; d < D; d++) s += (double)x[m * D + d] * y[n * D + d];
            worst_sim = fmax(worst_sim, fabs(s - sim[m * N + n]));
            direct += plan[m * N + n] * s;
        }
    CHECK(worst_sim < 1e-6 && fabs(score - direct) < 1e-6, "the score is sum T * cos (sim %.2e, score %.2e)", worst_sim,
          fabs(score - direct));

    float d_y[3 * 24] = {0}, d_raw[3 * 24] = {0};
    sdfed_transport_score_backward(d_y, plan, x, M, N, D, 1.0f);
    sdfed_l2_normalize_backward(d_raw, d_y, y, norms, N, D);
    double worst = 0, scale = 0;
    for (int i = 0; i < N * D; i++) {
        double h = 1e-3, s_plus = 0, s_minus = 0;
        for (int side = 0; side < 2; side++) {
            /* s(raw with raw_i moved by +-h), in double, the plan fixed */
            double *s_out = side ? &s_minus : &s_plus;
            int n = i / D;
            double yn[24], nn = 0, step = side ? -h : h;
            for (int d = 0; d < D; d++) {
                yn[d] = raw[n * D + d] + (d == i % D ? step : 0);
                nn += yn[d] * yn[d];
            }
            for (int m = 0; m < M; m++) {
                double dot = 0;
                for (int d = 0; d < D; d++) dot += x[m * D + d] * yn[d];
                *s_out += plan[m * N + n] * dot / sqrt(nn);
            }
        }
        double fd = (s_plus - s_minus) / (2 * h);
        worst = fmax(worst, fabs(fd - d_raw[i]));
        scale = fmax(scale, fabs(fd));
    }
    CHECK(worst / scale < 1e-4, "d score / d prompt features by central differences (rel %.2e)", worst / scale);
}

static void test_refusals(void) {
    float sim[4] = {0.1f, 0.2f, 0.3f, 0.4f}, plan[4];
    double u[2], v[2];
    sdfed_error err = {0};
    const sdfed_transport bad[] = {
        {.kind = SDFED_TRANSPORT_PARTIAL, .epsilon = 0.0, .mass = 0.8, .max_iterations = 100, .threshold = 1e-3},
        {.kind = SDFED_TRANSPORT_PARTIAL, .epsilon = NAN, .mass = 0.8, .max_iterations = 100, .threshold = 1e-3},
        {.kind = SDFED_TRANSPORT_PARTIAL, .epsilon = 0.1, .mass = 1.2, .max_iterations = 100, .threshold = 1e-3},
        {.kind = SDFED_TRANSPORT_PARTIAL, .epsilon = 0.1, .mass = 0.0, .max_iterations = 100, .threshold = 1e-3},
        {.kind = SDFED_TRANSPORT_BALANCED, .epsilon = 0.1, .mass = 0.8, .max_iterations = 100, .threshold = 1e-3},
        {.kind = SDFED_TRANSPORT_PARTIAL, .epsilon = 0.1, .mass = 0.8, .max_iterations = 0, .threshold = 1e-3},
        {.kind = SDFED_TRANSPORT_PARTIAL, .epsilon = 0.1, .mass = 0.8, .max_iterations = 100, .threshold = -1.0},
        {.kind = SDFED_TRANSPORT_KINDS, .epsilon = 0.1, .mass = 0.8, .max_iterations = 100, .threshold = 1e-3},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(sdfed_transport_plan(&bad[i], sim, 2, 2, plan, u, v, NULL, scratch, &err) == SDFED_ERR_ARG &&
                  strstr(err.message, "transport"),
              "configuration %zu refused: %s", i, err.message);
    }
    sdfed_transport good = {
        .kind = SDFED_TRANSPORT_PARTIAL, .epsilon = 0.1, .mass = 0.8, .max_iterations = 100, .threshold = 1e-3};
    CHECK(sdfed_transport_plan(&good, sim, 0, 2, plan, u, v, NULL, scratch, &err) == SDFED_ERR_ARG, "empty problem");
    sim[2] = NAN;
    CHECK(sdfed_transport_plan(&good, sim, 2, 2, plan, u, v, NULL, scratch, &err) == SDFED_ERR_NUMERIC,
          "NaN similarities refused");
    /* costs of 2 with epsilon 1e-4: the kernel underflows to 0 in double */
    float opposite[4] = {-1.0f, -1.0f, -1.0f, -1.0f};
    sdfed_transport tiny = {
        .kind = SDFED_TRANSPORT_PARTIAL, .epsilon = 1e-4, .mass = 0.8, .max_iterations = 100, .threshold = 1e-3};
    CHECK(sdfed_transport_plan(&tiny, opposite, 2, 2, plan, u, v, NULL, scratch, &err) == SDFED_ERR_NUMERIC &&
              strstr(err.message, "epsilon"),
          "an epsilon too small for the costs: %s", err.message);
}

int main(void) {
    test_balanced_2x2();
    test_balanced_reference();
    test_partial();
    test_stopping();
    test_score();
    test_refusals();
    return check_report("test_transport");
}
