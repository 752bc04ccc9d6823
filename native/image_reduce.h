/* Box reduction of decoded pixels by an integer factor f, in bounded
 * memory: pixel (X, Y) of the result is the mean of the input's block
 * x in [fX, fX + f), y in [fY, fY + f), a block at the right or bottom
 * edge averaged over the n pixels it has (the result is ceil(w/f) x
 * ceil(h/f)). The mean of a block whose samples sum to s is rounded as
 * PIL's Image.reduce rounds it:
 *
 *   ((s + n/2) * M(n)) >> 24,  M(n) = (uint32)(2^32 / (float)(256 n))
 *
 * which is (s + n/2) / n, the mean rounded half up, for every full block
 * (n = f^2, f a power of two: M(n) = 2^24 / n exactly), and can be one below
 * it for an edge block whose n is not a power of two (M(n) truncated); so
 * the result equals PIL's `reduce(f)` bit for bit.
 *
 * Rows may arrive in order (the reducer then holds one output row of sums
 * and hands each output row on as soon as its last input row is in), or
 * pixels in any order (an interlaced PNG's passes: the sums of the whole
 * result are held, 4 bytes per value, and every row is handed on at the
 * end). With f = 1 in order, rows are handed on as they come. */
#ifndef SDFED_NATIVE_IMAGE_REDUCE_H
#define SDFED_NATIVE_IMAGE_REDUCE_H

#include <stdint.h>

#include "base/status.h"

/* Receives output row y (out_width * channels bytes). */
typedef void (*native_image_row_sink)(void *ctx, int y, const uint8_t *row);

typedef struct native_image_reducer {
    int width, height, channels, factor; /* the input */
    int out_width, out_height;
    int any_order;
    uint32_t *sums; /* (out_width * channels) for each held output row */
    uint8_t *row;   /* the output row being handed on */
    native_image_row_sink sink;
    void *sink_ctx;
} native_image_reducer;

/* A reducer of width x height pixels of `channels` (1..4) by factor >= 1;
 * any_order: pixels arrive in any order (else rows in order). name is the
 * image's, for messages. */
int native_image_reducer_init(native_image_reducer *r, int width, int height, int channels, int factor, int any_order,
                              native_image_row_sink sink, void *sink_ctx, const char *name, sdfed_error *err);
/* Rows in order: input row y (width pixels, packed), y = 0, 1, ... */
void native_image_reducer_add_row(native_image_reducer *r, int y, const uint8_t *row);
/* Any order: n pixels (packed) of input row y, at columns x0, x0 + dx, ... */
void native_image_reducer_add_pixels(native_image_reducer *r, int y, int x0, int dx, const uint8_t *pixels, int n);
/* Any order: every output row, handed on once all pixels are in. */
void native_image_reducer_finish(native_image_reducer *r);
void native_image_reducer_free(native_image_reducer *r);

#endif
