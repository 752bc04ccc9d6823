/* The secure round policy (round_policy.h; SecAgg+, docs/secure-aggregation.md;
 * the wire: docs/protocol.md, "Secure rounds"): a round chooses its clients
 * as a synchronous one does (agg_core_round_choose; their order is their place
 * 0..n-1) after its 32-byte graph key (getrandom) is stored, and sends each
 * round_start with its place and the plan (fed/secagg_task.h) for n. Then
 * the stages of native/secagg_server.h: advertise, shares (each client
 * gets its share_request), masked inputs (masked_request; clients train
 * meanwhile), unmasking (unmask_request, the survivors and the dropped
 * frozen before any share is asked); done, the sum is unmasked
 * (native/secagg_unmask.h) into the next global parameters, and the round
 * closes through the core (agg_core_round_closed). Every message is checked
 * by the server's round, then stored (a row of the batch, group_commit.h)
 * before it is acknowledged; a stage ends (every client due answered or
 * left, or its deadline, --deadline, passed) only once its messages are
 * stored, and its end is stored too (a marker row) before the next stage's
 * requests go out. The round is abandoned, never stalled and never
 * unmasked partially, as soon as the stage machine says it cannot succeed
 * (fed/secagg_stage.h: fewer clients than min_inputs, or a secret with
 * fewer than t holders left); a client that disconnects or refuses a
 * request (secagg_refusal) leaves the round for good. After a restart the
 * open round is rebuilt from its stored graph key and rows, replayed in
 * order through the same steps; its clients come back and are sent the
 * round and their current request again (a round without its key, or whose
 * rows do not replay, is abandoned). In cluster mode (cluster_sync.h) the
 * coordinator decides as a single process does, each decision at its
 * fence (the start, each stage's end once it holds every stored row, the
 * abandonment, the close), and every node, it too, holds the round only as
 * the store does: opened from the key and rows with the restart's replay,
 * the rows stored since applied on each catch-up (secure_catch_up); each
 * node stores its own clients' messages and leaves as rows of the round
 * (store.h: in commit order). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_sync.h"
#include "core.h"
#include "fed/secagg_message.h"
#include "native/clock.h"
#include "native/crypto.h"
#include "native/log.h"
#include "native/secagg_server.h"
#include "native/secagg_unmask.h"

typedef struct round_secure {
    sdfed_round current; /* the open round's clients, by place */
    int open;
    int broken;       /* the open round could not be rebuilt from the store: abandoned on the coordinator's next tick */
    int rebuild;      /* cluster: the round here may differ from the store's (a message it took was not stored, or a
                         decision was refused): rebuilt from the stored rows on the next catch-up */
    int64_t deadline; /* the current stage's */
    int64_t next_start; /* no round starts before (the pause after the last one) */
    sdfed_rng sampler;
    int64_t present;
    int64_t held; /* the open round's rows its server holds: stored, or in the batch */
    int64_t read; /* the open round's stored rows read (replay): the next seq to read */
    sdfed_secagg_plan plan;
    native_secagg_server server;
    int started;             /* server holds the open round */
    const char *not_started; /* why it does not (a constant sentence) */
} round_secure;

static round_secure *secure_of(const agg_federation *f) { return f->rounds; }

static sdfed_secagg_stage stage_of(const round_secure *s) { return s->server.stages.stage; }

/* ------------------------------------------------------------ the log */

/* What failed in ROUND: CONTEXT (or NULL) and the error's message. */
static void log_error(int64_t round, const char *context, const char *message) {
    native_log_line line;
    native_log_open(&line, "error");
    sdfed_jw_int(&line.w, "round", round);
    if (context)
        sdfed_jw_stringf(&line.w, "message", "%s: %s", context, message);
    else
        sdfed_jw_string(&line.w, "message", message);
    native_log_close(&line);
}

/* The stage the round is in and the clients due to complete it. */
static void log_stage(const agg_federation *f) {
    const round_secure *s = secure_of(f);
    native_log_line line;
    native_log_open(&line, "secagg_stage");
    sdfed_jw_int(&line.w, "round", f->round);
    sdfed_jw_string(&line.w, "stage", sdfed_secagg_stage_name(stage_of(s)));
    sdfed_jw_int(&line.w, "due", s->server.stages.due);
    native_log_close(&line);
}

