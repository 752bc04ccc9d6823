/* Secure aggregation's ring: quantisation, masks, the sum decoded (see
 * secagg_ring.h). */
#include "fed/secagg_ring.h"
#include "base/clamp.h"

#include <math.h>
#include <stdio.h>

#define MAX_WEIGHT ((int64_t)1 << 40)

static uint64_t ring_mask(int ring_bits) { return ring_bits >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << ring_bits) - 1; }

int64_t sdfed_secagg_ring_qmax(const sdfed_secagg_ring *r) { return ((int64_t)1 << (r->quant_bits - 1)) - 1; }

/* a b, or UINT64_MAX when it does not fit */
static uint64_t mul_saturating(uint64_t a, uint64_t b) { return b && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

int sdfed_secagg_ring_bits_needed(const sdfed_secagg_ring *r) {
    uint64_t inputs = mul_saturating((uint64_t)r->clients, (uint64_t)r->max_weight);
    uint64_t bound = mul_saturating(inputs, (uint64_t)sdfed_secagg_ring_qmax(r));
    bound = bound > UINT64_MAX - r->noise_bound ? UINT64_MAX : bound + r->noise_bound;
    if (inputs > bound) bound = inputs;
    if (bound >= (uint64_t)1 << 63) return 65; /* UINT64_MAX included: it stands for "more than 64 bits" */
    int length = 0;
    while (length < 64 && (bound >> length)) length++;
    return length + 1; /* bound < 2^length <= 2^(B-1) */
}

int sdfed_secagg_ring_check(const sdfed_secagg_ring *r, sdfed_error *err) {
    if (!(r->clip > 0 && isfinite(r->clip)))
        return sdfed_fail(err, SDFED_ERR_ARG, "secure_aggregation.clip must be a finite number > 0, got %g", r->clip);
    if (r->quant_bits < 2 || r->quant_bits > 31)
        return sdfed_fail(err, SDFED_ERR_ARG, "secure_aggregation.quant_bits must be 2 to 31, got %d", r->quant_bits);
    if (r->ring_bits < 2 || r->ring_bits > 64)
        return sdfed_fail(err, SDFED_ERR_ARG, "secure_aggregation.ring_bits must be 2 to 64, got %d", r->ring_bits);
    if (r->max_weight < 1 || r->max_weight > MAX_WEIGHT)
        return sdfed_fail(err, SDFED_ERR_ARG, "secure_aggregation.max_weight must be 1 to 2^40, got %lld",
                          (long long)r->max_weight);
    if (r->clients < 1 || r->clients > 1000000)
        return sdfed_fail(err, SDFED_ERR_ARG, "secure aggregation of %d clients (1 to 1,000,000)", r->clients);
    int needed = sdfed_secagg_ring_bits_needed(r);
    if (needed > r->ring_bits) {
        char noise[96] = "";
        if (r->noise_bound) snprintf(noise, sizeof noise, " plus noise up to %llu", (unsigned long long)r->noise_bound);
        if (needed > 64)
            return sdfed_fail(err, SDFED_ERR_ARG,
                              "secure_aggregation: the sum of %d clients' inputs (quant_bits %d, max_weight %lld%s) "
                              "could wrap even at ring_bits 64; lower quant_bits or max_weight",
                              r->clients, r->quant_bits, (long long)r->max_weight, noise);
        return sdfed_fail(err, SDFED_ERR_ARG,
                          "secure_aggregation.ring_bits %d: the sum of %d clients' inputs (quant_bits %d, max_weight "
                          "%lld%s) could wrap; it needs ring_bits >= %d, or lower quant_bits or max_weight",
                          r->ring_bits, r->clients, r->quant_bits, (long long)r->max_weight, noise, needed);
    }
    return SDFED_OK;
}

int sdfed_secagg_quantise(const sdfed_secagg_ring *r, const float *x, size_t P, int64_t weight,
                          const sdfed_secagg_bytes *random, uint64_t *out, sdfed_error *err) {
    int rc = sdfed_secagg_ring_check(r, err);
    if (rc) return rc;
    if (weight < 0) return sdfed_fail(err, SDFED_ERR_ARG, "secagg: a weight (sample count) of %lld", (long long)weight);
    for (size_t j = 0; j < P; j++)
        if (!isfinite(x[j])) return sdfed_fail(err, SDFED_ERR_NUMERIC, "secagg: coordinate %zu is not finite", j);
    int64_t w = weight < r->max_weight ? weight : r->max_weight;
    int64_t qmax = sdfed_secagg_ring_qmax(r);
    double scale = (double)qmax / r->clip;
    uint64_t mask = ring_mask(r->ring_bits);
    for (size_t j = 0; j < P; j++) {
        double clipped = sdfed_clamp_double((double)x[j], -r->clip, r->clip);
        double v = clipped * scale, below = floor(v);
        uint64_t u;
        rc = sdfed_secagg_draw_u64(random, &u, err);
        if (rc) return sdfed_fail_context(err, rc, "secagg: rounding coordinate %zu", j);
        int64_t q = (int64_t)below + ((double)(u >> 11) < (v - below) * 0x1.0p53);
        q = sdfed_clamp_i64(q, -qmax, qmax);
        out[j] = (uint64_t)(w * q) & mask;
    }
    out[P] = (uint64_t)w & mask;
    return SDFED_OK;
}

void sdfed_secagg_ring_add(int ring_bits, uint64_t *acc, const uint64_t *v, size_t len) {
    uint64_t mask = ring_mask(ring_bits);
    for (size_t j = 0; j < len; j++) acc[j] = (acc[j] + v[j]) & mask;
}

void sdfed_secagg_ring_sub(int ring_bits, uint64_t *acc, const uint64_t *v, size_t len) {
    uint64_t mask = ring_mask(ring_bits);
    for (size_t j = 0; j < len; j++) acc[j] = (acc[j] - v[j]) & mask;
}

int64_t sdfed_secagg_ring_signed(int ring_bits, uint64_t v) {
    uint64_t mask = ring_mask(ring_bits);
    v &= mask;
    if (ring_bits < 64 && v >> (ring_bits - 1)) return (int64_t)(v | ~mask); /* sign-extended */
    return (int64_t)v;
}

size_t sdfed_secagg_stream_bytes(int ring_bits, size_t len) { return len * (ring_bits <= 32 ? 4 : 8); }

int sdfed_secagg_ring_add_stream(int ring_bits, uint64_t *v, size_t len, const unsigned char *stream,
                                 size_t stream_bytes, int sign, sdfed_error *err) {
    if (ring_bits < 2 || ring_bits > 64) return sdfed_fail(err, SDFED_ERR_ARG, "secagg: ring_bits %d", ring_bits);
    if (sign != 1 && sign != -1) return sdfed_fail(err, SDFED_ERR_ARG, "secagg: a mask's sign of %d", sign);
    if (stream_bytes != sdfed_secagg_stream_bytes(ring_bits, len))
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg: a mask of %zu elements takes %zu stream bytes, got %zu", len,
                          sdfed_secagg_stream_bytes(ring_bits, len), stream_bytes);
    uint64_t mask = ring_mask(ring_bits);
    int width = ring_bits <= 32 ? 4 : 8;
    for (size_t j = 0; j < len; j++) {
        const unsigned char *at = stream + (size_t)width * j;
        uint64_t e = 0;
        for (int b = width - 1; b >= 0; b--) e = e << 8 | at[b];
        v[j] = (sign > 0 ? v[j] + e : v[j] - e) & mask;
    }
    return SDFED_OK;
}

