/* Secure aggregation's keys, sealed share pairs and mask streams on the
 * host (see secagg_keys.h). */
#include "native/secagg_keys.h"

#include <stdlib.h>
#include <string.h>

#include "fed/secagg_ring.h"
#include "native/crypto.h"

/* the 12-byte nonce of every sealed pair (one message a key) */
static const unsigned char ZERO_NONCE[SDFED_SECAGG_NONCE_BYTES];

/* key = HKDF-SHA256(ikm (ikm_len), no salt, info(purpose, ...)) */
static int derive(const unsigned char *ikm, size_t ikm_len, int purpose, const unsigned char session[32], int64_t round,
                  uint32_t a, uint32_t b, unsigned char key[32], sdfed_error *err) {
    unsigned char info[SDFED_SECAGG_INFO_BYTES];
    int rc = sdfed_secagg_info(purpose, session, round, a, b, info, err);
    return rc ? rc : native_hkdf_sha256(ikm, ikm_len, NULL, 0, info, sizeof info, key, 32, err);
}

int native_secagg_session_id(int64_t round, int n, const unsigned char *mask_keys, const unsigned char *share_keys,
                             const unsigned char *advertised, unsigned char *scratch, unsigned char session[32],
                             sdfed_error *err) {
    unsigned char *input = malloc(SDFED_SECAGG_SESSION_INPUT_BYTES(n > 0 ? n : 0)); /* n < 1: the layout refuses */
    if (!input) return sdfed_fail(err, SDFED_ERR_NOMEM, "secagg session id: out of memory");
    size_t bytes;
    int rc = sdfed_secagg_session_input(round, n, mask_keys, share_keys, advertised, scratch, input, &bytes, err);
    if (rc == SDFED_OK) rc = native_sha256(input, bytes, session, err);
    free(input);
    return rc;
}

int native_secagg_share_key_of(const unsigned char shared[32], const unsigned char session[32], int64_t round,
                               uint32_t sender, uint32_t recipient, unsigned char key[32], sdfed_error *err) {
    return derive(shared, 32, SDFED_SECAGG_PURPOSE_SHARE, session, round, sender, recipient, key, err);
}

int native_secagg_share_key_from(native_x25519_key *mine, const unsigned char theirs[32],
                                 const unsigned char session[32], int64_t round, uint32_t sender, uint32_t recipient,
                                 unsigned char key[32], sdfed_error *err) {
    unsigned char shared[32];
    int rc = native_x25519_key_agree(mine, theirs, shared, err);
    if (!rc) rc = native_secagg_share_key_of(shared, session, round, sender, recipient, key, err);
    memset(shared, 0, sizeof shared);
    return rc;
}

int native_secagg_pair_key_from(native_x25519_key *mine, const unsigned char theirs[32],
                                const unsigned char session[32], int64_t round, uint32_t i, uint32_t j,
                                unsigned char key[32], sdfed_error *err) {
    if (i == j) return sdfed_fail(err, SDFED_ERR_ARG, "secagg: a pair key of client %u with itself", i);
    unsigned char shared[32];
    int rc = native_x25519_key_agree(mine, theirs, shared, err);
    if (!rc)
        rc = derive(shared, sizeof shared, SDFED_SECAGG_PURPOSE_PAIR, session, round, i < j ? i : j, i < j ? j : i, key,
                    err);
    memset(shared, 0, sizeof shared);
    return rc;
}

int native_secagg_share_key(const unsigned char mine[32], const unsigned char theirs[32],
                            const unsigned char session[32], int64_t round, uint32_t sender, uint32_t recipient,
                            unsigned char key[32], sdfed_error *err) {
    native_x25519_key k;
    int rc = native_x25519_key_open(&k, mine, err);
    if (rc == SDFED_OK) rc = native_secagg_share_key_from(&k, theirs, session, round, sender, recipient, key, err);
    native_x25519_key_close(&k);
    return rc;
}

