/* PNG and JPEG decoding for native programs (libpng, libjpeg-turbo), giving
 * the 8-bit pixels that shared/clip/image_preprocess.h takes: images as a
 * person sees them, in bounded memory.
 *
 * The format is detected from the magic bytes, not the file name. Files are
 * read through a stream (never whole into memory), rows decoded one at a
 * time. The result is grey (1 channel) or RGB (3).
 *
 * What PIL 9.4 gives, exactly (tests/oracle/test_image_decode.c checks
 * every case against PIL): for an image of at most options.max_pixels
 * pixels (SDFED_IMAGE_MAX_PIXELS, 2^24, by default) and sides of at most
 * SDFED_IMAGE_MAX_SIDE (16384), the pixels of `Image.open(path)` then:
 *
 *   opaque images   convert("RGB"), except that grey stays one channel
 *                   (convert("RGB") only replicates it; preprocessing does);
 *   transparency    convert("RGBA") composited onto options.background
 *                   (white by default; a task's "background") with
 *                   clip/image_composite.h's integer formula, per pixel:
 *                   PNG RGBA, grey+alpha, palette with tRNS, grey or RGB
 *                   with tRNS. Grey+alpha over a grey background stays one
 *                   channel, else becomes RGB. An opaque RGBA image gives
 *                   its RGB unchanged;
 *   JPEG EXIF       the orientation of the first APP1 "Exif" segment
 *                   (native/image_exif.h) applied as ImageOps.exif_transpose
 *                   applies it (all 8 values); a missing or malformed one
 *                   is no turn, never an error. A PNG's eXIf chunk is not
 *                   read (exif_transpose would turn such a rare PNG).
 *
 *   PNG   8-bit RGB, grey, RGBA, grey+alpha, palette (1/2/4/8-bit), grey
 *         1/2/4-bit (scaled to 0..255), interlaced (Adam7): equal to PIL.
 *         gAMA, iCCP and sBIT are ignored (PIL ignores them too). A 1/2/4-bit
 *         grey PNG's tRNS key is a sample of that depth, as the PNG rule and
 *         libpng read it; PIL compares it with the scaled samples and so
 *         misses it (we differ: tested against the rule).
 *   PNG   16-bit: the high byte of each sample is kept (then composited).
 *         For 16-bit RGB(A) and grey+alpha this is what PIL does. PIL
 *         opens 16-bit *grey* PNGs as 32-bit mode "I" and convert("RGB")
 *         then saturates every value above 255 to white; we deliberately
 *         differ there and keep the high byte, which is what the image
 *         looks like.
 *   JPEG  libjpeg defaults (islow DCT, fancy upsampling): 3-component ->
 *         RGB, 1-component -> grey, 4-component (CMYK/YCCK, Adobe inverted
 *         convention, as PIL assumes) -> RGB with PIL 9.4's CMYK->RGB formula
 *         (R = (255-K) - (C(255-K))/255, rounded as PIL does). A truncated JPEG
 *         is an error (PIL: "image file is truncated"); 12-bit JPEGs and
 *         other formats are errors.
 *
 * Larger images are reduced while they are decoded, by the factor
 * f = sdfed_image_reduction_factor() (clip/image_preprocess.h): the smallest
 * power of two with ceil(w/f) * ceil(h/f) <= max_pixels and both ceil(w/f),
 * ceil(h/f) <= SDFED_IMAGE_MAX_SIDE (the preprocessing's limit); the result is
 * ceil(w/f) x ceil(h/f) (sides swapped by EXIF 5..8). f = 1 is the exact
 * decoding above.
 *
 *   PNG   rows streamed (png_read_row) into box sums, transparency
 *         composited per pixel first: pixel (X, Y) is the mean of its f x f
 *         block (native/image_reduce.h: rounded as PIL rounds, edge blocks
 *         over the pixels they have), equal to PIL's
 *         `Image.reduce(f)` of the composited image. Memory: one input row,
 *         one row of sums and the result; an interlaced PNG's passes revisit
 *         every row, so it holds a 32-bit sum per value of the result instead
 *         (at most 4 x 3 x max_pixels bytes) while it decodes.
 *   JPEG  libjpeg's scaled DCT decoding by min(f, 8) (scale_denom), then the
 *         rest of f box-reduced as for PNG, in the file's stored orientation,
 *         then turned: PIL's `draft(mode, (w // s, h // s))` with s = min(f, 8),
 *         `reduce(f / s)` and exif_transpose, exactly. A baseline JPEG streams
 *         (a few rows of blocks); libjpeg holds a progressive JPEG's
 *         coefficients whole (2 bytes per sample) whatever f is.
 *
 * Sides up to what the formats allow are read: JPEG 65,500 (libjpeg's
 * JPEG_MAX_DIMENSION), PNG 1,000,000 (libpng's user limits, set to that);
 * larger ones, and reductions past SDFED_IMAGE_MAX_FACTOR (only with a
 * max_pixels far below the default), are refused with a message naming the
 * file and its size. Every failure (missing file, empty, not PNG/JPEG,
 * corrupt, truncated) returns a status code with one message naming the
 * file; the libraries' own messages become part of that message and
 * nothing is printed to stderr. */
#ifndef SDFED_NATIVE_IMAGE_DECODE_H
#define SDFED_NATIVE_IMAGE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "clip/image_preprocess.h"

/* The largest sides read. */
#define SDFED_IMAGE_MAX_JPEG_SIDE 65500
#define SDFED_IMAGE_MAX_PNG_SIDE 1000000
/* The largest reduction factor (a block's sum of 255 * f^2 fits 32 bits). */
#define SDFED_IMAGE_MAX_FACTOR 2048

typedef struct native_image_decode_options {
    uint8_t background[3]; /* red, green, blue that transparent pixels are composited onto */
    size_t max_pixels;     /* at most this many pixels come out (>= 1): larger images are reduced */
} native_image_decode_options;

/* The options for images shown over background (red, green, blue; NULL:
 * white, a task's default), at most SDFED_IMAGE_MAX_PIXELS pixels. */
native_image_decode_options native_image_decode_defaults(const uint8_t background[3]);

/* Decodes the file at path (options NULL: the defaults). On success
 * *pixels (caller frees with free()) holds height rows of width * channels
 * bytes, packed (stride = width * channels), and *channels is 1 (grey) or
 * 3 (RGB). On failure *pixels is NULL and err says why. */
int native_image_decode_file(const char *path, const native_image_decode_options *options, uint8_t **pixels, int *width,
                             int *height, int *channels, sdfed_error *err);

/* The same from bytes in memory; name is used in messages. */
int native_image_decode_memory(const uint8_t *data, size_t size, const char *name,
                               const native_image_decode_options *options, uint8_t **pixels, int *width, int *height,
                               int *channels, sdfed_error *err);

#endif
