/* A JPEG's EXIF orientation: the tag as an APP1 "Exif" segment gives it,
 * and where each of its eight values puts a stored row of pixels, exactly
 * as PIL's ImageOps.exif_transpose turns the image:
 *
 *   1 as stored            5 transposed (x, y) -> (y, x)
 *   2 mirrored left-right  6 turned 90 degrees clockwise
 *   3 turned 180 degrees   7 transversed (x, y) -> (h-1-y, w-1-x)
 *   4 mirrored top-bottom  8 turned 90 degrees anticlockwise
 *
 * 5..8 swap the width and the height. */
#ifndef SDFED_NATIVE_IMAGE_EXIF_H
#define SDFED_NATIVE_IMAGE_EXIF_H

#include <stddef.h>
#include <stdint.h>

/* The orientation (1..8) in an APP1 segment's payload (what follows the
 * marker's length): "Exif\0\0", a TIFF header in either byte order ("II"
 * or "MM", 42, the offset of IFD0), and in IFD0 the tag 0x0112 as one
 * SHORT or LONG of value 1..8. Anything else (another segment, a short or
 * malformed header, offsets past the end, no such tag, another type or
 * count, a value outside 1..8) is 1, as stored: never an error. */
int native_image_exif_orientation(const uint8_t *payload, size_t size);

/* Where the pixels of row y of an image stored width x height go once shown
 * in `orientation`: pixel x of the row is pixel first + x * step of the
 * shown image, counted row-major in its own width (height for 5..8). */
typedef struct native_image_row_place {
    ptrdiff_t first, step;
} native_image_row_place;
native_image_row_place native_image_exif_row_place(int orientation, int width, int height, int y);

#endif
