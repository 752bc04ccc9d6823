/* CLIP image preprocessing: PIL's bicubic resize (bit-exact, 8-bit fixed
 * point), torchvision's centre crop, ToTensor and Normalize.
 * See image_preprocess.h for what is computed and how exactly. */
#include "clip/image_preprocess.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
/* PIL's coefficients are computed without fused multiply-adds; keep it so
 * (gcc in ISO C mode does not contract either). */
#pragma STDC FP_CONTRACT OFF
#endif

/* PIL: 8 bits of result, 2 bits of headroom, the rest fraction. */
#define PRECISION_BITS (32 - 8 - 2)
#define BICUBIC_SUPPORT 2.0
/* PIL starts every sum at one half, so that the final shift rounds */
#define ROUND_HALF ((int64_t)1 << (PRECISION_BITS - 1))

/* The a = -0.5 cubic convolution kernel, evaluated as PIL does. */
static double bicubic(double x) {
    const double a = -0.5;
    if (x < 0.0) x = -x;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

/* A normalised coefficient in fixed point, rounded half away from zero. */
static int32_t fixed_coeff(double w) {
    double s = w * (1 << PRECISION_BITS);
    return w < 0 ? (int32_t)(-0.5 + s) : (int32_t)(0.5 + s);
}

/* PIL's clip8: floor(acc / 2^PRECISION_BITS) clamped to 0..255. */
static uint8_t clip8(int64_t acc) {
    if (acc < 0) return 0;
    int64_t v = acc >> PRECISION_BITS;
    return v > 255 ? 255 : (uint8_t)v;
}

/* Resampling coefficients of one axis, for output samples first..first+count-1
 * of a resize from in_size to out_size samples: output i reads n_i = bounds[2i+1]
 * inputs starting at bounds[2i], weighted by coeffs[i*ksize .. i*ksize+n_i). */
typedef struct {
    int ksize;
    int *bounds;     /* (count, 2) */
    int32_t *coeffs; /* (count, ksize) */
} axis_coeffs;

static void axis_free(axis_coeffs *ax) {
    free(ax->bounds);
    free(ax->coeffs);
    ax->bounds = NULL;
    ax->coeffs = NULL;
}

/* PIL's precompute_coeffs + normalize_coeffs_8bpc for a box (0, in_size).
 * An axis that keeps its size is not resampled by PIL; its identity
 * coefficients (one tap of weight 1) give the same values. */
static int axis_init(axis_coeffs *ax, int in_size, int out_size, int first, int count, sdfed_error *err) {
    ax->bounds = NULL;
    ax->coeffs = NULL;
    double scale = (double)in_size / out_size;
    double filterscale = scale < 1.0 ? 1.0 : scale;
    double support = BICUBIC_SUPPORT * filterscale;
    int ksize = in_size == out_size ? 1 : (int)ceil(support) * 2 + 1;
    ax->ksize = ksize;
    ax->bounds = malloc((size_t)count * 2 * sizeof(int));
    ax->coeffs = malloc((size_t)count * (size_t)ksize * sizeof(int32_t));
    double *w = malloc((size_t)ksize * sizeof(double));
    if (!ax->bounds || !ax->coeffs || !w) {
        free(w);
        axis_free(ax);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "image resize: out of memory for %d x %d coefficients", count, ksize);
    }
    for (int i = 0; i < count; i++) {
        int xx = first + i;
        int *bound = ax->bounds + 2 * i;
        int32_t *k = ax->coeffs + (size_t)i * ksize;
        if (in_size == out_size) {
            bound[0] = xx;
            bound[1] = 1;
            k[0] = 1 << PRECISION_BITS;
            continue;
        }
        double center = (xx + 0.5) * scale;
        double ss = 1.0 / filterscale;
        int xmin = (int)(center - support + 0.5);
        if (xmin < 0) xmin = 0;
        int xmax = (int)(center + support + 0.5);
        if (xmax > in_size) xmax = in_size;
        int n = xmax - xmin;
        if (n > ksize) n = ksize; /* cannot happen; keeps the writes in bounds */
        double ww = 0.0;
        for (int x = 0; x < n; x++) {
            w[x] = bicubic(((double)(x + xmin) - center + 0.5) * ss);
            ww += w[x];
        }
        for (int x = 0; x < n; x++) {
            if (ww != 0.0) w[x] /= ww;
            k[x] = fixed_coeff(w[x]);
        }
        for (int x = n; x < ksize; x++) k[x] = 0;
        bound[0] = xmin;
        bound[1] = n;
    }
    free(w);
    return SDFED_OK;
}

static int check_size(int size, sdfed_error *err) {
    if (size < 1 || size > SDFED_IMAGE_MAX_SIDE)
        return sdfed_fail(err, SDFED_ERR_ARG, "image: target size %d out of range 1..%d", size, SDFED_IMAGE_MAX_SIDE);
    return SDFED_OK;
}

