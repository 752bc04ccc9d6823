/* CLIP checkpoint conversion: infer the architecture from tensor shapes,
 * map each source tensor (by one of two namings) onto our tensor names,
 * convert element types, attach the tokenizer and write GGUF. */
#include "clip/clip_convert.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "clip/clip_model.h"
#include "format/gguf.h"
#include "text/bpe_vocab.h"

#define NAME_MAX_LEN 160

/* How an output tensor is made from source tensors. */
enum { OP_COPY, OP_TRANSPOSE, OP_CONCAT_ROWS };

typedef struct converter {
    const sdfed_safetensors *st;
    const sdfed_convert_options *opt;
    sdfed_gguf_writer w;
    unsigned char *used; /* per source tensor: consumed by the mapping */
    void **buffers;      /* converted tensor data, freed after the write */
    int n_buffers;
    int n_fallback;
    sdfed_error *err;
} converter;

static const sdfed_st_tensor *source(converter *cv, const char *name) {
    const sdfed_st_tensor *t = sdfed_safetensors_find(cv->st, name);
    if (t) cv->used[t - cv->st->tensors] = 1;
    return t;
}

static void shape_text(const sdfed_st_tensor *t, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < t->n_dims && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, d ? ", %lld" : "%lld", (long long)t->shape[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* Source tensor that must exist with `elements` values and leading dimension
 * `lead` (rows for copies, cols for transposes): together they pin down the
 * layout of every CLIP tensor. */
static int need(converter *cv, const char *name, int64_t lead, int64_t elements, const sdfed_st_tensor **out) {
    const sdfed_st_tensor *t = source(cv, name);
    if (!t) return sdfed_fail(cv->err, SDFED_ERR_NOT_FOUND, "tensor '%s' is missing", name);
    int64_t first = t->n_dims ? t->shape[0] : 1;
    if (t->n_elements != elements || (t->n_dims > 0 && first != lead)) {
        char s[96];
        shape_text(t, s, sizeof s);
        return sdfed_fail(cv->err, SDFED_ERR_FORMAT, "tensor '%s' has shape %s, expected %lld values led by %lld", name,
                          s, (long long)elements, (long long)lead);
    }
    *out = t;
    return SDFED_OK;
}

static void *keep(converter *cv, size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) return NULL;
    void **b = realloc(cv->buffers, sizeof *b * (size_t)(cv->n_buffers + 1));
    if (!b) {
        free(p);
        return NULL;
    }
    cv->buffers = b;
    cv->buffers[cv->n_buffers++] = p;
    return p;
}

static int check_finite(converter *cv, const char *name, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return sdfed_fail(cv->err, SDFED_ERR_NUMERIC, "tensor '%s' holds a non-finite value at %zu", name, i);
    return SDFED_OK;
}

/* Adds output tensor `out_name` of shape (rows, cols) (rows 0 for a vector)
 * made by `op` from the n_src named sources; `matrix` selects the model's
 * weight type instead of F32. */
static int emit(converter *cv, const char *out_name, int op, int matrix, int64_t rows, int64_t cols, int n_src, ...) {
    int64_t r = rows > 0 ? rows : 1;
    size_t n = (size_t)(r * cols);
    float *f = malloc(n * sizeof *f);
    if (!f) return sdfed_fail(cv->err, SDFED_ERR_NOMEM, "out of memory");
    va_list ap;
    va_start(ap, n_src);
    int rc = SDFED_OK;
    size_t filled = 0;
    for (int s = 0; s < n_src && rc == SDFED_OK; s++) {
        const char *src_name = va_arg(ap, const char *);
        const sdfed_st_tensor *t;
        /* concatenation splits matrices by rows and vectors by values */
        size_t part = n / (size_t)n_src;
        int64_t lead = rows > 0 ? rows / n_src : cols / n_src;
        if (op == OP_TRANSPOSE) {
            /* source is (cols, rows); read it and transpose into f */
            rc = need(cv, src_name, cols, (int64_t)n, &t);
            float *tmp = rc ? NULL : malloc(n * sizeof *tmp);
            if (rc == SDFED_OK && !tmp) rc = sdfed_fail(cv->err, SDFED_ERR_NOMEM, "out of memory");
            if (rc == SDFED_OK) rc = sdfed_st_to_f32(t, tmp, cv->err);
            if (rc == SDFED_OK)
                for (int64_t i = 0; i < r; i++)
                    for (int64_t j = 0; j < cols; j++) f[i * cols + j] = tmp[j * r + i];
            free(tmp);
        } else {
            rc = need(cv, src_name, lead, (int64_t)part, &t);
            if (rc == SDFED_OK) rc = sdfed_st_to_f32(t, f + filled, cv->err);
        }
        filled += part;
    }
    va_end(ap);
    if (rc == SDFED_OK) rc = check_finite(cv, out_name, f, n);
    if (rc) {
        free(f);
        return rc;
    }

    int type = matrix ? cv->opt->weight_type : SDFED_TYPE_F32;
    if (type == SDFED_TYPE_Q8_0 && cols % SDFED_Q8_0_BLOCK != 0) {
        type = SDFED_TYPE_F16;
        cv->n_fallback++;
    }
    size_t row_bytes = sdfed_type_row_bytes(type, (uint64_t)cols);
    unsigned char *data = keep(cv, row_bytes * (size_t)r);
    if (!data) {
        free(f);
        return sdfed_fail(cv->err, SDFED_ERR_NOMEM, "out of memory");
    }
    for (int64_t i = 0; i < r; i++) sdfed_row_from_f32(type, data + (size_t)i * row_bytes, f + i * cols, (int)cols);
    free(f);
    uint64_t ne[2] = {(uint64_t)cols, (uint64_t)r};
    sdfed_gguf_writer_add_tensor(&cv->w, out_name, type, rows > 0 ? 2 : 1, ne, data);
    return SDFED_OK;
}

/* A tensor's name, printf-style, written in name */
static const char *tensor_name(char name[NAME_MAX_LEN], const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static const char *tensor_name(char name[NAME_MAX_LEN], const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, NAME_MAX_LEN, fmt, ap);
    va_end(ap);
    return name;
}

typedef struct arch {
    int hf;
    sdfed_clip_config c;
} arch;

static int count_layers(const sdfed_safetensors *st, const char *fmt) {
    char name[NAME_MAX_LEN];
    int n = 0;
    while (n < 1000 && sdfed_safetensors_find(st, tensor_name(name, fmt, n))) n++;
    return n;
}

static const sdfed_st_tensor *find_dims(const sdfed_safetensors *st, const char *name, int n_dims) {
    const sdfed_st_tensor *t = sdfed_safetensors_find(st, name);
    return t && t->n_dims == n_dims ? t : NULL;
}

/* One of the architecture's sizes, read off a tensor's shape: 0 (a tensor
 * of no values) or more than a model may have is refused here, before
 * anything is divided by it or sized with it. */
static int read_size(int64_t v, const char *what, int *out, sdfed_error *err) {
    if (v < 1 || v > (1 << 20))
        return sdfed_fail(err, SDFED_ERR_FORMAT, "the %s is %lld, not 1 to %d", what, (long long)v, 1 << 20);
    *out = (int)v;
    return SDFED_OK;
}

static int infer_arch(const sdfed_safetensors *st, arch *a, sdfed_error *err) {
    memset(a, 0, sizeof *a);
    const sdfed_st_tensor *tok, *pos, *ln, *proj, *conv, *vpos;
    if (sdfed_safetensors_find(st, "visual.layer1.0.conv1.weight"))
        return sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "ResNet image towers are not supported (ViT only)");
    if (sdfed_safetensors_find(st, "text_model.embeddings.token_embedding.weight")) {
        a->hf = 1;
        tok = find_dims(st, "text_model.embeddings.token_embedding.weight", 2);
        pos = find_dims(st, "text_model.embeddings.position_embedding.weight", 2);
        ln = find_dims(st, "text_model.final_layer_norm.weight", 1);
        proj = find_dims(st, "text_projection.weight", 2);
        conv = find_dims(st, "vision_model.embeddings.patch_embedding.weight", 4);
        vpos = find_dims(st, "vision_model.embeddings.position_embedding.weight", 2);
        a->c.text_layers = count_layers(st, "text_model.encoder.layers.%d.self_attn.q_proj.weight");
        a->c.vision_layers = count_layers(st, "vision_model.encoder.layers.%d.self_attn.q_proj.weight");
    } else if (sdfed_safetensors_find(st, "token_embedding.weight")) {
        tok = find_dims(st, "token_embedding.weight", 2);
        pos = find_dims(st, "positional_embedding", 2);
        ln = find_dims(st, "ln_final.weight", 1);
        proj = find_dims(st, "text_projection", 2);
        conv = find_dims(st, "visual.conv1.weight", 4);
        vpos = find_dims(st, "visual.positional_embedding", 2);
        a->c.text_layers = count_layers(st, "transformer.resblocks.%d.attn.in_proj_weight");
        a->c.vision_layers = count_layers(st, "visual.transformer.resblocks.%d.attn.in_proj_weight");
    } else {
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "not a CLIP checkpoint: found neither 'token_embedding.weight' (OpenAI/OpenCLIP names) "
                          "nor 'text_model.embeddings.token_embedding.weight' (Hugging Face names)");
    }
    if (!tok || !pos || !ln || !proj || !conv || !vpos)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "cannot infer the architecture: a token/positional embedding, final norm, "
                          "projection or patch embedding is missing or has the wrong rank");
    sdfed_clip_config *c = &a->c;
    int positions = 0, rc;
    if ((rc = read_size(tok->shape[0], "vocabulary size", &c->vocab_size, err)) ||
        (rc = read_size(ln->shape[0], "text width", &c->text_width, err)) ||
        (rc = read_size(pos->shape[0], "context length", &c->context_length, err)) ||
        (rc = read_size(a->hf ? proj->shape[0] : proj->shape[1], "embedding size", &c->embed_dim, err)) ||
        (rc = read_size(conv->shape[0], "image width", &c->vision_width, err)) ||
        (rc = read_size(conv->shape[3], "patch size", &c->patch_size, err)) ||
        (rc = read_size(vpos->shape[0], "image positions' count", &positions, err)))
        return rc;
    int grid = (int)lround(sqrt((double)(positions - 1)));
    c->image_size = grid * c->patch_size;
    c->text_heads = c->text_width / 64;
    c->vision_heads = c->vision_width / 64;
    c->layer_norm_eps = 1e-5f;
    if (grid < 1 || grid * grid + 1 != positions || conv->shape[1] != 3 || conv->shape[2] != conv->shape[3])
        return sdfed_fail(err, SDFED_ERR_FORMAT, "the image tower's patch embedding or positions are not square");
    if (c->text_width % 64 || c->vision_width % 64)
        return sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "widths %d/%d are not multiples of 64 (heads = width / 64)",
                          c->text_width, c->vision_width);
    if (c->text_layers == 0 || c->vision_layers == 0)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "no transformer layers found");
    static const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
    static const float std[3] = {0.26862954f, 0.26130258f, 0.27577711f};
    memcpy(c->image_mean, mean, sizeof mean);
    memcpy(c->image_std, std, sizeof std);
    return SDFED_OK;
}

