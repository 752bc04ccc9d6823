/* One secure round in one process (see secure_round.h). */
#include "secure_round.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/io.h"
#include "native/clock.h"
#include "native/crypto.h"
#include "native/secagg_client.h"
#include "native/secagg_server.h"
#include "native/secagg_unmask.h"

typedef struct round_state {
    const sdfed_task *task;
    const sdfed_secagg_plan *plan;
    int64_t round;
    const int64_t *clients;
    native_secagg_client *c;
    native_secagg_server server;
    sdfed_buffer request, message;
    native_crypto_stream *own; /* (n) each client's own randomness, unless the options give sources */
    const secure_round_options *options;
} round_state;

/* place p's secrets and noise: the options' sources, else its own keystream under a key from getrandom */
static int randomness(round_state *s, int p, sdfed_secagg_bytes *secret, sdfed_secagg_bytes *noise, sdfed_error *err) {
    const secure_round_options *o = s->options;
    if (!s->own[p].cipher && (!o || !o->secret || !o->noise)) {
        unsigned char key[32];
        int rc = native_crypto_random(key, sizeof key, err);
        if (rc == SDFED_OK) rc = native_crypto_stream_open(&s->own[p], key, err);
        memset(key, 0, sizeof key);
        if (rc) return rc;
    }
    *secret = o && o->secret ? *o->secret : native_crypto_stream_source(&s->own[p]);
    *noise = o && o->noise ? *o->noise : native_crypto_stream_source(&s->own[p]);
    return SDFED_OK;
}

/* whether the client at place p is due in the current stage (completed the one before, still in) */
static int due(const round_state *s, int p, sdfed_secagg_stage stage) {
    if (sdfed_secagg_server_gone(&s->server.stages, p)) return 0;
    return stage == SDFED_SECAGG_ADVERTISE || sdfed_secagg_server_completed(&s->server.stages, p, stage - 1);
}

/* the stage's end: the next stage, or the round abandoned (returns 0 then) */
static int end_stage(round_state *s, secure_round_stats *stats, sdfed_error *err, int *rc) {
    sdfed_secagg_verdict v = native_secagg_server_check(&s->server, 1);
    if (v == SDFED_SECAGG_NEXT) {
        *rc = native_secagg_server_advance(&s->server, err);
        return *rc == SDFED_OK;
    }
    const sdfed_secagg_stage at = s->server.stages.stage;
    snprintf(stats->why, sizeof stats->why, "at its %s stage: %s", sdfed_secagg_stage_name(at),
             at == SDFED_SECAGG_UNMASK ? "a secret's holders that answered fell below t"
                                       : "the clients left fell below the inputs a round accepts");
    sdfed_secagg_server_abandon(&s->server.stages, stats->why);
    stats->abandoned = 1;
    return 0;
}

/* the client at place p leaves before sending its message of `stage` (the task's dropouts) */
static int leaves(round_state *s, int p, sdfed_secagg_stage stage, sdfed_error *err, int *rc) {
    const secure_round_options *o = s->options;
    int drops = o && o->drops ? o->drops(o->drops_ctx, s->clients[p], stage)
                              : sdfed_secagg_drops_out(s->task, s->round, s->clients[p], stage);
    if (!drops) return 0;
    *rc = native_secagg_server_leave(&s->server, p, err);
    return 1;
}

