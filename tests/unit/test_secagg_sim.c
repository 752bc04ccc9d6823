/* Secure rounds in one process as `sdfed sim` runs them
 * (tools/sim/secure_round.h over native/secagg_client.h,
 * native/secagg_server.h and native/secagg_unmask.h, the real
 * cryptography), 10 clients of 300 coordinates:
 *  - dropouts at every stage (none; 2 after their keys, 1 after sharing, 1
 *    after its input; 3 after sharing; 2 in the unmasking): the round
 *    closes, and its new global equals, bit for bit, the plain weighted mean
 *    of the same quantised inputs computed here apart (each trained
 *    client's input made again from its prompt, the seed's rounding and
 *    sdfed_secagg_plain_global), the counts of each stage as dropped;
 *  - 4 gone before their input (the round abandoned as soon as the inputs
 *    in and due fall below 7, the clients after it never training), or 9
 *    gone in the unmasking: abandoned, the global unchanged;
 *  - with the OS's randomness, two runs give the same global though every
 *    key and mask differs, and the messages have their documented sizes;
 *    with noise, the global is the plain mean of the noised inputs;
 *  - the task's own dropouts over 20 rounds: each round closed with the
 *    plain mean or abandoned because too few were left;
 *  - refusals, each with its code, the round going on: a key advertised
 *    twice, a message of another stage, a client not in the round, a
 *    server's message sent by a client, shares for a client that is not a
 *    neighbour or missing one, a tampered sealed pair (the client refuses
 *    the request), a share_request with another threshold, a masked input
 *    of the wrong length or from a client that did not share, an unmasking
 *    answer for a client that is not a holder or of the wrong kind, a
 *    request naming a neighbour both alive and dropped (the honest client
 *    refuses), a client's step out of order.
 * Deterministic but for the OS run: the clients' secrets come from a
 * fixed-key AES-256-CTR keystream. Native. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fed/secagg_client.h"
#include "fed/secagg_layout.h"
#include "fed/secagg_ring.h"
#include "fed/secagg_message.h"
#include "native/crypto.h"
#include "native/secagg_client.h"
#include "native/secagg_server.h"
#include "secure_round.h"

enum { N = 10, P = 300 };

typedef struct world {
    sdfed_task task;
    sdfed_secagg_plan plan;
    float g[P], x[N][P];
    int64_t samples[N];
    int trained[N];
    /* the dropouts a test asks for: the stage before which each client leaves (-1: none) */
    int leaves_at[N];
} world;

static int train(void *ctx, int64_t client, const float **x, int64_t *samples, sdfed_error *err) {
    (void)err;
    world *w = ctx;
    w->trained[client] = 1;
    *x = w->x[client];
    *samples = w->samples[client];
    return SDFED_OK;
}

static int drops(void *ctx, int64_t client, sdfed_secagg_stage stage) {
    const world *w = ctx;
    return w->leaves_at[client] == (int)stage;
}

static void make_world(world *w, const char *json) {
    memset(w, 0, sizeof *w);
    sdfed_error err = {0};
    CHECK(sdfed_task_parse(&w->task, json, strlen(json), &err) == SDFED_OK &&
              sdfed_task_validate(&w->task, &err) == SDFED_OK &&
              sdfed_secagg_plan_make(&w->task, N, P, &w->plan, &err) == SDFED_OK,
          "%s: %s", json, err.message);
    sdfed_rng rng;
    sdfed_rng_seed(&rng, 5);
    for (int j = 0; j < P; j++) w->g[j] = (float)(sdfed_rng_uniform(&rng) - 0.5);
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < P; j++) w->x[i][j] = w->g[j] + (float)((sdfed_rng_uniform(&rng) - 0.5) * 0.02 * (i + 1));
        w->samples[i] = 16 + 7 * i;
        w->leaves_at[i] = -1;
    }
}

