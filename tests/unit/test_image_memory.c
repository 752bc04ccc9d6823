/* Very large images decode in bounded memory (native/image_decode.h): a
 * 20,000 x 30,000 RGB PNG and a 20,000 x 30,000 JPEG (600 million pixels,
 * 1.68 GiB of samples each), written here row by row with libpng and
 * libjpeg into DIR, are each decoded in a process of its own, which
 * checks that
 *  - the image is not refused ("exceeds the limit" was the message before)
 *    and comes out reduced by 8 (the smallest power of two for 2^24
 *    pixels): 2500 x 3750 RGB;
 *  - every pixel is the pattern's: the images are made of 8 x 8 blocks of
 *    one colour each, so the PNG's box means are the block colours exactly
 *    and the JPEG's 1/8 DCT decoding gives each block's colour within 3
 *    (its DC coefficient, quantised at quality 90, through YCbCr);
 *  - the process's peak resident size (getrusage's ru_maxrss) stays under
 *    MEMORY_BOUND_MIB, 96 MiB: the result is 26.8 MiB, a row, the row of
 *    box sums and the libraries' state add little, and the process itself
 *    (C library, libpng, libjpeg, zlib) a few MiB; decoding the whole image
 *    would take 1.68 GiB, and the files are never read whole (the JPEG is
 *    about 70 MB, the PNG a few MB).
 * And a decoding that runs out of memory says so: a 4096 x 4096 progressive
 * JPEG (whose decoder holds every coefficient: 96 MiB) in a process whose
 * address space is capped 32 MiB above what it uses fails with
 * SDFED_ERR_NOMEM, "out of memory", the host's trouble of the moment and
 * not remembered as the file's (native/image_check.h), where it was "invalid
 * JPEG: Insufficient memory" (SDFED_ERR_FORMAT, a verdict kept). Not under
 * AddressSanitizer, whose allocator reserves its address space its own way.
 * The files are deleted at the end.
 *
 * Usage: test_image_memory DIR                  (the test)
 *        test_image_memory decode FILE          (one decoding, run by the test)
 *        test_image_memory decode-short FILE    (one decoding with little memory) */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <jpeglib.h>
#include <png.h>

#include "check.h"
#include "native/image_decode.h"

#define WIDTH 20000
#define HEIGHT 30000
#define BLOCK 8
#define MEMORY_BOUND_MIB 96
#define PROGRESSIVE_SIDE 4096
#define SHORT_MIB 32

/* AddressSanitizer (clang says so through __has_feature, gcc by a macro) */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(UNDER_ASAN)
#define UNDER_ASAN 1
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

extern char **environ;

/* The colour of the 8 x 8 block (bx, by). */
static void block_colour(int bx, int by, uint8_t rgb[3]) {
    rgb[0] = (uint8_t)(bx * 3 + by);
    rgb[1] = (uint8_t)(by * 5);
    rgb[2] = (uint8_t)((bx ^ by) * 7);
}

/* Image row y of the pattern (width x 3 bytes). */
static void pattern_row(int y, int width, uint8_t *row) {
    for (int x = 0; x < width; x++) block_colour(x / BLOCK, y / BLOCK, row + 3 * (size_t)x);
}

