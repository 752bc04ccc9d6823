/* PNG and JPEG decoding for native programs (libpng, libjpeg-turbo), giving
 * the 8-bit pixels that shared/clip/image_preprocess.h takes.
 *
 * The format is detected from the magic bytes, not the file name. The
 * result is what PIL's `Image.open(path).convert("RGB")` gives (PIL uses the
 * same libjpeg with the same defaults), except that greyscale images stay
 * one channel (convert("RGB") only replicates it; preprocessing does that):
 *
 *   PNG   8-bit RGB, grey, RGBA, grey+alpha, palette (1/2/4/8-bit), grey
 *         1/2/4-bit (scaled to 0..255), interlaced (Adam7): equal to PIL.
 *         Alpha and tRNS transparency are dropped, not composited (like
 *         convert("RGB")); gAMA, iCCP and sBIT are ignored (PIL ignores them too).
 *   PNG   16-bit: the high byte of each sample is kept. For 16-bit RGB(A)
 *         and grey+alpha this is what PIL does. PIL opens 16-bit *grey* PNGs
 *         as 32-bit mode "I" and convert("RGB") then saturates every value
 *         above 255 to white; we deliberately differ there and keep the high
 *         byte, which is what the image looks like.
 *   JPEG  libjpeg defaults (islow DCT, fancy upsampling): 3-component ->
 *         RGB, 1-component -> grey, 4-component (CMYK/YCCK, Adobe inverted
 *         convention, as PIL assumes) -> RGB with PIL 9.4's CMYK->RGB formula
 *         (R = (255-K) - (C(255-K))/255, rounded as PIL does). A truncated JPEG
 *         is an error (PIL: "image file is truncated"); 12-bit JPEGs and
 *         other formats are errors.
 *
 * EXIF orientation is not applied (CLIP's preprocessing does not either).
 * Widths and heights above SDFED_IMAGE_MAX_SIDE (16384) are refused, files
 * above SDFED_IMAGE_MAX_FILE_BYTES too. Every failure (missing file, empty,
 * not PNG/JPEG, corrupt, truncated) returns a status code with one message
 * naming the file; the libraries' own messages become part of that message
 * and nothing is printed to stderr. */
#ifndef SDFED_NATIVE_IMAGE_DECODE_H
#define SDFED_NATIVE_IMAGE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define SDFED_IMAGE_MAX_FILE_BYTES ((size_t)1 << 30)

/* Decodes the file at path. On success *pixels (caller frees with free())
 * holds height rows of width * channels bytes, packed (stride = width *
 * channels), and *channels is 1 (grey) or 3 (RGB). On failure *pixels is
 * NULL and err says why. */
int sdfed_image_decode_file(const char *path, uint8_t **pixels, int *width, int *height, int *channels,
                            sdfed_error *err);

/* The same from bytes in memory; name is used in messages. */
int sdfed_image_decode_memory(const uint8_t *data, size_t size, const char *name, uint8_t **pixels, int *width,
                              int *height, int *channels, sdfed_error *err);

#endif
