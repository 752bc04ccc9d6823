/* Secure aggregation's stages (fed/secagg_stage.h) and byte layouts
 * (fed/secagg_layout.h) without cryptography: a round of 10 through every
 * stage with dropouts, each stage's refusals by code, abandonment when too
 * few remain (never a partial unmasking), the unmasking requests (alive and
 * dropped disjoint, no client asked for both shares of one client), the
 * honest client's check of a request, the terms to remove; the session id
 * and HKDF info bytes. Every build. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fed/secagg_layout.h"
#include "fed/secagg_ring.h"
#include "fed/secagg_stage.h"
#include "test_bytes.h"

typedef struct round10 {
    sdfed_arena arena;
    sdfed_secagg_params params;
    sdfed_secagg_graph graph;
    sdfed_secagg_server server;
} round10;

static void round10_start(round10 *r, uint64_t seed) {
    sdfed_error err = {0};
    sdfed_arena_init(&r->arena);
    CHECK(sdfed_secagg_params_choose(10, 0.33, 0.05, 0, &r->params, &err) == SDFED_OK, "%s", err.message);
    sdfed_rng rng;
    sdfed_secagg_bytes src = test_bytes(&rng, seed);
    CHECK(sdfed_secagg_graph_make(&r->graph, &r->params, &src, &r->arena, &err) == SDFED_OK, "%s", err.message);
    CHECK(sdfed_secagg_server_start(&r->server, 5, &r->params, &r->graph, &r->arena, &err) == SDFED_OK, "%s",
          err.message);
}

/* every client of the stage answers except those in `gone` (which leave) */
static void stage(round10 *r, sdfed_secagg_stage st, const int *gone, int n_gone) {
    sdfed_error err = {0};
    for (int g = 0; g < n_gone; g++) sdfed_secagg_server_leave(&r->server, gone[g], &err);
    for (int i = 0; i < 10; i++)
        if (!sdfed_secagg_server_gone(&r->server, i) &&
            (st == SDFED_SECAGG_ADVERTISE || sdfed_secagg_server_completed(&r->server, i, st - 1)))
            sdfed_secagg_server_receive(&r->server, i, st, &err);
}

/* the client's view as the share stage gives it: its holders, masked with its neighbours in U2 */
static void view_of(const round10 *r, int i, int *holder, unsigned char *masked, sdfed_secagg_client_view *v) {
    for (int s = 0; s <= r->params.k; s++) {
        holder[s] = sdfed_secagg_graph_holder(&r->graph, i, s);
        masked[s] = holder[s] != i && sdfed_secagg_server_completed(&r->server, holder[s], SDFED_SECAGG_SHARE);
    }
    *v = (sdfed_secagg_client_view){.self = i,
                                    .holders = r->params.k + 1,
                                    .holder = holder,
                                    .masked_with = masked,
                                    .min_inputs = r->params.min_inputs};
}

