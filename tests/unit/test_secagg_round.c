/* Secure aggregation end to end in one process: 10 clients and a server
 * through every stage with the real cryptography (native/secagg_keys.h on
 * OpenSSL: X25519, HKDF-SHA256, AES-256-GCM for the relayed shares, AES-CTR
 * masks) and the core's arithmetic and stages (shared/fed/secagg_*.h).
 * For each dropout pattern: the unmasked sum equals, exactly in the ring,
 * the sum of the survivors' quantised inputs; the weighted mean decoded
 * from it equals the plain weighted mean of the same quantised inputs bit
 * for bit; every reconstructed seed is the client's own; no masked input
 * correlates with its client's quantised input (|r| < 0.05 over 4,096
 * coordinates). More dropouts than the round allows: abandoned, nothing
 * unmasked. A tampered relayed share fails authentication; a request naming
 * a neighbour both alive and dropped is refused. Deterministic: every
 * random byte (the graph's shuffle, Shamir's coefficients, the rounding) comes from an AES-256-CTR keystream of a fixed
 * key per run, in place of getrandom. Native. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fed/secagg_ring.h"
#include "fed/secagg_shamir.h"
#include "fed/secagg_stage.h"
#include "native/crypto.h"
#include "native/secagg_keys.h"

enum { N = 10, P = 4096, MAX_HOLDERS = N };
static const int64_t ROUND = 12;

typedef struct client {
    unsigned char mask_seed[SDFED_SECAGG_SEED_BYTES], seed[SDFED_SECAGG_SEED_BYTES]; /* the two secrets shared */
    unsigned char mask_sk[32], mask_pk[32], share_sk[32], share_pk[32];
    float x[P];
    int64_t weight;
    uint64_t quantised[P + 1], masked[P + 1];
    /* what it received in the share stage, by its own holder slot */
    unsigned char got[MAX_HOLDERS][SDFED_SECAGG_PAIR_BYTES];
    unsigned char masked_with[MAX_HOLDERS];
    int holder[MAX_HOLDERS];
} client;

typedef struct world {
    client c[N];
    native_crypto_stream randomness; /* the run's random bytes: a fixed-key keystream */
    sdfed_secagg_bytes random;
    sdfed_arena arena;
    sdfed_secagg_params params;
    sdfed_secagg_graph graph;
    sdfed_secagg_server server;
    sdfed_secagg_ring ring;
    unsigned char session[32];
    /* the relay: sealed[from][to] */
    unsigned char sealed[N][N][SDFED_SECAGG_SEALED_BYTES];
    unsigned char has_sealed[N][N];
    /* shares sent to the server in the unmasking, per secret owner */
    sdfed_shamir_share shares[N][MAX_HOLDERS];
    int n_shares[N];
} world;

/* client i's keys, seed and input from a fixed keystream: reproducible, real X25519 */
static void make_clients(world *w, uint64_t seed) {
    unsigned char key[32] = {0};
    memcpy(key, &seed, sizeof seed);
    native_crypto_stream stream;
    sdfed_error err = {0};
    native_crypto_stream_open(&stream, key, &err);
    sdfed_secagg_bytes src = native_crypto_stream_source(&stream);
    for (int i = 0; i < N; i++) {
        client *c = &w->c[i];
        sdfed_secagg_draw(&src, c->mask_seed, sizeof c->mask_seed, &err);
        sdfed_secagg_draw(&src, c->share_sk, 32, &err);
        sdfed_secagg_draw(&src, c->seed, sizeof c->seed, &err);
        CHECK(native_secagg_mask_private(c->mask_seed, ROUND, c->mask_sk, &err) == SDFED_OK &&
                  native_x25519_public(c->mask_sk, c->mask_pk, &err) == SDFED_OK &&
                  native_x25519_public(c->share_sk, c->share_pk, &err) == SDFED_OK,
              "%s", err.message);
        for (int j = 0; j < P; j++) {
            uint64_t u;
            sdfed_secagg_draw_u64(&src, &u, &err);
            c->x[j] = (float)(((double)(u >> 11) * 0x1.0p-53 - 0.5) * 0.2); /* [-0.1, 0.1) */
        }
        c->weight = 20 + 37 * i % 200;
    }
    native_crypto_stream_close(&stream);
}

