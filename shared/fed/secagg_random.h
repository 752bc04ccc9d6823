/* Secure aggregation: the byte source through which a caller passes
 * randomness (or a keystream) into the core, and the integers drawn from it.
 *
 * The core has no randomness of its own. Every secagg function that needs
 * random bits takes a sdfed_secagg_bytes: a fill function and its context.
 * Natively it is the OS (getrandom(2)) or an AES-CTR keystream
 * (native/crypto.h); in the page, a buffer the worker filled with
 * crypto.getRandomValues (sdfed_secagg_buffer below). Draws, all unbiased:
 *   u32        4 bytes, little-endian
 *   u64        8 bytes, little-endian
 *   below(m)   Fisher-Yates' and the samplers' integer in [0, m), m >= 1:
 *              u64 values v >= 2^64 - (2^64 mod m) are rejected (drawn
 *              again), then v mod m; m = 1 draws nothing and gives 0
 * A source that fails (a buffer run dry, the OS refusing) makes the draw
 * fail with its message; nothing is drawn from a source after it failed. */
#ifndef SDFED_SECAGG_RANDOM_H
#define SDFED_SECAGG_RANDOM_H

#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"
#include "base/status.h"

/* Writes n bytes to out; returns SDFED_OK or a status with a message. */
typedef int (*sdfed_secagg_fill_fn)(void *ctx, unsigned char *out, size_t n, sdfed_error *err);

typedef struct sdfed_secagg_bytes {
    sdfed_secagg_fill_fn fill;
    void *ctx;
} sdfed_secagg_bytes;

int sdfed_secagg_draw(const sdfed_secagg_bytes *src, unsigned char *out, size_t n, sdfed_error *err);
int sdfed_secagg_draw_u32(const sdfed_secagg_bytes *src, uint32_t *out, sdfed_error *err);
int sdfed_secagg_draw_u64(const sdfed_secagg_bytes *src, uint64_t *out, sdfed_error *err);
int sdfed_secagg_draw_below(const sdfed_secagg_bytes *src, uint64_t m, uint64_t *out, sdfed_error *err);

/* A source reading a caller's buffer front to back (the page fills it with
 * crypto.getRandomValues); it fails, naming the shortfall, when it runs dry. */
typedef struct sdfed_secagg_buffer {
    const unsigned char *bytes;
    size_t size, used;
} sdfed_secagg_buffer;

sdfed_secagg_bytes sdfed_secagg_buffer_source(sdfed_secagg_buffer *buffer);

/* A source reading the portable generator of base/rng.h (each 8 bytes one
 * u64, little-endian; the rest of a u64 a request does not use is dropped):
 * the same bytes on every target, and not cryptographic. For what need not
 * be secret: a task's stochastic rounding (fed/secagg_task.h), tests. */
sdfed_secagg_bytes sdfed_secagg_rng_source(sdfed_rng *rng);

#endif
