/* A client's side of one secure round on the host (see secagg_client.h). */
#include "native/secagg_client.h"

#include <stdlib.h>
#include <string.h>

#include "fed/secagg_layout.h"
#include "fed/secagg_message.h"
#include "fed/secagg_shamir.h"
#include "native/crypto.h"
#include "native/secagg_keys.h"

static const unsigned char ZERO_KEY[32];

void secagg_client_free(secagg_client *c) {
    if (c->pairs) memset(c->pairs, 0, (size_t)c->holders * SDFED_SECAGG_PAIR_BYTES);
    free(c->holder);
    free(c->keys);
    free(c->pairs);
    free(c->masked_with);
    free(c->input);
    memset(c, 0, sizeof *c);
}

static int out_of_order(const secagg_client *c, sdfed_secagg_stage step, sdfed_error *err) {
    if (c->stage == step) return SDFED_OK;
    return sdfed_fail(err, SDFED_SECAGG_WRONG_STAGE, "secagg client: asked to %s at its %s step",
                      sdfed_secagg_stage_name(step), sdfed_secagg_stage_name(c->stage));
}

int secagg_client_advertise(secagg_client *c, const sdfed_secagg_plan *plan, int64_t round,
                            const sdfed_secagg_bytes *secret, sdfed_buffer *out, sdfed_error *err) {
    memset(c, 0, sizeof *c);
    c->plan = *plan;
    c->round = round;
    c->secret = *secret;
    c->self = -1;
    int rc = sdfed_secagg_draw(secret, c->mask_sk, 32, err);
    if (rc == SDFED_OK) rc = sdfed_secagg_draw(secret, c->share_sk, 32, err);
    if (rc == SDFED_OK) rc = sdfed_secagg_draw(secret, c->seed, 32, err);
    if (rc == SDFED_OK) rc = sdfed_x25519_public(c->mask_sk, c->mask_pk, err);
    if (rc == SDFED_OK) rc = sdfed_x25519_public(c->share_sk, c->share_pk, err);
    if (rc == SDFED_OK) rc = sdfed_secagg_write_advertise(out, round, c->mask_pk, c->share_pk, err);
    c->stage = rc == SDFED_OK ? SDFED_SECAGG_SHARE : SDFED_SECAGG_ABANDONED;
    return rc;
}

/* the holders, their keys and the session from the request, checked against the plan and its own keys */
static int take_request(secagg_client *c, const sdfed_secagg_share_request *q, sdfed_error *err) {
    const sdfed_secagg_params *p = &c->plan.params;
    if (q->n != p->n || q->k != p->k || q->t != p->t || q->min_inputs != p->min_inputs)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "secagg share_request: n %d, k %d, t %d, min_inputs %d; the task's plan says %d, %d, %d, %d",
                          q->n, q->k, q->t, q->min_inputs, p->n, p->k, p->t, p->min_inputs);
    c->self = q->self;
    c->holders = q->k + 1;
    size_t h = (size_t)c->holders;
    c->holder = malloc(sizeof *c->holder * h);
    c->keys = malloc(64 * h);
    c->pairs = calloc(h, SDFED_SECAGG_PAIR_BYTES);
    c->masked_with = calloc(h, 1);
    c->input = malloc(sizeof *c->input * (c->plan.dims + 1));
    if (!c->holder || !c->keys || !c->pairs || !c->masked_with || !c->input)
        return sdfed_fail(err, SDFED_ERR_NOMEM, "secagg client: out of memory");
    memcpy(c->session, q->session, 32);
    int own = 0;
    for (int s = 0; s < c->holders; s++) {
        const unsigned char *e = q->holders + (size_t)SDFED_SECAGG_HOLDER_BYTES * s;
        c->holder[s] = (int)sdfed_secagg_be32(e);
        memcpy(c->keys + 64 * (size_t)s, e + 4, 64);
        for (int r = 0; r < s; r++)
            if (c->holder[r] == c->holder[s])
                return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg share_request: client %d holds two slots",
                                  c->holder[s]);
        if (c->holder[s] == c->self) own = !memcmp(e + 4, c->mask_pk, 32) && !memcmp(e + 36, c->share_pk, 32);
    }
    if (!own) return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg share_request: its own keys are not in its slot");
    return SDFED_OK;
}

