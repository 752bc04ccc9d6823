/* The synchronous round policy's state (round_sync.c), for the files that
 * share it: round_sync.c, and in cluster mode cluster_sync.c and
 * presence.c, which keep it in step with the store. */
#ifndef SDFED_AGGREGATOR_ROUND_SYNC_H
#define SDFED_AGGREGATOR_ROUND_SYNC_H

#include <stdint.h>

#include "federation.h"
#include "base/rng.h"
#include "fed/round.h"

typedef struct agg_round_sync_away {
    int64_t client, until; /* a chosen client whose connection was lost keeps its place until `until` */
} agg_round_sync_away;

typedef struct agg_round_sync {
    sdfed_round current; /* the open round's clients (fed/round.h) */
    int open;
    int64_t deadline;
    int deadline_noted; /* the open round's deadline passed: logged, its misses noted (pace.h) */
    int64_t next_start; /* no round starts before (the pause after the last one) */
    sdfed_rng sampler;
    int64_t present; /* a cluster's coordinator: every node's connected clients, as last read */
    agg_round_sync_away *away;
    int n_away, cap_away;
} agg_round_sync;

/* f's (f->rounds: the federation runs synchronous rounds). */
agg_round_sync *agg_round_sync_of(const agg_federation *f);
/* The open round to this process's clients: round_start to the chosen ones
 * still due, with the time left, and wait to the others. */
void agg_round_sync_announce(agg_federation *f, int64_t now_ms);

#endif
