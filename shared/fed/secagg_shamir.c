/* Shamir secret sharing over 2^61 - 1 (see secagg_shamir.h). */
#include "fed/secagg_shamir.h"

#include <string.h>

static const int CHUNK_BYTES[SDFED_SHAMIR_CHUNKS] = {7, 7, 2};

static uint64_t add(uint64_t a, uint64_t b) {
    uint64_t s = a + b; /* < 2^62 */
    return s >= SDFED_SHAMIR_PRIME ? s - SDFED_SHAMIR_PRIME : s;
}

static uint64_t sub(uint64_t a, uint64_t b) { return a >= b ? a - b : a + SDFED_SHAMIR_PRIME - b; }

uint64_t sdfed_shamir_mul(uint64_t a, uint64_t b) {
    /* the 122-bit product hi:lo from 32-bit halves, then 2^61 = 1 (mod p) */
    uint64_t a0 = a & 0xFFFFFFFFu, a1 = a >> 32, b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
    uint64_t lo = a0 * b0, mid1 = a0 * b1, mid2 = a1 * b0, hi = a1 * b1;
    uint64_t mid = mid1 + mid2; /* a1, b1 < 2^29: no overflow */
    uint64_t lo_next = lo + (mid << 32);
    hi += (mid >> 32) + (lo_next < lo);
    lo = lo_next;
    uint64_t r = (lo & SDFED_SHAMIR_PRIME) + ((lo >> 61) | (hi << 3)); /* < 2^62 */
    r = (r & SDFED_SHAMIR_PRIME) + (r >> 61);
    return r >= SDFED_SHAMIR_PRIME ? r - SDFED_SHAMIR_PRIME : r;
}

uint64_t sdfed_shamir_inverse(uint64_t a) {
    /* a^(p-2) by square and multiply; 0 has no inverse and gives 0 */
    uint64_t result = 1, base = a, e = SDFED_SHAMIR_PRIME - 2;
    while (e) {
        if (e & 1) result = sdfed_shamir_mul(result, base);
        base = sdfed_shamir_mul(base, base);
        e >>= 1;
    }
    return result;
}

static void secret_to_chunks(const unsigned char *secret, uint64_t chunk[SDFED_SHAMIR_CHUNKS]) {
    const unsigned char *at = secret;
    for (int c = 0; c < SDFED_SHAMIR_CHUNKS; c++) {
        uint64_t v = 0;
        for (int b = CHUNK_BYTES[c] - 1; b >= 0; b--) v = v << 8 | at[b];
        chunk[c] = v;
        at += CHUNK_BYTES[c];
    }
}

int sdfed_shamir_split(const unsigned char secret[SDFED_SHAMIR_SECRET_BYTES], int t, int holders,
                       const sdfed_secagg_bytes *random, uint64_t *scratch, sdfed_shamir_share *out, sdfed_error *err) {
    if (holders < 2 || holders > SDFED_SECAGG_MAX_HOLDERS || t < 2 || t > holders)
        return sdfed_fail(err, SDFED_ERR_ARG, "shamir: threshold %d of %d holders (2 <= t <= holders <= %d)", t,
                          holders, SDFED_SECAGG_MAX_HOLDERS);
    uint64_t chunk[SDFED_SHAMIR_CHUNKS];
    secret_to_chunks(secret, chunk);
    uint64_t *a = scratch; /* a[d] for d = 1..t-1: chunk c's coefficients */
    for (int c = 0; c < SDFED_SHAMIR_CHUNKS; c++) {
        for (int d = 1; d < t; d++) {
            int rc = sdfed_secagg_draw_below(random, SDFED_SHAMIR_PRIME, &a[d], err);
            if (rc) return sdfed_fail_context(err, rc, "shamir: drawing a coefficient");
        }
        for (int h = 0; h < holders; h++) { /* Horner: f(x) = chunk + x (a_1 + x (a_2 + ...)) */
            uint64_t x = (uint64_t)h + 1, y = a[t - 1];
            for (int d = t - 2; d >= 1; d--) y = add(sdfed_shamir_mul(y, x), a[d]);
            out[h].x = (uint32_t)x;
            out[h].y[c] = add(sdfed_shamir_mul(y, x), chunk[c]);
        }
    }
    return SDFED_OK;
}

/* inv[i] = 1 / d[i] for n nonzero d, with one inversion (Montgomery's
 * trick); prefix holds n values; inv may be d */
static void invert_all(const uint64_t *d, int n, uint64_t *prefix, uint64_t *inv) {
    prefix[0] = d[0];
    for (int i = 1; i < n; i++) prefix[i] = sdfed_shamir_mul(prefix[i - 1], d[i]);
    uint64_t rest = sdfed_shamir_inverse(prefix[n - 1]); /* 1 / (d[0] ... d[i]) */
    for (int i = n - 1; i > 0; i--) {
        uint64_t di = d[i]; /* read before inv[i] is written: inv may be d */
        inv[i] = sdfed_shamir_mul(rest, prefix[i - 1]);
        rest = sdfed_shamir_mul(rest, di);
    }
    inv[0] = rest;
}

/* lambda (t) = the Lagrange coefficients at z of the t points' x (z not one
 * of them), from the barycentric weights w: lambda_i = w_i L(z) / (z - x_i),
 * L(z) = prod_j (z - x_j) */
