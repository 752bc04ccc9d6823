/* A deterministic byte source for the secure aggregation tests of the core
 * (fed/secagg_random.h), the same bytes on every target: the portable
 * generator of base/rng.h, little-endian. Not cryptographic: the real
 * sources are native/crypto.h's and the page's. */
#ifndef SDFED_TESTS_TEST_BYTES_H
#define SDFED_TESTS_TEST_BYTES_H

#include "base/rng.h"
#include "fed/secagg_random.h"

static int test_bytes_fill(void *ctx, unsigned char *out, size_t n, sdfed_error *err) {
    (void)err;
    sdfed_rng *rng = ctx;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = sdfed_rng_u64(rng);
        for (size_t b = 0; b < 8 && i + b < n; b++) out[i + b] = (unsigned char)(v >> (8 * b));
    }
    return SDFED_OK;
}

static inline sdfed_secagg_bytes test_bytes(sdfed_rng *rng, uint64_t seed) {
    sdfed_rng_seed(rng, seed);
    return (sdfed_secagg_bytes){.fill = test_bytes_fill, .ctx = rng};
}

#endif