int sdfed_secagg_pair_sign(int i, int j) {
    if (i == j) return 0;
    return i < j ? 1 : -1;
}

int sdfed_secagg_dequantise(const sdfed_secagg_ring *r, const uint64_t *sum, size_t P, float *mean, int64_t *weight_sum,
                            sdfed_error *err) {
    int rc = sdfed_secagg_ring_check(r, err);
    if (rc) return rc;
    int64_t w = sdfed_secagg_ring_signed(r->ring_bits, sum[P]);
    int64_t most_weight = (int64_t)r->clients * r->max_weight;
    if (w < 0 || w > most_weight)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "secagg: the sum's weight %lld is not one of %d inputs (0 to %lld): wrongly unmasked",
                          (long long)w, r->clients, (long long)most_weight);
    if (w == 0) return sdfed_fail(err, SDFED_ERR_ARG, "secagg: the inputs' weights sum to 0: no mean");
    /* |S_j| <= n max_weight qmax + noise_bound, which fits in 63 bits (ring_check) */
    uint64_t most = (uint64_t)most_weight * (uint64_t)sdfed_secagg_ring_qmax(r) + r->noise_bound;
    double scale = (double)sdfed_secagg_ring_qmax(r) / r->clip;
    for (size_t j = 0; j < P; j++) {
        int64_t s = sdfed_secagg_ring_signed(r->ring_bits, sum[j]);
        uint64_t magnitude = s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
        if (magnitude > most)
            return sdfed_fail(err, SDFED_ERR_FORMAT,
                              "secagg: the sum's coordinate %zu (%lld) is beyond what %d inputs make: wrongly unmasked",
                              j, (long long)s, r->clients);
        mean[j] = (float)((double)s / ((double)w * scale));
    }
    *weight_sum = w;
    return SDFED_OK;
}

int sdfed_secagg_plain_mean(const sdfed_secagg_ring *r, const uint64_t *const *inputs, int n, size_t P, float *mean,
                            int64_t *weight_sum, sdfed_error *err) {
    int rc = sdfed_secagg_ring_check(r, err);
    if (rc) return rc;
    if (n < 1 || n > r->clients)
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg: the mean of %d inputs (1 to %d)", n, r->clients);
    int64_t w = 0;
    for (int i = 0; i < n; i++)
        if (__builtin_add_overflow(w, sdfed_secagg_ring_signed(r->ring_bits, inputs[i][P]), &w))
            return sdfed_fail(err, SDFED_ERR_ARG, "secagg: the inputs' weights overflow");
    if (w <= 0) return sdfed_fail(err, SDFED_ERR_ARG, "secagg: the inputs' weights sum to %lld: no mean", (long long)w);
    double scale = (double)sdfed_secagg_ring_qmax(r) / r->clip;
    for (size_t j = 0; j < P; j++) {
        int64_t s = 0;
        for (int i = 0; i < n; i++)
            if (__builtin_add_overflow(s, sdfed_secagg_ring_signed(r->ring_bits, inputs[i][j]), &s))
                return sdfed_fail(err, SDFED_ERR_ARG, "secagg: the inputs' coordinate %zu overflows", j);
        mean[j] = (float)((double)s / ((double)w * scale));
    }
    *weight_sum = w;
    return SDFED_OK;
}