static void start(world *w, uint64_t seed) {
    sdfed_error err = {0};
    sdfed_arena_init(&w->arena);
    unsigned char key[32] = {0xA5};
    memcpy(key + 1, &seed, sizeof seed);
    CHECK(native_crypto_stream_open(&w->randomness, key, &err) == SDFED_OK, "%s", err.message);
    w->random = native_crypto_stream_source(&w->randomness);
    CHECK(sdfed_secagg_params_choose(N, 0.33, 0.05, 0, &w->params, &err) == SDFED_OK, "%s", err.message);
    /* the server's graph, shuffled by a keystream (the aggregator's key will come from getrandom) */
    CHECK(sdfed_secagg_graph_make(&w->graph, &w->params, &w->random, &w->arena, &err) == SDFED_OK, "%s", err.message);
    CHECK(sdfed_secagg_server_start(&w->server, ROUND, &w->params, &w->graph, &w->arena, &err) == SDFED_OK, "%s",
          err.message);
    w->ring = (sdfed_secagg_ring){.clip = 0.1, .quant_bits = 16, .max_weight = 1000, .ring_bits = 32, .clients = N};
    CHECK(sdfed_secagg_ring_check(&w->ring, &err) == SDFED_OK, "%s", err.message);
    for (int i = 0; i < N; i++)
        for (int s = 0; s <= w->params.k; s++) w->c[i].holder[s] = sdfed_secagg_graph_holder(&w->graph, i, s);
}

static int advance_if_next(world *w) {
    sdfed_error err = {0};
    if (sdfed_secagg_server_check(&w->server, 1) != SDFED_SECAGG_NEXT) return 0;
    return sdfed_secagg_server_advance(&w->server, &err) == SDFED_OK;
}

static int in(const int *set, int n, int i) {
    for (int k = 0; k < n; k++)
        if (set[k] == i) return 1;
    return 0;
}

static int stage_advertise(world *w, const int *gone, int n_gone) {
    sdfed_error err = {0};
    unsigned char mask[N][32], share[N][32], advertised[N] = {0}, scratch[64 * N];
    for (int i = 0; i < N; i++) {
        memcpy(mask[i], w->c[i].mask_pk, 32);
        memcpy(share[i], w->c[i].share_pk, 32);
        if (in(gone, n_gone, i)) {
            sdfed_secagg_server_leave(&w->server, i, &err);
            continue;
        }
        advertised[i] = sdfed_secagg_server_receive(&w->server, i, SDFED_SECAGG_ADVERTISE, &err) == SDFED_OK;
    }
    CHECK(native_secagg_session_id(ROUND, N, mask[0], share[0], advertised, scratch, w->session, &err) == SDFED_OK,
          "%s", err.message);
    return advance_if_next(w);
}

