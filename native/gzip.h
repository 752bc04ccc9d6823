/* Reading gzip files whole (native builds only: zlib), with a bound on what
 * they may uncompress to. */
#ifndef SDFED_NATIVE_GZIP_H
#define SDFED_NATIVE_GZIP_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* The whole content of a gzip file (or a plain one: zlib passes it through)
 * in a malloc'd buffer of *size bytes, at most max. */
int native_read_gz_file(const char *path, size_t max, uint8_t **data, size_t *size, sdfed_error *err);

#endif
