/* The host's cryptographic primitives from OpenSSL's libcrypto and
 * getrandom(2) (see crypto.h). */
#include "native/crypto.h"

#include <errno.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

/* the failure with OpenSSL's own reason appended */
static int openssl_fail(sdfed_error *err, const char *what) {
    unsigned long e = ERR_get_error();
    char reason[160] = "no reason given";
    if (e) ERR_error_string_n(e, reason, sizeof reason);
    ERR_clear_error();
    return sdfed_fail(err, SDFED_ERR_IO, "%s failed (OpenSSL: %s)", what, reason);
}

int native_sha256_begin(native_sha256_ctx *h, sdfed_error *err) {
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    h->failed = 0;
    if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        h->md = NULL;
        return openssl_fail(err, "SHA-256");
    }
    h->md = md;
    return SDFED_OK;
}

void native_sha256_add(native_sha256_ctx *h, const void *data, size_t n) {
    if (h->md && !h->failed && EVP_DigestUpdate(h->md, data, n) != 1) h->failed = 1;
}

int native_sha256_end(native_sha256_ctx *h, unsigned char digest[32], sdfed_error *err) {
    unsigned int len = 0;
    int ok = h->md && !h->failed && EVP_DigestFinal_ex(h->md, digest, &len) == 1 && len == 32;
    EVP_MD_CTX_free(h->md);
    h->md = NULL;
    return ok ? SDFED_OK : openssl_fail(err, "SHA-256");
}

int native_sha256(const void *data, size_t n, unsigned char digest[32], sdfed_error *err) {
    native_sha256_ctx h;
    int rc = native_sha256_begin(&h, err);
    if (rc) return rc;
    native_sha256_add(&h, data, n);
    return native_sha256_end(&h, digest, err);
}

int native_sha256_hex(const void *data, size_t n, char hex[65], sdfed_error *err) {
    unsigned char digest[32];
    int rc = native_sha256(data, n, digest, err);
    if (rc) return rc;
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    return SDFED_OK;
}

int native_crypto_random(unsigned char *out, size_t n, sdfed_error *err) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(out + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            return sdfed_fail(err, SDFED_ERR_IO, "getrandom: %s", strerror(errno));
        }
        got += (size_t)r;
    }
    return SDFED_OK;
}

int native_x25519_public(const unsigned char priv[32], unsigned char pub[32], sdfed_error *err) {
    EVP_PKEY *key = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, priv, 32);
    size_t len = 32;
    int ok = key && EVP_PKEY_get_raw_public_key(key, pub, &len) == 1 && len == 32;
    EVP_PKEY_free(key);
    return ok ? SDFED_OK : openssl_fail(err, "X25519 public key");
}

int native_x25519_keypair(unsigned char priv[32], unsigned char pub[32], sdfed_error *err) {
    int rc = native_crypto_random(priv, 32, err);
    return rc ? rc : native_x25519_public(priv, pub, err);
}

int native_x25519_key_open(native_x25519_key *k, const unsigned char priv[32], sdfed_error *err) {
    EVP_PKEY *pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, priv, 32);
    *k = (native_x25519_key){.pkey = pkey,
                             .derive = pkey ? EVP_PKEY_CTX_new(pkey, NULL) : NULL,
                             .peers = EVP_PKEY_CTX_new_from_name(NULL, "X25519", NULL)};
    if (k->derive && k->peers && EVP_PKEY_derive_init(k->derive) == 1 && EVP_PKEY_fromdata_init(k->peers) == 1)
        return SDFED_OK;
    native_x25519_key_close(k);
    return openssl_fail(err, "X25519 private key");
}

void native_x25519_key_close(native_x25519_key *k) {
    EVP_PKEY_CTX_free(k->peers);
    EVP_PKEY_CTX_free(k->derive);
    EVP_PKEY_free(k->pkey);
    *k = (native_x25519_key){0};
}

int native_x25519_key_agree(native_x25519_key *k, const unsigned char peer[32], unsigned char shared[32],
                            sdfed_error *err) {
    static const unsigned char zero[32];
    OSSL_PARAM public_key[] = {OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)peer, 32),
                               OSSL_PARAM_construct_end()};
    EVP_PKEY *theirs = NULL;
    size_t len = 32;
    int ok = k->derive && EVP_PKEY_fromdata(k->peers, &theirs, EVP_PKEY_PUBLIC_KEY, public_key) == 1 &&
             EVP_PKEY_derive_set_peer(k->derive, theirs) == 1 && EVP_PKEY_derive(k->derive, shared, &len) == 1 &&
             len == 32;
    EVP_PKEY_free(theirs);
    if (!ok) {
        memset(shared, 0, 32);
        return openssl_fail(err, "X25519 agreement");
    }
    if (!memcmp(shared, zero, 32))
        return sdfed_fail(err, SDFED_ERR_FORMAT, "X25519 agreement: the peer's key is a small-order point");
    return SDFED_OK;
}

int native_x25519_agree(const unsigned char priv[32], const unsigned char peer[32], unsigned char shared[32],
                        sdfed_error *err) {
    native_x25519_key mine;
    int rc = native_x25519_key_open(&mine, priv, err);
    if (rc == SDFED_OK) rc = native_x25519_key_agree(&mine, peer, shared, err);
    native_x25519_key_close(&mine);
    if (rc) memset(shared, 0, 32);
    return rc;
}

