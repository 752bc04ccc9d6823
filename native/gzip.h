/* Reading gzip files whole (native builds only: libdeflate), with a bound on
 * what they may uncompress to. */
#ifndef SDFED_NATIVE_GZIP_H
#define SDFED_NATIVE_GZIP_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* The whole content of a gzip file (its members joined), or of a file that is
 * not gzip as it is, in a malloc'd buffer of *size bytes (at most max, a NUL
 * after them). */
int native_read_gz_file(const char *path, size_t max, uint8_t **data, size_t *size, sdfed_error *err);

#endif
