/* GGUF reader: validates a file held in memory and indexes its metadata and
 * tensors without copying them. Every count, length and offset that comes
 * from the file is bounds-checked before use; a bad file is an error with a
 * message saying what and where, never a crash. */
#include "format/gguf.h"

#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"

typedef struct cursor {
    const uint8_t *base;
    size_t size, pos;
    sdfed_error *err;
} cursor;

static int truncated(cursor *c, const char *what) {
    return sdfed_fail(c->err, SDFED_ERR_FORMAT, "gguf: file truncated while reading %s at byte %zu (file is %zu bytes)",
                      what, c->pos, c->size);
}

static int read_bytes(cursor *c, void *dst, size_t n, const char *what) {
    if (n > c->size - c->pos) return truncated(c, what);
    memcpy(dst, c->base + c->pos, n);
    c->pos += n;
    return SDFED_OK;
}

static int read_u32(cursor *c, uint32_t *v, const char *what) {
    uint8_t b[4] = {0};
    int rc = read_bytes(c, b, 4, what);
    if (rc) return rc;
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return SDFED_OK;
}

static int read_u64(cursor *c, uint64_t *v, const char *what) {
    uint32_t lo, hi;
    int rc = read_u32(c, &lo, what);
    if (rc == SDFED_OK) rc = read_u32(c, &hi, what);
    if (rc == SDFED_OK) *v = (uint64_t)hi << 32 | lo;
    return rc;
}

static int read_str(cursor *c, sdfed_str *s, const char *what) {
    uint64_t len;
    int rc = read_u64(c, &len, what);
    if (rc) return rc;
    if (len > c->size - c->pos) return truncated(c, what);
    s->ptr = (const char *)c->base + c->pos;
    s->len = (size_t)len;
    c->pos += (size_t)len;
    return SDFED_OK;
}

/* Size in bytes of one scalar value of a metadata type; 0 for strings,
 * arrays and unknown types. */
static size_t scalar_size(uint32_t type) {
    switch (type) {
    case SDFED_GGUF_UINT8:
    case SDFED_GGUF_INT8:
    case SDFED_GGUF_BOOL: return 1;
    case SDFED_GGUF_UINT16:
    case SDFED_GGUF_INT16: return 2;
    case SDFED_GGUF_UINT32:
    case SDFED_GGUF_INT32:
    case SDFED_GGUF_FLOAT32: return 4;
    case SDFED_GGUF_UINT64:
    case SDFED_GGUF_INT64:
    case SDFED_GGUF_FLOAT64: return 8;
    }
    return 0;
}

int sdfed_str_eq(sdfed_str s, const char *cstr) {
    size_t n = strlen(cstr);
    return s.len == n && memcmp(s.ptr, cstr, n) == 0;
}

static int str_same(sdfed_str a, sdfed_str b) { return a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0; }

/* Skips over one value of the given type (not an array), checking bounds. */
static int skip_value(cursor *c, uint32_t type, const char *what) {
    if (type == SDFED_GGUF_STRING) {
        sdfed_str s;
        return read_str(c, &s, what);
    }
    size_t n = scalar_size(type);
    if (n > c->size - c->pos) return truncated(c, what);
    c->pos += n;
    return SDFED_OK;
}