static void test_round(void) {
    round10 r;
    round10_start(&r, 1);
    sdfed_error err = {0};
    sdfed_secagg_server *s = &r.server;
    CHECK(r.params.k == 4 && r.params.t == 2 && r.params.min_inputs == 7, "n 10: k 4, t 2, 7 inputs");
    CHECK(sdfed_secagg_server_check(s, 0) == SDFED_SECAGG_WAIT, "waiting for keys");
    CHECK(sdfed_secagg_server_receive(s, 3, SDFED_SECAGG_SHARE, &err) == SDFED_SECAGG_WRONG_STAGE &&
              !strcmp(sdfed_secagg_code_name(SDFED_SECAGG_WRONG_STAGE), "secagg_wrong_stage"),
          "shares before the keys: %s", err.message);
    CHECK(sdfed_secagg_server_receive(s, 10, SDFED_SECAGG_ADVERTISE, &err) == SDFED_SECAGG_NOT_IN_ROUND, "client 10");
    /* 2 leave after nothing (they never advertise), the rest advertise */
    const int before_keys[2] = {0, 1};
    stage(&r, SDFED_SECAGG_ADVERTISE, before_keys, 2);
    CHECK(sdfed_secagg_server_receive(s, 4, SDFED_SECAGG_ADVERTISE, &err) == SDFED_SECAGG_REPEATED, "keys twice");
    CHECK(sdfed_secagg_server_receive(s, 0, SDFED_SECAGG_ADVERTISE, &err) == SDFED_SECAGG_NOT_IN_ROUND,
          "a client that left does not come back");
    CHECK(sdfed_secagg_server_check(s, 0) == SDFED_SECAGG_NEXT, "8 advertised, none due: next");
    CHECK(sdfed_secagg_server_advance(s, &err) == SDFED_OK && s->stage == SDFED_SECAGG_SHARE && s->due == 8, "share");
    /* 1 leaves before sharing */
    const int before_shares[1] = {2};
    stage(&r, SDFED_SECAGG_SHARE, before_shares, 1);
    CHECK(sdfed_secagg_server_check(s, 0) == SDFED_SECAGG_NEXT && sdfed_secagg_server_advance(s, &err) == SDFED_OK,
          "7 shared: masked inputs");
    CHECK(sdfed_secagg_server_receive(s, 1, SDFED_SECAGG_MASKED, &err) == SDFED_SECAGG_NOT_IN_ROUND, "gone");
    /* all 7 send their masked input; then 1 of them leaves before unmasking */
    stage(&r, SDFED_SECAGG_MASKED, NULL, 0);
    CHECK(sdfed_secagg_server_check(s, 0) == SDFED_SECAGG_NEXT && sdfed_secagg_server_advance(s, &err) == SDFED_OK &&
              s->stage == SDFED_SECAGG_UNMASK,
          "7 masked inputs: unmasking");
    /* the requests: alive and dropped disjoint, and no client asked for both shares of one client */
    int asked_seed[10] = {0}, asked_key[10] = {0}, disjoint = 1, valid = 1;
    for (int i = 0; i < 10; i++) {
        int alive[5], dropped[4], na, nd;
        if (sdfed_secagg_server_request(s, i, alive, &na, dropped, &nd, &err) != SDFED_OK) continue;
        for (int a = 0; a < na; a++) {
            asked_seed[alive[a]] = 1;
            for (int d = 0; d < nd; d++) disjoint &= alive[a] != dropped[d];
        }
        for (int d = 0; d < nd; d++) asked_key[dropped[d]] = 1;
        int holder[5];
        unsigned char masked[5], reply[5];
        sdfed_secagg_client_view v;
        view_of(&r, i, holder, masked, &v);
        valid &= sdfed_secagg_client_check_request(&v, alive, na, dropped, nd, 7, reply, &err) == SDFED_OK;
    }
    int never_both = 1;
    for (int j = 0; j < 10; j++) {
        never_both &= !(asked_seed[j] && asked_key[j]);
        if (sdfed_secagg_server_needs(s, j) == SDFED_SECAGG_SELF_SEED) never_both &= !asked_key[j];
    }
    CHECK(disjoint && never_both, "no request names a client both alive and dropped, nor mixes kinds across requests");
    CHECK(valid, "every honest client accepts its request");
    CHECK(sdfed_secagg_server_needs(s, 2) == SDFED_SECAGG_NONE && sdfed_secagg_server_needs(s, 0) == SDFED_SECAGG_NONE,
          "those gone before sharing are not reconstructed");
    int leaving = -1;
    for (int i = 3; i < 10 && leaving < 0; i++) leaving = i;
    sdfed_secagg_server_leave(s, leaving, &err);
    for (int i = 0; i < 10; i++)
        if (i != leaving && sdfed_secagg_server_completed(s, i, SDFED_SECAGG_MASKED))
            sdfed_secagg_server_receive(s, i, SDFED_SECAGG_UNMASK, &err);
    CHECK(sdfed_secagg_server_check(s, 0) == SDFED_SECAGG_NEXT && sdfed_secagg_server_advance(s, &err) == SDFED_OK &&
              s->stage == SDFED_SECAGG_DONE,
          "6 answers cover every secret: done (%d short, %d lost)", s->short_of_t, s->lost);
    sdfed_secagg_term terms[64];
    int count;
    CHECK(sdfed_secagg_server_terms(s, terms, 64, &count, &err) == SDFED_OK && count == 7,
          "7 self masks and no pair term (nobody dropped after sharing): %d", count);
    sdfed_arena_free(&r.arena);
}

