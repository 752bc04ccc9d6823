/* Whole gzip files into memory through zlib, bounded (see gzip.h). */
#include "native/gzip.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

int native_read_gz_file(const char *path, size_t max, uint8_t **data, size_t *size, sdfed_error *err) {
    *data = NULL;
    *size = 0;
    errno = 0;
    gzFile in = gzopen(path, "rb");
    if (!in)
        return sdfed_fail(err, errno ? SDFED_ERR_IO : SDFED_ERR_NOMEM, "%s: %s", path,
                          errno ? strerror(errno) : "cannot open (out of memory)");
    size_t cap = max < ((size_t)1 << 20) ? max : (size_t)1 << 20, n = 0;
    uint8_t *buf = malloc(cap + 1);
    int rc = buf ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
    while (!rc) {
        if (n == cap) {
            if (cap == max) { /* full: only the end of the stream may follow */
                uint8_t probe;
                if (gzread(in, &probe, 1) > 0)
                    rc = sdfed_fail(err, SDFED_ERR_FORMAT, "%s: uncompresses to more than the limit of %zu bytes", path,
                                    max);
                break;
            }
            size_t grown = cap > max / 2 ? max : cap * 2;
            uint8_t *p = realloc(buf, grown + 1);
            if (!p) {
                rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory at %zu bytes", path, n);
                break;
            }
            buf = p;
            cap = grown;
        }
        size_t want = cap - n > ((size_t)1 << 30) ? (size_t)1 << 30 : cap - n;
        int got = gzread(in, buf + n, (unsigned)want);
        if (got <= 0) break;
        n += (size_t)got;
    }
    /* a truncated or damaged stream ends reading early and leaves an error */
    int zerr = Z_OK;
    const char *zmsg = gzerror(in, &zerr);
    if (!rc && zerr != Z_OK)
        rc = sdfed_fail(err, zerr == Z_ERRNO ? SDFED_ERR_IO : SDFED_ERR_FORMAT, "%s: corrupt gzip data (%s)", path,
                        zerr == Z_ERRNO ? strerror(errno) : zmsg);
    gzclose(in);
    if (rc) {
        free(buf);
        return rc;
    }
    *data = buf;
    *size = n;
    return SDFED_OK;
}