/* each client still in shares b and its mask seed among its holders and seals a pair to each advertised one */
static int stage_share(world *w, const int *gone, int n_gone) {
    sdfed_error err = {0};
    const int k = w->params.k, t = w->params.t, holders = k + 1;
    const sdfed_secagg_bytes *os = &w->random;
    for (int i = 0; i < N; i++) {
        if (!sdfed_secagg_server_completed(&w->server, i, SDFED_SECAGG_ADVERTISE) ||
            sdfed_secagg_server_gone(&w->server, i))
            continue;
        if (in(gone, n_gone, i)) {
            sdfed_secagg_server_leave(&w->server, i, &err);
            continue;
        }
        client *c = &w->c[i];
        sdfed_shamir_share b[MAX_HOLDERS], s[MAX_HOLDERS];
        uint64_t scratch[MAX_HOLDERS];
        CHECK(sdfed_shamir_split(c->seed, t, holders, os, scratch, b, &err) == SDFED_OK &&
                  sdfed_shamir_split(c->mask_seed, t, holders, os, scratch, s, &err) == SDFED_OK,
              "%s", err.message);
        for (int slot = 0; slot < holders; slot++) {
            int h = c->holder[slot];
            unsigned char pair[SDFED_SECAGG_PAIR_BYTES], key[32];
            sdfed_secagg_pair_write(&b[slot], &s[slot], pair);
            if (h == i) { /* its own share stays with it */
                memcpy(c->got[slot], pair, sizeof pair);
                continue;
            }
            if (!sdfed_secagg_server_completed(&w->server, h, SDFED_SECAGG_ADVERTISE)) continue;
            CHECK(native_secagg_share_key(c->share_sk, w->c[h].share_pk, w->session, ROUND, (uint32_t)i, (uint32_t)h,
                                          key, &err) == SDFED_OK &&
                      native_secagg_seal(key, w->session, ROUND, (uint32_t)i, (uint32_t)h, pair, w->sealed[i][h],
                                         &err) == SDFED_OK,
                  "%s", err.message);
            w->has_sealed[i][h] = 1;
        }
        sdfed_secagg_server_receive(&w->server, i, SDFED_SECAGG_SHARE, &err);
    }
    return advance_if_next(w);
}

static void add_mask(world *w, uint64_t *v, const unsigned char key[32], int sign) {
    sdfed_error err = {0};
    size_t bytes = sdfed_secagg_stream_bytes(w->ring.ring_bits, P + 1);
    unsigned char *stream = malloc(bytes);
    CHECK(native_secagg_mask_stream(key, stream, bytes, &err) == SDFED_OK &&
              sdfed_secagg_ring_add_stream(w->ring.ring_bits, v, P + 1, stream, bytes, sign, &err) == SDFED_OK,
          "%s", err.message);
    free(stream);
}

/* each client still in opens the pairs relayed from its neighbours that shared, then masks its input */
static int stage_masked(world *w, const int *gone, int n_gone) {
    sdfed_error err = {0};
    const int holders = w->params.k + 1;
    for (int i = 0; i < N; i++) {
        if (!sdfed_secagg_server_completed(&w->server, i, SDFED_SECAGG_SHARE) ||
            sdfed_secagg_server_gone(&w->server, i))
            continue;
        client *c = &w->c[i];
        for (int slot = 0; slot < holders; slot++) {
            int j = c->holder[slot];
            c->masked_with[slot] = 0;
            if (j == i || !sdfed_secagg_server_completed(&w->server, j, SDFED_SECAGG_SHARE)) continue;
            unsigned char key[32];
            CHECK(w->has_sealed[j][i] &&
                      native_secagg_share_key(c->share_sk, w->c[j].share_pk, w->session, ROUND, (uint32_t)j,
                                              (uint32_t)i, key, &err) == SDFED_OK &&
                      native_secagg_open(key, w->session, ROUND, (uint32_t)j, (uint32_t)i, w->sealed[j][i],
                                         c->got[slot], &err) == SDFED_OK,
                  "client %d opens %d's pair: %s", i, j, err.message);
            c->masked_with[slot] = 1;
        }
        if (in(gone, n_gone, i)) {
            sdfed_secagg_server_leave(&w->server, i, &err);
            continue;
        }
        CHECK(sdfed_secagg_quantise(&w->ring, c->x, P, c->weight, &w->random, c->quantised, &err) == SDFED_OK, "%s",
              err.message);
        memcpy(c->masked, c->quantised, sizeof c->masked);
        unsigned char key[32];
        native_secagg_self_key(c->seed, w->session, ROUND, (uint32_t)i, key, &err);
        add_mask(w, c->masked, key, 1);
        for (int slot = 0; slot < holders; slot++) {
            if (!c->masked_with[slot]) continue;
            int j = c->holder[slot];
            CHECK(native_secagg_pair_key(c->mask_sk, w->c[j].mask_pk, w->session, ROUND, (uint32_t)i, (uint32_t)j, key,
                                         &err) == SDFED_OK,
                  "%s", err.message);
            add_mask(w, c->masked, key, sdfed_secagg_pair_sign(i, j));
        }
        sdfed_secagg_server_receive(&w->server, i, SDFED_SECAGG_MASKED, &err);
    }
    return advance_if_next(w);
}

