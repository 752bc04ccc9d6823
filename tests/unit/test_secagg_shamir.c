/* Shamir sharing of 16-byte secrets over 2^61 - 1 (fed/secagg_shamir.h):
 * any t of the shares reconstruct, fewer fail, shares that do not belong
 * together are caught rather than giving a wrong secret, the wire form, the
 * field. Every build. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fed/secagg_shamir.h"
#include "test_bytes.h"

static void test_field(void) {
    CHECK(sdfed_shamir_mul(SDFED_SHAMIR_PRIME - 1, SDFED_SHAMIR_PRIME - 1) == 1, "(-1)(-1) = 1");
    CHECK(sdfed_shamir_mul((uint64_t)1 << 60, 2) == 1, "2^61 = 1");
    sdfed_rng rng;
    sdfed_rng_seed(&rng, 7);
    int inverses = 1;
    for (int i = 0; i < 1000; i++) {
        uint64_t a = sdfed_rng_below(&rng, SDFED_SHAMIR_PRIME - 1) + 1;
        if (sdfed_shamir_mul(a, sdfed_shamir_inverse(a)) != 1) inverses = 0;
    }
    CHECK(inverses, "a times its inverse is 1 for 1000 random a");
    /* the product against one computed by shifts and adds */
    int products = 1;
    for (int i = 0; i < 1000; i++) {
        uint64_t a = sdfed_rng_below(&rng, SDFED_SHAMIR_PRIME), b = sdfed_rng_below(&rng, SDFED_SHAMIR_PRIME), slow = 0,
                 add = a;
        for (uint64_t e = b; e; e >>= 1) {
            if (e & 1) slow = (slow + add) % SDFED_SHAMIR_PRIME;
            add = (add * 2) % SDFED_SHAMIR_PRIME;
        }
        if (sdfed_shamir_mul(a, b) != slow) products = 0;
    }
    CHECK(products, "products mod 2^61 - 1 agree with double-and-add");
}

static void secret_of(sdfed_rng *rng, unsigned char s[SDFED_SHAMIR_SECRET_BYTES]) {
    for (int i = 0; i < SDFED_SHAMIR_SECRET_BYTES; i++) s[i] = (unsigned char)sdfed_rng_u64(rng);
}

static void test_split_combine(void) {
    sdfed_rng rng, coefficients;
    sdfed_rng_seed(&rng, 1);
    sdfed_secagg_bytes src = test_bytes(&coefficients, 2);
    sdfed_error err = {0};
    uint64_t scratch[3 * 16];
    for (int holders = 2; holders <= 9; holders++)
        for (int t = 2; t <= holders; t++) {
            unsigned char secret[SDFED_SHAMIR_SECRET_BYTES], back[SDFED_SHAMIR_SECRET_BYTES];
            secret_of(&rng, secret);
            sdfed_shamir_share shares[9], subset[9];
            CHECK(sdfed_shamir_split(secret, t, holders, &src, scratch, shares, &err) == SDFED_OK, "%s", err.message);
            /* every subset of t or more, in a shuffled order */
            int all_ok = 1, fewer_fail = 1;
            for (unsigned mask = 1; mask < (1u << holders); mask++) {
                int count = 0;
                for (int h = 0; h < holders; h++)
                    if (mask & (1u << h)) subset[count++] = shares[h];
                for (int i = count - 1; i > 0; i--) {
                    int j = (int)sdfed_rng_below(&rng, (uint64_t)i + 1);
                    sdfed_shamir_share tmp = subset[i];
                    subset[i] = subset[j];
                    subset[j] = tmp;
                }
                int rc = sdfed_shamir_combine(subset, count, t, holders, scratch, back, &err);
                if (count >= t && (rc != SDFED_OK || memcmp(back, secret, SDFED_SHAMIR_SECRET_BYTES))) all_ok = 0;
                if (count < t && rc == SDFED_OK) fewer_fail = 0;
            }
            CHECK(all_ok, "t %d of %d: every set of t or more reconstructs the secret", t, holders);
            CHECK(fewer_fail, "t %d of %d: every set of fewer than t fails", t, holders);
        }
    unsigned char secret[SDFED_SHAMIR_SECRET_BYTES], back[SDFED_SHAMIR_SECRET_BYTES];
    memset(secret, 0xff, SDFED_SHAMIR_SECRET_BYTES);
    sdfed_shamir_share shares[5];
    CHECK(sdfed_shamir_split(secret, 3, 5, &src, scratch, shares, &err) == SDFED_OK &&
              sdfed_shamir_combine(shares + 1, 3, 3, 5, scratch, back, &err) == SDFED_OK &&
              !memcmp(back, secret, SDFED_SHAMIR_SECRET_BYTES),
          "an all-ones secret (every chunk at its largest)");
    CHECK(sdfed_shamir_combine(shares, 2, 3, 5, scratch, back, &err) == SDFED_ERR_ARG &&
              strstr(err.message, "threshold is 3"),
          "two shares of threshold 3: %s", err.message);
}

