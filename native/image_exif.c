/* A JPEG's EXIF orientation: reading the tag with every offset checked,
 * and the place of a stored row in the turned image (see image_exif.h). */
#include "native/image_exif.h"

#include <string.h>

#define TAG_ORIENTATION 0x0112
#define TYPE_SHORT 3
#define TYPE_LONG 4

/* The TIFF data after "Exif\0\0", in its byte order. */
typedef struct tiff {
    const uint8_t *data;
    size_t size;
    int big_endian;
} tiff;

/* The n-byte (2 or 4) unsigned number at offset at, or -1 past the end. */
static int64_t number(const tiff *t, size_t at, int n) {
    if (at > t->size || t->size - at < (size_t)n) return -1;
    uint32_t v = 0;
    for (int i = 0; i < n; i++) {
        uint8_t byte = t->data[at + (t->big_endian ? (size_t)i : (size_t)(n - 1 - i))];
        v = v << 8 | byte;
    }
    return v;
}

int native_image_exif_orientation(const uint8_t *payload, size_t size) {
    static const uint8_t exif[6] = {'E', 'x', 'i', 'f', 0, 0};
    if (!payload || size < sizeof exif + 8 || memcmp(payload, exif, sizeof exif) != 0) return 1;
    tiff t = {.data = payload + sizeof exif, .size = size - sizeof exif};
    if (t.data[0] == 'M' && t.data[1] == 'M')
        t.big_endian = 1;
    else if (!(t.data[0] == 'I' && t.data[1] == 'I'))
        return 1;
    if (number(&t, 2, 2) != 42) return 1;
    int64_t ifd = number(&t, 4, 4), entries = ifd < 0 ? -1 : number(&t, (size_t)ifd, 2);
    if (entries < 0) return 1;
    for (int64_t i = 0; i < entries; i++) {
        size_t entry = (size_t)ifd + 2 + 12 * (size_t)i;
        if (number(&t, entry, 2) != TAG_ORIENTATION) continue;
        int64_t type = number(&t, entry + 2, 2), count = number(&t, entry + 4, 4);
        int64_t value = -1;
        if (type == TYPE_SHORT) value = number(&t, entry + 8, 2);
        if (type == TYPE_LONG) value = number(&t, entry + 8, 4);
        return count == 1 && value >= 1 && value <= 8 ? (int)value : 1;
    }
    return 1;
}

native_image_row_place native_image_exif_row_place(int orientation, int width, int height, int y) {
    ptrdiff_t w = width, h = height;
    switch (orientation) {
    case 2: return (native_image_row_place){.first = y * w + w - 1, .step = -1};
    case 3: return (native_image_row_place){.first = (h - 1 - y) * w + w - 1, .step = -1};
    case 4: return (native_image_row_place){.first = (h - 1 - y) * w, .step = 1};
    case 5: return (native_image_row_place){.first = y, .step = h};
    case 6: return (native_image_row_place){.first = h - 1 - y, .step = h};
    case 7: return (native_image_row_place){.first = (w - 1) * h + h - 1 - y, .step = -h};
    case 8: return (native_image_row_place){.first = (w - 1) * h + y, .step = -h};
    default: return (native_image_row_place){.first = y * w, .step = 1};
    }
}