static int read_kv(cursor *c, sdfed_gguf_kv *kv, uint64_t index) {
    int rc = read_str(c, &kv->key, "a metadata key");
    if (rc) return rc;
    if (kv->key.len == 0 || kv->key.len > 65535)
        return sdfed_fail(c->err, SDFED_ERR_FORMAT, "gguf: metadata entry %llu has a key of length %zu",
                          (unsigned long long)index, kv->key.len);
    rc = read_u32(c, &kv->type, "a metadata type");
    if (rc) return rc;
    if (kv->type == SDFED_GGUF_ARRAY) {
        rc = read_u32(c, &kv->elem_type, "an array type");
        if (rc == SDFED_OK) rc = read_u64(c, &kv->count, "an array length");
        if (rc) return rc;
        if (kv->elem_type != SDFED_GGUF_STRING && scalar_size(kv->elem_type) == 0)
            return sdfed_fail(c->err, SDFED_ERR_FORMAT, "gguf: metadata '%.*s' is an array of unsupported type %u",
                              (int)kv->key.len, kv->key.ptr, kv->elem_type);
        kv->value = c->base + c->pos;
        if (kv->elem_type != SDFED_GGUF_STRING) {
            size_t n = scalar_size(kv->elem_type);
            if (kv->count > (c->size - c->pos) / n) return truncated(c, "an array");
            c->pos += (size_t)kv->count * n;
            return SDFED_OK;
        }
        /* each string takes at least its 8-byte length, which bounds the loop */
        if (kv->count > (c->size - c->pos) / 8) return truncated(c, "an array of strings");
        for (uint64_t i = 0; i < kv->count; i++) {
            rc = skip_value(c, SDFED_GGUF_STRING, "an array of strings");
            if (rc) return rc;
        }
        return SDFED_OK;
    }
    if (kv->type != SDFED_GGUF_STRING && scalar_size(kv->type) == 0)
        return sdfed_fail(c->err, SDFED_ERR_FORMAT, "gguf: metadata '%.*s' has unknown type %u", (int)kv->key.len,
                          kv->key.ptr, kv->type);
    kv->count = 1;
    kv->elem_type = kv->type;
    kv->value = c->base + c->pos;
    return skip_value(c, kv->type, "a metadata value");
}

static int read_tensor_info(cursor *c, sdfed_gguf_tensor *t, uint64_t *offset, uint64_t index) {
    uint32_t n_dims, type;
    int rc = read_str(c, &t->name, "a tensor name");
    if (rc == SDFED_OK) rc = read_u32(c, &n_dims, "a tensor's dimension count");
    if (rc) return rc;
    if (t->name.len == 0 || t->name.len > 256)
        return sdfed_fail(c->err, SDFED_ERR_FORMAT, "gguf: tensor %llu has a name of length %zu",
                          (unsigned long long)index, t->name.len);
    if (n_dims < 1 || n_dims > SDFED_GGUF_MAX_DIMS)
        return sdfed_fail(c->err, SDFED_ERR_FORMAT, "gguf: tensor '%.*s' has %u dimensions (1..%d allowed)",
                          (int)t->name.len, t->name.ptr, n_dims, SDFED_GGUF_MAX_DIMS);
    t->n_dims = (int)n_dims;
    t->n_elements = 1;
    for (int d = 0; d < SDFED_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        rc = read_u64(c, &t->ne[d], "a tensor dimension");
        if (rc) return rc;
        /* no tensor of a model is this large; the bound keeps products exact */
        if (t->ne[d] == 0 || t->ne[d] > ((uint64_t)1 << 40) || t->n_elements > ((uint64_t)1 << 40) / t->ne[d])
            return sdfed_fail(c->err, SDFED_ERR_FORMAT, "gguf: tensor '%.*s' has an invalid shape", (int)t->name.len,
                              t->name.ptr);
        t->n_elements *= t->ne[d];
    }
    rc = read_u32(c, &type, "a tensor type");
    if (rc == SDFED_OK) rc = read_u64(c, offset, "a tensor offset");
    if (rc) return rc;
    if (!sdfed_type_name((int)type))
        return sdfed_fail(c->err, SDFED_ERR_UNSUPPORTED,
                          "gguf: tensor '%.*s' has type %u (supported: f32=0, f16=1, q8_0=8)", (int)t->name.len,
                          t->name.ptr, type);
    t->type = (int)type;
    if (t->ne[0] % (uint64_t)sdfed_type_block_size(t->type) != 0)
        return sdfed_fail(c->err, SDFED_ERR_FORMAT, "gguf: tensor '%.*s' of type %s has a row of %llu values",
                          (int)t->name.len, t->name.ptr, sdfed_type_name(t->type), (unsigned long long)t->ne[0]);
    t->nbytes = sdfed_type_row_bytes(t->type, t->ne[0]) * (size_t)(t->n_elements / t->ne[0]);
    return SDFED_OK;
}