/* The round started: its first stage and its plan's k, t and min_inputs. */
static void log_started(const agg_federation *f) {
    const round_secure *s = secure_of(f);
    native_log_line line;
    native_log_open(&line, "secagg_stage");
    sdfed_jw_int(&line.w, "round", f->round);
    sdfed_jw_string(&line.w, "stage", "advertise");
    sdfed_jw_int(&line.w, "due", s->server.stages.due);
    sdfed_jw_int(&line.w, "k", s->plan.params.k);
    sdfed_jw_int(&line.w, "t", s->plan.params.t);
    sdfed_jw_int(&line.w, "min_inputs", s->plan.params.min_inputs);
    native_log_close(&line);
}

/* ------------------------------------------------------------ messages */

/* round_start with the client's place, the plan, and the stage's time left */
static void send_round(agg_federation *f, int64_t client, int place, int64_t now_ms) {
    const round_secure *s = secure_of(f);
    const sdfed_secagg_params *p = &s->plan.params;
    agg_outbox_put(&f->out, (agg_federation_message){.type = FEDERATION_ROUND_START,
                                                     .client = client,
                                                     .round = f->round,
                                                     .deadline_ms = s->deadline > now_ms ? s->deadline - now_ms : 0,
                                                     .secure = 1,
                                                     .place = place,
                                                     .n = p->n,
                                                     .k = p->k,
                                                     .t = p->t,
                                                     .min_inputs = p->min_inputs});
}

/* The current stage's request to the client at `place`, when it is due one:
 * it completed the stage before, not this one, and is still in. */
static void send_request(agg_federation *f, int place) {
    const round_secure *s = secure_of(f);
    const sdfed_secagg_stage stage = stage_of(s);
    const sdfed_secagg_server *m = &s->server.stages;
    if (stage == SDFED_SECAGG_ADVERTISE || stage >= SDFED_SECAGG_DONE || sdfed_secagg_server_gone(m, place) ||
        !sdfed_secagg_server_completed(m, place, stage - 1) || sdfed_secagg_server_completed(m, place, stage))
        return;
    sdfed_buffer b = {0};
    sdfed_error err = {0};
    if (native_secagg_server_request(&s->server, place, &b, &err)) {
        native_log_line line;
        native_log_open(&line, "error");
        sdfed_jw_int(&line.w, "round", f->round);
        sdfed_jw_int(&line.w, "client", s->current.clients[place]);
        sdfed_jw_stringf(&line.w, "message", "secure request: %s", err.message);
        native_log_close(&line);
    } else {
        agg_outbox_put(&f->out, (agg_federation_message){.type = FEDERATION_SECAGG_REQUEST,
                                                         .client = s->current.clients[place],
                                                         .round = f->round,
                                                         .bytes = b.data,
                                                         .n_bytes = b.size});
        b.data = NULL;
    }
    sdfed_buffer_free(&b);
}

/* the round to every client it concerns (whom this process holds) */
static void announce(agg_federation *f, int64_t now_ms) {
    const round_secure *s = secure_of(f);
    for (int i = 0; i < f->clients.n; i++) {
        const int64_t id = f->clients.clients[i].id;
        const int place = sdfed_round_index(&s->current, id);
        if (place < 0) {
            agg_outbox_wait(&f->out, id, f->round, "not_sampled");
            continue;
        }
        send_round(f, id, place, now_ms);
        send_request(f, place);
    }
}

/* The current stage's requests to this process's clients due one. */
static void send_requests(agg_federation *f) {
    const round_secure *s = secure_of(f);
    log_stage(f);
    for (int p = 0; p < s->plan.params.n; p++)
        if (agg_roster_find(&f->clients, s->current.clients[p])) send_request(f, p);
}

/* ------------------------------------------------------------ a round's end */

static int count_completed(const round_secure *s, sdfed_secagg_stage stage) {
    int count = 0;
    for (int p = 0; p < s->plan.params.n; p++) count += sdfed_secagg_server_completed(&s->server.stages, p, stage);
    return count;
}

/* The parameters stay; the round's masked inputs are never unmasked. */
static int secure_abandon(agg_federation *f, int64_t now_ms) {
    round_secure *s = secure_of(f);
    const int inputs = s->started ? count_completed(s, SDFED_SECAGG_MASKED) : 0;
    int rc = agg_core_round_abandoned(f, inputs, now_ms);
    if (rc) return rc;
    native_log_line line;
    native_log_open(&line, "round_abandoned");
    sdfed_jw_int(&line.w, "round", f->round);
    sdfed_jw_int(&line.w, "masked_inputs", inputs);
    sdfed_jw_string(&line.w, "why", s->started ? s->server.stages.why : s->not_started);
    native_log_close(&line);
    agg_core_round_next(f, now_ms, inputs, 1);
    return SDFED_OK;
}

