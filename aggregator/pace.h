/* Pace steering in the aggregator (fed/pace.h's rule): the misses of the
 * clients that missed rounds they were sampled for, and which rounds they
 * sit out. A client that reports is forgotten. The process that decides
 * rounds (a single process, or a cluster's coordinator) notes the misses
 * at each deadline and writes them to the store (store.h's pace), which
 * forgets a client as its update is stored; every process reads the board
 * from the store as it opens and, in a cluster, whenever a round opens, so
 * that a restart keeps it and every node tells the clients it holds when
 * to come back. */
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
/* The client's state (zero when it has none). */
sdfed_pace agg_pace_state(const agg_pace_board *b, int64_t client);
/* The rounds from `round` on that the client sits out (0: none). */
int64_t agg_pace_rounds_out(const agg_pace_board *b, int64_t client, int64_t round);
void agg_pace_free(agg_pace_board *b);

#endif
