/* A file written from one of the core's tables (the page's error codes and
 * reconnection windows, a list in docs/): checked against the text the
 * table gives now, or rewritten with it. */
#ifndef SDFED_NATIVE_GENERATED_FILE_H
#define SDFED_NATIVE_GENERATED_FILE_H

#include "base/status.h"

/* *same: whether path holds text exactly (a file that cannot be read does
 * not); with write, a path that does not is rewritten whole. */
int native_generated_file(const char *path, const char *text, int write, int *same, sdfed_error *err);

#endif
