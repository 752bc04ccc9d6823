/* The federation's entry points (federation.h) in its mode-independent
 * core: each one's own part (the state opened from the store, the roster,
 * validation, the batch, the status) first, then its round policy's
 * (round_policy.h). */
#include "federation.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_sync.h"
#include "core.h"
#include "native/crypto.h"
#include "method/methods.h"
#include "native/log.h"

/* one counter per protocol error code, here and in the status */
static_assert(sizeof((struct agg_federation *)0)->refused / sizeof(int64_t) == SDFED_CODE_COUNT, "a counter per code");
static_assert(sizeof((agg_federation_status *)0)->refused == sizeof((struct agg_federation *)0)->refused,
              "status copies all");

void agg_federation_count_refusal(agg_federation *f, sdfed_code code) {
    if (code >= 0 && code < SDFED_CODE_COUNT) f->refused[code]++;
}

sdfed_code agg_core_refuse(char *message, size_t cap, sdfed_code code, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(message, cap, format, args);
    va_end(args);
    return code;
}

const agg_store_fence *agg_core_fence(const agg_federation *f) { return f->cl ? agg_cluster_fence(f->cl) : NULL; }

int agg_core_deciding(const agg_federation *f) { return !f->cl || agg_cluster_fence(f->cl); }

void agg_core_read_pace(agg_federation *f) { agg_store_pace(f->st, &f->pace, NULL); }

const agg_federation_message *agg_federation_outbox(const agg_federation *f, int *n) {
    *n = f->out.n;
    return f->out.messages;
}

void agg_federation_outbox_clear(agg_federation *f) { agg_outbox_clear(&f->out); }

/* ------------------------------------------------------------ opening */

/* Round 0's parameters from the task, stored (SDFED_ERR_ARG: a round 0 is
 * stored already, another node's in a cluster). */
static int store_first_round(agg_federation *f, const sdfed_clip_model *m, const sdfed_classes *cls, sdfed_error *err) {
    sdfed_method_params server;
    int rc = sdfed_task_server_params(&f->task, m, f->k, cls, &server, &f->arena, err);
    if (rc) return rc;
    char sha[65];
    rc = native_sha256_hex(server.global, sizeof *server.global * f->n, sha, err);
    if (rc == SDFED_OK) rc = agg_store_add_first_round(f->st, server.global, f->n, sha, err);
    sdfed_method_params_free(&server);
    return rc;
}

/* The state the store holds (a new federation's: round 0 from the task's
 * initial shared parameters), then the policy's. */
static int load_state(agg_federation *f, const sdfed_clip_model *m, const sdfed_classes *cls, int64_t now_ms,
                      sdfed_error *err) {
    sdfed_method_config cfg = sdfed_task_method_config(&f->task);
    int width, rows, local_rows;
    sdfed_method_shapes(&cfg, m, cls->n_classes, &width, &rows, &local_rows);
    if (rows == 0)
        return sdfed_fail(err, SDFED_ERR_ARG, "federation: method %s shares nothing to aggregate",
                          sdfed_method_name(f->task.method));
    f->shape[0] = (uint32_t)rows;
    f->shape[1] = (uint32_t)width;
    f->n = (size_t)rows * width;
    agg_store_round r;
    int found, rc = agg_store_latest_round(f->st, &r, &found, err);
    if (rc) return rc;
    if (!found) {
        rc = store_first_round(f, m, cls, err);
        if (rc && !(rc == SDFED_ERR_ARG && f->cl)) return rc; /* a cluster's other node stored it first: it holds */
        if ((rc = agg_store_latest_round(f->st, &r, &found, err))) return rc;
        if (!found) return sdfed_fail(err, SDFED_ERR_IO, "federation: round 0 is neither stored nor storable");
    }
    if (r.n_values != f->n) {
        agg_store_round_free(&r);
        return sdfed_fail(err, SDFED_ERR_FORMAT, "federation: the stored parameters do not fit the task's method");
    }
    f->round = r.round;
    f->global = r.global;
    r.global = NULL;
    memcpy(f->sha, r.sha256, sizeof f->sha);
    f->done = f->round >= f->task.rounds;
    agg_store_update *u = NULL;
    int n = 0;
    rc = agg_store_pace(f->st, &f->pace, err);
    if (rc == SDFED_OK) rc = agg_store_pending_updates(f->st, &u, &n, err);
    if (rc == SDFED_OK) rc = f->policy->open(f, &r, u, n, now_ms, err);
    agg_store_updates_free(u, n);
    agg_store_round_free(&r);
    return rc;
}