/* each survivor checks its request and returns the shares it asks for */
static int stage_unmask(world *w, const int *gone, int n_gone) {
    sdfed_error err = {0};
    const int holders = w->params.k + 1;
    memset(w->n_shares, 0, sizeof w->n_shares);
    for (int i = 0; i < N; i++) {
        if (!sdfed_secagg_server_completed(&w->server, i, SDFED_SECAGG_MASKED)) continue;
        if (in(gone, n_gone, i)) {
            sdfed_secagg_server_leave(&w->server, i, &err);
            continue;
        }
        client *c = &w->c[i];
        int alive[MAX_HOLDERS], dropped[MAX_HOLDERS], na, nd, inputs = 0;
        for (int j = 0; j < N; j++) inputs += sdfed_secagg_server_completed(&w->server, j, SDFED_SECAGG_MASKED);
        CHECK(sdfed_secagg_server_request(&w->server, i, alive, &na, dropped, &nd, &err) == SDFED_OK, "%s",
              err.message);
        sdfed_secagg_client_view view = {.self = i,
                                         .holders = holders,
                                         .holder = c->holder,
                                         .masked_with = c->masked_with,
                                         .min_inputs = w->params.min_inputs};
        unsigned char reply[MAX_HOLDERS];
        CHECK(sdfed_secagg_client_check_request(&view, alive, na, dropped, nd, inputs, reply, &err) == SDFED_OK,
              "client %d accepts its request: %s", i, err.message);
        for (int slot = 0; slot < holders; slot++) {
            if (!reply[slot]) continue;
            int j = c->holder[slot];
            sdfed_shamir_share b, s;
            /* the server places the share at i's slot among j's holders */
            uint32_t x = (uint32_t)sdfed_secagg_graph_slot(&w->graph, j, i) + 1;
            CHECK(sdfed_secagg_pair_read(c->got[slot], x, &b, &s, &err) == SDFED_OK, "%s", err.message);
            w->shares[j][w->n_shares[j]++] = reply[slot] == SDFED_SECAGG_SELF_SEED ? b : s;
        }
        sdfed_secagg_server_receive(&w->server, i, SDFED_SECAGG_UNMASK, &err);
    }
    return advance_if_next(w);
}

static double correlation(const uint64_t *a, const uint64_t *b, int bits) {
    double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
    for (int j = 0; j < P; j++) {
        double x = (double)sdfed_secagg_ring_signed(bits, a[j]), y = (double)sdfed_secagg_ring_signed(bits, b[j]);
        sa += x;
        sb += y;
        saa += x * x;
        sbb += y * y;
        sab += x * y;
    }
    double cov = sab / P - sa / P * sb / P, va = saa / P - sa / P * sa / P, vb = sbb / P - sb / P * sb / P;
    return cov / sqrt(va * vb);
}

