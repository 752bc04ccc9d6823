/* Secure aggregation: Shamir secret sharing of 16-byte secrets (the
 * self-mask seed b_i and the seed of the X25519 mask key s_i: 128 bits, the
 * security parameter of Bell et al.) among a client's holders.
 *
 * Field: the integers mod p = 2^61 - 1 (a Mersenne prime: products of two
 * elements reduce with shifts and adds, in portable 64-bit C that the wasm
 * builds run as fast as the native one). A secret is cut into 3 chunks of
 * little-endian bytes: bytes 0-6, 7-13 (56 bits each) and 14-15 (16 bits),
 * each below p, each shared by its own random polynomial of degree t - 1
 * whose constant term is the chunk. Holder h (1-based: a graph slot + 1)
 * gets y = f(h) for each chunk: a share is (x = h, y[3]), 24 bytes on the
 * wire (y[0..2] as little-endian u64, x implied by who holds it).
 * Coefficients are uniform in [0, p), drawn from the caller's source
 * (fed/secagg_random.h).
 * Reconstruction interpolates f(0) from the shares given (Lagrange), and
 * fails rather than return a wrong secret silently: fewer than t shares, an
 * x twice, 0 or beyond the holders, or a y not below p are refused; beyond
 * t, every further share must lie on the polynomial the first t define;
 * and each chunk found must fit its 56 (or 16) bits, which a combination of
 * shares from different secrets or polynomials passes with probability
 * about 2^-55. */
#ifndef SDFED_SECAGG_SHAMIR_H
#define SDFED_SECAGG_SHAMIR_H

#include <stdint.h>

#include "base/status.h"
#include "fed/secagg_random.h"

#define SDFED_SHAMIR_PRIME ((uint64_t)0x1FFFFFFFFFFFFFFF) /* 2^61 - 1 */
#define SDFED_SHAMIR_SECRET_BYTES 16
#define SDFED_SHAMIR_CHUNKS 3
#define SDFED_SHAMIR_SHARE_BYTES (8 * SDFED_SHAMIR_CHUNKS)
/* at most this many holders (a round's clients) */
#define SDFED_SECAGG_MAX_HOLDERS 1000000

typedef struct sdfed_shamir_share {
    uint32_t x; /* 1..holders */
    uint64_t y[SDFED_SHAMIR_CHUNKS];
} sdfed_shamir_share;

/* out (holders) = the shares of secret for holders 1..holders, any t of
 * which reconstruct it; 2 <= t <= holders. Coefficients are drawn chunk by
 * chunk, a_1 .. a_{t-1}; scratch holds t uint64_t. */
int sdfed_shamir_split(const unsigned char secret[SDFED_SHAMIR_SECRET_BYTES], int t, int holders,
                       const sdfed_secagg_bytes *random, uint64_t *scratch, sdfed_shamir_share *out, sdfed_error *err);
/* secret = the secret that count shares (from at most `holders` holders)
 * with threshold t reconstruct; fails as the comment above says. scratch
 * holds 3 t uint64_t. O(t^2 + (count - t) t). */
int sdfed_shamir_combine(const sdfed_shamir_share *shares, int count, int t, int holders, uint64_t *scratch,
                         unsigned char secret[SDFED_SHAMIR_SECRET_BYTES], sdfed_error *err);

/* A share's y values as 24 bytes and back; reading refuses a y not below p. */
void sdfed_shamir_share_write(const sdfed_shamir_share *share, unsigned char out[SDFED_SHAMIR_SHARE_BYTES]);
int sdfed_shamir_share_read(const unsigned char in[SDFED_SHAMIR_SHARE_BYTES], uint32_t x, sdfed_shamir_share *share,
                            sdfed_error *err);

/* Field arithmetic mod 2^61 - 1 on reduced operands (for the tests). */
uint64_t sdfed_shamir_mul(uint64_t a, uint64_t b);
uint64_t sdfed_shamir_inverse(uint64_t a);

#endif
