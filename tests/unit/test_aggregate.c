/* Aggregation rules: every rule against a straightforward reference written
 * here (clip each update, then per coordinate: the mean as one loop over the
 * updates in order, the median and trimmed mean from a stable sort of the
 * column), bit for bit, over odd and even counts, ties (-0 and +0 among
 * them), values of every magnitude, blocks and tiles cut short, clipping
 * and noise; the mean is also the portable kernel's w @ rows; known values;
 * the noise's spread; refusals (a non-finite update is named). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fed/aggregate.h"
#include "kernels/kernels.h"

/* the reference rounds each product and each sum, as the rule says */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* --- the reference --- */

/* sorts v[0..n) by value, equal values (-0 and +0) kept in their order */
static void stable_sort(float *v, int n) {
    for (int i = 1; i < n; i++) {
        float x = v[i];
        int j = i;
        for (; j > 0 && x < v[j - 1]; j--) v[j] = v[j - 1];
        v[j] = x;
    }
}

static void reference(const sdfed_aggregate_config *cfg, const float *const *updates, const double *weights, int n,
                      size_t P, const float *previous, sdfed_rng *rng, float *out) {
    float *rows = malloc(sizeof *rows * (size_t)n * P), *column = malloc(sizeof *column * (size_t)n);
    for (int i = 0; i < n; i++) {
        float *r = rows + (size_t)i * P;
        memcpy(r, updates[i], sizeof *r * P);
        if (cfg->clip_norm == 0.0) continue;
        double norm = 0.0;
        for (size_t j = 0; j < P; j++) norm += ((double)r[j] - previous[j]) * ((double)r[j] - previous[j]);
        norm = sqrt(norm);
        if (norm > cfg->clip_norm)
            for (size_t j = 0; j < P; j++)
                r[j] = (float)(previous[j] + cfg->clip_norm / norm * ((double)r[j] - previous[j]));
    }
    double total = 0.0;
    for (int i = 0; i < n; i++) total += weights[i];
    int cut = cfg->rule == SDFED_AGGREGATE_TRIMMED_MEAN ? (int)floor(cfg->trim * n) : 0;
    for (size_t j = 0; j < P; j++) {
        if (cfg->rule == SDFED_AGGREGATE_MEAN) {
            float s = 0.0f;
            for (int i = 0; i < n; i++) {
                float product = (float)(weights[i] / total) * rows[(size_t)i * P + j];
                s = s + product;
            }
            out[j] = s;
            continue;
        }
        for (int i = 0; i < n; i++) column[i] = rows[(size_t)i * P + j];
        stable_sort(column, n);
        if (cfg->rule == SDFED_AGGREGATE_MEDIAN) {
            out[j] = n % 2 ? column[n / 2] : (float)(0.5 * ((double)column[n / 2 - 1] + column[n / 2]));
        } else {
            double s = 0.0;
            for (int i = cut; i < n - cut; i++) s += column[i];
            out[j] = (float)(s / (n - 2 * cut));
        }
    }
    if (cfg->noise_multiplier > 0.0)
        for (size_t j = 0; j < P; j++)
            out[j] = (float)(out[j] + cfg->noise_multiplier * cfg->clip_norm / n * sdfed_rng_normal(rng));
    free(rows);
    free(column);
}

/* --- data --- */

enum { VALUES_NORMAL, VALUES_TIES, VALUES_MAGNITUDES, VALUES_CANCELLING, VALUES_SORTED, VALUES_KINDS };
static const char *const kind_names[VALUES_KINDS] = {"normal", "ties", "magnitudes", "cancelling", "sorted"};

static float value_of_kind(int kind, sdfed_rng *r, int i, size_t j) {
    switch (kind) {
    case VALUES_NORMAL: /* a global plus a client's small change */
        return (float)(0.02 * ((double)(j % 7) - 3) + 0.001 * sdfed_rng_normal(r));
    case VALUES_TIES: { /* few distinct values, zeros of both signs among them */
        static const float few[] = {-0.0f, 0.0f, 1.0f, -1.0f, 0.5f, 0.0f, -0.0f, 2.0f};
        return few[sdfed_rng_below(r, sizeof few / sizeof *few)];
    }
    case VALUES_MAGNITUDES: /* 1e-38 to 1e30 and both signs: the trimmed sum's order matters */
        return (float)((sdfed_rng_below(r, 2) ? 1 : -1) * pow(10.0, -38.0 + 68.0 * sdfed_rng_uniform(r)));
    case VALUES_CANCELLING: { /* large values that cancel: the sum's order shows in the float result */
        static const float big[] = {1e20f, -1e20f, 1e10f, -3e10f, 1.0f, -2.0f, 7.0f, 3e-5f};
        return big[sdfed_rng_below(r, sizeof big / sizeof *big)];
    }
    default: /* every column ascending, then descending, over the updates */
        return (float)((j % 2 ? -1 : 1) * (i % 50) + 0.25 * (double)j);
    }
}