static int write_png(const char *path) {
    FILE *f = fopen(path, "wb");
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    uint8_t *row = malloc(3 * (size_t)WIDTH);
    if (!f || !png || !info || !row || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        if (f) fclose(f);
        free(row);
        return 1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, WIDTH, HEIGHT, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 1);
    png_set_filter(png, 0, PNG_FILTER_UP); /* 7 rows in 8 repeat the one above: zeros */
    png_write_info(png, info);
    for (int y = 0; y < HEIGHT; y++) {
        if (y % BLOCK == 0) pattern_row(y, WIDTH, row);
        png_write_row(png, row);
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(row);
    return fclose(f) != 0;
}

/* The pattern as a JPEG of width x height, baseline or progressive. */
static int write_jpeg(const char *path, int width, int height, int progressive) {
    FILE *f = fopen(path, "wb");
    uint8_t *row = malloc(3 * (size_t)width);
    if (!f || !row) {
        if (f) fclose(f);
        free(row);
        return 1;
    }
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr jerr;
    cinfo.err = jpeg_std_error(&jerr); /* a libjpeg error ends the test: it writes its own file */
    jpeg_create_compress(&cinfo);
    jpeg_stdio_dest(&cinfo, f);
    cinfo.image_width = (JDIMENSION)width;
    cinfo.image_height = (JDIMENSION)height;
    cinfo.input_components = 3;
    cinfo.in_color_space = JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, 90, TRUE);
    for (int c = 0; c < 3; c++) /* 4:4:4: every component's blocks are the pattern's */
        cinfo.comp_info[c].h_samp_factor = cinfo.comp_info[c].v_samp_factor = 1;
    if (progressive) jpeg_simple_progression(&cinfo);
    jpeg_start_compress(&cinfo, TRUE);
    for (int y = 0; y < height; y++) {
        if (y % BLOCK == 0) pattern_row(y, width, row);
        JSAMPROW r = row;
        jpeg_write_scanlines(&cinfo, &r, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    free(row);
    return fclose(f) != 0;
}

/* One decoding: the size, the pattern (within tolerance), the peak memory. */
static int decode(const char *path) {
    uint8_t *px = NULL;
    int w = 0, h = 0, c = 0;
    sdfed_error err = {0};
    int rc = native_image_decode_file(path, NULL, &px, &w, &h, &c, &err);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double peak_mib = (double)usage.ru_maxrss / 1024.0; /* ru_maxrss is in KiB */
    CHECK(rc == SDFED_OK, "%s: %s", path, err.message);
    int tolerance = strstr(path, ".jpg") ? 3 : 0;
    if (rc == SDFED_OK) {
        CHECK(w == WIDTH / BLOCK && h == HEIGHT / BLOCK && c == 3, "%s: %d x %d, %d channels; want %d x %d RGB", path,
              w, h, c, WIDTH / BLOCK, HEIGHT / BLOCK);
        long off = 0;
        int worst = 0;
        for (int y = 0; y < h && w == WIDTH / BLOCK; y++)
            for (int x = 0; x < w; x++) {
                uint8_t want[3];
                block_colour(x, y, want);
                for (int k = 0; k < 3; k++) {
                    int d = abs(px[3 * ((size_t)y * w + x) + k] - want[k]);
                    if (d > worst) worst = d;
                    if (d > tolerance) off++;
                }
            }
        CHECK(off == 0, "%s: %ld values off the pattern by more than %d (worst %d)", path, off, tolerance, worst);
        printf("%s: %d x %d -> %d x %d RGB (reduced by %d), largest difference from the pattern %d (at most %d)\n",
               path, WIDTH, HEIGHT, w, h, WIDTH / w, worst, tolerance);
    }
    CHECK(peak_mib <= MEMORY_BOUND_MIB, "%s: peak resident size %.1f MiB, over %d MiB", path, peak_mib,
          MEMORY_BOUND_MIB);
    printf("%s: peak resident size %.1f MiB (at most %d MiB)\n", path, peak_mib, MEMORY_BOUND_MIB);
    free(px);
    return check_report("test_image_memory decode");
}

/* One decoding with SHORT_MIB of address space beyond what the process
 * uses: out of memory, said as such. */
static int decode_short(const char *path) {
    long pages = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    CHECK(statm && fscanf(statm, "%ld", &pages) == 1, "reading /proc/self/statm");
    if (statm) fclose(statm);
    struct rlimit cap = {.rlim_cur = (rlim_t)pages * 4096 + ((rlim_t)SHORT_MIB << 20), .rlim_max = RLIM_INFINITY};
    CHECK(pages > 0 && setrlimit(RLIMIT_AS, &cap) == 0, "capping the address space");
    uint8_t *px = NULL;
    int w = 0, h = 0, c = 0;
    sdfed_error err = {0};
    int rc = native_image_decode_file(path, NULL, &px, &w, &h, &c, &err);
    CHECK(rc == SDFED_ERR_NOMEM && strstr(err.message, "out of memory"),
          "%s with %d MiB to spare: status %d (want %d, out of memory), \"%s\"", path, SHORT_MIB, rc, SDFED_ERR_NOMEM,
          err.message);
    printf("%s with %d MiB to spare: %s\n", path, SHORT_MIB, err.message);
    free(px);
    return check_report("test_image_memory decode-short");
}

/* Runs `self MODE path` in a process of its own; 1 when it passed. */
static int decode_apart(const char *self, const char *mode, const char *path) {
    char *args[] = {(char *)self, (char *)mode, (char *)path, NULL};
    pid_t pid;
    int status = 0;
    if (posix_spawn(&pid, self, NULL, NULL, args, environ) != 0 || waitpid(pid, &status, 0) != pid) return 0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "decode")) return decode(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "decode-short")) return decode_short(argv[2]);
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR | decode FILE | decode-short FILE\n", argv[0]);
        return 2;
    }
    char png_path[1024], jpeg_path[1024], progressive_path[1024];
    snprintf(png_path, sizeof png_path, "%s/big-%dx%d.png", argv[1], WIDTH, HEIGHT);
    snprintf(jpeg_path, sizeof jpeg_path, "%s/big-%dx%d.jpg", argv[1], WIDTH, HEIGHT);
    snprintf(progressive_path, sizeof progressive_path, "%s/progressive-%d.jpg", argv[1], PROGRESSIVE_SIDE);
    int png_ok = write_png(png_path) == 0, jpeg_ok = write_jpeg(jpeg_path, WIDTH, HEIGHT, 0) == 0;
    CHECK(png_ok && jpeg_ok, "writing %s and %s", png_path, jpeg_path);
    if (png_ok) CHECK(decode_apart(argv[0], "decode", png_path), "%s: decoding in its own process failed", png_path);
    if (jpeg_ok) CHECK(decode_apart(argv[0], "decode", jpeg_path), "%s: decoding in its own process failed", jpeg_path);
#if UNDER_ASAN
    printf("%s: not decoded short of memory under AddressSanitizer\n", progressive_path);
#else
    int progressive_ok = write_jpeg(progressive_path, PROGRESSIVE_SIDE, PROGRESSIVE_SIDE, 1) == 0;
    CHECK(progressive_ok, "writing %s", progressive_path);
    if (progressive_ok)
        CHECK(decode_apart(argv[0], "decode-short", progressive_path), "%s: decoding short of memory failed",
              progressive_path);
#endif
    remove(png_path);
    remove(jpeg_path);
    remove(progressive_path);
    return check_report("test_image_memory");
}