/* Only the process that decides abandons (a cluster's other nodes rebuild
 * the round from the store instead, which the coordinator judges). */
static void abandon(agg_federation *f, const char *why, int64_t now_ms) {
    round_secure *s = secure_of(f);
    if (!agg_core_deciding(f)) {
        s->rebuild = 1;
        return;
    }
    const int64_t round = f->round;
    if (s->started && stage_of(s) != SDFED_SECAGG_ABANDONED) {
        char sentence[200];
        snprintf(sentence, sizeof sentence, "at its %s stage: %s", sdfed_secagg_stage_name(stage_of(s)), why);
        sdfed_secagg_server_abandon(&s->server.stages, sentence);
    }
    agg_core_round_act(f, SDFED_ROUND_ABANDON, now_ms);
    if (f->cl && s->open && f->round == round) s->rebuild = 1; /* refused: the round is as the store holds it */
}

/* The unmasked sum into the next parameters, closed through the core; a
 * store failure leaves the round done, closed again on the next tick. */
static void close_round(agg_federation *f, int64_t now_ms) {
    round_secure *s = secure_of(f);
    float *next = malloc(sizeof *next * f->n);
    int64_t weight = 0;
    sdfed_error err = {0};
    int64_t t0 = native_clock_monotonic_ns();
    int rc = next ? native_secagg_server_finish(&s->server, f->global, next, &weight, &err)
                  : sdfed_fail(&err, SDFED_ERR_NOMEM, "out of memory");
    double unmask_ms = 1e-6 * (double)(native_clock_monotonic_ns() - t0);
    if (rc) {
        log_error(f->round, "unmasking failed", err.message);
        free(next);
        sdfed_secagg_server_abandon(&s->server.stages, "the unmasking failed");
        agg_core_round_act(f, SDFED_ROUND_ABANDON, now_ms);
        return;
    }
    const int inputs = count_completed(s, SDFED_SECAGG_MASKED);
    native_log_line line;
    native_log_open(&line, "secagg_unmasked");
    sdfed_jw_int(&line.w, "round", f->round);
    sdfed_jw_int(&line.w, "inputs", inputs);
    sdfed_jw_int(&line.w, "weight", weight);
    sdfed_jw_fixed(&line.w, "unmask_ms", unmask_ms, 3);
    native_log_close(&line);
    if (agg_store_begin_decision(f->st, agg_core_fence(f), f->round, STORE_CLOSE, &err) == SDFED_OK)
        agg_core_round_closed(f, next, inputs, unmask_ms, now_ms);
    free(next);
}

/* ------------------------------------------------------------ stages */

/* The stage ends: its end stored (a marker row, in a decision at the
 * coordinator's fence; only when the store holds no row this process does
 * not: else judged again once they are read), then the next stage's
 * requests sent; the unmasking's end is the round's close. */
static void end_stage(agg_federation *f, int64_t now_ms) {
    round_secure *s = secure_of(f);
    const sdfed_secagg_stage ended = stage_of(s);
    sdfed_error err = {0};
    if (ended != SDFED_SECAGG_UNMASK) {
        int stored = 0;
        int rc = agg_store_begin_decision(f->st, agg_core_fence(f), f->round, STORE_STAGE, &err);
        if (rc == SDFED_OK) rc = agg_store_end_secagg_stage(f->st, f->round, s->held, ended, &stored, &err);
        if (rc == SDFED_OK && stored) rc = agg_store_commit_decision(f->st, &err);
        if (rc || !stored) { /* tried again on the next tick; the store reports its fault */
            agg_store_abort_decision(f->st);
            if (rc) agg_cluster_refused(f, rc, &err, now_ms);
            return;
        }
        s->held++;
    }
    if (native_secagg_server_advance(&s->server, &err)) {
        abandon(f, err.message, now_ms);
        return;
    }
    if (stage_of(s) == SDFED_SECAGG_DONE) {
        close_round(f, now_ms);
        return;
    }
    s->deadline = now_ms + f->opt.deadline_ms;
    send_requests(f);
}