/* the whole round with these clients leaving after advertising, after sharing, after the masked input */
static void run(const char *name, uint64_t seed, const int *after_keys, int n1, const int *after_shares, int n2,
                const int *after_input, int n3, int expect_done) {
    static world w;
    memset(&w, 0, sizeof w);
    sdfed_error err = {0};
    make_clients(&w, seed);
    start(&w, seed);
    int ok = stage_advertise(&w, NULL, 0) && stage_share(&w, after_keys, n1) && stage_masked(&w, after_shares, n2);
    if (!expect_done) {
        CHECK(!ok && sdfed_secagg_server_check(&w.server, 1) == SDFED_SECAGG_ABANDON,
              "%s: the round is abandoned before any unmasking", name);
        sdfed_secagg_server_abandon(&w.server, "too few masked inputs");
        int term_count;
        sdfed_secagg_term terms[64];
        CHECK(sdfed_secagg_server_terms(&w.server, terms, 64, &term_count, &err) == SDFED_SECAGG_WRONG_STAGE &&
                  sdfed_secagg_server_needs(&w.server, 0) == SDFED_SECAGG_NONE,
              "%s: nothing is reconstructed", name);
        native_crypto_stream_close(&w.randomness);
        sdfed_arena_free(&w.arena);
        return;
    }
    CHECK(ok, "%s: keys, shares and masked inputs", name);
    CHECK(stage_unmask(&w, after_input, n3) && w.server.stage == SDFED_SECAGG_DONE, "%s: unmasked", name);
    /* the server: sum the masked inputs, reconstruct, remove the masks */
    uint64_t sum[P + 1] = {0}, expected[P + 1] = {0};
    int64_t exact[P] = {0}, weight = 0;
    int inputs = 0;
    double worst_r = 0;
    for (int i = 0; i < N; i++) {
        if (!sdfed_secagg_server_completed(&w.server, i, SDFED_SECAGG_MASKED)) continue;
        inputs++;
        sdfed_secagg_ring_add(32, sum, w.c[i].masked, P + 1);
        sdfed_secagg_ring_add(32, expected, w.c[i].quantised, P + 1);
        for (int j = 0; j < P; j++) exact[j] += sdfed_secagg_ring_signed(32, w.c[i].quantised[j]);
        weight += (int64_t)w.c[i].quantised[P];
        double r = fabs(correlation(w.c[i].masked, w.c[i].quantised, 32));
        if (r > worst_r) worst_r = r;
    }
    CHECK(worst_r < 0.05, "%s: no masked input correlates with its quantised input (worst |r| %.4f)", name, worst_r);
    unsigned char secrets[N][SDFED_SECAGG_SEED_BYTES];
    uint64_t scratch[3 * MAX_HOLDERS];
    int seeds_right = 1;
    for (int j = 0; j < N; j++) {
        int need = sdfed_secagg_server_needs(&w.server, j);
        if (!need) continue;
        CHECK(sdfed_shamir_combine(w.shares[j], w.n_shares[j], w.params.t, w.params.k + 1, scratch, secrets[j], &err) ==
                  SDFED_OK,
              "%s: client %d's secret from %d shares: %s", name, j, w.n_shares[j], err.message);
        seeds_right &= !memcmp(secrets[j], need == SDFED_SECAGG_SELF_SEED ? w.c[j].seed : w.c[j].mask_seed,
                               SDFED_SECAGG_SEED_BYTES);
    }
    CHECK(seeds_right, "%s: every secret reconstructed is the client's own", name);
    sdfed_secagg_term terms[64];
    int count;
    CHECK(sdfed_secagg_server_terms(&w.server, terms, 64, &count, &err) == SDFED_OK, "%s", err.message);
    for (int k = 0; k < count; k++) {
        unsigned char key[32], mask_sk[32];
        if (terms[k].kind == SDFED_SECAGG_SELF_SEED) {
            native_secagg_self_key(secrets[terms[k].a], w.session, ROUND, (uint32_t)terms[k].a, key, &err);
        } else { /* the dropped client's mask key from its reconstructed seed, with the survivor's public key */
            native_secagg_mask_private(secrets[terms[k].b], ROUND, mask_sk, &err);
            native_secagg_pair_key(mask_sk, w.c[terms[k].a].mask_pk, w.session, ROUND, (uint32_t)terms[k].b,
                                   (uint32_t)terms[k].a, key, &err);
        }
        add_mask(&w, sum, key, terms[k].sign);
    }
    CHECK(!memcmp(sum, expected, sizeof sum), "%s: the unmasked sum is the %d survivors' quantised inputs, exactly",
          name, inputs);
    float mean[P];
    int64_t w_sum;
    CHECK(sdfed_secagg_dequantise(&w.ring, sum, P, mean, &w_sum, &err) == SDFED_OK && w_sum == weight, "%s",
          err.message);
    double scale = 32767 / 0.1;
    int same = 1;
    for (int j = 0; j < P; j++) same &= mean[j] == (float)((double)exact[j] / ((double)weight * scale));
    CHECK(same, "%s: the mean is the plain weighted mean of the quantised inputs, bit for bit", name);
    native_crypto_stream_close(&w.randomness);
    sdfed_arena_free(&w.arena);
}

