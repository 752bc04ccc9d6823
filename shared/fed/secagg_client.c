/* A client's side of one secure round without its cryptography (see
 * secagg_client.h). */
#include "fed/secagg_client.h"

#include <stdlib.h>
#include <string.h>

#include "fed/secagg_layout.h"
#include "fed/secagg_ring.h"
#include "fed/secagg_shamir.h"

static const unsigned char ZERO_KEY[32];

void sdfed_secagg_client_free(sdfed_secagg_client *c) {
    if (c->pairs) memset(c->pairs, 0, (size_t)c->holders * SDFED_SECAGG_PAIR_BYTES);
    free(c->holder);
    free(c->keys);
    free(c->pairs);
    free(c->masked_with);
    free(c->added);
    free(c->input);
    free(c->masked);
    memset(c, 0, sizeof *c); /* the keys and the seed too */
}

void sdfed_secagg_client_abandon(sdfed_secagg_client *c) { c->stage = SDFED_SECAGG_ABANDONED; }

/* rc, the client abandoned unless it is SDFED_OK */
static int verdict(sdfed_secagg_client *c, int rc) {
    if (rc) c->stage = SDFED_SECAGG_ABANDONED;
    return rc;
}

static int out_of_order(const sdfed_secagg_client *c, sdfed_secagg_stage step, sdfed_error *err) {
    if (c->stage == step) return SDFED_OK;
    return sdfed_fail(err, SDFED_SECAGG_WRONG_STAGE, "secagg client: asked to %s at its %s step",
                      sdfed_secagg_stage_name(step), sdfed_secagg_stage_name(c->stage));
}

int sdfed_secagg_client_start(sdfed_secagg_client *c, const sdfed_secagg_plan *plan, int64_t round,
                              const unsigned char mask_seed[SDFED_SHAMIR_SECRET_BYTES], const unsigned char mask_pk[32],
                              const unsigned char share_pk[32], const unsigned char seed[SDFED_SHAMIR_SECRET_BYTES],
                              sdfed_buffer *out, sdfed_error *err) {
    memset(c, 0, sizeof *c);
    c->plan = *plan;
    c->round = round;
    c->self = -1;
    memcpy(c->mask_seed, mask_seed, sizeof c->mask_seed);
    memcpy(c->mask_pk, mask_pk, 32);
    memcpy(c->share_pk, share_pk, 32);
    memcpy(c->seed, seed, sizeof c->seed);
    int rc = sdfed_secagg_write_advertise(out, round, mask_pk, share_pk, err);
    c->stage = rc == SDFED_OK ? SDFED_SECAGG_SHARE : SDFED_SECAGG_ABANDONED;
    return rc;
}

/* the holders, their keys and the session from the request, checked against the plan and its own keys */
static int take_request(sdfed_secagg_client *c, const sdfed_secagg_share_request *q, sdfed_error *err) {
    const sdfed_secagg_params *p = &c->plan.params;
    if (q->n != p->n || q->k != p->k || q->t != p->t || q->min_inputs != p->min_inputs)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "secagg share_request: n %d, k %d, t %d, min_inputs %d; the task's plan says %d, %d, %d, %d",
                          q->n, q->k, q->t, q->min_inputs, p->n, p->k, p->t, p->min_inputs);
    c->self = q->self;
    c->holders = q->k + 1;
    size_t h = (size_t)c->holders, values = c->plan.dims + 1;
    c->holder = malloc(sizeof *c->holder * h);
    c->keys = malloc(64 * h);
    c->pairs = calloc(h, SDFED_SECAGG_PAIR_BYTES);
    c->masked_with = calloc(h, 1);
    c->added = calloc(h, 1);
    c->input = malloc(sizeof *c->input * values);
    c->masked = malloc(sizeof *c->masked * values);
    if (!c->holder || !c->keys || !c->pairs || !c->masked_with || !c->added || !c->input || !c->masked)
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

