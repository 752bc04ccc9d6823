/* A client's side of one secure round on the host (see secagg_client.h):
 * the core's client steps with OpenSSL's cryptography between them. */
#include "native/secagg_client.h"

#include <stdlib.h>
#include <string.h>

#include "fed/secagg_layout.h"
#include "fed/secagg_ring.h"
#include "native/crypto.h"
#include "native/secagg_keys.h"

/* the agreements kept from the share stage, wiped */
static void forget_agreements(native_secagg_client *c) {
    if (c->agreed) memset(c->agreed, 0, 32 * (size_t)c->agreed_slots);
    free(c->agreed);
    free(c->has_agreed);
    c->agreed = NULL;
    c->has_agreed = NULL;
    c->agreed_slots = 0;
}

/* rc, the client abandoned unless it is SDFED_OK or a step asked out of
 * order (which leaves the client as it was) */
static int verdict(native_secagg_client *c, int rc) {
    if (rc && rc != SDFED_SECAGG_WRONG_STAGE) sdfed_secagg_client_abandon(&c->core);
    return rc;
}

void native_secagg_client_free(native_secagg_client *c) {
    forget_agreements(c);
    sdfed_secagg_client_free(&c->core);
    memset(c, 0, sizeof *c);
}

/* key = the share key from sender to recipient, the agreement with slot's
 * holder made once (kept for the masked stage) */
static int share_key(native_secagg_client *c, native_x25519_key *share_sk, int slot, uint32_t sender,
                     uint32_t recipient, unsigned char key[32], sdfed_error *err) {
    sdfed_secagg_client *core = &c->core;
    const unsigned char *theirs = core->keys + 64 * (size_t)slot + 32;
    if (!c->agreed)
        return native_secagg_share_key_from(share_sk, theirs, core->session, core->round, sender, recipient, key, err);
    unsigned char *shared = c->agreed + 32 * (size_t)slot;
    int rc = SDFED_OK;
    if (!c->has_agreed[slot]) rc = native_x25519_key_agree(share_sk, theirs, shared, err);
    c->has_agreed[slot] = rc == SDFED_OK;
    return rc ? rc : native_secagg_share_key_of(shared, core->session, core->round, sender, recipient, key, err);
}

int native_secagg_client_advertise(native_secagg_client *c, const sdfed_secagg_plan *plan, int64_t round,
                                   const sdfed_secagg_bytes *secret, sdfed_buffer *out, sdfed_error *err) {
    memset(c, 0, sizeof *c);
    c->secret = *secret;
    unsigned char mask_seed[SDFED_SECAGG_SEED_BYTES], mask_pk[32], share_pk[32], seed[SDFED_SECAGG_SEED_BYTES];
    int rc = sdfed_secagg_draw(secret, mask_seed, sizeof mask_seed, err);
    if (rc == SDFED_OK) rc = sdfed_secagg_draw(secret, c->share_sk, 32, err);
    if (rc == SDFED_OK) rc = sdfed_secagg_draw(secret, seed, sizeof seed, err);
    if (rc == SDFED_OK) rc = native_secagg_mask_private(mask_seed, round, c->mask_sk, err);
    if (rc == SDFED_OK) rc = native_x25519_public(c->mask_sk, mask_pk, err);
    if (rc == SDFED_OK) rc = native_x25519_public(c->share_sk, share_pk, err);
    if (rc == SDFED_OK)
        rc = sdfed_secagg_client_start(&c->core, plan, round, mask_seed, mask_pk, share_pk, seed, out, err);
    else
        c->core.stage = SDFED_SECAGG_ABANDONED;
    memset(mask_seed, 0, sizeof mask_seed);
    memset(seed, 0, sizeof seed);
    return rc;
}

int native_secagg_client_share(native_secagg_client *c, const unsigned char *request, size_t len, sdfed_buffer *out,
                               sdfed_error *err) {
    sdfed_secagg_client *core = &c->core;
    if (core->stage != SDFED_SECAGG_SHARE) return sdfed_secagg_client_share(core, request, len, &c->secret, NULL, err);
    const int holders_most = c->core.plan.params.k + 1;
    unsigned char *pairs = malloc((size_t)SDFED_SECAGG_PAIR_BYTES * (size_t)holders_most);
    unsigned char *sealed = malloc((size_t)SDFED_SECAGG_SEALED_BYTES * (size_t)holders_most);
    int rc = pairs && sealed ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "secagg client: out of memory");
    if (rc == SDFED_OK) rc = sdfed_secagg_client_share(core, request, len, &c->secret, pairs, err);
    if (rc == SDFED_OK) {
        forget_agreements(c);
        c->agreed = malloc(32 * (size_t)core->holders);
        c->has_agreed = calloc((size_t)core->holders, 1);
        c->agreed_slots = c->agreed ? core->holders : 0;
        if (!c->agreed || !c->has_agreed) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "secagg client: out of memory");
    }
    native_x25519_key share_sk = {0}; /* set up once for its k recipients */
    if (rc == SDFED_OK) rc = native_x25519_key_open(&share_sk, c->share_sk, err);
    int count = 0;
    for (int slot = 0; slot < core->holders && rc == SDFED_OK; slot++) {
        if (!sdfed_secagg_client_recipient(core, slot)) continue;
        int h = core->holder[slot];
        unsigned char key[32];
        rc = share_key(c, &share_sk, slot, (uint32_t)core->self, (uint32_t)h, key, err);
        if (rc == SDFED_OK)
            rc = native_secagg_seal(key, core->session, core->round, (uint32_t)core->self, (uint32_t)h,
                                    pairs + (size_t)SDFED_SECAGG_PAIR_BYTES * slot,
                                    sealed + (size_t)SDFED_SECAGG_SEALED_BYTES * count, err);
        count++;
        memset(key, 0, sizeof key);
    }
    native_x25519_key_close(&share_sk);
    if (rc == SDFED_OK) rc = sdfed_secagg_client_write_shares(core, sealed, out, err);
    if (pairs) memset(pairs, 0, (size_t)SDFED_SECAGG_PAIR_BYTES * (size_t)holders_most);
    free(pairs);
    free(sealed);
    return verdict(c, rc);
}

