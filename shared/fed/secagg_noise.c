/* The exact discrete Gaussian sampler and its calibration (see
 * secagg_noise.h). */
#include "fed/secagg_noise.h"

#include <math.h>

/* ---- 128-bit unsigned integers, as much as the sampler needs ------------ */

typedef struct u128 {
    uint64_t hi, lo;
} u128;

static u128 u128_from(uint64_t v) { return (u128){.hi = 0, .lo = v}; }

static u128 mul64(uint64_t a, uint64_t b) {
    uint64_t a0 = a & 0xFFFFFFFFu, a1 = a >> 32, b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
    return (u128){.hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32), .lo = (mid << 32) | (p00 & 0xFFFFFFFFu)};
}

static int less(u128 a, u128 b) { return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo; }

static u128 sub128(u128 a, u128 b) { return (u128){.hi = a.hi - b.hi - (a.lo < b.lo), .lo = a.lo - b.lo}; }

/* a k for a < 2^100 and k < 2^27: below 2^127 */
static u128 mul_small(u128 a, uint64_t k) {
    u128 low = mul64(a.lo, k);
    return (u128){.hi = a.hi * k + low.hi, .lo = low.lo};
}

static int bit_length(u128 a) {
    int n = 0;
    while (a.hi || a.lo) {
        a.lo = a.lo >> 1 | a.hi << 63;
        a.hi >>= 1;
        n++;
    }
    return n;
}

/* ---- Canonne, Kamath, Steinke's samplers ------------------------------- */

/* *out = 1 with probability num / den (num <= den, den > 0): a uniform
 * integer below den by masked rejection, compared with num */
static int bernoulli(u128 num, u128 den, const sdfed_secagg_bytes *random, int *out, sdfed_error *err) {
    int bits = bit_length(sub128(den, u128_from(1)));
    for (;;) {
        u128 u;
        int rc = sdfed_secagg_draw_u64(random, &u.hi, err);
        if (!rc) rc = sdfed_secagg_draw_u64(random, &u.lo, err);
        if (rc) return rc;
        if (bits <= 64) {
            u.hi = 0;
            u.lo = bits == 64 ? u.lo : u.lo & (((uint64_t)1 << bits) - 1);
        } else {
            u.hi &= ((uint64_t)1 << (bits - 64)) - 1;
        }
        if (less(u, den)) {
            *out = less(u, num);
            return SDFED_OK;
        }
    }
}

/* Algorithm 1: *out = 1 with probability exp(-num/den) for num <= den */
static int bernoulli_exp_small(u128 num, u128 den, const sdfed_secagg_bytes *random, int *out, sdfed_error *err) {
    for (uint64_t k = 1;; k++) {
        if (k >= ((uint64_t)1 << 26))
            return sdfed_fail(err, SDFED_ERR_NUMERIC, "discrete Gaussian: a Bernoulli loop ran past 2^26 steps");
        int a, rc = bernoulli(num, mul_small(den, k), random, &a, err);
        if (rc) return rc;
        if (!a) {
            *out = (int)(k & 1); /* the first failure at an odd k: probability exp(-gamma) */
            return SDFED_OK;
        }
    }
}

/* *out = 1 with probability exp(-num/den) for any num/den >= 0: one
 * Bernoulli(exp(-1)) per whole unit, then the fraction */
static int bernoulli_exp(u128 num, u128 den, const sdfed_secagg_bytes *random, int *out, sdfed_error *err) {
    while (less(den, num)) {
        int b, rc = bernoulli_exp_small(den, den, random, &b, err);
        if (rc) return rc;
        if (!b) {
            *out = 0;
            return SDFED_OK;
        }
        num = sub128(num, den);
    }
    return bernoulli_exp_small(num, den, random, out, err);
}

/* Algorithm 2: *out ~ discrete Laplace of scale t, P[x] proportional to
 * exp(-|x| / t) */