typedef struct case_data {
    int n;
    size_t P;
    float *values, *previous;
    const float **rows;
    double *weights;
} case_data;

static case_data make_case(int n, size_t P, int kind, uint64_t seed) {
    sdfed_rng r;
    sdfed_rng_seed(&r, seed);
    case_data d = {.n = n,
                   .P = P,
                   .values = malloc(sizeof(float) * (size_t)n * P),
                   .previous = malloc(sizeof(float) * P),
                   .rows = malloc(sizeof(float *) * (size_t)n),
                   .weights = malloc(sizeof(double) * (size_t)n)};
    for (size_t j = 0; j < P; j++) d.previous[j] = (float)(0.02 * ((double)(j % 7) - 3));
    for (int i = 0; i < n; i++) {
        float *u = d.values + (size_t)i * P;
        for (size_t j = 0; j < P; j++) u[j] = value_of_kind(kind, &r, i, j);
        d.rows[i] = u;
        /* sample counts, and the stale rounds' non-integer weights */
        d.weights[i] = i % 3 ? (double)(1 + sdfed_rng_below(&r, 16)) : (1 + i % 5) / sqrt(1.0 + (double)(i % 4));
    }
    return d;
}

static void free_case(case_data *d) {
    free(d->values);
    free(d->previous);
    free(d->rows);
    free(d->weights);
}

/* --- fast = reference --- */

static void test_against_reference(void) {
    static const int counts[] = {1, 2, 3, 4, 5, 8, 9, 10, 33, 64, 101, 1000};
    const sdfed_aggregate_config rules[] = {
        {.rule = SDFED_AGGREGATE_MEAN},
        {.rule = SDFED_AGGREGATE_MEDIAN},
        {.rule = SDFED_AGGREGATE_TRIMMED_MEAN, .trim = 0.0},
        {.rule = SDFED_AGGREGATE_TRIMMED_MEAN, .trim = 0.1},
        {.rule = SDFED_AGGREGATE_TRIMMED_MEAN, .trim = 0.45},
        {.rule = SDFED_AGGREGATE_MEAN, .clip_norm = 0.004},
        {.rule = SDFED_AGGREGATE_MEDIAN, .clip_norm = 0.004},
        {.rule = SDFED_AGGREGATE_MEAN, .clip_norm = 0.004, .noise_multiplier = 1.5},
        {.rule = SDFED_AGGREGATE_TRIMMED_MEAN, .trim = 0.2, .clip_norm = 0.004, .noise_multiplier = 0.5},
    };
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
        int n = counts[c];
        /* P: cuts the robust rules' 16-column tiles short, and the mean's 2048-float blocks (large n: fewer) */
        size_t P = n % 2 ? 2048 + 19 : 21;
        if (n >= 1000) P = 37;
        for (int kind = 0; kind < VALUES_KINDS; kind++) {
            case_data d = make_case(n, P, kind, 100 + (uint64_t)(n * VALUES_KINDS + kind));
            float *got = malloc(sizeof(float) * P), *want = malloc(sizeof(float) * P);
            for (size_t r = 0; r < sizeof rules / sizeof *rules; r++) {
                if ((kind == VALUES_MAGNITUDES || kind == VALUES_CANCELLING) && rules[r].clip_norm > 0)
                    continue; /* norms overflow: refused below */
                sdfed_rng noise_a, noise_b;
                sdfed_rng_seed(&noise_a, 9);
                sdfed_rng_seed(&noise_b, 9);
                sdfed_error err = {0};
                sdfed_arena_reset(&arena);
                int rc = sdfed_aggregate(&rules[r], d.rows, d.weights, n, P, d.previous, &noise_a, got, &arena, &err);
                reference(&rules[r], d.rows, d.weights, n, P, d.previous, &noise_b, want);
                CHECK(rc == SDFED_OK && memcmp(got, want, sizeof(float) * P) == 0,
                      "%s (trim %g, clip %g, noise %g), n %d, P %zu, %s values: the reference's bits (%s)",
                      sdfed_aggregate_rule_name(rules[r].rule), rules[r].trim, rules[r].clip_norm,
                      rules[r].noise_multiplier, n, P, kind_names[kind], rc ? err.message : "ok");
            }
            free(got);
            free(want);
            free_case(&d);
        }
    }
    sdfed_arena_free(&arena);
}

/* The mean is the portable kernel's w (1, n) @ rows (n, P) with the weights
 * normalised to floats: what every backend gave before it had its own loop. */