static int compare_by_data(const void *a, const void *b) {
    const sdfed_gguf_tensor *x = *(const sdfed_gguf_tensor *const *)a, *y = *(const sdfed_gguf_tensor *const *)b;
    const uint8_t *px = x->data, *py = y->data;
    return px < py ? -1 : px > py;
}

static int check_no_overlap(sdfed_gguf *g, sdfed_error *err) {
    if (g->n_tensors < 2) return SDFED_OK;
    const sdfed_gguf_tensor **order = malloc(sizeof *order * g->n_tensors);
    if (!order) return sdfed_fail(err, SDFED_ERR_NOMEM, "gguf: out of memory");
    for (uint64_t i = 0; i < g->n_tensors; i++) order[i] = &g->tensors[i];
    qsort(order, g->n_tensors, sizeof *order, compare_by_data);
    int rc = SDFED_OK;
    for (uint64_t i = 1; i < g->n_tensors && rc == SDFED_OK; i++) {
        const uint8_t *prev_end = (const uint8_t *)order[i - 1]->data + order[i - 1]->nbytes;
        if ((const uint8_t *)order[i]->data < prev_end)
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: tensors '%.*s' and '%.*s' overlap",
                            (int)order[i - 1]->name.len, order[i - 1]->name.ptr, (int)order[i]->name.len,
                            order[i]->name.ptr);
    }
    free(order);
    return rc;
}

static int check_unique_names(sdfed_gguf *g, sdfed_error *err) {
    /* quadratic, but files hold at most a few thousand entries */
    for (uint64_t i = 0; i < g->n_kv; i++)
        for (uint64_t j = 0; j < i; j++)
            if (str_same(g->kv[i].key, g->kv[j].key))
                return sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: metadata key '%.*s' appears twice",
                                  (int)g->kv[i].key.len, g->kv[i].key.ptr);
    for (uint64_t i = 0; i < g->n_tensors; i++)
        for (uint64_t j = 0; j < i; j++)
            if (str_same(g->tensors[i].name, g->tensors[j].name))
                return sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: tensor '%.*s' appears twice",
                                  (int)g->tensors[i].name.len, g->tensors[i].name.ptr);
    return SDFED_OK;
}

static int read_alignment(sdfed_gguf *g, sdfed_error *err) {
    g->alignment = SDFED_GGUF_DEFAULT_ALIGNMENT;
    const sdfed_gguf_kv *kv = sdfed_gguf_find(g, "general.alignment");
    if (!kv) return SDFED_OK;
    uint32_t a;
    if (kv->type != SDFED_GGUF_UINT32)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: general.alignment must be a uint32");
    memcpy(&a, kv->value, 4);
    if (a == 0 || (a & (a - 1)) != 0 || a > 65536)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: general.alignment %u is not a power of two", a);
    g->alignment = a;
    return SDFED_OK;
}

