/* The real Fashion-MNIST through native/dataset_file.c and native/gzip.c:
 * both splits loaded and checked, a Dirichlet partition of them, and the
 * files' errors (missing, corrupt or truncated gzip, bad IDX, uncompressed
 * files read when no .gz exists); the gzip files written by zlib, the reader
 * being libdeflate, and a file of two gzip members.
 *   test_dataset_file FASHION_MNIST_DIR TMPDIR */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "data/idx.h"
#include "data/partition.h"
#include "idx_buffers.h"
#include "native/dataset_file.h"
#include "native/gzip.h"

static void write_gz(const char *path, const uint8_t *data, size_t n) {
    gzFile g = gzopen(path, "wb");
    gzwrite(g, data, (unsigned)n);
    gzclose(g);
}

/* both splits as they are on disk, and a Dirichlet partition of them */
static void test_fmnist(const char *dir) {
    sdfed_dataset train, test;
    sdfed_error err = {0};
    int rc = native_fmnist_load(dir, SDFED_FMNIST_TRAIN, &train, &err);
    CHECK(rc == SDFED_OK, "fashion-mnist train: %s", err.message);
    if (rc) return;
    rc = native_fmnist_load(dir, SDFED_FMNIST_TEST, &test, &err);
    CHECK(rc == SDFED_OK, "fashion-mnist test: %s", err.message);
    if (rc) {
        sdfed_dataset_free(&train);
        return;
    }
    CHECK(train.n == 60000 && test.n == 10000 && train.rows == 28 && train.cols == 28 && test.rows == 28,
          "sizes %d, %d, %d x %d", train.n, test.n, train.rows, train.cols);
    CHECK(train.labels[0] == 9 && test.labels[0] == 9, "first labels %d, %d", train.labels[0], test.labels[0]);
    CHECK(train.owned_images && train.owned_labels && !strcmp(train.class_names[train.labels[0]], "Ankle boot"),
          "owned buffers and class names");
    int per_class[10] = {0}, balanced = 1;
    for (int i = 0; i < test.n; i++) per_class[test.labels[i]]++;
    for (int x = 0; x < 10; x++) balanced &= per_class[x] == 1000;
    CHECK(balanced, "1000 test images per class");

    /* a realistic partition: Dirichlet(0.5) over 10 clients with tests */
    sdfed_partition p;
    sdfed_samples tr = {.n = train.n, .id = NULL, .label = train.labels, .domain = NULL},
                  te = {test.n, NULL, test.labels, NULL};
    sdfed_partition_config cfg = {.method = SDFED_PARTITION_DIRICHLET,
                                  .n_clients = 10,
                                  .n_classes = 10,
                                  .alpha = 0.5,
                                  .min_train = 100,
                                  .test_per_client = 500,
                                  .seed = 2024};
    rc = sdfed_partition_make(&cfg, &tr, &te, &p, &err);
    long long sum = 0;
    for (int c = 0; !rc && c < 10; c++) sum += p.clients[c].n_train;
    CHECK(rc == SDFED_OK && sum == 60000 && p.clients[3].n_test > 0, "fashion-mnist dirichlet: %s", err.message);
    sdfed_partition_free(&p);
    sdfed_dataset_free(&test);
    sdfed_dataset_free(&train);
}