static int emit_block(converter *cv, const arch *a, const char *tower, int i, int W) {
    char o[NAME_MAX_LEN], s1[NAME_MAX_LEN], s2[NAME_MAX_LEN], s3[NAME_MAX_LEN];
    int rc;
    int text = strcmp(tower, "text") == 0;
    const char *hf_base = text ? "text_model.encoder.layers" : "vision_model.encoder.layers";
    const char *openai_base = text ? "transformer.resblocks" : "visual.transformer.resblocks";
    const char *base = a->hf ? hf_base : openai_base;
#define OUT(suffix) tensor_name(o, "%s.blk.%d.%s", tower, i, suffix)
#define SRC(buf, suffix) tensor_name(buf, "%s.%d.%s", base, i, suffix)
    if (a->hf) {
        if ((rc = emit(cv, OUT("ln1.weight"), OP_COPY, 0, 0, W, 1, SRC(s1, "layer_norm1.weight"))) ||
            (rc = emit(cv, OUT("ln1.bias"), OP_COPY, 0, 0, W, 1, SRC(s1, "layer_norm1.bias"))) ||
            (rc = emit(cv, OUT("attn_qkv.weight"), OP_CONCAT_ROWS, 1, 3 * W, W, 3, SRC(s1, "self_attn.q_proj.weight"),
                       SRC(s2, "self_attn.k_proj.weight"), SRC(s3, "self_attn.v_proj.weight"))) ||
            (rc = emit(cv, OUT("attn_qkv.bias"), OP_CONCAT_ROWS, 0, 0, 3 * W, 3, SRC(s1, "self_attn.q_proj.bias"),
                       SRC(s2, "self_attn.k_proj.bias"), SRC(s3, "self_attn.v_proj.bias"))) ||
            (rc = emit(cv, OUT("attn_out.weight"), OP_COPY, 1, W, W, 1, SRC(s1, "self_attn.out_proj.weight"))) ||
            (rc = emit(cv, OUT("attn_out.bias"), OP_COPY, 0, 0, W, 1, SRC(s1, "self_attn.out_proj.bias"))) ||
            (rc = emit(cv, OUT("ln2.weight"), OP_COPY, 0, 0, W, 1, SRC(s1, "layer_norm2.weight"))) ||
            (rc = emit(cv, OUT("ln2.bias"), OP_COPY, 0, 0, W, 1, SRC(s1, "layer_norm2.bias"))) ||
            (rc = emit(cv, OUT("mlp_fc.weight"), OP_COPY, 1, 4 * W, W, 1, SRC(s1, "mlp.fc1.weight"))) ||
            (rc = emit(cv, OUT("mlp_fc.bias"), OP_COPY, 0, 0, 4 * W, 1, SRC(s1, "mlp.fc1.bias"))) ||
            (rc = emit(cv, OUT("mlp_proj.weight"), OP_COPY, 1, W, 4 * W, 1, SRC(s1, "mlp.fc2.weight"))) ||
            (rc = emit(cv, OUT("mlp_proj.bias"), OP_COPY, 0, 0, W, 1, SRC(s1, "mlp.fc2.bias"))))
            return rc;
    } else {
        if ((rc = emit(cv, OUT("ln1.weight"), OP_COPY, 0, 0, W, 1, SRC(s1, "ln_1.weight"))) ||
            (rc = emit(cv, OUT("ln1.bias"), OP_COPY, 0, 0, W, 1, SRC(s1, "ln_1.bias"))) ||
            (rc = emit(cv, OUT("attn_qkv.weight"), OP_COPY, 1, 3 * W, W, 1, SRC(s1, "attn.in_proj_weight"))) ||
            (rc = emit(cv, OUT("attn_qkv.bias"), OP_COPY, 0, 0, 3 * W, 1, SRC(s1, "attn.in_proj_bias"))) ||
            (rc = emit(cv, OUT("attn_out.weight"), OP_COPY, 1, W, W, 1, SRC(s1, "attn.out_proj.weight"))) ||
            (rc = emit(cv, OUT("attn_out.bias"), OP_COPY, 0, 0, W, 1, SRC(s1, "attn.out_proj.bias"))) ||
            (rc = emit(cv, OUT("ln2.weight"), OP_COPY, 0, 0, W, 1, SRC(s1, "ln_2.weight"))) ||
            (rc = emit(cv, OUT("ln2.bias"), OP_COPY, 0, 0, W, 1, SRC(s1, "ln_2.bias"))) ||
            (rc = emit(cv, OUT("mlp_fc.weight"), OP_COPY, 1, 4 * W, W, 1, SRC(s1, "mlp.c_fc.weight"))) ||
            (rc = emit(cv, OUT("mlp_fc.bias"), OP_COPY, 0, 0, 4 * W, 1, SRC(s1, "mlp.c_fc.bias"))) ||
            (rc = emit(cv, OUT("mlp_proj.weight"), OP_COPY, 1, W, 4 * W, 1, SRC(s1, "mlp.c_proj.weight"))) ||
            (rc = emit(cv, OUT("mlp_proj.bias"), OP_COPY, 0, 0, W, 1, SRC(s1, "mlp.c_proj.bias"))))
            return rc;
    }
#undef OUT
#undef SRC
    return SDFED_OK;
}

