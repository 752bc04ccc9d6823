/* Reading a whole file in the C tests: the bytes plus a terminating NUL (so
 * text files are strings), or NULL if the file cannot be read. */
#ifndef SDFED_TESTS_READ_FILE_H
#define SDFED_TESTS_READ_FILE_H

#include <stdio.h>
#include <stdlib.h>

static inline unsigned char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL) {
        if (fread(buf, 1, (size_t)n, f) == (size_t)n) {
            buf[n] = '\0';
            *size = (size_t)n;
        } else {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

#endif
