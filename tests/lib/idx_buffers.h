/* IDX files as bytes, for the tests of the IDX reader (test_partition) and of
 * the Fashion-MNIST files on disk (test_dataset_file). */
#ifndef SDFED_TESTS_IDX_BUFFERS_H
#define SDFED_TESTS_IDX_BUFFERS_H

#include <stdint.h>
#include <stdlib.h>

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* images (n, rows, cols) with pixel (i, r, c) = i*rows*cols + r*cols + c mod 256 */
static uint8_t *idx_images(uint32_t magic, int n, int rows, int cols, size_t *size) {
    *size = 16 + (size_t)n * rows * cols;
    uint8_t *b = malloc(*size);
    put32(b, magic), put32(b + 4, (uint32_t)n), put32(b + 8, (uint32_t)rows), put32(b + 12, (uint32_t)cols);
    for (size_t i = 0; i < (size_t)n * rows * cols; i++) b[16 + i] = (uint8_t)i;
    return b;
}

static uint8_t *idx_labels(uint32_t magic, int n, size_t *size) {
    *size = 8 + (size_t)n;
    uint8_t *b = malloc(*size);
    put32(b, magic), put32(b + 4, (uint32_t)n);
    for (int i = 0; i < n; i++) b[8 + i] = (uint8_t)((i * 3) % 10);
    return b;
}

#endif