/* the server's request to place p, the client's step on it, the server receiving the answer */
static int step(round_state *s, int p, sdfed_secagg_stage stage, const float *x, const float *g, int64_t samples,
                secure_round_stats *stats, sdfed_error *err) {
    native_secagg_client *c = &s->c[p];
    sdfed_secagg_bytes secret, noise;
    int rc = randomness(s, p, &secret, &noise, err);
    int64_t t0 = native_clock_monotonic_ns(), c0 = native_clock_thread_cpu_ns();
    if (rc == SDFED_OK && stage != SDFED_SECAGG_ADVERTISE)
        rc = native_secagg_server_request(&s->server, p, &s->request, err);
    int64_t t1 = native_clock_monotonic_ns(), c1 = native_clock_thread_cpu_ns();
    if (rc == SDFED_OK && stage == SDFED_SECAGG_ADVERTISE)
        rc = native_secagg_client_advertise(c, s->plan, s->round, &secret, &s->message, err);
    else if (rc == SDFED_OK && stage == SDFED_SECAGG_SHARE)
        rc = native_secagg_client_share(c, s->request.data, s->request.size, &s->message, err);
    else if (rc == SDFED_OK && stage == SDFED_SECAGG_MASKED) {
        sdfed_rng rounding_state;
        sdfed_secagg_bytes rounding = sdfed_secagg_rounding(&rounding_state, s->task->seed, s->round, s->clients[p]);
        rc = native_secagg_client_mask(c, s->request.data, s->request.size, x, g, samples, &rounding,
                                       s->plan->sigma2 ? &noise : NULL, &s->message, err);
    } else if (rc == SDFED_OK)
        rc = native_secagg_client_unmask(c, s->request.data, s->request.size, &s->message, err);
    int64_t t2 = native_clock_monotonic_ns(), c2 = native_clock_thread_cpu_ns();
    if (rc == SDFED_OK) rc = native_secagg_server_receive(&s->server, p, s->message.data, s->message.size, err);
    const int64_t down = stage != SDFED_SECAGG_ADVERTISE ? (int64_t)s->request.size : 0;
    stats->server_seconds += native_clock_seconds(t1 - t0 + native_clock_monotonic_ns() - t2);
    stats->bytes_down += down;
    stats->bytes_up += (int64_t)s->message.size;
    stats->stage[stage].server_cpu_seconds += native_clock_seconds(c1 - c0 + native_clock_thread_cpu_ns() - c2);
    stats->stage[stage].client_cpu_seconds += native_clock_seconds(c2 - c1);
    stats->stage[stage].bytes_down += down;
    stats->stage[stage].bytes_up += (int64_t)s->message.size;
    return rc ? sdfed_fail_context(err, rc, "secure round %lld, %s stage, client %lld", (long long)s->round,
                                   sdfed_secagg_stage_name(stage), (long long)s->clients[p])
              : SDFED_OK;
}

/* place p's part in the stage: at the masked input, it trains first (it leaves when it has nothing to train on) */
static int take_part(round_state *s, int p, sdfed_secagg_stage stage, const float *g, secure_round_train_fn train,
                     void *ctx, int64_t *training, secure_round_stats *stats, sdfed_error *err) {
    const float *x = NULL;
    int64_t samples = 0;
    if (stage == SDFED_SECAGG_MASKED) {
        int64_t t1 = native_clock_monotonic_ns();
        int rc = train(ctx, s->clients[p], &x, &samples, err);
        *training += native_clock_monotonic_ns() - t1;
        if (rc) return rc;
        if (!x) return native_secagg_server_leave(&s->server, p, err);
    }
    return step(s, p, stage, x, g, samples, stats, err);
}

static int count_completed(const round_state *s, sdfed_secagg_stage stage) {
    int count = 0;
    for (int p = 0; p < s->plan->params.n; p++) count += sdfed_secagg_server_completed(&s->server.stages, p, stage);
    return count;
}

/* the plain global of the inputs in the sum, its sha256 into stats; whether next equals it */
static int parity(round_state *s, const float *g, const float *next, secure_round_stats *stats, sdfed_error *err) {
    const int n = s->plan->params.n;
    const uint64_t **inputs = malloc(sizeof *inputs * (size_t)n);
    float *plain = malloc(sizeof *plain * s->plan->dims);
    int rc = inputs && plain ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "sim: out of memory"), m = 0;
    for (int p = 0; p < n && rc == SDFED_OK; p++)
        if (sdfed_secagg_server_completed(&s->server.stages, p, SDFED_SECAGG_MASKED)) inputs[m++] = s->c[p].core.input;
    int64_t weight = 0;
    if (rc == SDFED_OK) rc = sdfed_secagg_plain_global(s->plan, inputs, m, g, plain, &weight, err);
    if (rc == SDFED_OK) rc = native_sha256_hex(plain, sizeof *plain * s->plan->dims, stats->plain_sha256, err);
    if (rc == SDFED_OK) {
        if (weight != stats->weight_sum || memcmp(plain, next, sizeof *plain * s->plan->dims))
            rc = sdfed_fail(err, SDFED_ERR_NUMERIC,
                            "secure round %lld: the unmasked global differs from the plain mean of the same %d inputs",
                            (long long)s->round, m);
    }
    free(inputs);
    free(plain);
    return rc;
}

