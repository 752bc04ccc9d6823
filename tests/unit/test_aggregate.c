/* Aggregation rules: the weighted mean against a double-precision sum, the
 * coordinate median and trimmed mean on known values, clipping of each
 * client's change, the noise's spread, and refusals. Every backend. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fed/aggregate.h"

enum { N = 5, P = 7 };

static void test_rules(const sdfed_kernels *k) {
    static const float u[N][P] = {{1, 2, 3, 4, 5, 6, 7},
                                  {2, 3, 4, 5, 6, 7, 8},
                                  {100, -100, 3, 4, 5, 6, 7},
                                  {0, 0, 0, 0, 0, 0, 0},
                                  {1, 1, 1, 1, 1, 1, -50}};
    const float *rows[N] = {u[0], u[1], u[2], u[3], u[4]};
    double w[N] = {10, 30, 5, 20, 35};
    float out[P];
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    sdfed_aggregate_config mean = {SDFED_AGGREGATE_MEAN, 0, 0, 0};
    CHECK(sdfed_aggregate(&mean, k, rows, w, N, P, NULL, NULL, out, &arena, &err) == SDFED_OK, "mean: %s", err.message);
    int close = 1;
    for (int j = 0; j < P; j++) {
        double s = 0;
        for (int i = 0; i < N; i++) s += w[i] * u[i][j];
        close &= fabs(out[j] - s / 100.0) <= 1e-5 * (1 + fabs(s / 100.0));
    }
    CHECK(close, "%s: weighted mean = sum w u / sum w", k->name);
    sdfed_aggregate_config median = {SDFED_AGGREGATE_MEDIAN, 0, 0, 0};
    sdfed_aggregate(&median, k, rows, w, N, P, NULL, NULL, out, &arena, &err);
    CHECK(out[0] == 1 && out[1] == 1 && out[2] == 3 && out[6] == 7, "%s: coordinate median (%g %g %g %g)", k->name,
          out[0], out[1], out[2], out[6]);
    sdfed_aggregate(&median, k, rows, w, 4, P, NULL, NULL, out, &arena, &err);
    CHECK(out[0] == 1.5f && out[1] == 1.0f, "%s: median of an even count averages the middle two", k->name);
    sdfed_aggregate_config trimmed = {SDFED_AGGREGATE_TRIMMED_MEAN, 0.2, 0, 0};
    sdfed_aggregate(&trimmed, k, rows, w, N, P, NULL, NULL, out, &arena, &err);
    CHECK(fabsf(out[0] - 4.0f / 3) < 1e-6f && fabsf(out[1] - 1.0f) < 1e-6f && fabsf(out[6] - 14.0f / 3) < 1e-6f,
          "%s: trimmed mean drops one value at each end (%g %g %g)", k->name, out[0], out[1], out[6]);
    sdfed_arena_free(&arena);
}

static void test_clipping_and_noise(const sdfed_kernels *k) {
    enum { BIG = 4096 };
    float *prev = calloc(BIG, sizeof(float)), *a = malloc(sizeof(float) * BIG), *b = malloc(sizeof(float) * BIG);
    float *out = malloc(sizeof(float) * BIG);
    for (int j = 0; j < BIG; j++)
        prev[j] = 1.0f, a[j] = 1.0f + (j == 0 ? 30.0f : 0.0f), b[j] = 1.0f + (j == 1 ? 0.5f : 0.0f);
    const float *rows[2] = {a, b};
    double w[2] = {1, 1};
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    sdfed_aggregate_config clip = {SDFED_AGGREGATE_MEAN, 0, 2.0, 0};
    sdfed_aggregate(&clip, k, rows, w, 2, BIG, prev, NULL, out, &arena, &err);
    CHECK(fabsf(out[0] - 2.0f) < 1e-6f && fabsf(out[1] - 1.25f) < 1e-6f,
          "%s: a change of norm 30 is clipped to 2, one of 0.5 kept (%g %g)", k->name, out[0], out[1]);
    sdfed_rng rng;
    sdfed_rng_seed(&rng, 3);
    sdfed_aggregate_config dp = {SDFED_AGGREGATE_MEAN, 0, 2.0, 1.5};
    sdfed_aggregate(&dp, k, rows, w, 2, BIG, prev, &rng, out, &arena, &err);
    double sum = 0, sum2 = 0;
    for (int j = 2; j < BIG; j++) sum += out[j] - 1.0, sum2 += (out[j] - 1.0) * (out[j] - 1.0);
    double mean = sum / (BIG - 2), sd = sqrt(sum2 / (BIG - 2) - mean * mean), want = 1.5 * 2.0 / 2;
    CHECK(fabs(mean) < 0.06 && fabs(sd - want) < 0.06, "%s: noise N(0, (1.5 x 2 / 2)^2): mean %.3f sd %.3f", k->name,
          mean, sd);
    sdfed_aggregate_config bad_noise = {SDFED_AGGREGATE_MEAN, 0, 0, 1.0};
    CHECK(sdfed_aggregate(&bad_noise, k, rows, w, 2, BIG, prev, &rng, out, &arena, &err) == SDFED_ERR_ARG,
          "noise without clipping is refused");
    sdfed_aggregate_config bad_trim = {SDFED_AGGREGATE_TRIMMED_MEAN, 0.5, 0, 0};
    CHECK(sdfed_aggregate(&bad_trim, k, rows, w, 2, BIG, prev, NULL, out, &arena, &err) == SDFED_ERR_ARG,
          "trim 0.5 is refused");
    double zero[2] = {1, 0};
    sdfed_aggregate_config plain = {SDFED_AGGREGATE_MEAN, 0, 0, 0};
    CHECK(sdfed_aggregate(&plain, k, rows, zero, 2, BIG, NULL, NULL, out, &arena, &err) == SDFED_ERR_ARG,
          "a zero weight is refused");
    CHECK(sdfed_aggregate_rule_from_name("trimmed_mean") == SDFED_AGGREGATE_TRIMMED_MEAN &&
              sdfed_aggregate_rule_from_name("avg") < 0,
          "rule names");
    sdfed_arena_free(&arena);
    free(prev), free(a), free(b), free(out);
}

int main(void) {
    for (const sdfed_kernels *const *k = sdfed_kernels_all(); *k; k++) {
        test_rules(*k);
        test_clipping_and_noise(*k);
    }
    return check_report("test_aggregate");
}
