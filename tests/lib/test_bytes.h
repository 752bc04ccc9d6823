/* A deterministic byte source for the secure aggregation tests of the core
 * (fed/secagg_random.h), the same bytes on every target: the portable
 * generator of base/rng.h, little-endian (sdfed_secagg_rng_source). Not cryptographic: the real
 * sources are native/crypto.h's and the page's. */
#ifndef SDFED_TESTS_TEST_BYTES_H
#define SDFED_TESTS_TEST_BYTES_H

#include "base/rng.h"
#include "fed/secagg_random.h"

static inline sdfed_secagg_bytes test_bytes(sdfed_rng *rng, uint64_t seed) {
    sdfed_rng_seed(rng, seed);
    return sdfed_secagg_rng_source(rng);
}

#endif
