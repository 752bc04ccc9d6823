/* Tests of native/image_decode.c (native only): the PNG and JPEG files
 * that tests/oracle/image_oracle.py writes into DIR with PIL decode to PIL's
 * `convert("RGB")` pixels; broken, truncated, empty, foreign and missing
 * files fail with a message naming the file; every prefix and a few hundred
 * byte-flipped variants of good files decode or fail, never crash.
 *
 * Usage: test_image_decode DIR   (DIR/cases.txt and the files it names) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "native/image_decode.h"
#include "read_file.h"

static void test_good(const char *dir, const char *file, int want_w, int want_h) {
    char path[1024], rgb_path[1100];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    snprintf(rgb_path, sizeof rgb_path, "%s.rgb", path);
    size_t want_size = 0;
    uint8_t *want = read_file(rgb_path, &want_size);
    CHECK(want && want_size == (size_t)want_w * want_h * 3, "%s: expected pixels missing", rgb_path);

    uint8_t *px = NULL;
    int w = 0, h = 0, c = 0;
    sdfed_error err = {0};
    int rc = sdfed_image_decode_file(path, &px, &w, &h, &c, &err);
    CHECK(rc == SDFED_OK, "%s: %s", file, err.message);
    CHECK(w == want_w && h == want_h && (c == 1 || c == 3), "%s: %dx%d c%d, want %dx%d", file, w, h, c, want_w, want_h);
    if (rc == SDFED_OK && want && w == want_w && h == want_h) {
        size_t n_diff = 0;
        int max_d = 0;
        for (size_t i = 0; i < (size_t)w * h * 3; i++) {
            int got = px[(i / 3) * c + (c == 3 ? i % 3 : 0)];
            int d = abs(got - (int)want[i]);
            if (d) n_diff++;
            if (d > max_d) max_d = d;
        }
        CHECK(max_d == 0, "%s: %zu values differ from PIL, max |d| %d", file, n_diff, max_d);
        printf("  %-26s %3dx%-3d c%d: max |d| vs PIL %d\n", file, w, h, c, max_d);
    }
    free(px);
    free(want);
}

static void test_bad(const char *dir, const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    uint8_t *px = (uint8_t *)path; /* must come back NULL */
    int w = 0, h = 0, c = 0;
    sdfed_error err = {0};
    int rc = sdfed_image_decode_file(path, &px, &w, &h, &c, &err);
    CHECK(rc != SDFED_OK && px == NULL, "%s: decoding should fail (rc %d)", file, rc);
    CHECK(err.code == rc && strstr(err.message, path) != NULL, "%s: message should name the file: \"%s\"", file,
          err.message);
    printf("  %-26s -> %s: %s\n", file, sdfed_status_name(rc), err.message);
    free(rc == SDFED_OK ? px : NULL);
}

static void test_fixtures(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/cases.txt", dir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot open %s (the oracle_image_decode fixture writes it)", path);
    if (!f) return;
    char line[1024];
    int n_good = 0, n_bad = 0;
    while (fgets(line, sizeof line, f)) {
        char kind[16], name[256], file[256];
        int w, h;
        if (sscanf(line, "%15s %255s %255s %d %d", kind, name, file, &w, &h) == 5 && !strcmp(kind, "good")) {
            test_good(dir, file, w, h);
            n_good++;
        } else if (sscanf(line, "%15s %255s %255s", kind, name, file) == 3 && !strcmp(kind, "bad")) {
            test_bad(dir, file);
            n_bad++;
        }
    }
    fclose(f);
    CHECK(n_good >= 20 && n_bad >= 10, "only %d good and %d bad fixtures", n_good, n_bad);
}

/* Decoding must not crash; a failure leaves *pixels NULL and a message. */
static int decode_quiet(const uint8_t *data, size_t size, const char *what) {
    uint8_t *px = NULL;
    int w, h, c;
    sdfed_error err = {0};
    int rc = sdfed_image_decode_memory(data, size, what, &px, &w, &h, &c, &err);
    if (rc == SDFED_OK) {
        CHECK(px != NULL && w > 0 && h > 0 && (c == 1 || c == 3), "%s: bad success", what);
        free(px);
    } else {
        CHECK(px == NULL && err.message[0] != '\0', "%s: failure without message", what);
    }
    return rc;
}

