/* Whole files as read-only memory: mmap natively (no copy of tensor data),
 * a heap copy in the wasm builds. */
#ifndef SDFED_NATIVE_FILE_MAP_H
#define SDFED_NATIVE_FILE_MAP_H

#include <stddef.h>

#include "base/status.h"

typedef struct file_map {
    const unsigned char *data;
    size_t size;
    int mapped; /* 1: munmap on close, 0: free */
} file_map;

int file_map_open(file_map *f, const char *path, sdfed_error *err);
void file_map_close(file_map *f);

#endif
