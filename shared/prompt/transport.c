/* FedOTP's Sinkhorn iterations and transport-weighted score (transport.h). */
#include "prompt/transport.h"

#include <math.h>
#include <stddef.h>

#include "prompt/losses.h"

const sdfed_name sdfed_transport_kind_names[] = {
    [SDFED_TRANSPORT_BALANCED] = {.name = "balanced", .value = SDFED_TRANSPORT_BALANCED},
    [SDFED_TRANSPORT_PARTIAL] = {.name = "partial", .value = SDFED_TRANSPORT_PARTIAL},
};

const char *sdfed_transport_kind_name(int kind) {
    return sdfed_name_of(sdfed_transport_kind_names, SDFED_TRANSPORT_KINDS, kind);
}

sdfed_transport sdfed_transport_defaults(void) {
    return (sdfed_transport){
        .kind = SDFED_TRANSPORT_PARTIAL, .epsilon = 0.1, .mass = 0.8, .max_iterations = 100, .threshold = 1e-3};
}

size_t sdfed_transport_scratch_size(int M, int N) { return (size_t)M * N + (size_t)M + (size_t)N; }

int sdfed_transport_check(const sdfed_transport *t, sdfed_error *err) {
    if (t->kind != SDFED_TRANSPORT_BALANCED && t->kind != SDFED_TRANSPORT_PARTIAL)
        return sdfed_fail(err, SDFED_ERR_ARG, "transport: unknown kind %d", (int)t->kind);
    if (!(t->epsilon > 0) || !isfinite(t->epsilon))
        return sdfed_fail(err, SDFED_ERR_ARG, "transport: epsilon must be positive and finite (got %g)", t->epsilon);
    if (!(t->mass > 0 && t->mass <= 1))
        return sdfed_fail(err, SDFED_ERR_ARG, "transport: mass must be in (0, 1] (got %g)", t->mass);
    if (t->kind == SDFED_TRANSPORT_BALANCED && t->mass != 1)
        return sdfed_fail(err, SDFED_ERR_ARG, "transport: balanced transport moves mass 1 (got %g)", t->mass);
    if (t->max_iterations < 1)
        return sdfed_fail(err, SDFED_ERR_ARG, "transport: max_iterations must be at least 1 (got %d)",
                          t->max_iterations);
    if (!(t->threshold >= 0) || !isfinite(t->threshold))
        return sdfed_fail(err, SDFED_ERR_ARG, "transport: threshold must be >= 0 and finite (got %g)", t->threshold);
    return SDFED_OK;
}

/* u (M) <- a / (K v), capped at 1 when partial; returns mean |u - u_prev|. */
static double update_rows(double *u, const double *K, const double *v, int M, int N, double a, int partial) {
    double change = 0;
    for (int m = 0; m < M; m++) {
        const double *K_m = K + (size_t)m * N;
        double Kv = 0;
        for (int n = 0; n < N; n++) Kv += K_m[n] * v[n];
        double next = a / Kv;
        if (partial && next > 1) next = 1;
        change += fabs(next - u[m]);
        u[m] = next;
    }
    return change / M;
}

/* v (N) <- b / (K^T u); returns mean |v - v_prev|. */
static double update_columns(double *v, const double *K, const double *u, int M, int N, double b) {
    double change = 0;
    for (int n = 0; n < N; n++) {
        double Ku = 0;
        for (int m = 0; m < M; m++) Ku += K[(size_t)m * N + n] * u[m];
        double next = b / Ku;
        change += fabs(next - v[n]);
        v[n] = next;
    }
    return change / N;
}

int sdfed_transport_plan(const sdfed_transport *t, const float *sim, int M, int N, float *plan, double *u, double *v,
                         int *iterations, double *kernel, sdfed_error *err) {
    int rc = sdfed_transport_check(t, err);
    if (rc) return rc;
    if (M < 1 || N < 1) return sdfed_fail(err, SDFED_ERR_ARG, "transport: empty problem (%d x %d)", M, N);
    size_t MN = (size_t)M * N;
    double *K = kernel;
    for (size_t i = 0; i < MN; i++) {
        if (!isfinite(sim[i])) return sdfed_fail(err, SDFED_ERR_NUMERIC, "transport: similarities hold NaN or Inf");
        K[i] = exp(-(1.0 - (double)sim[i]) / t->epsilon);
    }
    for (int m = 0; m < M; m++) u[m] = 1;
    for (int n = 0; n < N; n++) v[n] = 1;
    double a = 1.0 / M, b = t->mass / N;
    int partial = t->kind == SDFED_TRANSPORT_PARTIAL, done = 0;
    while (done < t->max_iterations) {
        double row_change = update_rows(u, K, v, M, N, a, partial);
        double column_change = update_columns(v, K, u, M, N, b);
        done++;
        /* FedOTP watches the scaling its loop computes first (Sinkhorn) or
         * last (entropic_COT_fast) */
        if ((partial ? column_change : row_change) < t->threshold) break;
    }
    if (iterations) *iterations = done;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double T_mn = u[m] * K[(size_t)m * N + n] * v[n];
            if (!isfinite(T_mn))
                return sdfed_fail(err, SDFED_ERR_NUMERIC,
                                  "transport: the plan is not finite (epsilon %g too small for these costs?)",
                                  t->epsilon);
            plan[(size_t)m * N + n] = (float)T_mn;
        }
    return SDFED_OK;
}

int sdfed_transport_score_forward(const sdfed_transport *t, double *score, float *sim, float *plan,
                                  const float *patches, const float *prompts, int M, int N, int D, double *scratch,
                                  sdfed_error *err) {
    double *u = scratch + (size_t)M * N, *v = u + M;
    sdfed_logits_forward(sim, patches, prompts, M, N, D, 1.0f);
    int rc = sdfed_transport_plan(t, sim, M, N, plan, u, v, NULL, scratch, err);
    if (rc) return rc;
    double sum = 0;
    for (size_t i = 0; i < (size_t)M * N; i++) sum += (double)plan[i] * sim[i];
    *score = sum;
    return SDFED_OK;
}

void sdfed_transport_score_backward(float *d_prompts, const float *plan, const float *patches, int M, int N, int D,
                                    float weight) {
    /* d s / d sim = plan (a constant); sim = patches @ prompts^T */
    sdfed_logits_backward(d_prompts, plan, patches, M, N, D, weight);
}