static void test_refusals(void) {
    static world w;
    memset(&w, 0, sizeof w);
    sdfed_error err = {0};
    make_clients(&w, 77);
    start(&w, 77);
    const int after_shares[1] = {4};
    CHECK(stage_advertise(&w, NULL, 0) && stage_share(&w, NULL, 0), "keys and shares");
    /* a relayed pair tampered with: it does not authenticate */
    int j = w.c[0].holder[0] == 0 ? w.c[0].holder[1] : w.c[0].holder[0];
    unsigned char key[32], pair[SDFED_SECAGG_PAIR_BYTES];
    w.sealed[j][0][20] ^= 1;
    native_secagg_share_key(w.c[0].share_sk, w.c[j].share_pk, w.session, ROUND, (uint32_t)j, 0, key, &err);
    CHECK(native_secagg_open(key, w.session, ROUND, (uint32_t)j, 0, w.sealed[j][0], pair, &err) == SDFED_ERR_FORMAT,
          "a tampered share pair fails authentication: %s", err.message);
    w.sealed[j][0][20] ^= 1;
    CHECK(native_secagg_open(key, w.session, ROUND + 1, (uint32_t)j, 0, w.sealed[j][0], pair, &err) == SDFED_ERR_FORMAT,
          "a pair replayed into another round fails");
    CHECK(stage_masked(&w, after_shares, 1), "masked inputs");
    /* a neighbour of client c both alive and dropped */
    int c = -1;
    for (int i = 0; i < N && c < 0; i++)
        if (i != 4 && sdfed_secagg_graph_adjacent(&w.graph, i, 4)) c = i;
    int alive[MAX_HOLDERS], dropped[MAX_HOLDERS], na, nd;
    sdfed_secagg_server_request(&w.server, c, alive, &na, dropped, &nd, &err);
    alive[na++] = 4;
    sdfed_secagg_client_view view = {.self = c,
                                     .holders = w.params.k + 1,
                                     .holder = w.c[c].holder,
                                     .masked_with = w.c[c].masked_with,
                                     .min_inputs = w.params.min_inputs};
    unsigned char reply[MAX_HOLDERS];
    CHECK(sdfed_secagg_client_check_request(&view, alive, na, dropped, nd, 9, reply, &err) == SDFED_SECAGG_BOTH_SETS,
          "client %d refuses a request naming 4 both alive and dropped: %s", c, err.message);
    native_crypto_stream_close(&w.randomness);
    sdfed_arena_free(&w.arena);
}

int main(void) {
    const int keys2[2] = {1, 6}, share1[1] = {3}, input1[1] = {8};
    run("no dropouts", 1, NULL, 0, NULL, 0, NULL, 0, 1);
    run("2 after keys, 1 after sharing, 1 after the input", 2, keys2, 2, share1, 1, input1, 1, 1);
    const int keys2b[2] = {0, 9}, share1b[1] = {5}, input1b[1] = {2};
    run("the same counts, other clients", 3, keys2b, 2, share1b, 1, input1b, 1, 1);
    const int share3[3] = {2, 5, 7};
    run("3 after sharing", 4, NULL, 0, share3, 3, NULL, 0, 1);
    const int share2[2] = {3, 4};
    run("4 gone before their input (2 after keys, 2 after sharing): too few", 5, keys2, 2, share2, 2, NULL, 0, 0);
    test_refusals();
    return check_report("test_secagg_round");
}
