/* Loading a CLIP model from GGUF: read the configuration, then look up and
 * shape-check every tensor the encoders use. */
#include "clip/clip_model.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "base/names.h"

static const sdfed_name activation_names[] = {
    [SDFED_ACT_QUICK_GELU] = {.name = "quick_gelu", .value = SDFED_ACT_QUICK_GELU},
    [SDFED_ACT_GELU] = {.name = "gelu", .value = SDFED_ACT_GELU},
};
static_assert(sizeof activation_names / sizeof activation_names[0] == SDFED_ACT_COUNT, "a name per activation");

const char *sdfed_activation_name(int activation) {
    return sdfed_name_of(activation_names, SDFED_ACT_COUNT, activation);
}

int sdfed_activation_from_name(const char *name) { return sdfed_name_value(activation_names, SDFED_ACT_COUNT, name); }

static int get_int(const sdfed_gguf *g, const char *key, int lo, int hi, int *out, sdfed_error *err) {
    uint32_t v;
    int rc = sdfed_gguf_get_u32(g, key, &v, err);
    if (rc) return rc;
    if (v < (uint32_t)lo || v > (uint32_t)hi)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "model: %s = %u is outside %d..%d", key, v, lo, hi);
    *out = (int)v;
    return SDFED_OK;
}

static int get_triplet(const sdfed_gguf *g, const char *key, float out[3], sdfed_error *err) {
    const sdfed_gguf_kv *kv;
    int rc = sdfed_gguf_get_array(g, key, SDFED_GGUF_FLOAT32, &kv, err);
    if (rc) return rc;
    if (kv->count != 3) return sdfed_fail(err, SDFED_ERR_FORMAT, "model: %s must hold 3 values", key);
    for (int i = 0; i < 3; i++) out[i] = sdfed_gguf_array_f32(kv, i);
    return SDFED_OK;
}

static int read_config(const sdfed_gguf *g, sdfed_clip_config *c, sdfed_error *err) {
    sdfed_str s;
    int rc = sdfed_gguf_get_str(g, "general.architecture", &s, err);
    if (rc) return rc;
    if (!sdfed_str_eq(s, "clip"))
        return sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "model: architecture '%.*s' is not clip", (int)s.len, s.ptr);
    if ((rc = get_int(g, "clip.embed_dim", 1, 65536, &c->embed_dim, err)) ||
        (rc = get_int(g, "clip.context_length", 2, 4096, &c->context_length, err)) ||
        (rc = get_int(g, "clip.text.width", 64, 65536, &c->text_width, err)) ||
        (rc = get_int(g, "clip.text.layers", 1, 256, &c->text_layers, err)) ||
        (rc = get_int(g, "clip.text.heads", 1, 1024, &c->text_heads, err)) ||
        (rc = get_int(g, "clip.vision.width", 64, 65536, &c->vision_width, err)) ||
        (rc = get_int(g, "clip.vision.layers", 1, 256, &c->vision_layers, err)) ||
        (rc = get_int(g, "clip.vision.heads", 1, 1024, &c->vision_heads, err)) ||
        (rc = get_int(g, "clip.vision.patch_size", 1, 1024, &c->patch_size, err)) ||
        (rc = get_int(g, "clip.vision.image_size", 1, 8192, &c->image_size, err)) ||
        (rc = sdfed_gguf_get_f32(g, "clip.layer_norm_epsilon", &c->layer_norm_eps, err)) ||
        (rc = get_triplet(g, "clip.vision.image_mean", c->image_mean, err)) ||
        (rc = get_triplet(g, "clip.vision.image_std", c->image_std, err)) ||
        (rc = sdfed_gguf_get_str(g, "clip.activation", &s, err)))
        return rc;
    char act[32];
    snprintf(act, sizeof act, "%.*s", (int)(s.len < 31 ? s.len : 31), s.ptr);
    c->activation = sdfed_activation_from_name(act);
    if (c->activation < 0)
        return sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "model: activation '%s' is not quick_gelu or gelu", act);
    if (c->text_width % c->text_heads || c->vision_width % c->vision_heads)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "model: width is not a multiple of the head count");
    if (c->image_size % c->patch_size)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "model: image size %d is not a multiple of the patch size %d",
                          c->image_size, c->patch_size);
    for (int i = 0; i < 3; i++)
        if (!(c->image_std[i] > 0.0f))
            return sdfed_fail(err, SDFED_ERR_FORMAT, "model: clip.vision.image_std must be positive");
    return SDFED_OK;
}

/* Finds a tensor and checks its shape (outermost first: rows, cols). */
static int find(const sdfed_gguf *g, const char *name, int64_t rows, int64_t cols, const sdfed_gguf_tensor **out,
                sdfed_error *err) {
    const sdfed_gguf_tensor *t = sdfed_gguf_find_tensor(g, name);
    if (!t) return sdfed_fail(err, SDFED_ERR_NOT_FOUND, "model: tensor '%s' is missing", name);
    int want_dims = rows > 0 ? 2 : 1;
    uint64_t ne0 = (uint64_t)cols, ne1 = rows > 0 ? (uint64_t)rows : 1;
    if (t->n_dims != want_dims || t->ne[0] != ne0 || t->ne[1] != ne1)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "model: tensor '%s' has shape [%llu, %llu], expected [%llu, %llu]",
                          name, (unsigned long long)t->ne[1], (unsigned long long)t->ne[0], (unsigned long long)ne1,
                          (unsigned long long)ne0);
    if ((uintptr_t)t->data % 4) return sdfed_fail(err, SDFED_ERR_ARG, "model: the file buffer is not 4-byte aligned");
    *out = t;
    return SDFED_OK;
}

