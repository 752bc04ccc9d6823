/* The federation as its mode-independent core and its round policies share
 * it (federation.h is the network layer's view): the state, and the core's
 * functions a round policy calls. Private to sdfed_federation.
 *
 * The core, a job a file:
 *   federation.c    the entry points of federation.h, each one's own part
 *                   first (the state opened from the store, the roster,
 *                   validation, the batch, the status), then its policy's
 *   batch.c         the batch of updates, metrics and presence rows: when it
 *                   is written, and each row's answer once it is
 *   round_choose.c  a round's clients chosen among the connected ones and
 *                   its start stored, whatever the policy
 *   round_end.c     a round's end, whatever the policy: the updates
 *                   combined in one decision the store records, announced
 *   waiting.c       why no round is open, for the log and /status
 *   outbox.c        the typed messages left for the network layer
 *   roster.c        the clients connected to this process
 *   devices.c       the clients' device figures, summarised
 *   pace.c          pace steering: the clients that missed rounds
 *   privacy.c       the privacy a secure federation's noise has spent
 *   group_commit.c  rows waiting for the transaction that stores them
 * The round policies (round_policy.h): round_sync.c, round_async.c and
 * round_secure.c;
 * cluster mode (synchronous and secure rounds) adds cluster_sync.c (the
 * rounds the coordinator decided, followed through the store) and
 * presence.c (this node's clients in the store). */
#ifndef SDFED_AGGREGATOR_CORE_H
#define SDFED_AGGREGATOR_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "federation.h"
#include "group_commit.h"
#include "outbox.h"
#include "pace.h"
#include "presence.h"
#include "roster.h"
#include "round_policy.h"
#include "base/arena.h"
#include "fed/round.h"

struct agg_federation {
    sdfed_task task;
    agg_federation_options opt;
    agg_store *st;
    const sdfed_kernels *k;
    agg_cluster *cl;                /* cluster mode: this node's leases and role; NULL in a single process */
    const agg_round_policy *policy; /* agg_round_sync_policy, agg_round_async_policy or agg_round_secure_policy */
    void *rounds;                   /* the policy's own state (its open allocates it, its close frees it) */
    int64_t round;                  /* sync: the current or next round; async: the version */
    float *global;                  /* the current global parameters: shape[0] x shape[1] = n */
    size_t n;
    uint32_t shape[2];
    char sha[65];
    int done;                    /* every round of the task is done */
    sdfed_round_verdict pending; /* close or abandon, which the store refused: tried again every tick
                                    (agg_core_round_retry) */
    agg_outbox out;
    agg_roster clients;             /* connected to this process */
    agg_pace_board pace;            /* pace steering: who missed rounds, who sits out (pace.h) */
    agg_group_commit batch;         /* rows waiting for their transaction, and new clients' hellos */
    agg_federation_waiting waiting; /* why no round is open, as last noted (agg_core_note_waiting) */
    int64_t updates_accepted, rounds_closed, rounds_abandoned, metrics_stored, refused[SDFED_CODE_COUNT];
    double last_aggregation_ms, total_aggregation_ms;
    sdfed_arena arena;
    int64_t next_catch_up;      /* cluster: when the store is read again without a notification (cluster_sync.c) */
    agg_presence_queue leaving; /* cluster: presence rows the store did not remove yet (presence.c) */
};

