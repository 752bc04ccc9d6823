/* A round policy: when rounds start and end, who takes part, and where an
 * update belongs, behind one table of functions that the mode-independent
 * core (core.h) calls at fixed points of each event. The core keeps what
 * every policy shares: the connected clients (f->clients), the current
 * round number and global parameters, the validation of what clients send
 * (shape, sample count, norm; metrics' rounds), the batch that stores
 * updates, metrics and presence rows (group commit), the outbox, the
 * store, the counts and the status. A policy keeps its own state in
 * f->rounds. The policies: round_sync.c (synchronous rounds; in cluster
 * mode with cluster_sync.c and presence.c), round_async.c (asynchronous:
 * the K newest updates, weighted by staleness) and round_secure.c (secure
 * rounds: the server learns only the sum).
 *
 * What a policy is told (a member left NULL: nothing to do):
 *   a restart     open, with the round the store holds latest and the
 *                 updates stored and not merged yet (after the core read
 *                 the parameters); close frees what open made
 *   a client      comes_back before its welcome (whether it takes up a
 *                 place kept for it), joined after it (what it is told:
 *                 round_start, wait); on leaving, keeps_place (whether its
 *                 place is kept, as for a lost connection within a grace)
 *                 and, when it is not, left: the departure
 *   a report      admit_update and admit_metrics: where a valid one belongs
 *                 (the round, the client; a refusal's code and reason);
 *                 could_end: whether storing the n updates waiting could end
 *                 the round (the batch is then written at once); stored:
 *                 one update stored and acknowledged; written: the batch
 *                 committed (judge the round)
 *   time          tick, every 200 ms, after the waiting rows were written
 *   a round's end order: the stored updates in combining order; abandon:
 *                 record the round as abandoned (agg_core_round_next after);
 *                 ended: the round is over (decided_here: by this process,
 *                 which goes on to the next one; 0: learnt from the store)
 *   the status    waiting (why no round is open, unless the federation is
 *                 done), status (open, participants, reported)
 * How it acts: it sends by the outbox (outbox.h, f->out); it stores
 * through the store (f->st: a decision begun at agg_core_fence, as
 * agg_store_start_round) and the core's batch (agg_core_write_batch); it ends a
 * round with agg_core_round_act (close: agg_core_round_close; abandon: its own)
 * and learns the outcome through ended.
 *
 * The secure policy (SecAgg+, docs/secure-aggregation.md) is round_secure.c,
 * which agg_federation_open chooses by the task's secure_aggregation; beyond
 * the members every policy has, it has receive and declined (a client's
 * stage message and its refusal of a request; the core refuses both with
 * secagg_off for a policy without them) and secagg_written (its rows of the
 * batch, group_commit.h, stored or not).
 * Cluster mode runs synchronous and secure rounds, each policy catching up
 * with the store its own way (catch_up; cluster_sync.h). */
#ifndef SDFED_AGGREGATOR_ROUND_POLICY_H
#define SDFED_AGGREGATOR_ROUND_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "federation.h"
#include "group_commit.h"
#include "store.h"
#include "fed/round.h"

typedef struct agg_round_policy {
    const char *mode; /* its name, in the log */
    int (*open)(agg_federation *f, const agg_store_round *latest, const agg_store_update *waiting, int n_waiting,
                int64_t now_ms, sdfed_error *err);
    void (*close)(agg_federation *f);
    int (*comes_back)(agg_federation *f, int64_t client);
    void (*joined)(agg_federation *f, int64_t client, int64_t now_ms);
    int (*keeps_place)(agg_federation *f, int64_t client, agg_federation_departure how, int64_t now_ms);
    void (*left)(agg_federation *f, int64_t client, int64_t now_ms);
    sdfed_code (*admit_update)(agg_federation *f, int64_t client, int64_t round, char *message, size_t cap);
    sdfed_code (*admit_metrics)(agg_federation *f, int64_t client, int64_t round, char *message, size_t cap);
    int (*could_end)(const agg_federation *f, int waiting);
    void (*stored)(agg_federation *f, const agg_store_new_update *u);
    void (*written)(agg_federation *f, const agg_group_commit *g, int64_t now_ms);
    void (*tick)(agg_federation *f, int64_t now_ms);
    int (*order)(const agg_federation *f, sdfed_round_update *u, int n, sdfed_error *err);
    int (*abandon)(agg_federation *f, int64_t now_ms);
    void (*ended)(agg_federation *f, int decided_here, int64_t now_ms);
    void (*waiting)(const agg_federation *f, int64_t now_ms, agg_federation_waiting *w);
    void (*status)(const agg_federation *f, agg_federation_status *s);
    /* A secure round's message (fed/secagg_message.h) from a client, and a
     * client's refusal of its request (NULL: the policy runs no secure
     * rounds, and the core refuses both with secagg_off). */
    sdfed_code (*receive)(agg_federation *f, int64_t client, const unsigned char *msg, size_t len, int64_t now_ms,
                          char *message, size_t cap);
    sdfed_code (*declined)(agg_federation *f, int64_t client, int64_t round, sdfed_code code, const char *why,
                           int64_t now_ms, char *message, size_t cap);
    /* The batch holding its messages was written (stored: committed, and
     * every message stored; each acknowledged or refused already), and
     * emptied. */
    void (*secagg_written)(agg_federation *f, int stored, int64_t now_ms);
    /* Cluster mode: what the store holds now, learnt (cluster_sync.h). */
    void (*catch_up)(agg_federation *f, int64_t now_ms);
} agg_round_policy;

extern const agg_round_policy agg_round_sync_policy, agg_round_async_policy, agg_round_secure_policy;

#endif