static int emit_tensors(converter *cv, const arch *a) {
    const sdfed_clip_config *c = &a->c;
    int tw = c->text_width, vw = c->vision_width, e = c->embed_dim;
    int grid = c->image_size / c->patch_size;
    int patch = 3 * c->patch_size * c->patch_size;
    int rc;
    int hf = a->hf;
    if ((rc = emit(cv, "logit_scale", OP_COPY, 0, 0, 1, 1, "logit_scale")) ||
        (rc = emit(cv, "text.token_embd.weight", OP_COPY, 1, c->vocab_size, tw, 1,
                   hf ? "text_model.embeddings.token_embedding.weight" : "token_embedding.weight")) ||
        (rc = emit(cv, "text.pos_embd", OP_COPY, 0, c->context_length, tw, 1,
                   hf ? "text_model.embeddings.position_embedding.weight" : "positional_embedding")))
        return rc;
    for (int i = 0; i < c->text_layers; i++)
        if ((rc = emit_block(cv, a, "text", i, tw))) return rc;
    if ((rc = emit(cv, "text.ln_final.weight", OP_COPY, 0, 0, tw, 1,
                   hf ? "text_model.final_layer_norm.weight" : "ln_final.weight")) ||
        (rc = emit(cv, "text.ln_final.bias", OP_COPY, 0, 0, tw, 1,
                   hf ? "text_model.final_layer_norm.bias" : "ln_final.bias")) ||
        (rc = hf ? emit(cv, "text.proj.weight", OP_COPY, 1, e, tw, 1, "text_projection.weight")
                 : emit(cv, "text.proj.weight", OP_TRANSPOSE, 1, e, tw, 1, "text_projection")) ||
        (rc = emit(cv, "vision.patch_embd.weight", OP_COPY, 1, vw, patch, 1,
                   hf ? "vision_model.embeddings.patch_embedding.weight" : "visual.conv1.weight")) ||
        (rc = emit(cv, "vision.class_embd", OP_COPY, 0, 0, vw, 1,
                   hf ? "vision_model.embeddings.class_embedding" : "visual.class_embedding")) ||
        (rc = emit(cv, "vision.pos_embd", OP_COPY, 0, grid * grid + 1, vw, 1,
                   hf ? "vision_model.embeddings.position_embedding.weight" : "visual.positional_embedding")) ||
        (rc = emit(cv, "vision.ln_pre.weight", OP_COPY, 0, 0, vw, 1,
                   hf ? "vision_model.pre_layrnorm.weight" : "visual.ln_pre.weight")) ||
        (rc = emit(cv, "vision.ln_pre.bias", OP_COPY, 0, 0, vw, 1,
                   hf ? "vision_model.pre_layrnorm.bias" : "visual.ln_pre.bias")))
        return rc;
    for (int i = 0; i < c->vision_layers; i++)
        if ((rc = emit_block(cv, a, "vision", i, vw))) return rc;
    if ((rc = emit(cv, "vision.ln_post.weight", OP_COPY, 0, 0, vw, 1,
                   hf ? "vision_model.post_layernorm.weight" : "visual.ln_post.weight")) ||
        (rc = emit(cv, "vision.ln_post.bias", OP_COPY, 0, 0, vw, 1,
                   hf ? "vision_model.post_layernorm.bias" : "visual.ln_post.bias")) ||
        (rc = hf ? emit(cv, "vision.proj.weight", OP_COPY, 1, e, vw, 1, "visual_projection.weight")
                 : emit(cv, "vision.proj.weight", OP_TRANSPOSE, 1, e, vw, 1, "visual.proj")))
        return rc;
    return SDFED_OK;
}