static void test_dropped_after_sharing(void) {
    round10 r;
    round10_start(&r, 2);
    sdfed_error err = {0};
    sdfed_secagg_server *s = &r.server;
    stage(&r, SDFED_SECAGG_ADVERTISE, NULL, 0);
    sdfed_secagg_server_advance(s, &err);
    stage(&r, SDFED_SECAGG_SHARE, NULL, 0);
    sdfed_secagg_server_advance(s, &err);
    const int after_shares[2] = {4, 7};
    stage(&r, SDFED_SECAGG_MASKED, after_shares, 2);
    CHECK(sdfed_secagg_server_check(s, 0) == SDFED_SECAGG_NEXT && sdfed_secagg_server_advance(s, &err) == SDFED_OK,
          "8 inputs: unmasking");
    CHECK(sdfed_secagg_server_needs(s, 4) == SDFED_SECAGG_MASK_KEY &&
              sdfed_secagg_server_needs(s, 5) == SDFED_SECAGG_SELF_SEED,
          "the dropped's mask keys, the survivors' seeds");
    sdfed_secagg_term terms[64];
    int count = 0, pairs = 0, signs = 1;
    stage(&r, SDFED_SECAGG_UNMASK, NULL, 0);
    CHECK(sdfed_secagg_server_advance(s, &err) == SDFED_OK, "%s", err.message);
    sdfed_secagg_server_terms(s, terms, 64, &count, &err);
    for (int i = 0; i < count; i++)
        if (terms[i].kind == SDFED_SECAGG_MASK_KEY) {
            pairs++;
            signs &= terms[i].sign == -sdfed_secagg_pair_sign(terms[i].a, terms[i].b) &&
                     sdfed_secagg_graph_adjacent(&r.graph, terms[i].a, terms[i].b);
        }
    int expected_pairs = 0;
    for (int a = 0; a < 10; a++)
        if (a != 4 && a != 7)
            expected_pairs += sdfed_secagg_graph_adjacent(&r.graph, a, 4) + sdfed_secagg_graph_adjacent(&r.graph, a, 7);
    CHECK(count == 8 + pairs && pairs == expected_pairs && signs,
          "8 self terms and one pair term per survivor next to a dropped client (%d), signs opposite", pairs);
    sdfed_arena_free(&r.arena);
}

