/* GGUF writer: metadata is encoded as it is added; tensors are referenced
 * and streamed to the sink at write time, each on an aligned offset. */
#include "format/gguf.h"

#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"

void sdfed_gguf_writer_init(sdfed_gguf_writer *w) {
    memset(w, 0, sizeof *w);
    sdfed_gguf_writer_add_u32(w, "general.alignment", SDFED_GGUF_DEFAULT_ALIGNMENT);
}

void sdfed_gguf_writer_free(sdfed_gguf_writer *w) {
    for (uint64_t i = 0; i < w->n_tensors; i++) free(w->tensors[i].name);
    free(w->tensors);
    sdfed_buffer_free(&w->kv_bytes);
    memset(w, 0, sizeof *w);
}

static void put(sdfed_gguf_writer *w, const void *data, size_t n) {
    sdfed_sink s = sdfed_buffer_sink(&w->kv_bytes);
    if (s.write(s.ctx, data, n)) w->failed = 1;
}

static void put_u32(sdfed_gguf_writer *w, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(w, b, 4);
}

static void put_u64(sdfed_gguf_writer *w, uint64_t v) {
    put_u32(w, (uint32_t)v);
    put_u32(w, (uint32_t)(v >> 32));
}

static void put_str(sdfed_gguf_writer *w, const char *s, size_t n) {
    put_u64(w, n);
    put(w, s, n);
}

static void put_key(sdfed_gguf_writer *w, const char *key, uint32_t type) {
    put_str(w, key, strlen(key));
    put_u32(w, type);
    w->n_kv++;
}

void sdfed_gguf_writer_add_u32(sdfed_gguf_writer *w, const char *key, uint32_t v) {
    put_key(w, key, SDFED_GGUF_UINT32);
    put_u32(w, v);
}

void sdfed_gguf_writer_add_i32(sdfed_gguf_writer *w, const char *key, int32_t v) {
    put_key(w, key, SDFED_GGUF_INT32);
    put_u32(w, (uint32_t)v);
}

void sdfed_gguf_writer_add_f32(sdfed_gguf_writer *w, const char *key, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    put_key(w, key, SDFED_GGUF_FLOAT32);
    put_u32(w, u);
}

void sdfed_gguf_writer_add_bool(sdfed_gguf_writer *w, const char *key, int v) {
    uint8_t b = v != 0;
    put_key(w, key, SDFED_GGUF_BOOL);
    put(w, &b, 1);
}

void sdfed_gguf_writer_add_str(sdfed_gguf_writer *w, const char *key, const char *v) {
    put_key(w, key, SDFED_GGUF_STRING);
    put_str(w, v, strlen(v));
}

void sdfed_gguf_writer_add_f32_array(sdfed_gguf_writer *w, const char *key, const float *v, uint64_t n) {
    put_key(w, key, SDFED_GGUF_ARRAY);
    put_u32(w, SDFED_GGUF_FLOAT32);
    put_u64(w, n);
    for (uint64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        put_u32(w, u);
    }
}

void sdfed_gguf_writer_add_str_array(sdfed_gguf_writer *w, const char *key, const char *const *v, const size_t *lens,
                                     uint64_t n) {
    put_key(w, key, SDFED_GGUF_ARRAY);
    put_u32(w, SDFED_GGUF_STRING);
    put_u64(w, n);
    for (uint64_t i = 0; i < n; i++) put_str(w, v[i], lens ? lens[i] : strlen(v[i]));
}

