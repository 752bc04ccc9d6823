/* Read-only file mapping: mmap natively, a heap copy in the wasm builds (see file_map.h). */
#include "native/file_map.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__wasm__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#if !defined(__wasm__)
int native_file_map_open(native_file_map *f, const char *path, sdfed_error *err) {
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return sdfed_fail(err, SDFED_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return sdfed_fail(err, SDFED_ERR_IO, "%s: not a regular file", path);
    }
    f->size = (size_t)st.st_size;
    if (f->size == 0) {
        close(fd);
        f->data = (const unsigned char *)"";
        return SDFED_OK;
    }
    void *p = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return sdfed_fail(err, SDFED_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
    f->data = p;
    f->mapped = 1;
    return SDFED_OK;
}

void native_file_map_close(native_file_map *f) {
    if (f->mapped) munmap((void *)f->data, f->size);
    memset(f, 0, sizeof *f);
}
#else
int native_file_map_open(native_file_map *f, const char *path, sdfed_error *err) {
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp) return sdfed_fail(err, SDFED_ERR_IO, "%s: %s", path, strerror(errno));
    unsigned char *buf = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (size == cap) {
            cap = cap ? 2 * cap : (1 << 20);
            unsigned char *p = realloc(buf, cap);
            if (!p) {
                free(buf);
                fclose(fp);
                return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
            }
            buf = p;
        }
        size_t got = fread(buf + size, 1, cap - size, fp);
        size += got;
        if (got == 0) break;
    }
    int failed = ferror(fp);
    fclose(fp);
    if (failed) {
        free(buf);
        return sdfed_fail(err, SDFED_ERR_IO, "%s: read error", path);
    }
    f->data = buf;
    f->size = size;
    return SDFED_OK;
}

void native_file_map_close(native_file_map *f) {
    free((void *)f->data);
    memset(f, 0, sizeof *f);
}
#endif