int sdfed_gguf_open(sdfed_gguf *g, const void *data, size_t size, sdfed_error *err) {
    memset(g, 0, sizeof *g);
    cursor c = {.base = data, .size = size, .pos = 0, .err = err};
    g->data = data;
    g->size = size;
    uint8_t magic[4];
    int rc = read_bytes(&c, magic, 4, "the magic");
    if (rc) return sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: file of %zu bytes is too short to be GGUF", size);
    if (memcmp(magic, "GGUF", 4) != 0) return sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: not a GGUF file (bad magic)");
    if ((rc = read_u32(&c, &g->version, "the version"))) return rc;
    if (g->version != 2 && g->version != 3)
        return sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "gguf: version %u is not supported (expected 3)", g->version);
    if ((rc = read_u64(&c, &g->n_tensors, "the tensor count"))) return rc;
    if ((rc = read_u64(&c, &g->n_kv, "the metadata count"))) return rc;
    /* every entry takes at least 8 bytes: this bounds the allocations */
    if (g->n_kv > (size - c.pos) / 8 || g->n_tensors > (size - c.pos) / 8)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "gguf: header claims %llu tensors and %llu metadata entries, more than the file holds",
                          (unsigned long long)g->n_tensors, (unsigned long long)g->n_kv);

    g->kv = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->kv);
    g->tensors = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensors);
    uint64_t *offsets = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *offsets);
    if (!g->kv || !g->tensors || !offsets) {
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "gguf: out of memory");
        goto done;
    }
    for (uint64_t i = 0; i < g->n_kv && rc == SDFED_OK; i++) rc = read_kv(&c, &g->kv[i], i);
    for (uint64_t i = 0; i < g->n_tensors && rc == SDFED_OK; i++)
        rc = read_tensor_info(&c, &g->tensors[i], &offsets[i], i);
    if (rc == SDFED_OK) rc = read_alignment(g, err);
    if (rc) goto done;

    size_t data_start = (c.pos + g->alignment - 1) / g->alignment * g->alignment;
    if (data_start > size && g->n_tensors > 0) {
        rc = sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: file truncated before the tensor data");
        goto done;
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        sdfed_gguf_tensor *t = &g->tensors[i];
        if (offsets[i] % g->alignment != 0) {
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: tensor '%.*s' is not aligned to %u bytes", (int)t->name.len,
                            t->name.ptr, g->alignment);
            goto done;
        }
        if (offsets[i] > size - data_start || t->nbytes > size - data_start - offsets[i]) {
            rc = sdfed_fail(err, SDFED_ERR_FORMAT,
                            "gguf: tensor '%.*s' (%zu bytes at offset %llu) lies beyond the end of the file",
                            (int)t->name.len, t->name.ptr, t->nbytes, (unsigned long long)offsets[i]);
            goto done;
        }
        t->data = g->data + data_start + offsets[i];
    }
    rc = check_unique_names(g, err);
    if (rc == SDFED_OK) rc = check_no_overlap(g, err);
done:
    free(offsets);
    if (rc) sdfed_gguf_close(g);
    return rc;
}

void sdfed_gguf_close(sdfed_gguf *g) {
    free(g->kv);
    free(g->tensors);
    memset(g, 0, sizeof *g);
}

const sdfed_gguf_kv *sdfed_gguf_find(const sdfed_gguf *g, const char *key) {
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (sdfed_str_eq(g->kv[i].key, key)) return &g->kv[i];
    return NULL;
}

const sdfed_gguf_tensor *sdfed_gguf_find_tensor(const sdfed_gguf *g, const char *name) {
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (sdfed_str_eq(g->tensors[i].name, name)) return &g->tensors[i];
    return NULL;
}

static int find_kv(const sdfed_gguf *g, const char *key, const sdfed_gguf_kv **out, sdfed_error *err) {
    *out = sdfed_gguf_find(g, key);
    if (!*out) return sdfed_fail(err, SDFED_ERR_NOT_FOUND, "gguf: metadata key '%s' is missing", key);
    return SDFED_OK;
}

/* Decodes a scalar integer of any width into sv (signed types) or uv
 * (unsigned types); returns 0 if the value is not an integer. */
static int integer_value(const sdfed_gguf_kv *kv, int64_t *sv, uint64_t *uv, int *is_signed) {
    uint8_t b[8] = {0};
    size_t n = scalar_size(kv->type);
    memcpy(b, kv->value, n);
    uint64_t u = 0;
    for (size_t i = 0; i < n; i++) u |= (uint64_t)b[i] << (8 * i);
    switch (kv->type) {
    case SDFED_GGUF_UINT8:
    case SDFED_GGUF_UINT16:
    case SDFED_GGUF_UINT32:
    case SDFED_GGUF_UINT64:
        *uv = u;
        *is_signed = 0;
        return 1;
    case SDFED_GGUF_INT8:
        *sv = (int8_t)u;
        *is_signed = 1;
        return 1;
    case SDFED_GGUF_INT16:
        *sv = (int16_t)u;
        *is_signed = 1;
        return 1;
    case SDFED_GGUF_INT32:
        *sv = (int32_t)u;
        *is_signed = 1;
        return 1;
    case SDFED_GGUF_INT64:
        *sv = (int64_t)u;
        *is_signed = 1;
        return 1;
    }
    return 0;
}

