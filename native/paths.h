/* Paths on the host: finding the project's files from anywhere, making
 * folders, writing a file whole or not at all. */
#ifndef SDFED_NATIVE_PATHS_H
#define SDFED_NATIVE_PATHS_H

#include <stddef.h>
#include <stdio.h>

#include "base/status.h"

/* A relative path that does not exist from the current directory is looked
 * up from the project folder: the nearest folder above the executable's
 * where it exists (a few levels up), so `build/sdfed` and
 * `build/targets/clang/sdfed` find models/ and tasks/ from anywhere. */
const char *native_resolve_path(const char *path, char *buf, size_t cap);

/* path as text, in a new string (free it; NULL when out of memory): each
 * byte that is not part of well-formed UTF-8 written \xNN (CP1252's 'é',
 * 0xE9, as \xe9), so that a name from a disk in another encoding can be
 * shown and put in JSON; path itself when it is UTF-8. */
char *native_path_text(const char *path);

/* mkdir -p path */
int native_make_dirs(const char *path, sdfed_error *err);

/* A file written whole or not at all: written to a temporary file of its own
 * in the same folder (PATH.XXXXXXXXXXXXXXXX.tmp, created new, so two writers
 * of one path never share it), then renamed over path. A reader sees the old
 * file or the whole new one, never part of one. Where path is a symbolic
 * link to a file, the file it names is the one replaced (the link stays);
 * where path is no regular file (a device such as /dev/null, a pipe,
 * /dev/stdout's terminal), it is written as it is, in place: a rename
 * would have put a regular file in its place. */
typedef struct {
    FILE *file;           /* write here */
    char temporary[4096]; /* empty when path is written in place */
    char target[4096];    /* what the temporary file is renamed over */
} native_whole_file;

int native_whole_file_open(native_whole_file *w, const char *path, sdfed_error *err);

/* Closes w's file; when complete, renames it over path, otherwise (or when
 * closing or renaming fails) removes it. Fails only when complete. */
int native_whole_file_close(native_whole_file *w, const char *path, int complete, sdfed_error *err);

/* text written to path whole or not at all (native_whole_file) */
int native_write_file(const char *path, const char *text, sdfed_error *err);

#endif