/* Acts on the stage machine's verdict, on stored messages only. */
static void judge(agg_federation *f, int64_t now_ms) {
    round_secure *s = secure_of(f);
    if (!s->open || !s->started || f->batch.n_secagg || s->rebuild || !agg_core_deciding(f)) return;
    if (stage_of(s) == SDFED_SECAGG_DONE) return; /* closed on the next tick (its store refused) */
    switch (native_secagg_server_check(&s->server, now_ms >= s->deadline)) {
    case SDFED_SECAGG_WAIT: return;
    case SDFED_SECAGG_NEXT: end_stage(f, now_ms); return;
    case SDFED_SECAGG_ABANDON:
        abandon(f,
                stage_of(s) == SDFED_SECAGG_UNMASK ? "a secret's holders that answered fell below t"
                                                   : "the clients left fell below the inputs a round accepts",
                now_ms);
        return;
    }
}

static void secure_secagg_written(agg_federation *f, int stored, int64_t now_ms) {
    round_secure *s = secure_of(f);
    if (!s->open) return;
    if (!stored && f->cl) { /* another node's, or the stage ended meanwhile: the store's rows are the round */
        s->rebuild = 1;
        return;
    }
    if (!stored) { /* the round and the store would disagree: never go on from what is not stored */
        abandon(f, "its messages could not be stored", now_ms);
        return;
    }
    judge(f, now_ms);
}

/* ------------------------------------------------------------ starting */

/* Starts the next round if nothing holds it back: its key stored, its
 * clients chosen, its plan made (a cluster's coordinator: every node, it
 * too, opens the round as the store holds it, secure_catch_up). */
static void start_round_if_due(agg_federation *f, int64_t now_ms) {
    round_secure *s = secure_of(f);
    if (s->open || f->done || !agg_core_deciding(f) || now_ms < s->next_start) return;
    if (!f->cl && (f->clients.n < f->opt.min_clients || f->clients.n == 0)) return;
    unsigned char key[32];
    sdfed_error err = {0};
    int rc = SDFED_OK;
    if (f->opt.graph_from_seed)
        sdfed_secagg_graph_key(f->task.seed, f->round, key);
    else
        rc = native_crypto_random(key, sizeof key, &err);
    if (rc == SDFED_OK) rc = agg_store_set_secagg_key(f->st, f->round, key, &err);
    if (rc) {
        log_error(f->round, "a secure round's key", err.message);
        return; /* tried again next tick */
    }
    sdfed_round next = {0};
    if (agg_core_round_choose(f, &s->sampler, &next, &s->present, now_ms) || f->cl) {
        memset(key, 0, sizeof key);
        sdfed_round_free(&next);
        if (f->cl) agg_cluster_catch_up(f, now_ms);
        return;
    }
    sdfed_round_free(&s->current);
    s->current = next;
    s->open = 1;
    s->held = s->read = 0;
    s->deadline = now_ms + f->opt.deadline_ms;
    rc = sdfed_secagg_plan_make(&f->task, next.n_clients, f->n, &s->plan, &err);
    if (rc == SDFED_OK) rc = native_secagg_server_start(&s->server, &s->plan, f->round, key, &err);
    memset(key, 0, sizeof key);
    s->started = rc == SDFED_OK;
    s->not_started = "its plan or its graph could not be made";
    if (rc) {
        char context[64];
        snprintf(context, sizeof context, "a secure round of %d clients", next.n_clients);
        log_error(f->round, context, err.message);
        agg_core_round_act(f, SDFED_ROUND_ABANDON, now_ms);
        return;
    }
    log_started(f);
    announce(f, now_ms);
}

static void maybe_start_round(agg_federation *f, int64_t now_ms) {
    start_round_if_due(f, now_ms);
    agg_core_note_waiting(f, now_ms);
}

static void secure_ended(agg_federation *f, int decided_here, int64_t now_ms) {
    round_secure *s = secure_of(f);
    s->open = s->broken = s->rebuild = 0;
    if (s->started) native_secagg_server_free(&s->server);
    s->started = 0;
    sdfed_round_free(&s->current);
    s->next_start = now_ms + f->opt.round_pause_ms;
    start_round_if_due(f, now_ms);
}

/* ------------------------------------------------------------ clients */

