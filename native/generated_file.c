/* Files written from the core's tables (see generated_file.h). */
#include "native/generated_file.h"

#include <string.h>

#include "native/file_map.h"
#include "native/paths.h"

int native_generated_file(const char *path, const char *text, int write, int *same, sdfed_error *err) {
    size_t n = strlen(text);
    native_file_map f;
    sdfed_error unread;
    *same = 0;
    if (native_file_map_open(&f, path, &unread) == SDFED_OK) {
        *same = f.size == n && (n == 0 || memcmp(f.data, text, n) == 0);
        native_file_map_close(&f);
    }
    return write && !*same ? native_write_file(path, text, err) : SDFED_OK;
}
