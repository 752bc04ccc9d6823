/* Tests of native/image_decode.c (native only): the PNG and JPEG files
 * that tests/oracle/image_oracle.py writes into DIR with PIL decode to PIL's
 * pixels: `convert("RGB")` of opaque images, `convert("RGBA")` composited
 * onto white, blue, grey and black for transparent ones (in one channel
 * for grey over grey), `exif_transpose` of JPEGs in all 8 orientations (a
 * bad EXIF segment turns nothing), `reduce(f)` (PNG) and `draft` then
 * `reduce` (JPEG) when the options' max_pixels asks for a reduction; from
 * a file and from memory alike. The reduction rule on the sizes of real
 * files (20,000 x 30,000 and others). Broken, truncated, empty, foreign,
 * too large and missing files fail with a message naming the file (and
 * the size); every prefix and a few hundred byte-flipped variants of good
 * files decode or fail, never crash, at full size and reduced.
 *
 * Usage: test_image_decode DIR   (DIR/cases.txt and the files it names) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "native/image_decode.h"
#include "read_file.h"

/* The key=value tokens of a case line after its fixed fields: c=C,
 * bg=RRGGBB, max=N, want=TEXT (others, like pil-accepts, are notes). */
typedef struct case_options {
    native_image_decode_options decode;
    int channels; /* 0: not given */
    char want[64];
} case_options;

static case_options parse_options(char *tokens) {
    case_options o = {.decode = native_image_decode_defaults(NULL)};
    for (char *t = strtok(tokens, " \n"); t; t = strtok(NULL, " \n")) {
        unsigned r, g, b;
        if (sscanf(t, "bg=%2x%2x%2x", &r, &g, &b) == 3) {
            o.decode.background[0] = (uint8_t)r;
            o.decode.background[1] = (uint8_t)g;
            o.decode.background[2] = (uint8_t)b;
        }
        sscanf(t, "c=%d", &o.channels);
        sscanf(t, "max=%zu", &o.decode.max_pixels);
        sscanf(t, "want=%63s", o.want);
    }
    return o;
}

static void test_good(const char *dir, const char *name, const char *file, int want_w, int want_h,
                      const case_options *o) {
    char path[1024], rgb_path[1100];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    snprintf(rgb_path, sizeof rgb_path, "%s/%s.rgb", dir, name);
    size_t want_size = 0;
    uint8_t *want = read_file(rgb_path, &want_size);
    CHECK(want && want_size == (size_t)want_w * want_h * 3, "%s: expected pixels missing", rgb_path);

    uint8_t *px = NULL;
    int w = 0, h = 0, c = 0;
    sdfed_error err = {0};
    int rc = native_image_decode_file(path, &o->decode, &px, &w, &h, &c, &err);
    CHECK(rc == SDFED_OK, "%s: %s", name, err.message);
    CHECK(w == want_w && h == want_h && (c == 1 || c == 3) && (!o->channels || c == o->channels),
          "%s: %dx%d c%d, want %dx%d c%d", name, w, h, c, want_w, want_h, o->channels);
    if (rc == SDFED_OK && want && w == want_w && h == want_h) {
        size_t n_diff = 0;
        int max_d = 0;
        for (size_t i = 0; i < (size_t)w * h * 3; i++) {
            int got = px[(i / 3) * c + (c == 3 ? i % 3 : 0)];
            int d = abs(got - (int)want[i]);
            if (d) n_diff++;
            if (d > max_d) max_d = d;
        }
        CHECK(max_d == 0, "%s: %zu values differ from PIL, max |d| %d", name, n_diff, max_d);
        printf("  %-38s %4dx%-3d c%d: max |d| vs PIL %d\n", name, w, h, c, max_d);
    }
    /* the same bytes from memory: the same pixels */
    size_t size = 0;
    uint8_t *data = read_file(path, &size), *again = NULL;
    int w2 = 0, h2 = 0, c2 = 0;
    CHECK(data && native_image_decode_memory(data, size, name, &o->decode, &again, &w2, &h2, &c2, &err) == SDFED_OK &&
              rc == SDFED_OK && w2 == w && h2 == h && c2 == c && !memcmp(again, px, (size_t)w * h * c),
          "%s: decoded from memory as from the file", name);
    free(again);
    free(data);
    free(px);
    free(want);
}