static int check_side(const char *what, int n, sdfed_error *err) {
    if (n < 1) return sdfed_fail(err, SDFED_ERR_ARG, "image: %s %d is not positive", what, n);
    if (n > SDFED_IMAGE_MAX_SIDE)
        return sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "image: %s %d exceeds the limit of %d", what, n,
                          SDFED_IMAGE_MAX_SIDE);
    return SDFED_OK;
}

static int check_image(const sdfed_image *img, sdfed_error *err) {
    if (!img) return sdfed_fail(err, SDFED_ERR_ARG, "image: no image given");
    int rc;
    if ((rc = check_side("width", img->width, err)) != SDFED_OK) return rc;
    if ((rc = check_side("height", img->height, err)) != SDFED_OK) return rc;
    if (img->channels != 1 && img->channels != 3 && img->channels != 4)
        return sdfed_fail(err, SDFED_ERR_ARG, "image: %d channels (expected 1 grey, 3 RGB or 4 RGBA)", img->channels);
    if (!img->pixels) return sdfed_fail(err, SDFED_ERR_ARG, "image: pixel pointer is NULL");
    size_t row = (size_t)img->width * (size_t)img->channels;
    if (img->stride < row)
        return sdfed_fail(err, SDFED_ERR_ARG, "image: stride %zu is smaller than a row of %zu bytes", img->stride, row);
    if (img->height > 1 && img->stride > (SIZE_MAX - row) / (size_t)(img->height - 1))
        return sdfed_fail(err, SDFED_ERR_ARG, "image: stride %zu x %d rows overflows the address space", img->stride,
                          img->height);
    return SDFED_OK;
}

/* Python's round(d / 2.0) for d >= 0: half to even. */
static int half_round_even(int d) {
    int k = d / 2;
    if (d % 2 == 0) return k;
    return k % 2 == 0 ? k : k + 1;
}

int sdfed_image_geometry(int width, int height, int size, int *resized_w, int *resized_h, int *left, int *top,
                         sdfed_error *err) {
    int rc;
    if ((rc = check_side("width", width, err)) != SDFED_OK) return rc;
    if ((rc = check_side("height", height, err)) != SDFED_OK) return rc;
    if ((rc = check_size(size, err)) != SDFED_OK) return rc;
    /* torchvision: short side -> size, long side -> int(size * long / short) */
    int short_side = width <= height ? width : height;
    int long_side = width <= height ? height : width;
    int new_long = (int)((double)((int64_t)size * long_side) / (double)short_side);
    int rw = width <= height ? size : new_long;
    int rh = width <= height ? new_long : size;
    if (resized_w) *resized_w = rw;
    if (resized_h) *resized_h = rh;
    if (left) *left = half_round_even(rw - size);
    if (top) *top = half_round_even(rh - size);
    return SDFED_OK;
}

int sdfed_image_resize_crop(const sdfed_image *img, int size, uint8_t *out_rgb, sdfed_error *err) {
    int rc;
    if ((rc = check_image(img, err)) != SDFED_OK) return rc;
    if ((rc = check_size(size, err)) != SDFED_OK) return rc;
    if (!out_rgb) return sdfed_fail(err, SDFED_ERR_ARG, "image: output buffer is NULL");
    int rw, rh, left, top;
    if ((rc = sdfed_image_geometry(img->width, img->height, size, &rw, &rh, &left, &top, err)) != SDFED_OK) return rc;

    /* resized pixels left..left+size-1 of each row, top..top+size-1 of each column */
    axis_coeffs hz, vt;
    if ((rc = axis_init(&hz, img->width, rw, left, size, err)) != SDFED_OK) return rc;
    if ((rc = axis_init(&vt, img->height, rh, top, size, err)) != SDFED_OK) {
        axis_free(&hz);
        return rc;
    }
    /* the input rows the vertical pass reads */
    int row0 = img->height, row1 = 0;
    for (int i = 0; i < size; i++) {
        int lo = vt.bounds[2 * i], hi = lo + vt.bounds[2 * i + 1];
        if (lo < row0) row0 = lo;
        if (hi > row1) row1 = hi;
    }
    int nc = img->channels == 1 ? 1 : 3; /* channels resampled; alpha is not */
    int ch = img->channels;
    size_t tmp_row = (size_t)size * nc;
    uint8_t *tmp = malloc((size_t)(row1 - row0) * tmp_row);
    int64_t *acc_row = malloc(tmp_row * sizeof(int64_t));
    if (!tmp || !acc_row) {
        free(tmp);
        free(acc_row);
        axis_free(&hz);
        axis_free(&vt);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "image resize: out of memory for a %d x %d buffer", size, row1 - row0);
    }

    /* horizontal pass: input rows row0..row1-1 (width, ch) -> tmp (row1-row0, size, nc) */
    for (int y = row0; y < row1; y++) {
        const uint8_t *in_y = img->pixels + (size_t)y * img->stride;
        uint8_t *tmp_y = tmp + (size_t)(y - row0) * tmp_row;
        for (int j = 0; j < size; j++) {
            int xmin = hz.bounds[2 * j], n = hz.bounds[2 * j + 1];
            const int32_t *k = hz.coeffs + (size_t)j * hz.ksize;
            const uint8_t *in_x = in_y + (size_t)xmin * ch;
            if (nc == 1) {
                int64_t acc = ROUND_HALF;
                for (int x = 0; x < n; x++) acc += (int64_t)in_x[x] * k[x];
                tmp_y[j] = clip8(acc);
            } else {
                int64_t acc0 = ROUND_HALF, acc1 = ROUND_HALF, acc2 = ROUND_HALF;
                for (int x = 0; x < n; x++, in_x += ch) {
                    acc0 += (int64_t)in_x[0] * k[x];
                    acc1 += (int64_t)in_x[1] * k[x];
                    acc2 += (int64_t)in_x[2] * k[x];
                }
                tmp_y[j * 3 + 0] = clip8(acc0);
                tmp_y[j * 3 + 1] = clip8(acc1);
                tmp_y[j * 3 + 2] = clip8(acc2);
            }
        }
    }

    /* vertical pass: tmp -> out_rgb (size, size, 3), grey replicated;
     * acc_row holds one output row (size * nc sums), filled tap by tap */
    for (int i = 0; i < size; i++) {
        int ymin = vt.bounds[2 * i] - row0, n = vt.bounds[2 * i + 1];
        const int32_t *k = vt.coeffs + (size_t)i * vt.ksize;
        for (size_t p = 0; p < tmp_row; p++) acc_row[p] = ROUND_HALF;
        for (int y = 0; y < n; y++) {
            const uint8_t *tmp_y = tmp + (size_t)(ymin + y) * tmp_row;
            for (size_t p = 0; p < tmp_row; p++) acc_row[p] += (int64_t)tmp_y[p] * k[y];
        }
        uint8_t *out_i = out_rgb + (size_t)i * size * 3;
        for (int j = 0; j < size; j++) {
            for (int c = 0; c < 3; c++) out_i[j * 3 + c] = clip8(acc_row[(size_t)j * nc + (nc == 1 ? 0 : c)]);
        }
    }
    free(acc_row);
    free(tmp);
    axis_free(&hz);
    axis_free(&vt);
    return SDFED_OK;
}

