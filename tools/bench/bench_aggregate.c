/* Times the server's aggregation (sdfed_aggregate) of N updates of P floats
 * for every rule, and writes the updates, weights, previous global and each
 * rule's result into DIR so that tools/bench/aggregate_numpy.py can time
 * numpy on the same updates and compare its results with these:
 *   bench_aggregate --updates N --size P --dir DIR [--repeats 5] [--seed 1]
 * Updates are a previous global (N(0, 0.02^2) per coordinate) plus a client's
 * change (N(0, 0.001^2)); weights are sample counts 1..16. The rules: mean,
 * median, trimmed_mean (trim 0.1), mean with clipping (clip_norm = the
 * median change's norm, so about half the updates are clipped) and with
 * clipping and noise (noise multiplier 1). One line per rule:
 * "rule=NAME updates=N size=P ms=MEDIAN" (the median over the repeats). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fed/aggregate.h"
#include "native/args.h"
#include "native/clock.h"

typedef struct bench_rule {
    const char *name; /* the file name out_NAME.f32 and the line's rule= */
    sdfed_aggregate_config cfg;
} bench_rule;

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int write_file(const char *dir, const char *name, const void *data, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, bytes, f) == bytes;
    if (f && fclose(f)) ok = 0;
    if (!ok) fprintf(stderr, "bench_aggregate: cannot write %s\n", path);
    return ok ? 0 : -1;
}

/* the median of the updates' distances from previous: a clip norm that cuts about half */
static double median_change_norm(float *const *updates, int n, size_t P, const float *previous) {
    double *norms = malloc(sizeof *norms * (size_t)n);
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (size_t j = 0; j < P; j++)
            s += ((double)updates[i][j] - previous[j]) * ((double)updates[i][j] - previous[j]);
        norms[i] = sqrt(s);
    }
    qsort(norms, (size_t)n, sizeof *norms, compare_double);
    double m = norms[n / 2];
    free(norms);
    return m;
}

int main(int argc, char **argv) {
    const char *n_text = NULL, *p_text = NULL, *dir = NULL, *repeats_text = "5", *seed_text = "1";
    int help = 0;
    const native_cli_option options[] = {{.name = "--updates", .value = &n_text, .flag = NULL},
                                         {.name = "--size", .value = &p_text, .flag = NULL},
                                         {.name = "--dir", .value = &dir, .flag = NULL},
                                         {.name = "--repeats", .value = &repeats_text, .flag = NULL},
                                         {.name = "--seed", .value = &seed_text, .flag = NULL},
                                         {.name = "--help", .value = NULL, .flag = &help}};
    native_cli_set_program("bench_aggregate");
    if (native_cli_parse(argc - 1, argv + 1, options, 6, NULL, NULL)) return CLI_USAGE;
    if (help) {
        printf("usage: bench_aggregate --updates N --size P --dir DIR [--repeats 5] [--seed 1]\n");
        return CLI_OK;
    }
    if (!n_text || !p_text || !dir) return native_cli_error(CLI_USAGE, "--updates, --size and --dir are required");
    long long n_updates, P, repeat_count;
    if (native_cli_integer(n_text, "--updates", 1, 1 << 24, &n_updates) ||
        native_cli_integer(p_text, "--size", 1, 1LL << 40, &P) ||
        native_cli_integer(repeats_text, "--repeats", 1, 1 << 20, &repeat_count))
        return CLI_USAGE;
    int n = (int)n_updates, repeats = (int)repeat_count;

    sdfed_rng rng;
    sdfed_rng_seed(&rng, (uint64_t)strtoull(seed_text, NULL, 10));
    float *data = malloc(sizeof(float) * (size_t)n * (size_t)P), *previous = malloc(sizeof(float) * (size_t)P);
    float **updates = malloc(sizeof *updates * (size_t)n), *out = malloc(sizeof(float) * (size_t)P);
    double *weights = malloc(sizeof *weights * (size_t)n);
    if (!data || !previous || !updates || !out || !weights) return native_cli_error(CLI_FAILED, "out of memory");
    for (long long j = 0; j < P; j++) previous[j] = (float)(0.02 * sdfed_rng_normal(&rng));
    for (int i = 0; i < n; i++) {
        updates[i] = data + (size_t)i * (size_t)P;
        for (long long j = 0; j < P; j++) updates[i][j] = (float)(previous[j] + 0.001 * sdfed_rng_normal(&rng));
        weights[i] = (double)(1 + sdfed_rng_below(&rng, 16));
    }
    if (write_file(dir, "updates.f32", data, sizeof(float) * (size_t)n * (size_t)P) ||
        write_file(dir, "weights.f64", weights, sizeof *weights * (size_t)n) ||
        write_file(dir, "previous.f32", previous, sizeof(float) * (size_t)P))
        return CLI_FAILED;

    double clip = median_change_norm(updates, n, (size_t)P, previous);
    const bench_rule rules[] = {
        {.name = "mean", .cfg = {.rule = SDFED_AGGREGATE_MEAN}},
        {.name = "median", .cfg = {.rule = SDFED_AGGREGATE_MEDIAN}},
        {.name = "trimmed_mean", .cfg = {.rule = SDFED_AGGREGATE_TRIMMED_MEAN, .trim = 0.1}},
        {.name = "mean_clip", .cfg = {.rule = SDFED_AGGREGATE_MEAN, .clip_norm = clip}},
        {.name = "mean_clip_noise", .cfg = {.rule = SDFED_AGGREGATE_MEAN, .clip_norm = clip, .noise_multiplier = 1.0}},
    };
    char clip_text[64];
    snprintf(clip_text, sizeof clip_text, "%.17g\n", clip);
    if (write_file(dir, "clip_norm.txt", clip_text, strlen(clip_text))) return CLI_FAILED;

    sdfed_arena arena;
    sdfed_arena_init(&arena);
    double *ms = malloc(sizeof *ms * (size_t)repeats);
    for (size_t r = 0; r < sizeof rules / sizeof *rules; r++) {
        sdfed_error err = {0};
        for (int t = -1; t < repeats; t++) { /* one untimed warm-up */
            sdfed_rng noise;
            sdfed_rng_seed(&noise, 7);
            sdfed_arena_reset(&arena);
            int64_t t0 = native_clock_monotonic_ns();
            int rc = sdfed_aggregate(&rules[r].cfg, (const float *const *)updates, weights, n, (size_t)P, previous,
                                     &noise, out, &arena, &err);
            if (rc) return native_cli_error(CLI_FAILED, "%s: %s", rules[r].name, err.message);
            if (t >= 0) ms[t] = 1e-6 * (double)(native_clock_monotonic_ns() - t0);
        }
        char name[128];
        snprintf(name, sizeof name, "out_%s.f32", rules[r].name);
        if (write_file(dir, name, out, sizeof(float) * (size_t)P)) return CLI_FAILED;
        qsort(ms, (size_t)repeats, sizeof *ms, compare_double);
        printf("rule=%s updates=%d size=%lld ms=%.3f\n", rules[r].name, n, P, ms[repeats / 2]);
        fflush(stdout);
    }
    sdfed_arena_free(&arena);
    free(ms);
    free(data);
    free(previous);
    free(updates);
    free(out);
    free(weights);
    return CLI_OK;
}