int sdfed_secagg_client_share(sdfed_secagg_client *c, const unsigned char *request, size_t len,
                              const sdfed_secagg_bytes *random, unsigned char *pairs, sdfed_error *err) {
    int rc = out_of_order(c, SDFED_SECAGG_SHARE, err);
    if (rc == SDFED_OK && c->holder) /* the request was taken already: its shares are due */
        rc = sdfed_fail(err, SDFED_SECAGG_WRONG_STAGE, "secagg client: a second share_request in one round");
    if (rc) return rc;
    sdfed_secagg_share_request q;
    rc = sdfed_secagg_read_share_request(request, len, c->round, c->plan.params.n, &q, err);
    if (rc == SDFED_OK) rc = take_request(c, &q, err);
    if (rc) return verdict(c, rc);
    const int holders = c->holders, t = c->plan.params.t;
    sdfed_shamir_share *b = malloc(sizeof *b * (size_t)holders), *s = malloc(sizeof *s * (size_t)holders);
    uint64_t *scratch = malloc(sizeof *scratch * (size_t)t);
    if (!b || !s || !scratch) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "secagg client: out of memory");
    if (rc == SDFED_OK) rc = sdfed_shamir_split(c->seed, t, holders, random, scratch, b, err);
    if (rc == SDFED_OK) rc = sdfed_shamir_split(c->mask_seed, t, holders, random, scratch, s, err);
    for (int slot = 0; slot < holders && rc == SDFED_OK; slot++) {
        unsigned char *pair = pairs + (size_t)SDFED_SECAGG_PAIR_BYTES * slot;
        sdfed_secagg_pair_write(&b[slot], &s[slot], pair);
        if (c->holder[slot] == c->self)
            memcpy(c->pairs + (size_t)SDFED_SECAGG_PAIR_BYTES * slot, pair, SDFED_SECAGG_PAIR_BYTES);
    }
    if (b) memset(b, 0, sizeof *b * (size_t)holders);
    if (s) memset(s, 0, sizeof *s * (size_t)holders);
    free(b);
    free(s);
    free(scratch);
    if (rc) memset(pairs, 0, (size_t)SDFED_SECAGG_PAIR_BYTES * (size_t)holders);
    return verdict(c, rc);
}

int sdfed_secagg_client_recipient(const sdfed_secagg_client *c, int slot) {
    if (!c->holder || slot < 0 || slot >= c->holders || c->holder[slot] == c->self) return 0;
    return memcmp(c->keys + 64 * (size_t)slot + 32, ZERO_KEY, 32) != 0;
}

int sdfed_secagg_client_write_shares(sdfed_secagg_client *c, const unsigned char *sealed, sdfed_buffer *out,
                                     sdfed_error *err) {
    int rc = out_of_order(c, SDFED_SECAGG_SHARE, err);
    if (rc == SDFED_OK && !c->holder)
        rc = sdfed_fail(err, SDFED_SECAGG_WRONG_STAGE, "secagg client: shares before its share_request");
    if (rc) return rc;
    int *to = malloc(sizeof *to * (size_t)c->holders), count = 0;
    if (!to) return verdict(c, sdfed_fail(err, SDFED_ERR_NOMEM, "secagg client: out of memory"));
    for (int slot = 0; slot < c->holders; slot++)
        if (sdfed_secagg_client_recipient(c, slot)) to[count++] = c->holder[slot];
    rc = sdfed_secagg_write_relayed(out, SDFED_SECAGG_MSG_SHARES, c->round, count, to, sealed, err);
    free(to);
    if (rc == SDFED_OK) c->stage = SDFED_SECAGG_MASKED;
    return verdict(c, rc);
}

/* slot of client j among its holders, -1 when none */
static int slot_of(const sdfed_secagg_client *c, int j) {
    for (int s = 0; s < c->holders; s++)
        if (c->holder[s] == j) return s;
    return -1;
}

int sdfed_secagg_client_relayed(sdfed_secagg_client *c, const unsigned char *request, size_t len,
                                sdfed_secagg_list *relayed, int *slots, sdfed_error *err) {
    int rc = out_of_order(c, SDFED_SECAGG_MASKED, err);
    if (rc) return rc;
    rc = sdfed_secagg_read_relayed(request, len, SDFED_SECAGG_MSG_MASKED_REQUEST, c->round, c->holders - 1, relayed,
                                   err);
    for (int i = 0; i < relayed->count && rc == SDFED_OK; i++) {
        const unsigned char *e = relayed->entries + (size_t)SDFED_SECAGG_RELAYED_BYTES * i;
        int j = (int)sdfed_secagg_be32(e), slot = slot_of(c, j);
        slots[i] = slot;
        if (slot < 0 || !sdfed_secagg_client_recipient(c, slot))
            rc = sdfed_fail(err, SDFED_SECAGG_NOT_NEIGHBOUR,
                            "secagg masked_request: a pair from client %d, not an advertised neighbour", j);
        for (int r = 0; r < i && rc == SDFED_OK; r++)
            if (slots[r] == slot)
                rc = sdfed_fail(err, SDFED_SECAGG_REPEATED, "secagg masked_request: client %d's pair twice", j);
    }
    return verdict(c, rc);
}

