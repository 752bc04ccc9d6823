/* The federation's devices: each client's latest device figures as its
 * metrics carried them (its ms a local step at each of the task's local
 * prompt lengths, its threads and kernels; docs/protocol.md), as the store
 * keeps them (store.h's devices: every node's clients, since the
 * federation began), and their summary for /status, /metrics and
 * status.html's chart of step time against local prompt length. */
#ifndef SDFED_AGGREGATOR_DEVICES_H
#define SDFED_AGGREGATOR_DEVICES_H

#include <stdint.h>

#include "fed/local_prompt.h"

typedef struct agg_device_figures {
    int64_t client;
    int n_step_ms; /* the task's local_prompt.n_lengths */
    double step_ms[SDFED_LOCAL_PROMPT_MAX_LENGTHS];
    int threads; /* 0: not said */
    char kernels[32];
} agg_device_figures;

/* Clients' figures, one each (agg_store_devices reads them). */
typedef struct agg_device_board {
    agg_device_figures *figures;
    int n, cap;
} agg_device_board;

void agg_devices_free(agg_device_board *d);

/* The summary: how many devices; at each local prompt length the 10th,
 * 50th and 90th percentile of their step times (nearest rank); how many
 * use each thread count and each kernels' name (the DEVICES_KINDS most
 * common, ties by value; the rest counted in others). */
enum { DEVICES_KINDS = 8 };

typedef struct agg_devices_kind {
    int threads; /* threads: the count; kernels: 0 */
    char kernels[32];
    int devices;
} agg_devices_kind;

typedef struct agg_devices_summary {
    int count;
    int n_lengths;
    int lengths[SDFED_LOCAL_PROMPT_MAX_LENGTHS];
    double p10[SDFED_LOCAL_PROMPT_MAX_LENGTHS], p50[SDFED_LOCAL_PROMPT_MAX_LENGTHS],
        p90[SDFED_LOCAL_PROMPT_MAX_LENGTHS];
    agg_devices_kind threads[DEVICES_KINDS], kernels[DEVICES_KINDS];
    int n_threads, n_kernels, other_threads, other_kernels;
} agg_devices_summary;

/* lp: the task's local prompt key (its lengths name the step times). */
int agg_devices_summarise(const agg_device_board *d, const sdfed_local_prompt *lp, agg_devices_summary *s);

#endif