/* every pair relayed to it opened and kept */
static int open_pairs(native_secagg_client *c, const sdfed_secagg_list *relayed, const int *slots, sdfed_error *err) {
    sdfed_secagg_client *core = &c->core;
    native_x25519_key share_sk; /* set up once for every sender */
    int rc = native_x25519_key_open(&share_sk, c->share_sk, err);
    for (int i = 0; i < relayed->count && rc == SDFED_OK; i++) {
        const unsigned char *e = relayed->entries + (size_t)SDFED_SECAGG_RELAYED_BYTES * i;
        int slot = slots[i], j = core->holder[slot];
        unsigned char key[32], pair[SDFED_SECAGG_PAIR_BYTES];
        rc = share_key(c, &share_sk, slot, (uint32_t)j, (uint32_t)core->self, key, err);
        if (rc == SDFED_OK)
            rc = native_secagg_open(key, core->session, core->round, (uint32_t)j, (uint32_t)core->self, e + 4, pair,
                                    err);
        if (rc) rc = sdfed_fail_context(err, rc, "secagg masked_request: client %d's pair", j);
        if (rc == SDFED_OK) rc = sdfed_secagg_client_keep_pair(core, slot, pair, err);
        memset(key, 0, sizeof key);
        memset(pair, 0, sizeof pair);
    }
    native_x25519_key_close(&share_sk);
    return rc;
}

int native_secagg_client_mask(native_secagg_client *c, const unsigned char *request, size_t len, const float *x,
                              const float *g, int64_t samples, const sdfed_secagg_bytes *rounding,
                              const sdfed_secagg_bytes *noise, sdfed_buffer *out, sdfed_error *err) {
    sdfed_secagg_client *core = &c->core;
    sdfed_secagg_list relayed;
    int *slots = malloc(sizeof *slots * (size_t)(core->holders > 0 ? core->holders : 1));
    if (!slots) return sdfed_fail(err, SDFED_ERR_NOMEM, "secagg client: out of memory");
    int rc = sdfed_secagg_client_relayed(core, request, len, &relayed, slots, err);
    if (rc == SDFED_OK) rc = open_pairs(c, &relayed, slots, err);
    if (rc == SDFED_OK) forget_agreements(c); /* every pair it will open is open (else they go at free) */
    free(slots);
    if (rc == SDFED_OK) rc = sdfed_secagg_client_input(core, x, g, samples, rounding, noise, err);
    const size_t values = core->plan.dims + 1;
    const int bits = core->plan.ring.ring_bits;
    size_t bytes = sdfed_secagg_stream_bytes(bits, values);
    unsigned char *stream = rc == SDFED_OK ? malloc(bytes) : NULL;
    if (rc == SDFED_OK && !stream) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "secagg client: out of memory");
    native_x25519_key mask_sk = {0}; /* set up once for every neighbour */
    if (rc == SDFED_OK) rc = native_x25519_key_open(&mask_sk, c->mask_sk, err);
    for (int slot = 0; slot < core->holders && rc == SDFED_OK; slot++) {
        if (!sdfed_secagg_client_masks_with(core, slot)) continue;
        int j = core->holder[slot];
        unsigned char key[32];
        rc = j == core->self ? native_secagg_self_key(core->seed, core->session, core->round, (uint32_t)j, key, err)
                             : native_secagg_pair_key_from(&mask_sk, core->keys + 64 * (size_t)slot, core->session,
                                                           core->round, (uint32_t)core->self, (uint32_t)j, key, err);
        if (rc == SDFED_OK) rc = native_secagg_mask_stream(key, stream, bytes, err);
        if (rc == SDFED_OK) rc = sdfed_secagg_client_add_mask(core, slot, stream, bytes, err);
        memset(key, 0, sizeof key);
    }
    native_x25519_key_close(&mask_sk);
    free(stream);
    if (rc == SDFED_OK) rc = sdfed_secagg_client_write_masked(core, out, err);
    return verdict(c, rc);
}

int native_secagg_client_unmask(native_secagg_client *c, const unsigned char *request, size_t len, sdfed_buffer *out,
                                sdfed_error *err) {
    return sdfed_secagg_client_unmask(&c->core, request, len, out, err);
}