static int find_f32(const sdfed_gguf *g, const char *name, int64_t rows, int64_t cols, const float **out,
                    sdfed_error *err) {
    const sdfed_gguf_tensor *t;
    int rc = find(g, name, rows, cols, &t, err);
    if (rc) return rc;
    if (t->type != SDFED_TYPE_F32)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "model: tensor '%s' must be f32, not %s", name,
                          sdfed_type_name(t->type));
    *out = t->data;
    return SDFED_OK;
}

static int find_weight(const sdfed_gguf *g, const char *name, int rows, int cols, sdfed_weight *w, sdfed_error *err) {
    const sdfed_gguf_tensor *t;
    int rc = find(g, name, rows, cols, &t, err);
    if (rc) return rc;
    w->type = t->type;
    w->rows = rows;
    w->cols = cols;
    w->data = t->data;
    return SDFED_OK;
}

enum { BLOCK_TENSOR_NAME_BYTES = 128 };

/* "TOWER.blk.I.SUFFIX", written in name */
static const char *block_tensor(char name[BLOCK_TENSOR_NAME_BYTES], const char *tower, int i, const char *suffix) {
    snprintf(name, BLOCK_TENSOR_NAME_BYTES, "%s.blk.%d.%s", tower, i, suffix);
    return name;
}

static int load_block(const sdfed_gguf *g, const char *tower, int i, int width, sdfed_clip_block *b, sdfed_error *err) {
    char name[BLOCK_TENSOR_NAME_BYTES];
    int rc;
    if ((rc = find_f32(g, block_tensor(name, tower, i, "ln1.weight"), 0, width, &b->ln1_w, err)) ||
        (rc = find_f32(g, block_tensor(name, tower, i, "ln1.bias"), 0, width, &b->ln1_b, err)) ||
        (rc = find_weight(g, block_tensor(name, tower, i, "attn_qkv.weight"), 3 * width, width, &b->attn_qkv, err)) ||
        (rc = find_f32(g, block_tensor(name, tower, i, "attn_qkv.bias"), 0, 3 * width, &b->attn_qkv_b, err)) ||
        (rc = find_weight(g, block_tensor(name, tower, i, "attn_out.weight"), width, width, &b->attn_out, err)) ||
        (rc = find_f32(g, block_tensor(name, tower, i, "attn_out.bias"), 0, width, &b->attn_out_b, err)) ||
        (rc = find_f32(g, block_tensor(name, tower, i, "ln2.weight"), 0, width, &b->ln2_w, err)) ||
        (rc = find_f32(g, block_tensor(name, tower, i, "ln2.bias"), 0, width, &b->ln2_b, err)) ||
        (rc = find_weight(g, block_tensor(name, tower, i, "mlp_fc.weight"), 4 * width, width, &b->mlp_fc, err)) ||
        (rc = find_f32(g, block_tensor(name, tower, i, "mlp_fc.bias"), 0, 4 * width, &b->mlp_fc_b, err)) ||
        (rc = find_weight(g, block_tensor(name, tower, i, "mlp_proj.weight"), width, 4 * width, &b->mlp_proj, err)) ||
        (rc = find_f32(g, block_tensor(name, tower, i, "mlp_proj.bias"), 0, width, &b->mlp_proj_b, err)))
        return rc;
    return SDFED_OK;
}

