/* The one JSON writer (see json_writer.h). */
#include "base/json_writer.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

static void emit(sdfed_json_writer *w, const char *s, size_t n) {
    sdfed_sink sink = sdfed_buffer_sink(w->out);
    if (sink.write(sink.ctx, s, n)) w->failed = 1;
}

static void emit_str(sdfed_json_writer *w, const char *s) { emit(w, s, strlen(s)); }

/* s quoted and escaped; a byte that starts no well-formed UTF-8 sequence
 * (a name from disk in another encoding, a message cut inside a character)
 * is written as U+FFFD: the text stays UTF-8, which a browser's WebSocket
 * and every JSON reader demand, and the rest of it is still said. */
static void emit_quoted(sdfed_json_writer *w, const char *s) {
    size_t n = strlen(s), k;
    uint32_t cp;
    emit(w, "\"", 1);
    for (size_t i = 0; i < n; i += k) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        k = 1;
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            emit(w, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            emit(w, esc, 6);
        } else if (c < 0x80) {
            emit(w, s + i, 1);
        } else if ((k = sdfed_utf8_read((const unsigned char *)s + i, n - i, &cp)) > 0) {
            emit(w, s + i, k);
        } else {
            k = 1;
            emit(w, "\xef\xbf\xbd", 3); /* U+FFFD */
        }
    }
    emit(w, "\"", 1);
}

/* The separator before the next item of the innermost object or array,
 * and its key when it has one. */
static void key(sdfed_json_writer *w, const char *k) {
    assert(w->depth > 0);
    if (w->items[w->depth - 1]++) emit(w, ", ", 2);
    if (!k) return;
    emit_quoted(w, k);
    emit(w, ": ", 2);
}

static void open_level(sdfed_json_writer *w, char opener, char closer) {
    assert(w->depth < SDFED_JSON_WRITER_DEPTH);
    emit(w, &opener, 1);
    w->items[w->depth] = 0;
    w->closers[w->depth] = closer;
    w->depth++;
}

void sdfed_jw_begin(sdfed_json_writer *w, sdfed_buffer *out, const char *type) {
    w->out = out;
    w->depth = 0;
    w->failed = 0;
    open_level(w, '{', '}');
    if (type) sdfed_jw_string(w, "type", type);
}

void sdfed_jw_object(sdfed_json_writer *w, const char *k) {
    key(w, k);
    open_level(w, '{', '}');
}

void sdfed_jw_array(sdfed_json_writer *w, const char *k) {
    key(w, k);
    open_level(w, '[', ']');
}

void sdfed_jw_close(sdfed_json_writer *w) {
    assert(w->depth > 1); /* the outermost object is end's */
    w->depth--;
    emit(w, &w->closers[w->depth], 1);
}

void sdfed_jw_string(sdfed_json_writer *w, const char *k, const char *value) {
    key(w, k);
    emit_quoted(w, value);
}

void sdfed_jw_stringf(sdfed_json_writer *w, const char *k, const char *format, ...) {
    char small[256], *text = small;
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(small, sizeof small, format, ap);
    va_end(ap);
    if (n >= (int)sizeof small && (text = malloc((size_t)n + 1))) {
        va_start(ap, format);
        vsnprintf(text, (size_t)n + 1, format, ap);
        va_end(ap);
    }
    if (n < 0 || !text) {
        w->failed = 1;
        return;
    }
    sdfed_jw_string(w, k, text);
    if (text != small) free(text);
}

void sdfed_jw_int(sdfed_json_writer *w, const char *k, int64_t value) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)value);
    key(w, k);
    emit_str(w, buf);
}

void sdfed_jw_double(sdfed_json_writer *w, const char *k, double value) {
    char buf[40];
    snprintf(buf, sizeof buf, "%.9g", isfinite(value) ? value : 0.0);
    key(w, k);
    emit_str(w, buf);
}

void sdfed_jw_fixed(sdfed_json_writer *w, const char *k, double value, int decimals) {
    char buf[352]; /* DBL_MAX has 309 digits before the point */
    assert(decimals >= 0 && decimals <= 12);
    snprintf(buf, sizeof buf, "%.*f", decimals, isfinite(value) ? value : 0.0);
    key(w, k);
    emit_str(w, buf);
}

void sdfed_jw_bool(sdfed_json_writer *w, const char *k, int value) {
    key(w, k);
    emit_str(w, value ? "true" : "false");
}

void sdfed_jw_null(sdfed_json_writer *w, const char *k) {
    key(w, k);
    emit(w, "null", 4);
}

void sdfed_jw_base64(sdfed_json_writer *w, const char *k, const void *data, size_t n) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *bytes = data;
    key(w, k);
    emit(w, "\"", 1);
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)bytes[i] << 16;
        if (i + 1 < n) v |= (uint32_t)bytes[i + 1] << 8;
        if (i + 2 < n) v |= bytes[i + 2];
        char quad[4];
        for (int j = 0; j < 4; j++) quad[j] = alphabet[(v >> (18 - 6 * j)) & 63];
        if (i + 1 >= n) quad[2] = '=';
        if (i + 2 >= n) quad[3] = '=';
        emit(w, quad, 4);
    }
    emit(w, "\"", 1);
}

void sdfed_jw_raw(sdfed_json_writer *w, const char *k, const char *json, size_t len) {
    if (k || len) key(w, k); /* members spliced in: nothing to separate when there are none */
    emit(w, json, len);
}

void sdfed_jw_floats(sdfed_json_writer *w, const char *k, const float *values, size_t n) {
    key(w, k);
    emit(w, "[", 1);
    for (size_t i = 0; i < n; i++) {
        char buf[24];
        /* 9 significant digits round-trip every float */
        int len = snprintf(buf, sizeof buf, "%s%.9g", i ? "," : "", values[i]);
        emit(w, buf, (size_t)len);
    }
    emit(w, "]", 1);
}

void sdfed_jw_shape(sdfed_json_writer *w, const char *k, int n_dims, const uint32_t *shape) {
    sdfed_jw_array(w, k);
    for (int d = 0; d < n_dims; d++) sdfed_jw_int(w, NULL, shape[d]);
    sdfed_jw_close(w);
}

void sdfed_jw_strings(sdfed_json_writer *w, const char *k, const char *const *values, int n) {
    sdfed_jw_array(w, k);
    for (int i = 0; i < n; i++) sdfed_jw_string(w, NULL, values[i]);
    sdfed_jw_close(w);
}

int sdfed_jw_end(sdfed_json_writer *w, sdfed_error *err) {
    assert(w->depth == 1); /* every object and array opened in it closed */
    w->depth = 0;
    emit(w, "}", 1);
    return w->failed ? sdfed_fail(err, SDFED_ERR_NOMEM, "json writer: out of memory") : SDFED_OK;
}