static void secure_joined(agg_federation *f, int64_t client, int64_t now_ms) {
    const round_secure *s = secure_of(f);
    if (!s->open) { /* a round it starts is announced to everyone (a cluster's coordinator starts them on ticks) */
        if (!f->cl) maybe_start_round(f, now_ms);
        if (!s->open) agg_outbox_wait(&f->out, client, f->round, "too_few_clients");
        return;
    }
    const int place = sdfed_round_index(&s->current, client);
    if (place < 0 || !s->started || sdfed_secagg_server_gone(&s->server.stages, place)) {
        agg_outbox_wait(&f->out, client, f->round, "round_in_progress");
        return;
    }
    /* after a restart, its round and its current request again */
    send_round(f, client, place, now_ms);
    send_request(f, place);
}

/* A leave row's message (secagg_messages): kind 0, which no client sends. */
static const unsigned char left_message[1] = {0};

/* Out of the round for good. In a cluster the leave is a row of the round
 * (stored at any stage: SDFED_SECAGG_DONE, which no stage's end names),
 * applied by every node, this one too, where it reads it in seq order, so
 * that the nodes agree on it (a node that dies leaves its clients in the
 * round: they may come back through another node); a single process
 * applies it at once. */
static void leave_round(agg_federation *f, int place, int64_t now_ms) {
    round_secure *s = secure_of(f);
    if (f->cl) {
        agg_store_new_secagg row = {.round = f->round,
                                    .client = s->current.clients[place],
                                    .stage = SDFED_SECAGG_DONE,
                                    .message = left_message,
                                    .len = sizeof left_message};
        if (agg_group_commit_add_secagg(&f->batch, &row, now_ms) == SDFED_OK) agg_core_write_batch(f, now_ms);
        return;
    }
    sdfed_error err = {0};
    if (native_secagg_server_leave(&s->server, place, &err)) log_error(f->round, NULL, err.message);
    judge(f, now_ms);
}

static void secure_left(agg_federation *f, int64_t client, int64_t now_ms) {
    const round_secure *s = secure_of(f);
    /* in a cluster only while this node held it (it may be another node's client now) */
    const int held_here = f->cl ? agg_presence_depart(f, client, -1) : 1;
    const int place = s->open && s->started ? sdfed_round_index(&s->current, client) : -1;
    if (held_here && place >= 0 && !sdfed_secagg_server_gone(&s->server.stages, place)) leave_round(f, place, now_ms);
}

/* ------------------------------------------------------------ reports */

static sdfed_code secure_admit_update(agg_federation *f, int64_t client, int64_t round, char *message, size_t cap) {
    return agg_core_refuse(message, cap, SDFED_CODE_SECAGG_WRONG_STAGE,
                           "this federation's rounds are secure: a client sends its masked input, never its update");
}

static sdfed_code secure_admit_metrics(agg_federation *f, int64_t client, int64_t round, char *message, size_t cap) {
    return agg_core_refuse(message, cap, SDFED_CODE_NOT_IN_ROUND,
                           "secure rounds keep no client's metrics: the server knows no client's update");
}

static int secure_could_end(const agg_federation *f, int waiting) { return 0; }

/* a message's round (its header's, big-endian) */
static int64_t round_of(const unsigned char *msg) {
    return (int64_t)((uint64_t)sdfed_secagg_be32(msg + 1) << 32 | sdfed_secagg_be32(msg + 5));
}

/* the protocol's code for a refusal of the server's round */
static sdfed_code wire_code(int rc, int kind) {
    if (rc >= SDFED_SECAGG_WRONG_STAGE && rc < SDFED_SECAGG_CODE_END)
        return sdfed_code_from_name(sdfed_secagg_code_name(rc));
    if (rc != SDFED_ERR_FORMAT) return SDFED_CODE_SERVER_ERROR;
    switch (kind) {
    case SDFED_SECAGG_MSG_ADVERTISE: return SDFED_CODE_SECAGG_BAD_KEYS;
    case SDFED_SECAGG_MSG_SHARES: return SDFED_CODE_SECAGG_BAD_SHARES;
    case SDFED_SECAGG_MSG_MASKED: return SDFED_CODE_SECAGG_BAD_MASKED;
    default: return SDFED_CODE_SECAGG_BAD_UNMASK;
    }
}

