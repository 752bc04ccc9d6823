/* safetensors reader: validates the header and every tensor's byte range. */
#include "format/safetensors.h"

#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"

#define MAX_HEADER_BYTES (100u << 20)

static int dtype_from_name(const char *s, int *elem_size) {
    static const struct {
        const char *name;
        int dtype, size;
    } table[] = {
        {"F32", SDFED_ST_F32, 4},    {"F16", SDFED_ST_F16, 2},       {"BF16", SDFED_ST_BF16, 2},
        {"I32", SDFED_ST_I32, 4},    {"I64", SDFED_ST_I64, 8},       {"F64", SDFED_ST_OTHER, 8},
        {"I16", SDFED_ST_OTHER, 2},  {"I8", SDFED_ST_OTHER, 1},      {"U8", SDFED_ST_OTHER, 1},
        {"BOOL", SDFED_ST_OTHER, 1}, {"U16", SDFED_ST_OTHER, 2},     {"U32", SDFED_ST_OTHER, 4},
        {"U64", SDFED_ST_OTHER, 8},  {"F8_E4M3", SDFED_ST_OTHER, 1}, {"F8_E5M2", SDFED_ST_OTHER, 1},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(s, table[i].name) == 0) {
            *elem_size = table[i].size;
            return table[i].dtype;
        }
    return -1;
}

static int read_tensor(sdfed_safetensors *st, int key, int value, const uint8_t *body, size_t body_size,
                       sdfed_st_tensor *t, sdfed_error *err) {
    const sdfed_json *j = &st->header;
    t->name = sdfed_json_string_dup(j, key);
    if (!t->name) return sdfed_fail(err, SDFED_ERR_NOMEM, "safetensors: out of memory");
    int dtype = sdfed_json_get(j, value, "dtype");
    int shape = sdfed_json_get(j, value, "shape");
    int offsets = sdfed_json_get(j, value, "data_offsets");
    int elem_size = 0;
    if (dtype < 0 || shape < 0 || offsets < 0 || j->nodes[shape].type != SDFED_JSON_ARRAY ||
        j->nodes[offsets].type != SDFED_JSON_ARRAY || j->nodes[offsets].size != 2 ||
        sdfed_json_string(j, dtype, t->dtype_name, sizeof t->dtype_name) < 0)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "safetensors: tensor '%s' needs dtype, shape and data_offsets",
                          t->name);
    t->dtype = dtype_from_name(t->dtype_name, &elem_size);
    if (t->dtype < 0)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "safetensors: tensor '%s' has unknown dtype '%s'", t->name,
                          t->dtype_name);
    t->n_dims = j->nodes[shape].size;
    if (t->n_dims > SDFED_ST_MAX_DIMS)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "safetensors: tensor '%s' has %d dimensions", t->name, t->n_dims);
    t->n_elements = 1;
    for (int d = 0; d < t->n_dims; d++) {
        double v;
        if (sdfed_json_number(j, sdfed_json_at(j, shape, d), &v) || v < 0 || v > 1e12 || v != (double)(int64_t)v)
            return sdfed_fail(err, SDFED_ERR_FORMAT, "safetensors: tensor '%s' has a bad shape", t->name);
        t->shape[d] = (int64_t)v;
        if (t->shape[d] > 0 && t->n_elements > ((int64_t)1 << 50) / t->shape[d])
            return sdfed_fail(err, SDFED_ERR_FORMAT, "safetensors: tensor '%s' is too large", t->name);
        t->n_elements *= t->shape[d];
    }
    double begin, end;
    if (sdfed_json_number(j, sdfed_json_at(j, offsets, 0), &begin) ||
        sdfed_json_number(j, sdfed_json_at(j, offsets, 1), &end) || begin < 0 || end < begin ||
        end > (double)body_size || begin != (double)(int64_t)begin || end != (double)(int64_t)end)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "safetensors: tensor '%s' has data_offsets outside the file", t->name);
    t->nbytes = (size_t)(end - begin);
    if ((uint64_t)t->nbytes != (uint64_t)t->n_elements * (uint64_t)elem_size)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "safetensors: tensor '%s' holds %zu bytes but its shape needs %llu",
                          t->name, t->nbytes, (unsigned long long)t->n_elements * (unsigned long long)elem_size);
    t->data = body + (size_t)begin;
    return SDFED_OK;
}

