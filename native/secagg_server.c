/* The server's side of one secure round on the host (see secagg_server.h). */
#include "native/secagg_server.h"

#include <stdlib.h>
#include <string.h>

#include "fed/secagg_layout.h"
#include "fed/secagg_message.h"
#include "base/rng.h"
#include "native/crypto.h"
#include "native/secagg_keys.h"

static const unsigned char ZERO_KEY[32];

static uint64_t load64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* the first slot of a key's probe sequence: salted, so that no client can
 * choose keys that fall together */
static size_t key_slot(const native_secagg_server *s, const unsigned char *key) {
    return (size_t)sdfed_rng_mix64(load64(key) ^ s->key_salt ^ sdfed_rng_mix64(load64(key + 8))) & (s->key_slots - 1);
}

static const unsigned char *indexed_key(const native_secagg_server *s, uint32_t entry) {
    const unsigned char *keys = (entry - 1) & 1 ? s->share_keys : s->mask_keys;
    return keys + 32 * (size_t)((entry - 1) >> 1);
}

/* client's mask key (which 0) or share key (1), as stored, into the index */
static void index_key(native_secagg_server *s, int client, int which) {
    const uint32_t entry = 2 * (uint32_t)client + (uint32_t)which + 1;
    size_t i = key_slot(s, indexed_key(s, entry));
    while (s->key_index[i]) i = (i + 1) & (s->key_slots - 1);
    s->key_index[i] = entry;
}

void native_secagg_server_free(native_secagg_server *s) {
    sdfed_arena_free(&s->arena);
    memset(s, 0, sizeof *s);
}

int native_secagg_server_start(native_secagg_server *s, const sdfed_secagg_plan *plan, int64_t round,
                               const unsigned char graph_key[32], sdfed_error *err) {
    memset(s, 0, sizeof *s);
    s->plan = *plan;
    s->round = round;
    sdfed_arena_init(&s->arena);
    native_crypto_stream stream;
    int rc = native_crypto_stream_open(&stream, graph_key, err);
    if (rc) return rc;
    sdfed_secagg_bytes shuffle = native_crypto_stream_source(&stream);
    rc = sdfed_secagg_graph_make(&s->graph, &plan->params, &shuffle, &s->arena, err);
    native_crypto_stream_close(&stream);
    if (rc == SDFED_OK) rc = sdfed_secagg_server_start(&s->stages, round, &plan->params, &s->graph, &s->arena, err);
    if (rc) return rc;
    const size_t n = (size_t)plan->params.n, h = (size_t)plan->params.k + 1;
    s->mask_keys = sdfed_arena_alloc(&s->arena, 32 * n);
    s->share_keys = sdfed_arena_alloc(&s->arena, 32 * n);
    s->relay = sdfed_arena_alloc(&s->arena, SDFED_SECAGG_SEALED_BYTES * n * h);
    s->relayed = sdfed_arena_alloc(&s->arena, n * h);
    s->sum = sdfed_arena_alloc(&s->arena, sizeof *s->sum * (plan->dims + 1));
    s->shares = sdfed_arena_alloc(&s->arena, sizeof *s->shares * n * h);
    s->n_shares = sdfed_arena_alloc(&s->arena, sizeof *s->n_shares * n);
    for (s->key_slots = 8; s->key_slots < 4 * n; s->key_slots *= 2) {
    }
    s->key_index = sdfed_arena_alloc(&s->arena, sizeof *s->key_index * s->key_slots);
    s->key_salt = sdfed_rng_mix64(load64(graph_key + 24));
    if (!s->mask_keys || !s->share_keys || !s->relay || !s->relayed || !s->sum || !s->shares || !s->n_shares ||
        !s->key_index)
        return sdfed_fail(err, SDFED_ERR_NOMEM, "secagg round %lld: out of memory", (long long)round);
    memset(s->mask_keys, 0, 32 * n);
    memset(s->share_keys, 0, 32 * n);
    memset(s->relayed, 0, n * h);
    memset(s->sum, 0, sizeof *s->sum * (plan->dims + 1));
    memset(s->n_shares, 0, sizeof *s->n_shares * n);
    memset(s->key_index, 0, sizeof *s->key_index * s->key_slots);
    return SDFED_OK;
}

/* the key is all zeros, or one already advertised in the round */
static int bad_key(const native_secagg_server *s, const unsigned char *key) {
    if (!memcmp(key, ZERO_KEY, 32)) return 1;
    for (size_t i = key_slot(s, key); s->key_index[i]; i = (i + 1) & (s->key_slots - 1))
        if (!memcmp(indexed_key(s, s->key_index[i]), key, 32)) return 1;
    return 0;
}