static int check_mean_std(const float mean[3], const float std[3], sdfed_error *err) {
    if (!mean || !std) return sdfed_fail(err, SDFED_ERR_ARG, "image normalize: NULL mean or std");
    for (int c = 0; c < 3; c++) {
        if (!isfinite(mean[c]) || !isfinite(std[c]) || !(std[c] > 0.0f))
            return sdfed_fail(err, SDFED_ERR_ARG,
                              "image normalize: channel %d has mean %g, std %g (need finite, std > 0)", c,
                              (double)mean[c], (double)std[c]);
    }
    return SDFED_OK;
}

int sdfed_image_normalize(const uint8_t *rgb, int size, const float mean[3], const float std[3], float *out,
                          sdfed_error *err) {
    int rc;
    if ((rc = check_size(size, err)) != SDFED_OK) return rc;
    if (!rgb || !out) return sdfed_fail(err, SDFED_ERR_ARG, "image normalize: NULL buffer");
    if ((rc = check_mean_std(mean, std, err)) != SDFED_OK) return rc;
    /* rgb is (size, size, 3), out is (3, size, size) */
    size_t plane = (size_t)size * size;
    for (int c = 0; c < 3; c++) {
        float *out_c = out + c * plane;
        for (size_t p = 0; p < plane; p++) {
            float v = (float)rgb[p * 3 + c] / 255.0f;
            out_c[p] = (v - mean[c]) / std[c];
        }
    }
    return SDFED_OK;
}

int sdfed_image_preprocess(const sdfed_image *img, int size, const float mean[3], const float std[3], float *out,
                           sdfed_error *err) {
    int rc;
    if ((rc = check_size(size, err)) != SDFED_OK) return rc;
    if (!out) return sdfed_fail(err, SDFED_ERR_ARG, "image: output buffer is NULL");
    if ((rc = check_mean_std(mean, std, err)) != SDFED_OK) return rc;
    if ((rc = check_image(img, err)) != SDFED_OK) return rc;
    uint8_t *rgb = malloc((size_t)size * size * 3);
    if (!rgb) return sdfed_fail(err, SDFED_ERR_NOMEM, "image: out of memory for a %d x %d crop", size, size);
    rc = sdfed_image_resize_crop(img, size, rgb, err);
    if (rc == SDFED_OK) rc = sdfed_image_normalize(rgb, size, mean, std, out, err);
    free(rgb);
    return rc;
}

int sdfed_image_reduction_factor(uint64_t width, uint64_t height, size_t max_pixels) {
    uint64_t f = 1;
    for (;;) {
        uint64_t w = (width + f - 1) / f, h = (height + f - 1) / f;
        if (w * h <= max_pixels && w <= SDFED_IMAGE_MAX_SIDE && h <= SDFED_IMAGE_MAX_SIDE) return (int)f;
        f *= 2;
    }
}