int native_secagg_pair_key(const unsigned char mine[32], const unsigned char theirs[32],
                           const unsigned char session[32], int64_t round, uint32_t i, uint32_t j,
                           unsigned char key[32], sdfed_error *err) {
    native_x25519_key k;
    int rc = native_x25519_key_open(&k, mine, err);
    if (rc == SDFED_OK) rc = native_secagg_pair_key_from(&k, theirs, session, round, i, j, key, err);
    native_x25519_key_close(&k);
    return rc;
}

int native_secagg_self_key(const unsigned char seed[SDFED_SECAGG_SEED_BYTES], const unsigned char session[32],
                           int64_t round, uint32_t i, unsigned char key[32], sdfed_error *err) {
    return derive(seed, SDFED_SECAGG_SEED_BYTES, SDFED_SECAGG_PURPOSE_SELF, session, round, i, i, key, err);
}

int native_secagg_mask_private(const unsigned char mask_seed[SDFED_SECAGG_SEED_BYTES], int64_t round,
                               unsigned char mask_sk[32], sdfed_error *err) {
    static const unsigned char no_session[SDFED_SECAGG_SESSION_BYTES];
    return derive(mask_seed, SDFED_SECAGG_SEED_BYTES, SDFED_SECAGG_PURPOSE_MASK_KEY, no_session, round, 0, 0, mask_sk,
                  err);
}

int native_secagg_seal(const unsigned char key[32], const unsigned char session[32], int64_t round, uint32_t sender,
                       uint32_t recipient, const unsigned char pair[SDFED_SECAGG_PAIR_BYTES],
                       unsigned char sealed[SDFED_SECAGG_SEALED_BYTES], sdfed_error *err) {
    unsigned char aad[SDFED_SECAGG_INFO_BYTES];
    int rc = sdfed_secagg_info(SDFED_SECAGG_PURPOSE_SHARE, session, round, sender, recipient, aad, err);
    if (rc) return rc;
    return native_aes256gcm_seal(key, ZERO_NONCE, aad, sizeof aad, pair, SDFED_SECAGG_PAIR_BYTES, sealed,
                                 sealed + SDFED_SECAGG_PAIR_BYTES, err);
}

int native_secagg_open(const unsigned char key[32], const unsigned char session[32], int64_t round, uint32_t sender,
                       uint32_t recipient, const unsigned char sealed[SDFED_SECAGG_SEALED_BYTES],
                       unsigned char pair[SDFED_SECAGG_PAIR_BYTES], sdfed_error *err) {
    unsigned char aad[SDFED_SECAGG_INFO_BYTES];
    int rc = sdfed_secagg_info(SDFED_SECAGG_PURPOSE_SHARE, session, round, sender, recipient, aad, err);
    if (rc) return rc;
    return native_aes256gcm_open(key, ZERO_NONCE, aad, sizeof aad, sealed, SDFED_SECAGG_PAIR_BYTES,
                                 sealed + SDFED_SECAGG_PAIR_BYTES, pair, err);
}

int native_secagg_mask_stream(const unsigned char key[32], unsigned char *out, size_t bytes, sdfed_error *err) {
    static const unsigned char zero_iv[16];
    return native_aes_ctr(key, 32, zero_iv, NULL, out, bytes, err);
}

int native_secagg_add_mask(const unsigned char key[32], int ring_bits, uint64_t *v, size_t len, int sign,
                           sdfed_error *err) {
    size_t bytes = sdfed_secagg_stream_bytes(ring_bits, len);
    unsigned char *stream = malloc(bytes ? bytes : 1);
    if (!stream) return sdfed_fail(err, SDFED_ERR_NOMEM, "secagg: out of memory for a mask of %zu values", len);
    int rc = native_secagg_mask_stream(key, stream, bytes, err);
    if (rc == SDFED_OK) rc = sdfed_secagg_ring_add_stream(ring_bits, v, len, stream, bytes, sign, err);
    free(stream);
    return rc;
}
