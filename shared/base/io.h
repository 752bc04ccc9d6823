/* The core's only way to write bytes out: a sink the caller implements
 * (a FILE* natively, a growing buffer in the browser). Reading is done from
 * memory buffers the caller owns (a mapped file natively). */
#ifndef SDFED_IO_H
#define SDFED_IO_H

#include <stdarg.h>
#include <stddef.h>

typedef struct sdfed_sink {
    /* Writes n bytes; returns 0 on success, non-zero on failure. */
    int (*write)(void *ctx, const void *data, size_t n);
    void *ctx;
} sdfed_sink;

/* A sink that appends to a heap buffer (for tests and the browser). */
typedef struct sdfed_buffer {
    unsigned char *data;
    size_t size, capacity;
} sdfed_buffer;

sdfed_sink sdfed_buffer_sink(sdfed_buffer *buf);

/* Formatted text into a sink, of any length; 0 on success. */
int sdfed_sink_printf(sdfed_sink sink, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void sdfed_buffer_free(sdfed_buffer *buf);

#endif
