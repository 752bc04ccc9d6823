/* Aggregation rules, clipping and central-DP noise. */
#include "fed/aggregate.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const sdfed_name sdfed_aggregate_rule_names[] = {
    [SDFED_AGGREGATE_MEAN] = {.name = "mean", .value = SDFED_AGGREGATE_MEAN},
    [SDFED_AGGREGATE_MEDIAN] = {.name = "median", .value = SDFED_AGGREGATE_MEDIAN},
    [SDFED_AGGREGATE_TRIMMED_MEAN] = {.name = "trimmed_mean", .value = SDFED_AGGREGATE_TRIMMED_MEAN},
};
static_assert(sizeof sdfed_aggregate_rule_names / sizeof sdfed_aggregate_rule_names[0] == SDFED_AGGREGATE_RULE_COUNT,
              "a name per rule");

const char *sdfed_aggregate_rule_name(int rule) {
    return sdfed_name_of(sdfed_aggregate_rule_names, SDFED_AGGREGATE_RULE_COUNT, rule);
}

int sdfed_aggregate_rule_from_name(const char *name) {
    return sdfed_name_value(sdfed_aggregate_rule_names, SDFED_AGGREGATE_RULE_COUNT, name);
}

static int compare_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

int sdfed_aggregate(const sdfed_aggregate_config *cfg, const sdfed_kernels *k, const float *const *updates,
                    const double *weights, int n, size_t P, const float *previous, sdfed_rng *rng, float *out,
                    sdfed_arena *arena, sdfed_error *err) {
    if (n < 1 || P < 1) return sdfed_fail(err, SDFED_ERR_ARG, "aggregate: nothing to aggregate");
    if (!sdfed_aggregate_rule_name(cfg->rule)) return sdfed_fail(err, SDFED_ERR_ARG, "aggregate: unknown rule");
    if (cfg->rule == SDFED_AGGREGATE_TRIMMED_MEAN && !(cfg->trim >= 0.0 && cfg->trim < 0.5))
        return sdfed_fail(err, SDFED_ERR_ARG, "aggregate: trim %g is outside [0, 0.5)", cfg->trim);
    if (!(cfg->clip_norm >= 0.0) || !(cfg->noise_multiplier >= 0.0) ||
        (cfg->noise_multiplier > 0.0 && cfg->clip_norm == 0.0))
        return sdfed_fail(err, SDFED_ERR_ARG, "aggregate: noise needs a clip norm (both >= 0)");
    if ((cfg->clip_norm > 0.0 && !previous) || (cfg->noise_multiplier > 0.0 && !rng))
        return sdfed_fail(err, SDFED_ERR_ARG, "aggregate: clipping needs the previous global, noise an rng");
    /* rows (n, P): the updates, clipped when asked */
    float *rows = sdfed_arena_floats(arena, (size_t)n * P);
    if (!rows) return sdfed_fail(err, SDFED_ERR_NOMEM, "aggregate: out of memory");
    for (int i = 0; i < n; i++) {
        float *r = rows + (size_t)i * P;
        memcpy(r, updates[i], sizeof(float) * P);
        if (cfg->clip_norm > 0.0) {
            double norm = 0.0;
            for (size_t j = 0; j < P; j++) norm += ((double)r[j] - previous[j]) * ((double)r[j] - previous[j]);
            norm = sqrt(norm);
            if (norm > cfg->clip_norm) {
                double s = cfg->clip_norm / norm;
                for (size_t j = 0; j < P; j++) r[j] = (float)(previous[j] + s * ((double)r[j] - previous[j]));
            }
        }
    }
    if (cfg->rule == SDFED_AGGREGATE_MEAN) {
        /* out (1, P) = w (1, n) @ rows (n, P), w normalised */
        float *w = sdfed_arena_floats(arena, (size_t)n);
        if (!w) return sdfed_fail(err, SDFED_ERR_NOMEM, "aggregate: out of memory");
        double total = 0.0;
        for (int i = 0; i < n; i++) {
            if (!(weights[i] > 0.0)) return sdfed_fail(err, SDFED_ERR_ARG, "aggregate: weight %d is not positive", i);
            total += weights[i];
        }
        for (int i = 0; i < n; i++) w[i] = (float)(weights[i] / total);
        k->gemm(0, 0, 1, (int)P, n, 1.0f, w, n, rows, (int)P, 0.0f, out, (int)P);
    } else {
        int cut = cfg->rule == SDFED_AGGREGATE_TRIMMED_MEAN ? (int)floor(cfg->trim * n) : 0;
        float *column = sdfed_arena_floats(arena, (size_t)n);
        if (!column) return sdfed_fail(err, SDFED_ERR_NOMEM, "aggregate: out of memory");
        for (size_t j = 0; j < P; j++) {
            for (int i = 0; i < n; i++) column[i] = rows[(size_t)i * P + j];
            qsort(column, (size_t)n, sizeof *column, compare_float);
            if (cfg->rule == SDFED_AGGREGATE_MEDIAN) {
                out[j] = n % 2 ? column[n / 2] : (float)(0.5 * ((double)column[n / 2 - 1] + column[n / 2]));
            } else {
                double s = 0.0;
                for (int i = cut; i < n - cut; i++) s += column[i];
                out[j] = (float)(s / (n - 2 * cut));
            }
        }
    }
    if (cfg->noise_multiplier > 0.0) {
        double sigma = cfg->noise_multiplier * cfg->clip_norm / n;
        for (size_t j = 0; j < P; j++) out[j] = (float)(out[j] + sigma * sdfed_rng_normal(rng));
    }
    for (size_t j = 0; j < P; j++)
        if (!isfinite(out[j])) return sdfed_fail(err, SDFED_ERR_NUMERIC, "aggregate: the result is not finite");
    return SDFED_OK;
}
