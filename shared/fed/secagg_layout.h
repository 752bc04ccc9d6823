/* Secure aggregation: the exact bytes that the cryptography binds, so that
 * the native client (OpenSSL), the page (WebCrypto) and the server derive
 * the same keys and masks. All integers are big-endian; LABEL is the 15
 * ASCII bytes "sdfed/secagg/v2".
 *
 *   session id  SHA-256(LABEL || 0x01 || round (8, two's complement) ||
 *               n (4) || for each client i that advertised, in increasing
 *               i: i (4) || its mask public key (32) || its share public
 *               key (32)): 32 bytes naming the round's keys
 *   info        (64 bytes) LABEL || purpose (1) || session id (32) ||
 *               round (8) || a (4) || b (4), the HKDF-SHA256 info; the salt
 *               is empty (RFC 5869: 32 zero bytes), the output 32 bytes:
 *     0x02 share key   ikm = X25519(share keys of a and b), a = sender,
 *                      b = recipient: the AES-256-GCM key of a's shares for
 *                      b; the same 64 bytes are the GCM additional data
 *     0x03 pair key    ikm = X25519(mask keys of a and b), a < b: the
 *                      AES-256-CTR key of their pairwise mask
 *     0x04 self key    ikm = b_i (the 16-byte self-mask seed), a = b = i:
 *                      the AES-256-CTR key of i's self mask
 *     0x05 mask key    ikm = the 16-byte mask seed, session id all zeros
 *                      (the key comes before the session), a = b = 0: the
 *                      client's X25519 mask private key (32 bytes, clamped
 *                      by X25519 as any; as PKCS#8 for WebCrypto: RFC
 *                      8410's 16-byte prefix, then these 32)
 *   share pair  (48 bytes, the GCM plaintext) the Shamir share of the
 *               sender's b (24) || of its mask seed (24)
 *               (fed/secagg_shamir.h), for the recipient's slot among the
 *               sender's holders (x = slot + 1)
 *   sealed      (64 bytes on the wire) ciphertext (48) || tag (16) under the
 *               12-byte nonce of zeros, which is not sent. A zero nonce is
 *               safe because each share key seals exactly one message: the
 *               key is bound to (session, round, sender, recipient; the
 *               other direction has a key of its own), the
 *               session to the round's fresh public keys, and a sender
 *               seals one pair for each recipient in a round (its client
 *               takes one share_request, fed/secagg_client.h; a request
 *               asked again after a restart gets the same bytes again,
 *               never a new sealing: tools/client/secure.c,
 *               web/secure-round.js). AES-GCM's nonce must never repeat
 *               under one key; with one message a key, none can.
 *   PRG         AES-256-CTR under a pair or self key, the 16-byte counter
 *               block starting at zero and incremented as one 128-bit
 *               big-endian integer (WebCrypto: counter 0, length 128),
 *               encrypting zeros; a mask of len ring elements takes
 *               sdfed_secagg_stream_bytes(B, len) bytes (fed/secagg_ring.h).
 * tests/vectors/secagg-v2.txt holds fixed keys and seeds with every value
 * derived from them. */
#ifndef SDFED_SECAGG_LAYOUT_H
#define SDFED_SECAGG_LAYOUT_H

#include <stdint.h>

#include "base/status.h"
#include "fed/secagg_shamir.h"

#define SDFED_SECAGG_LABEL "sdfed/secagg/v2"
#define SDFED_SECAGG_LABEL_BYTES 15
#define SDFED_SECAGG_KEY_BYTES 32
#define SDFED_SECAGG_SEED_BYTES SDFED_SHAMIR_SECRET_BYTES /* b_i and the mask seed */
#define SDFED_SECAGG_SESSION_BYTES 32
#define SDFED_SECAGG_INFO_BYTES 64
#define SDFED_SECAGG_PAIR_BYTES (2 * SDFED_SHAMIR_SHARE_BYTES)
#define SDFED_SECAGG_NONCE_BYTES 12 /* GCM's nonce: all zeros, not sent (above) */
#define SDFED_SECAGG_TAG_BYTES 16
#define SDFED_SECAGG_SEALED_BYTES (SDFED_SECAGG_PAIR_BYTES + SDFED_SECAGG_TAG_BYTES)

enum {
    SDFED_SECAGG_PURPOSE_SESSION = 1,
    SDFED_SECAGG_PURPOSE_SHARE = 2,
    SDFED_SECAGG_PURPOSE_PAIR = 3,
    SDFED_SECAGG_PURPOSE_SELF = 4,
    SDFED_SECAGG_PURPOSE_MASK_KEY = 5,
};

/* The bytes of at most n clients whose SHA-256 is the session id. */
#define SDFED_SECAGG_SESSION_INPUT_BYTES(n) (SDFED_SECAGG_LABEL_BYTES + 13 + 68 * (size_t)(n))
/* input (*bytes, at most SDFED_SECAGG_SESSION_INPUT_BYTES(n)) = what the
 * round's session id hashes, over the n clients' keys (mask_keys,
 * share_keys: n x 32 bytes each), those with advertised[i] set; the caller
 * hashes it with its platform's SHA-256 (native/crypto.h's libcrypto, the
 * page's WebCrypto). Refuses a key of all zeros or a key given twice
 * anywhere in the round (scratch holds 64 n bytes). */
int sdfed_secagg_session_input(int64_t round, int n, const unsigned char *mask_keys, const unsigned char *share_keys,
                               const unsigned char *advertised, unsigned char *scratch, unsigned char *input,
                               size_t *bytes, sdfed_error *err);
/* info (64) for purpose 2 to 5 and clients a, b (see above: the caller
 * orders them; purpose 5 takes a session of zeros and a = b = 0). */
int sdfed_secagg_info(int purpose, const unsigned char session[32], int64_t round, uint32_t a, uint32_t b,
                      unsigned char info[SDFED_SECAGG_INFO_BYTES], sdfed_error *err);
/* The share pair's 48 bytes and back (reading checks each value is a field
 * element; x is the recipient's slot + 1). */
void sdfed_secagg_pair_write(const sdfed_shamir_share *b_share, const sdfed_shamir_share *s_share,
                             unsigned char out[SDFED_SECAGG_PAIR_BYTES]);
int sdfed_secagg_pair_read(const unsigned char in[SDFED_SECAGG_PAIR_BYTES], uint32_t x, sdfed_shamir_share *b_share,
                           sdfed_shamir_share *s_share, sdfed_error *err);

#endif
