/* Local steps timed per local prompt length (step_timer.h). */
#include "native/step_timer.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "native/clock.h"

void native_step_timer_sleep_ms(int ms) {
    if (ms <= 0) return;
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) { /* the rest of it */
    }
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the median seconds of STEP_TIMER_STEPS steps (after one untimed) at S_l = length */
static int time_length(const sdfed_task *t, int length, const sdfed_clip_model *m, const sdfed_kernels *k,
                       const sdfed_classes *cls, const sdfed_feature_set *samples, int sleep_ms, double *seconds,
                       sdfed_arena *arena, sdfed_error *err) {
    sdfed_method_config cfg = sdfed_task_method_config(t);
    cfg.local_len = length;
    sdfed_rng rng; /* the measurement's own: the client's stream is untouched */
    sdfed_rng_seed_stream(&rng, t->seed, SDFED_STREAM_SERVER);
    sdfed_method_params p = {0};
    sdfed_local_round r = {0};
    double timed[STEP_TIMER_STEPS];
    int rc = sdfed_method_params_init(&p, &cfg, m, k, cls, &rng, arena, err);
    /* as many passes as the steps need, however few the samples */
    if (rc == SDFED_OK)
        rc = sdfed_local_round_begin(&r, samples, STEP_TIMER_STEPS + 1, t->batch_size, STEP_TIMER_STEPS + 1, err);
    for (int s = 0; s <= STEP_TIMER_STEPS && rc == SDFED_OK; s++) {
        sdfed_losses losses;
        int64_t t0 = native_clock_monotonic_ns();
        rc = sdfed_local_round_step(&r, &cfg, m, k, cls, &p, &rng, &losses, arena, err);
        native_step_timer_sleep_ms(sleep_ms);
        if (s > 0) timed[s - 1] = native_clock_seconds(native_clock_monotonic_ns() - t0);
    }
    sdfed_local_round_end(&r);
    sdfed_method_params_free(&p);
    if (rc) return sdfed_fail_context(err, rc, "timing a step at local prompt length %d", length);
    qsort(timed, STEP_TIMER_STEPS, sizeof timed[0], compare_doubles);
    *seconds = timed[STEP_TIMER_STEPS / 2];
    return SDFED_OK;
}

int native_step_timer_measure(const sdfed_task *t, const sdfed_clip_model *m, const sdfed_kernels *k,
                              const sdfed_classes *cls, const sdfed_feature_set *samples, int sleep_ms, double *step_s,
                              sdfed_arena *arena, sdfed_error *err) {
    if (samples->n < 1) return sdfed_fail(err, SDFED_ERR_ARG, "timing a step: no images to time it on");
    int rc = SDFED_OK;
    for (int i = 0; i < t->local_prompt.n_lengths && rc == SDFED_OK; i++)
        rc = time_length(t, t->local_prompt.lengths[i], m, k, cls, samples, sleep_ms, &step_s[i], arena, err);
    return rc;
}
