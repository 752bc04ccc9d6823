/* IDX parsing from memory (see idx.h). */
#include "data/idx.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Checks the magic and reads the ndims u32 dimensions after it. */
static int read_header(const char *what, const uint8_t *buf, size_t size, uint32_t magic, int ndims, uint32_t *dims,
                       sdfed_error *err) {
    size_t header = 4 + 4 * (size_t)ndims;
    if (!buf && size > 0) return sdfed_fail(err, SDFED_ERR_ARG, "idx %s: NULL buffer", what);
    if (size < 4) return sdfed_fail(err, SDFED_ERR_FORMAT, "idx %s: truncated: %zu bytes, no magic number", what, size);
    uint32_t got = be32(buf);
    if (got != magic)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "idx %s: bad magic 0x%08x (expected 0x%08x: unsigned bytes in %d dimension%s)", what,
                          (unsigned)got, (unsigned)magic, ndims, ndims == 1 ? "" : "s");
    if (size < header)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "idx %s: truncated header: %zu bytes of %zu", what, size, header);
    for (int i = 0; i < ndims; i++) dims[i] = be32(buf + 4 + 4 * i);
    return SDFED_OK;
}

/* The data after the header must be exactly `need` bytes. */
static int check_body(const char *what, size_t size, size_t header, uint64_t need, sdfed_error *err) {
    uint64_t have = size - header;
    if (have < need)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "idx %s: truncated: the header announces %llu data bytes, the buffer holds %llu", what,
                          (unsigned long long)need, (unsigned long long)have);
    if (have > need)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "idx %s: %llu unexpected bytes after the %llu data bytes", what,
                          (unsigned long long)(have - need), (unsigned long long)need);
    return SDFED_OK;
}

int sdfed_idx_images(const uint8_t *buf, size_t size, int *n, int *rows, int *cols, const uint8_t **pixels,
                     sdfed_error *err) {
    uint32_t d[3] = {0};
    int rc = read_header("images", buf, size, SDFED_IDX_MAGIC_IMAGES, 3, d, err);
    if (rc) return rc;
    if (d[1] == 0 || d[2] == 0)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "idx images: empty image size %u x %u", (unsigned)d[1],
                          (unsigned)d[2]);
    uint64_t per_image = (uint64_t)d[1] * d[2]; /* < 2^64 */
    if (d[0] > INT_MAX || per_image > INT_MAX || (uint64_t)d[0] * per_image > (uint64_t)SIZE_MAX)
        return sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "idx images: %u images of %u x %u is too large for this build",
                          (unsigned)d[0], (unsigned)d[1], (unsigned)d[2]);
    rc = check_body("images", size, 16, (uint64_t)d[0] * per_image, err);
    if (rc) return rc;
    *n = (int)d[0];
    *rows = (int)d[1];
    *cols = (int)d[2];
    *pixels = buf + 16;
    return SDFED_OK;
}

int sdfed_idx_labels(const uint8_t *buf, size_t size, int *n, const uint8_t **labels, sdfed_error *err) {
    uint32_t d[1] = {0};
    int rc = read_header("labels", buf, size, SDFED_IDX_MAGIC_LABELS, 1, d, err);
    if (rc) return rc;
    if (d[0] > INT_MAX)
        return sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "idx labels: %u labels is too many", (unsigned)d[0]);
    rc = check_body("labels", size, 8, d[0], err);
    if (rc) return rc;
    *n = (int)d[0];
    *labels = buf + 8;
    return SDFED_OK;
}

int sdfed_idx_dataset(const uint8_t *images, size_t images_size, const uint8_t *labels, size_t labels_size,
                      int n_classes, sdfed_dataset *out, sdfed_error *err) {
    memset(out, 0, sizeof *out);
    if (n_classes < 1 || n_classes > 256)
        return sdfed_fail(err, SDFED_ERR_ARG, "idx: n_classes must be in 1..256, got %d", n_classes);
    int n_images, rows, cols, n_labels;
    const uint8_t *pixels, *label;
    int rc = sdfed_idx_images(images, images_size, &n_images, &rows, &cols, &pixels, err);
    if (rc) return rc;
    rc = sdfed_idx_labels(labels, labels_size, &n_labels, &label, err);
    if (rc) return rc;
    if (n_images != n_labels)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "idx: %d images but %d labels", n_images, n_labels);
    for (int i = 0; i < n_labels; i++)
        if (label[i] >= n_classes)
            return sdfed_fail(err, SDFED_ERR_FORMAT, "idx labels: label %d of sample %d is outside 0..%d", label[i], i,
                              n_classes - 1);
    out->n = n_images;
    out->rows = rows;
    out->cols = cols;
    out->pixels = pixels;
    out->labels = label;
    out->n_classes = n_classes;
    return SDFED_OK;
}

void sdfed_dataset_free(sdfed_dataset *ds) {
    if (!ds) return;
    free(ds->owned_images);
    free(ds->owned_labels);
    memset(ds, 0, sizeof *ds);
}
