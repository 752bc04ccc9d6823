/* Secure aggregation as a task runs it (fed/secagg_task.h):
 *  - a round's plan: (k, t) for its clients, the ring, no noise by default;
 *  - the noise for a budget: the whole run's rounds spend at most epsilon
 *    and one unit of sigma_c^2 less would spend more; the ring keeps room
 *    for it; a budget beyond 2^48 is refused naming the key; l2_clip bounds
 *    the contribution (Delta = max_weight (s l2_clip + sqrt(P)));
 *  - the stochastic rounding's bytes: the same for a (seed, round, client),
 *    others elsewhere;
 *  - a client's input: its change, clipped in L2 and per coordinate, its
 *    weight capped; decoded, within a rounding step of the change;
 *  - the new global from the sum in the ring equals, bit for bit, the one
 *    from the inputs summed as plain integers (sdfed_secagg_plain_global),
 *    with and without noise;
 *  - dropouts at the stages: deterministic, at the asked rate, the masked
 *    stage's exactly a plain round's (fed/round.h).
 * Every build. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fed/round.h"
#include "fed/secagg_accountant.h"
#include "fed/secagg_noise.h"
#include "fed/secagg_task.h"
#include "test_bytes.h"
#include "base/clamp.h"

enum { P = 1024, N = 10 };

static sdfed_task task(const char *json) {
    sdfed_task t;
    sdfed_error err = {0};
    CHECK(sdfed_task_parse(&t, json, strlen(json), &err) == SDFED_OK && sdfed_task_validate(&t, &err) == SDFED_OK,
          "%s: %s", json, err.message);
    return t;
}

static void test_plan(void) {
    sdfed_error err = {0};
    sdfed_task t = task("{\"secure_aggregation\": {}}");
    sdfed_secagg_plan p;
    CHECK(sdfed_secagg_plan_make(&t, N, P, &p, &err) == SDFED_OK, "the default plan: %s", err.message);
    CHECK(p.params.n == N && p.params.k == 4 && p.params.t == 2 && p.params.min_inputs == 7 && p.ring.clients == N &&
              p.ring.ring_bits == 32 && p.ring.quant_bits == 16 && p.ring.max_weight == 4096 && p.sigma2 == 0 &&
              p.rho == 0 && p.ring.noise_bound == 0 && p.dims == P,
          "10 clients: k 4, t 2, 7 inputs at least, no noise (k %d t %d m %d)", p.params.k, p.params.t,
          p.params.min_inputs);
    CHECK(fabs(p.l2_bound - 4096.0 * 32767 * 32) < 1e-3, "Delta: every coordinate at the clip (%g)", p.l2_bound);
    sdfed_task_free(&t);

    t = task("{\"rounds\": 50, \"secure_aggregation\": {\"max_weight\": 1, \"noise\": {\"epsilon\": 8}}}");
    CHECK(sdfed_secagg_plan_make(&t, N, P, &p, &err) == SDFED_OK, "epsilon 8 over 50 rounds: %s", err.message);
    double eps = 0, eps_less = 0, rho_less = 0;
    sdfed_secagg_dp less = {.l2_bound = p.l2_bound, .sigma2 = p.sigma2 - 1, .min_inputs = 7, .dims = P};
    sdfed_secagg_epsilon(&p, 50 * p.rho, &eps, &err);
    sdfed_secagg_dp_rho(&less, &rho_less, &err);
    sdfed_secagg_epsilon(&p, 50 * rho_less, &eps_less, &err);
    CHECK(p.sigma2 > 1 && eps <= 8 && eps_less > 8 && eps > 7.99,
          "sigma_c^2 %llu: 50 rounds spend %.4f <= 8, and %llu would spend %.4f", (unsigned long long)p.sigma2, eps,
          (unsigned long long)p.sigma2 - 1, eps_less);
    CHECK(p.ring.noise_bound == sdfed_secagg_noise_bound(p.sigma2, N) && p.delta == 1e-5,
          "the ring keeps room for the noise of 10 clients");
    double half = 0;
    sdfed_secagg_epsilon(&p, 25 * p.rho, &half, &err);
    CHECK(half < eps, "half the rounds spend less (%.3f)", half);
    sdfed_task_free(&t);

    t = task("{\"rounds\": 50, \"secure_aggregation\": {\"noise\": {\"epsilon\": 1}}}");
    CHECK(sdfed_secagg_plan_make(&t, N, P, &p, &err) == SDFED_ERR_FORMAT &&
              strstr(err.message, "key 'secure_aggregation.noise.epsilon' 1 over 50 rounds needs each client's noise "
                                  "above sigma^2 = 2^48") &&
              strstr(err.message, "set l2_clip"),
          "a budget the noise cannot reach at max_weight 4096: %s", err.message);
    sdfed_task_free(&t);

    t = task("{\"rounds\": 50, \"secure_aggregation\": {\"clip\": 0.5, \"l2_clip\": 0.25, \"max_weight\": 32, "
             "\"noise\": {\"epsilon\": 1}}}");
    CHECK(sdfed_secagg_plan_make(&t, N, P, &p, &err) == SDFED_OK &&
              fabs(p.l2_bound - 32 * (32767 / 0.5 * 0.25 + 32)) < 1e-6,
          "l2_clip bounds the contribution: Delta %g: %s", p.l2_bound, err.message);
    sdfed_task_free(&t);
}

static void test_rounding(void) {
    sdfed_rng a, b;
    sdfed_error err = {0};
    unsigned char x[64], y[64];
    sdfed_secagg_bytes sa = sdfed_secagg_rounding(&a, 7, 3, 5), sb = sdfed_secagg_rounding(&b, 7, 3, 5);
    sdfed_secagg_draw(&sa, x, sizeof x, &err);
    sdfed_secagg_draw(&sb, y, sizeof y, &err);
    CHECK(!memcmp(x, y, sizeof x), "the same (seed, round, client), the same rounding bytes");
    int differ = 1;
    const int64_t other[3][3] = {{8, 3, 5}, {7, 4, 5}, {7, 3, 6}};
    for (int i = 0; i < 3; i++) {
        sb = sdfed_secagg_rounding(&b, (uint64_t)other[i][0], other[i][1], other[i][2]);
        sdfed_secagg_draw(&sb, y, sizeof y, &err);
        differ &= memcmp(x, y, sizeof x) != 0;
    }
    CHECK(differ, "another seed, round or client, other bytes");
}

static void random_prompt(sdfed_rng *rng, float *v, double scale) {
    for (int j = 0; j < P; j++) v[j] = (float)((sdfed_rng_uniform(rng) - 0.5) * 2 * scale);
}

static void test_inputs(void) {
    sdfed_error err = {0};
    sdfed_task t = task("{\"secure_aggregation\": {\"clip\": 0.05, \"max_weight\": 100}}");
    sdfed_secagg_plan p;
    sdfed_secagg_plan_make(&t, N, P, &p, &err);
    static float g[P], x[N][P], next[P], plain[P];
    static uint64_t in[N][P + 1], sum[P + 1];
    sdfed_rng rng, rounding;
    sdfed_rng_seed(&rng, 11);
    random_prompt(&rng, g, 1.0);
    const double s = 32767 / 0.05;
    int near = 1, clipped = 1;
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < P; j++) x[i][j] = g[j] + (float)((sdfed_rng_uniform(&rng) - 0.5) * 0.12);
        sdfed_secagg_bytes r = sdfed_secagg_rounding(&rounding, t.seed, 2, i);
        int64_t samples = 40 + 13 * i;
        CHECK(sdfed_secagg_input(&p, x[i], g, samples, &r, NULL, in[i], &err) == SDFED_OK, "input %d: %s", i,
              err.message);
        int64_t w = samples < 100 ? samples : 100;
        CHECK((int64_t)in[i][P] == w, "client %d's weight: its %lld samples, at most 100", i, (long long)samples);
        for (int j = 0; j < P; j++) {
            double d = (double)(x[i][j] - g[j]), q = (double)sdfed_secagg_ring_signed(32, in[i][j]) / (double)w / s;
            if (fabs(d) < 0.05)
                near &= fabs(q - d) <= 1 / s + 1e-12;
            else
                clipped &= fabs(q - (d > 0 ? 0.05 : -0.05)) < 1e-12;
        }
        sdfed_secagg_ring_add(32, sum, in[i], P + 1);
    }
    CHECK(near, "each coordinate within a rounding step of the change");
    CHECK(clipped, "beyond the clip, at the clip");
    const uint64_t *rows[N];
    for (int i = 0; i < N; i++) rows[i] = in[i];
    int64_t w1 = 0, w2 = 0;
    CHECK(sdfed_secagg_global(&p, sum, g, next, &w1, &err) == SDFED_OK &&
              sdfed_secagg_plain_global(&p, rows, N, g, plain, &w2, &err) == SDFED_OK,
          "%s", err.message);
    CHECK(w1 == w2 && !memcmp(next, plain, sizeof next),
          "the global from the ring's sum is the plain one, bit for bit");
    /* the mean of the quantised changes is near the mean change */
    double worst = 0;
    for (int j = 0; j < P; j++) {
        double mean = 0;
        for (int i = 0; i < N; i++) mean += (double)rows[i][P] * (x[i][j] - g[j]) / (double)w1;
        double clipped_mean = 0;
        for (int i = 0; i < N; i++) {
            double d = x[i][j] - g[j];
            clipped_mean += (double)rows[i][P] * sdfed_clamp_double(d, -0.05, 0.05) / (double)w1;
        }
        worst = fmax(worst, fabs((next[j] - g[j]) - clipped_mean));
        (void)mean;
    }
    CHECK(worst < 2 / s + 1e-6, "the new global is g plus the mean clipped change, within a step (%.3g)", worst);
    sdfed_task_free(&t);

    /* L2 clipping: a change of norm 1 clipped to 0.25 */
    t = task("{\"secure_aggregation\": {\"clip\": 0.5, \"l2_clip\": 0.25}}");
    sdfed_secagg_plan_make(&t, N, P, &p, &err);
    for (int j = 0; j < P; j++) x[0][j] = g[j] + (j % 2 ? 1.0f : -1.0f) / 32;
    sdfed_secagg_bytes r = sdfed_secagg_rounding(&rounding, t.seed, 0, 0);
    sdfed_secagg_input(&p, x[0], g, 1, &r, NULL, in[0], &err);
    double norm = 0;
    for (int j = 0; j < P; j++) {
        double q = (double)sdfed_secagg_ring_signed(32, in[0][j]) / (32767 / 0.5);
        norm += q * q;
    }
    CHECK(fabs(sqrt(norm) - 0.25) < 1e-3, "a change of norm 1 arrives with norm 0.25 (%.5f)", sqrt(norm));
    sdfed_task_free(&t);

    /* with noise (from a fixed source here): the ring's global is still the plain one */
    t = task("{\"rounds\": 10, \"secure_aggregation\": {\"max_weight\": 1, \"noise\": {\"epsilon\": 10}}}");
    CHECK(sdfed_secagg_plan_make(&t, N, P, &p, &err) == SDFED_OK && p.sigma2 > 1, "noise: %s", err.message);
    memset(sum, 0, sizeof sum);
    sdfed_rng noise_rng;
    sdfed_secagg_bytes noise = test_bytes(&noise_rng, 99);
    double spread = 0;
    for (int i = 0; i < N; i++) {
        r = sdfed_secagg_rounding(&rounding, t.seed, 1, i);
        CHECK(sdfed_secagg_input(&p, x[i], g, 1, &r, &noise, in[i], &err) == SDFED_OK, "%s", err.message);
        sdfed_secagg_ring_add(32, sum, in[i], P + 1);
        for (int j = 0; j < P; j++) spread += pow((double)sdfed_secagg_ring_signed(32, in[i][j]), 2) / (N * P);
    }
    CHECK(sdfed_secagg_global(&p, sum, g, next, &w1, &err) == SDFED_OK &&
              sdfed_secagg_plain_global(&p, rows, N, g, plain, &w2, &err) == SDFED_OK && w1 == N &&
              !memcmp(next, plain, sizeof next),
          "with noise, the same bit for bit: %s", err.message);
    CHECK(spread > 0.8 * (double)p.sigma2, "the noise is there (mean square %.3g, sigma_c^2 %llu)", spread,
          (unsigned long long)p.sigma2);
    CHECK(sdfed_secagg_input(&p, x[0], g, 1, &r, NULL, in[0], &err) == SDFED_ERR_ARG, "noise needs a source");
    sdfed_task_free(&t);
}

