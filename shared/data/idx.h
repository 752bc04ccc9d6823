/* IDX files (the MNIST / Fashion-MNIST format) parsed from memory, the
 * labelled image set they make, and the four image "domains" of the
 * multi-domain setting.
 *
 * IDX: a big-endian header, then the data. Only unsigned-byte files are
 * read here:
 *   images  magic 0x00000803, then n, rows, cols (u32 each): n*rows*cols bytes
 *   labels  magic 0x00000801, then n (u32): n bytes
 * The data must fill the rest of the buffer exactly (a short or over-long
 * buffer is SDFED_ERR_FORMAT, as is any other magic); rows and cols must be
 * >= 1, n may be 0; n and rows*cols must fit an int and the data a size_t
 * (SDFED_ERR_UNSUPPORTED otherwise). */
#ifndef SDFED_IDX_H
#define SDFED_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define SDFED_IDX_MAGIC_IMAGES 0x00000803u
#define SDFED_IDX_MAGIC_LABELS 0x00000801u

/* Fashion-MNIST's ten classes, by label. */
#define SDFED_FMNIST_CLASSES 10
extern const char *const sdfed_fmnist_class_names[SDFED_FMNIST_CLASSES];

typedef struct sdfed_dataset {
    int n, rows, cols;
    const uint8_t *pixels; /* (n, rows, cols) row-major grey, 0 black .. 255 white */
    const uint8_t *labels; /* (n), each < n_classes */
    int n_classes;
    const char *const *class_names; /* (n_classes), or NULL */
    /* Heap blocks the dataset owns (freed by sdfed_dataset_free), NULL when
     * pixels and labels point into buffers the caller keeps alive. */
    void *owned_images, *owned_labels;
} sdfed_dataset;

/* Header and bounds checks of one file; *pixels / *labels point into buf. */
int sdfed_idx_images(const uint8_t *buf, size_t size, int *n, int *rows, int *cols, const uint8_t **pixels,
                     sdfed_error *err);
int sdfed_idx_labels(const uint8_t *buf, size_t size, int *n, const uint8_t **labels, sdfed_error *err);

/* Both files of one split: the counts must agree and every label must be
 * < n_classes (1..256). out->pixels and out->labels point INTO the two
 * buffers (no copy): the caller keeps them alive as long as out, and the
 * owned_* fields are NULL. class_names is sdfed_fmnist_class_names when
 * n_classes == 10, NULL otherwise. On failure *out is zeroed. */
int sdfed_idx_dataset(const uint8_t *images, size_t images_size, const uint8_t *labels, size_t labels_size,
                      int n_classes, sdfed_dataset *out, sdfed_error *err);

/* Frees owned_images and owned_labels (free()) and zeroes *ds. */
void sdfed_dataset_free(sdfed_dataset *ds);

/* ---- domains -------------------------------------------------------------
 * The multi-domain setting sees every image through one of four fixed
 * transforms (v is a pixel, 0..255):
 *   0 ORIGINAL      v
 *   1 INVERTED      255 - v
 *   2 ROTATED       rotated 90 degrees clockwise: out (cols, rows) with
 *                   out[r][c] = in[rows - 1 - c][r]; the caller's rows and
 *                   cols swap (28 x 28 stays 28 x 28)
 *   3 LOW_CONTRAST  clamp(64 + v / 2 + e, 0, 255), v / 2 rounded down, e an
 *                   integer uniform in [-16, 16]: e = below(33) - 16 drawn
 *                   pixel by pixel in row-major order from
 *                   sdfed_rng_seed_stream(seed, image_index). The result
 *                   lies in 48..207, so the clamp never acts on 8-bit input.
 * Each transform is a pure function of (pixels, seed, image_index). */
enum {
    SDFED_DOMAIN_ORIGINAL = 0,
    SDFED_DOMAIN_INVERTED = 1,
    SDFED_DOMAIN_ROTATED = 2,
    SDFED_DOMAIN_LOW_CONTRAST = 3,
    SDFED_DOMAINS = 4
};
extern const char *const sdfed_domain_names[SDFED_DOMAINS];

/* in (rows, cols) -> out (rows, cols), or (cols, rows) for ROTATED; in and
 * out must not overlap. */
int sdfed_domain_apply(int domain, const uint8_t *in, int rows, int cols, uint64_t seed, uint64_t image_index,
                       uint8_t *out, sdfed_error *err);

/* A domain id for each of n samples, balanced: the positions 0..n-1 are
 * shuffled with sdfed_rng_seed(seed) and the i-th of the shuffled order gets
 * domain i % n_domains (so domain sizes differ by at most one). */
int sdfed_domain_assign(int n, int n_domains, uint64_t seed, uint8_t *domain, sdfed_error *err);

#endif