static int discrete_laplace(uint64_t t, const sdfed_secagg_bytes *random, int64_t *out, sdfed_error *err) {
    for (;;) {
        uint64_t u;
        int d, rc = sdfed_secagg_draw_below(random, t, &u, err);
        if (!rc) rc = bernoulli_exp(u128_from(u), u128_from(t), random, &d, err);
        if (rc) return rc;
        if (!d) continue;
        uint64_t v = 0;
        for (;;) {
            int a;
            rc = bernoulli_exp_small(u128_from(1), u128_from(1), random, &a, err);
            if (rc) return rc;
            if (!a) break;
            v++;
        }
        uint64_t sign;
        rc = sdfed_secagg_draw_below(random, 2, &sign, err);
        if (rc) return rc;
        uint64_t x = u + t * v;
        if (sign && x == 0) continue;
        *out = sign ? -(int64_t)x : (int64_t)x;
        return SDFED_OK;
    }
}

static uint64_t isqrt(uint64_t v) {
    uint64_t r = (uint64_t)sqrt((double)v);
    while (r * r > v) r--;
    while ((r + 1) * (r + 1) <= v) r++;
    return r;
}

int sdfed_dgauss_sample(uint64_t sigma2, const sdfed_secagg_bytes *random, int64_t *out, sdfed_error *err) {
    if (sigma2 < 1 || sigma2 > SDFED_DGAUSS_MAX_SIGMA2)
        return sdfed_fail(err, SDFED_ERR_ARG, "discrete Gaussian: sigma^2 = %llu (1 to 2^48)",
                          (unsigned long long)sigma2);
    uint64_t t = isqrt(sigma2) + 1;      /* floor(sigma) + 1 */
    u128 den = mul64(t * t, 2 * sigma2); /* 2 sigma^2 t^2: t^2 < 2^49, 2 sigma^2 <= 2^49 */
    for (;;) {
        int64_t y;
        int rc = discrete_laplace(t, random, &y, err);
        if (rc) return rc;
        uint64_t magnitude = y < 0 ? (uint64_t)0 - (uint64_t)y : (uint64_t)y;
        u128 yt = mul64(magnitude, t);
        if (yt.hi || yt.lo >= ((uint64_t)1 << 63)) continue; /* acceptance below exp(-2^27) */
        uint64_t diff = yt.lo > sigma2 ? yt.lo - sigma2 : sigma2 - yt.lo;
        int c;
        rc = bernoulli_exp(mul64(diff, diff), den, random, &c, err); /* (|y| t - sigma^2)^2 / (2 sigma^2 t^2) */
        if (rc) return rc;
        if (c) {
            *out = y;
            return SDFED_OK;
        }
    }
}

int sdfed_secagg_add_noise(int ring_bits, uint64_t *v, size_t len, uint64_t sigma2, const sdfed_secagg_bytes *random,
                           sdfed_error *err) {
    if (ring_bits < 2 || ring_bits > 64) return sdfed_fail(err, SDFED_ERR_ARG, "secagg noise: ring_bits %d", ring_bits);
    uint64_t mask = ring_bits >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << ring_bits) - 1;
    for (size_t j = 0; j < len; j++) {
        int64_t x;
        int rc = sdfed_dgauss_sample(sigma2, random, &x, err);
        if (rc) return sdfed_fail_context(err, rc, "secagg noise on coordinate %zu", j);
        v[j] = (v[j] + (uint64_t)x) & mask;
    }
    return SDFED_OK;
}

int sdfed_secagg_noise_per_client(double central_sigma, int min_inputs, uint64_t *sigma2, sdfed_error *err) {
    if (min_inputs < 1) return sdfed_fail(err, SDFED_ERR_ARG, "secagg noise: %d inputs at least", min_inputs);
    if (!(central_sigma > 0) || !isfinite(central_sigma))
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg noise: a central sigma of %g", central_sigma);
    double share = ceil(central_sigma * central_sigma / min_inputs);
    if (share > (double)SDFED_DGAUSS_MAX_SIGMA2)
        return sdfed_fail(err, SDFED_ERR_ARG,
                          "secagg noise: each of %d clients would add sigma^2 = %g, beyond 2^48; lower quant_bits or "
                          "the noise",
                          min_inputs, share);
    *sigma2 = share < 1 ? 1 : (uint64_t)share;
    return SDFED_OK;
}

uint64_t sdfed_secagg_noise_bound(uint64_t sigma2, int clients) {
    return (uint64_t)ceil(20.0 * sqrt((double)clients * (double)sigma2));
}
