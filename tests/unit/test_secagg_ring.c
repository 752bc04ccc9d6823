/* Secure aggregation's ring and noise (fed/secagg_ring.h,
 * fed/secagg_noise.h): the wrap refusal naming the keys, stochastic
 * rounding, masks that cancel by the sign rule, the decoded sum; the exact
 * discrete Gaussian's distribution, its calibration, and the same samples
 * from the same bytes on every target. Every build. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fed/secagg_noise.h"
#include "fed/secagg_ring.h"
#include "test_bytes.h"

static sdfed_secagg_ring ring(int clients, int quant_bits, int64_t max_weight, int ring_bits) {
    return (sdfed_secagg_ring){
        .clip = 0.5, .quant_bits = quant_bits, .max_weight = max_weight, .ring_bits = ring_bits, .clients = clients};
}

static void test_wrap(void) {
    sdfed_error err = {0};
    /* 2^10 clients, 16 bits, weights up to 2^10: b + log2 n + log2 w + 1 = 37 bits, and 36 would wrap */
    sdfed_secagg_ring r = ring(1024, 16, 1024, 37);
    CHECK(sdfed_secagg_ring_bits_needed(&r) == 36, "needs %d", sdfed_secagg_ring_bits_needed(&r));
    r = ring(1025, 16, 1024, 36);
    CHECK(sdfed_secagg_ring_bits_needed(&r) == 37, "one client more: 37 (got %d)", sdfed_secagg_ring_bits_needed(&r));
    CHECK(sdfed_secagg_ring_check(&r, &err) == SDFED_ERR_ARG && strstr(err.message, "secure_aggregation.ring_bits 36") &&
              strstr(err.message, "needs ring_bits >= 37") && strstr(err.message, "quant_bits") &&
              strstr(err.message, "max_weight"),
          "a ring that could wrap is refused by its keys: %s", err.message);
    r.ring_bits = 37;
    CHECK(sdfed_secagg_ring_check(&r, &err) == SDFED_OK, "37 bits hold it");
    r.noise_bound = (uint64_t)1 << 40;
    CHECK(sdfed_secagg_ring_check(&r, &err) == SDFED_ERR_ARG && strstr(err.message, "noise"),
          "the noise's room counts: %s", err.message);
    r = ring(1000000, 31, (int64_t)1 << 40, 64);
    CHECK(sdfed_secagg_ring_check(&r, &err) == SDFED_ERR_ARG && strstr(err.message, "even at ring_bits 64"),
          "past 64 bits: %s", err.message);
    /* Flower's default (2^22 per coordinate in a 32-bit ring) wraps past 1,024 clients; here it is refused */
    r = ring(1025, 23, 1, 32);
    CHECK(sdfed_secagg_ring_check(&r, &err) == SDFED_ERR_ARG, "1,025 clients of 2^22 in 32 bits: refused");
    r = ring(10, 1, 1, 32);
    CHECK(sdfed_secagg_ring_check(&r, &err) == SDFED_ERR_ARG && strstr(err.message, "quant_bits"), "1 bit");
    r = ring(10, 16, 1, 32);
    r.clip = 0;
    CHECK(sdfed_secagg_ring_check(&r, &err) == SDFED_ERR_ARG && strstr(err.message, "clip"), "clip 0");
}

static void test_quantise(void) {
    sdfed_error err = {0};
    sdfed_rng rng;
    sdfed_secagg_bytes src = test_bytes(&rng, 11);
    sdfed_secagg_ring r = ring(100, 8, 1000, 32); /* qmax 127, s = 254 */
    float x[6] = {0.25f, -0.25f, 2.0f, -2.0f, 0.001f, 0.0f};
    uint64_t v[7];
    CHECK(sdfed_secagg_quantise(&r, x, 6, 3, &src, v, &err) == SDFED_OK, "%s", err.message);
    int64_t q[6];
    for (int j = 0; j < 6; j++) q[j] = sdfed_secagg_ring_signed(32, v[j]);
    CHECK(q[2] == 3 * 127 && q[3] == -3 * 127, "clipped to +-c, weighted by 3: %lld %lld", (long long)q[2],
          (long long)q[3]);
    CHECK((q[0] == 3 * 63 || q[0] == 3 * 64) && (q[1] == -3 * 63 || q[1] == -3 * 64), "0.25 s = 63.5 rounds to 63 or 64");
    CHECK(q[5] == 0 && v[6] == 3, "zero stays zero; the weight is the last element");
    /* stochastic rounding is unbiased: 0.001 s = 0.254 */
    double sum = 0;
    const int draws = 20000;
    for (int i = 0; i < draws; i++) {
        uint64_t one[2];
        sdfed_secagg_quantise(&r, &x[4], 1, 1, &src, one, &err);
        sum += (double)sdfed_secagg_ring_signed(32, one[0]);
    }
    CHECK(fabs(sum / draws - 0.254) < 0.01, "E[q] = x s: %g against 0.254", sum / draws);
    CHECK(sdfed_secagg_quantise(&r, x, 6, 5000, &src, v, &err) == SDFED_OK && v[6] == 1000,
          "a weight above max_weight counts as max_weight");
    CHECK(sdfed_secagg_quantise(&r, x, 6, -1, &src, v, &err) == SDFED_ERR_ARG, "a negative weight");
    x[1] = NAN;
    CHECK(sdfed_secagg_quantise(&r, x, 6, 1, &src, v, &err) == SDFED_ERR_NUMERIC && strstr(err.message, "coordinate 1"),
          "a NaN named: %s", err.message);
}

