/* Cluster mode: this node's clients in the store's presence table
 * (store.h), by which the coordinator counts and chooses every node's
 * connected clients. A client's row is stored with the batch as it joins
 * (group commit), and removed as its connection closes, with its departure
 * from the round when it was due in it; only if this node still held it
 * (it may have reconnected to another node already). What the store
 * refused (the database is away) is done again on every tick, so that a
 * client gone meanwhile does not count as connected, nor one here as gone.
 * Cluster mode runs synchronous rounds: a departure the store recorded
 * takes the client out of the open round here too (round_sync.h). */
#ifndef SDFED_AGGREGATOR_PRESENCE_H
#define SDFED_AGGREGATOR_PRESENCE_H

#include <stdint.h>

#include "federation.h"

typedef struct agg_presence_departure {
    int64_t client, round; /* round -1: not a departure from a round */
} agg_presence_departure;

/* Removals the store refused, to be tried again. */
typedef struct agg_presence_queue {
    agg_presence_departure *departures;
    int n, cap;
} agg_presence_queue;

/* A client joined this node: its row waits for the batch. */
void agg_presence_arrive(agg_federation *f, int64_t client, int shard, int64_t now_ms);
/* A client's connection to this node closed; round: the round it departs
 * from (-1: none). Whether its row was this node's and is removed (0: the
 * client is another node's now, or the store refused, and a tick tries
 * again). */
int agg_presence_depart(agg_federation *f, int64_t client, int64_t round);
/* A tick: the removals and the rows the store refused before. */
void agg_presence_retry(agg_federation *f);
void agg_presence_free(agg_presence_queue *q);

#endif
