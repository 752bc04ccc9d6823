/* Aggregation rules, clipping and central-DP noise, laid out for the cache:
 * the mean sums blocks of the output over the updates, the robust rules
 * gather a tile of columns at a time and select order statistics instead of
 * sorting each column. */
#include "fed/aggregate.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/vectors.h"
#include "kernels/dispatch.h"

/* The mean's sums must round the same on every target: a product and a sum,
 * each rounded, never fused into one FMA (GCC in ISO C mode does not fuse;
 * clang does within an expression unless told not to). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

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

/* floats of the output the mean sums at once: 8 KB, in L1 while every update passes */
enum { MEAN_BLOCK = 2048 };
/* columns the robust rules copy out of the updates at once (a kilobyte of
 * each), and transpose at once (a 64-byte line of each) */
enum { BAND_COLUMNS = 256, TILE_COLUMNS = 16 };

static int compare_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* rows[i] is update i, or, when its change from previous is longer than
 * clip_norm, a copy scaled toward previous to that length. */
static int clip_rows(double clip_norm, const float *const *updates, int n, size_t P, const float *previous,
                     const float **rows, sdfed_arena *arena, sdfed_error *err) {
    for (int i = 0; i < n; i++) {
        const float *u = updates[i];
        rows[i] = u;
        if (clip_norm == 0.0) continue;
        double norm = 0.0;
        for (size_t j = 0; j < P; j++) norm += ((double)u[j] - previous[j]) * ((double)u[j] - previous[j]);
        norm = sqrt(norm);
        if (!(norm > clip_norm)) continue;
        float *clipped = sdfed_arena_floats(arena, P);
        if (!clipped) return sdfed_fail(err, SDFED_ERR_NOMEM, "aggregate: out of memory");
        double s = clip_norm / norm;
        for (size_t j = 0; j < P; j++) clipped[j] = (float)(previous[j] + s * ((double)u[j] - previous[j]));
        rows[i] = clipped;
    }
    return SDFED_OK;
}

/* acc (len) = (((acc + w[0] r[0]) + w[1] r[1]) + ...) over `count` rows r,
 * each product and sum rounded to float */
SDFED_WIDEST_VECTORS static void add_rows(float *acc, size_t len, const float *const *r, const float *w, int count) {
    size_t j = 0;
    for (; j + 16 <= len; j += 16) {
        sdfed_f32x8 a, b, x, y;
        memcpy(&a, acc + j, sizeof a);
        memcpy(&b, acc + j + 8, sizeof b);
        for (int i = 0; i < count; i++) {
            memcpy(&x, r[i] + j, sizeof x);
            memcpy(&y, r[i] + j + 8, sizeof y);
            a = a + w[i] * x;
            b = b + w[i] * y;
        }
        memcpy(acc + j, &a, sizeof a);
        memcpy(acc + j + 8, &b, sizeof b);
    }
    for (; j < len; j++)
        for (int i = 0; i < count; i++) acc[j] = acc[j] + w[i] * r[i][j];
}

/* out (P) = sum_i w_i rows_i, every element summed in update order from
 * zero, each product and each sum rounded to float:
 *     out[j] = ((0 + w_0 rows_0[j]) + w_1 rows_1[j]) + ... + w_{n-1} rows_{n-1}[j]
 * A block of out stays in L1 while the updates pass over it, eight at a
 * time (the same order for each element), in vectors of eight elements. */
static void weighted_sum(const float *const *rows, const float *w, int n, size_t P, float *out) {
    enum { ROWS_AT_ONCE = 8 };
    for (size_t j0 = 0; j0 < P; j0 += MEAN_BLOCK) {
        size_t len = P - j0 < MEAN_BLOCK ? P - j0 : MEAN_BLOCK;
        memset(out + j0, 0, sizeof *out * len);
        for (int i = 0; i < n; i += ROWS_AT_ONCE) {
            int count = n - i < ROWS_AT_ONCE ? n - i : ROWS_AT_ONCE;
            const float *r[ROWS_AT_ONCE];
            for (int c = 0; c < count; c++) r[c] = rows[i + c] + j0;
            add_rows(out + j0, len, r, w + i, count);
        }
    }
}