static void test_masks(void) {
    sdfed_error err = {0};
    for (int bits = 20; bits <= 64; bits += 44) { /* 4-byte and 8-byte elements */
        unsigned char stream[8 * 5];
        size_t bytes = sdfed_secagg_stream_bytes(bits, 5);
        for (size_t i = 0; i < bytes; i++) stream[i] = (unsigned char)(i * 37 + 11);
        uint64_t a[5] = {1, 2, 3, 4, 5}, b[5] = {10, 20, 30, 40, 50}, sum[5] = {0};
        /* clients 3 and 8 share a mask: 3 adds it, 8 subtracts it */
        CHECK(sdfed_secagg_pair_sign(3, 8) == 1 && sdfed_secagg_pair_sign(8, 3) == -1, "the sign rule");
        CHECK(sdfed_secagg_ring_add_stream(bits, a, 5, stream, bytes, sdfed_secagg_pair_sign(3, 8), &err) == SDFED_OK &&
                  sdfed_secagg_ring_add_stream(bits, b, 5, stream, bytes, sdfed_secagg_pair_sign(8, 3), &err) == 0,
              "%s", err.message);
        CHECK(a[0] != 1, "the mask changes the input");
        sdfed_secagg_ring_add(bits, sum, a, 5);
        sdfed_secagg_ring_add(bits, sum, b, 5);
        CHECK(sum[0] == 11 && sum[4] == 55, "%d bits: the pair's masks cancel in the sum", bits);
        uint64_t e0 = bits <= 32 ? (uint64_t)stream[0] | (uint64_t)stream[1] << 8 | (uint64_t)stream[2] << 16 |
                                       (uint64_t)stream[3] << 24
                                 : 0;
        if (bits <= 32) CHECK(((1 + (e0 & ((1u << bits) - 1))) & ((1u << bits) - 1)) == a[0], "4 bytes, little-endian");
        CHECK(sdfed_secagg_ring_add_stream(bits, a, 5, stream, bytes - 1, 1, &err) == SDFED_ERR_ARG, "a short stream");
    }
    CHECK(sdfed_secagg_ring_signed(8, 255) == -1 && sdfed_secagg_ring_signed(8, 127) == 127 &&
              sdfed_secagg_ring_signed(64, UINT64_MAX) == -1,
          "two's complement");
}

static void test_dequantise(void) {
    sdfed_error err = {0};
    sdfed_rng rng;
    sdfed_secagg_bytes src = test_bytes(&rng, 12);
    sdfed_secagg_ring r = ring(4, 12, 100, 24);
    float x[4][3] = {{0.1f, -0.2f, 0.3f}, {0.4f, 0.1f, -0.5f}, {-0.3f, 0.0f, 0.2f}, {0.05f, 0.45f, -0.1f}};
    int64_t w[4] = {10, 25, 7, 58};
    uint64_t sum[4] = {0}, v[4];
    int64_t exact[3] = {0}, total = 0;
    for (int i = 0; i < 4; i++) {
        CHECK(sdfed_secagg_quantise(&r, x[i], 3, w[i], &src, v, &err) == SDFED_OK, "%s", err.message);
        sdfed_secagg_ring_add(24, sum, v, 4);
        for (int j = 0; j < 3; j++) exact[j] += sdfed_secagg_ring_signed(24, v[j]);
        total += w[i];
    }
    float mean[3];
    int64_t weight;
    CHECK(sdfed_secagg_dequantise(&r, sum, 3, mean, &weight, &err) == SDFED_OK && weight == 100, "%s", err.message);
    double scale = 2047 / 0.5;
    int same = 1, close = 1;
    for (int j = 0; j < 3; j++) {
        same &= mean[j] == (float)((double)exact[j] / ((double)total * scale));
        double plain = 0;
        for (int i = 0; i < 4; i++) plain += w[i] * (double)x[i][j];
        close &= fabs(mean[j] - plain / total) < 1.0 / scale;
    }
    CHECK(same, "the mean is the quantised inputs' weighted mean, as the header defines it");
    CHECK(close, "within one quantisation step of the float weighted mean");
    sum[1] ^= (uint64_t)1 << 22;
    CHECK(sdfed_secagg_dequantise(&r, sum, 3, mean, &weight, &err) == SDFED_ERR_FORMAT &&
              strstr(err.message, "wrongly unmasked"),
          "a coordinate no 4 inputs make: %s", err.message);
    sum[1] ^= (uint64_t)1 << 22;
    sum[3] = 401;
    CHECK(sdfed_secagg_dequantise(&r, sum, 3, mean, &weight, &err) == SDFED_ERR_FORMAT, "a weight above 4 x 100");
}

