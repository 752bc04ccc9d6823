/* Fashion-MNIST files -> sdfed_dataset: gzip through native/gzip.h, then
 * the IDX parser of the core (see dataset_file.h). */
#include "native/dataset_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "native/gzip.h"

const char *const native_fmnist_class_names[SDFED_FMNIST_CLASSES] = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
};

/* dir/name.gz, or dir/name when only that exists */
static int read_member(const char *dir, const char *name, uint8_t **data, size_t *size, sdfed_error *err) {
    char path[4096];
    int len = snprintf(path, sizeof path, "%s/%s.gz", dir, name);
    if (len < 0 || (size_t)len >= sizeof path) return sdfed_fail(err, SDFED_ERR_ARG, "%s: path too long", dir);
    if (access(path, F_OK) != 0) {
        int gz_errno = errno;
        char plain[4096];
        snprintf(plain, sizeof plain, "%s/%s", dir, name);
        if (access(plain, F_OK) == 0) return native_read_gz_file(plain, SDFED_DATASET_FILE_MAX, data, size, err);
        return sdfed_fail(err, SDFED_ERR_IO, "%s: %s (and no uncompressed %s)", path, strerror(gz_errno), name);
    }
    return native_read_gz_file(path, SDFED_DATASET_FILE_MAX, data, size, err);
}

int native_fmnist_load(const char *dir, int split, sdfed_dataset *out, sdfed_error *err) {
    memset(out, 0, sizeof *out);
    if (split != SDFED_FMNIST_TRAIN && split != SDFED_FMNIST_TEST)
        return sdfed_fail(err, SDFED_ERR_ARG, "fashion-mnist: unknown split %d (0 train, 1 test)", split);
    if (!dir || !*dir) dir = SDFED_FMNIST_DEFAULT_DIR;
    const char *prefix = split == SDFED_FMNIST_TRAIN ? "train" : "t10k";
    char images_name[64], labels_name[64];
    snprintf(images_name, sizeof images_name, "%s-images-idx3-ubyte", prefix);
    snprintf(labels_name, sizeof labels_name, "%s-labels-idx1-ubyte", prefix);
    uint8_t *images = NULL, *labels = NULL;
    size_t images_size = 0, labels_size = 0;
    int rc = read_member(dir, images_name, &images, &images_size, err);
    if (!rc) rc = read_member(dir, labels_name, &labels, &labels_size, err);
    if (!rc) {
        rc = sdfed_idx_dataset(images, images_size, labels, labels_size, SDFED_FMNIST_CLASSES, out, err);
        if (rc) sdfed_fail_context(err, rc, "fashion-mnist %s (%s/%s-*)", prefix, dir, prefix);
    }
    if (rc) {
        free(images);
        free(labels);
        return rc;
    }
    out->owned_images = images;
    out->owned_labels = labels;
    out->class_names = native_fmnist_class_names;
    return SDFED_OK;
}
