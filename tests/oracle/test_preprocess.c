/* Tests of shared/clip/image_preprocess.c: CLIP's resize + centre crop against
 * PIL (bit for bit) and ToTensor + Normalize against torch, on the cases that
 * tests/oracle/image_oracle.py writes into DIR at test time; then the
 * geometry, a few properties and every error path.
 *
 * Usage: test_preprocess DIR   (DIR/cases.txt and the files it names) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "clip/image_preprocess.h"
#include "read_file.h"

static uint8_t *read_case(const char *dir, const char *name, const char *ext, size_t *size) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s%s", dir, name, ext);
    uint8_t *buf = read_file(path, size);
    if (!buf) fprintf(stderr, "cannot read %s\n", path);
    return buf;
}

/* One oracle case: returns 1 if the files were there. */
static int run_case(const char *dir, const char *name, int w, int h, int c, size_t stride, int size,
                    const float mean[3], const float std[3]) {
    size_t in_size, rgb_size, f32_size;
    uint8_t *in = read_case(dir, name, ".in", &in_size);
    uint8_t *want_rgb = read_case(dir, name, ".rgb", &rgb_size);
    uint8_t *want_f32 = read_case(dir, name, ".f32", &f32_size);
    size_t n_rgb = (size_t)size * size * 3;
    int ok = in && want_rgb && want_f32 && in_size == stride * (size_t)h && rgb_size == n_rgb &&
             f32_size == n_rgb * sizeof(float);
    CHECK(ok, "%s: oracle files missing or of the wrong size", name);
    if (!ok) {
        free(in);
        free(want_rgb);
        free(want_f32);
        return 0;
    }
    sdfed_image img = {in, w, h, c, stride};
    sdfed_error err = {0};

    uint8_t *rgb = malloc(n_rgb);
    int rc = sdfed_image_resize_crop(&img, size, rgb, &err);
    CHECK(rc == SDFED_OK, "%s: resize_crop: %s", name, err.message);
    int max_d = 0;
    size_t n_diff = 0;
    for (size_t i = 0; i < n_rgb; i++) {
        int d = abs((int)rgb[i] - (int)want_rgb[i]);
        if (d) n_diff++;
        if (d > max_d) max_d = d;
    }
    CHECK(max_d == 0, "%s: %zu of %zu bytes differ from PIL, max |d| %d", name, n_diff, n_rgb, max_d);

    float *out = malloc(n_rgb * sizeof(float));
    rc = sdfed_image_preprocess(&img, size, mean, std, out, &err);
    CHECK(rc == SDFED_OK, "%s: preprocess: %s", name, err.message);
    double max_f = 0;
    size_t n_neq = 0;
    for (size_t i = 0; i < n_rgb; i++) {
        float want;
        memcpy(&want, want_f32 + i * sizeof(float), sizeof want);
        double d = fabs((double)out[i] - (double)want);
        if (out[i] != want) n_neq++;
        if (!(d <= max_f)) max_f = d; /* NaN propagates */
    }
    CHECK(max_f <= 1e-6, "%s: floats differ from torch by %g", name, max_f);
    printf("  %-30s %4dx%-4d c%d -> %3d: uint8 max|d| %d, float max|d| %.3g (%zu not bit-equal)\n", name, w, h, c, size,
           max_d, max_f, n_neq);
    free(out);
    free(rgb);
    free(in);
    free(want_rgb);
    free(want_f32);
    return 1;
}

static void test_oracle_cases(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/cases.txt", dir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot open %s (the oracle_preprocess fixture writes it)", path);
    if (!f) return;
    char name[256];
    int w, h, c, size, n_cases = 0;
    size_t stride;
    float mean[3], std[3];
    while (fscanf(f, "%255s %d %d %d %zu %d %f %f %f %f %f %f", name, &w, &h, &c, &stride, &size, &mean[0], &mean[1],
                  &mean[2], &std[0], &std[1], &std[2]) == 12)
        n_cases += run_case(dir, name, w, h, c, stride, size, mean, std);
    fclose(f);
    CHECK(n_cases >= 20, "only %d oracle cases ran", n_cases);
}

