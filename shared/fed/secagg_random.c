/* Secure aggregation's draws from a caller's byte source (see secagg_random.h). */
#include "fed/secagg_random.h"

#include <string.h>

int sdfed_secagg_draw(const sdfed_secagg_bytes *src, unsigned char *out, size_t n, sdfed_error *err) {
    if (!src || !src->fill) return sdfed_fail(err, SDFED_ERR_ARG, "secagg: no source of random bytes");
    return n ? src->fill(src->ctx, out, n, err) : SDFED_OK;
}

int sdfed_secagg_draw_u32(const sdfed_secagg_bytes *src, uint32_t *out, sdfed_error *err) {
    unsigned char b[4];
    int rc = sdfed_secagg_draw(src, b, sizeof b, err);
    if (rc) return rc;
    *out = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return SDFED_OK;
}

int sdfed_secagg_draw_u64(const sdfed_secagg_bytes *src, uint64_t *out, sdfed_error *err) {
    unsigned char b[8];
    int rc = sdfed_secagg_draw(src, b, sizeof b, err);
    if (rc) return rc;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | b[i];
    *out = v;
    return SDFED_OK;
}

int sdfed_secagg_draw_below(const sdfed_secagg_bytes *src, uint64_t m, uint64_t *out, sdfed_error *err) {
    if (m == 0) return sdfed_fail(err, SDFED_ERR_ARG, "secagg: an integer below 0 was asked for");
    if (m == 1) {
        *out = 0;
        return SDFED_OK;
    }
    uint64_t reject_from = (uint64_t)0 - ((uint64_t)0 - m) % m; /* 2^64 - (2^64 mod m); 0 when m divides 2^64 */
    for (;;) {
        uint64_t v;
        int rc = sdfed_secagg_draw_u64(src, &v, err);
        if (rc) return rc;
        if (reject_from == 0 || v < reject_from) {
            *out = v % m;
            return SDFED_OK;
        }
    }
}

static int buffer_fill(void *ctx, unsigned char *out, size_t n, sdfed_error *err) {
    sdfed_secagg_buffer *b = ctx;
    if (b->size - b->used < n)
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg: the random buffer ran dry (%zu bytes asked, %zu left of %zu)", n,
                          b->size - b->used, b->size);
    memcpy(out, b->bytes + b->used, n);
    b->used += n;
    return SDFED_OK;
}

sdfed_secagg_bytes sdfed_secagg_buffer_source(sdfed_secagg_buffer *buffer) {
    return (sdfed_secagg_bytes){.fill = buffer_fill, .ctx = buffer};
}

static int rng_fill(void *ctx, unsigned char *out, size_t n, sdfed_error *err) {
    (void)err;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = sdfed_rng_u64(ctx);
        for (size_t b = 0; b < 8 && i + b < n; b++) out[i + b] = (unsigned char)(v >> (8 * b));
    }
    return SDFED_OK;
}

sdfed_secagg_bytes sdfed_secagg_rng_source(sdfed_rng *rng) {
    return (sdfed_secagg_bytes){.fill = rng_fill, .ctx = rng};
}
