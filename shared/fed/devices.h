/* The simulator's device population (the task's "devices" key, fed/task.h):
 * a few device profiles, each the seconds a local step takes at each of the
 * task's local_prompt.lengths and its share of the clients, and the device
 * each client gets: drawn by share from the task seed's stream
 * SDFED_STREAM_DEVICES + (client << 20), so that the simulator and a
 * headless client told of the same task give client c the same device. */
#ifndef SDFED_FED_DEVICES_H
#define SDFED_FED_DEVICES_H

#include <stdint.h>

#include "base/status.h"
#include "fed/local_prompt.h"

enum { SDFED_DEVICES_MAX = 8 };

typedef struct sdfed_device {
    char name[24];
    double share;                                  /* > 0; shares need not add up to 1 */
    int n_steps;                                   /* step times given */
    float step_ms[SDFED_LOCAL_PROMPT_MAX_LENGTHS]; /* a step at each listed length, ms */
} sdfed_device;

typedef struct sdfed_devices {
    int n; /* 0: none (the key is absent) */
    sdfed_device device[SDFED_DEVICES_MAX];
} sdfed_devices;

/* Whether the population fits the lengths (one step time per length, each
 * > 0; shares > 0): errors name the key ('devices[i].step_ms'). */
int sdfed_devices_check(const sdfed_devices *d, const sdfed_local_prompt *lp, sdfed_error *err);

/* Client c's device (an index below d->n; -1 without devices), drawn from
 * the seed's stream. */
int sdfed_devices_of_client(const sdfed_devices *d, uint64_t seed, int64_t c);

/* step_s (n_lengths) = the device's step times in seconds. */
void sdfed_device_step_seconds(const sdfed_device *dev, int n_lengths, double *step_s);

#endif
