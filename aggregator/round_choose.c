/* A round's clients chosen, whatever its policy (see core.h): the round
 * engine (fed/round.h) chooses among the connected clients sorted by shard
 * then id, but those pace steering has sitting out the round, and the
 * start is stored in one decision. */
#include <stdlib.h>
#include <string.h>

#include "cluster_sync.h"
#include "core.h"
#include "native/log.h"

static int compare_clients(const void *a, const void *b) {
    const agg_roster_client *x = a, *y = b;
    int64_t sx = x->shard < 0 ? INT64_MAX : x->shard, sy = y->shard < 0 ? INT64_MAX : y->shard;
    if (sx != sy) return sx < sy ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The connected clients, this process's or (cluster) every node's. */
static int connected_clients(agg_federation *f, agg_roster_client **out, int *count) {
    *out = NULL;
    *count = 0;
    if (!f->cl) {
        if (f->clients.n && !(*out = malloc(sizeof **out * (size_t)f->clients.n))) return SDFED_ERR_NOMEM;
        if (f->clients.n) memcpy(*out, f->clients.clients, sizeof **out * (size_t)f->clients.n);
        *count = f->clients.n;
        return SDFED_OK;
    }
    int64_t *clients;
    int *shards, n, rc = agg_store_present_clients(f->st, &clients, &shards, &n, NULL);
    if (rc) return rc;
    if (n && !(*out = malloc(sizeof **out * (size_t)n))) rc = SDFED_ERR_NOMEM;
    for (int i = 0; rc == SDFED_OK && i < n; i++)
        (*out)[i] = (agg_roster_client){.id = clients[i], .shard = shards[i], .assigned = -1, .present = 1};
    *count = rc ? 0 : n;
    free(clients);
    free(shards);
    return rc;
}

int agg_core_round_choose(agg_federation *f, sdfed_rng *sampler, sdfed_round *next, int64_t *present, int64_t now_ms) {
    agg_roster_client *sorted;
    int count;
    int rc = connected_clients(f, &sorted, &count);
    if (rc) return rc; /* the store reports its fault */
    *present = count;
    if (count < f->opt.min_clients || count == 0) {
        free(sorted);
        return SDFED_ERR_ARG;
    }
    int64_t *candidates = malloc(sizeof *candidates * (size_t)count);
    sdfed_rng before = *sampler;
    rc = candidates ? SDFED_OK : SDFED_ERR_NOMEM;
    if (rc == SDFED_OK) {
        qsort(sorted, (size_t)count, sizeof *sorted, compare_clients);
        if (f->cl) agg_core_read_pace(f); /* a coordinator that took over knows the misses noted before */
        int n = 0;
        for (int i = 0; i < count; i++)
            if (agg_pace_rounds_out(&f->pace, sorted[i].id, f->round) == 0) candidates[n++] = sorted[i].id;
        if (n < f->opt.min_clients || n == 0) { /* too few would be left: nobody sits out */
            for (int i = 0; i < count; i++) candidates[i] = sorted[i].id;
            n = count;
        }
        rc = sdfed_round_choose(next, f->round, candidates, n, f->task.clients_per_round, f->opt.over_select, sampler,
                                NULL);
    }
    free(sorted);
    free(candidates);
    if (rc) {
        *sampler = before;
        native_log_line line;
        native_log_open(&line, "error");
        sdfed_jw_string(&line.w, "message", "out of memory starting a round");
        native_log_close(&line);
        return rc;
    }
    sdfed_error err = {0};
    rc = agg_store_begin_decision(f->st, agg_core_fence(f), f->round, STORE_START, &err);
    if (rc == SDFED_OK) rc = agg_store_start_round(f->st, f->round, next->clients, next->n_clients, sampler->s, &err);
    if (rc == SDFED_OK) rc = agg_store_commit_decision(f->st, &err);
    if (rc) {
        /* tried again next tick; the store reports its fault (store.h) */
        agg_store_abort_decision(f->st);
        *sampler = before;
        sdfed_round_free(next);
        agg_cluster_refused(f, rc, &err, now_ms);
        return rc;
    }
    native_log_line line;
    native_log_open(&line, "round_start");
    sdfed_jw_int(&line.w, "round", f->round);
    sdfed_jw_int(&line.w, "participants", next->n_clients);
    sdfed_jw_int(&line.w, "connected", count);
    native_log_close(&line);
    return SDFED_OK;
}
