/* Pace steering in the aggregator (fed/pace.h's rule): the misses of the
 * clients that missed rounds they were sampled for, and which rounds they
 * sit out. A client that reports is forgotten. Kept by the process that
 * decides rounds (a single process, or a cluster's coordinator, whose
 * front-ends do not know it). */
#ifndef SDFED_AGGREGATOR_PACE_H
#define SDFED_AGGREGATOR_PACE_H

#include <stdint.h>

#include "fed/pace.h"

typedef struct agg_pace_client {
    int64_t client;
    sdfed_pace pace;
} agg_pace_client;

typedef struct agg_pace_board {
    agg_pace_client *clients;
    int n, cap;
} agg_pace_board;

/* The client was sampled for `round`, which ended at its deadline without
 * its update; SDFED_ERR_NOMEM when memory ran out (the miss not counted). */
int agg_pace_missed(agg_pace_board *b, int64_t client, int64_t round);
/* The client reported an update. */
void agg_pace_reported(agg_pace_board *b, int64_t client);
/* The rounds from `round` on that the client sits out (0: none). */
int64_t agg_pace_rounds_out(const agg_pace_board *b, int64_t client, int64_t round);
void agg_pace_free(agg_pace_board *b);

#endif