static void test_prefixes_and_flips(const char *dir) {
    static const char *files[] = {"rgb.png",    "rgb_interlaced.png",     "palette2_interlaced.png",
                                  "colour.jpg", "colour_progressive.jpg", "cmyk.jpg",
                                  "grey.jpg"};
    uint32_t seed = 12345;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        size_t size = 0;
        uint8_t *data = read_file(path, &size);
        CHECK(data && size > 16, "%s missing", path);
        if (!data) continue;
        int is_jpeg = data[0] == 0xff;
        int wrongly_ok = 0;
        /* every prefix: a JPEG cut before its final EOI marker fails (one
         * missing only EOI may decode, as PIL also accepts when the entropy
         * data is complete), a PNG cut inside or before its image data fails */
        for (size_t n = 0; n < size; n++) {
            int rc = decode_quiet(data, n, files[i]);
            if (rc == SDFED_OK && (is_jpeg ? n + 2 < size : n + 12 < size)) wrongly_ok++;
        }
        CHECK(wrongly_ok == 0, "%s: %d truncated prefixes decoded", files[i], wrongly_ok);
        /* byte flips */
        uint8_t *copy = malloc(size);
        for (int t = 0; t < 300; t++) {
            memcpy(copy, data, size);
            for (int k = 0; k < 1 + t % 4; k++) {
                seed = seed * 1664525u + 1013904223u;
                size_t at = (seed >> 8) % size;
                seed = seed * 1664525u + 1013904223u;
                copy[at] ^= (uint8_t)(1u + (seed >> 24) % 255u);
            }
            decode_quiet(copy, size, files[i]);
        }
        free(copy);
        free(data);
    }
}

/* PNG's CRC-32 (ISO 3309), bit by bit */
static uint32_t crc32(const uint8_t *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return c ^ 0xffffffffu;
}

static void test_misc_errors(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/does-not-exist.png", dir);
    uint8_t *px = NULL;
    int w, h, c;
    sdfed_error err = {0};
    int rc = sdfed_image_decode_file(path, &px, &w, &h, &c, &err);
    CHECK(rc == SDFED_ERR_IO && px == NULL && strstr(err.message, path), "missing file: %d \"%s\"", rc, err.message);
    printf("  missing file -> %s\n", err.message);
    rc = sdfed_image_decode_file(dir, &px, &w, &h, &c, &err); /* a directory */
    CHECK(rc != SDFED_OK && px == NULL && strstr(err.message, dir), "directory: %d \"%s\"", rc, err.message);
    printf("  directory    -> %s\n", err.message);
    CHECK(sdfed_image_decode_file(NULL, &px, &w, &h, &c, &err) == SDFED_ERR_ARG, "NULL path");
    CHECK(sdfed_image_decode_memory((const uint8_t *)"x", 1, "x", NULL, &w, &h, &c, &err) == SDFED_ERR_ARG,
          "NULL pixels pointer");
    CHECK(sdfed_image_decode_memory(NULL, 5, "x", &px, &w, &h, &c, &err) == SDFED_ERR_ARG, "NULL data");
    CHECK(sdfed_image_decode_memory((const uint8_t *)"", 0, "x", &px, &w, &h, &c, NULL) == SDFED_ERR_FORMAT,
          "empty, NULL err");

    /* a well-formed PNG header announcing 65536 x 16 pixels */
    uint8_t huge_png[45] = {0x89, 'P',         'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0,   0,   13,  'I', 'H',
                            'D',  'R',         0,   1,   0,    0,    0,    0,    0, 16,  8,   2,   0,   0,
                            0,    /* CRC */ 0, 0,   0,   0,    0,    0,    0,    0, 'I', 'D', 'A', 'T' /* CRC */};
    uint32_t crc = crc32(huge_png + 12, 17), crc_idat = crc32(huge_png + 37, 4);
    for (int i = 0; i < 4; i++) {
        huge_png[29 + i] = (uint8_t)(crc >> (24 - 8 * i));
        huge_png[41 + i] = (uint8_t)(crc_idat >> (24 - 8 * i));
    }
    rc = sdfed_image_decode_memory(huge_png, sizeof huge_png, "huge.png", &px, &w, &h, &c, &err);
    CHECK(rc == SDFED_ERR_UNSUPPORTED && px == NULL && strstr(err.message, "65536"), "65536-wide PNG: %d \"%s\"", rc,
          err.message);
    printf("  huge.png     -> %s\n", err.message);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR (written by tests/oracle/image_oracle.py decode DIR)\n", argv[0]);
        return 2;
    }
    test_fixtures(argv[1]);
    test_misc_errors(argv[1]);
    test_prefixes_and_flips(argv[1]);
    return check_report("test_image_decode");
}
