/* The image domains (see domain.h). */
#include "data/domain.h"

#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/clamp.h"

const char *const sdfed_domain_names[SDFED_DOMAINS] = {"original", "inverted", "rotated", "low-contrast"};

int sdfed_domain_apply(int domain, const uint8_t *in, int rows, int cols, int channels, uint64_t seed,
                       uint64_t image_index, uint8_t *out, sdfed_error *err) {
    if (rows < 1 || cols < 1) return sdfed_fail(err, SDFED_ERR_ARG, "domain: bad image size %d x %d", rows, cols);
    if (channels < 1 || channels > 4) return sdfed_fail(err, SDFED_ERR_ARG, "domain: %d channels (1..4)", channels);
    if (!in || !out) return sdfed_fail(err, SDFED_ERR_ARG, "domain: NULL image");
    size_t n = (size_t)rows * (size_t)cols * (size_t)channels, pixel = (size_t)channels;
    switch (domain) {
    case SDFED_DOMAIN_ORIGINAL: memcpy(out, in, n); break;
    case SDFED_DOMAIN_INVERTED:
        for (size_t i = 0; i < n; i++) out[i] = (uint8_t)(255 - in[i]);
        break;
    case SDFED_DOMAIN_ROTATED:
        /* out is (cols, rows): its row r is the input's column r read bottom-up */
        for (int r = 0; r < cols; r++) {
            uint8_t *out_r = out + (size_t)r * rows * pixel;
            for (int c = 0; c < rows; c++)
                memcpy(out_r + c * pixel, in + ((size_t)(rows - 1 - c) * cols + r) * pixel, pixel);
        }
        break;
    case SDFED_DOMAIN_LOW_CONTRAST: {
        sdfed_rng rng;
        sdfed_rng_seed_stream(&rng, seed, image_index);
        for (size_t i = 0; i < n; i++) {
            int v = 64 + in[i] / 2 + (int)sdfed_rng_below(&rng, 33) - 16;
            out[i] = (uint8_t)sdfed_clamp_int(v, 0, 255);
        }
        break;
    }
    default: return sdfed_fail(err, SDFED_ERR_ARG, "domain: unknown domain %d (0..%d)", domain, SDFED_DOMAINS - 1);
    }
    return SDFED_OK;
}

int sdfed_domain_assign(int n, int n_domains, uint64_t seed, uint8_t *domain, sdfed_error *err) {
    if (n < 0) return sdfed_fail(err, SDFED_ERR_ARG, "domain assign: negative count %d", n);
    if (n_domains < 1 || n_domains > 256)
        return sdfed_fail(err, SDFED_ERR_ARG, "domain assign: n_domains must be in 1..256, got %d", n_domains);
    if (n == 0) return SDFED_OK;
    int *order = malloc(sizeof *order * (size_t)n);
    if (!order) return sdfed_fail(err, SDFED_ERR_NOMEM, "domain assign: out of memory for %d samples", n);
    for (int i = 0; i < n; i++) order[i] = i;
    sdfed_rng rng;
    sdfed_rng_seed(&rng, seed);
    sdfed_rng_shuffle(&rng, order, (size_t)n);
    for (int i = 0; i < n; i++) domain[order[i]] = (uint8_t)(i % n_domains);
    free(order);
    return SDFED_OK;
}