/* Where the federation stands once opened (resumed: a state with rounds behind it or one open). */
static void log_opened(const agg_federation *f) {
    agg_federation_status s;
    agg_federation_get_status(f, &s);
    native_log_line line;
    native_log_open(&line, "federation");
    sdfed_jw_int(&line.w, "round", f->round);
    sdfed_jw_int(&line.w, "rounds", f->task.rounds);
    sdfed_jw_string(&line.w, "mode", f->policy->mode);
    sdfed_jw_bool(&line.w, "resumed", f->round > 0 || s.open);
    sdfed_jw_int(&line.w, "open", s.open);
    sdfed_jw_int(&line.w, "reported", s.reported);
    sdfed_jw_string(&line.w, "global_sha256", f->sha);
    native_log_close(&line);
}

/* The round policy a task and the options ask for: secure, asynchronous or synchronous. */
static const agg_round_policy *policy_of(const sdfed_task *task, const agg_federation_options *opt) {
    if (task->secagg.on) return &agg_round_secure_policy;
    return opt->async ? &agg_round_async_policy : &agg_round_sync_policy;
}

int agg_federation_open(agg_federation **out, const sdfed_task *task, const sdfed_clip_model *m, const sdfed_kernels *k,
                        const sdfed_classes *cls, agg_store *st, const agg_federation_options *opt, int64_t now_ms,
                        sdfed_error *err) {
    *out = NULL;
    if (task->secagg.on && opt->async)
        return sdfed_fail(err, SDFED_ERR_UNSUPPORTED,
                          "federation: the task's \"secure_aggregation\" runs synchronous rounds, not asynchronous "
                          "ones (--mode async)");
    agg_federation *f = calloc(1, sizeof *f);
    if (!f) return sdfed_fail(err, SDFED_ERR_NOMEM, "federation: out of memory");
    *f = (struct agg_federation){
        .task = *task, .opt = *opt, .st = st, .k = k, .cl = opt->cluster, .policy = policy_of(task, opt)};
    sdfed_arena_init(&f->arena);
    agg_group_commit_init(&f->batch, opt->batch_rows, opt->batch_wait_ms, f->cl ? agg_cluster_node(f->cl) : 0);
    int rc = load_state(f, m, cls, now_ms, err);
    if (rc) {
        agg_federation_close(f);
        return rc;
    }
    log_opened(f);
    agg_core_note_waiting(f, now_ms);
    *out = f;
    return SDFED_OK;
}

void agg_federation_close(agg_federation *f) {
    if (!f) return;
    if (f->rounds) f->policy->close(f);
    free(f->global);
    agg_outbox_free(&f->out);
    agg_roster_free(&f->clients);
    agg_pace_free(&f->pace);
    agg_presence_free(&f->leaving);
    agg_group_commit_free(&f->batch);
    sdfed_arena_free(&f->arena);
    free(f);
}

/* ------------------------------------------------------------ clients */

/* A client joined: "again" when its connection was replaced (it never
 * left), else "back" when it came back into a place kept for it. */
static void log_joined(const agg_federation *f, int64_t client, int shard, int again, int back) {
    native_log_line line;
    native_log_open(&line, "join");
    sdfed_jw_int(&line.w, "client", client);
    sdfed_jw_int(&line.w, "shard", shard);
    sdfed_jw_int(&line.w, "connected", f->clients.n);
    if (again)
        sdfed_jw_bool(&line.w, "again", 1);
    else if (back)
        sdfed_jw_bool(&line.w, "back", 1);
    native_log_close(&line);
}

/* A client left (lost: its connection was), its place kept or not. */
static void log_left(const agg_federation *f, int64_t client, int lost, int place_kept) {
    native_log_line line;
    native_log_open(&line, "leave");
    sdfed_jw_int(&line.w, "client", client);
    sdfed_jw_int(&line.w, "connected", f->clients.n);
    sdfed_jw_bool(&line.w, "lost", lost);
    if (place_kept) sdfed_jw_bool(&line.w, "place_kept", 1);
    native_log_close(&line);
}