static int check_advertise(const native_secagg_server *s, int client, const unsigned char *msg, size_t len,
                           sdfed_error *err) {
    const unsigned char *mask, *share;
    int rc = sdfed_secagg_read_advertise(msg, len, s->round, &mask, &share, err);
    if (rc) return rc;
    if (bad_key(s, mask) || bad_key(s, share) || !memcmp(mask, share, 32))
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "secagg advertise: client %d's keys are all zeros or already advertised in round %lld",
                          client, (long long)s->round);
    return SDFED_OK;
}

/* whether client j advertised (its keys are in) */
static int advertised(const native_secagg_server *s, int j) {
    return sdfed_secagg_server_completed(&s->stages, j, SDFED_SECAGG_ADVERTISE);
}

/* exactly one sealed pair for each of the client's holders that advertised, itself left out */
static int check_shares(const native_secagg_server *s, int client, const sdfed_secagg_list *l, sdfed_error *err) {
    const int h = s->plan.params.k + 1;
    int expected = 0;
    for (int slot = 0; slot < h; slot++) {
        int j = sdfed_secagg_graph_holder(&s->graph, client, slot);
        expected += j != client && advertised(s, j);
    }
    for (int i = 0; i < l->count; i++) {
        int j = (int)sdfed_secagg_be32(l->entries + (size_t)SDFED_SECAGG_RELAYED_BYTES * i);
        if (j == client || sdfed_secagg_graph_slot(&s->graph, client, j) < 0 || !advertised(s, j))
            return sdfed_fail(err, SDFED_SECAGG_NOT_NEIGHBOUR,
                              "secagg shares: client %d sealed a pair for %d, not a neighbour that advertised", client,
                              j);
        for (int r = 0; r < i; r++)
            if ((int)sdfed_secagg_be32(l->entries + (size_t)SDFED_SECAGG_RELAYED_BYTES * r) == j)
                return sdfed_fail(err, SDFED_SECAGG_REPEATED, "secagg shares: client %d sealed two pairs for %d",
                                  client, j);
    }
    if (l->count != expected)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "secagg shares: client %d sealed %d pairs; its neighbours that advertised are %d", client,
                          l->count, expected);
    return SDFED_OK;
}

/* exactly the shares the request named: the seed's of each holder alive, the key's of each dropped */
static int check_unmask(const native_secagg_server *s, int client, const sdfed_secagg_list *l,
                        sdfed_shamir_share *shares, sdfed_error *err) {
    int expected = 0;
    for (int slot = 0; slot <= s->plan.params.k; slot++)
        expected += sdfed_secagg_server_needs(&s->stages, sdfed_secagg_graph_holder(&s->graph, client, slot)) != 0;
    for (int i = 0; i < l->count; i++) {
        const unsigned char *e = l->entries + (size_t)SDFED_SECAGG_ANSWER_BYTES * i;
        int owner = (int)sdfed_secagg_be32(e), slot = sdfed_secagg_graph_slot(&s->graph, owner, client);
        if (owner >= s->plan.params.n || slot < 0)
            return sdfed_fail(err, SDFED_SECAGG_NOT_NEIGHBOUR, "secagg unmask: client %d answered for %d, not a holder",
                              client, owner);
        if (e[4] != sdfed_secagg_server_needs(&s->stages, owner))
            return sdfed_fail(err, SDFED_SECAGG_INCONSISTENT,
                              "secagg unmask: client %d sent the share of %d's %s, which was not asked for", client,
                              owner, e[4] == SDFED_SECAGG_SELF_SEED ? "seed" : "mask seed");
        for (int r = 0; r < i; r++)
            if ((int)sdfed_secagg_be32(l->entries + (size_t)SDFED_SECAGG_ANSWER_BYTES * r) == owner)
                return sdfed_fail(err, SDFED_SECAGG_REPEATED, "secagg unmask: client %d answered for %d twice", client,
                                  owner);
        int rc = sdfed_shamir_share_read(e + 5, (uint32_t)slot + 1, &shares[i], err);
        if (rc)
            return sdfed_fail_context(err, SDFED_ERR_FORMAT, "secagg unmask: client %d's share of %d", client, owner);
    }
    if (l->count != expected)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg unmask: client %d sent %d shares; it was asked for %d", client,
                          l->count, expected);
    return SDFED_OK;
}

int native_secagg_server_stage_of(int kind) {
    switch (kind) {
    case SDFED_SECAGG_MSG_ADVERTISE: return SDFED_SECAGG_ADVERTISE;
    case SDFED_SECAGG_MSG_SHARES: return SDFED_SECAGG_SHARE;
    case SDFED_SECAGG_MSG_MASKED: return SDFED_SECAGG_MASKED;
    case SDFED_SECAGG_MSG_UNMASK: return SDFED_SECAGG_UNMASK;
    default: return -1;
    }
}