/* errors: a missing directory, an invalid split, corrupt files (written into TMP) */
static void test_file_errors(const char *dir, const char *tmp) {
    sdfed_dataset train, test;
    sdfed_error err = {0};
    int rc = native_fmnist_load("/nonexistent/fmnist", SDFED_FMNIST_TRAIN, &train, &err);
    CHECK(rc == SDFED_ERR_IO && strstr(err.message, "train-images-idx3-ubyte.gz"), "missing: %s", err.message);
    CHECK(native_fmnist_load(dir, 2, &train, &err) == SDFED_ERR_ARG, "split 2");
    char path[1024];
    /* truncated gzip: the first half of a valid stream */
    size_t lsz;
    uint8_t *labels = idx_labels(SDFED_IDX_MAGIC_LABELS, 1000, &lsz);
    snprintf(path, sizeof path, "%s/full.gz", tmp);
    write_gz(path, labels, lsz);
    uint8_t *data;
    size_t size;
    CHECK(native_read_gz_file(path, 1 << 20, &data, &size, &err) == SDFED_OK && size == lsz &&
              !memcmp(data, labels, size),
          "gzip round trip: %s", err.message);
    free(data);
    FILE *f = fopen(path, "rb");
    uint8_t gz[4096];
    size_t gz_n = fread(gz, 1, sizeof gz, f);
    fclose(f);
    /* two members one after the other read as one file (gzip -d joins them), and within the limit only whole */
    snprintf(path, sizeof path, "%s/twice.gz", tmp);
    f = fopen(path, "wb");
    fwrite(gz, 1, gz_n, f);
    fwrite(gz, 1, gz_n, f);
    fclose(f);
    CHECK(native_read_gz_file(path, 1 << 20, &data, &size, &err) == SDFED_OK && size == 2 * lsz &&
              !memcmp(data, labels, lsz) && !memcmp(data + lsz, labels, lsz),
          "two members: %s", err.message);
    free(data);
    CHECK(native_read_gz_file(path, 2 * lsz - 1, &data, &size, &err) == SDFED_ERR_FORMAT &&
              strstr(err.message, "limit"),
          "two members over the limit: %s", err.message);
    snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte.gz", tmp);
    f = fopen(path, "wb");
    fwrite(gz, 1, gz_n / 2, f);
    fclose(f);
    rc = native_read_gz_file(path, 1 << 20, &data, &size, &err);
    CHECK(rc == SDFED_ERR_FORMAT && strstr(err.message, "corrupt gzip"), "truncated gzip: %s", err.message);
    gz[gz_n / 2] ^= 0xff;
    gz[gz_n / 2 + 1] ^= 0x5a; /* damaged in the middle */
    f = fopen(path, "wb");
    fwrite(gz, 1, gz_n, f);
    fclose(f);
    rc = native_read_gz_file(path, 1 << 20, &data, &size, &err);
    CHECK(rc == SDFED_ERR_FORMAT && strstr(err.message, "corrupt gzip"), "damaged gzip: %s", err.message);
    snprintf(path, sizeof path, "%s/full.gz", tmp);
    CHECK(native_read_gz_file(path, 100, &data, &size, &err) == SDFED_ERR_FORMAT && strstr(err.message, "limit"),
          "size limit: %s", err.message);
    /* valid gzip, bad IDX: the split's files with 3 images and 2 labels */
    size_t isz;
    uint8_t *im = idx_images(SDFED_IDX_MAGIC_IMAGES, 3, 28, 28, &isz);
    snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte.gz", tmp);
    write_gz(path, im, isz);
    snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte.gz", tmp);
    put32(labels + 4, 2);
    write_gz(path, labels, 10);
    rc = native_fmnist_load(tmp, SDFED_FMNIST_TEST, &test, &err);
    CHECK(rc == SDFED_ERR_FORMAT && strstr(err.message, "fashion-mnist t10k") &&
              strstr(err.message, "3 images but 2 labels"),
          "bad idx in gzip: %s", err.message);
    /* uncompressed files are read when no .gz exists */
    remove(path);
    snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte", tmp);
    put32(labels + 4, 3);
    f = fopen(path, "wb");
    fwrite(labels, 1, 11, f);
    fclose(f);
    rc = native_fmnist_load(tmp, SDFED_FMNIST_TEST, &test, &err);
    CHECK(rc == SDFED_OK && test.n == 3 && test.labels[2] == 6, "uncompressed labels: %s", err.message);
    sdfed_dataset_free(&test);
    remove(path);
    free(im);
    free(labels);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_dataset_file FASHION_MNIST_DIR TMPDIR\n");
        return 2;
    }
    if (check_case("fmnist")) test_fmnist(argv[1]);
    if (check_case("file_errors")) test_file_errors(argv[1], argv[2]);
    return check_report("test_dataset_file");
}
