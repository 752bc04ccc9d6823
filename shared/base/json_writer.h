/* The one JSON writer: an object built into a buffer member by member
 * (begin, members, end), objects and arrays nested in it (open, items,
 * close), in one layout: ", " between items, ": " after a key. A member
 * takes its key; an item of an array takes NULL. Memory running out is
 * remembered and reported by end, so a caller checks once. Its text is
 * UTF-8 whatever it is given: in a key or a string, a byte that starts no
 * well-formed UTF-8 sequence is written as U+FFFD (raw JSON is the
 * caller's, written as it is). */
#ifndef SDFED_JSON_WRITER_H
#define SDFED_JSON_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "base/io.h"
#include "base/status.h"

#define SDFED_JSON_WRITER_DEPTH 16

typedef struct sdfed_json_writer {
    sdfed_buffer *out;
    int depth;                             /* objects and arrays open */
    int items[SDFED_JSON_WRITER_DEPTH];    /* items written in each */
    char closers[SDFED_JSON_WRITER_DEPTH]; /* '}' or ']' for each */
    int failed;
} sdfed_json_writer;

/* Opens the outermost object; with type, its first member "type": TYPE
 * (a protocol message). */
void sdfed_jw_begin(sdfed_json_writer *w, sdfed_buffer *out, const char *type);
/* Opens an object or an array as the next member (key) or item (NULL). */
void sdfed_jw_object(sdfed_json_writer *w, const char *key);
void sdfed_jw_array(sdfed_json_writer *w, const char *key);
/* Closes the innermost object or array. */
void sdfed_jw_close(sdfed_json_writer *w);

void sdfed_jw_string(sdfed_json_writer *w, const char *key, const char *value);
/* A string formatted printf-style, of any length, escaped as any string */
void sdfed_jw_stringf(sdfed_json_writer *w, const char *key, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void sdfed_jw_int(sdfed_json_writer *w, const char *key, int64_t value);
/* 9 significant digits (every float round-trips); a value not finite as 0 */
void sdfed_jw_double(sdfed_json_writer *w, const char *key, double value);
/* decimals digits after the point ("%.*f"); a value not finite as 0 */
void sdfed_jw_fixed(sdfed_json_writer *w, const char *key, double value, int decimals);
void sdfed_jw_bool(sdfed_json_writer *w, const char *key, int value);
void sdfed_jw_null(sdfed_json_writer *w, const char *key);
/* bytes as a base64 string */
void sdfed_jw_base64(sdfed_json_writer *w, const char *key, const void *data, size_t n);
/* Raw JSON (an object or array already serialised); with key NULL in an
 * object, raw members ("a": 1, "b": 2) spliced into it. */
void sdfed_jw_raw(sdfed_json_writer *w, const char *key, const char *json, size_t len);
/* A tensor's values without spaces ([1,2.5]: they are many), its shape ([1, 512]) */
void sdfed_jw_floats(sdfed_json_writer *w, const char *key, const float *values, size_t n);
void sdfed_jw_shape(sdfed_json_writer *w, const char *key, int n_dims, const uint32_t *shape);
void sdfed_jw_strings(sdfed_json_writer *w, const char *key, const char *const *values, int n);
/* Closes the outermost object; returns SDFED_OK unless memory ran out. */
int sdfed_jw_end(sdfed_json_writer *w, sdfed_error *err);

#endif