int native_secagg_server_receive(native_secagg_server *s, int client, const unsigned char *msg, size_t len,
                                 sdfed_error *err) {
    const int n = s->plan.params.n, h = s->plan.params.k + 1, kind = sdfed_secagg_msg_kind_of(msg, len);
    const int stage = native_secagg_server_stage_of(kind);
    if (stage < 0)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg: client %d sent a message of kind %d, not a client's", client,
                          kind);
    if ((int)s->stages.stage != stage)
        return sdfed_fail(err, SDFED_SECAGG_WRONG_STAGE, "secagg round %lld is at its %s stage, not %s",
                          (long long)s->round, sdfed_secagg_stage_name(s->stages.stage), sdfed_secagg_msg_name(kind));
    if (client < 0 || client >= n)
        return sdfed_fail(err, SDFED_SECAGG_NOT_IN_ROUND, "client %d is not in secagg round %lld", client,
                          (long long)s->round);
    /* the content, checked before anything changes */
    sdfed_secagg_list list = {0};
    uint64_t *values = NULL;
    sdfed_shamir_share *shares = NULL;
    int rc = SDFED_OK;
    if (kind == SDFED_SECAGG_MSG_ADVERTISE) {
        rc = check_advertise(s, client, msg, len, err);
    } else if (kind == SDFED_SECAGG_MSG_SHARES) {
        rc = sdfed_secagg_read_relayed(msg, len, kind, s->round, h - 1, &list, err);
        if (rc == SDFED_OK) rc = check_shares(s, client, &list, err);
    } else if (kind == SDFED_SECAGG_MSG_MASKED) {
        values = malloc(sizeof *values * (s->plan.dims + 1));
        rc = values
                 ? sdfed_secagg_read_masked(msg, len, s->round, s->plan.ring.ring_bits, values, s->plan.dims + 1, err)
                 : sdfed_fail(err, SDFED_ERR_NOMEM, "secagg: out of memory");
    } else {
        rc = sdfed_secagg_read_unmask(msg, len, s->round, h, &list, err);
        if (rc == SDFED_OK) shares = malloc(sizeof *shares * (size_t)(list.count > 0 ? list.count : 1));
        if (rc == SDFED_OK && !shares) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "secagg: out of memory");
        if (rc == SDFED_OK) rc = check_unmask(s, client, &list, shares, err);
    }
    /* the stage machine: not gone, the stage before completed, not twice */
    if (rc == SDFED_OK) rc = sdfed_secagg_server_receive(&s->stages, client, (sdfed_secagg_stage)stage, err);
    if (rc == SDFED_OK && kind == SDFED_SECAGG_MSG_ADVERTISE) {
        memcpy(s->mask_keys + 32 * (size_t)client, msg + SDFED_SECAGG_MSG_HEADER, 32);
        memcpy(s->share_keys + 32 * (size_t)client, msg + SDFED_SECAGG_MSG_HEADER + 32, 32);
        index_key(s, client, 0);
        index_key(s, client, 1);
    } else if (rc == SDFED_OK && kind == SDFED_SECAGG_MSG_SHARES) {
        for (int i = 0; i < list.count; i++) {
            const unsigned char *e = list.entries + (size_t)SDFED_SECAGG_RELAYED_BYTES * i;
            int j = (int)sdfed_secagg_be32(e), slot = sdfed_secagg_graph_slot(&s->graph, j, client);
            size_t at = (size_t)j * (size_t)h + (size_t)slot;
            memcpy(s->relay + SDFED_SECAGG_SEALED_BYTES * at, e + 4, SDFED_SECAGG_SEALED_BYTES);
            s->relayed[at] = 1;
        }
    } else if (rc == SDFED_OK && kind == SDFED_SECAGG_MSG_MASKED) {
        sdfed_secagg_ring_add(s->plan.ring.ring_bits, s->sum, values, s->plan.dims + 1);
    } else if (rc == SDFED_OK) {
        for (int i = 0; i < list.count; i++) {
            int owner = (int)sdfed_secagg_be32(list.entries + (size_t)SDFED_SECAGG_ANSWER_BYTES * i);
            s->shares[(size_t)owner * (size_t)h + (size_t)s->n_shares[owner]++] = shares[i];
        }
    }
    free(values);
    free(shares);
    return rc;
}

int native_secagg_server_leave(native_secagg_server *s, int client, sdfed_error *err) {
    return sdfed_secagg_server_leave(&s->stages, client, err);
}

sdfed_secagg_verdict native_secagg_server_check(const native_secagg_server *s, int deadline_passed) {
    return sdfed_secagg_server_check(&s->stages, deadline_passed);
}