static void lagrange_at(const sdfed_shamir_share *s, int t, const uint64_t *w, uint64_t z, uint64_t *lambda,
                        uint64_t *prefix) {
    uint64_t whole = 1;
    for (int i = 0; i < t; i++) {
        lambda[i] = sub(z, s[i].x);
        whole = sdfed_shamir_mul(whole, lambda[i]);
    }
    invert_all(lambda, t, prefix, lambda); /* in place: prefix keeps what it needs */
    for (int i = 0; i < t; i++) lambda[i] = sdfed_shamir_mul(sdfed_shamir_mul(w[i], whole), lambda[i]);
}

static uint64_t evaluate(const sdfed_shamir_share *s, int t, const uint64_t *lambda, int c) {
    uint64_t value = 0;
    for (int i = 0; i < t; i++) value = add(value, sdfed_shamir_mul(lambda[i], s[i].y[c]));
    return value;
}

int sdfed_shamir_combine(const sdfed_shamir_share *shares, int count, int t, int holders, uint64_t *scratch,
                         unsigned char secret[SDFED_SHAMIR_SECRET_BYTES], sdfed_error *err) {
    if (t < 2 || holders < t || holders > SDFED_SECAGG_MAX_HOLDERS)
        return sdfed_fail(err, SDFED_ERR_ARG, "shamir: threshold %d of %d holders", t, holders);
    if (count < t)
        return sdfed_fail(err, SDFED_ERR_ARG, "shamir: %d share%s, the threshold is %d", count, count == 1 ? "" : "s",
                          t);
    for (int i = 0; i < count; i++) {
        if (shares[i].x < 1 || shares[i].x > (uint32_t)holders)
            return sdfed_fail(err, SDFED_ERR_FORMAT, "shamir: a share for holder %u of %d", shares[i].x, holders);
        for (int c = 0; c < SDFED_SHAMIR_CHUNKS; c++)
            if (shares[i].y[c] >= SDFED_SHAMIR_PRIME)
                return sdfed_fail(err, SDFED_ERR_FORMAT, "shamir: holder %u's share is not a field element",
                                  shares[i].x);
    }
    uint64_t *w = scratch, *lambda = scratch + t, *prefix = scratch + 2 * (size_t)t;
    /* barycentric weights of the first t: w_i = 1 / prod_{j != i} (x_i - x_j) */
    for (int i = 0; i < t; i++) {
        uint64_t den = 1;
        for (int j = 0; j < t; j++)
            if (j != i) den = sdfed_shamir_mul(den, sub(shares[i].x, shares[j].x));
        if (den == 0) return sdfed_fail(err, SDFED_ERR_FORMAT, "shamir: two shares for holder %u", shares[i].x);
        lambda[i] = den;
    }
    invert_all(lambda, t, prefix, w);
    /* every further share on the first t's polynomial, each chunk */
    for (int e = t; e < count; e++) {
        for (int j = 0; j < e; j++)
            if (shares[j].x == shares[e].x)
                return sdfed_fail(err, SDFED_ERR_FORMAT, "shamir: two shares for holder %u", shares[e].x);
        lagrange_at(shares, t, w, shares[e].x, lambda, prefix);
        for (int c = 0; c < SDFED_SHAMIR_CHUNKS; c++)
            if (evaluate(shares, t, lambda, c) != shares[e].y[c])
                return sdfed_fail(err, SDFED_ERR_FORMAT,
                                  "shamir: the shares are inconsistent (holder %u's is not on the polynomial of the "
                                  "first %d)",
                                  shares[e].x, t);
    }
    lagrange_at(shares, t, w, 0, lambda, prefix);
    uint64_t chunk[SDFED_SHAMIR_CHUNKS];
    for (int c = 0; c < SDFED_SHAMIR_CHUNKS; c++) {
        chunk[c] = evaluate(shares, t, lambda, c);
        if (chunk[c] >> (8 * CHUNK_BYTES[c]))
            return sdfed_fail(err, SDFED_ERR_FORMAT,
                              "shamir: the shares are inconsistent (part %d of the secret does not fit its %d bytes)",
                              c, CHUNK_BYTES[c]);
    }
    unsigned char *at = secret;
    for (int c = 0; c < SDFED_SHAMIR_CHUNKS; c++) {
        for (int b = 0; b < CHUNK_BYTES[c]; b++) at[b] = (unsigned char)(chunk[c] >> (8 * b));
        at += CHUNK_BYTES[c];
    }
    return SDFED_OK;
}

void sdfed_shamir_share_write(const sdfed_shamir_share *share, unsigned char out[SDFED_SHAMIR_SHARE_BYTES]) {
    for (int c = 0; c < SDFED_SHAMIR_CHUNKS; c++)
        for (int b = 0; b < 8; b++) out[8 * c + b] = (unsigned char)(share->y[c] >> (8 * b));
}

int sdfed_shamir_share_read(const unsigned char in[SDFED_SHAMIR_SHARE_BYTES], uint32_t x, sdfed_shamir_share *share,
                            sdfed_error *err) {
    share->x = x;
    for (int c = 0; c < SDFED_SHAMIR_CHUNKS; c++) {
        uint64_t v = 0;
        for (int b = 7; b >= 0; b--) v = v << 8 | in[8 * c + b];
        if (v >= SDFED_SHAMIR_PRIME)
            return sdfed_fail(err, SDFED_ERR_FORMAT, "shamir: holder %u's share is not a field element", x);
        share->y[c] = v;
    }
    return SDFED_OK;
}