int sdfed_gguf_get_u32(const sdfed_gguf *g, const char *key, uint32_t *out, sdfed_error *err) {
    const sdfed_gguf_kv *kv;
    int rc = find_kv(g, key, &kv, err);
    if (rc) return rc;
    int64_t sv = 0;
    uint64_t uv = 0;
    int is_signed;
    if (!integer_value(kv, &sv, &uv, &is_signed))
        return sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: metadata '%s' is not an integer", key);
    if (is_signed) {
        if (sv < 0) return sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: metadata '%s' is negative", key);
        uv = (uint64_t)sv;
    }
    if (uv > UINT32_MAX) return sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: metadata '%s' is too large", key);
    *out = (uint32_t)uv;
    return SDFED_OK;
}

int sdfed_gguf_get_f32(const sdfed_gguf *g, const char *key, float *out, sdfed_error *err) {
    const sdfed_gguf_kv *kv;
    int rc = find_kv(g, key, &kv, err);
    if (rc) return rc;
    if (kv->type == SDFED_GGUF_FLOAT32) {
        memcpy(out, kv->value, 4);
    } else if (kv->type == SDFED_GGUF_FLOAT64) {
        double d;
        memcpy(&d, kv->value, 8);
        *out = (float)d;
    } else {
        return sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: metadata '%s' is not a float", key);
    }
    return SDFED_OK;
}

int sdfed_gguf_get_str(const sdfed_gguf *g, const char *key, sdfed_str *out, sdfed_error *err) {
    const sdfed_gguf_kv *kv;
    int rc = find_kv(g, key, &kv, err);
    if (rc) return rc;
    if (kv->type != SDFED_GGUF_STRING)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: metadata '%s' is not a string", key);
    sdfed_gguf_str_iter it = {.p = kv->value, .left = 1};
    sdfed_gguf_str_iter_next(&it, out);
    return SDFED_OK;
}

int sdfed_gguf_get_array(const sdfed_gguf *g, const char *key, uint32_t elem_type, const sdfed_gguf_kv **out,
                         sdfed_error *err) {
    int rc = find_kv(g, key, out, err);
    if (rc) return rc;
    if ((*out)->type != SDFED_GGUF_ARRAY || (*out)->elem_type != elem_type)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: metadata '%s' is not an array of the expected type", key);
    return SDFED_OK;
}

float sdfed_gguf_array_f32(const sdfed_gguf_kv *kv, uint64_t i) {
    float v;
    memcpy(&v, kv->value + 4 * i, 4);
    return v;
}

int32_t sdfed_gguf_array_i32(const sdfed_gguf_kv *kv, uint64_t i) {
    int32_t v;
    memcpy(&v, kv->value + 4 * i, 4);
    return v;
}

sdfed_gguf_str_iter sdfed_gguf_str_iter_begin(const sdfed_gguf_kv *kv) {
    sdfed_gguf_str_iter it = {.p = kv->value, .left = kv->count};
    return it;
}

int sdfed_gguf_str_iter_next(sdfed_gguf_str_iter *it, sdfed_str *out) {
    if (it->left == 0) return 0;
    uint64_t len = 0;
    for (int i = 0; i < 8; i++) len |= (uint64_t)it->p[i] << (8 * i);
    out->ptr = (const char *)it->p + 8;
    out->len = (size_t)len; /* validated when the file was opened */
    it->p += 8 + len;
    it->left--;
    return 1;
}
