/* A JPEG's EXIF orientation (native/image_exif.c), on segments made here:
 *  - every value 1..8 in both byte orders, as a SHORT or a LONG, first or
 *    after other tags of IFD0;
 *  - malformed segments turn nothing (1) and never read past their end:
 *    another prefix, a bad byte order or magic number, IFD0 or an entry
 *    past the end, another type, a count other than 1, values 0 and 9, no
 *    orientation tag, every prefix of a good segment that cuts its entry;
 *  - the place of each stored pixel in the shown image for all eight
 *    orientations, against the transposes that image_exif.h names.
 * The pixels PIL's exif_transpose gives are compared in test_image_decode. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "native/image_exif.h"

/* v as `bytes` bytes at tiff + *at, in the byte order */
static void put(uint8_t *tiff, size_t *at, int bytes, uint32_t v, int big_endian) {
    for (int i = 0; i < bytes; i++) tiff[(*at)++] = (uint8_t)(v >> (big_endian ? 8 * (bytes - 1 - i) : 8 * i));
}

/* An APP1 payload with IFD0 holding n_before other tags, then the
 * orientation (tag, type, count, value), written in the byte order; for a
 * SHORT its last 6 bytes (the value's padding, the next IFD's offset) are
 * never read. */
static size_t segment(uint8_t *out, int big_endian, int n_before, int tag, int type, uint32_t count, uint32_t value) {
    memcpy(out, "Exif\0\0", 6);
    uint8_t *tiff = out + 6;
    size_t at = 0;
    put(tiff, &at, 2, big_endian ? 0x4d4d : 0x4949, big_endian);
    put(tiff, &at, 2, 42, big_endian);
    put(tiff, &at, 4, 8, big_endian);
    put(tiff, &at, 2, (uint32_t)(n_before + 1), big_endian);
    for (int k = 0; k < n_before; k++) {
        put(tiff, &at, 2, 0x010Fu + (uint32_t)k, big_endian);
        put(tiff, &at, 2, 3, big_endian);
        put(tiff, &at, 4, 1, big_endian);
        put(tiff, &at, 4, 0, big_endian);
    }
    put(tiff, &at, 2, (uint32_t)tag, big_endian);
    put(tiff, &at, 2, (uint32_t)type, big_endian);
    put(tiff, &at, 4, count, big_endian);
    put(tiff, &at, type == 3 ? 2 : 4, value, big_endian);
    put(tiff, &at, type == 3 ? 2 : 0, 0, big_endian);
    put(tiff, &at, 4, 0, big_endian);
    return 6 + at;
}

static void test_values(void) {
    uint8_t s[256];
    for (int be = 0; be < 2; be++)
        for (int o = 1; o <= 8; o++) {
            size_t n = segment(s, be, o % 3, 0x0112, 3, 1, (uint32_t)o);
            CHECK(native_image_exif_orientation(s, n) == o, "SHORT %d, %s, after %d tags", o, be ? "MM" : "II", o % 3);
            n = segment(s, be, 0, 0x0112, 4, 1, (uint32_t)o);
            CHECK(native_image_exif_orientation(s, n) == o, "LONG %d, %s", o, be ? "MM" : "II");
        }
}

static void test_malformed(void) {
    uint8_t s[256];
    size_t n = segment(s, 1, 2, 0x0112, 3, 1, 6);
    CHECK(native_image_exif_orientation(s, n) == 6, "the good segment");
    int wrong = 0;
    for (size_t k = 0; k < n; k++) {
        uint8_t *copy = malloc(k + 1); /* k bytes given (the sanitizer build checks none past them is read) */
        memcpy(copy, s, k);
        if (native_image_exif_orientation(copy, k) != (k < n - 6 ? 1 : 6)) wrong++;
        free(copy);
    }
    CHECK(wrong == 0, "%d prefixes of a segment: turned without their whole orientation entry, or not with it", wrong);
    CHECK(native_image_exif_orientation(NULL, 40) == 1 && native_image_exif_orientation(s, 0) == 1, "nothing");
    uint8_t bad[256];
    memcpy(bad, s, n);
    memcpy(bad, "Exif\0\1", 6);
    CHECK(native_image_exif_orientation(bad, n) == 1, "another prefix");
    memcpy(bad, s, n);
    bad[6] = 'I';
    CHECK(native_image_exif_orientation(bad, n) == 1, "a mixed byte order");
    memcpy(bad, s, n);
    bad[9] = 43;
    CHECK(native_image_exif_orientation(bad, n) == 1, "not 42");
    memcpy(bad, s, n);
    bad[10] = 0x7f; /* IFD0 at 2^31 */
    CHECK(native_image_exif_orientation(bad, n) == 1, "IFD0 past the end");
    memcpy(bad, s, n);
    bad[15] = 40; /* 40 entries: the orientation is the third, the rest past the end */
    CHECK(native_image_exif_orientation(bad, n) == 6, "entries past the end are not read");
    bad[15] = 2; /* the two other tags only */
    CHECK(native_image_exif_orientation(bad, n) == 1, "no orientation tag");
    n = segment(s, 0, 0, 0x0112, 2, 1, 6);
    CHECK(native_image_exif_orientation(s, n) == 1, "an ASCII orientation");
    n = segment(s, 0, 0, 0x0112, 3, 2, 6);
    CHECK(native_image_exif_orientation(s, n) == 1, "two values");
    n = segment(s, 0, 0, 0x0112, 3, 1, 0);
    CHECK(native_image_exif_orientation(s, n) == 1, "value 0");
    n = segment(s, 1, 0, 0x0112, 3, 1, 9);
    CHECK(native_image_exif_orientation(s, n) == 1, "value 9");
    n = segment(s, 1, 0, 0x0113, 3, 1, 6);
    CHECK(native_image_exif_orientation(s, n) == 1, "another tag");
}

/* Where (x, y) of a w x h image goes, as the transposes of image_exif.h say. */
static void shown_at(int o, int w, int h, int x, int y, int *sx, int *sy) {
    int table[9][2] = {
        [1] = {x, y}, [2] = {w - 1 - x, y}, [3] = {w - 1 - x, h - 1 - y}, [4] = {x, h - 1 - y},
        [5] = {y, x}, [6] = {h - 1 - y, x}, [7] = {h - 1 - y, w - 1 - x}, [8] = {y, w - 1 - x},
    };
    *sx = table[o][0];
    *sy = table[o][1];
}

static void test_places(void) {
    const int w = 5, h = 3;
    for (int o = 1; o <= 8; o++) {
        int shown_w = o >= 5 ? h : w, wrong = 0;
        for (int y = 0; y < h; y++) {
            native_image_row_place p = native_image_exif_row_place(o, w, h, y);
            for (int x = 0; x < w; x++) {
                int sx, sy;
                shown_at(o, w, h, x, y, &sx, &sy);
                if (p.first + x * p.step != (ptrdiff_t)sy * shown_w + sx) wrong++;
            }
        }
        CHECK(wrong == 0, "orientation %d: %d pixels misplaced", o, wrong);
    }
}

int main(void) {
    test_values();
    test_malformed();
    test_places();
    return check_report("test_image_exif");
}