static sdfed_code secure_receive(agg_federation *f, int64_t client, const unsigned char *msg, size_t len,
                                 int64_t now_ms, char *message, size_t cap) {
    round_secure *s = secure_of(f);
    const int kind = sdfed_secagg_msg_kind_of(msg, len);
    if (kind != SDFED_SECAGG_MSG_ADVERTISE && kind != SDFED_SECAGG_MSG_SHARES && kind != SDFED_SECAGG_MSG_MASKED &&
        kind != SDFED_SECAGG_MSG_UNMASK)
        return agg_core_refuse(message, cap, SDFED_CODE_BAD_FRAME,
                               "clients send advertise, shares, masked and unmask messages, not %s",
                               kind ? sdfed_secagg_msg_name(kind) : "an empty one");
    const int64_t round = round_of(msg);
    if (f->cl && (!s->open || round != f->round || s->rebuild))
        agg_cluster_catch_up(f, now_ms); /* a round not seen yet */
    if (!s->open || round != f->round)
        return agg_core_refuse(message, cap, SDFED_CODE_WRONG_ROUND, "round %lld is not open; the %s round is %lld",
                               (long long)round, s->open ? "current" : "next", (long long)f->round);
    const int place = sdfed_round_index(&s->current, client);
    if (place < 0)
        return agg_core_refuse(message, cap, SDFED_CODE_SECAGG_NOT_IN_ROUND,
                               "client %lld was not chosen for round %lld", (long long)client, (long long)round);
    if (!s->started || s->broken || s->rebuild || stage_of(s) >= SDFED_SECAGG_DONE)
        return agg_core_refuse(message, cap, SDFED_CODE_SECAGG_WRONG_STAGE,
                               "round %lld is between stages; its %s stage is over", (long long)round,
                               s->started ? sdfed_secagg_stage_name(stage_of(s)) : "first");
    sdfed_error err = {0};
    int rc = native_secagg_server_receive(&s->server, place, msg, len, &err);
    if (rc) return agg_core_refuse(message, cap, wire_code(rc, kind), "%s", err.message);
    agg_store_new_secagg row = {.round = round, .client = client, .stage = stage_of(s), .message = msg, .len = len};
    if (agg_group_commit_add_secagg(&f->batch, &row, now_ms)) { /* kept by the round, yet not stored: abandoned */
        abandon(f, "out of memory storing a message", now_ms);
        return agg_core_refuse(message, cap, SDFED_CODE_SERVER_ERROR, "not stored: out of memory");
    }
    s->held++;
    if (native_secagg_server_check(&s->server, 0) != SDFED_SECAGG_WAIT || agg_core_batch_due(f, now_ms))
        agg_core_write_batch(f, now_ms);
    return SDFED_CODE_NONE;
}

static sdfed_code secure_declined(agg_federation *f, int64_t client, int64_t round, sdfed_code code, const char *why,
                                  int64_t now_ms, char *message, size_t cap) {
    const round_secure *s = secure_of(f);
    if (!s->open || round != f->round)
        return agg_core_refuse(message, cap, SDFED_CODE_WRONG_ROUND, "round %lld is not open; the %s round is %lld",
                               (long long)round, s->open ? "current" : "next", (long long)f->round);
    const int place = s->started ? sdfed_round_index(&s->current, client) : -1;
    if (place < 0)
        return agg_core_refuse(message, cap, SDFED_CODE_SECAGG_NOT_IN_ROUND,
                               "client %lld was not chosen for round %lld", (long long)client, (long long)round);
    native_log_line line;
    native_log_open(&line, "secagg_refused_by_client");
    sdfed_jw_int(&line.w, "round", round);
    sdfed_jw_int(&line.w, "client", client);
    sdfed_jw_string(&line.w, "code", sdfed_code_name(code));
    sdfed_jw_stringf(&line.w, "why", "%.*s", SDFED_ERROR_MESSAGE_MAX - 3, why); /* the client's words, bounded */
    native_log_close(&line);
    leave_round(f, place, now_ms);
    return SDFED_CODE_NONE;
}

/* --------------------------------------------------------------- time */

/* A cluster node's leases and catch-up (a round here that the decisions
 * left behind is rebuilt); then the coordinator's, or the single
 * process's: a round to abandon, close or start, the stage judged (its
 * deadline, or its end the store refused before). */
static void secure_tick(agg_federation *f, int64_t now_ms) {
    round_secure *s = secure_of(f);
    if (f->cl) {
        if (!agg_core_deciding(f) && s->open && s->started && stage_of(s) >= SDFED_SECAGG_DONE) s->rebuild = 1;
        agg_cluster_follow(f, now_ms);
        agg_presence_retry(f);
        if (!agg_core_deciding(f)) return;
    }
    if (agg_core_round_retry(f, now_ms)) return;
    if (s->open && s->broken) {
        abandon(f, "it could not be rebuilt from the store", now_ms);
        return;
    }
    if (s->open && s->started && stage_of(s) == SDFED_SECAGG_DONE) {
        close_round(f, now_ms);
        return;
    }
    if (!s->open) maybe_start_round(f, now_ms);
    judge(f, now_ms);
}