static void test_mean_is_portable_gemm(void) {
    enum { N = 77, P = 300 };
    case_data d = make_case(N, P, VALUES_NORMAL, 5);
    float w[N], got[P], want[P];
    double total = 0;
    for (int i = 0; i < N; i++) total += d.weights[i];
    for (int i = 0; i < N; i++) w[i] = (float)(d.weights[i] / total);
    sdfed_kernels_portable.gemm(0, 0, 1, P, N, 1.0f, w, N, d.values, P, 0.0f, want, P);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    sdfed_aggregate_config mean = {.rule = SDFED_AGGREGATE_MEAN};
    sdfed_aggregate(&mean, d.rows, d.weights, N, P, NULL, NULL, got, &arena, &err);
    CHECK(memcmp(got, want, sizeof got) == 0, "the mean is the portable kernel's w @ rows, bit for bit");
    sdfed_arena_free(&arena);
    free_case(&d);
}

/* A trimmed mean whose middle sums to different doubles in another order:
 * summed ascending, -1e20 + 1 rounds to -1e20, and + 1e20 gives 0 (in update
 * order it would be 1e20 - 1e20 + 1 = 1). */
static void test_trimmed_sum_order(void) {
    const float a[] = {1e20f}, b[] = {-1e20f}, c[] = {1.0f};
    const float *rows[] = {a, b, c};
    double w[] = {1, 1, 1};
    float out[1];
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    sdfed_aggregate_config all = {.rule = SDFED_AGGREGATE_TRIMMED_MEAN, .trim = 0.0};
    sdfed_aggregate(&all, rows, w, 3, 1, NULL, NULL, out, &arena, &err);
    CHECK(out[0] == 0.0f, "the trimmed mean sums ascending: -1e20, 1, 1e20 gives 0, not 1/3 (%g)", out[0]);
    sdfed_arena_free(&arena);
}

/* --- known values, noise, refusals --- */

enum { N = 5, P = 7 };

static void test_rules(void) {
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
    sdfed_aggregate_config mean = {.rule = SDFED_AGGREGATE_MEAN, .trim = 0, .clip_norm = 0, .noise_multiplier = 0};
    CHECK(sdfed_aggregate(&mean, rows, w, N, P, NULL, NULL, out, &arena, &err) == SDFED_OK, "mean: %s", err.message);
    int close = 1;
    for (int j = 0; j < P; j++) {
        double s = 0;
        for (int i = 0; i < N; i++) s += w[i] * u[i][j];
        close &= fabs(out[j] - s / 100.0) <= 1e-5 * (1 + fabs(s / 100.0));
    }
    CHECK(close, "weighted mean = sum w u / sum w");
    sdfed_aggregate_config median = {.rule = SDFED_AGGREGATE_MEDIAN, .trim = 0, .clip_norm = 0, .noise_multiplier = 0};
    sdfed_aggregate(&median, rows, w, N, P, NULL, NULL, out, &arena, &err);
    CHECK(out[0] == 1 && out[1] == 1 && out[2] == 3 && out[6] == 7, "coordinate median (%g %g %g %g)", out[0], out[1],
          out[2], out[6]);
    sdfed_aggregate(&median, rows, w, 4, P, NULL, NULL, out, &arena, &err);
    CHECK(out[0] == 1.5f && out[1] == 1.0f, "median of an even count averages the middle two");
    sdfed_aggregate_config trimmed = {
        .rule = SDFED_AGGREGATE_TRIMMED_MEAN, .trim = 0.2, .clip_norm = 0, .noise_multiplier = 0};
    sdfed_aggregate(&trimmed, rows, w, N, P, NULL, NULL, out, &arena, &err);
    CHECK(fabsf(out[0] - 4.0f / 3) < 1e-6f && fabsf(out[1] - 1.0f) < 1e-6f && fabsf(out[6] - 14.0f / 3) < 1e-6f,
          "trimmed mean drops one value at each end (%g %g %g)", out[0], out[1], out[6]);
    /* -0 and +0 tie: a stable sort keeps their order, so the median takes the sign of the zero in the middle */
    const float z0[] = {0.0f}, z1[] = {-0.0f}, z2[] = {0.0f};
    const float *zeros[] = {z0, z1, z2};
    sdfed_aggregate(&median, zeros, w, 3, 1, NULL, NULL, out, &arena, &err);
    CHECK(out[0] == 0.0f && signbit(out[0]), "median of +0, -0, +0 in that order is -0");
    sdfed_arena_free(&arena);
}