/* the global the trained clients' inputs make, summed as plain integers (noise: none) */
static void expected_global(const world *w, int64_t round, float *next, int64_t *weight) {
    static uint64_t in[N][P + 1];
    const uint64_t *rows[N];
    int m = 0;
    sdfed_error err = {0};
    for (int i = 0; i < N; i++) {
        if (!w->trained[i]) continue;
        sdfed_rng state;
        sdfed_secagg_bytes rounding = sdfed_secagg_rounding(&state, w->task.seed, round, i);
        sdfed_secagg_input(&w->plan, w->x[i], w->g, w->samples[i], &rounding, NULL, in[i], &err);
        rows[m++] = in[i];
    }
    CHECK(sdfed_secagg_plain_global(&w->plan, rows, m, w->g, next, weight, &err) == SDFED_OK, "%s", err.message);
}

static const int64_t CLIENTS[N] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};

/* a round with the asked dropouts and the clients' secrets from a fixed keystream */
static int run_round(world *w, int64_t round, float *next, secure_round_stats *stats, sdfed_error *err) {
    unsigned char key[32] = {0x5E, (unsigned char)round};
    native_crypto_stream stream;
    native_crypto_stream_open(&stream, key, err);
    sdfed_secagg_bytes secret = native_crypto_stream_source(&stream);
    secure_round_options o = {.secret = &secret, .drops = drops, .drops_ctx = w};
    memset(w->trained, 0, sizeof w->trained);
    int rc = secure_round_run(&w->task, &w->plan, round, CLIENTS, w->g, train, w, &o, next, stats, err);
    native_crypto_stream_close(&stream);
    return rc;
}

static void pattern(const char *name, const int *at, int expect_done, int advertised, int shared, int masked,
                    int survivors) {
    static world w;
    make_world(&w, "{\"seed\": 1, \"secure_aggregation\": {\"clip\": 0.05, \"max_weight\": 100}}");
    for (int i = 0; i < N; i++) w.leaves_at[i] = at[i];
    static float next[P], want[P];
    secure_round_stats st;
    sdfed_error err = {0};
    int rc = run_round(&w, 4, next, &st, &err);
    CHECK(rc == SDFED_OK, "%s: %s", name, err.message);
    CHECK(st.advertised == advertised && st.shared == shared && st.masked == masked && st.survivors == survivors,
          "%s: %d advertised, %d shared, %d masked, %d answered (wanted %d, %d, %d, %d)", name, st.advertised,
          st.shared, st.masked, st.survivors, advertised, shared, masked, survivors);
    int trained = 0;
    for (int i = 0; i < N; i++) trained += w.trained[i];
    CHECK(trained == masked, "%s: the %d clients that sent an input trained, no other", name, masked);
    if (!expect_done) {
        CHECK(st.abandoned && !memcmp(next, w.g, sizeof next) && st.plain_sha256[0] == 0,
              "%s: abandoned (%s), the global unchanged", name, st.why);
        return;
    }
    int64_t weight = 0;
    expected_global(&w, 4, want, &weight);
    CHECK(!st.abandoned, "%s: closed (%s)", name, st.why);
    CHECK(!memcmp(next, want, sizeof next) && st.weight_sum == weight,
          "%s: the global is the plain weighted mean of the same quantised inputs, bit for bit (weight %lld)", name,
          (long long)weight);
    char sha[65];
    CHECK(native_sha256_hex(want, sizeof want, sha, &err) == SDFED_OK && !strcmp(sha, st.plain_sha256),
          "%s: the parity hash is the plain global's %s", name, err.message);
}