/* Buffers and bookkeeping entries that checkpoints carry but the model does
 * not use. */
static int ignorable(const char *name) {
    static const char *const names[] = {"input_resolution",
                                        "context_length",
                                        "vocab_size",
                                        "text_model.embeddings.position_ids",
                                        "vision_model.embeddings.position_ids",
                                        "attn_mask"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0) return 1;
    return 0;
}

static int check_leftovers(converter *cv) {
    char list[400] = "";
    int n = 0;
    for (int i = 0; i < cv->st->n_tensors; i++) {
        if (cv->used[i] || ignorable(cv->st->tensors[i].name)) continue;
        if (n++ < 4) {
            size_t len = strlen(list);
            snprintf(list + len, sizeof list - len, "%s'%.80s'", len ? ", " : "", cv->st->tensors[i].name);
        }
    }
    if (n == 0) return SDFED_OK;
    return sdfed_fail(cv->err, SDFED_ERR_FORMAT, "%d unexpected tensor%s: %s%s", n, n > 1 ? "s" : "", list,
                      n > 4 ? ", ..." : "");
}

static void add_metadata(converter *cv, const sdfed_clip_config *c, const sdfed_bpe_vocab *vocab) {
    sdfed_gguf_writer *w = &cv->w;
    sdfed_gguf_writer_add_str(w, "general.architecture", "clip");
    sdfed_gguf_writer_add_u32(w, "general.file_type", (uint32_t)cv->opt->weight_type);
    sdfed_gguf_writer_add_u32(w, "clip.embed_dim", (uint32_t)c->embed_dim);
    sdfed_gguf_writer_add_u32(w, "clip.context_length", (uint32_t)c->context_length);
    sdfed_gguf_writer_add_u32(w, "clip.text.width", (uint32_t)c->text_width);
    sdfed_gguf_writer_add_u32(w, "clip.text.layers", (uint32_t)c->text_layers);
    sdfed_gguf_writer_add_u32(w, "clip.text.heads", (uint32_t)c->text_heads);
    sdfed_gguf_writer_add_u32(w, "clip.vision.width", (uint32_t)c->vision_width);
    sdfed_gguf_writer_add_u32(w, "clip.vision.layers", (uint32_t)c->vision_layers);
    sdfed_gguf_writer_add_u32(w, "clip.vision.heads", (uint32_t)c->vision_heads);
    sdfed_gguf_writer_add_u32(w, "clip.vision.patch_size", (uint32_t)c->patch_size);
    sdfed_gguf_writer_add_u32(w, "clip.vision.image_size", (uint32_t)c->image_size);
    sdfed_gguf_writer_add_f32_array(w, "clip.vision.image_mean", c->image_mean, 3);
    sdfed_gguf_writer_add_f32_array(w, "clip.vision.image_std", c->image_std, 3);
    sdfed_gguf_writer_add_f32(w, "clip.layer_norm_epsilon", c->layer_norm_eps);
    sdfed_gguf_writer_add_str(w, "clip.activation", sdfed_activation_name(cv->opt->activation));
    sdfed_gguf_writer_add_str(w, "tokenizer.ggml.model", "clip-bpe");
    sdfed_gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", (const char *const *)vocab->tokens, NULL,
                                    (uint64_t)vocab->n_tokens);
    sdfed_gguf_writer_add_str_array(w, "tokenizer.ggml.merges", (const char *const *)vocab->merges, NULL,
                                    (uint64_t)vocab->n_merges);
    sdfed_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)vocab->n_tokens - 2);
    sdfed_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)vocab->n_tokens - 1);
}