int secure_round_run(const sdfed_task *task, const sdfed_secagg_plan *plan, int64_t round, const int64_t *clients,
                     const float *g, secure_round_train_fn train, void *ctx, const secure_round_options *options,
                     float *next, secure_round_stats *stats, sdfed_error *err) {
    const int64_t t0 = native_clock_monotonic_ns();
    int64_t training = 0;
    const int n = plan->params.n;
    memset(stats, 0, sizeof *stats);
    memcpy(next, g, sizeof *next * plan->dims);
    round_state s = {.task = task, .plan = plan, .round = round, .clients = clients, .options = options};
    s.c = calloc((size_t)n, sizeof *s.c);
    s.own = calloc((size_t)n, sizeof *s.own);
    unsigned char key[32];
    sdfed_secagg_graph_key(task->seed, round, key);
    int rc = s.c && s.own ? native_secagg_server_start(&s.server, plan, round, key, err)
                          : sdfed_fail(err, SDFED_ERR_NOMEM, "sim: out of memory");
    int going = rc == SDFED_OK;
    for (sdfed_secagg_stage stage = SDFED_SECAGG_ADVERTISE; going && stage <= SDFED_SECAGG_UNMASK; stage++) {
        for (int p = 0; p < n && rc == SDFED_OK; p++) {
            if (!due(&s, p, stage)) continue;
            if (!leaves(&s, p, stage, err, &rc)) rc = take_part(&s, p, stage, g, train, ctx, &training, stats, err);
            /* abandoned as soon as it cannot succeed, as the aggregator decides it */
            if (rc == SDFED_OK && native_secagg_server_check(&s.server, 0) == SDFED_SECAGG_ABANDON) break;
        }
        going = rc == SDFED_OK && end_stage(&s, stats, err, &rc);
    }
    stats->advertised = count_completed(&s, SDFED_SECAGG_ADVERTISE);
    stats->shared = count_completed(&s, SDFED_SECAGG_SHARE);
    stats->masked = count_completed(&s, SDFED_SECAGG_MASKED);
    stats->survivors = count_completed(&s, SDFED_SECAGG_UNMASK);
    int64_t t1 = native_clock_monotonic_ns(), cpu = native_clock_process_cpu_ns();
    if (rc == SDFED_OK && !stats->abandoned)
        rc = native_secagg_server_finish(&s.server, g, next, &stats->weight_sum, err);
    stats->unmask_seconds = native_clock_seconds(native_clock_monotonic_ns() - t1);
    stats->unmask_cpu_seconds = native_clock_seconds(native_clock_process_cpu_ns() - cpu);
    stats->server_seconds += stats->unmask_seconds;
    if (rc == SDFED_OK && !stats->abandoned) rc = parity(&s, g, next, stats, err);
    for (int p = 0; s.c && p < n; p++) native_secagg_client_free(&s.c[p]);
    for (int p = 0; s.own && p < n; p++)
        if (s.own[p].cipher) native_crypto_stream_close(&s.own[p]);
    free(s.c);
    free(s.own);
    native_secagg_server_free(&s.server);
    sdfed_buffer_free(&s.request);
    sdfed_buffer_free(&s.message);
    stats->protocol_seconds = native_clock_seconds(native_clock_monotonic_ns() - t0 - training);
    return rc;
}