int secagg_client_share(secagg_client *c, const unsigned char *request, size_t len, sdfed_buffer *out,
                        sdfed_error *err) {
    int rc = out_of_order(c, SDFED_SECAGG_SHARE, err);
    if (rc) return rc;
    sdfed_secagg_share_request q;
    rc = sdfed_secagg_read_share_request(request, len, c->round, c->plan.params.n, &q, err);
    if (rc == SDFED_OK) rc = take_request(c, &q, err);
    if (rc) {
        c->stage = SDFED_SECAGG_ABANDONED;
        return rc;
    }
    const int holders = c->holders, t = c->plan.params.t;
    sdfed_shamir_share *b = malloc(sizeof *b * (size_t)holders), *s = malloc(sizeof *s * (size_t)holders);
    uint64_t *scratch = malloc(sizeof *scratch * (size_t)t);
    unsigned char *sealed = malloc((size_t)SDFED_SECAGG_SEALED_BYTES * (size_t)holders);
    int *to = malloc(sizeof *to * (size_t)holders), count = 0;
    if (!b || !s || !scratch || !sealed || !to) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "secagg client: out of memory");
    if (rc == SDFED_OK) rc = sdfed_shamir_split(c->seed, t, holders, &c->secret, scratch, b, err);
    if (rc == SDFED_OK) rc = sdfed_shamir_split(c->mask_sk, t, holders, &c->secret, scratch, s, err);
    for (int slot = 0; slot < holders && rc == SDFED_OK; slot++) {
        int h = c->holder[slot];
        unsigned char pair[SDFED_SECAGG_PAIR_BYTES], key[32], nonce[SDFED_SECAGG_NONCE_BYTES];
        const unsigned char *theirs = c->keys + 64 * (size_t)slot + 32;
        sdfed_secagg_pair_write(&b[slot], &s[slot], pair);
        if (h == c->self) {
            memcpy(c->pairs + (size_t)SDFED_SECAGG_PAIR_BYTES * slot, pair, sizeof pair);
        } else if (memcmp(theirs, ZERO_KEY, 32)) { /* a neighbour that advertised */
            rc = sdfed_secagg_draw(&c->secret, nonce, sizeof nonce, err);
            if (rc == SDFED_OK)
                rc = sdfed_secagg_share_key(c->share_sk, theirs, c->session, c->round, (uint32_t)c->self, (uint32_t)h,
                                            key, err);
            if (rc == SDFED_OK)
                rc = sdfed_secagg_seal(key, nonce, c->session, c->round, (uint32_t)c->self, (uint32_t)h, pair,
                                       sealed + (size_t)SDFED_SECAGG_SEALED_BYTES * count, err);
            to[count++] = h;
            memset(key, 0, sizeof key);
        }
        memset(pair, 0, sizeof pair);
    }
    if (rc == SDFED_OK) rc = sdfed_secagg_write_relayed(out, SDFED_SECAGG_MSG_SHARES, c->round, count, to, sealed, err);
    if (b) memset(b, 0, sizeof *b * (size_t)holders);
    if (s) memset(s, 0, sizeof *s * (size_t)holders);
    free(b), free(s), free(scratch), free(sealed), free(to);
    c->stage = rc == SDFED_OK ? SDFED_SECAGG_MASKED : SDFED_SECAGG_ABANDONED;
    return rc;
}

/* slot of client j among its holders, -1 when none */
static int slot_of(const secagg_client *c, int j) {
    for (int s = 0; s < c->holders; s++)
        if (c->holder[s] == j) return s;
    return -1;
}

/* every pair relayed to it opened into c->pairs, c->masked_with set */
static int open_pairs(secagg_client *c, const sdfed_secagg_list *relayed, sdfed_error *err) {
    for (int i = 0; i < relayed->count; i++) {
        const unsigned char *e = relayed->entries + (size_t)SDFED_SECAGG_RELAYED_BYTES * i;
        int j = (int)sdfed_secagg_be32(e), slot = slot_of(c, j);
        const unsigned char *theirs = slot >= 0 ? c->keys + 64 * (size_t)slot + 32 : ZERO_KEY;
        if (slot < 0 || j == c->self || !memcmp(theirs, ZERO_KEY, 32))
            return sdfed_fail(err, SDFED_SECAGG_NOT_NEIGHBOUR,
                              "secagg masked_request: a pair from client %d, not an advertised neighbour", j);
        if (c->masked_with[slot])
            return sdfed_fail(err, SDFED_SECAGG_REPEATED, "secagg masked_request: client %d's pair twice", j);
        unsigned char key[32];
        int rc =
            sdfed_secagg_share_key(c->share_sk, theirs, c->session, c->round, (uint32_t)j, (uint32_t)c->self, key, err);
        if (rc == SDFED_OK)
            rc = sdfed_secagg_open(key, c->session, c->round, (uint32_t)j, (uint32_t)c->self, e + 4,
                                   c->pairs + (size_t)SDFED_SECAGG_PAIR_BYTES * slot, err);
        memset(key, 0, sizeof key);
        if (rc) return sdfed_fail_context(err, rc, "secagg masked_request: client %d's pair", j);
        c->masked_with[slot] = 1;
    }
    return SDFED_OK;
}