/* A float's key: unsigned keys order as the floats do (-0 just below +0). */
static uint32_t order_key(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u & 0x80000000u ? ~u : u | 0x80000000u;
}

static float key_value(uint32_t key) {
    uint32_t u = key & 0x80000000u ? key & 0x7FFFFFFFu : ~key;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The value of rank k (0-based, ascending, -0 before +0) among column[0..n),
 * by radix selection on the keys (keys has room for n): the range of the
 * keys left is cut into at most RADIX_BUCKETS buckets by a shift, the
 * bucket holding rank k is kept, until one key is left. Each pass shrinks
 * the range a thousandfold, so there are at most four, whatever the values;
 * after the first, the keys left are usually few. */
enum { RADIX_BUCKETS = 1024 };
static float value_of_rank(const float *column, int n, int k, uint32_t *keys) {
    uint32_t lo = UINT32_MAX, hi = 0;
    for (int i = 0; i < n; i++) {
        keys[i] = order_key(column[i]);
        lo = keys[i] < lo ? keys[i] : lo;
        hi = keys[i] > hi ? keys[i] : hi;
    }
    uint32_t count[RADIX_BUCKETS];
    while (lo < hi) {
        int shift = 0;
        while (((hi - lo) >> shift) >= RADIX_BUCKETS) shift++;
        uint32_t buckets = ((hi - lo) >> shift) + 1, b = 0;
        memset(count, 0, sizeof *count * buckets);
        for (int i = 0; i < n; i++) count[(keys[i] - lo) >> shift]++;
        while ((uint32_t)k >= count[b]) k -= (int)count[b++];
        int kept = 0;
        uint32_t first = lo;
        lo = UINT32_MAX;
        hi = 0;
        for (int i = 0; i < n; i++) {
            uint32_t key = keys[i];
            if ((key - first) >> shift != b) continue;
            keys[kept++] = key;
            lo = key < lo ? key : lo;
            hi = key > hi ? key : hi;
        }
        n = kept;
    }
    return key_value(lo);
}

/* The value that a stable sort of column (ties kept in update order) puts
 * at rank k, given the value v of that rank: v itself, except that -0 and
 * +0 tie, so a zero takes the sign of the zero that lands there. */
static float stable_value(const float *column, int n, int k, float v) {
    if (v != 0.0f) return v;
    int below = 0;
    for (int i = 0; i < n; i++) below += column[i] < 0.0f;
    for (int i = 0, zeros = 0; i < n; i++)
        if (column[i] == 0.0f && zeros++ == k - below) return column[i];
    assert(0 && "a zero of rank k exists");
    return v;
}

/* The median of a column (n values in update order). */
static float median_of(const float *column, int n, uint32_t *keys) {
    int k = n / 2;
    float high = stable_value(column, n, k, value_of_rank(column, n, k, keys));
    if (n % 2) return high;
    float low = stable_value(column, n, k - 1, value_of_rank(column, n, k - 1, keys));
    return (float)(0.5 * ((double)low + high));
}

/* The mean of a column's values of ranks cut..n-cut-1 (the middle), summed
 * in double in ascending order. The middle is the values strictly between
 * those of ranks cut and n-cut-1 and as many copies of these two as reach
 * into it. When no partial sum of the middle can round (its absolute sum is
 * at most 2^52 ulps of its smallest nonzero value, so every partial sum is
 * an exact multiple of that ulp), every order gives the same double and it
 * is summed as found; otherwise it is gathered into `middle`, sorted and
 * summed in order. */
static float trimmed_mean_of(const float *column, int n, int cut, uint32_t *keys, float *middle) {
    float low = value_of_rank(column, n, cut, keys), high = value_of_rank(column, n, n - cut - 1, keys);
    int m = n - 2 * cut, up_to_low = 0, below_high = 0;
    double sum = 0.0, absolute = 0.0;
    float smallest = FLT_MAX;
    for (int i = 0; i < n; i++) {
        float v = column[i], a = fabsf(v);
        up_to_low += v <= low;
        below_high += v < high;
        if (!(low < v && v < high)) continue;
        sum += v;
        absolute += a;
        if (a != 0.0f && a < smallest) smallest = a;
    }
    /* copies of low and high in the middle (all of it when they are equal) */
    int lows = low < high ? up_to_low - cut : m, highs = low < high ? n - cut - below_high : 0;
    for (int c = 0; c < 2; c++) {
        float v = c ? high : low, a = fabsf(v);
        int copies = c ? highs : lows;
        if (copies == 0) continue;
        sum += copies * (double)v;
        absolute += copies * (double)a;
        if (a != 0.0f && a < smallest) smallest = a;
    }
    int exponent;
    frexpf(smallest, &exponent); /* smallest = f 2^exponent, f in [0.5, 1): its ulp is 2^(exponent - 24) */
    if (!(absolute <= ldexp(1.0, (exponent - 24 > -149 ? exponent - 24 : -149) + 52))) {
        int k = 0;
        for (int i = 0; i < lows; i++) middle[k++] = low;
        for (int i = 0; i < n; i++)
            if (low < column[i] && column[i] < high) middle[k++] = column[i];
        for (int i = 0; i < highs; i++) middle[k++] = high;
        assert(k == m);
        qsort(middle, (size_t)m, sizeof *middle, compare_float);
        sum = 0.0;
        for (int i = 0; i < m; i++) sum += middle[i];
    }
    return (float)(sum / m);
}

/* The first update with a value that is not finite, or -1. */
static int first_not_finite(const float *const *rows, int n, size_t P) {
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < P; j++)
            if (!isfinite(rows[i][j])) return i;
    return -1;
}