static void test_bad(const char *dir, const char *file, const case_options *o) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    uint8_t *px = (uint8_t *)path; /* must come back NULL */
    int w = 0, h = 0, c = 0;
    sdfed_error err = {0};
    int rc = native_image_decode_file(path, &o->decode, &px, &w, &h, &c, &err);
    CHECK(rc != SDFED_OK && px == NULL, "%s: decoding should fail (rc %d)", file, rc);
    CHECK(err.code == rc && strstr(err.message, path) != NULL && strstr(err.message, o->want) != NULL,
          "%s: message should name the file and say %s: \"%s\"", file, o->want, err.message);
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
        int w, h, used = 0;
        if (sscanf(line, "%15s %255s %255s %d %d %n", kind, name, file, &w, &h, &used) == 5 && !strcmp(kind, "good")) {
            case_options o = parse_options(line + used);
            test_good(dir, name, file, w, h, &o);
            n_good++;
        } else if (sscanf(line, "%15s %255s %255s%n", kind, name, file, &used) == 3 && !strcmp(kind, "bad")) {
            case_options o = parse_options(line + used);
            test_bad(dir, file, &o);
            n_bad++;
        }
    }
    fclose(f);
    CHECK(n_good >= 100 && n_bad >= 15, "only %d good and %d bad fixtures", n_good, n_bad);
}

/* Decoding must not crash; a failure leaves *pixels NULL and a message. */
static int decode_quiet(const uint8_t *data, size_t size, const char *what, const native_image_decode_options *o) {
    uint8_t *px = NULL;
    int w, h, c;
    sdfed_error err = {0};
    int rc = native_image_decode_memory(data, size, what, o, &px, &w, &h, &c, &err);
    if (rc == SDFED_OK) {
        CHECK(px != NULL && w > 0 && h > 0 && (c == 1 || c == 3), "%s: bad success", what);
        free(px);
    } else {
        CHECK(px == NULL && err.message[0] != '\0', "%s: failure without message", what);
    }
    return rc;
}

/* Every prefix and byte flips of a few files, decoded at full size and
 * reduced (options o): failures are clean, truncations are failures. */