/* A client identified joins: welcomed (its welcome carries the handle of
 * the hello it answers, NULL for a client the caller knew) and, when the
 * time comes, given rounds. */
static void join(agg_federation *f, int64_t client, int shard, void *hello, int64_t now_ms) {
    int back = f->policy->comes_back ? f->policy->comes_back(f, client) : 0;
    int again; /* its connection replaced: it never left */
    if (!agg_roster_join(&f->clients, client, shard, &again)) {
        native_log_line line;
        native_log_open(&line, "error");
        sdfed_jw_string(&line.w, "message", "out of memory adding a client");
        native_log_close(&line);
        return;
    }
    if (f->cl) { /* its presence row waits for the batch (a tick stores it if the batch could not) */
        if (agg_store_notified(f->st)) agg_cluster_catch_up(f, now_ms);
        agg_presence_arrive(f, client, shard, now_ms);
    }
    agg_outbox_put(&f->out, (agg_federation_message){
                                .type = FEDERATION_WELCOME, .client = client, .round = f->round, .hello = hello});
    log_joined(f, client, shard, again, back);
    if (f->done)
        agg_outbox_done(&f->out, client, f->task.rounds);
    else
        f->policy->joined(f, client, now_ms);
    agg_core_note_waiting(f, now_ms);
}

void agg_federation_join(agg_federation *f, int64_t client, int shard, int64_t now_ms) {
    join(f, client, shard, NULL, now_ms);
}

/* Registers the waiting hellos in one transaction, then joins each whose
 * connection is still there; when it did not commit, each is refused
 * (server_error, the store's reason) and may say hello again. */
static void register_waiting(agg_federation *f, int64_t now_ms) {
    agg_group_commit *g = &f->batch;
    int n = g->n_hellos;
    if (n == 0) return;
    int64_t *ids = malloc(sizeof *ids * (size_t)n);
    sdfed_error err = {0};
    int rc =
        ids ? agg_group_commit_write_hellos(g, f->st, ids, &err) : sdfed_fail(&err, SDFED_ERR_NOMEM, "out of memory");
    for (int i = 0, k = 0; i < n; i++) {
        const agg_group_commit_hello *h = &g->hellos[i];
        if (!h->hello) continue;
        if (rc == SDFED_OK) {
            join(f, ids[k++], h->shard, h->hello, now_ms);
            continue;
        }
        agg_federation_message m = {.type = FEDERATION_REFUSAL,
                                    .client = FEDERATION_NOBODY,
                                    .round = f->round,
                                    .code = SDFED_CODE_SERVER_ERROR,
                                    .hello = h->hello};
        snprintf(m.text, sizeof m.text, "%s", err.message);
        agg_outbox_put(&f->out, m);
    }
    agg_group_commit_clear_hellos(g);
    free(ids);
}

int agg_federation_register(agg_federation *f, void *hello, const char *token, int shard, const char *kind,
                            int64_t now_ms) {
    int rc = agg_group_commit_add_hello(&f->batch, hello, token, shard, kind, now_ms);
    if (rc == SDFED_OK && agg_group_commit_hellos_due_in_ms(&f->batch, now_ms) == 0) register_waiting(f, now_ms);
    return rc;
}

void agg_federation_register_cancel(agg_federation *f, const void *hello) {
    agg_group_commit_cancel_hello(&f->batch, hello);
}

void agg_federation_register_now(agg_federation *f, int64_t now_ms) { register_waiting(f, now_ms); }

void agg_federation_leave(agg_federation *f, int64_t client, agg_federation_departure how, int64_t now_ms) {
    if (!agg_roster_find(&f->clients, client)) return;
    agg_core_write_batch(f, now_ms); /* what came before the leave counts first */
    agg_roster_remove(&f->clients, client);
    int kept = f->policy->keeps_place ? f->policy->keeps_place(f, client, how, now_ms) : 0;
    log_left(f, client, how == FEDERATION_LOST, kept);
    if (!kept && f->policy->left) f->policy->left(f, client, now_ms);
    agg_core_note_waiting(f, now_ms);
}

