/* Rounds, validation, aggregation and resumption (see federation.h). */
#include "federation.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "group_commit.h"
#include "outbox.h"
#include "roster.h"
#include "base/grow.h"
#include "base/names.h"
#include "base/rng.h"
#include "base/sha256.h"
#include "fed/round.h"
#include "method/methods.h"
#include "native/clock.h"
#include "native/log.h"

struct federation {
    sdfed_task task;
    federation_options opt;
    store *st;
    const sdfed_kernels *k;
    int64_t round; /* sync: the current or next round; async: the version */
    float *global;
    size_t n;
    uint32_t shape[2];
    char sha[65];
    int open, done;
    sdfed_round_verdict pending; /* close or abandon, which the store refused: tried again every tick */
    sdfed_round current;         /* sync: the open round's clients (fed/round.h) */
    int64_t deadline;
    int64_t next_start; /* sync: no round starts before (the pause after the last one) */
    sdfed_rng sampler;
    outbox out;
    roster clients;             /* connected to this process */
    int buffered;               /* async: updates waiting */
    federation_waiting waiting; /* why no round is open, as last noted (note_waiting) */
    int64_t present;            /* cluster coordinator: every node's connected clients, as last read */
    int64_t updates_accepted, rounds_closed, rounds_abandoned, metrics_stored, refused[SDFED_CODE_COUNT];
    double last_aggregation_ms, total_aggregation_ms;
    sdfed_arena arena;
    cluster *cl;       /* cluster mode: this node's leases and role; NULL in a single process */
    int64_t next_sync; /* cluster: when the round is read again without a notification */
    struct departed {
        int64_t client, round; /* round -1: not a departure from a round */
    } * leaving;               /* cluster: connections closed whose presence the store did not remove yet */
    int n_leaving, cap_leaving;
    group_commit batch; /* accepted updates waiting for their transaction */
    struct away {
        int64_t client, until; /* a chosen client whose connection was lost keeps its place until `until` */
    } * away;
    int n_away, cap_away;
};

/* one counter per protocol error code, here and in the status */
static_assert(sizeof((struct federation *)0)->refused / sizeof(int64_t) == SDFED_CODE_COUNT, "a counter per code");
static_assert(sizeof((federation_status *)0)->refused == sizeof((struct federation *)0)->refused, "status copies all");

void federation_count_refusal(federation *f, sdfed_code code) {
    if (code >= 0 && code < SDFED_CODE_COUNT) f->refused[code]++;
}

/* ------------------------------------------------------------- messages */

const federation_message *federation_outbox(const federation *f, int *n) {
    *n = f->out.n;
    return f->out.messages;
}

void federation_outbox_clear(federation *f) { outbox_clear(&f->out); }

/* round_start, with the time left until the round's deadline (sync) */
static void send_round(federation *f, const roster_client *p, int64_t now_ms) {
    int64_t left = f->opt.async ? 0 : f->deadline > now_ms ? f->deadline - now_ms : 0;
    outbox_round_start(&f->out, p->id, f->round, left);
}

/* ------------------------------------------------------------- waiting */

static const sdfed_name wait_reason_names[] = {
    [FEDERATION_NOT_WAITING] = {.name = NULL, .value = FEDERATION_NOT_WAITING},
    [FEDERATION_TOO_FEW_CLIENTS] = {.name = "too_few_clients", .value = FEDERATION_TOO_FEW_CLIENTS},
    [FEDERATION_ROUND_PAUSE] = {.name = "round_pause", .value = FEDERATION_ROUND_PAUSE},
    [FEDERATION_FINISHED] = {.name = "finished", .value = FEDERATION_FINISHED},
    [FEDERATION_NOT_COORDINATOR] = {.name = "not_coordinator", .value = FEDERATION_NOT_COORDINATOR},
    [FEDERATION_STARTING] = {.name = "starting", .value = FEDERATION_STARTING},
};
static_assert(sizeof wait_reason_names / sizeof wait_reason_names[0] == FEDERATION_WAIT_REASON_COUNT,
              "a name per wait reason");

const char *federation_wait_reason_name(federation_wait_reason reason) {
    return sdfed_name_of(wait_reason_names, FEDERATION_WAIT_REASON_COUNT, (int)reason);
}

static int deciding(const federation *f);

/* Clients a synchronous round needs connected to start. */
static int64_t clients_needed(const federation *f) { return f->opt.min_clients > 1 ? f->opt.min_clients : 1; }

/* Why no round is open now, from the state alone. */
static federation_waiting waiting_now(const federation *f, int64_t now_ms) {
    federation_waiting w = {.needed = clients_needed(f), .connected = f->cl && deciding(f) ? f->present : f->clients.n};
    if (f->done)
        w.reason = FEDERATION_FINISHED;
    else if (f->opt.async || f->open)
        w.reason = FEDERATION_NOT_WAITING;
    else if (!deciding(f))
        w.reason = FEDERATION_NOT_COORDINATOR;
    else if (now_ms < f->next_start)
        w.reason = FEDERATION_ROUND_PAUSE;
    else if (w.connected < w.needed)
        w.reason = FEDERATION_TOO_FEW_CLIENTS;
    else
        w.reason = FEDERATION_STARTING;
    return w;
}

/* Keeps the reason for the status, and logs it when it changes to a wait
 * (a round that starts says so itself; "starting" lasts a tick unless the
 * store refuses the start, which the store logs). */
static void note_waiting(federation *f, int64_t now_ms) {
    federation_waiting w = waiting_now(f, now_ms);
    if (w.reason != f->waiting.reason && w.reason != FEDERATION_NOT_WAITING && w.reason != FEDERATION_STARTING)
        native_logf("waiting", "\"reason\": \"%s\", \"round\": %lld, \"needed\": %lld, \"connected\": %lld",
                    federation_wait_reason_name(w.reason), (long long)f->round, (long long)w.needed,
                    (long long)w.connected);
    f->waiting = w;
}