static int load_tensors(sdfed_clip_model *m, sdfed_error *err) {
    const sdfed_gguf *g = &m->file;
    const sdfed_clip_config *c = &m->cfg;
    int grid = c->image_size / c->patch_size;
    int patch_values = 3 * c->patch_size * c->patch_size;
    const float *scale;
    int rc;
    if ((rc = find_f32(g, "logit_scale", 0, 1, &scale, err)) ||
        (rc = find_weight(g, "text.token_embd.weight", c->vocab_size, c->text_width, &m->token_embd, err)) ||
        (rc = find_f32(g, "text.pos_embd", c->context_length, c->text_width, &m->text_pos, err)) ||
        (rc = find_f32(g, "text.ln_final.weight", 0, c->text_width, &m->ln_final_w, err)) ||
        (rc = find_f32(g, "text.ln_final.bias", 0, c->text_width, &m->ln_final_b, err)) ||
        (rc = find_weight(g, "text.proj.weight", c->embed_dim, c->text_width, &m->text_proj, err)) ||
        (rc = find_weight(g, "vision.patch_embd.weight", c->vision_width, patch_values, &m->patch_embd, err)) ||
        (rc = find_f32(g, "vision.class_embd", 0, c->vision_width, &m->class_embd, err)) ||
        (rc = find_f32(g, "vision.pos_embd", grid * grid + 1, c->vision_width, &m->vision_pos, err)) ||
        (rc = find_f32(g, "vision.ln_pre.weight", 0, c->vision_width, &m->ln_pre_w, err)) ||
        (rc = find_f32(g, "vision.ln_pre.bias", 0, c->vision_width, &m->ln_pre_b, err)) ||
        (rc = find_f32(g, "vision.ln_post.weight", 0, c->vision_width, &m->ln_post_w, err)) ||
        (rc = find_f32(g, "vision.ln_post.bias", 0, c->vision_width, &m->ln_post_b, err)) ||
        (rc = find_weight(g, "vision.proj.weight", c->embed_dim, c->vision_width, &m->vision_proj, err)))
        return rc;
    m->logit_scale = scale[0];
    m->weight_type = m->text_proj.type;
    m->int8_images = 1;
    m->text_blocks = calloc((size_t)c->text_layers, sizeof *m->text_blocks);
    m->vision_blocks = calloc((size_t)c->vision_layers, sizeof *m->vision_blocks);
    if (!m->text_blocks || !m->vision_blocks) return sdfed_fail(err, SDFED_ERR_NOMEM, "model: out of memory");
    for (int i = 0; i < c->text_layers; i++)
        if ((rc = load_block(g, "text", i, c->text_width, &m->text_blocks[i], err))) return rc;
    for (int i = 0; i < c->vision_layers; i++)
        if ((rc = load_block(g, "vision", i, c->vision_width, &m->vision_blocks[i], err))) return rc;
    return SDFED_OK;
}

int sdfed_clip_load(sdfed_clip_model *m, const void *data, size_t size, sdfed_error *err) {
    memset(m, 0, sizeof *m);
    int rc = sdfed_gguf_open(&m->file, data, size, err);
    if (rc) return rc;
    /* the vocabulary size is the row count of the token embedding */
    const sdfed_gguf_tensor *embd = sdfed_gguf_find_tensor(&m->file, "text.token_embd.weight");
    if (!embd || embd->n_dims != 2 || embd->ne[1] > INT32_MAX)
        rc = sdfed_fail(err, SDFED_ERR_FORMAT, "model: tensor 'text.token_embd.weight' is missing or not a matrix");
    else
        m->cfg.vocab_size = (int)embd->ne[1];
    if (rc == SDFED_OK) rc = read_config(&m->file, &m->cfg, err);
    if (rc == SDFED_OK) rc = load_tensors(m, err);
    if (rc) sdfed_clip_free(m);
    return rc;
}

int sdfed_clip_int8_image_features(const sdfed_clip_model *m) {
    if (!m->int8_images) return 0;
    int q8 = m->patch_embd.type == SDFED_TYPE_Q8_0 || m->vision_proj.type == SDFED_TYPE_Q8_0;
    for (int i = 0; i < m->cfg.vision_layers && !q8; i++) {
        const sdfed_clip_block *b = &m->vision_blocks[i];
        q8 = b->attn_qkv.type == SDFED_TYPE_Q8_0 || b->attn_out.type == SDFED_TYPE_Q8_0 ||
             b->mlp_fc.type == SDFED_TYPE_Q8_0 || b->mlp_proj.type == SDFED_TYPE_Q8_0;
    }
    return q8;
}

/* Packs w with k for linear_int8 (int8 1) or linear, dropping what it held
 * packed before; k NULL (or a backend without a packed layout): unpacked. */
static size_t pack_matrix(sdfed_weight *w, const sdfed_kernels *k, int int8) {
    sdfed_weight_unpack(w);
    return k && k->pack ? k->pack(w, int8) : 0;
}

static size_t pack_blocks(sdfed_clip_block *blocks, int layers, const sdfed_kernels *k, int int8) {
    size_t bytes = 0;
    for (int l = 0; blocks && l < layers; l++) {
        sdfed_clip_block *b = &blocks[l];
        bytes += pack_matrix(&b->attn_qkv, k, int8) + pack_matrix(&b->attn_out, k, int8) +
                 pack_matrix(&b->mlp_fc, k, int8) + pack_matrix(&b->mlp_proj, k, int8);
    }
    return bytes;
}

size_t sdfed_clip_pack(sdfed_clip_model *m, const sdfed_kernels *k, int towers) {
    const sdfed_kernels *text = towers & SDFED_CLIP_TEXT ? k : NULL, *image = towers & SDFED_CLIP_IMAGE ? k : NULL;
    int int8 = m->int8_images;
    return pack_matrix(&m->text_proj, text, 0) + pack_blocks(m->text_blocks, m->cfg.text_layers, text, 0) +
           pack_matrix(&m->patch_embd, image, int8) + pack_matrix(&m->vision_proj, image, int8) +
           pack_blocks(m->vision_blocks, m->cfg.vision_layers, image, int8);
}

void sdfed_clip_free(sdfed_clip_model *m) {
    sdfed_clip_pack(m, NULL, 0);
    sdfed_gguf_close(&m->file);
    free(m->text_blocks);
    free(m->vision_blocks);
    memset(m, 0, sizeof *m);
}