static void test_prefixes_and_flips(const char *dir, const native_image_decode_options *o) {
    static const char *files[] = {"rgb.png",  "rgb_interlaced.png", "palette2_interlaced.png",
                                  "art.png",  "colour.jpg",         "colour_progressive.jpg",
                                  "cmyk.jpg", "grey.jpg",           "exif6.jpg"};
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
            int rc = decode_quiet(data, n, files[i], o);
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
            decode_quiet(copy, size, files[i], o);
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
    int rc = native_image_decode_file(path, NULL, &px, &w, &h, &c, &err);
    CHECK(rc == SDFED_ERR_IO && px == NULL && strstr(err.message, path), "missing file: %d \"%s\"", rc, err.message);
    printf("  missing file -> %s\n", err.message);
    rc = native_image_decode_file(dir, NULL, &px, &w, &h, &c, &err); /* a directory */
    CHECK(rc != SDFED_OK && px == NULL && strstr(err.message, dir), "directory: %d \"%s\"", rc, err.message);
    printf("  directory    -> %s\n", err.message);
    CHECK(native_image_decode_file(NULL, NULL, &px, &w, &h, &c, &err) == SDFED_ERR_ARG, "NULL path");
    CHECK(native_image_decode_memory((const uint8_t *)"x", 1, "x", NULL, NULL, &w, &h, &c, &err) == SDFED_ERR_ARG,
          "NULL pixels pointer");
    CHECK(native_image_decode_memory(NULL, 5, "x", NULL, &px, &w, &h, &c, &err) == SDFED_ERR_ARG, "NULL data");
    CHECK(native_image_decode_memory((const uint8_t *)"", 0, "x", NULL, &px, &w, &h, &c, NULL) == SDFED_ERR_FORMAT,
          "empty, NULL err");

    native_image_decode_options none = native_image_decode_defaults(NULL);
    none.max_pixels = 0;
    rc = native_image_decode_file(path, &none, &px, &w, &h, &c, &err);
    CHECK(rc == SDFED_ERR_ARG && px == NULL && strstr(err.message, "max_pixels"), "max_pixels 0: %d \"%s\"", rc,
          err.message);

    /* a well-formed PNG header announcing 1,000,000 x 1,000,000 pixels (the
     * largest read) and no image data: refused as truncated, having set
     * aside only the reduced result (3907 x 3907), not terabytes */
    uint8_t huge_png[45] = {0x89, 'P',         'N', 'G',  '\r', '\n', 0x1a, '\n', 0,    0,    0,   13,  'I', 'H',
                            'D',  'R',         0,   0x0f, 0x42, 0x40, 0,    0x0f, 0x42, 0x40, 8,   2,   0,   0,
                            0,    /* CRC */ 0, 0,   0,    0,    0,    0,    0,    0,    'I',  'D', 'A', 'T' /* CRC */};
    uint32_t crc = crc32(huge_png + 12, 17), crc_idat = crc32(huge_png + 37, 4);
    for (int i = 0; i < 4; i++) {
        huge_png[29 + i] = (uint8_t)(crc >> (24 - 8 * i));
        huge_png[41 + i] = (uint8_t)(crc_idat >> (24 - 8 * i));
    }
    rc = native_image_decode_memory(huge_png, sizeof huge_png, "huge.png", NULL, &px, &w, &h, &c, &err);
    CHECK(rc == SDFED_ERR_FORMAT && px == NULL && strstr(err.message, "huge.png"), "10^6-square PNG: %d \"%s\"", rc,
          err.message);
    printf("  huge.png     -> %s\n", err.message);
}

/* The reduction rule: the smallest power of two for the pixels and the sides. */
static void test_factor(void) {
    const size_t max = SDFED_IMAGE_MAX_PIXELS;
    struct {
        uint64_t w, h;
        size_t max;
        int want;
    } cases[] = {
        {.w = 4096, .h = 4096, .max = max, .want = 1},
        {.w = 4097, .h = 4096, .max = max, .want = 2},
        {.w = 16384, .h = 1, .max = max, .want = 1},
        {.w = 16385, .h = 1, .max = max, .want = 2},
        {.w = 1, .h = 16385, .max = max, .want = 2},
        {.w = 16000, .h = 10524, .max = max, .want = 4},
        {.w = 20000, .h = 30000, .max = max, .want = 8},
        {.w = 20990, .h = 29700, .max = max, .want = 8},
        {.w = 65500, .h = 65500, .max = max, .want = 16},
        {.w = 1000000, .h = 1000000, .max = max, .want = 256},
        {.w = 1, .h = 1, .max = 1, .want = 1},
        {.w = 3, .h = 2, .max = 1, .want = 4},
        {.w = 31, .h = 23, .max = 100, .want = 4},
        {.w = 32, .h = 24, .max = 48, .want = 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int f = sdfed_image_reduction_factor(cases[i].w, cases[i].h, cases[i].max);
        CHECK(f == cases[i].want, "%llu x %llu for %zu pixels: reduced by %d, want %d", (unsigned long long)cases[i].w,
              (unsigned long long)cases[i].h, cases[i].max, f, cases[i].want);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR (written by tests/oracle/image_oracle.py decode DIR)\n", argv[0]);
        return 2;
    }
    test_factor();
    test_fixtures(argv[1]);
    test_misc_errors(argv[1]);
    native_image_decode_options reduced = native_image_decode_defaults((const uint8_t[3]){48, 128, 192});
    reduced.max_pixels = 16;
    test_prefixes_and_flips(argv[1], NULL);
    test_prefixes_and_flips(argv[1], &reduced);
    return check_report("test_image_decode");
}
