/* Whole gzip files into memory through libdeflate, bounded (see gzip.h). */
#include "native/gzip.h"

#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>

#include "native/file_map.h"

static int is_gzip(const unsigned char *p, size_t n) { return n >= 2 && p[0] == 0x1f && p[1] == 0x8b; }

/* The gzip members of in, one after another (as gzip -d joins them), into a
 * buffer that starts at the last member's recorded size and doubles, up to
 * max; bytes after a member that start no other are ignored, as zlib does. */
static int inflate_members(const char *path, const unsigned char *in, size_t in_size, size_t max, uint8_t **data,
                           size_t *size, sdfed_error *err) {
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    if (!d) return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
    size_t hint = (size_t)in[in_size - 4] | (size_t)in[in_size - 3] << 8 | (size_t)in[in_size - 2] << 16 |
                  (size_t)in[in_size - 1] << 24; /* the last member's size, modulo 2^32 */
    size_t cap = hint < max ? hint : max, n = 0, pos = 0;
    if (!cap) cap = 1; /* room to learn that it needs more */
    uint8_t *buf = malloc(cap + 1);
    int rc = buf ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
    while (!rc && pos < in_size && is_gzip(in + pos, in_size - pos)) {
        size_t used_in = 0, used_out = 0;
        enum libdeflate_result r =
            libdeflate_gzip_decompress_ex(d, in + pos, in_size - pos, buf + n, cap - n, &used_in, &used_out);
        if (r == LIBDEFLATE_SUCCESS) {
            pos += used_in;
            n += used_out;
        } else if (r != LIBDEFLATE_INSUFFICIENT_SPACE) {
            rc = sdfed_fail(err, SDFED_ERR_FORMAT,
                            "%s: corrupt gzip data (the member at byte %zu is damaged or cut short)", path, pos);
        } else if (cap == max) {
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "%s: uncompresses to more than the limit of %zu bytes", path, max);
        } else { /* the member again, into twice the room */
            size_t grown = cap > max / 2 ? max : cap * 2;
            uint8_t *p = realloc(buf, grown + 1);
            if (p) {
                buf = p;
                cap = grown;
            } else {
                rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory at %zu bytes", path, grown);
            }
        }
    }
    libdeflate_free_decompressor(d);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[n] = 0;
    *data = buf;
    *size = n;
    return SDFED_OK;
}

int native_read_gz_file(const char *path, size_t max, uint8_t **data, size_t *size, sdfed_error *err) {
    *data = NULL;
    *size = 0;
    native_file_map in;
    int rc = native_file_map_open(&in, path, err);
    if (rc) return rc;
    if (is_gzip(in.data, in.size)) {
        rc = in.size >= 18 /* 10 bytes of header, 8 of trailer */
                 ? inflate_members(path, in.data, in.size, max, data, size, err)
                 : sdfed_fail(err, SDFED_ERR_FORMAT, "%s: corrupt gzip data (%zu bytes, shorter than any member)", path,
                              in.size);
    } else if (in.size > max) {
        rc = sdfed_fail(err, SDFED_ERR_FORMAT, "%s: %zu bytes, more than the limit of %zu", path, in.size, max);
    } else if (!(*data = malloc(in.size + 1))) {
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
    } else { /* not gzip: the file as it is */
        memcpy(*data, in.data, in.size);
        (*data)[in.size] = 0;
        *size = in.size;
    }
    native_file_map_close(&in);
    return rc;
}