static void test_geometry(void) {
    struct {
        int w, h, size, rw, rh, left, top;
    } cases[] = {
        {7, 300, 64, 64, 2742, 0, 1339}, /* int(64 * 300 / 7) = 2742 */
        {300, 7, 64, 2742, 64, 1339, 0},  {64, 64, 64, 64, 64, 0, 0},
        {65, 64, 64, 65, 64, 0, 0},       /* round(0.5) = 0 */
        {67, 64, 64, 67, 64, 2, 0},       /* round(1.5) = 2 */
        {69, 64, 64, 69, 64, 2, 0},       /* round(2.5) = 2 */
        {64, 71, 64, 64, 71, 0, 4},       /* round(3.5) = 4 */
        {500, 333, 224, 336, 224, 56, 0}, /* int(224 * 500 / 333) = 336 */
        {1, 1, 224, 224, 224, 0, 0},      {1, 16384, 224, 224, 3670016, 0, 1834896},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rw = -1, rh = -1, left = -1, top = -1;
        sdfed_error err = {0};
        int rc = sdfed_image_geometry(cases[i].w, cases[i].h, cases[i].size, &rw, &rh, &left, &top, &err);
        CHECK(rc == SDFED_OK && rw == cases[i].rw && rh == cases[i].rh && left == cases[i].left && top == cases[i].top,
              "geometry %dx%d -> %d: got %dx%d at (%d,%d), want %dx%d at (%d,%d) [%s]", cases[i].w, cases[i].h,
              cases[i].size, rw, rh, left, top, cases[i].rw, cases[i].rh, cases[i].left, cases[i].top, err.message);
    }
}

/* A constant image stays constant through any resize; a 1 x 16384 strip
 * (resized to 224 x 3670016) only costs its 224 x 224 crop. */
static void test_constant_images(void) {
    static const int shapes[][3] = {{1, 16384, 224}, {16384, 2, 64}, {3, 5, 224}, {999, 1000, 7}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int w = shapes[s][0], h = shapes[s][1], size = shapes[s][2];
        for (int c = 1; c <= 4; c++) {
            if (c == 2) continue;
            size_t n = (size_t)w * h * c;
            uint8_t *px = malloc(n);
            for (size_t i = 0; i < n; i++) px[i] = (uint8_t)(c == 1 ? 200 : (i % c) * 70 + 10);
            sdfed_image img = {px, w, h, c, (size_t)w * c};
            uint8_t *rgb = malloc((size_t)size * size * 3);
            sdfed_error err = {0};
            int rc = sdfed_image_resize_crop(&img, size, rgb, &err);
            int bad = 0;
            for (size_t i = 0; rc == SDFED_OK && i < (size_t)size * size * 3; i++) {
                int want = c == 1 ? 200 : (int)(i % 3) * 70 + 10;
                if (rgb[i] != want) bad++;
            }
            CHECK(rc == SDFED_OK && bad == 0, "constant %dx%d c%d -> %d: rc %d, %d wrong [%s]", w, h, c, size, rc, bad,
                  err.message);
            free(rgb);
            free(px);
        }
    }
}