/* ------------------------------------------------------------ reports */

sdfed_code agg_federation_update(agg_federation *f, int64_t client, int64_t round, int64_t samples, int n_dims,
                                 const uint32_t *shape, const float *values, int64_t now_ms, char *message,
                                 size_t cap) {
    if (f->cl) agg_cluster_catch_up_to(f, round, now_ms); /* a cluster's node may not have heard of the round yet */
    /* the update itself first, then where it belongs */
    if (n_dims != 2 || shape[0] != f->shape[0] || shape[1] != f->shape[1])
        return agg_core_refuse(message, cap, SDFED_CODE_BAD_SHAPE, "the update must be %u x %u", f->shape[0],
                               f->shape[1]);
    if (samples < 1 || samples > f->opt.max_samples)
        return agg_core_refuse(message, cap, SDFED_CODE_BAD_SAMPLES, "sample count %lld is outside 1..%lld",
                               (long long)samples, (long long)f->opt.max_samples);
    if (f->opt.max_update_norm > 0) {
        double norm = 0.0;
        for (size_t j = 0; j < f->n; j++)
            norm += ((double)values[j] - f->global[j]) * ((double)values[j] - f->global[j]);
        if (sqrt(norm) > f->opt.max_update_norm)
            return agg_core_refuse(message, cap, SDFED_CODE_NORM_TOO_LARGE,
                                   "the update changes the parameters by %.3g, above %.3g", sqrt(norm),
                                   f->opt.max_update_norm);
    }
    if (f->done) { /* no round will open: the answer is that the federation is done */
        agg_outbox_done(&f->out, client, f->task.rounds);
        return SDFED_CODE_NONE;
    }
    sdfed_code code = f->policy->admit_update(f, client, round, message, cap);
    if (code != SDFED_CODE_NONE) return code;
    if (agg_group_commit_holds(&f->batch, round, client))
        return agg_core_refuse(message, cap, SDFED_CODE_DUPLICATE_UPDATE, "round %lld already has this client's update",
                               (long long)round);
    sdfed_pace pace = agg_pace_state(&f->pace, client); /* a row the store holds (pace.h): the update ends it */
    agg_store_new_update u = {.round = round,
                              .client = client,
                              .samples = samples,
                              .values = values,
                              .n_values = f->n,
                              .paced = pace.misses > 0 || pace.back_at > 0};
    if (agg_group_commit_add(&f->batch, &u, now_ms))
        return agg_core_refuse(message, cap, SDFED_CODE_SERVER_ERROR, "not stored: out of memory");
    if (agg_core_batch_due(f, now_ms)) agg_core_write_batch(f, now_ms);
    return SDFED_CODE_NONE;
}

sdfed_code agg_federation_metrics(agg_federation *f, int64_t client, int64_t round, double accuracy, double loss,
                                  int64_t test_samples, const agg_device_figures *device, int64_t now_ms, char *message,
                                  size_t cap) {
    if (test_samples > f->opt.max_samples)
        return agg_core_refuse(message, cap, SDFED_CODE_BAD_MESSAGE, "'test_samples' must be an integer in 0..%lld",
                               (long long)f->opt.max_samples);
    if (device && device->n_step_ms != f->task.local_prompt.n_lengths)
        return agg_core_refuse(message, cap, SDFED_CODE_BAD_MESSAGE,
                               "'step_ms' must hold a step time for each of the task's %d local prompt lengths, not %d",
                               f->task.local_prompt.n_lengths, device->n_step_ms);
    if (round >= f->round && f->done) {
        agg_outbox_done(&f->out, client, f->task.rounds);
        return SDFED_CODE_NONE;
    }
    if (round > f->round)
        return agg_core_refuse(message, cap, SDFED_CODE_WRONG_ROUND, "metrics for round %lld, ahead of %lld",
                               (long long)round, (long long)f->round);
    sdfed_code code =
        f->policy->admit_metrics ? f->policy->admit_metrics(f, client, round, message, cap) : SDFED_CODE_NONE;
    if (code != SDFED_CODE_NONE) return code;
    agg_store_new_metrics m = {
        .round = round, .client = client, .accuracy = accuracy, .loss = loss, .test_samples = test_samples};
    if (device) m.device = *device;
    if (agg_group_commit_add_metrics(&f->batch, &m, now_ms))
        return agg_core_refuse(message, cap, SDFED_CODE_SERVER_ERROR, "metrics not stored: out of memory");
    if (agg_core_batch_due(f, now_ms)) agg_core_write_batch(f, now_ms);
    return SDFED_CODE_NONE;
}

