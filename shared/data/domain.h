/* The four image "domains" of the multi-domain setting: every image is seen
 * through one of four fixed transforms of its 8-bit samples (v, 0..255), on
 * images of any size with any number of channels (a pixel is `channels`
 * consecutive samples, rows stored one after another):
 *   0 ORIGINAL      v
 *   1 INVERTED      255 - v
 *   2 ROTATED       rotated 90 degrees clockwise: out (cols, rows) with
 *                   out[r][c] = in[rows - 1 - c][r], whole pixels; the
 *                   caller's rows and cols swap (28 x 28 stays 28 x 28)
 *   3 LOW_CONTRAST  clamp(64 + v / 2 + e, 0, 255), v / 2 rounded down, e an
 *                   integer uniform in [-16, 16]: e = below(33) - 16 drawn
 *                   sample by sample in memory order from
 *                   sdfed_rng_seed_stream(seed, image_index). The result
 *                   lies in 48..207, so the clamp never acts on 8-bit input.
 * Each transform is a pure function of (samples, seed, image_index); on one
 * channel a colour image's transform is that of its bytes read as grey. */
#ifndef SDFED_DOMAIN_H
#define SDFED_DOMAIN_H

#include <stdint.h>

#include "base/status.h"

enum {
    SDFED_DOMAIN_ORIGINAL = 0,
    SDFED_DOMAIN_INVERTED = 1,
    SDFED_DOMAIN_ROTATED = 2,
    SDFED_DOMAIN_LOW_CONTRAST = 3,
    SDFED_DOMAINS = 4
};
extern const char *const sdfed_domain_names[SDFED_DOMAINS];

/* in (rows, cols, channels) -> out (rows, cols, channels), or (cols, rows,
 * channels) for ROTATED; channels 1..4; in and out must not overlap. */
int sdfed_domain_apply(int domain, const uint8_t *in, int rows, int cols, int channels, uint64_t seed,
                       uint64_t image_index, uint8_t *out, sdfed_error *err);

/* A domain id for each of n samples, balanced: the positions 0..n-1 are
 * shuffled with sdfed_rng_seed(seed) and the i-th of the shuffled order gets
 * domain i % n_domains (so domain sizes differ by at most one). */
int sdfed_domain_assign(int n, int n_domains, uint64_t seed, uint8_t *domain, sdfed_error *err);

#endif
