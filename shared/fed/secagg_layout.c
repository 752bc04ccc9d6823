/* Secure aggregation's byte layouts (see secagg_layout.h). */
#include "fed/secagg_layout.h"

#include <stdlib.h>
#include <string.h>

static void put_u32(unsigned char *out, uint32_t v) {
    for (int i = 0; i < 4; i++) out[i] = (unsigned char)(v >> (24 - 8 * i));
}

static void put_u64(unsigned char *out, uint64_t v) {
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)(v >> (56 - 8 * i));
}

static int compare_keys(const void *a, const void *b) { return memcmp(a, b, SDFED_SECAGG_KEY_BYTES); }

int sdfed_secagg_session_input(int64_t round, int n, const unsigned char *mask_keys, const unsigned char *share_keys,
                               const unsigned char *advertised, unsigned char *scratch, unsigned char *input,
                               size_t *bytes, sdfed_error *err) {
    static const unsigned char zero[32];
    *bytes = 0;
    if (n < 1) return sdfed_fail(err, SDFED_ERR_ARG, "secagg session id: %d clients", n);
    int keys = 0;
    for (int i = 0; i < n; i++) {
        if (!advertised[i]) continue;
        if (!memcmp(mask_keys + 32 * (size_t)i, zero, 32) || !memcmp(share_keys + 32 * (size_t)i, zero, 32))
            return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg: client %d's public key is all zeros", i);
        memcpy(scratch + 32 * (size_t)keys++, mask_keys + 32 * (size_t)i, 32);
        memcpy(scratch + 32 * (size_t)keys++, share_keys + 32 * (size_t)i, 32);
    }
    qsort(scratch, (size_t)keys, 32, compare_keys);
    for (int k = 1; k < keys; k++)
        if (!compare_keys(scratch + 32 * (size_t)(k - 1), scratch + 32 * (size_t)k))
            return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg: a public key was advertised twice in round %lld",
                              (long long)round);
    unsigned char *o = input;
    memcpy(o, SDFED_SECAGG_LABEL, SDFED_SECAGG_LABEL_BYTES);
    o += SDFED_SECAGG_LABEL_BYTES;
    *o++ = SDFED_SECAGG_PURPOSE_SESSION;
    put_u64(o, (uint64_t)round);
    put_u32(o + 8, (uint32_t)n);
    o += 12;
    for (int i = 0; i < n; i++) {
        if (!advertised[i]) continue;
        put_u32(o, (uint32_t)i);
        memcpy(o + 4, mask_keys + 32 * (size_t)i, 32);
        memcpy(o + 36, share_keys + 32 * (size_t)i, 32);
        o += 68;
    }
    *bytes = (size_t)(o - input);
    return SDFED_OK;
}

int sdfed_secagg_info(int purpose, const unsigned char session[32], int64_t round, uint32_t a, uint32_t b,
                      unsigned char info[SDFED_SECAGG_INFO_BYTES], sdfed_error *err) {
    if (purpose < SDFED_SECAGG_PURPOSE_SHARE || purpose > SDFED_SECAGG_PURPOSE_MASK_KEY)
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg info: purpose %d", purpose);
    if (purpose == SDFED_SECAGG_PURPOSE_PAIR && a >= b)
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg info: a pair key names the smaller client first (%u, %u)", a, b);
    if (purpose == SDFED_SECAGG_PURPOSE_SELF && a != b)
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg info: a self key names one client (%u, %u)", a, b);
    if (purpose == SDFED_SECAGG_PURPOSE_MASK_KEY && (a || b))
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg info: a mask key names no client (%u, %u)", a, b);
    if (purpose == SDFED_SECAGG_PURPOSE_SHARE && a == b)
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg info: client %u sends shares to itself", a);
    unsigned char *at = info;
    memcpy(at, SDFED_SECAGG_LABEL, SDFED_SECAGG_LABEL_BYTES);
    at += SDFED_SECAGG_LABEL_BYTES;
    *at++ = (unsigned char)purpose;
    memcpy(at, session, SDFED_SECAGG_SESSION_BYTES);
    at += SDFED_SECAGG_SESSION_BYTES;
    put_u64(at, (uint64_t)round);
    put_u32(at + 8, a);
    put_u32(at + 12, b);
    return SDFED_OK;
}

void sdfed_secagg_pair_write(const sdfed_shamir_share *b_share, const sdfed_shamir_share *s_share,
                             unsigned char out[SDFED_SECAGG_PAIR_BYTES]) {
    sdfed_shamir_share_write(b_share, out);
    sdfed_shamir_share_write(s_share, out + SDFED_SHAMIR_SHARE_BYTES);
}

int sdfed_secagg_pair_read(const unsigned char in[SDFED_SECAGG_PAIR_BYTES], uint32_t x, sdfed_shamir_share *b_share,
                           sdfed_shamir_share *s_share, sdfed_error *err) {
    int rc = sdfed_shamir_share_read(in, x, b_share, err);
    if (!rc) rc = sdfed_shamir_share_read(in + SDFED_SHAMIR_SHARE_BYTES, x, s_share, err);
    return rc;
}
