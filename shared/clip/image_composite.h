/* Transparency composited onto a background colour, as a person sees an
 * image with an alpha channel: the one function the native decoder
 * (native/image_decode.h, row by row) and the browser (RGBA from a canvas,
 * wasm-client/api.c) both use, so that their pixels agree.
 *
 * Every colour sample c with alpha a (both 0..255, not premultiplied) over
 * the background's sample bg of the same channel becomes, in integers,
 *
 *   out = (c * a + bg * (255 - a) + 127) / 255      (integer division)
 *
 * the integer nearest to the exact blend c * a/255 + bg * (1 - a/255) (an
 * integer over 255 is never halfway between two integers: no ties). An
 * opaque pixel (a = 255) keeps its colour; a fully transparent one (a = 0)
 * becomes the background.
 *
 * Layouts: grey+alpha (2 channels) becomes grey (1) over a grey background
 * (r = g = b), else RGB (3) with the grey replicated before blending; RGBA
 * (4) becomes RGB (3). Grey (1) and RGB (3) have no alpha and are copied. */
#ifndef SDFED_IMAGE_COMPOSITE_H
#define SDFED_IMAGE_COMPOSITE_H

#include <stddef.h>
#include <stdint.h>

/* The channels of a pixel of `channels` (1 grey, 2 grey+alpha, 3 RGB,
 * 4 RGBA) once composited onto background (r, g, b): 1 or 3. */
int sdfed_composite_channels(int channels, const uint8_t background[3]);

/* Composites n pixels of `channels` channels, packed, onto background:
 * out receives n pixels of sdfed_composite_channels(channels, background)
 * channels, packed. out may be in (in place: the buffer then holds n
 * pixels of the wider of the two); otherwise they must not overlap. */
void sdfed_composite(const uint8_t *in, int channels, size_t n, const uint8_t background[3], uint8_t *out);

#endif