static void test_abandon(void) {
    round10 r;
    sdfed_error err = {0};
    /* 4 gone before the keys: 6 < 7 can never reach the round's least number of inputs */
    round10_start(&r, 3);
    const int four[4] = {0, 3, 6, 9};
    for (int g = 0; g < 4; g++) sdfed_secagg_server_leave(&r.server, four[g], &err);
    CHECK(sdfed_secagg_server_check(&r.server, 0) == SDFED_SECAGG_ABANDON, "4 of 10 gone: abandon at once");
    CHECK(sdfed_secagg_server_advance(&r.server, &err) == SDFED_ERR_ARG, "it cannot advance");
    sdfed_secagg_server_abandon(&r.server, "too few clients");
    CHECK(r.server.stage == SDFED_SECAGG_ABANDONED &&
              sdfed_secagg_server_receive(&r.server, 1, SDFED_SECAGG_ADVERTISE, &err) == SDFED_SECAGG_WRONG_STAGE,
          "abandoned: nothing more is taken");
    sdfed_arena_free(&r.arena);
    /* the deadline with 6 of the masked inputs: abandoned, never unmasked */
    round10_start(&r, 4);
    stage(&r, SDFED_SECAGG_ADVERTISE, NULL, 0);
    sdfed_secagg_server_advance(&r.server, &err);
    stage(&r, SDFED_SECAGG_SHARE, NULL, 0);
    sdfed_secagg_server_advance(&r.server, &err);
    for (int i = 0; i < 6; i++) sdfed_secagg_server_receive(&r.server, i, SDFED_SECAGG_MASKED, &err);
    CHECK(sdfed_secagg_server_check(&r.server, 0) == SDFED_SECAGG_WAIT, "4 still due");
    CHECK(sdfed_secagg_server_check(&r.server, 1) == SDFED_SECAGG_ABANDON, "the deadline with 6 of 7: abandon");
    sdfed_arena_free(&r.arena);
    /* unmasking: a secret whose holders all leave before answering */
    round10_start(&r, 5);
    stage(&r, SDFED_SECAGG_ADVERTISE, NULL, 0);
    sdfed_secagg_server_advance(&r.server, &err);
    stage(&r, SDFED_SECAGG_SHARE, NULL, 0);
    sdfed_secagg_server_advance(&r.server, &err);
    stage(&r, SDFED_SECAGG_MASKED, NULL, 0);
    sdfed_secagg_server_advance(&r.server, &err);
    /* client 0's five holders: four leave, so at most 1 < t = 2... its own answer only */
    int left = 0;
    for (int slot = 0; slot <= r.params.k; slot++) {
        int h = sdfed_secagg_graph_holder(&r.graph, 0, slot);
        if (h != 0 && left < 4) {
            sdfed_secagg_server_leave(&r.server, h, &err);
            left++;
        }
    }
    CHECK(sdfed_secagg_server_check(&r.server, 0) == SDFED_SECAGG_ABANDON,
          "a seed with one holder left cannot be reconstructed: abandon (never a partial unmasking)");
    CHECK(sdfed_secagg_server_advance(&r.server, &err) != SDFED_OK, "and it cannot finish");
    sdfed_arena_free(&r.arena);
}

