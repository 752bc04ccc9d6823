/* Secure aggregation's keys and masks on the host: the primitives of
 * native/crypto.h put together by the byte layouts of
 * shared/fed/secagg_layout.h, as the page does with WebCrypto. A client (or
 * the simulator, or the server reconstructing a dropped client's masks)
 * calls these; tests/vectors/secagg-v2.txt pins their outputs.
 *
 *   session id SHA-256 of the round's keys as the layout lays them out
 *   share key  HKDF-SHA256(X25519(my share key, their share public key),
 *              salt empty, info(0x02, session, round, sender, recipient)):
 *              the AES-256-GCM key for the sender's pair to the recipient
 *   pair key   HKDF-SHA256(X25519(my mask key, their mask public key), salt
 *              empty, info(0x03, session, round, min(i, j), max(i, j)))
 *   self key   HKDF-SHA256(b_i, salt empty, info(0x04, session, round, i, i))
 *   mask key   HKDF-SHA256(mask seed, salt empty, info(0x05, zeros, round,
 *              0, 0)): the X25519 mask private key
 *   sealed     AES-256-GCM(share key, nonce of zeros, aad = the share key's
 *              info) of the 48-byte pair || tag (16)
 *   mask       AES-256-CTR keystream of a pair or self key from counter 0,
 *              read as ring elements (fed/secagg_ring.h) */
#ifndef SDFED_NATIVE_SECAGG_KEYS_H
#define SDFED_NATIVE_SECAGG_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "fed/secagg_layout.h"
#include "native/crypto.h"

/* session (32) = the round's session id over the n clients' keys, those
 * with advertised[i] set (sdfed_secagg_session_input's bytes and refusals;
 * scratch holds 64 n bytes). */
int native_secagg_session_id(int64_t round, int n, const unsigned char *mask_keys, const unsigned char *share_keys,
                             const unsigned char *advertised, unsigned char *scratch, unsigned char session[32],
                             sdfed_error *err);
/* key (32) = the share key from sender to recipient; mine is the caller's
 * share private key (sender's or recipient's), theirs the other's public. */
int native_secagg_share_key(const unsigned char mine[32], const unsigned char theirs[32],
                            const unsigned char session[32], int64_t round, uint32_t sender, uint32_t recipient,
                            unsigned char key[32], sdfed_error *err);
/* key (32) = the pairwise mask key of clients i and j (i != j). */
int native_secagg_pair_key(const unsigned char mine[32], const unsigned char theirs[32],
                           const unsigned char session[32], int64_t round, uint32_t i, uint32_t j,
                           unsigned char key[32], sdfed_error *err);
/* The same two keys from the caller's private key set up once
 * (native/crypto.h's native_x25519_key): for a key that meets many peers, a
 * client's neighbours or a dropped client's surviving neighbours. */
int native_secagg_share_key_from(native_x25519_key *mine, const unsigned char theirs[32],
                                 const unsigned char session[32], int64_t round, uint32_t sender, uint32_t recipient,
                                 unsigned char key[32], sdfed_error *err);
int native_secagg_pair_key_from(native_x25519_key *mine, const unsigned char theirs[32],
                                const unsigned char session[32], int64_t round, uint32_t i, uint32_t j,
                                unsigned char key[32], sdfed_error *err);
/* The share key from the X25519 agreement itself (shared, 32): a client
 * meets each neighbour's share key twice, sealing its pair to it and
 * opening the pair it relays, and agrees once. */
int native_secagg_share_key_of(const unsigned char shared[32], const unsigned char session[32], int64_t round,
                               uint32_t sender, uint32_t recipient, unsigned char key[32], sdfed_error *err);
/* key (32) = client i's self-mask key from its seed b_i (16). */
int native_secagg_self_key(const unsigned char seed[SDFED_SECAGG_SEED_BYTES], const unsigned char session[32],
                           int64_t round, uint32_t i, unsigned char key[32], sdfed_error *err);
/* mask_sk (32) = the X25519 mask private key of round's mask seed (16). */
int native_secagg_mask_private(const unsigned char mask_seed[SDFED_SECAGG_SEED_BYTES], int64_t round,
                               unsigned char mask_sk[32], sdfed_error *err);
/* sealed (64) = the pair (48) from sender to recipient under key (one
 * message a key: the nonce is zeros, secagg_layout.h). */
int native_secagg_seal(const unsigned char key[32], const unsigned char session[32], int64_t round, uint32_t sender,
                       uint32_t recipient, const unsigned char pair[SDFED_SECAGG_PAIR_BYTES],
                       unsigned char sealed[SDFED_SECAGG_SEALED_BYTES], sdfed_error *err);
/* pair (48) from sealed (64); SDFED_ERR_FORMAT when it does not
 * authenticate (another key, sender, recipient, round or session). */
int native_secagg_open(const unsigned char key[32], const unsigned char session[32], int64_t round, uint32_t sender,
                       uint32_t recipient, const unsigned char sealed[SDFED_SECAGG_SEALED_BYTES],
                       unsigned char pair[SDFED_SECAGG_PAIR_BYTES], sdfed_error *err);
/* out (bytes) = the mask stream of a pair or self key. */
int native_secagg_mask_stream(const unsigned char key[32], unsigned char *out, size_t bytes, sdfed_error *err);
/* v (len elements of Z_{2^ring_bits}) += sign (+1 or -1) times the mask of
 * a pair or self key: what a client adds and the server removes. */
int native_secagg_add_mask(const unsigned char key[32], int ring_bits, uint64_t *v, size_t len, int sign,
                           sdfed_error *err);

#endif
