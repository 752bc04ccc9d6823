/* The growable memory sink. */
#include "base/io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int buffer_write(void *ctx, const void *data, size_t n) {
    sdfed_buffer *buf = ctx;
    if (n > ((size_t)-1) - buf->size) return 1;
    if (buf->size + n > buf->capacity) {
        size_t cap = buf->capacity ? buf->capacity : 4096;
        while (cap < buf->size + n) {
            if (cap > ((size_t)-1) / 2) return 1;
            cap *= 2;
        }
        unsigned char *p = realloc(buf->data, cap);
        if (!p) return 1;
        buf->data = p;
        buf->capacity = cap;
    }
    if (n) memcpy(buf->data + buf->size, data, n);
    buf->size += n;
    return 0;
}

sdfed_sink sdfed_buffer_sink(sdfed_buffer *buf) {
    sdfed_sink s = {.write = buffer_write, .ctx = buf};
    return s;
}

void sdfed_buffer_free(sdfed_buffer *buf) {
    free(buf->data);
    memset(buf, 0, sizeof *buf);
}

int sdfed_sink_printf(sdfed_sink sink, const char *format, ...) {
    char small[512], *text = small;
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(small, sizeof small, format, ap);
    va_end(ap);
    if (n < 0) return 1;
    if ((size_t)n >= sizeof small) {
        if (!(text = malloc((size_t)n + 1))) return 1;
        va_start(ap, format);
        vsnprintf(text, (size_t)n + 1, format, ap);
        va_end(ap);
    }
    int rc = sink.write(sink.ctx, text, (size_t)n);
    if (text != small) free(text);
    return rc;
}