static void test_client_check(void) {
    round10 r;
    round10_start(&r, 6);
    sdfed_error err = {0};
    stage(&r, SDFED_SECAGG_ADVERTISE, NULL, 0);
    sdfed_secagg_server_advance(&r.server, &err);
    stage(&r, SDFED_SECAGG_SHARE, NULL, 0);
    sdfed_secagg_server_advance(&r.server, &err);
    int dropped_client = sdfed_secagg_graph_holder(&r.graph, 5, 0); /* a neighbour of 5 */
    int gone[1] = {dropped_client};
    stage(&r, SDFED_SECAGG_MASKED, gone, 1);
    sdfed_secagg_server_advance(&r.server, &err);
    int alive[5], dropped[5], na, nd, holder[5];
    unsigned char masked[5], reply[5];
    sdfed_secagg_client_view v;
    CHECK(sdfed_secagg_server_request(&r.server, 5, alive, &na, dropped, &nd, &err) == SDFED_OK && na == 4 && nd == 1 &&
              dropped[0] == dropped_client,
          "5's request: 4 alive (itself included), its dropped neighbour");
    view_of(&r, 5, holder, masked, &v);
    CHECK(sdfed_secagg_client_check_request(&v, alive, na, dropped, nd, 9, reply, &err) == SDFED_OK, "%s", err.message);
    int seeds = 0, keys = 0;
    for (int s = 0; s < 5; s++) {
        seeds += reply[s] == SDFED_SECAGG_SELF_SEED;
        keys += reply[s] == SDFED_SECAGG_MASK_KEY;
    }
    CHECK(seeds == 4 && keys == 1 && reply[0] == SDFED_SECAGG_MASK_KEY, "4 seed shares and 1 key share");
    /* a neighbour named both alive and dropped */
    int both[2] = {dropped[0], alive[0] == 5 ? alive[1] : alive[0]};
    CHECK(sdfed_secagg_client_check_request(&v, alive, na, both, 2, 9, reply, &err) == SDFED_SECAGG_BOTH_SETS &&
              !strcmp(sdfed_secagg_code_name(SDFED_SECAGG_BOTH_SETS), "secagg_both_sets") && reply[0] == 0,
          "a neighbour both alive and dropped is refused, nothing to send: %s", err.message);
    /* a client that is not a neighbour */
    int stranger = -1;
    for (int j = 0; j < 10 && stranger < 0; j++)
        if (j != 5 && !sdfed_secagg_graph_adjacent(&r.graph, 5, j)) stranger = j;
    int with_stranger[5];
    memcpy(with_stranger, alive, sizeof alive);
    with_stranger[na] = stranger;
    CHECK(sdfed_secagg_client_check_request(&v, with_stranger, na + 1, dropped, nd, 9, reply, &err) ==
              SDFED_SECAGG_NOT_NEIGHBOUR,
          "a stranger named");
    /* the dropped neighbour left out */
    CHECK(sdfed_secagg_client_check_request(&v, alive, na, dropped, 0, 9, reply, &err) == SDFED_SECAGG_INCONSISTENT,
          "a neighbour it masked with, unnamed: %s", err.message);
    /* itself named dropped */
    int self_dropped[2] = {dropped[0], 5}, without_self[5], nw = 0;
    for (int a = 0; a < na; a++)
        if (alive[a] != 5) without_self[nw++] = alive[a];
    CHECK(sdfed_secagg_client_check_request(&v, without_self, nw, self_dropped, 2, 9, reply, &err) ==
              SDFED_SECAGG_SELF_NOT_ALIVE,
          "itself dropped");
    CHECK(sdfed_secagg_client_check_request(&v, alive, na, dropped, nd, 6, reply, &err) == SDFED_SECAGG_TOO_FEW,
          "6 inputs of the 7 the round needs");
    int twice[6];
    memcpy(twice, alive, sizeof alive);
    twice[na] = alive[0];
    CHECK(sdfed_secagg_client_check_request(&v, twice, na + 1, dropped, nd, 9, reply, &err) == SDFED_SECAGG_REPEATED,
          "a client named twice");
    /* a neighbour whose shares it never received, named */
    masked[0] = 0;
    CHECK(sdfed_secagg_client_check_request(&v, alive, na, dropped, nd, 9, reply, &err) == SDFED_SECAGG_INCONSISTENT,
          "a neighbour it never masked with, named");
    sdfed_arena_free(&r.arena);
}

