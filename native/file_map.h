/* Whole files as read-only memory: mmap natively (no copy of tensor data),
 * a heap copy in the wasm builds. */
#ifndef SDFED_NATIVE_FILE_MAP_H
#define SDFED_NATIVE_FILE_MAP_H

#include <stddef.h>

#include "base/status.h"

typedef struct native_file_map {
    const unsigned char *data;
    size_t size;
    int mapped; /* 1: munmap on close, 0: free */
} native_file_map;

int native_file_map_open(native_file_map *f, const char *path, sdfed_error *err);
void native_file_map_close(native_file_map *f);

#endif