/* out (P) = the median or trimmed mean of each coordinate. A band of
 * BAND_COLUMNS columns is copied out of every update (a kilobyte of each, so
 * that pages are visited once per band, not once per tile), checked, and
 * then transposed TILE_COLUMNS columns at a time into a tile whose columns
 * are reduced one by one. */
static int robust(const sdfed_aggregate_config *cfg, const float *const *rows, int n, size_t P, float *out,
                  sdfed_arena *arena, sdfed_error *err) {
    int cut = cfg->rule == SDFED_AGGREGATE_TRIMMED_MEAN ? (int)floor(cfg->trim * n) : 0;
    float *band = sdfed_arena_floats(arena, (size_t)BAND_COLUMNS * n);
    float *tile = sdfed_arena_floats(arena, (size_t)TILE_COLUMNS * n), *middle = sdfed_arena_floats(arena, (size_t)n);
    uint32_t *keys = sdfed_arena_alloc(arena, sizeof *keys * (size_t)n);
    if (!band || !tile || !middle || !keys) return sdfed_fail(err, SDFED_ERR_NOMEM, "aggregate: out of memory");
    for (size_t j0 = 0; j0 < P; j0 += BAND_COLUMNS) {
        size_t width = P - j0 < BAND_COLUMNS ? P - j0 : BAND_COLUMNS;
        for (int i = 0; i < n; i++) memcpy(band + (size_t)i * width, rows[i] + j0, sizeof *band * width);
        int finite = 1;
        for (size_t v = 0; v < (size_t)n * width; v++) finite &= fabsf(band[v]) <= FLT_MAX;
        if (!finite)
            return sdfed_fail(err, SDFED_ERR_NUMERIC, "aggregate: update %d is not finite",
                              first_not_finite(rows, n, P));
        for (size_t c0 = 0; c0 < width; c0 += TILE_COLUMNS) {
            size_t columns = width - c0 < TILE_COLUMNS ? width - c0 : TILE_COLUMNS;
            /* TILE_COLUMNS rows at a time: their lines are read once, and a line of each column written */
            for (int i0 = 0; i0 < n; i0 += TILE_COLUMNS) {
                int count = n - i0 < TILE_COLUMNS ? n - i0 : TILE_COLUMNS;
                const float *r = band + (size_t)i0 * width + c0;
                for (size_t c = 0; c < columns; c++)
                    for (int i = 0; i < count; i++) tile[c * n + (size_t)(i0 + i)] = r[(size_t)i * width + c];
            }
            for (size_t c = 0; c < columns; c++) {
                const float *column = tile + c * n;
                out[j0 + c0 + c] = cfg->rule == SDFED_AGGREGATE_MEDIAN ? median_of(column, n, keys)
                                                                       : trimmed_mean_of(column, n, cut, keys, middle);
            }
        }
    }
    return SDFED_OK;
}