int native_hkdf_sha256(const unsigned char *ikm, size_t ikm_len, const unsigned char *salt, size_t salt_len,
                       const unsigned char *info, size_t info_len, unsigned char *out, size_t out_len,
                       sdfed_error *err) {
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    OSSL_PARAM params[5], *p = params;
    *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)ikm, ikm_len);
    if (salt_len) *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len);
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, info_len);
    *p = OSSL_PARAM_construct_end();
    int ok = ctx && EVP_KDF_derive(ctx, out, out_len, params) == 1;
    EVP_KDF_CTX_free(ctx);
    EVP_KDF_free(kdf);
    return ok ? SDFED_OK : openssl_fail(err, "HKDF-SHA256");
}

int native_aes256gcm_seal(const unsigned char key[32], const unsigned char nonce[12], const unsigned char *aad,
                          size_t aad_len, const unsigned char *pt, size_t n, unsigned char *ct, unsigned char tag[16],
                          sdfed_error *err) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int len = 0, ok = ctx && n <= INT32_MAX && aad_len <= INT32_MAX &&
                      EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce) == 1 &&
                      (aad_len == 0 || EVP_EncryptUpdate(ctx, NULL, &len, aad, (int)aad_len) == 1) &&
                      (n == 0 || EVP_EncryptUpdate(ctx, ct, &len, pt, (int)n) == 1) &&
                      EVP_EncryptFinal_ex(ctx, ct + (n ? len : 0), &len) == 1 &&
                      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1;
    EVP_CIPHER_CTX_free(ctx);
    return ok ? SDFED_OK : openssl_fail(err, "AES-256-GCM encryption");
}

int native_aes256gcm_open(const unsigned char key[32], const unsigned char nonce[12], const unsigned char *aad,
                          size_t aad_len, const unsigned char *ct, size_t n, const unsigned char tag[16],
                          unsigned char *pt, sdfed_error *err) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int len = 0, ok = ctx && n <= INT32_MAX && aad_len <= INT32_MAX &&
                      EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce) == 1 &&
                      (aad_len == 0 || EVP_DecryptUpdate(ctx, NULL, &len, aad, (int)aad_len) == 1) &&
                      (n == 0 || EVP_DecryptUpdate(ctx, pt, &len, ct, (int)n) == 1) &&
                      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, (void *)tag) == 1;
    if (!ok) {
        EVP_CIPHER_CTX_free(ctx);
        return openssl_fail(err, "AES-256-GCM decryption");
    }
    unsigned char end[16];
    int authentic = EVP_DecryptFinal_ex(ctx, end, &len) == 1;
    EVP_CIPHER_CTX_free(ctx);
    ERR_clear_error();
    if (!authentic) {
        if (n) memset(pt, 0, n);
        return sdfed_fail(err, SDFED_ERR_FORMAT, "AES-256-GCM: the ciphertext does not authenticate");
    }
    return SDFED_OK;
}

int native_aes_ctr(const unsigned char *key, size_t key_len, const unsigned char iv[16], const unsigned char *in,
                   unsigned char *out, size_t n, sdfed_error *err) {
    const EVP_CIPHER *cipher = NULL;
    if (key_len == 32) cipher = EVP_aes_256_ctr();
    if (key_len == 16) cipher = EVP_aes_128_ctr();
    if (!cipher) return sdfed_fail(err, SDFED_ERR_ARG, "AES-CTR: a key of %zu bytes (16 or 32)", key_len);
    if (!in) memset(out, 0, n);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int ok = ctx && EVP_EncryptInit_ex(ctx, cipher, NULL, key, iv) == 1;
    for (size_t done = 0; ok && done < n;) {
        int chunk = n - done > (1u << 30) ? (1 << 30) : (int)(n - done), len = 0;
        ok = EVP_EncryptUpdate(ctx, out + done, &len, (in ? in : out) + done, chunk) == 1 && len == chunk;
        done += (size_t)chunk;
    }
    EVP_CIPHER_CTX_free(ctx);
    return ok ? SDFED_OK : openssl_fail(err, "AES-CTR");
}

int native_crypto_stream_open(native_crypto_stream *s, const unsigned char key[32], sdfed_error *err) {
    static const unsigned char zero_iv[16];
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (!ctx || EVP_EncryptInit_ex(ctx, EVP_aes_256_ctr(), NULL, key, zero_iv) != 1) {
        EVP_CIPHER_CTX_free(ctx);
        s->cipher = NULL;
        return openssl_fail(err, "AES-256-CTR keystream");
    }
    s->cipher = ctx;
    return SDFED_OK;
}

void native_crypto_stream_close(native_crypto_stream *s) {
    EVP_CIPHER_CTX_free(s->cipher);
    s->cipher = NULL;
}

static int stream_fill(void *ctx, unsigned char *out, size_t n, sdfed_error *err) {
    native_crypto_stream *s = ctx;
    if (!s->cipher) return sdfed_fail(err, SDFED_ERR_ARG, "AES-CTR keystream: not open");
    memset(out, 0, n);
    for (size_t done = 0; done < n;) {
        int chunk = n - done > (1u << 30) ? (1 << 30) : (int)(n - done), len = 0;
        if (EVP_EncryptUpdate(s->cipher, out + done, &len, out + done, chunk) != 1 || len != chunk)
            return openssl_fail(err, "AES-CTR keystream");
        done += (size_t)chunk;
    }
    return SDFED_OK;
}

sdfed_secagg_bytes native_crypto_stream_source(native_crypto_stream *s) {
    return (sdfed_secagg_bytes){.fill = stream_fill, .ctx = s};
}

static int os_fill(void *ctx, unsigned char *out, size_t n, sdfed_error *err) {
    (void)ctx;
    return native_crypto_random(out, n, err);
}

sdfed_secagg_bytes native_crypto_os_source(void) { return (sdfed_secagg_bytes){.fill = os_fill, .ctx = NULL}; }