/* ------------------------------------------------------------- status */

static void secure_waiting(const agg_federation *f, int64_t now_ms, agg_federation_waiting *w) {
    const round_secure *s = secure_of(f);
    w->reason = agg_core_round_wait_reason(f, w, s->open, s->next_start, now_ms);
}

static void secure_status(const agg_federation *f, agg_federation_status *st) {
    const round_secure *s = secure_of(f);
    st->open = s->open;
    st->participants = s->open ? s->current.n_clients : 0;
    st->reported = s->started ? count_completed(s, SDFED_SECAGG_MASKED) : 0;
}

/* ------------------------------------------------------------ the store */

/* The stage a stored row belongs to: a marker's (a row of no client, one
 * byte), a message's by its kind; -1 for a row of no stage. */
static int row_stage(const agg_store_secagg *r) {
    if (r->client >= 0) return native_secagg_server_stage_of(sdfed_secagg_msg_kind_of(r->message, r->len));
    return r->len == 1 ? r->message[0] : -1;
}

/* The open round's stored rows from s->read on, applied in order: messages
 * through the round's server, markers as the stages' ends, leaves (a
 * cluster's) as the clients leaving; a row the server holds already (this
 * process stored it: a message it took, a stage it ended) is passed over. */
static int replay(agg_federation *f, sdfed_error *err) {
    round_secure *s = secure_of(f);
    agg_store_secagg *rows = NULL;
    int n = 0, rc = agg_store_secagg_rows(f->st, f->round, s->read, &rows, &n, err);
    for (int i = 0; i < n && rc == SDFED_OK; i++) {
        const agg_store_secagg *r = &rows[i];
        const int place = r->client < 0 ? -1 : sdfed_round_index(&s->current, r->client);
        const int stage = row_stage(r);
        const int at = (int)stage_of(s);
        s->read = r->seq + 1;
        /* a row this process stored is held already: a stage it ended, a message it took */
        const int held =
            stage >= 0 &&
            (r->client < 0 ? stage < at : place >= 0 && sdfed_secagg_server_completed(&s->server.stages, place, stage));
        if (held) continue;
        if (place >= 0 && r->len == sizeof left_message && r->message[0] == left_message[0])
            rc = native_secagg_server_leave(&s->server, place, err);
        else if (r->client < 0)
            rc = stage == at ? native_secagg_server_advance(&s->server, err)
                             : sdfed_fail(err, SDFED_ERR_FORMAT, "row %lld ends a stage the round is not at",
                                          (long long)r->seq);
        else if (place < 0)
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "row %lld is client %lld's, not one of the round's",
                            (long long)r->seq, (long long)r->client);
        else
            rc = native_secagg_server_receive(&s->server, place, r->message, r->len, err);
        if (rc) sdfed_fail_context(err, rc, "secure round %lld's row %lld", (long long)f->round, (long long)r->seq);
        s->held++;
    }
    agg_store_secagg_free(rows, n);
    return rc;
}

/* The open round `latest` (started, not closed) rebuilt from its stored key
 * and rows: after a restart, in a cluster as a node learns of it (or must
 * rebuild it); broken (abandoned by the coordinator) when it cannot be. */
static int resume(agg_federation *f, const agg_store_round *latest, int64_t now_ms, sdfed_error *err) {
    round_secure *s = secure_of(f);
    if (s->started) native_secagg_server_free(&s->server);
    s->started = s->broken = s->rebuild = 0;
    s->held = s->read = 0;
    sdfed_round_free(&s->current);
    memcpy(s->sampler.s, latest->rng, sizeof latest->rng);
    int rc = sdfed_round_resume(&s->current, latest->round, latest->participants, latest->n_participants,
                                latest->n_participants, err);
    if (rc) return rc;
    s->open = 1;
    s->deadline = now_ms + f->opt.deadline_ms;
    unsigned char key[32];
    int found = 0;
    sdfed_error why = {0};
    rc = agg_store_secagg_key(f->st, latest->round, key, &found, &why);
    if (rc == SDFED_OK && !found)
        rc = sdfed_fail(&why, SDFED_ERR_NOT_FOUND, "no graph key is stored for round %lld", (long long)latest->round);
    if (rc == SDFED_OK) rc = sdfed_secagg_plan_make(&f->task, latest->n_participants, f->n, &s->plan, &why);
    if (rc == SDFED_OK) rc = native_secagg_server_start(&s->server, &s->plan, latest->round, key, &why);
    memset(key, 0, sizeof key);
    s->started = rc == SDFED_OK;
    if (rc == SDFED_OK) rc = replay(f, &why);
    if (rc) {
        s->broken = 1;
        s->not_started = "it could not be rebuilt from the store";
        log_error(latest->round, "the secure round cannot resume; it is abandoned", why.message);
    } else {
        native_log_line line;
        native_log_open(&line, "secagg_resumed");
        sdfed_jw_int(&line.w, "round", f->round);
        sdfed_jw_int(&line.w, "rows", s->read);
        sdfed_jw_string(&line.w, "stage", sdfed_secagg_stage_name(stage_of(s)));
        native_log_close(&line);
    }
    return SDFED_OK;
}