static void test_layout(void) {
    sdfed_error err = {0};
    unsigned char mask[3][32], share[3][32], scratch[64 * 3], advertised[3] = {1, 1, 1};
    unsigned char input[SDFED_SECAGG_SESSION_INPUT_BYTES(3)], again[SDFED_SECAGG_SESSION_INPUT_BYTES(3)], session[32];
    size_t bytes, again_bytes;
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < 32; b++) {
            mask[i][b] = (unsigned char)(i * 64 + b + 1);
            share[i][b] = (unsigned char)(i * 64 + b + 33);
        }
    CHECK(sdfed_secagg_session_input(7, 3, mask[0], share[0], advertised, scratch, input, &bytes, &err) == SDFED_OK &&
              bytes == sizeof input && !memcmp(input, "sdfed/secagg/v2", 15) && input[15] == 1 && input[23] == 7 &&
              input[27] == 3 && input[31] == 0 && !memcmp(input + 32, mask[0], 32) &&
              !memcmp(input + 64, share[0], 32) && input[99] == 1 && !memcmp(input + 100, mask[1], 32) &&
              input[167] == 2 && !memcmp(input + 200, share[2], 32),
          "the session id's input: label, purpose, round and n (big-endian), then each client, its keys");
    CHECK(sdfed_secagg_session_input(8, 3, mask[0], share[0], advertised, scratch, again, &again_bytes, &err) ==
                  SDFED_OK &&
              again_bytes == bytes && again[23] == 8 && !memcmp(again + 24, input + 24, bytes - 24),
          "and of the round");
    advertised[1] = 0;
    CHECK(sdfed_secagg_session_input(7, 3, mask[0], share[0], advertised, scratch, again, &again_bytes, &err) ==
                  SDFED_OK &&
              again_bytes == bytes - 68 && !memcmp(again, input, 96) && !memcmp(again + 96, input + 164, 68),
          "only those who advertised");
    advertised[1] = 1;
    memcpy(share[2], mask[0], 32);
    CHECK(sdfed_secagg_session_input(7, 3, mask[0], share[0], advertised, scratch, again, &again_bytes, &err) ==
                  SDFED_ERR_FORMAT &&
              strstr(err.message, "twice"),
          "a key advertised twice: %s", err.message);
    memset(share[2], 0, 32);
    CHECK(sdfed_secagg_session_input(7, 3, mask[0], share[0], advertised, scratch, again, &again_bytes, &err) ==
              SDFED_ERR_FORMAT,
          "a key of zeros");
    for (int b = 0; b < 32; b++) session[b] = (unsigned char)(200 + b);
    unsigned char info[64];
    CHECK(sdfed_secagg_info(SDFED_SECAGG_PURPOSE_SHARE, session, -2, 3, 9, info, &err) == SDFED_OK &&
              !memcmp(info, "sdfed/secagg/v2", 15) && info[15] == 2 && !memcmp(info + 16, session, 32) &&
              info[48] == 0xff && info[55] == 0xfe && info[59] == 3 && info[63] == 9 && info[56] == 0,
          "info: label, purpose, session, round (big-endian), sender, recipient");
    CHECK(sdfed_secagg_info(SDFED_SECAGG_PURPOSE_PAIR, session, 1, 9, 3, info, &err) == SDFED_ERR_ARG,
          "a pair key names the smaller client first");
    CHECK(sdfed_secagg_info(SDFED_SECAGG_PURPOSE_SELF, session, 1, 4, 5, info, &err) == SDFED_ERR_ARG, "self: one");
    CHECK(sdfed_secagg_info(SDFED_SECAGG_PURPOSE_MASK_KEY, session, 1, 0, 1, info, &err) == SDFED_ERR_ARG,
          "a mask key names no client");
    CHECK(sdfed_secagg_info(SDFED_SECAGG_PURPOSE_MASK_KEY, session, 1, 0, 0, info, &err) == SDFED_OK && info[15] == 5,
          "a mask key's info: purpose 5");
    CHECK(sdfed_secagg_info(6, session, 1, 0, 0, info, &err) == SDFED_ERR_ARG, "no purpose 6");
    sdfed_shamir_share b = {.x = 3, .y = {1, 2, 3}}, k = {.x = 3, .y = {6, 7, 8}}, b2, k2;
    unsigned char pair[SDFED_SECAGG_PAIR_BYTES];
    _Static_assert(SDFED_SECAGG_PAIR_BYTES == 48, "a share pair is two shares of 24 bytes");
    sdfed_secagg_pair_write(&b, &k, pair);
    CHECK(pair[0] == 1 && pair[24] == 6 && pair[40] == 8 &&
              sdfed_secagg_pair_read(pair, 3, &b2, &k2, &err) == SDFED_OK && b2.x == 3 &&
              !memcmp(b.y, b2.y, sizeof b.y) && !memcmp(k.y, k2.y, sizeof k.y),
          "the share pair: b's 24 bytes, then s's");
}

int main(void) {
    test_round();
    test_dropped_after_sharing();
    test_abandon();
    test_client_check();
    test_layout();
    return check_report("test_secagg_stage");
}