static void test_drops(void) {
    sdfed_task t = task("{\"dropout\": 0.2, \"secure_aggregation\": {\"drop\": {\"advertise\": 0.3, \"share\": 0.1}}}");
    int same = 1, counts[4] = {0}, again = 1, apart = 0;
    const int draws = 20000;
    for (int i = 0; i < draws; i++) {
        int64_t round = i / 100, client = i % 100;
        same &= sdfed_secagg_drops_out(&t, round, client, SDFED_SECAGG_MASKED) ==
                sdfed_round_drops_out(t.seed, round, client, 0.2);
        int a = sdfed_secagg_drops_out(&t, round, client, SDFED_SECAGG_ADVERTISE);
        int s = sdfed_secagg_drops_out(&t, round, client, SDFED_SECAGG_SHARE);
        again &= a == sdfed_secagg_drops_out(&t, round, client, SDFED_SECAGG_ADVERTISE);
        apart += a != s;
        counts[0] += a;
        counts[1] += s;
        counts[2] += sdfed_secagg_drops_out(&t, round, client, SDFED_SECAGG_MASKED);
        counts[3] += sdfed_secagg_drops_out(&t, round, client, SDFED_SECAGG_UNMASK);
    }
    CHECK(same, "before the masked input, exactly a plain round's dropout");
    CHECK(again && apart > 0, "deterministic, and each stage its own draw");
    CHECK(fabs(counts[0] / (double)draws - 0.3) < 0.015 && fabs(counts[1] / (double)draws - 0.1) < 0.01 &&
              fabs(counts[2] / (double)draws - 0.2) < 0.012 && counts[3] == 0,
          "at the asked rates: %d %d %d %d of %d", counts[0], counts[1], counts[2], counts[3], draws);
    sdfed_task_free(&t);
}

int main(void) {
    test_plan();
    test_rounding();
    test_inputs();
    test_drops();
    return check_report("test_secagg_task");
}