int native_secagg_server_advance(native_secagg_server *s, sdfed_error *err) {
    const int n = s->plan.params.n;
    int rc = SDFED_OK;
    if (s->stages.stage == SDFED_SECAGG_ADVERTISE) { /* the session id over the keys advertised */
        unsigned char *flags = malloc((size_t)n), *scratch = malloc(64 * (size_t)n);
        if (!flags || !scratch) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "secagg: out of memory");
        for (int i = 0; i < n && rc == SDFED_OK; i++) flags[i] = (unsigned char)advertised(s, i);
        if (rc == SDFED_OK)
            rc = native_secagg_session_id(s->round, n, s->mask_keys, s->share_keys, flags, scratch, s->session, err);
        free(flags);
        free(scratch);
    }
    return rc ? rc : sdfed_secagg_server_advance(&s->stages, err);
}

int native_secagg_server_request(const native_secagg_server *s, int client, sdfed_buffer *out, sdfed_error *err) {
    const sdfed_secagg_params *p = &s->plan.params;
    const int h = p->k + 1;
    if (client < 0 || client >= p->n || sdfed_secagg_server_gone(&s->stages, client))
        return sdfed_fail(err, SDFED_SECAGG_NOT_IN_ROUND, "client %d is not in secagg round %lld", client,
                          (long long)s->round);
    int *clients = malloc(sizeof *clients * (size_t)h * 2);
    unsigned char *bytes = malloc((size_t)SDFED_SECAGG_SEALED_BYTES * (size_t)h);
    int rc = clients && bytes ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "secagg: out of memory");
    if (rc == SDFED_OK && s->stages.stage == SDFED_SECAGG_SHARE) {
        if (!advertised(s, client))
            rc = sdfed_fail(err, SDFED_SECAGG_MISSED_STAGE, "client %d did not advertise keys", client);
        _Static_assert(SDFED_SECAGG_SEALED_BYTES >= 64, "a holder's two keys fit in a sealed pair's room");
        for (int slot = 0; slot < h && rc == SDFED_OK; slot++) {
            int j = sdfed_secagg_graph_holder(&s->graph, client, slot);
            clients[slot] = j;
            memcpy(bytes + 64 * (size_t)slot, s->mask_keys + 32 * (size_t)j, 32);
            memcpy(bytes + 64 * (size_t)slot + 32, s->share_keys + 32 * (size_t)j, 32);
        }
        if (rc == SDFED_OK)
            rc = sdfed_secagg_write_share_request(out, s->round, p->n, client, p->k, p->t, p->min_inputs, s->session,
                                                  clients, bytes, err);
    } else if (rc == SDFED_OK && s->stages.stage == SDFED_SECAGG_MASKED) {
        int count = 0;
        if (!sdfed_secagg_server_completed(&s->stages, client, SDFED_SECAGG_SHARE))
            rc = sdfed_fail(err, SDFED_SECAGG_MISSED_STAGE, "client %d did not share its keys", client);
        for (int slot = 0; slot < h && rc == SDFED_OK; slot++) {
            size_t at = (size_t)client * (size_t)h + (size_t)slot;
            if (!s->relayed[at]) continue;
            clients[count] = sdfed_secagg_graph_holder(&s->graph, client, slot);
            memcpy(bytes + (size_t)SDFED_SECAGG_SEALED_BYTES * count++, s->relay + SDFED_SECAGG_SEALED_BYTES * at,
                   SDFED_SECAGG_SEALED_BYTES);
        }
        if (rc == SDFED_OK)
            rc = sdfed_secagg_write_relayed(out, SDFED_SECAGG_MSG_MASKED_REQUEST, s->round, count, clients, bytes, err);
    } else if (rc == SDFED_OK && s->stages.stage == SDFED_SECAGG_UNMASK) {
        int n_alive = 0, n_dropped = 0, inputs = 0;
        rc = sdfed_secagg_server_request(&s->stages, client, clients, &n_alive, clients + h, &n_dropped, err);
        for (int i = 0; i < p->n; i++) inputs += sdfed_secagg_server_completed(&s->stages, i, SDFED_SECAGG_MASKED);
        if (rc == SDFED_OK)
            rc =
                sdfed_secagg_write_unmask_request(out, s->round, inputs, clients, n_alive, clients + h, n_dropped, err);
    } else if (rc == SDFED_OK) {
        rc = sdfed_fail(err, SDFED_SECAGG_WRONG_STAGE, "secagg round %lld sends no request at its %s stage",
                        (long long)s->round, sdfed_secagg_stage_name(s->stages.stage));
    }
    free(clients);
    free(bytes);
    return rc;
}