/* Cluster mode (cluster_sync.h): rounds that ended; the open round opened
 * (and announced) as the store holds it, or rebuilt; its rows stored since,
 * applied: a stage's end sends its requests to this node's clients. */
static void secure_catch_up(agg_federation *f, int64_t now_ms) {
    round_secure *s = secure_of(f);
    agg_store_round latest;
    if (!agg_cluster_learn_ends(f, &s->sampler, &latest, now_ms)) return;
    sdfed_error err = {0};
    if (latest.round == f->round && latest.started && !latest.closed && !f->done) {
        const sdfed_secagg_stage before = s->started ? stage_of(s) : SDFED_SECAGG_ADVERTISE;
        if (!s->open || s->rebuild) {
            if (resume(f, &latest, now_ms, &err) == SDFED_OK && !s->broken) announce(f, now_ms);
        } else if (s->started && !s->broken && replay(f, &err)) {
            log_error(f->round, "a secure round's rows", err.message);
            s->rebuild = 1;
        } else if (s->started && !s->broken && stage_of(s) != before) {
            s->deadline = now_ms + f->opt.deadline_ms;
            send_requests(f);
        }
    }
    agg_store_round_free(&latest);
}

/* The open round rebuilt from its key and rows (abandoned on the first
 * tick when it cannot be), or the sampler as the last round left it. */
static int secure_open(agg_federation *f, const agg_store_round *latest, const agg_store_update *waiting, int n_waiting,
                       int64_t now_ms, sdfed_error *err) {
    round_secure *s = calloc(1, sizeof *s);
    if (!s) return sdfed_fail(err, SDFED_ERR_NOMEM, "federation: out of memory");
    f->rounds = s;
    sdfed_round_sampler(&s->sampler, f->task.seed);
    /* the task's rounds must be possible at all: its plan for a full round */
    const int full = f->task.clients_per_round > 0 ? f->task.clients_per_round : f->task.clients;
    int rc = sdfed_secagg_plan_make(&f->task, full, f->n, &s->plan, err);
    if (rc) return sdfed_fail_context(err, rc, "the task's \"secure_aggregation\"");
    if (latest->started && !latest->closed) return resume(f, latest, now_ms, err);
    if (latest->round > 0) {
        agg_store_round previous = {0};
        int found;
        if ((rc = agg_store_get_round(f->st, latest->round - 1, &previous, &found, err)) == SDFED_OK && found &&
            previous.started)
            memcpy(s->sampler.s, previous.rng, sizeof previous.rng);
        agg_store_round_free(&previous);
        if (rc) return rc;
    }
    return SDFED_OK;
}

static void secure_close(agg_federation *f) {
    round_secure *s = secure_of(f);
    if (s->started) native_secagg_server_free(&s->server);
    sdfed_round_free(&s->current);
    free(s);
    f->rounds = NULL;
}

const agg_round_policy agg_round_secure_policy = {
    .mode = "secure",
    .open = secure_open,
    .close = secure_close,
    .joined = secure_joined,
    .left = secure_left,
    .admit_update = secure_admit_update,
    .admit_metrics = secure_admit_metrics,
    .could_end = secure_could_end,
    .tick = secure_tick,
    .abandon = secure_abandon,
    .ended = secure_ended,
    .waiting = secure_waiting,
    .status = secure_status,
    .receive = secure_receive,
    .declined = secure_declined,
    .secagg_written = secure_secagg_written,
    .catch_up = secure_catch_up,
};
