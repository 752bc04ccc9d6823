/* The roster: the clients connected to this process, as the federation
 * knows them (their id and shard; nothing of their connections, which are
 * the network layer's). A client is on it from its join to its leave, once
 * however many connections it had meanwhile. */
#ifndef SDFED_AGGREGATOR_ROSTER_H
#define SDFED_AGGREGATOR_ROSTER_H

#include <stdint.h>

typedef struct agg_roster_client {
    int64_t id;
    int shard;        /* -1: none */
    int64_t assigned; /* the round policy's own number for it (async: the version it trains on, -1 idle) */
    int present;      /* cluster: its presence row is stored (else stored again on a tick) */
} agg_roster_client;

typedef struct agg_roster {
    agg_roster_client *clients;
    int n, cap;
} agg_roster;

agg_roster_client *agg_roster_find(agg_roster *r, int64_t id);
/* The client, as new (assigned -1, not present), whether it was on the
 * roster already (*again) or is added; NULL when memory ran out. */
agg_roster_client *agg_roster_join(agg_roster *r, int64_t id, int shard, int *again);
/* Takes the client off (the last one takes its place). */
void agg_roster_remove(agg_roster *r, int64_t id);
/* Whether a client on the roster holds shard k. */
int agg_roster_holds_shard(const agg_roster *r, int shard);
void agg_roster_free(agg_roster *r);

#endif
