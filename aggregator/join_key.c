/* Secrets compared in constant time, with the address's lock-out (see
 * join_key.h). */
#include "join_key.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "native/crypto.h"

int agg_join_key_set(agg_join_key *k, const char *flag, const char *key, sdfed_error *err) {
    memset(k, 0, sizeof *k);
    if (!key) return SDFED_OK;
    size_t n = strlen(key);
    if (n == 0 || n > JOIN_KEY_MAX)
        return sdfed_fail(err, SDFED_ERR_ARG, "%s must have 1 to %d characters, not %zu", flag, JOIN_KEY_MAX, n);
    static const char allowed[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";
    size_t good = strspn(key, allowed);
    if (good < n)
        return sdfed_fail(err, SDFED_ERR_ARG,
                          "%s may hold only A-Z a-z 0-9 - . _ ~ (it goes into an address as it is); character %zu "
                          "(0x%02x) is not one of them",
                          flag, good + 1, (unsigned char)key[good]);
    int rc = native_sha256(key, n, k->digest, err);
    if (rc) return rc;
    k->set = 1;
    memcpy(k->text, key, n + 1);
    return SDFED_OK;
}

int agg_join_key_matches(const agg_join_key *k, const void *presented, size_t len) {
    unsigned char digest[32];
    /* a digest it cannot make matches nothing */
    return native_sha256(presented, len, digest, NULL) == SDFED_OK && CRYPTO_memcmp(digest, k->digest, 32) == 0;
}

agg_join_key_verdict agg_join_key_check(const agg_join_key *k, agg_peers *p, const agg_peer_address *from,
                                        const void *presented, size_t len, int64_t now_ms, int64_t *locked_ms) {
    *locked_ms = 0;
    if (!k->set) return JOIN_KEY_OK;
    if ((*locked_ms = agg_peers_key_locked_ms(p, from, now_ms)) > 0) {
        agg_peers_refused(p, PEERS_REFUSED_KEY_LOCKED);
        return JOIN_KEY_LOCKED;
    }
    if (!presented) {
        agg_peers_refused(p, PEERS_REFUSED_KEY_MISSING);
        return JOIN_KEY_MISSING;
    }
    if (agg_join_key_matches(k, presented, len)) {
        agg_peers_key_succeeded(p, from);
        return JOIN_KEY_OK;
    }
    agg_peers_refused(p, PEERS_REFUSED_KEY_WRONG);
    *locked_ms = agg_peers_key_failed(p, from, now_ms);
    return JOIN_KEY_WRONG;
}
