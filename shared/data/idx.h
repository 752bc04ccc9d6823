/* IDX files (the MNIST / Fashion-MNIST format) parsed from memory and the
 * labelled image set they make.
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
 * owned_* fields are NULL. class_names is NULL: the host names the
 * classes. On failure *out is zeroed. */
int sdfed_idx_dataset(const uint8_t *images, size_t images_size, const uint8_t *labels, size_t labels_size,
                      int n_classes, sdfed_dataset *out, sdfed_error *err);

/* Frees owned_images and owned_labels (free()) and zeroes *ds. */
void sdfed_dataset_free(sdfed_dataset *ds);

#endif