static void test_noise(void) {
    sdfed_error err = {0};
    sdfed_rng rng;
    sdfed_secagg_bytes src = test_bytes(&rng, 13);
    /* N_Z(0, 4): the empirical law against exp(-x^2 / 8) / Z */
    enum { DRAWS = 40000, SPAN = 12 };
    int counts[2 * SPAN + 1] = {0}, outside = 0;
    double sum = 0, sum2 = 0;
    for (int i = 0; i < DRAWS; i++) {
        int64_t x;
        if (sdfed_dgauss_sample(4, &src, &x, &err) != SDFED_OK) break;
        sum += (double)x;
        sum2 += (double)x * (double)x;
        if (x < -SPAN || x > SPAN)
            outside++;
        else
            counts[x + SPAN]++;
    }
    double z = 0;
    for (int x = -40; x <= 40; x++) z += exp(-x * x / 8.0);
    double worst = 0;
    for (int x = -SPAN; x <= SPAN; x++) {
        double expected = DRAWS * exp(-x * x / 8.0) / z, sd = sqrt(expected) + 1;
        double dev = fabs(counts[x + SPAN] - expected) / sd;
        if (dev > worst) worst = dev;
    }
    CHECK(worst < 4.5, "each value's count within 4.5 standard deviations of N_Z(0, 4)'s (worst %.2f)", worst);
    CHECK(fabs(sum / DRAWS) < 0.05 && fabs(sum2 / DRAWS - 4) < 0.15 && outside == 0, "mean %g, variance %g",
          sum / DRAWS, sum2 / DRAWS);
    /* a large sigma^2: 10^8 */
    sum = 0;
    sum2 = 0;
    for (int i = 0; i < 4000; i++) {
        int64_t x;
        sdfed_dgauss_sample(100000000, &src, &x, &err);
        sum += (double)x;
        sum2 += (double)x * (double)x;
    }
    CHECK(fabs(sum2 / 4000 / 1e8 - 1) < 0.07, "sigma^2 1e8: variance ratio %g", sum2 / 4000 / 1e8);
    /* the same bytes, the same samples, on every target */
    sdfed_secagg_bytes fixed = test_bytes(&rng, 99);
    int64_t seq[8];
    for (int i = 0; i < 8; i++) sdfed_dgauss_sample(1000, &fixed, &seq[i], &err);
    static const int64_t EXPECTED[8] = {32, 5, 49, 23, 45, 47, 55, -57};
    CHECK(!memcmp(seq, EXPECTED, sizeof seq), "pinned samples: %lld %lld %lld %lld %lld %lld %lld %lld",
          (long long)seq[0], (long long)seq[1], (long long)seq[2], (long long)seq[3], (long long)seq[4],
          (long long)seq[5], (long long)seq[6], (long long)seq[7]);
    CHECK(sdfed_dgauss_sample(0, &src, &seq[0], &err) == SDFED_ERR_ARG, "sigma^2 0");
    CHECK(sdfed_dgauss_sample(((uint64_t)1 << 48) + 1, &src, &seq[0], &err) == SDFED_ERR_ARG, "sigma^2 past 2^48");
    /* calibration for the fewest survivors */
    uint64_t s2;
    CHECK(sdfed_secagg_noise_per_client(1000.0, 7, &s2, &err) == SDFED_OK && s2 == 142858,
          "sigma 1000 over 7 inputs: ceil(10^6 / 7) = 142858, got %llu", (unsigned long long)s2);
    CHECK(7 * s2 >= 1000000, "7 such clients carry at least the central variance");
    CHECK(sdfed_secagg_noise_bound(142858, 10) == (uint64_t)ceil(20 * sqrt(1428580.0)), "the bound: 20 sigma of 10");
    uint64_t v[3] = {5, 5, 5};
    CHECK(sdfed_secagg_add_noise(16, v, 3, 4, &src, &err) == SDFED_OK && (v[0] != 5 || v[1] != 5 || v[2] != 5),
          "noise added in the ring");
}

int main(void) {
    test_wrap();
    test_quantise();
    test_masks();
    test_dequantise();
    test_noise();
    return check_report("test_secagg_ring");
}
