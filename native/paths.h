/* Paths on the host: finding the project's files from anywhere, making
 * folders, writing a file whole or not at all. */
#ifndef SDFED_NATIVE_PATHS_H
#define SDFED_NATIVE_PATHS_H

#include <stddef.h>

#include "base/status.h"

/* A relative path that does not exist from the current directory is looked
 * up from the project folder: the nearest folder above the executable's
 * where it exists (a few levels up), so `build/sdfed` and
 * `build/targets/clang/sdfed` find models/ and tasks/ from anywhere. */
const char *native_resolve_path(const char *path, char *buf, size_t cap);

/* mkdir -p path */
int native_make_dirs(const char *path, sdfed_error *err);

/* Writes text to path through a temporary file in the same folder and a
 * rename: a reader sees no file or the whole text, never part of it. */
int native_write_file(const char *path, const char *text, sdfed_error *err);

#endif