int sdfed_aggregate(const sdfed_aggregate_config *cfg, const float *const *updates, const double *weights, int n,
                    size_t P, const float *previous, sdfed_rng *rng, float *out, sdfed_arena *arena, sdfed_error *err) {
    if (n < 1 || P < 1) return sdfed_fail(err, SDFED_ERR_ARG, "aggregate: nothing to aggregate");
    if (!sdfed_aggregate_rule_name(cfg->rule)) return sdfed_fail(err, SDFED_ERR_ARG, "aggregate: unknown rule");
    if (cfg->rule == SDFED_AGGREGATE_TRIMMED_MEAN && !(cfg->trim >= 0.0 && cfg->trim < 0.5))
        return sdfed_fail(err, SDFED_ERR_ARG, "aggregate: trim %g is outside [0, 0.5)", cfg->trim);
    if (!(cfg->clip_norm >= 0.0) || !(cfg->noise_multiplier >= 0.0) ||
        (cfg->noise_multiplier > 0.0 && cfg->clip_norm == 0.0))
        return sdfed_fail(err, SDFED_ERR_ARG, "aggregate: noise needs a clip norm (both >= 0)");
    if ((cfg->clip_norm > 0.0 && !previous) || (cfg->noise_multiplier > 0.0 && !rng))
        return sdfed_fail(err, SDFED_ERR_ARG, "aggregate: clipping needs the previous global, noise an rng");
    double total = 0.0;
    for (int i = 0; i < n && cfg->rule == SDFED_AGGREGATE_MEAN; i++) {
        if (!(weights[i] > 0.0)) return sdfed_fail(err, SDFED_ERR_ARG, "aggregate: weight %d is not positive", i);
        total += weights[i];
    }
    const float **rows = sdfed_arena_alloc(arena, sizeof *rows * (size_t)n);
    if (!rows) return sdfed_fail(err, SDFED_ERR_NOMEM, "aggregate: out of memory");
    int rc = clip_rows(cfg->clip_norm, updates, n, P, previous, rows, arena, err);
    if (rc) return rc;
    if (cfg->rule == SDFED_AGGREGATE_MEAN) {
        float *w = sdfed_arena_floats(arena, (size_t)n);
        if (!w) return sdfed_fail(err, SDFED_ERR_NOMEM, "aggregate: out of memory");
        for (int i = 0; i < n; i++) w[i] = (float)(weights[i] / total);
        weighted_sum(rows, w, n, P, out);
    } else {
        rc = robust(cfg, rows, n, P, out, arena, err);
        if (rc) return rc;
    }
    if (cfg->noise_multiplier > 0.0) {
        double sigma = cfg->noise_multiplier * cfg->clip_norm / n;
        for (size_t j = 0; j < P; j++) out[j] = (float)(out[j] + sigma * sdfed_rng_normal(rng));
    }
    for (size_t j = 0; j < P; j++) {
        if (isfinite(out[j])) continue;
        int bad = first_not_finite(rows, n, P);
        if (bad >= 0) return sdfed_fail(err, SDFED_ERR_NUMERIC, "aggregate: update %d is not finite", bad);
        return sdfed_fail(err, SDFED_ERR_NUMERIC, "aggregate: the result is not finite");
    }
    return SDFED_OK;
}
