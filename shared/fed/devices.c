/* The simulator's device population: checks and a client's device (devices.h). */
#include "fed/devices.h"

#include <math.h>

#include "base/rng.h"
#include "fed/task.h"

int sdfed_devices_check(const sdfed_devices *d, const sdfed_local_prompt *lp, sdfed_error *err) {
    if (d->n > 0 && lp->n_lengths == 0)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "task: key 'devices' needs 'local_prompt' (its step times are per listed length)");
    for (int i = 0; i < d->n; i++) {
        const sdfed_device *dev = &d->device[i];
        if (!(dev->share > 0) || !isfinite(dev->share))
            return sdfed_fail(err, SDFED_ERR_FORMAT, "task: key 'devices[%d].share' must be > 0", i);
        int ok = dev->n_steps == lp->n_lengths;
        for (int l = 0; l < lp->n_lengths; l++) ok &= dev->step_ms[l] > 0 && isfinite(dev->step_ms[l]);
        if (!ok)
            return sdfed_fail(err, SDFED_ERR_FORMAT,
                              "task: key 'devices[%d].step_ms' must give a time > 0 for each of the %d lengths of "
                              "'local_prompt.lengths' (%d given)",
                              i, lp->n_lengths, dev->n_steps);
    }
    return SDFED_OK;
}

int sdfed_devices_of_client(const sdfed_devices *d, uint64_t seed, int64_t c) {
    if (d->n == 0) return -1;
    double total = 0;
    for (int i = 0; i < d->n; i++) total += d->device[i].share;
    sdfed_rng rng;
    sdfed_rng_seed_stream(&rng, seed, SDFED_STREAM_DEVICES + ((uint64_t)c << 20));
    double u = sdfed_rng_uniform(&rng) * total, below = 0;
    for (int i = 0; i < d->n - 1; i++) {
        below += d->device[i].share;
        if (u < below) return i;
    }
    return d->n - 1;
}

void sdfed_device_step_seconds(const sdfed_device *dev, int n_lengths, double *step_s) {
    for (int l = 0; l < n_lengths; l++) step_s[l] = dev->step_ms[l] / 1000.0;
}
