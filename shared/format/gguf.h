/* GGUF (version 3) model files: a self-contained reader and writer.
 *
 * Layout: "GGUF", version, tensor count, metadata count; the metadata
 * key/values; the tensor table (name, dims, type, offset); padding to the
 * alignment (32 unless general.alignment says otherwise); the tensor data,
 * each tensor starting on an aligned offset. Everything little-endian.
 *
 * The reader works on a caller-owned memory buffer (a mapped file natively,
 * an ArrayBuffer in the browser) and never copies tensor data: tensors and
 * strings point into the buffer, which must outlive the sdfed_gguf. Every
 * length and offset read from the buffer is checked before it is used. */
#ifndef SDFED_GGUF_H
#define SDFED_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "base/io.h"
#include "base/status.h"

enum {
    SDFED_GGUF_UINT8 = 0,
    SDFED_GGUF_INT8 = 1,
    SDFED_GGUF_UINT16 = 2,
    SDFED_GGUF_INT16 = 3,
    SDFED_GGUF_UINT32 = 4,
    SDFED_GGUF_INT32 = 5,
    SDFED_GGUF_FLOAT32 = 6,
    SDFED_GGUF_BOOL = 7,
    SDFED_GGUF_STRING = 8,
    SDFED_GGUF_ARRAY = 9,
    SDFED_GGUF_UINT64 = 10,
    SDFED_GGUF_INT64 = 11,
    SDFED_GGUF_FLOAT64 = 12,
};

#define SDFED_GGUF_MAX_DIMS 4
#define SDFED_GGUF_DEFAULT_ALIGNMENT 32

/* A length-delimited string inside the file (not NUL-terminated). */
typedef struct sdfed_str {
    const char *ptr;
    size_t len;
} sdfed_str;

typedef struct sdfed_gguf_kv {
    sdfed_str key;
    uint32_t type;        /* SDFED_GGUF_* */
    uint32_t elem_type;   /* arrays: element type */
    uint64_t count;       /* arrays: element count */
    const uint8_t *value; /* the encoded value (arrays: the first element) */
} sdfed_gguf_kv;

typedef struct sdfed_gguf_tensor {
    sdfed_str name;
    int type; /* SDFED_TYPE_* */
    int n_dims;
    uint64_t ne[SDFED_GGUF_MAX_DIMS]; /* ne[0] is the innermost (row) length */
    uint64_t n_elements;
    const void *data;
    size_t nbytes;
} sdfed_gguf_tensor;

typedef struct sdfed_gguf {
    const uint8_t *data;
    size_t size;
    uint32_t version;
    uint32_t alignment;
    uint64_t n_kv, n_tensors;
    sdfed_gguf_kv *kv;
    sdfed_gguf_tensor *tensors;
} sdfed_gguf;

/* Parses and validates the whole header of a GGUF file held in memory. */
int sdfed_gguf_open(sdfed_gguf *g, const void *data, size_t size, sdfed_error *err);
void sdfed_gguf_close(sdfed_gguf *g);

const sdfed_gguf_kv *sdfed_gguf_find(const sdfed_gguf *g, const char *key);
const sdfed_gguf_tensor *sdfed_gguf_find_tensor(const sdfed_gguf *g, const char *name);

/* Typed getters: SDFED_ERR_NOT_FOUND if the key is missing, SDFED_ERR_FORMAT
 * if its type does not fit; the message names the key. Integer getters take
 * any integer type whose value fits. */
int sdfed_gguf_get_u32(const sdfed_gguf *g, const char *key, uint32_t *out, sdfed_error *err);
int sdfed_gguf_get_f32(const sdfed_gguf *g, const char *key, float *out, sdfed_error *err);
int sdfed_gguf_get_str(const sdfed_gguf *g, const char *key, sdfed_str *out, sdfed_error *err);
int sdfed_gguf_get_array(const sdfed_gguf *g, const char *key, uint32_t elem_type, const sdfed_gguf_kv **out,
                         sdfed_error *err);

/* Element access for validated arrays. */
float sdfed_gguf_array_f32(const sdfed_gguf_kv *kv, uint64_t i);
int32_t sdfed_gguf_array_i32(const sdfed_gguf_kv *kv, uint64_t i);

/* Walks an array of strings in order. */
typedef struct sdfed_gguf_str_iter {
    const uint8_t *p;
    uint64_t left;
} sdfed_gguf_str_iter;

sdfed_gguf_str_iter sdfed_gguf_str_iter_begin(const sdfed_gguf_kv *kv);
int sdfed_gguf_str_iter_next(sdfed_gguf_str_iter *it, sdfed_str *out); /* 1 while there is one */

int sdfed_str_eq(sdfed_str s, const char *cstr);

/* Writer: collect metadata and tensors, then stream the file into a sink.
 * Tensor data is not copied; it must stay valid until the write. */
typedef struct sdfed_gguf_writer_tensor {
    char *name;
    int type;
    int n_dims;
    uint64_t ne[SDFED_GGUF_MAX_DIMS];
    const void *data;
    size_t nbytes;
} sdfed_gguf_writer_tensor;

typedef struct sdfed_gguf_writer {
    sdfed_buffer kv_bytes; /* encoded key/values, in order */
    uint64_t n_kv;
    sdfed_gguf_writer_tensor *tensors;
    uint64_t n_tensors, cap_tensors;
    int failed; /* an add_* ran out of memory; reported by write */
} sdfed_gguf_writer;

void sdfed_gguf_writer_init(sdfed_gguf_writer *w);
void sdfed_gguf_writer_free(sdfed_gguf_writer *w);
void sdfed_gguf_writer_add_u32(sdfed_gguf_writer *w, const char *key, uint32_t v);
void sdfed_gguf_writer_add_i32(sdfed_gguf_writer *w, const char *key, int32_t v);
void sdfed_gguf_writer_add_f32(sdfed_gguf_writer *w, const char *key, float v);
void sdfed_gguf_writer_add_bool(sdfed_gguf_writer *w, const char *key, int v);
void sdfed_gguf_writer_add_str(sdfed_gguf_writer *w, const char *key, const char *v);
void sdfed_gguf_writer_add_f32_array(sdfed_gguf_writer *w, const char *key, const float *v, uint64_t n);
/* Array of n strings; lens may be NULL for NUL-terminated strings. */
void sdfed_gguf_writer_add_str_array(sdfed_gguf_writer *w, const char *key, const char *const *v, const size_t *lens,
                                     uint64_t n);
void sdfed_gguf_writer_add_tensor(sdfed_gguf_writer *w, const char *name, int type, int n_dims, const uint64_t *ne,
                                  const void *data);
int sdfed_gguf_writer_write(sdfed_gguf_writer *w, sdfed_sink *sink, sdfed_error *err);

#endif