int sdfed_secagg_client_keep_pair(sdfed_secagg_client *c, int slot, const unsigned char pair[SDFED_SECAGG_PAIR_BYTES],
                                  sdfed_error *err) {
    int rc = out_of_order(c, SDFED_SECAGG_MASKED, err);
    if (rc) return rc;
    if (!sdfed_secagg_client_recipient(c, slot) || c->masked_with[slot] || c->have_input)
        return verdict(
            c, sdfed_fail(err, SDFED_ERR_ARG, "secagg client: a pair kept for slot %d, which takes none", slot));
    memcpy(c->pairs + (size_t)SDFED_SECAGG_PAIR_BYTES * slot, pair, SDFED_SECAGG_PAIR_BYTES);
    c->masked_with[slot] = 1;
    return SDFED_OK;
}

int sdfed_secagg_client_input(sdfed_secagg_client *c, const float *x, const float *g, int64_t samples,
                              const sdfed_secagg_bytes *rounding, const sdfed_secagg_bytes *noise, sdfed_error *err) {
    int rc = out_of_order(c, SDFED_SECAGG_MASKED, err);
    if (rc == SDFED_OK && c->have_input)
        rc = sdfed_fail(err, SDFED_SECAGG_WRONG_STAGE, "secagg client: its input made twice");
    if (rc) return rc;
    rc = sdfed_secagg_input(&c->plan, x, g, samples, rounding, noise, c->input, err);
    if (rc == SDFED_OK) {
        memcpy(c->masked, c->input, sizeof *c->masked * (c->plan.dims + 1));
        c->have_input = 1;
    }
    return verdict(c, rc);
}

int sdfed_secagg_client_masks_with(const sdfed_secagg_client *c, int slot) {
    if (!c->holder || slot < 0 || slot >= c->holders) return 0;
    return c->holder[slot] == c->self || c->masked_with[slot];
}

int sdfed_secagg_client_add_mask(sdfed_secagg_client *c, int slot, const unsigned char *stream, size_t stream_bytes,
                                 sdfed_error *err) {
    int rc = out_of_order(c, SDFED_SECAGG_MASKED, err);
    if (rc) return rc;
    if (!c->have_input || !sdfed_secagg_client_masks_with(c, slot) || c->added[slot])
        return verdict(c, sdfed_fail(err, SDFED_ERR_ARG, "secagg client: a mask for slot %d, which %s", slot,
                                     !c->have_input ? "comes before the input" : "takes none now"));
    int j = c->holder[slot], sign = j == c->self ? 1 : sdfed_secagg_pair_sign(c->self, j);
    rc = sdfed_secagg_ring_add_stream(c->plan.ring.ring_bits, c->masked, c->plan.dims + 1, stream, stream_bytes, sign,
                                      err);
    if (rc == SDFED_OK) c->added[slot] = 1;
    return verdict(c, rc);
}

int sdfed_secagg_client_write_masked(sdfed_secagg_client *c, sdfed_buffer *out, sdfed_error *err) {
    int rc = out_of_order(c, SDFED_SECAGG_MASKED, err);
    if (rc) return rc;
    for (int slot = 0; slot < c->holders; slot++)
        if (sdfed_secagg_client_masks_with(c, slot) && !c->added[slot])
            return verdict(
                c, sdfed_fail(err, SDFED_ERR_ARG, "secagg client: client %d's mask is not added", c->holder[slot]));
    if (!c->have_input) return verdict(c, sdfed_fail(err, SDFED_ERR_ARG, "secagg client: no input made"));
    rc = sdfed_secagg_write_masked(out, c->round, c->plan.ring.ring_bits, c->masked, c->plan.dims + 1, err);
    if (rc == SDFED_OK) c->stage = SDFED_SECAGG_UNMASK;
    return verdict(c, rc);
}

/* n clients from a request's list (4 bytes each) */
static void clients_of(const sdfed_secagg_list *l, int *out) {
    for (int i = 0; i < l->count; i++) out[i] = (int)sdfed_secagg_be32(l->entries + 4 * (size_t)i);
}

int sdfed_secagg_client_unmask(sdfed_secagg_client *c, const unsigned char *request, size_t len, sdfed_buffer *out,
                               sdfed_error *err) {
    int rc = out_of_order(c, SDFED_SECAGG_UNMASK, err);
    if (rc) return rc;
    sdfed_secagg_unmask_request q;
    rc = sdfed_secagg_read_unmask_request(request, len, c->round, c->holders, &q, err);
    if (rc) return verdict(c, rc);
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
    free(alive);
    free(dropped);
    free(owners);
    free(reply);
    free(which);
    free(shares);
    if (rc == SDFED_OK) c->stage = SDFED_SECAGG_DONE;
    return verdict(c, rc);
}
