/* A cluster node's clients in the store's presence table (see presence.h). */
#include "presence.h"

#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "round_sync.h"
#include "base/grow.h"

void agg_presence_arrive(agg_federation *f, int64_t client, int shard, int64_t now_ms) {
    if (agg_group_commit_add_presence(&f->batch, client, shard, now_ms) == SDFED_OK && agg_core_batch_due(f, now_ms))
        agg_core_write_batch(f, now_ms);
}

int agg_presence_depart(agg_federation *f, int64_t client, int64_t round) {
    int removed;
    if (agg_store_presence_remove(f->st, client, agg_cluster_node(f->cl), round, &removed, NULL) == SDFED_OK) {
        agg_round_sync *s = agg_round_sync_of(f);
        if (removed && round == f->round && s->open) sdfed_round_leave(&s->current, client);
        return removed;
    }
    agg_presence_queue *q = &f->leaving;
    agg_presence_departure *grown = sdfed_grow(q->departures, &q->cap, q->n, sizeof *grown);
    if (!grown) return 0;
    q->departures = grown;
    q->departures[q->n++] = (agg_presence_departure){.client = client, .round = round};
    return 0;
}

void agg_presence_retry(agg_federation *f) {
    agg_presence_queue *q = &f->leaving;
    int n = q->n;
    q->n = 0;
    for (int i = 0; i < n; i++) /* a client back here meanwhile keeps its row */
        if (!agg_roster_find(&f->clients, q->departures[i].client))
            agg_presence_depart(f, q->departures[i].client, q->departures[i].round);
    for (int i = 0; i < f->clients.n; i++) {
        agg_roster_client *c = &f->clients.clients[i];
        if (!c->present)
            c->present = agg_store_presence_add(f->st, c->id, c->shard, agg_cluster_node(f->cl), NULL) == SDFED_OK;
    }
}

void agg_presence_free(agg_presence_queue *q) {
    free(q->departures);
    memset(q, 0, sizeof *q);
}
