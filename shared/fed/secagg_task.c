/* Secure aggregation as a task runs it (see secagg_task.h). */
#include "fed/secagg_task.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fed/round.h"
#include "fed/secagg_accountant.h"
#include "fed/secagg_noise.h"

/* one round's rho with each client adding sigma2 */
static double round_rho(const sdfed_secagg_plan *p, uint64_t sigma2) {
    sdfed_secagg_dp dp = {
        .l2_bound = p->l2_bound, .sigma2 = sigma2, .min_inputs = p->params.min_inputs, .dims = p->dims};
    double rho = INFINITY;
    sdfed_error ignored = {0};
    sdfed_secagg_dp_rho(&dp, &rho, &ignored);
    return rho;
}

/* epsilon after `rounds` rounds of rho each */
static double run_epsilon(double rho, int rounds, double delta) {
    double epsilon = INFINITY;
    sdfed_error ignored = {0};
    sdfed_secagg_dp_epsilon(rho, rounds, delta, &epsilon, &ignored);
    return epsilon;
}

/* p->sigma2 and p->rho for the task's epsilon over its rounds */
static int calibrate(const sdfed_task *t, sdfed_secagg_plan *p, sdfed_error *err) {
    const sdfed_task_secagg *s = &t->secagg;
    /* the largest rho per round within the budget: bracketed, then bisected in log space */
    double lo = 0, hi = 1e-12;
    while (run_epsilon(hi, t->rounds, s->delta) <= s->epsilon && hi < 1e12) {
        lo = hi;
        hi *= 4;
    }
    for (int i = 0; i < 200 && lo > 0; i++) {
        double mid = sqrt(lo * hi);
        if (run_epsilon(mid, t->rounds, s->delta) <= s->epsilon)
            lo = mid;
        else
            hi = mid;
    }
    if (!(lo > 0))
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "task: key 'secure_aggregation.noise.epsilon' %g at delta %g over %d rounds is below what "
                          "any noise reaches",
                          s->epsilon, s->delta, t->rounds);
    /* the least sigma_c^2 whose round spends at most that */
    uint64_t least = 1, most = SDFED_DGAUSS_MAX_SIGMA2;
    if (round_rho(p, most) > lo)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "task: key 'secure_aggregation.noise.epsilon' %g over %d rounds needs each client's noise "
                          "above sigma^2 = 2^48 for %d inputs of L2 norm up to %.4g (quant_bits %d, max_weight %lld, "
                          "l2_clip %g); raise epsilon, or lower quant_bits or max_weight, or set l2_clip",
                          s->epsilon, t->rounds, p->params.min_inputs, p->l2_bound, s->quant_bits,
                          (long long)s->max_weight, s->l2_clip);
    while (least < most) {
        uint64_t mid = least + (most - least) / 2;
        if (round_rho(p, mid) <= lo)
            most = mid;
        else
            least = mid + 1;
    }
    p->sigma2 = least;
    p->rho = round_rho(p, least);
    p->ring.noise_bound = sdfed_secagg_noise_bound(least, p->params.n);
    return SDFED_OK;
}

int sdfed_secagg_plan_make(const sdfed_task *t, int n, size_t P, sdfed_secagg_plan *out, sdfed_error *err) {
    const sdfed_task_secagg *s = &t->secagg;
    memset(out, 0, sizeof *out);
    if (!s->on) return sdfed_fail(err, SDFED_ERR_ARG, "task: no secure_aggregation");
    if (P < 1) return sdfed_fail(err, SDFED_ERR_ARG, "secure aggregation of no coordinates");
    int rc = sdfed_secagg_params_choose(n, s->dropout_rate, s->corrupt_rate, t->min_clients, &out->params, err);
    if (rc) return sdfed_fail_context(err, SDFED_ERR_FORMAT, "task");
    out->ring = (sdfed_secagg_ring){.clip = s->clip,
                                    .quant_bits = s->quant_bits,
                                    .max_weight = s->max_weight,
                                    .ring_bits = s->ring_bits,
                                    .clients = n};
    out->dims = P;
    out->l2_clip = s->l2_clip;
    out->delta = s->delta;
    double qmax = (double)sdfed_secagg_ring_qmax(&out->ring), root = sqrt((double)P);
    double norm = qmax * root;
    if (s->l2_clip > 0 && qmax / s->clip * s->l2_clip + root < norm) norm = qmax / s->clip * s->l2_clip + root;
    out->l2_bound = (double)s->max_weight * norm;
    if (s->epsilon > 0 && (rc = calibrate(t, out, err))) return rc;
    rc = sdfed_secagg_ring_check(&out->ring, err);
    return rc ? sdfed_fail_context(err, SDFED_ERR_FORMAT, "task (%d clients a round)", n) : SDFED_OK;
}