int sdfed_clip_convert(const sdfed_safetensors *st, const sdfed_convert_options *opt, sdfed_sink *sink,
                       sdfed_convert_report *report, sdfed_error *err) {
    if (!sdfed_type_name(opt->weight_type))
        return sdfed_fail(err, SDFED_ERR_ARG, "weight type %d is not f32, f16 or q8_0", opt->weight_type);
    if (!sdfed_activation_name(opt->activation))
        return sdfed_fail(err, SDFED_ERR_ARG, "activation %d is not quick_gelu or gelu", opt->activation);
    arch a;
    int rc = infer_arch(st, &a, err);
    if (rc) return rc;
    sdfed_bpe_vocab vocab;
    rc = sdfed_bpe_vocab_from_clip_merges(opt->vocab_text, opt->vocab_len, a.c.vocab_size, &vocab, err);
    if (rc) return rc;

    converter cv;
    memset(&cv, 0, sizeof cv);
    cv.st = st;
    cv.opt = opt;
    cv.err = err;
    cv.used = calloc((size_t)st->n_tensors + 1, 1);
    sdfed_gguf_writer_init(&cv.w);
    if (!cv.used) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    if (rc == SDFED_OK) {
        add_metadata(&cv, &a.c, &vocab);
        rc = emit_tensors(&cv, &a);
    }
    if (rc == SDFED_OK) rc = check_leftovers(&cv);
    if (rc == SDFED_OK) rc = sdfed_gguf_writer_write(&cv.w, sink, err);
    if (rc == SDFED_OK && report) {
        report->naming = a.hf ? "hf" : "openai";
        report->n_tensors = (int)cv.w.n_tensors;
        report->n_fallback = cv.n_fallback;
    }
    sdfed_gguf_writer_free(&cv.w);
    for (int i = 0; i < cv.n_buffers; i++) free(cv.buffers[i]);
    free(cv.buffers);
    free(cv.used);
    sdfed_bpe_vocab_free(&vocab);
    return rc;
}