static void test_clipping_and_noise(void) {
    enum { BIG = 4096 };
    float *prev = calloc(BIG, sizeof(float)), *a = malloc(sizeof(float) * BIG), *b = malloc(sizeof(float) * BIG);
    float *out = malloc(sizeof(float) * BIG);
    for (int j = 0; j < BIG; j++) {
        prev[j] = 1.0f;
        a[j] = 1.0f + (j == 0 ? 30.0f : 0.0f);
        b[j] = 1.0f + (j == 1 ? 0.5f : 0.0f);
    }
    const float *rows[2] = {a, b};
    double w[2] = {1, 1};
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    sdfed_aggregate_config clip = {.rule = SDFED_AGGREGATE_MEAN, .trim = 0, .clip_norm = 2.0, .noise_multiplier = 0};
    sdfed_aggregate(&clip, rows, w, 2, BIG, prev, NULL, out, &arena, &err);
    CHECK(fabsf(out[0] - 2.0f) < 1e-6f && fabsf(out[1] - 1.25f) < 1e-6f,
          "a change of norm 30 is clipped to 2, one of 0.5 kept (%g %g)", out[0], out[1]);
    CHECK(a[0] == 31.0f, "clipping leaves the caller's update as it was");
    sdfed_rng rng;
    sdfed_rng_seed(&rng, 3);
    sdfed_aggregate_config dp = {.rule = SDFED_AGGREGATE_MEAN, .trim = 0, .clip_norm = 2.0, .noise_multiplier = 1.5};
    sdfed_aggregate(&dp, rows, w, 2, BIG, prev, &rng, out, &arena, &err);
    double sum = 0, sum2 = 0;
    for (int j = 2; j < BIG; j++) {
        sum += out[j] - 1.0;
        sum2 += (out[j] - 1.0) * (out[j] - 1.0);
    }
    double mean = sum / (BIG - 2), sd = sqrt(sum2 / (BIG - 2) - mean * mean), want = 1.5 * 2.0 / 2;
    CHECK(fabs(mean) < 0.06 && fabs(sd - want) < 0.06, "noise N(0, (1.5 x 2 / 2)^2): mean %.3f sd %.3f", mean, sd);
    sdfed_aggregate_config bad_noise = {
        .rule = SDFED_AGGREGATE_MEAN, .trim = 0, .clip_norm = 0, .noise_multiplier = 1.0};
    CHECK(sdfed_aggregate(&bad_noise, rows, w, 2, BIG, prev, &rng, out, &arena, &err) == SDFED_ERR_ARG,
          "noise without clipping is refused");
    sdfed_aggregate_config bad_trim = {
        .rule = SDFED_AGGREGATE_TRIMMED_MEAN, .trim = 0.5, .clip_norm = 0, .noise_multiplier = 0};
    CHECK(sdfed_aggregate(&bad_trim, rows, w, 2, BIG, prev, NULL, out, &arena, &err) == SDFED_ERR_ARG,
          "trim 0.5 is refused");
    double zero[2] = {1, 0};
    sdfed_aggregate_config plain = {.rule = SDFED_AGGREGATE_MEAN, .trim = 0, .clip_norm = 0, .noise_multiplier = 0};
    CHECK(sdfed_aggregate(&plain, rows, zero, 2, BIG, NULL, NULL, out, &arena, &err) == SDFED_ERR_ARG,
          "a zero weight is refused");
    CHECK(sdfed_aggregate_rule_from_name("trimmed_mean") == SDFED_AGGREGATE_TRIMMED_MEAN &&
              sdfed_aggregate_rule_from_name("avg") < 0,
          "rule names");
    sdfed_arena_free(&arena);
    free(prev);
    free(a);
    free(b);
    free(out);
}

/* An update with a NaN or an infinity is refused by every rule, naming it. */
static void test_not_finite(void) {
    enum { M = 6, Q = 40 };
    case_data d = make_case(M, Q, VALUES_NORMAL, 11);
    const float bad[] = {NAN, INFINITY, -INFINITY};
    const sdfed_aggregate_config rules[] = {{.rule = SDFED_AGGREGATE_MEAN},
                                            {.rule = SDFED_AGGREGATE_MEDIAN},
                                            {.rule = SDFED_AGGREGATE_TRIMMED_MEAN, .trim = 0.2},
                                            {.rule = SDFED_AGGREGATE_MEDIAN, .clip_norm = 1.0}};
    float out[Q];
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++)
        for (size_t r = 0; r < sizeof rules / sizeof *rules; r++) {
            d.values[3 * Q + 25] = bad[b];
            sdfed_error err = {0};
            int rc = sdfed_aggregate(&rules[r], d.rows, d.weights, M, Q, d.previous, NULL, out, &arena, &err);
            CHECK(rc == SDFED_ERR_NUMERIC && strstr(err.message, "update 3 is not finite"),
                  "%s: a %g in update 3 is refused by name (%s)", sdfed_aggregate_rule_name(rules[r].rule), bad[b],
                  err.message);
        }
    sdfed_arena_free(&arena);
    free_case(&d);
}

int main(void) {
    test_against_reference();
    test_mean_is_portable_gemm();
    test_trimmed_sum_order();
    test_rules();
    test_clipping_and_noise();
    test_not_finite();
    return check_report("test_aggregate");
}