int sdfed_safetensors_open(sdfed_safetensors *st, const void *data, size_t size, sdfed_error *err) {
    memset(st, 0, sizeof *st);
    st->metadata = -1;
    const uint8_t *bytes = data;
    if (size < 8) return sdfed_fail(err, SDFED_ERR_FORMAT, "safetensors: file of %zu bytes is too short", size);
    uint64_t n = 0;
    for (int i = 0; i < 8; i++) n |= (uint64_t)bytes[i] << (8 * i);
    if (n > size - 8 || n > MAX_HEADER_BYTES)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "safetensors: header length %llu does not fit in the %zu-byte file",
                          (unsigned long long)n, size);
    int rc = sdfed_json_parse(&st->header, (const char *)bytes + 8, (size_t)n, err);
    if (rc) return sdfed_fail_context(err, rc, "safetensors: header");
    const sdfed_json *j = &st->header;
    if (j->nodes[0].type != SDFED_JSON_OBJECT) {
        sdfed_safetensors_close(st);
        return sdfed_fail(err, SDFED_ERR_FORMAT, "safetensors: header is not a JSON object");
    }
    st->tensors = calloc((size_t)j->nodes[0].size + 1, sizeof *st->tensors);
    if (!st->tensors) {
        sdfed_safetensors_close(st);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "safetensors: out of memory");
    }
    const uint8_t *body = bytes + 8 + n;
    size_t body_size = size - 8 - (size_t)n;
    int key = 1;
    for (int i = 0; i < j->nodes[0].size && rc == SDFED_OK; i++) {
        int value = j->nodes[key].next;
        if (sdfed_json_string_eq(j, key, "__metadata__")) {
            st->metadata = value;
        } else if (j->nodes[value].type != SDFED_JSON_OBJECT) {
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "safetensors: header entry %d is not an object", i);
        } else {
            rc = read_tensor(st, key, value, body, body_size, &st->tensors[st->n_tensors++], err);
        }
        key = j->nodes[value].next;
    }
    for (int a = 0; a < st->n_tensors && rc == SDFED_OK; a++)
        for (int b = 0; b < a && rc == SDFED_OK; b++)
            if (strcmp(st->tensors[a].name, st->tensors[b].name) == 0)
                rc = sdfed_fail(err, SDFED_ERR_FORMAT, "safetensors: tensor '%s' appears twice", st->tensors[a].name);
    if (rc) sdfed_safetensors_close(st);
    return rc;
}

void sdfed_safetensors_close(sdfed_safetensors *st) {
    for (int i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
    free(st->tensors);
    sdfed_json_free(&st->header);
    memset(st, 0, sizeof *st);
    st->metadata = -1;
}

const sdfed_st_tensor *sdfed_safetensors_find(const sdfed_safetensors *st, const char *name) {
    for (int i = 0; i < st->n_tensors; i++)
        if (strcmp(st->tensors[i].name, name) == 0) return &st->tensors[i];
    return NULL;
}

char *sdfed_safetensors_metadata(const sdfed_safetensors *st, const char *key) {
    return sdfed_json_string_dup(&st->header, sdfed_json_get(&st->header, st->metadata, key));
}

int sdfed_st_to_f32(const sdfed_st_tensor *t, float *out, sdfed_error *err) {
    const uint8_t *p = t->data;
    for (int64_t i = 0; i < t->n_elements; i++) {
        uint16_t h;
        switch (t->dtype) {
        case SDFED_ST_F32: memcpy(&out[i], p + 4 * i, 4); break;
        case SDFED_ST_F16:
            memcpy(&h, p + 2 * i, 2);
            out[i] = sdfed_f16_to_f32(h);
            break;
        case SDFED_ST_BF16:
            memcpy(&h, p + 2 * i, 2);
            out[i] = sdfed_bf16_to_f32(h);
            break;
        default:
            return sdfed_fail(err, SDFED_ERR_UNSUPPORTED,
                              "safetensors: tensor '%s' has dtype %s (need F32, F16 or BF16)", t->name, t->dtype_name);
        }
    }
    return SDFED_OK;
}

int sdfed_st_to_i32(const sdfed_st_tensor *t, int32_t *out, sdfed_error *err) {
    const uint8_t *p = t->data;
    for (int64_t i = 0; i < t->n_elements; i++) {
        int64_t v;
        switch (t->dtype) {
        case SDFED_ST_I32: memcpy(&out[i], p + 4 * i, 4); break;
        case SDFED_ST_I64:
            memcpy(&v, p + 8 * i, 8);
            if (v < INT32_MIN || v > INT32_MAX)
                return sdfed_fail(err, SDFED_ERR_FORMAT, "safetensors: tensor '%s' holds %lld, beyond int32", t->name,
                                  (long long)v);
            out[i] = (int32_t)v;
            break;
        default:
            return sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "safetensors: tensor '%s' has dtype %s (need I32 or I64)",
                              t->name, t->dtype_name);
        }
    }
    return SDFED_OK;
}
