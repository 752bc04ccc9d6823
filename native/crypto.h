/* The cryptography the host needs, from OpenSSL's libcrypto (3.0) and the
 * OS, never written by hand: SHA-256 (model and task hashes, the caches'
 * keys, join tokens as the store keeps them, secure aggregation's session
 * id), and for secure aggregation X25519 key pairs and agreement,
 * HKDF-SHA256, AES-256-GCM, AES-CTR, and random bytes from getrandom(2).
 * The page does the same with WebCrypto; the byte layouts that both follow
 * are shared/fed/secagg_layout.h's.
 * Two byte sources for the core (fed/secagg_random.h): the OS's randomness,
 * and an AES-256-CTR keystream from a 32-byte key (IV 0), deterministic for
 * the tests and the graph's shuffle. */
#ifndef SDFED_NATIVE_CRYPTO_H
#define SDFED_NATIVE_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "fed/secagg_random.h"

/* SHA-256 over pieces given in turn: begin, add each (a failure is kept
 * for end), end, which gives the digest and frees what begin took whatever
 * happened. */
typedef struct native_sha256_ctx {
    void *md;   /* OpenSSL's EVP_MD_CTX */
    int failed; /* an add failed */
} native_sha256_ctx;

int native_sha256_begin(native_sha256_ctx *h, sdfed_error *err);
void native_sha256_add(native_sha256_ctx *h, const void *data, size_t n);
int native_sha256_end(native_sha256_ctx *h, unsigned char digest[32], sdfed_error *err);
/* The digest of a buffer, and the same as 64 lower-case hex digits and a NUL. */
int native_sha256(const void *data, size_t n, unsigned char digest[32], sdfed_error *err);
int native_sha256_hex(const void *data, size_t n, char hex[65], sdfed_error *err);

/* out (n) = random bytes from getrandom(2). */
int native_crypto_random(unsigned char *out, size_t n, sdfed_error *err);

/* pub = X25519(priv, 9): the public key of a 32-byte private key. */
int native_x25519_public(const unsigned char priv[32], unsigned char pub[32], sdfed_error *err);
/* A new key pair, its private key from getrandom(2). */
int native_x25519_keypair(unsigned char priv[32], unsigned char pub[32], sdfed_error *err);
/* shared = X25519(priv, peer); refuses a peer key whose result is all
 * zeros (a small-order point: SDFED_ERR_FORMAT). */
int native_x25519_agree(const unsigned char priv[32], const unsigned char peer[32], unsigned char shared[32],
                        sdfed_error *err);

/* One private key for agreements with many peers: OpenSSL sets a raw
 * private key up by deriving its public key, about half of an agreement's
 * cost, so a key that meets many peers (a client's neighbours, a dropped
 * client's surviving neighbours in the unmasking) is set up once, with its
 * agreement's context and the context that makes each peer's key (a tenth
 * more when looked up again for every peer). One thread uses a key at a
 * time. */
typedef struct native_x25519_key {
    void *pkey;   /* OpenSSL's EVP_PKEY, which wipes the private key when freed */
    void *derive; /* the EVP_PKEY_CTX of its agreements */
    void *peers;  /* the EVP_PKEY_CTX that makes a peer's public key */
} native_x25519_key;

int native_x25519_key_open(native_x25519_key *k, const unsigned char priv[32], sdfed_error *err);
void native_x25519_key_close(native_x25519_key *k);
/* shared = X25519(k's private key, peer), as native_x25519_agree. */
int native_x25519_key_agree(native_x25519_key *k, const unsigned char peer[32], unsigned char shared[32],
                            sdfed_error *err);

/* out (out_len) = HKDF-SHA256(ikm, salt, info) (RFC 5869); salt may be empty. */
int native_hkdf_sha256(const unsigned char *ikm, size_t ikm_len, const unsigned char *salt, size_t salt_len,
                       const unsigned char *info, size_t info_len, unsigned char *out, size_t out_len,
                       sdfed_error *err);

/* ct (n) and tag (16) = AES-256-GCM of pt (n) under key and the 12-byte
 * nonce, authenticating aad. */
int native_aes256gcm_seal(const unsigned char key[32], const unsigned char nonce[12], const unsigned char *aad,
                          size_t aad_len, const unsigned char *pt, size_t n, unsigned char *ct, unsigned char tag[16],
                          sdfed_error *err);
/* pt (n) from ct (n) and tag; SDFED_ERR_FORMAT when it does not
 * authenticate (pt is then zeroed). */
int native_aes256gcm_open(const unsigned char key[32], const unsigned char nonce[12], const unsigned char *aad,
                          size_t aad_len, const unsigned char *ct, size_t n, const unsigned char tag[16],
                          unsigned char *pt, sdfed_error *err);

/* out (n) = in (n) XOR the AES-CTR keystream of key (16 or 32 bytes) from
 * the 16-byte counter block iv, incremented as a 128-bit big-endian
 * integer; in NULL gives the keystream itself. */
int native_aes_ctr(const unsigned char *key, size_t key_len, const unsigned char iv[16], const unsigned char *in,
                   unsigned char *out, size_t n, sdfed_error *err);

/* The keystream byte source: AES-256-CTR under key from counter 0, read
 * front to back. */
typedef struct native_crypto_stream {
    void *cipher; /* OpenSSL's EVP_CIPHER_CTX */
} native_crypto_stream;

int native_crypto_stream_open(native_crypto_stream *s, const unsigned char key[32], sdfed_error *err);
void native_crypto_stream_close(native_crypto_stream *s);
sdfed_secagg_bytes native_crypto_stream_source(native_crypto_stream *s);
/* The OS's randomness as a byte source. */
sdfed_secagg_bytes native_crypto_os_source(void);

#endif