/* federation.c: `code`, with the reason in message (a refused update or metrics). */
sdfed_code agg_core_refuse(char *message, size_t cap, sdfed_code code, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* The coordinator's fence (NULL in a single process), and whether this
 * process decides rounds: a single process, or the cluster's coordinator. */
const agg_store_fence *agg_core_fence(const agg_federation *f);
int agg_core_deciding(const agg_federation *f);

/* batch.c: whether the waiting rows are written now (their batch is due,
 * or the policy says that storing them could end the round); writes them
 * in one transaction and answers each. */
int agg_core_batch_due(const agg_federation *f, int64_t now_ms);
void agg_core_write_batch(agg_federation *f, int64_t now_ms);

/* Pace steering's board read again from the store (pace.h), where a
 * cluster's coordinator wrote it; kept as it was when the store fails
 * (the store reports its fault). */
void agg_core_read_pace(agg_federation *f);

/* round_choose.c: round f->round's clients chosen with sampler (fed/round.h:
 * clients_per_round among the connected ones, this process's or a
 * cluster's every node's, sorted by shard then id) into next, and its start
 * stored in one decision (agg_store_start_round); *present the clients
 * connected. A client pace steering has sitting out the round (pace.h) is
 * no candidate, unless fewer than min_clients (at least 1) would be left:
 * when no client sits out, the choice is the simulator's. Non-zero, with the sampler as it was and nothing stored, when
 * fewer than min_clients are connected (SDFED_ERR_ARG), memory ran out, or
 * the store refused (a cluster's coordinator told, agg_cluster_refused). */
int agg_core_round_choose(agg_federation *f, sdfed_rng *sampler, sdfed_round *next, int64_t *present, int64_t now_ms);

/* round_end.c: acts on a verdict (SDFED_ROUND_WAIT: nothing): a close
 * whose updates cannot be combined (agg_core_round_close) abandons the
 * round instead. One the store cannot record is tried again by
 * agg_core_round_retry, on every tick (synchronous rounds, and a cluster's
 * coordinator, judge the round again on every tick instead). */
void agg_core_round_act(agg_federation *f, sdfed_round_verdict verdict, int64_t now_ms);
/* Acts on the verdict the store refused before, if any (1). */
int agg_core_round_retry(agg_federation *f, int64_t now_ms);
/* Combines the round's stored updates (in the policy's order) into the
 * next round's parameters in one decision; then agg_core_round_next. A store
 * failure leaves the round as it was (non-zero); so does an aggregation
 * that fails, logged, with SDFED_ERR_NUMERIC when the updates cannot be
 * combined (the result is not finite: trying again cannot help). */
int agg_core_round_close(agg_federation *f, int64_t now_ms);
/* In the decision begun (agg_store_begin_decision, STORE_CLOSE): the round
 * closed with next (P) as the next round's parameters, made of `reports`
 * inputs in aggregation_ms, stored and committed, then agg_core_round_next. A
 * store failure aborts the decision and leaves the round as it was
 * (non-zero). agg_core_round_close ends with it; a secure round too, with the
 * unmasked sum's parameters. */
int agg_core_round_closed(agg_federation *f, const float *next, int reports, double aggregation_ms, int64_t now_ms);
/* The round recorded as abandoned in one decision (its parameters stay,
 * `reports` set aside) and counted; the caller logs why, then
 * agg_core_round_next. A store failure leaves the round as it was (non-zero). */
int agg_core_round_abandoned(agg_federation *f, int reports, int64_t now_ms);
/* What follows a round's end this process decided (closed, or abandoned
 * by its policy): in a single process its announcement (agg_core_round_end),
 * in a cluster what every node learns from the store (cluster_sync.h). */
void agg_core_round_next(agg_federation *f, int64_t now_ms, int reports, int abandoned);
/* A round's end as this process learns of it: round `next` now (the
 * global parameters already its), round_end to everyone (and done), the
 * policy told (round_policy.h: ended). */
void agg_core_round_end(agg_federation *f, int64_t now_ms, int64_t next, int reports, int abandoned, int decided_here);

/* waiting.c: keeps why no round is open (the policy's reason, or the end),
 * logged when it changes to a wait. */
void agg_core_note_waiting(agg_federation *f, int64_t now_ms);
/* waiting.c: a round policy's reason, with rounds that start when enough
 * clients are connected: none while one is open, else the coordinator's
 * (cluster mode), the pause until next_start_ms, the clients, or starting. */
agg_federation_wait_reason agg_core_round_wait_reason(const agg_federation *f, const agg_federation_waiting *w,
                                                      int open, int64_t next_start_ms, int64_t now_ms);

#endif