static void test_patterns(void) {
    const int A = SDFED_SECAGG_ADVERTISE, S = SDFED_SECAGG_SHARE, M = SDFED_SECAGG_MASKED, U = SDFED_SECAGG_UNMASK;
    const int none[N] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    pattern("no dropouts", none, 1, 10, 10, 10, 10);
    const int mixed[N] = {-1, S, -1, -1, M, -1, S, -1, U, -1};
    pattern("2 after their keys, 1 after sharing, 1 after its input", mixed, 1, 10, 8, 7, 6);
    const int three[N] = {-1, -1, M, -1, -1, M, -1, M, -1, -1};
    pattern("3 after sharing", three, 1, 10, 10, 7, 7);
    const int two[N] = {U, -1, -1, -1, -1, -1, -1, -1, -1, U};
    pattern("2 in the unmasking", two, 1, 10, 10, 10, 8);
    const int before[N] = {A, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    pattern("1 before its keys", before, 1, 9, 9, 9, 9);
    const int four[N] = {-1, S, -1, M, -1, -1, S, M, -1, -1};
    /* abandoned as soon as client 7 leaves: 4 inputs in, 2 due, 7 needed; 8 and 9 never train */
    pattern("4 gone before their input: too few", four, 0, 10, 8, 4, 0);
    const int nine[N] = {U, U, U, U, U, -1, U, U, U, U};
    pattern("9 gone in the unmasking: secrets short of t", nine, 0, 10, 10, 10, 1);
}

/* with the OS's randomness twice, and with noise */
static void test_randomness(void) {
    static world w;
    make_world(&w, "{\"seed\": 8, \"secure_aggregation\": {\"clip\": 0.05}}");
    static float a[P], b[P], want[P];
    secure_round_stats st;
    sdfed_error err = {0};
    CHECK(secure_round_run(&w.task, &w.plan, 0, CLIENTS, w.g, train, &w, NULL, a, &st, &err) == SDFED_OK &&
              secure_round_run(&w.task, &w.plan, 0, CLIENTS, w.g, train, &w, NULL, b, &st, &err) == SDFED_OK,
          "%s", err.message);
    CHECK(!memcmp(a, b, sizeof a), "the OS's keys and masks, twice: the same global");
    /* each client, k = 4, 301 values packed at 32 bits: up advertise 73, shares 13 + 68 k, masked 13 + 4 x 301,
     * unmask 13 + 29 (k + 1); down share_request 61 + 68 (k + 1), masked_request 13 + 68 k, unmask_request
     * 21 + 4 (k + 1) */
    CHECK(st.bytes_up == 10 * (73 + 285 + 1217 + 158) && st.bytes_down == 10 * (401 + 285 + 41),
          "the messages' sizes as documented: %lld up, %lld down", (long long)st.bytes_up, (long long)st.bytes_down);
    int64_t weight;
    expected_global(&w, 0, want, &weight);
    CHECK(!memcmp(a, want, sizeof a), "and it is the plain mean");

    make_world(&w, "{\"rounds\": 5, \"secure_aggregation\": {\"clip\": 0.05, \"max_weight\": 1, \"noise\": "
                   "{\"epsilon\": 50}}}");
    CHECK(w.plan.sigma2 > 0, "noise planned");
    CHECK(run_round(&w, 1, a, &st, &err) == SDFED_OK && !st.abandoned, "a round with noise: %s", err.message);
    expected_global(&w, 1, want, &weight);
    double moved = 0;
    for (int j = 0; j < P; j++) moved = fmax(moved, fabs((double)a[j] - want[j]));
    CHECK(moved > 0 && st.plain_sha256[0],
          "with noise the global is the noised inputs' plain mean (off by %.3g from "
          "the mean without noise)",
          moved);
}

/* 20 rounds of the task's own dropouts: closed with the plain mean, or abandoned with too few */
static void test_task_dropouts(void) {
    static world w;
    make_world(&w, "{\"seed\": 11, \"dropout\": 0.15, \"secure_aggregation\": {\"clip\": 0.05, \"drop\": "
                   "{\"advertise\": 0.05, \"share\": 0.05, \"unmask\": 0.1}}}");
    static float next[P], want[P];
    int closed = 0, abandoned = 0, right = 1;
    for (int64_t r = 0; r < 20; r++) {
        secure_round_stats st;
        sdfed_error err = {0};
        memset(w.trained, 0, sizeof w.trained);
        CHECK(secure_round_run(&w.task, &w.plan, r, CLIENTS, w.g, train, &w, NULL, next, &st, &err) == SDFED_OK,
              "round %lld: %s", (long long)r, err.message);
        int gone = 0;
        for (int i = 0; i < N; i++)
            gone += sdfed_secagg_drops_out(&w.task, r, i, SDFED_SECAGG_ADVERTISE) ||
                    sdfed_secagg_drops_out(&w.task, r, i, SDFED_SECAGG_SHARE) ||
                    sdfed_secagg_drops_out(&w.task, r, i, SDFED_SECAGG_MASKED);
        if (st.abandoned) {
            abandoned++;
            right &= N - gone < w.plan.params.min_inputs || st.survivors < N - gone;
            continue;
        }
        closed++;
        int64_t weight;
        expected_global(&w, r, want, &weight);
        right &= !memcmp(next, want, sizeof next) && st.masked == N - gone;
    }
    CHECK(right && closed > 0 && abandoned > 0, "%d rounds closed with the plain mean, %d abandoned with too few",
          closed, abandoned);
}

/* ---- refusals, driving the server and the clients by hand ---- */

typedef struct hand {
    world w;
    native_secagg_server server;
    native_secagg_client c[N];
    sdfed_buffer in, out;
    native_crypto_stream stream;
    sdfed_secagg_bytes secret;
} hand;

static int receive(hand *h, int client, sdfed_error *err) {
    return native_secagg_server_receive(&h->server, client, h->out.data, h->out.size, err);
}

static void advance(hand *h) {
    sdfed_error err = {0};
    CHECK(native_secagg_server_check(&h->server, 1) == SDFED_SECAGG_NEXT &&
              native_secagg_server_advance(&h->server, &err) == 0,
          "the stage ends: %s", err.message);
}

static void test_refusals(void) {
    static hand h;
    memset(&h, 0, sizeof h);
    make_world(&h.w, "{\"seed\": 2, \"secure_aggregation\": {\"clip\": 0.05}}");
    sdfed_error err = {0};
    unsigned char key[32] = {0xC3};
    native_crypto_stream_open(&h.stream, key, &err);
    h.secret = native_crypto_stream_source(&h.stream);
    CHECK(native_secagg_server_start(&h.server, &h.w.plan, 6, key, &err) == SDFED_OK, "%s", err.message);
    const int k = h.w.plan.params.k;

    /* advertise */
    for (int i = 0; i < N; i++) {
        native_secagg_client_advertise(&h.c[i], &h.w.plan, 6, &h.secret, &h.out, &err);
        CHECK(receive(&h, i, &err) == SDFED_OK, "client %d advertises: %s", i, err.message);
        if (i == 0) {
            CHECK(receive(&h, 1, &err) == SDFED_ERR_FORMAT && strstr(err.message, "already advertised"),
                  "client 0's keys again from client 1: %s", err.message);
            CHECK(receive(&h, 0, &err) == SDFED_ERR_FORMAT, "and from client 0 itself: %s", err.message);
            CHECK(receive(&h, N, &err) == SDFED_SECAGG_NOT_IN_ROUND, "a client not in the round: %s", err.message);
        }
    }
    uint64_t values[P + 1] = {0};
    sdfed_secagg_write_masked(&h.out, 6, 32, values, P + 1, &err);
    CHECK(receive(&h, 2, &err) == SDFED_SECAGG_WRONG_STAGE, "a masked input while keys are advertised: %s",
          err.message);
    const int two[2] = {0, 1};
    sdfed_secagg_write_unmask_request(&h.out, 6, 10, two, 2, NULL, 0, &err);
    CHECK(receive(&h, 2, &err) == SDFED_ERR_FORMAT && strstr(err.message, "not a client's"),
          "a server's message from a client: %s", err.message);
    sdfed_buffer_free(&h.out);
    CHECK(native_secagg_client_unmask(&h.c[3], NULL, 0, &h.out, &err) == SDFED_SECAGG_WRONG_STAGE,
          "a client asked to unmask before sharing: %s", err.message);
    advance(&h);

    /* share: client 0's shares, then wrong ones */
    int stranger = -1;
    for (int j = 1; j < N && stranger < 0; j++)
        if (!sdfed_secagg_graph_adjacent(&h.server.graph, 0, j)) stranger = j;
    CHECK(native_secagg_server_request(&h.server, 0, &h.in, &err) == SDFED_OK &&
              native_secagg_client_share(&h.c[0], h.in.data, h.in.size, &h.out, &err) == SDFED_OK,
          "client 0 shares: %s", err.message);
    sdfed_secagg_list list;
    sdfed_secagg_read_relayed(h.out.data, h.out.size, SDFED_SECAGG_MSG_SHARES, 6, k, &list, &err);
    static unsigned char sealed[N * SDFED_SECAGG_SEALED_BYTES];
    int to[N];
    for (int i = 0; i < list.count; i++) {
        to[i] = (int)sdfed_secagg_be32(list.entries + SDFED_SECAGG_RELAYED_BYTES * (size_t)i);
        memcpy(sealed + SDFED_SECAGG_SEALED_BYTES * (size_t)i,
               list.entries + SDFED_SECAGG_RELAYED_BYTES * (size_t)i + 4, SDFED_SECAGG_SEALED_BYTES);
    }
    CHECK(list.count == k, "a sealed pair for each of its %d neighbours", k);
    sdfed_buffer bad = {0};
    int saved = to[0];
    to[0] = stranger;
    sdfed_secagg_write_relayed(&bad, SDFED_SECAGG_MSG_SHARES, 6, list.count, to, sealed, &err);
    CHECK(native_secagg_server_receive(&h.server, 0, bad.data, bad.size, &err) == SDFED_SECAGG_NOT_NEIGHBOUR,
          "a pair for client %d, not a neighbour: %s", stranger, err.message);
    to[0] = saved;
    sdfed_secagg_write_relayed(&bad, SDFED_SECAGG_MSG_SHARES, 6, list.count - 1, to, sealed, &err);
    CHECK(native_secagg_server_receive(&h.server, 0, bad.data, bad.size, &err) == SDFED_ERR_FORMAT &&
              strstr(err.message, "its neighbours that advertised are"),
          "a neighbour left out: %s", err.message);
    CHECK(receive(&h, 0, &err) == SDFED_OK, "the shares as written: %s", err.message);
    CHECK(receive(&h, 0, &err) == SDFED_SECAGG_REPEATED, "twice: %s", err.message);
    /* a share_request with another threshold: the client refuses it */
    native_secagg_server_request(&h.server, 1, &h.in, &err);
    h.in.data[SDFED_SECAGG_MSG_HEADER + 15] ^= 1; /* t's last byte */
    CHECK(native_secagg_client_share(&h.c[1], h.in.data, h.in.size, &h.out, &err) == SDFED_ERR_FORMAT &&
              strstr(err.message, "the task's plan says"),
          "a request with another t: %s", err.message);
    /* the others share; client 1, whose request was refused, does not */
    for (int i = 2; i < N; i++) {
        native_secagg_server_request(&h.server, i, &h.in, &err);
        CHECK(native_secagg_client_share(&h.c[i], h.in.data, h.in.size, &h.out, &err) == SDFED_OK &&
                  receive(&h, i, &err) == 0,
              "client %d shares: %s", i, err.message);
    }
    native_secagg_server_leave(&h.server, 1, &err);
    advance(&h);

    /* the core's client steps (fed/secagg_client.h) out of their order, as a caller that does its own
       cryptography between them (the page's wasm) might take them: refused, the client abandoned */
    {
        sdfed_secagg_client *core = &h.c[0].core;
        const sdfed_secagg_client before = *core; /* shallow: restored after each refusal */
        int self = -1, other = -1;
        for (int slot = 0; slot < core->holders; slot++) {
            if (core->holder[slot] == 0)
                self = slot;
            else if (other < 0)
                other = slot;
        }
        static unsigned char stream[8 * (P + 1)], pair[SDFED_SECAGG_PAIR_BYTES];
        const size_t bytes = sdfed_secagg_stream_bytes(h.w.plan.ring.ring_bits, P + 1);
        CHECK(sdfed_secagg_client_write_masked(core, &h.out, &err) == SDFED_ERR_ARG &&
                  core->stage == SDFED_SECAGG_ABANDONED,
              "a masked input written before its input and masks: %s", err.message);
        *core = before;
        CHECK(sdfed_secagg_client_add_mask(core, self, stream, bytes, &err) == SDFED_ERR_ARG,
              "a mask added before the input: %s", err.message);
        *core = before;
        CHECK(sdfed_secagg_client_keep_pair(core, self, pair, &err) == SDFED_ERR_ARG,
              "a pair kept for its own slot: %s", err.message);
        *core = before;
        CHECK(sdfed_secagg_client_share(core, NULL, 0, &h.secret, NULL, &err) == SDFED_SECAGG_WRONG_STAGE &&
                  core->stage == SDFED_SECAGG_MASKED,
              "a share_request at the masked stage, the client left as it was: %s", err.message);
        sdfed_rng state;
        sdfed_secagg_bytes rounding = sdfed_secagg_rounding(&state, 2, 6, 0);
        CHECK(sdfed_secagg_client_input(core, h.w.x[0], h.w.g, 30, &rounding, NULL, &err) == SDFED_OK &&
                  sdfed_secagg_client_add_mask(core, self, stream, bytes, &err) == SDFED_OK,
              "its input, then its self mask: %s", err.message);
        CHECK(sdfed_secagg_client_add_mask(core, self, stream, bytes, &err) == SDFED_ERR_ARG, "the self mask twice: %s",
              err.message);
        core->stage = SDFED_SECAGG_MASKED;
        CHECK(sdfed_secagg_client_add_mask(core, other, stream, bytes, &err) == SDFED_ERR_ARG,
              "the mask of a neighbour whose pair it did not open: %s", err.message);
        memset(core->added, 0, (size_t)core->holders);
        *core = before;
    }

    /* masked: a tampered pair, a wrong length, a client that did not share */
    int victim = -1;
    for (int i = 2; i < N && victim < 0; i++)
        if (sdfed_secagg_graph_adjacent(&h.server.graph, 0, i)) victim = i;
    native_secagg_server_request(&h.server, victim, &h.in, &err);
    sdfed_buffer copy = {0};
    sdfed_sink sink = sdfed_buffer_sink(&copy);
    sink.write(sink.ctx, h.in.data, h.in.size);
    copy.data[SDFED_SECAGG_MSG_HEADER + 4 + 4 + 20] ^= 1;
    native_secagg_client client_copy = h.c[victim]; /* shallow: the refusal leaves it abandoned; restored below */
    CHECK(native_secagg_client_mask(&h.c[victim], copy.data, copy.size, h.w.x[victim], h.w.g, 30, &h.secret, NULL,
                                    &h.out, &err) == SDFED_ERR_FORMAT,
          "client %d refuses a tampered pair: %s", victim, err.message);
    h.c[victim] = client_copy;
    memset(h.c[victim].core.masked_with, 0, (size_t)h.c[victim].core.holders);
    sdfed_secagg_write_masked(&h.out, 6, 32, values, P, &err);
    CHECK(receive(&h, 3, &err) == SDFED_ERR_FORMAT && strstr(err.message, "300 values, the round's are 301"),
          "a masked input one value short: %s", err.message);
    sdfed_secagg_write_masked(&h.out, 6, 32, values, P + 1, &err);
    CHECK(receive(&h, 1, &err) == SDFED_SECAGG_NOT_IN_ROUND, "from the client that left: %s", err.message);
    for (int i = 0; i < N; i++) {
        if (i == 1) continue;
        sdfed_rng state;
        sdfed_secagg_bytes rounding = sdfed_secagg_rounding(&state, 2, 6, i);
        native_secagg_server_request(&h.server, i, &h.in, &err);
        CHECK(native_secagg_client_mask(&h.c[i], h.in.data, h.in.size, h.w.x[i], h.w.g, 30, &rounding, NULL, &h.out,
                                        &err) == SDFED_OK &&
                  receive(&h, i, &err) == SDFED_OK,
              "client %d masks: %s", i, err.message);
    }
    advance(&h);

    /* unmask: the honest client's refusal, then answers that are wrong */
    int c = victim;
    native_secagg_server_request(&h.server, c, &h.in, &err);
    sdfed_secagg_unmask_request q;
    sdfed_secagg_read_unmask_request(h.in.data, h.in.size, 6, k + 1, &q, &err);
    int alive[N + 1], dropped[N];
    for (int i = 0; i < q.alive.count; i++) alive[i] = (int)sdfed_secagg_be32(q.alive.entries + 4 * (size_t)i);
    for (int i = 0; i < q.dropped.count; i++) dropped[i] = (int)sdfed_secagg_be32(q.dropped.entries + 4 * (size_t)i);
    dropped[q.dropped.count] = 0; /* 0 is alive too */
    sdfed_secagg_write_unmask_request(&bad, 6, q.inputs, alive, q.alive.count, dropped, q.dropped.count + 1, &err);
    native_secagg_client saved_client = h.c[c];
    CHECK(native_secagg_client_unmask(&h.c[c], bad.data, bad.size, &h.out, &err) == SDFED_SECAGG_BOTH_SETS,
          "client %d refuses a request naming 0 both alive and dropped: %s", c, err.message);
    h.c[c] = saved_client;
    CHECK(native_secagg_client_unmask(&h.c[c], h.in.data, h.in.size, &h.out, &err) == SDFED_OK, "%s", err.message);
    h.out.data[SDFED_SECAGG_MSG_HEADER + 4 + 4] ^= 3; /* the first answer's kind: seed <-> mask key */
    CHECK(receive(&h, c, &err) == SDFED_SECAGG_INCONSISTENT, "a share of the wrong kind: %s", err.message);
    h.out.data[SDFED_SECAGG_MSG_HEADER + 4 + 4] ^= 3;
    int outsider = -1;
    for (int j = 0; j < N && outsider < 0; j++)
        if (sdfed_secagg_graph_slot(&h.server.graph, j, c) < 0) outsider = j;
    unsigned char owner[4];
    memcpy(owner, h.out.data + SDFED_SECAGG_MSG_HEADER + 4, 4);
    h.out.data[SDFED_SECAGG_MSG_HEADER + 4 + 3] = (unsigned char)outsider;
    CHECK(receive(&h, c, &err) == SDFED_SECAGG_NOT_NEIGHBOUR, "a share for client %d, not a holder's: %s", outsider,
          err.message);
    memcpy(h.out.data + SDFED_SECAGG_MSG_HEADER + 4, owner, 4);
    CHECK(receive(&h, c, &err) == SDFED_OK, "the answer as written: %s", err.message);
    sdfed_buffer_free(&copy);
    sdfed_buffer_free(&bad);
    for (int i = 0; i < N; i++) native_secagg_client_free(&h.c[i]);
    native_secagg_server_free(&h.server);
    sdfed_buffer_free(&h.in);
    sdfed_buffer_free(&h.out);
    native_crypto_stream_close(&h.stream);
}

int main(void) {
    if (check_case("patterns")) test_patterns();
    if (check_case("randomness")) test_randomness();
    if (check_case("task_dropouts")) test_task_dropouts();
    if (check_case("refusals")) test_refusals();
    return check_report("test_secagg_sim");
}