static void test_inconsistent(void) {
    sdfed_rng rng, coefficients;
    sdfed_rng_seed(&rng, 3);
    sdfed_secagg_bytes src = test_bytes(&coefficients, 4);
    sdfed_error err = {0};
    uint64_t scratch[3 * 8];
    unsigned char a[SDFED_SHAMIR_SECRET_BYTES], b[SDFED_SHAMIR_SECRET_BYTES], back[SDFED_SHAMIR_SECRET_BYTES];
    secret_of(&rng, a);
    secret_of(&rng, b);
    sdfed_shamir_share sa[7], sb[7], mixed[7];
    CHECK(sdfed_shamir_split(a, 3, 7, &src, scratch, sa, &err) == SDFED_OK &&
              sdfed_shamir_split(b, 3, 7, &src, scratch, sb, &err) == SDFED_OK,
          "%s", err.message);
    memcpy(mixed, sa, sizeof mixed);
    mixed[5] = sb[5];
    CHECK(sdfed_shamir_combine(mixed, 7, 3, 7, scratch, back, &err) == SDFED_ERR_FORMAT &&
              strstr(err.message, "inconsistent"),
          "a share of another secret among more than t: %s", err.message);
    int caught = 0;
    for (int h = 0; h < 7; h++) { /* exactly t shares, one from elsewhere: the chunks' ranges catch it */
        memcpy(mixed, sa, sizeof mixed);
        mixed[h % 3] = sb[h % 3];
        mixed[h % 3].y[h % SDFED_SHAMIR_CHUNKS] ^= (uint64_t)h << 3;
        caught += sdfed_shamir_combine(mixed, 3, 3, 7, scratch, back, &err) == SDFED_ERR_FORMAT;
    }
    CHECK(caught == 7, "t shares mixed from two secrets: %d of 7 caught (2^-55 each to pass)", caught);
    memcpy(mixed, sa, sizeof mixed);
    mixed[1].x = mixed[0].x;
    CHECK(sdfed_shamir_combine(mixed, 3, 3, 7, scratch, back, &err) == SDFED_ERR_FORMAT, "two shares of one holder");
    mixed[1].x = 8;
    CHECK(sdfed_shamir_combine(mixed, 3, 3, 7, scratch, back, &err) == SDFED_ERR_FORMAT, "a holder beyond 7");
    mixed[1] = sa[1];
    mixed[2].y[0] = SDFED_SHAMIR_PRIME;
    CHECK(sdfed_shamir_combine(mixed, 3, 3, 7, scratch, back, &err) == SDFED_ERR_FORMAT, "y not below p");
    unsigned char wire[SDFED_SHAMIR_SHARE_BYTES];
    sdfed_shamir_share read;
    sdfed_shamir_share_write(&sa[4], wire);
    CHECK(sdfed_shamir_share_read(wire, 5, &read, &err) == SDFED_OK && !memcmp(read.y, sa[4].y, sizeof read.y) &&
              read.x == 5,
          "24 bytes and back");
    memset(wire + 8, 0xff, 8);
    CHECK(sdfed_shamir_share_read(wire, 5, &read, &err) == SDFED_ERR_FORMAT, "a y of 2^64 - 1 on the wire");
    CHECK(sdfed_shamir_split(a, 1, 7, &src, scratch, sa, &err) == SDFED_ERR_ARG, "threshold 1");
    CHECK(sdfed_shamir_split(a, 8, 7, &src, scratch, sa, &err) == SDFED_ERR_ARG, "threshold above the holders");
}

static void test_large(void) {
    /* a threshold of 300 among 601 holders (n = 10,000 at 0.45/0.45 shares among 3,495) */
    enum { HOLDERS = 601, T = 300 };
    sdfed_rng rng, coefficients;
    sdfed_rng_seed(&rng, 5);
    sdfed_secagg_bytes src = test_bytes(&coefficients, 6);
    sdfed_error err = {0};
    sdfed_shamir_share *shares = malloc(sizeof *shares * HOLDERS);
    uint64_t *scratch = malloc(sizeof *scratch * 3 * T);
    unsigned char secret[SDFED_SHAMIR_SECRET_BYTES], back[SDFED_SHAMIR_SECRET_BYTES];
    secret_of(&rng, secret);
    CHECK(sdfed_shamir_split(secret, T, HOLDERS, &src, scratch, shares, &err) == SDFED_OK, "%s", err.message);
    CHECK(sdfed_shamir_combine(shares + 101, T + 20, T, HOLDERS, scratch, back, &err) == SDFED_OK &&
              !memcmp(back, secret, SDFED_SHAMIR_SECRET_BYTES),
          "320 of 601 shares, threshold 300: %s", err.message);
    free(shares);
    free(scratch);
}

int main(void) {
    test_field();
    test_split_combine();
    test_inconsistent();
    test_large();
    return check_report("test_secagg_shamir");
}
