/* Saving and loading method parameters through GGUF. */
#include "method/methods_io.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "format/gguf.h"

int sdfed_method_params_save(int method, const sdfed_method_params *p, sdfed_sink *sink, sdfed_error *err) {
    if (!sdfed_method_name(method)) return sdfed_fail(err, SDFED_ERR_ARG, "params: unknown method %d", method);
    sdfed_gguf_writer w;
    sdfed_gguf_writer_init(&w);
    sdfed_gguf_writer_add_str(&w, "general.architecture", "sdfed-client");
    sdfed_gguf_writer_add_str(&w, "sdfed.method", sdfed_method_name(method));
    sdfed_gguf_writer_add_u32(&w, "sdfed.width", (uint32_t)p->width);
    sdfed_gguf_writer_add_u32(&w, "sdfed.global_rows", (uint32_t)p->global_rows);
    sdfed_gguf_writer_add_u32(&w, "sdfed.local_rows", (uint32_t)p->local_rows);
    const struct {
        const char *name;
        const float *data;
        int rows;
    } tensors[] = {{"global", p->global, p->global_rows},
                   {"local", p->local, p->local_rows},
                   {"global_momentum", p->global_momentum, p->global_rows},
                   {"local_momentum", p->local_momentum, p->local_rows}};
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++) {
        if (!tensors[i].data || tensors[i].rows == 0) continue;
        uint64_t ne[2] = {(uint64_t)p->width, (uint64_t)tensors[i].rows};
        sdfed_gguf_writer_add_tensor(&w, tensors[i].name, SDFED_TYPE_F32, 2, ne, tensors[i].data);
    }
    int rc = sdfed_gguf_writer_write(&w, sink, err);
    sdfed_gguf_writer_free(&w);
    return rc;
}

/* Copies tensor `name` (rows, width) into a new buffer; absent is fine when
 * optional. */
static int take(const sdfed_gguf *g, const char *name, int rows, int width, int optional, float **out,
                sdfed_error *err) {
    *out = NULL;
    const sdfed_gguf_tensor *t = sdfed_gguf_find_tensor(g, name);
    if (!t) {
        if (optional || rows == 0) return SDFED_OK;
        return sdfed_fail(err, SDFED_ERR_FORMAT, "params: tensor '%s' is missing", name);
    }
    if (t->type != SDFED_TYPE_F32 || t->n_dims != 2 || t->ne[0] != (uint64_t)width || t->ne[1] != (uint64_t)rows)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "params: tensor '%s' is not f32 (%d, %d)", name, rows, width);
    *out = malloc(t->nbytes);
    if (!*out) return sdfed_fail(err, SDFED_ERR_NOMEM, "params: out of memory");
    memcpy(*out, t->data, t->nbytes);
    for (size_t i = 0; i < (size_t)rows * width; i++)
        if (!isfinite((*out)[i]))
            return sdfed_fail(err, SDFED_ERR_NUMERIC, "params: tensor '%s' holds NaN or Inf", name);
    return SDFED_OK;
}

int sdfed_method_params_load(const void *data, size_t size, int *method, sdfed_method_params *p, sdfed_error *err) {
    memset(p, 0, sizeof *p);
    sdfed_gguf g;
    int rc = sdfed_gguf_open(&g, data, size, err);
    if (rc) return rc;
    sdfed_str arch, name;
    uint32_t width = 0, global_rows = 0, local_rows = 0;
    char method_name[64] = "";
    if ((rc = sdfed_gguf_get_str(&g, "general.architecture", &arch, err)) ||
        (rc = sdfed_gguf_get_str(&g, "sdfed.method", &name, err)) ||
        (rc = sdfed_gguf_get_u32(&g, "sdfed.width", &width, err)) ||
        (rc = sdfed_gguf_get_u32(&g, "sdfed.global_rows", &global_rows, err)) ||
        (rc = sdfed_gguf_get_u32(&g, "sdfed.local_rows", &local_rows, err))) {
        sdfed_gguf_close(&g);
        return sdfed_fail_context(err, rc, "params");
    }
    if (name.len < sizeof method_name) memcpy(method_name, name.ptr, name.len);
    *method = sdfed_method_from_name(method_name);
    if (!sdfed_str_eq(arch, "sdfed-client") || *method < 0 || width < 1 || width > 65536 || global_rows > 65536 ||
        local_rows > 65536)
        rc = sdfed_fail(err, SDFED_ERR_FORMAT, "params: not an sdfed client file, or an unknown method");
    p->width = (int)width;
    p->global_rows = (int)global_rows;
    p->local_rows = (int)local_rows;
    if (rc == SDFED_OK) rc = take(&g, "global", p->global_rows, p->width, 0, &p->global, err);
    if (rc == SDFED_OK) rc = take(&g, "local", p->local_rows, p->width, 0, &p->local, err);
    if (rc == SDFED_OK) rc = take(&g, "global_momentum", p->global_rows, p->width, 1, &p->global_momentum, err);
    if (rc == SDFED_OK) rc = take(&g, "local_momentum", p->local_rows, p->width, 1, &p->local_momentum, err);
    /* an empty part still gets a buffer, as sdfed_method_params_init gives */
    if (rc == SDFED_OK && !p->global && !(p->global = calloc(1, sizeof(float))))
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "params: out of memory");
    if (rc == SDFED_OK && !p->local && !(p->local = calloc(1, sizeof(float))))
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "params: out of memory");
    sdfed_gguf_close(&g);
    if (rc) sdfed_method_params_free(p);
    return rc;
}