/* ------------------------------------------------------- secure rounds */

sdfed_code agg_federation_secagg(agg_federation *f, int64_t client, const unsigned char *msg, size_t len,
                                 int64_t now_ms, char *message, size_t cap) {
    if (!f->policy->receive)
        return agg_core_refuse(message, cap, SDFED_CODE_SECAGG_OFF, "this federation's rounds are not secure (%s)",
                               f->policy->mode);
    return f->policy->receive(f, client, msg, len, now_ms, message, cap);
}

sdfed_code agg_federation_secagg_refusal(agg_federation *f, int64_t client, int64_t round, sdfed_code code,
                                         const char *why, int64_t now_ms, char *message, size_t cap) {
    if (!f->policy->declined)
        return agg_core_refuse(message, cap, SDFED_CODE_SECAGG_OFF, "this federation's rounds are not secure (%s)",
                               f->policy->mode);
    return f->policy->declined(f, client, round, code, why, now_ms, message, cap);
}

/* --------------------------------------------------------------- time */

void agg_federation_tick(agg_federation *f, int64_t now_ms) {
    agg_core_write_batch(f, now_ms); /* decisions are taken on stored updates */
    f->policy->tick(f, now_ms);
    agg_core_note_waiting(f, now_ms);
}

void agg_federation_flush(agg_federation *f, int64_t now_ms) {
    if (agg_group_commit_hellos_due_in_ms(&f->batch, now_ms) == 0) register_waiting(f, now_ms);
    if (agg_group_commit_due_in_ms(&f->batch, now_ms) >= 0 && agg_core_batch_due(f, now_ms))
        agg_core_write_batch(f, now_ms);
}

int64_t agg_federation_flush_in_ms(const agg_federation *f, int64_t now_ms) {
    int64_t rows = agg_group_commit_due_in_ms(&f->batch, now_ms);
    int64_t hellos = agg_group_commit_hellos_due_in_ms(&f->batch, now_ms);
    if (rows < 0) return hellos;
    return hellos < 0 || rows < hellos ? rows : hellos;
}

/* ------------------------------------------------------------- status */

agg_federation_global agg_federation_get_global(const agg_federation *f) {
    return (agg_federation_global){
        .values = f->global, .n = f->n, .shape = {f->shape[0], f->shape[1]}, .sha256 = f->sha, .round = f->round};
}

int agg_federation_get_devices(const agg_federation *f, agg_devices_summary *s) {
    agg_device_board board = {0};
    int rc = agg_store_devices(f->st, &board, NULL); /* the store reports its fault */
    if (rc == SDFED_OK) rc = agg_devices_summarise(&board, &f->task.local_prompt, s);
    agg_devices_free(&board);
    return rc;
}

int agg_federation_shard_connected(const agg_federation *f, int shard) {
    return agg_roster_holds_shard(&f->clients, shard);
}

void agg_federation_get_status(const agg_federation *f, agg_federation_status *s) {
    *s = (agg_federation_status){.round = f->round,
                                 .rounds = f->task.rounds,
                                 .connected = f->clients.n,
                                 .waiting = f->waiting,
                                 .done = f->done,
                                 .async = f->opt.async,
                                 .secure = f->task.secagg.on,
                                 .updates_accepted = f->updates_accepted,
                                 .rounds_closed = f->rounds_closed,
                                 .rounds_abandoned = f->rounds_abandoned,
                                 .metrics_stored = f->metrics_stored,
                                 .last_aggregation_ms = f->last_aggregation_ms,
                                 .total_aggregation_ms = f->total_aggregation_ms};
    memcpy(s->global_sha256, f->sha, sizeof f->sha);
    memcpy(s->refused, f->refused, sizeof s->refused);
    if (f->policy->status) f->policy->status(f, s);
}