/* -------------------------------------------------------------- rounds */

static int compare_peers(const void *a, const void *b) {
    const roster_client *x = a, *y = b;
    int64_t sx = x->shard < 0 ? INT64_MAX : x->shard, sy = y->shard < 0 ? INT64_MAX : y->shard;
    if (sx != sy) return sx < sy ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The coordinator's fence (NULL in a single process), and whether this
 * process decides rounds: a single process, or the cluster's coordinator. */
static const store_fence *fence_of(const federation *f) { return f->cl ? cluster_fence(f->cl) : NULL; }
static int deciding(const federation *f) { return !f->cl || cluster_fence(f->cl); }

/* The open round to this process's clients: round_start to the chosen
 * ones still due, wait to the others. */
static void announce_start(federation *f, int64_t now_ms) {
    for (int i = 0; i < f->clients.n; i++) {
        if (sdfed_round_due(&f->current, f->clients.clients[i].id))
            send_round(f, &f->clients.clients[i], now_ms);
        else
            outbox_wait(&f->out, f->clients.clients[i].id, f->round, "not_sampled");
    }
}

/* A decision the store did not record: at the fence, another node
 * coordinates now; else the round moved on meanwhile (read it again). */
static void sync_round(federation *f, int64_t now_ms);
static void refused_decision(federation *f, int rc, const sdfed_error *err, int64_t now_ms) {
    if (!f->cl) return;
    if (rc != SDFED_ERR_IO) native_log_message("decision_refused", "", err->message); /* the store reports its faults */
    if (rc == SDFED_ERR_ARG) cluster_step_down(f->cl);
    sync_round(f, now_ms);
}

/* The connected clients, this process's or (cluster) every node's. */
static int connected_clients(federation *f, roster_client **out, int *count) {
    *out = NULL, *count = 0;
    if (!f->cl) {
        if (f->clients.n && !(*out = malloc(sizeof **out * (size_t)f->clients.n))) return SDFED_ERR_NOMEM;
        if (f->clients.n) memcpy(*out, f->clients.clients, sizeof **out * (size_t)f->clients.n);
        *count = f->clients.n;
        return SDFED_OK;
    }
    int64_t *clients;
    int *shards, n, rc = store_present_clients(f->st, &clients, &shards, &n, NULL);
    if (rc) return rc;
    if (n && !(*out = malloc(sizeof **out * (size_t)n))) rc = SDFED_ERR_NOMEM;
    for (int i = 0; rc == SDFED_OK && i < n; i++)
        (*out)[i] = (roster_client){.id = clients[i], .shard = shards[i], .assigned = -1, .present = 1};
    *count = rc ? 0 : n;
    free(clients), free(shards);
    return rc;
}

/* Starts the next synchronous round if nothing holds it back. */
static void start_round_if_due(federation *f, int64_t now_ms) {
    if (f->opt.async || f->open || f->done || !deciding(f) || now_ms < f->next_start) return;
    if (!f->cl && (f->clients.n < f->opt.min_clients || f->clients.n == 0)) return;
    /* the round engine chooses among the connected clients by shard, then id */
    roster_client *sorted;
    int count;
    if (connected_clients(f, &sorted, &count)) return; /* the store reports its fault */
    f->present = count;
    if (count < f->opt.min_clients || count == 0) {
        free(sorted);
        return;
    }
    int64_t *candidates = malloc(sizeof *candidates * (size_t)count);
    sdfed_round next = {0};
    sdfed_rng before = f->sampler;
    int rc = candidates ? SDFED_OK : SDFED_ERR_NOMEM;
    if (rc == SDFED_OK) {
        qsort(sorted, (size_t)count, sizeof *sorted, compare_peers);
        for (int i = 0; i < count; i++) candidates[i] = sorted[i].id;
        rc = sdfed_round_choose(&next, f->round, candidates, count, f->task.clients_per_round, f->opt.over_select,
                                &f->sampler, NULL);
    }
    free(sorted), free(candidates);
    if (rc) {
        f->sampler = before;
        native_logf("error", "\"message\": \"out of memory starting a round\"");
        return;
    }
    sdfed_error err = {0};
    rc = store_begin_decision(f->st, fence_of(f), f->round, STORE_START, &err);
    if (rc == SDFED_OK) rc = store_start_round(f->st, f->round, next.clients, next.n_clients, f->sampler.s, &err);
    if (rc == SDFED_OK) rc = store_commit_decision(f->st, &err);
    if (rc) {
        /* tried again next tick; the store reports its fault (store.h) */
        store_abort_decision(f->st);
        f->sampler = before;
        sdfed_round_free(&next);
        refused_decision(f, rc, &err, now_ms);
        return;
    }
    native_logf("round_start", "\"round\": %lld, \"participants\": %d, \"connected\": %d", (long long)f->round,
                next.n_clients, count);
    if (f->cl) { /* announced as every node learns of it */
        sdfed_round_free(&next);
        sync_round(f, now_ms);
        return;
    }
    sdfed_round_free(&f->current);
    f->current = next;
    f->open = 1;
    f->deadline = now_ms + f->opt.deadline_ms;
    announce_start(f, now_ms);
}

static void maybe_start_round(federation *f, int64_t now_ms) {
    start_round_if_due(f, now_ms);
    note_waiting(f, now_ms);
}

/* A round's end, closed or abandoned, as this process learns of it: the
 * next round number (or version) `next` and the announcement. */
static void end_round(federation *f, int64_t now_ms, int64_t next, int reports, int abandoned) {
    int64_t ended = next - 1;
    f->round = next;
    f->open = 0;
    f->buffered = 0;
    f->done = f->round >= f->task.rounds;
    f->pending = SDFED_ROUND_WAIT;
    sdfed_round_free(&f->current);
    f->next_start = now_ms + f->opt.round_pause_ms;
    federation_message m = {.type = FEDERATION_ROUND_END,
                            .client = FEDERATION_EVERYONE,
                            .round = ended,
                            .next_round = f->round,
                            .participants = reports,
                            .abandoned = abandoned};
    memcpy(m.global_sha256, f->sha, sizeof m.global_sha256);
    outbox_put(&f->out, m);
    if (f->done) outbox_done(&f->out, FEDERATION_EVERYONE, f->task.rounds);
    note_waiting(f, now_ms);
}

/* What follows the end of a round this process decided: in a single
 * process the announcement and the next round; in a cluster every node
 * (this one too) learns of it from the store. */
static void next_round(federation *f, int64_t now_ms, int reports, int abandoned) {
    if (f->cl) {
        sync_round(f, now_ms);
        return;
    }
    end_round(f, now_ms, f->round + 1, reports, abandoned);
    if (f->opt.async && !f->done) /* the idle clients get the new version; the others finish first */
        for (int i = 0; i < f->clients.n; i++)
            if (f->clients.clients[i].assigned < 0) {
                f->clients.clients[i].assigned = f->round;
                send_round(f, &f->clients.clients[i], now_ms);
            }
    maybe_start_round(f, now_ms);
}

/* Combines the waiting updates into the next round's parameters, in the
 * decision's transaction (a cluster's coordinator: the round's row is
 * locked, so the updates read are all it will ever have). A store failure
 * leaves the round as it was, to be ended on the next tick; the store
 * reports its fault (store.h), so only the aggregation's own failures are
 * logged here. */
static int close_round(federation *f, int64_t now_ms) {
    sdfed_error err = {0};
    store_update *u = NULL;
    int n = 0;
    int rc = store_begin_decision(f->st, fence_of(f), f->round, STORE_CLOSE, &err);
    if (rc) {
        refused_decision(f, rc, &err, now_ms);
        return rc;
    }
    rc = store_pending_updates(f->st, &u, &n, NULL);
    if (rc || n == 0) {
        store_abort_decision(f->st);
        store_updates_free(u, n);
        return rc ? rc : SDFED_ERR_ARG;
    }
    sdfed_round_update *updates = malloc(sizeof *updates * (size_t)n);
    float *next = malloc(sizeof *next * f->n);
    if (!updates || !next) rc = sdfed_fail(&err, SDFED_ERR_NOMEM, "out of memory");
    /* sync: in the order the round's clients were chosen, as the simulator
     * trains them; async: as the store gives them, by base version, then client */
    for (int i = 0; i < n && rc == SDFED_OK; i++)
        updates[i] = (sdfed_round_update){u[i].client, u[i].round, u[i].samples, u[i].values};
    if (rc == SDFED_OK && !f->opt.async) rc = sdfed_round_order(&f->current, updates, n, &err);
    int64_t t0 = native_clock_monotonic_ns();
    sdfed_arena_reset(&f->arena);
    if (rc == SDFED_OK)
        rc = sdfed_round_combine(&f->opt.aggregate, f->task.seed, f->round, updates, n, f->global, f->n, next,
                                 &f->arena, &err);
    double aggregation_ms = 1e-6 * (double)(native_clock_monotonic_ns() - t0);
    char sha[65];
    if (rc) {
        native_logf("error", "\"round\": %lld, \"message\": \"aggregation failed: %s\"", (long long)f->round,
                    err.message);
    } else {
        sdfed_sha256_hex(next, sizeof(float) * f->n, sha);
        rc = store_close_round(f->st, f->round, next, f->n, sha, n, 0, aggregation_ms, NULL);
        if (rc == SDFED_OK) rc = store_commit_decision(f->st, NULL);
    }
    if (rc) store_abort_decision(f->st);
    if (rc == SDFED_OK) {
        memcpy(f->global, next, sizeof *next * f->n);
        memcpy(f->sha, sha, sizeof sha);
        f->rounds_closed++;
        f->last_aggregation_ms = aggregation_ms;
        f->total_aggregation_ms += aggregation_ms;
        native_logf("round_end",
                    "\"round\": %lld, \"updates\": %d, \"aggregation_ms\": %.3f, \"rule\": \"%s\", \"clip_norm\": %g, "
                    "\"noise_multiplier\": %g, \"global_sha256\": \"%s\"",
                    (long long)f->round, n, aggregation_ms, sdfed_aggregate_rule_name(f->opt.aggregate.rule),
                    f->opt.aggregate.clip_norm, f->opt.aggregate.noise_multiplier, sha);
        next_round(f, now_ms, n, 0);
    }
    free(updates), free(next);
    store_updates_free(u, n);
    return rc;
}

/* Abandons the round: the parameters stay, its reports are set aside. */
static int abandon_round(federation *f, int64_t now_ms) {
    sdfed_error err = {0};
    int rc = store_begin_decision(f->st, fence_of(f), f->round, STORE_CLOSE, &err);
    if (rc) {
        refused_decision(f, rc, &err, now_ms);
        return rc;
    }
    rc = store_close_round(f->st, f->round, f->global, f->n, f->sha, f->current.n_reported, 1, 0, NULL);
    if (rc == SDFED_OK) rc = store_commit_decision(f->st, NULL);
    if (rc) {
        store_abort_decision(f->st);
        return rc;
    }
    f->rounds_abandoned++;
    native_logf("round_abandoned", "\"round\": %lld, \"reported\": %d, \"still_in\": %d, \"of\": %d",
                (long long)f->round, f->current.n_reported, sdfed_round_still_in(&f->current), f->current.n_clients);
    next_round(f, now_ms, f->current.n_reported, 1);
    return SDFED_OK;
}

/* Acts on a verdict; one the store cannot record is tried again every
 * tick (a cluster's coordinator judges the round again instead). */
static void act(federation *f, sdfed_round_verdict verdict, int64_t now_ms) {
    if (verdict == SDFED_ROUND_WAIT) return;
    int rc = verdict == SDFED_ROUND_CLOSE ? close_round(f, now_ms) : abandon_round(f, now_ms);
    if (rc && !f->cl) f->pending = verdict;
}

/* Ends the sync round when the engine says so. */
static void check_round(federation *f, int64_t now_ms) {
    if (f->open && deciding(f)) act(f, sdfed_round_check(&f->current, f->opt.min_clients, 0), now_ms);
}

/* Cluster mode: what the store holds now, learnt: rounds that ended (the
 * next one's parameters, announced), a round that started (announced to
 * its clients here), and the open round's reports and departures from
 * every node. */
static void sync_round(federation *f, int64_t now_ms) {
    store_round latest;
    int found;
    if (store_latest_round(f->st, &latest, &found, NULL) || !found) return; /* the store reports its fault */
    if (latest.n_values != f->n) {
        native_logf("error", "\"message\": \"the stored parameters do not fit the task's method\"");
        store_round_free(&latest);
        return;
    }
    if (latest.round > f->round) {
        store_round ended = {0};
        int have = 0;
        store_get_round(f->st, latest.round - 1, &ended, &have, NULL);
        memcpy(f->global, latest.global, sizeof *f->global * f->n);
        memcpy(f->sha, latest.sha256, sizeof f->sha);
        if (have && ended.started) memcpy(f->sampler.s, ended.rng, sizeof ended.rng);
        end_round(f, now_ms, latest.round, have ? ended.n_updates : 0, have && ended.abandoned);
        store_round_free(&ended);
    }
    if (latest.round == f->round && latest.started && !latest.closed && !f->open && !f->done &&
        sdfed_round_resume(&f->current, latest.round, latest.participants, latest.n_participants,
                           f->task.clients_per_round, NULL) == SDFED_OK) {
        memcpy(f->sampler.s, latest.rng, sizeof latest.rng);
        f->open = 1;
        f->deadline = now_ms + f->opt.deadline_ms;
        announce_start(f, now_ms);
    }
    store_round_free(&latest);
    int64_t *reported, *departed;
    int n_reported, n_departed;
    if (!f->open ||
        store_round_events(f->st, f->round, &reported, &n_reported, &departed, &n_departed, NULL) != SDFED_OK)
        return;
    for (int i = 0; i < n_reported; i++) sdfed_round_report(&f->current, reported[i]);
    for (int i = 0; i < n_departed; i++) sdfed_round_leave(&f->current, departed[i]);
    free(reported), free(departed);
}

/* ----------------------------------------------------------- public api */

/* The state the store holds, or a new federation from the task's initial
 * shared parameters. */
static int load_state(federation *f, const sdfed_clip_model *m, const sdfed_classes *cls, sdfed_error *err) {
    sdfed_method_config cfg = sdfed_task_method_config(&f->task);
    int width, rows, local_rows;
    sdfed_method_shapes(&cfg, m, cls->n_classes, &width, &rows, &local_rows);
    if (rows == 0)
        return sdfed_fail(err, SDFED_ERR_ARG, "federation: method %s shares nothing to aggregate",
                          sdfed_method_name(f->task.method));
    f->shape[0] = (uint32_t)rows, f->shape[1] = (uint32_t)width;
    f->n = (size_t)rows * width;
    sdfed_round_sampler(&f->sampler, f->task.seed);
    store_round r;
    int found, rc = store_latest_round(f->st, &r, &found, err);
    if (rc) return rc;
    if (!found) {
        sdfed_method_params server;
        if ((rc = sdfed_task_server_params(&f->task, m, f->k, cls, &server, &f->arena, err))) return rc;
        f->global = malloc(sizeof *f->global * f->n);
        if (!f->global)
            rc = sdfed_fail(err, SDFED_ERR_NOMEM, "federation: out of memory");
        else
            memcpy(f->global, server.global, sizeof *f->global * f->n);
        sdfed_method_params_free(&server);
        if (rc) return rc;
        sdfed_sha256_hex(f->global, sizeof *f->global * f->n, f->sha);
        f->round = 0;
        rc = store_add_first_round(f->st, f->global, f->n, f->sha, err);
        if (rc != SDFED_ERR_ARG || !f->cl) return rc;
        /* another node of the cluster stored round 0 first: its row holds */
        free(f->global);
        f->global = NULL;
        if ((rc = store_latest_round(f->st, &r, &found, err))) return rc;
        if (!found) return sdfed_fail(err, SDFED_ERR_IO, "federation: round 0 is neither stored nor storable");
    }
    if (r.n_values != f->n) {
        store_round_free(&r);
        return sdfed_fail(err, SDFED_ERR_FORMAT, "federation: the stored parameters do not fit the task's method");
    }
    f->round = r.round;
    f->global = r.global;
    r.global = NULL;
    memcpy(f->sha, r.sha256, sizeof f->sha);
    if (r.started && !r.closed) {
        /* resume the open round: its clients, sampler and stored updates */
        memcpy(f->sampler.s, r.rng, sizeof r.rng);
        if ((rc = sdfed_round_resume(&f->current, r.round, r.participants, r.n_participants, f->task.clients_per_round,
                                     err))) {
            store_round_free(&r);
            return rc;
        }
        f->open = !f->opt.async;
    } else if (r.round > 0) {
        store_round previous = {0};
        if ((rc = store_get_round(f->st, r.round - 1, &previous, &found, err)) == SDFED_OK && found && previous.started)
            memcpy(f->sampler.s, previous.rng, sizeof previous.rng);
        store_round_free(&previous);
    }
    store_round_free(&r);
    if (rc) return rc;
    store_update *u;
    int n;
    if ((rc = store_pending_updates(f->st, &u, &n, err))) return rc;
    for (int i = 0; i < n; i++) sdfed_round_report(&f->current, u[i].client);
    f->buffered = n;
    store_updates_free(u, n);
    f->done = f->round >= f->task.rounds;
    return SDFED_OK;
}

int federation_open(federation **out, const sdfed_task *task, const sdfed_clip_model *m, const sdfed_kernels *k,
                    const sdfed_classes *cls, store *st, const federation_options *opt, int64_t now_ms,
                    sdfed_error *err) {
    *out = NULL;
    federation *f = calloc(1, sizeof *f);
    if (!f) return sdfed_fail(err, SDFED_ERR_NOMEM, "federation: out of memory");
    f->task = *task, f->opt = *opt, f->st = st, f->k = k, f->cl = opt->cluster;
    sdfed_arena_init(&f->arena);
    group_commit_init(&f->batch, opt->batch_rows, opt->batch_wait_ms, f->cl ? cluster_node(f->cl) : 0);
    int rc = load_state(f, m, cls, err);
    if (rc == SDFED_OK && f->cl) sync_round(f, now_ms); /* the open round's departures */
    if (rc) {
        federation_close(f);
        return rc;
    }
    if (f->open) f->deadline = now_ms + f->opt.deadline_ms;
    native_logf("federation",
                "\"round\": %lld, \"rounds\": %d, \"mode\": \"%s\", \"resumed\": %s, \"open\": %d, "
                "\"reported\": %d, \"global_sha256\": \"%s\"",
                (long long)f->round, f->task.rounds, f->opt.async ? "async" : "sync",
                f->round > 0 || f->open ? "true" : "false", f->open, f->current.n_reported, f->sha);
    note_waiting(f, now_ms);
    *out = f;
    return SDFED_OK;
}

void federation_close(federation *f) {
    if (!f) return;
    free(f->global);
    outbox_free(&f->out);
    sdfed_round_free(&f->current);
    roster_free(&f->clients);
    free(f->leaving);
    free(f->away);
    group_commit_free(&f->batch);
    sdfed_arena_free(&f->arena);
    free(f);
}

static void write_batch(federation *f, int64_t now_ms);
static int batch_must_go(const federation *f, int64_t now_ms);

/* The client's place kept while its connection was lost: forgotten (it
 * came back, or its time is up); whether it had one. */
static int forget_away(federation *f, int64_t client) {
    for (int i = 0; i < f->n_away; i++)
        if (f->away[i].client == client) {
            f->away[i] = f->away[--f->n_away];
            return 1;
        }
    return 0;
}

/* A client identified joins: welcomed (its welcome carries the handle of
 * the hello it answers, NULL for a client the caller knew) and, when the
 * time comes, given rounds. */
static void join(federation *f, int64_t client, int shard, void *hello, int64_t now_ms) {
    int back = forget_away(f, client);
    int again; /* its connection replaced: it never left */
    roster_client *p = roster_join(&f->clients, client, shard, &again);
    if (!p) {
        native_logf("error", "\"message\": \"out of memory adding a client\"");
        return;
    }
    if (f->cl) { /* its presence row waits for the batch (a tick stores it if the batch could not) */
        if (store_notified(f->st)) sync_round(f, now_ms);
        if (group_commit_add_presence(&f->batch, client, shard, now_ms) == SDFED_OK && batch_must_go(f, now_ms))
            write_batch(f, now_ms);
        p = roster_find(&f->clients, client);
    }
    outbox_put(&f->out,
               (federation_message){.type = FEDERATION_WELCOME, .client = client, .round = f->round, .hello = hello});
    native_logf("join", "\"client\": %lld, \"shard\": %d, \"connected\": %d%s", (long long)client, shard, f->clients.n,
                again  ? ", \"again\": true"
                : back ? ", \"back\": true"
                       : "");
    if (f->done) {
        outbox_done(&f->out, client, f->task.rounds);
    } else if (f->opt.async) {
        p->assigned = f->round;
        send_round(f, p, now_ms);
    } else if (f->open) {
        /* a client that left its round is out of it for good; one whose
         * connection was replaced or lost (and that is back in time), and
         * after a restart the open round's clients, are due until they report */
        if (sdfed_round_due(&f->current, client))
            send_round(f, p, now_ms);
        else
            outbox_wait(&f->out, client, f->round,
                        sdfed_round_reported(&f->current, client) ? "reported" : "round_in_progress");
    } else {
        if (!f->cl) maybe_start_round(f, now_ms); /* a cluster's coordinator starts rounds on its ticks */
        if (!f->open) outbox_wait(&f->out, client, f->round, "too_few_clients");
    }
    note_waiting(f, now_ms);
}

void federation_join(federation *f, int64_t client, int shard, int64_t now_ms) { join(f, client, shard, NULL, now_ms); }

/* Registers the waiting hellos in one transaction, then joins each whose
 * connection is still there; when it did not commit, each is refused
 * (server_error, the store's reason) and may say hello again. */
static void register_waiting(federation *f, int64_t now_ms) {
    group_commit *g = &f->batch;
    int n = g->n_hellos;
    if (n == 0) return;
    int64_t *ids = malloc(sizeof *ids * (size_t)n);
    sdfed_error err = {0};
    int rc = ids ? group_commit_write_hellos(g, f->st, ids, &err) : sdfed_fail(&err, SDFED_ERR_NOMEM, "out of memory");
    for (int i = 0, k = 0; i < n; i++) {
        const group_commit_hello *h = &g->hellos[i];
        if (!h->hello) continue;
        if (rc == SDFED_OK) {
            join(f, ids[k++], h->shard, h->hello, now_ms);
            continue;
        }
        federation_message m = {.type = FEDERATION_REFUSAL,
                                .client = FEDERATION_NOBODY,
                                .round = f->round,
                                .code = SDFED_CODE_SERVER_ERROR,
                                .hello = h->hello};
        snprintf(m.text, sizeof m.text, "%s", err.message);
        outbox_put(&f->out, m);
    }
    group_commit_clear_hellos(g);
    free(ids);
}

int federation_register(federation *f, void *hello, const char *token, int shard, const char *kind, int64_t now_ms) {
    int rc = group_commit_add_hello(&f->batch, hello, token, shard, kind, now_ms);
    if (rc == SDFED_OK && group_commit_hellos_due_in_ms(&f->batch, now_ms) == 0) register_waiting(f, now_ms);
    return rc;
}

void federation_register_cancel(federation *f, const void *hello) { group_commit_cancel_hello(&f->batch, hello); }

void federation_register_now(federation *f, int64_t now_ms) { register_waiting(f, now_ms); }

/* Cluster: a closed connection's presence row goes, with its departure
 * from the round, only if this node still held the client (it may have
 * reconnected to another node already); a removal the store refused (the
 * database is away) is tried again on every tick, so that a client gone
 * meanwhile does not count as connected. */
static void remove_presence(federation *f, int64_t client, int64_t round) {
    int removed;
    if (store_presence_remove(f->st, client, cluster_node(f->cl), round, &removed, NULL) == SDFED_OK) {
        if (removed && round == f->round && f->open) sdfed_round_leave(&f->current, client);
        return;
    }
    struct departed *grown = sdfed_grow(f->leaving, &f->cap_leaving, f->n_leaving, sizeof *grown);
    if (!grown) return;
    f->leaving = grown;
    f->leaving[f->n_leaving++] = (struct departed){client, round};
}

void federation_leave(federation *f, int64_t client, federation_departure how, int64_t now_ms) {
    if (!roster_find(&f->clients, client)) return;
    write_batch(f, now_ms); /* what came before the leave counts first */
    roster_remove(&f->clients, client);
    /* a chosen client whose connection was lost keeps its place for the grace */
    int keep = how == FEDERATION_LOST && f->opt.rejoin_grace_ms > 0 && !f->opt.async && f->open &&
               sdfed_round_due(&f->current, client);
    struct away *grown = keep ? sdfed_grow(f->away, &f->cap_away, f->n_away, sizeof *grown) : NULL;
    if (grown) {
        f->away = grown;
        f->away[f->n_away++] = (struct away){.client = client, .until = now_ms + f->opt.rejoin_grace_ms};
    }
    native_logf("leave", "\"client\": %lld, \"connected\": %d, \"lost\": %s%s", (long long)client, f->clients.n,
                how == FEDERATION_LOST ? "true" : "false", grown ? ", \"place_kept\": true" : "");
    if (grown) {
        note_waiting(f, now_ms);
        return;
    }
    if (f->cl) {
        int due = f->open && sdfed_round_due(&f->current, client);
        remove_presence(f, client, due ? f->round : -1);
    } else if (f->open && sdfed_round_leave(&f->current, client) >= 0) {
        check_round(f, now_ms);
    }
    note_waiting(f, now_ms);
}

#define REFUSE(c, ...) (snprintf(message, cap, __VA_ARGS__), c)

sdfed_code federation_update(federation *f, int64_t client, int64_t round, int64_t samples, int n_dims,
                             const uint32_t *shape, const float *values, int64_t now_ms, char *message, size_t cap) {
    /* a cluster's node may not have heard of the round yet */
    if (f->cl && (!f->open || round != f->round)) sync_round(f, now_ms);
    /* the update itself first, then where it belongs */
    if (n_dims != 2 || shape[0] != f->shape[0] || shape[1] != f->shape[1])
        return REFUSE(SDFED_CODE_BAD_SHAPE, "the update must be %u x %u", f->shape[0], f->shape[1]);
    if (samples < 1 || samples > f->opt.max_samples)
        return REFUSE(SDFED_CODE_BAD_SAMPLES, "sample count %lld is outside 1..%lld", (long long)samples,
                      (long long)f->opt.max_samples);
    if (f->opt.max_update_norm > 0) {
        double norm = 0.0;
        for (size_t j = 0; j < f->n; j++)
            norm += ((double)values[j] - f->global[j]) * ((double)values[j] - f->global[j]);
        if (sqrt(norm) > f->opt.max_update_norm)
            return REFUSE(SDFED_CODE_NORM_TOO_LARGE, "the update changes the parameters by %.3g, above %.3g",
                          sqrt(norm), f->opt.max_update_norm);
    }
    if (f->done) { /* no round will open: the answer is that the federation is done */
        outbox_done(&f->out, client, f->task.rounds);
        return SDFED_CODE_NONE;
    }
    roster_client *p = roster_find(&f->clients, client);
    if (f->opt.async) {
        if (round > f->round || f->round - round > f->opt.max_staleness) {
            if (p && p->assigned == round) { /* too slow for its version: the current one */
                p->assigned = f->round;
                send_round(f, p, now_ms);
            }
            return REFUSE(SDFED_CODE_WRONG_ROUND, "version %lld is not within %d of the current %lld", (long long)round,
                          f->opt.max_staleness, (long long)f->round);
        }
        if (!p || p->assigned != round)
            return p && p->assigned < 0 ? REFUSE(SDFED_CODE_DUPLICATE_UPDATE,
                                                 "version %lld already has this client's update", (long long)round)
                                        : REFUSE(SDFED_CODE_WRONG_ROUND, "this client was given version %lld, not %lld",
                                                 (long long)(p ? p->assigned : f->round), (long long)round);
    } else {
        if (!f->open || round != f->round)
            return REFUSE(SDFED_CODE_WRONG_ROUND, "round %lld is not open; the %s round is %lld", (long long)round,
                          f->open ? "current" : "next", (long long)f->round);
        if (sdfed_round_index(&f->current, client) < 0)
            return REFUSE(SDFED_CODE_NOT_IN_ROUND, "client %lld was not chosen for round %lld", (long long)client,
                          (long long)round);
        if (sdfed_round_reported(&f->current, client))
            return REFUSE(SDFED_CODE_DUPLICATE_UPDATE, "round %lld already has this client's update", (long long)round);
    }
    if (group_commit_holds(&f->batch, round, client))
        return REFUSE(SDFED_CODE_DUPLICATE_UPDATE, "round %lld already has this client's update", (long long)round);
    if (group_commit_add(&f->batch, round, client, samples, values, f->n, now_ms))
        return REFUSE(SDFED_CODE_SERVER_ERROR, "not stored: out of memory");
    if (batch_must_go(f, now_ms)) write_batch(f, now_ms);
    return SDFED_CODE_NONE;
}

/* Whether the waiting rows are written now: their batch is due, or
 * storing them could end the round (a single process's: its target or
 * every client still in it; async: a version's buffer), which is only
 * ever decided on stored updates. */
static int batch_must_go(const federation *f, int64_t now_ms) {
    int n = f->batch.n_updates;
    if (group_commit_due_in_ms(&f->batch, now_ms) == 0) return 1;
    if (n == 0) return 0; /* metrics alone decide nothing */
    if (f->opt.async) return f->buffered + n >= f->opt.buffer;
    int reports = f->current.n_reported + n;
    return !f->cl && (reports >= f->current.target || reports >= sdfed_round_still_in(&f->current));
}

/* An update stored: acknowledged, and counted. */
static void stored(federation *f, const store_new_update *u) {
    f->updates_accepted++;
    outbox_put(&f->out, (federation_message){.type = FEDERATION_ACK, .client = u->client, .round = u->round});
    native_logf("update", "\"client\": %lld, \"round\": %lld, \"samples\": %lld", (long long)u->client,
                (long long)u->round, (long long)u->samples);
    if (!f->opt.async) {
        if (u->round == f->round) sdfed_round_report(&f->current, u->client);
        return;
    }
    roster_client *p = roster_find(&f->clients, u->client);
    if (p && p->assigned == u->round) p->assigned = -1;
    f->buffered++;
}

/* Writes the waiting updates, metrics and presence rows in one
 * transaction, then answers each update: an ack once stored, a refusal
 * when not (all of them, and the metrics, server_error, when the
 * transaction did not commit; presence rows not stored are stored again by
 * a tick); then the round is judged on them. */
static void write_batch(federation *f, int64_t now_ms) {
    group_commit *g = &f->batch;
    if (g->n_updates + g->n_metrics + g->n_presence == 0) return;
    sdfed_error err = {0};
    int rc = group_commit_write(g, f->st, f->cl ? STORE_OPEN_ROUND : STORE_ANY_ROUND, &err);
    for (int i = 0; i < g->n_metrics; i++)
        if (rc)
            outbox_refusal(&f->out, g->metrics[i].client, f->round, SDFED_CODE_SERVER_ERROR,
                           "metrics for round %lld not stored: %s", (long long)g->metrics[i].round, err.message);
        else if (g->metrics_outcome[i] == STORE_NO_UPDATE)
            outbox_refusal(&f->out, g->metrics[i].client, f->round, SDFED_CODE_NOT_IN_ROUND,
                           "metrics for round %lld: client %lld has no update accepted in that round",
                           (long long)g->metrics[i].round, (long long)g->metrics[i].client);
        else
            f->metrics_stored++;
    for (int i = 0; i < g->n_presence && rc == SDFED_OK; i++) {
        roster_client *p = roster_find(&f->clients, g->presence[i].client);
        if (p) p->present = 1;
    }
    for (int i = 0; i < g->n_updates; i++) {
        const store_new_update *u = &g->updates[i];
        if (rc)
            outbox_refusal(&f->out, u->client, f->round, SDFED_CODE_SERVER_ERROR, "not stored: %s", err.message);
        else if (g->outcome[i] == STORE_DUPLICATE)
            outbox_refusal(&f->out, u->client, f->round, SDFED_CODE_DUPLICATE_UPDATE,
                           "round %lld already has this client's update", (long long)u->round);
        else if (g->outcome[i] == STORE_NOT_OPEN && f->done)
            outbox_done(&f->out, u->client, f->task.rounds);
        else if (g->outcome[i] == STORE_NOT_OPEN)
            outbox_refusal(&f->out, u->client, f->round, SDFED_CODE_WRONG_ROUND,
                           "round %lld is not open for client %lld (closed, or it left)", (long long)u->round,
                           (long long)u->client);
        else
            stored(f, u);
    }
    if (rc == SDFED_OK && f->opt.async) {
        if (f->buffered >= f->opt.buffer) act(f, SDFED_ROUND_CLOSE, now_ms);
        /* a version newer than the one it trained on is waiting: at once */
        for (int i = 0; i < g->n_updates && !f->done; i++) {
            roster_client *p = roster_find(&f->clients, g->updates[i].client);
            if (g->outcome[i] == STORE_STORED && p && p->assigned < 0 && g->updates[i].round < f->round) {
                p->assigned = f->round;
                send_round(f, p, now_ms);
            }
        }
    }
    group_commit_clear(g);
    if (rc == SDFED_OK && !f->opt.async) check_round(f, now_ms);
}

void federation_flush(federation *f, int64_t now_ms) {
    if (group_commit_hellos_due_in_ms(&f->batch, now_ms) == 0) register_waiting(f, now_ms);
    if (group_commit_due_in_ms(&f->batch, now_ms) >= 0 && batch_must_go(f, now_ms)) write_batch(f, now_ms);
}

int64_t federation_flush_in_ms(const federation *f, int64_t now_ms) {
    int64_t rows = group_commit_due_in_ms(&f->batch, now_ms), hellos = group_commit_hellos_due_in_ms(&f->batch, now_ms);
    return rows < 0 ? hellos : hellos < 0 || rows < hellos ? rows : hellos;
}

sdfed_code federation_metrics(federation *f, int64_t client, int64_t round, double accuracy, double loss,
                              int64_t test_samples, int64_t now_ms, char *message, size_t cap) {
    if (test_samples > f->opt.max_samples)
        return REFUSE(SDFED_CODE_BAD_MESSAGE, "'test_samples' must be an integer in 0..%lld",
                      (long long)f->opt.max_samples);
    if (round >= f->round && f->done) {
        outbox_done(&f->out, client, f->task.rounds);
        return SDFED_CODE_NONE;
    }
    if (round > f->round)
        return REFUSE(SDFED_CODE_WRONG_ROUND, "metrics for round %lld, ahead of %lld", (long long)round,
                      (long long)f->round);
    /* the open round's reports are known here; an earlier round's (and a
     * cluster's, or an async version's) the store checks as it writes */
    if (!f->opt.async && !f->cl && round == f->round &&
        !(f->open && (sdfed_round_reported(&f->current, client) || group_commit_holds(&f->batch, round, client))))
        return REFUSE(SDFED_CODE_NOT_IN_ROUND,
                      "metrics for round %lld: client %lld has no update accepted in that round", (long long)round,
                      (long long)client);
    store_new_metrics m = {round, client, accuracy, loss, test_samples};
    if (group_commit_add_metrics(&f->batch, &m, now_ms))
        return REFUSE(SDFED_CODE_SERVER_ERROR, "metrics not stored: out of memory");
    if (batch_must_go(f, now_ms)) write_batch(f, now_ms);
    return SDFED_CODE_NONE;
}

federation_global federation_get_global(const federation *f) {
    return (federation_global){f->global, f->n, {f->shape[0], f->shape[1]}, f->sha, f->round};
}

int federation_shard_connected(const federation *f, int shard) { return roster_holds_shard(&f->clients, shard); }

/* Cluster mode: leases, what the store holds now (at once when notified,
 * else every poll_ms; every tick on the coordinator, which judges the
 * open round from it), presence rows the store refused before. */
static void cluster_tick_round(federation *f, int64_t now_ms) {
    cluster_tick(f->cl, now_ms);
    if (store_notified(f->st) || deciding(f) || now_ms >= f->next_sync) {
        sync_round(f, now_ms);
        f->next_sync = now_ms + f->opt.poll_ms;
    }
    int n = f->n_leaving;
    f->n_leaving = 0;
    for (int i = 0; i < n; i++) /* a client back here meanwhile keeps its row */
        if (!roster_find(&f->clients, f->leaving[i].client))
            remove_presence(f, f->leaving[i].client, f->leaving[i].round);
    for (int i = 0; i < f->clients.n; i++)
        if (!f->clients.clients[i].present)
            f->clients.clients[i].present =
                store_presence_add(f->st, f->clients.clients[i].id, f->clients.clients[i].shard, cluster_node(f->cl),
                                   NULL) == SDFED_OK;
}

/* Clients whose connection was lost and who did not come back within the
 * grace: out of the round now (a cluster node records the departure from
 * the round open then, if they are due in it). */
static void expire_away(federation *f, int64_t now_ms) {
    for (int i = 0; i < f->n_away;) {
        struct away a = f->away[i];
        if (now_ms < a.until) {
            i++;
            continue;
        }
        f->away[i] = f->away[--f->n_away];
        int due = f->open && sdfed_round_due(&f->current, a.client);
        native_logf("gone", "\"client\": %lld, \"round\": %lld, \"due\": %s", (long long)a.client, (long long)f->round,
                    due ? "true" : "false");
        if (f->cl)
            remove_presence(f, a.client, due ? f->round : -1);
        else if (due && sdfed_round_leave(&f->current, a.client) >= 0)
            check_round(f, now_ms);
    }
}

/* The tick's decisions (see federation_tick). */
static void decide_on_tick(federation *f, int64_t now_ms) {
    write_batch(f, now_ms); /* decisions are taken on stored updates */
    expire_away(f, now_ms);
    if (f->cl) {
        cluster_tick_round(f, now_ms);
        if (!deciding(f)) return;
        if (f->open && now_ms < f->deadline) check_round(f, now_ms);
    }
    if (f->pending != SDFED_ROUND_WAIT) {
        act(f, f->pending, now_ms);
        return;
    }
    if (!f->open) maybe_start_round(f, now_ms);
    if (!f->open || now_ms < f->deadline) return;
    const sdfed_round *r = &f->current;
    native_logf("deadline", "\"round\": %lld, \"reported\": %d, \"still_in\": %d, \"of\": %d", (long long)f->round,
                r->n_reported, sdfed_round_still_in(r), r->n_clients);
    act(f, sdfed_round_check(r, f->opt.min_clients, 1), now_ms);
}

void federation_tick(federation *f, int64_t now_ms) {
    decide_on_tick(f, now_ms);
    note_waiting(f, now_ms);
}

void federation_get_status(const federation *f, federation_status *s) {
    memset(s, 0, sizeof *s);
    s->round = f->round, s->rounds = f->task.rounds, s->connected = f->clients.n;
    s->participants = sdfed_round_still_in(&f->current), s->reported = f->current.n_reported;
    s->waiting = f->waiting;
    s->open = f->open, s->done = f->done, s->async = f->opt.async;
    memcpy(s->global_sha256, f->sha, sizeof f->sha);
    s->updates_accepted = f->updates_accepted, s->rounds_closed = f->rounds_closed;
    s->rounds_abandoned = f->rounds_abandoned;
    s->metrics_stored = f->metrics_stored;
    s->last_aggregation_ms = f->last_aggregation_ms, s->total_aggregation_ms = f->total_aggregation_ms;
    memcpy(s->refused, f->refused, sizeof s->refused);
}