#define EXPECT_FAIL(call, want_code)                                                                                   \
    do {                                                                                                               \
        sdfed_error e_ = {0};                                                                                          \
        int rc_ = (call);                                                                                              \
        CHECK(rc_ == (want_code) && e_.code == (want_code) && e_.message[0] != '\0',                                   \
              "%s: rc %d (%s), want %d; message \"%s\"", #call, rc_, sdfed_status_name(rc_), want_code, e_.message);   \
    } while (0)

static void test_errors(void) {
    uint8_t px[4 * 4 * 4] = {0};
    uint8_t rgb[8 * 8 * 3];
    float out[3 * 8 * 8];
    const float mean[3] = SDFED_CLIP_MEAN, std[3] = SDFED_CLIP_STD;
    sdfed_image good = {px, 4, 4, 3, 12};
    sdfed_image img;

    EXPECT_FAIL(sdfed_image_resize_crop(NULL, 8, rgb, &e_), SDFED_ERR_ARG);
    img = good, img.width = 0;
    EXPECT_FAIL(sdfed_image_resize_crop(&img, 8, rgb, &e_), SDFED_ERR_ARG);
    img = good, img.height = -3;
    EXPECT_FAIL(sdfed_image_resize_crop(&img, 8, rgb, &e_), SDFED_ERR_ARG);
    img = good, img.width = SDFED_IMAGE_MAX_SIDE + 1, img.stride = (size_t)img.width * 3;
    EXPECT_FAIL(sdfed_image_resize_crop(&img, 8, rgb, &e_), SDFED_ERR_UNSUPPORTED);
    img = good, img.height = 1 << 30;
    EXPECT_FAIL(sdfed_image_preprocess(&img, 8, mean, std, out, &e_), SDFED_ERR_UNSUPPORTED);
    img = good, img.channels = 2;
    EXPECT_FAIL(sdfed_image_resize_crop(&img, 8, rgb, &e_), SDFED_ERR_ARG);
    img = good, img.channels = 0;
    EXPECT_FAIL(sdfed_image_resize_crop(&img, 8, rgb, &e_), SDFED_ERR_ARG);
    img = good, img.channels = 5;
    EXPECT_FAIL(sdfed_image_preprocess(&img, 8, mean, std, out, &e_), SDFED_ERR_ARG);
    img = good, img.pixels = NULL;
    EXPECT_FAIL(sdfed_image_resize_crop(&img, 8, rgb, &e_), SDFED_ERR_ARG);
    EXPECT_FAIL(sdfed_image_preprocess(&img, 8, mean, std, out, &e_), SDFED_ERR_ARG);
    img = good, img.stride = 11;
    EXPECT_FAIL(sdfed_image_resize_crop(&img, 8, rgb, &e_), SDFED_ERR_ARG);
    img = good, img.stride = SIZE_MAX / 2;
    EXPECT_FAIL(sdfed_image_resize_crop(&img, 8, rgb, &e_), SDFED_ERR_ARG);
    EXPECT_FAIL(sdfed_image_resize_crop(&good, 0, rgb, &e_), SDFED_ERR_ARG);
    EXPECT_FAIL(sdfed_image_resize_crop(&good, -224, rgb, &e_), SDFED_ERR_ARG);
    EXPECT_FAIL(sdfed_image_resize_crop(&good, SDFED_IMAGE_MAX_SIDE + 1, rgb, &e_), SDFED_ERR_ARG);
    EXPECT_FAIL(sdfed_image_resize_crop(&good, 8, NULL, &e_), SDFED_ERR_ARG);
    EXPECT_FAIL(sdfed_image_preprocess(&good, 8, mean, std, NULL, &e_), SDFED_ERR_ARG);
    EXPECT_FAIL(sdfed_image_preprocess(&good, 0, mean, std, out, &e_), SDFED_ERR_ARG);
    EXPECT_FAIL(sdfed_image_preprocess(&good, 8, NULL, std, out, &e_), SDFED_ERR_ARG);
    EXPECT_FAIL(sdfed_image_preprocess(&good, 8, mean, NULL, out, &e_), SDFED_ERR_ARG);
    const float zero_std[3] = {0.2f, 0.0f, 0.2f}, neg_std[3] = {0.2f, 0.2f, -0.2f};
    const float nan_mean[3] = {0.2f, NAN, 0.2f}, inf_std[3] = {INFINITY, 0.2f, 0.2f};
    EXPECT_FAIL(sdfed_image_preprocess(&good, 8, mean, zero_std, out, &e_), SDFED_ERR_ARG);
    EXPECT_FAIL(sdfed_image_preprocess(&good, 8, mean, neg_std, out, &e_), SDFED_ERR_ARG);
    EXPECT_FAIL(sdfed_image_preprocess(&good, 8, nan_mean, std, out, &e_), SDFED_ERR_ARG);
    EXPECT_FAIL(sdfed_image_preprocess(&good, 8, mean, inf_std, out, &e_), SDFED_ERR_ARG);
    EXPECT_FAIL(sdfed_image_normalize(NULL, 8, mean, std, out, &e_), SDFED_ERR_ARG);
    EXPECT_FAIL(sdfed_image_geometry(0, 5, 8, NULL, NULL, NULL, NULL, &e_), SDFED_ERR_ARG);
    EXPECT_FAIL(sdfed_image_geometry(5, 5, 0, NULL, NULL, NULL, NULL, &e_), SDFED_ERR_ARG);

    /* a NULL error handle is allowed; the code still comes back */
    img = good, img.width = -1;
    CHECK(sdfed_image_resize_crop(&img, 8, rgb, NULL) == SDFED_ERR_ARG, "NULL err handle");
    /* and the good image works */
    sdfed_error err = {0};
    CHECK(sdfed_image_preprocess(&good, 8, mean, std, out, &err) == SDFED_OK, "good image: %s", err.message);
    CHECK(fabsf(out[0] - (0.0f - mean[0]) / std[0]) == 0.0f, "black pixel normalises to -mean/std");
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR (written by tests/oracle/image_oracle.py preprocess DIR)\n", argv[0]);
        return 2;
    }
    test_oracle_cases(argv[1]);
    test_geometry();
    test_constant_images();
    test_errors();
    return check_report("test_preprocess");
}