int secagg_client_mask(secagg_client *c, const unsigned char *request, size_t len, const float *x, const float *g,
                       int64_t samples, const sdfed_secagg_bytes *rounding, const sdfed_secagg_bytes *noise,
                       sdfed_buffer *out, sdfed_error *err) {
    int rc = out_of_order(c, SDFED_SECAGG_MASKED, err);
    if (rc) return rc;
    sdfed_secagg_list relayed;
    rc = sdfed_secagg_read_relayed(request, len, SDFED_SECAGG_MSG_MASKED_REQUEST, c->round, c->holders - 1, &relayed,
                                   err);
    if (rc == SDFED_OK) rc = open_pairs(c, &relayed, err);
    const size_t values = c->plan.dims + 1;
    const int bits = c->plan.ring.ring_bits;
    uint64_t *masked = malloc(sizeof *masked * values);
    if (rc == SDFED_OK && !masked) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "secagg client: out of memory");
    if (rc == SDFED_OK) rc = sdfed_secagg_input(&c->plan, x, g, samples, rounding, noise, c->input, err);
    unsigned char key[32];
    if (rc == SDFED_OK) {
        memcpy(masked, c->input, sizeof *masked * values);
        rc = sdfed_secagg_self_key(c->seed, c->session, c->round, (uint32_t)c->self, key, err);
    }
    if (rc == SDFED_OK) rc = sdfed_secagg_add_mask(key, bits, masked, values, 1, err);
    for (int slot = 0; slot < c->holders && rc == SDFED_OK; slot++) {
        if (!c->masked_with[slot]) continue;
        int j = c->holder[slot];
        rc = sdfed_secagg_pair_key(c->mask_sk, c->keys + 64 * (size_t)slot, c->session, c->round, (uint32_t)c->self,
                                   (uint32_t)j, key, err);
        if (rc == SDFED_OK)
            rc = sdfed_secagg_add_mask(key, bits, masked, values, sdfed_secagg_pair_sign(c->self, j), err);
    }
    memset(key, 0, sizeof key);
    if (rc == SDFED_OK) rc = sdfed_secagg_write_masked(out, c->round, bits, masked, values, err);
    free(masked);
    c->stage = rc == SDFED_OK ? SDFED_SECAGG_UNMASK : SDFED_SECAGG_ABANDONED;
    return rc;
}

/* n clients from a request's list (4 bytes each) */
static void clients_of(const sdfed_secagg_list *l, int *out) {
    for (int i = 0; i < l->count; i++) out[i] = (int)sdfed_secagg_be32(l->entries + 4 * (size_t)i);
}

int secagg_client_unmask(secagg_client *c, const unsigned char *request, size_t len, sdfed_buffer *out,
                         sdfed_error *err) {
    int rc = out_of_order(c, SDFED_SECAGG_UNMASK, err);
    if (rc) return rc;
    sdfed_secagg_unmask_request q;
    rc = sdfed_secagg_read_unmask_request(request, len, c->round, c->holders, &q, err);
    if (rc) {
        c->stage = SDFED_SECAGG_ABANDONED;
        return rc;
    }
    const size_t h = (size_t)c->holders;
    int *alive = malloc(sizeof *alive * h), *dropped = malloc(sizeof *dropped * h), *owners = malloc(sizeof(int) * h);
    unsigned char *reply = malloc(h), *which = malloc(h), *shares = malloc(SDFED_SHAMIR_SHARE_BYTES * h);
    if (!alive || !dropped || !owners || !reply || !which || !shares)
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "secagg client: out of memory");
    int count = 0;
    if (rc == SDFED_OK) {
        clients_of(&q.alive, alive);
        clients_of(&q.dropped, dropped);
        sdfed_secagg_client_view view = {.self = c->self,
                                         .holders = c->holders,
                                         .holder = c->holder,
                                         .masked_with = c->masked_with,
                                         .min_inputs = c->plan.params.min_inputs};
        rc = sdfed_secagg_client_check_request(&view, alive, q.alive.count, dropped, q.dropped.count, q.inputs, reply,
                                               err);
    }
    for (int slot = 0; slot < c->holders && rc == SDFED_OK; slot++) {
        if (reply[slot] == SDFED_SECAGG_NONE) continue;
        const unsigned char *pair = c->pairs + (size_t)SDFED_SECAGG_PAIR_BYTES * slot;
        owners[count] = c->holder[slot];
        which[count] = reply[slot];
        memcpy(shares + (size_t)SDFED_SHAMIR_SHARE_BYTES * count,
               pair + (reply[slot] == SDFED_SECAGG_SELF_SEED ? 0 : SDFED_SHAMIR_SHARE_BYTES), SDFED_SHAMIR_SHARE_BYTES);
        count++;
    }
    if (rc == SDFED_OK) rc = sdfed_secagg_write_unmask(out, c->round, count, owners, which, shares, err);
    if (shares) memset(shares, 0, SDFED_SHAMIR_SHARE_BYTES * h);
    free(alive), free(dropped), free(owners), free(reply), free(which), free(shares);
    c->stage = rc == SDFED_OK ? SDFED_SECAGG_DONE : SDFED_SECAGG_ABANDONED;
    return rc;
}