void sdfed_gguf_writer_add_tensor(sdfed_gguf_writer *w, const char *name, int type, int n_dims, const uint64_t *ne,
                                  const void *data) {
    if (w->n_tensors == w->cap_tensors) {
        uint64_t cap = w->cap_tensors ? 2 * w->cap_tensors : 64;
        sdfed_gguf_writer_tensor *t = realloc(w->tensors, cap * sizeof *t);
        if (!t) {
            w->failed = 1;
            return;
        }
        w->tensors = t;
        w->cap_tensors = cap;
    }
    sdfed_gguf_writer_tensor *t = &w->tensors[w->n_tensors];
    memset(t, 0, sizeof *t);
    size_t len = strlen(name);
    t->name = malloc(len + 1);
    if (!t->name) {
        w->failed = 1;
        return;
    }
    memcpy(t->name, name, len + 1);
    t->type = type;
    t->n_dims = n_dims;
    uint64_t rows = 1;
    for (int d = 0; d < SDFED_GGUF_MAX_DIMS; d++) t->ne[d] = d < n_dims ? ne[d] : 1;
    for (int d = 1; d < n_dims; d++) rows *= ne[d];
    t->data = data;
    t->nbytes = sdfed_type_row_bytes(type, ne[0]) * (size_t)rows;
    w->n_tensors++;
}

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

static int emit(sdfed_sink *sink, const void *data, size_t n, sdfed_error *err) {
    if (n && sink->write(sink->ctx, data, n)) return sdfed_fail(err, SDFED_ERR_IO, "gguf: writing %zu bytes failed", n);
    return SDFED_OK;
}

static int emit_padding(sdfed_sink *sink, uint64_t n, sdfed_error *err) {
    static const uint8_t zeros[SDFED_GGUF_DEFAULT_ALIGNMENT];
    return emit(sink, zeros, (size_t)n, err);
}

int sdfed_gguf_writer_write(sdfed_gguf_writer *w, sdfed_sink *sink, sdfed_error *err) {
    if (w->failed) return sdfed_fail(err, SDFED_ERR_NOMEM, "gguf: out of memory while building the file");
    for (uint64_t i = 0; i < w->n_tensors; i++) {
        const sdfed_gguf_writer_tensor *t = &w->tensors[i];
        if (!sdfed_type_name(t->type) || t->n_dims < 1 || t->n_dims > SDFED_GGUF_MAX_DIMS ||
            t->ne[0] % (uint64_t)sdfed_type_block_size(t->type) != 0)
            return sdfed_fail(err, SDFED_ERR_ARG, "gguf: tensor '%s' has an invalid type or shape", t->name);
    }
    /* the header and tables go through a second buffer so that the tensor
     * table (which needs the offsets) is encoded in one place */
    sdfed_gguf_writer head = {0};
    put(&head, "GGUF", 4);
    put_u32(&head, 3);
    put_u64(&head, w->n_tensors);
    put_u64(&head, w->n_kv);
    put(&head, w->kv_bytes.data, w->kv_bytes.size);
    uint64_t offset = 0;
    for (uint64_t i = 0; i < w->n_tensors; i++) {
        const sdfed_gguf_writer_tensor *t = &w->tensors[i];
        put_str(&head, t->name, strlen(t->name));
        put_u32(&head, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++) put_u64(&head, t->ne[d]);
        put_u32(&head, (uint32_t)t->type);
        put_u64(&head, offset);
        offset = align_up(offset + t->nbytes, SDFED_GGUF_DEFAULT_ALIGNMENT);
    }
    int rc = head.failed ? sdfed_fail(err, SDFED_ERR_NOMEM, "gguf: out of memory while building the header") : SDFED_OK;
    if (rc == SDFED_OK) rc = emit(sink, head.kv_bytes.data, head.kv_bytes.size, err);
    uint64_t pos = head.kv_bytes.size;
    sdfed_buffer_free(&head.kv_bytes);
    if (rc == SDFED_OK) rc = emit_padding(sink, align_up(pos, SDFED_GGUF_DEFAULT_ALIGNMENT) - pos, err);
    for (uint64_t i = 0; i < w->n_tensors && rc == SDFED_OK; i++) {
        const sdfed_gguf_writer_tensor *t = &w->tensors[i];
        rc = emit(sink, t->data, t->nbytes, err);
        if (rc == SDFED_OK && i + 1 < w->n_tensors)
            rc = emit_padding(sink, align_up(t->nbytes, SDFED_GGUF_DEFAULT_ALIGNMENT) - t->nbytes, err);
    }
    return rc;
}