int sdfed_secagg_epsilon(const sdfed_secagg_plan *p, double rho_spent, double *epsilon, sdfed_error *err) {
    return sdfed_secagg_dp_epsilon(rho_spent, 1, p->delta, epsilon, err);
}

void sdfed_secagg_graph_key(uint64_t seed, int64_t round, unsigned char key[32]) {
    sdfed_rng rng;
    sdfed_rng_seed_stream(&rng, seed, SDFED_STREAM_SECAGG_GRAPH + ((uint64_t)round << 20));
    sdfed_secagg_bytes bytes = sdfed_secagg_rng_source(&rng);
    sdfed_secagg_draw(&bytes, key, 32, NULL);
}

sdfed_secagg_bytes sdfed_secagg_rounding(sdfed_rng *state, uint64_t seed, int64_t round, int64_t client) {
    sdfed_rng_seed_stream(state, seed ^ sdfed_rng_mix64((uint64_t)client),
                          SDFED_STREAM_SECAGG_ROUND + ((uint64_t)round << 20));
    return sdfed_secagg_rng_source(state);
}

int sdfed_secagg_input(const sdfed_secagg_plan *p, const float *x, const float *g, int64_t samples,
                       const sdfed_secagg_bytes *rounding, const sdfed_secagg_bytes *noise, uint64_t *out,
                       sdfed_error *err) {
    const size_t P = p->dims;
    if (p->sigma2 && !noise) return sdfed_fail(err, SDFED_ERR_ARG, "secagg: an input with noise needs a noise source");
    float *change = malloc(sizeof *change * P);
    if (!change) return sdfed_fail(err, SDFED_ERR_NOMEM, "secagg: out of memory");
    double norm = 0;
    for (size_t j = 0; j < P; j++) {
        change[j] = x[j] - g[j];
        norm += (double)change[j] * change[j];
    }
    norm = sqrt(norm);
    if (p->l2_clip > 0 && norm > p->l2_clip) {
        double scale = p->l2_clip / norm;
        for (size_t j = 0; j < P; j++) change[j] = (float)(change[j] * scale);
    }
    int rc = sdfed_secagg_quantise(&p->ring, change, P, samples, rounding, out, err);
    free(change);
    if (rc == SDFED_OK && p->sigma2) rc = sdfed_secagg_add_noise(p->ring.ring_bits, out, P, p->sigma2, noise, err);
    return rc;
}

int sdfed_secagg_global(const sdfed_secagg_plan *p, const uint64_t *sum, const float *g, float *next,
                        int64_t *weight_sum, sdfed_error *err) {
    int rc = sdfed_secagg_dequantise(&p->ring, sum, p->dims, next, weight_sum, err);
    for (size_t j = 0; j < p->dims && rc == SDFED_OK; j++) next[j] = g[j] + next[j];
    return rc;
}

int sdfed_secagg_plain_global(const sdfed_secagg_plan *p, const uint64_t *const *inputs, int n, const float *g,
                              float *next, int64_t *weight_sum, sdfed_error *err) {
    int rc = sdfed_secagg_plain_mean(&p->ring, inputs, n, p->dims, next, weight_sum, err);
    for (size_t j = 0; j < p->dims && rc == SDFED_OK; j++) next[j] = g[j] + next[j];
    return rc;
}

int sdfed_secagg_drops_out(const sdfed_task *t, int64_t round, int64_t client, sdfed_secagg_stage stage) {
    if (stage == SDFED_SECAGG_MASKED) return sdfed_round_drops_out(t->seed, round, client, t->dropout);
    double p = 0;
    switch (stage) {
    case SDFED_SECAGG_ADVERTISE: p = t->secagg.drop_advertise; break;
    case SDFED_SECAGG_SHARE: p = t->secagg.drop_share; break;
    case SDFED_SECAGG_UNMASK: p = t->secagg.drop_unmask; break;
    default: break;
    }
    if (!(p > 0)) return 0;
    sdfed_rng rng;
    sdfed_rng_seed_stream(&rng, t->seed ^ sdfed_rng_mix64((uint64_t)client),
                          SDFED_STREAM_SECAGG_DROP + ((uint64_t)round << 20) + ((uint64_t)stage << 8));
    return sdfed_rng_uniform(&rng) < p;
}
