/* The asynchronous round policy (round_policy.h; docs/protocol.md): no
 * round waits for anyone. Every idle client gets the current version (the
 * round number) with its global parameters and trains on it; its update is
 * accepted while its version is at most max_staleness behind the current
 * one, and every `buffer` updates stored are combined (the round engine
 * weighs each by its staleness, fed/round.h) into the next version, which
 * the idle clients get at once and the others after their update; a
 * buffer whose updates cannot be combined is set aside, the version
 * abandoned with the parameters unchanged. A single process only (cluster
 * mode runs synchronous rounds). */
#include <stdlib.h>

#include "core.h"
#include "native/log.h"

typedef struct round_async {
    int buffered; /* updates stored and not combined yet */
} round_async;

static round_async *round_async_of(const agg_federation *f) { return f->rounds; }

/* The version to the client: it trains on it. */
static void assign(agg_federation *f, agg_roster_client *c) {
    c->assigned = f->round;
    agg_outbox_round_start(&f->out, c->id, f->round, 0);
}

static void async_joined(agg_federation *f, int64_t client, int64_t now_ms) {
    assign(f, agg_roster_find(&f->clients, client));
}

static sdfed_code async_admit_update(agg_federation *f, int64_t client, int64_t round, char *message, size_t cap) {
    agg_roster_client *c = agg_roster_find(&f->clients, client);
    if (round > f->round)
        return agg_core_refuse(message, cap, SDFED_CODE_WRONG_ROUND, "version %lld is ahead of the current %lld",
                               (long long)round, (long long)f->round);
    if (f->round - round > f->opt.max_staleness) {
        if (c && c->assigned == round) assign(f, c); /* too slow for its version: the current one */
        return agg_core_refuse(message, cap, SDFED_CODE_WRONG_ROUND,
                               "version %lld is more than %d behind the current %lld", (long long)round,
                               f->opt.max_staleness, (long long)f->round);
    }
    if (c && c->assigned == round) return SDFED_CODE_NONE;
    if (c && c->assigned < 0)
        return agg_core_refuse(message, cap, SDFED_CODE_DUPLICATE_UPDATE,
                               "version %lld already has this client's update", (long long)round);
    return agg_core_refuse(message, cap, SDFED_CODE_WRONG_ROUND, "this client was given version %lld, not %lld",
                           (long long)(c ? c->assigned : f->round), (long long)round);
}

/* A version's buffer. */
static int async_could_end(const agg_federation *f, int waiting) {
    return round_async_of(f)->buffered + waiting >= f->opt.buffer;
}

static void async_stored(agg_federation *f, const agg_store_new_update *u) {
    agg_roster_client *c = agg_roster_find(&f->clients, u->client);
    if (c && c->assigned == u->round) c->assigned = -1;
    round_async_of(f)->buffered++;
}

/* A full buffer makes the next version; a client whose update was on an
 * older version than the current one gets it at once. */
static void async_written(agg_federation *f, const agg_group_commit *g, int64_t now_ms) {
    if (round_async_of(f)->buffered >= f->opt.buffer) agg_core_round_act(f, SDFED_ROUND_CLOSE, now_ms);
    for (int i = 0; i < g->n_updates && !f->done; i++) {
        agg_roster_client *c = agg_roster_find(&f->clients, g->updates[i].client);
        if (g->outcome[i] == STORE_STORED && c && c->assigned < 0 && g->updates[i].round < f->round) assign(f, c);
    }
}

/* A version whose updates cannot be combined (round_end.c): the parameters
 * stay, the buffer's updates are set aside. */
static int async_abandon(agg_federation *f, int64_t now_ms) {
    const int buffered = round_async_of(f)->buffered;
    int rc = agg_core_round_abandoned(f, buffered, now_ms);
    if (rc) return rc;
    native_log_line line;
    native_log_open(&line, "round_abandoned");
    sdfed_jw_int(&line.w, "round", f->round);
    sdfed_jw_int(&line.w, "updates", buffered);
    native_log_close(&line);
    agg_core_round_next(f, now_ms, buffered, 1);
    return SDFED_OK;
}

/* A version the store refused to record, tried again. */
static void async_tick(agg_federation *f, int64_t now_ms) { agg_core_round_retry(f, now_ms); }

/* The idle clients get the new version; the others finish first. */
static void async_ended(agg_federation *f, int decided_here, int64_t now_ms) {
    round_async_of(f)->buffered = 0;
    for (int i = 0; i < f->clients.n && decided_here && !f->done; i++)
        if (f->clients.clients[i].assigned < 0) assign(f, &f->clients.clients[i]);
}

/* No round to wait for: versions come as updates do. */
static void async_waiting(const agg_federation *f, int64_t now_ms, agg_federation_waiting *w) {
    w->reason = FEDERATION_NOT_WAITING;
}

/* The updates stored and not combined yet fill the buffer again. */
static int async_open(agg_federation *f, const agg_store_round *latest, const agg_store_update *waiting, int n_waiting,
                      int64_t now_ms, sdfed_error *err) {
    round_async *a = calloc(1, sizeof *a);
    if (!a) return sdfed_fail(err, SDFED_ERR_NOMEM, "federation: out of memory");
    a->buffered = n_waiting;
    f->rounds = a;
    return SDFED_OK;
}

static void async_close(agg_federation *f) {
    free(f->rounds);
    f->rounds = NULL;
}

const agg_round_policy agg_round_async_policy = {
    .mode = "async",
    .open = async_open,
    .close = async_close,
    .joined = async_joined,
    .admit_update = async_admit_update,
    .could_end = async_could_end,
    .stored = async_stored,
    .written = async_written,
    .tick = async_tick,
    .abandon = async_abandon,
    .ended = async_ended,
    .waiting = async_waiting,
};
