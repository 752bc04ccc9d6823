/* Image tower forward, whose linears are the kernels' linear_int8 unless
 * the model turns that off (clip_model.h). */
#include "clip/image_encoder.h"

#include <math.h>
#include <string.h>

#include "clip/layers.h"
#include "clip/transformer.h"

/* patches (G*G, 3*P*P) of one image (3, S, S); a patch vector is laid out
 * channel, row, column, matching the convolution kernel. */
static void patchify(float *patches, const float *img, int S, int P) {
    int G = S / P;
    for (int py = 0; py < G; py++)
        for (int px = 0; px < G; px++) {
            float *dst = patches + ((size_t)py * G + px) * 3 * P * P;
            for (int c = 0; c < 3; c++)
                for (int ky = 0; ky < P; ky++) {
                    const float *src = img + ((size_t)c * S + (size_t)py * P + ky) * S + (size_t)px * P;
                    memcpy(dst + ((size_t)c * P + ky) * P, src, sizeof(float) * (size_t)P);
                }
        }
}

/* The vision transformer's output tokens before ln_post: *hidden (n * T, W)
 * in the arena, T = sdfed_image_token_count tokens per image, the class
 * token first. *scratch receives the linear kernels' scratch for weights of
 * up to max(3 P P, W) inputs. */
static int encode_hidden(const sdfed_clip_model *m, const sdfed_kernels *k, const float *pixels, int n, float **hidden,
                         float **scratch, sdfed_arena *arena, sdfed_error *err) {
    const sdfed_clip_config *c = &m->cfg;
    int S = c->image_size, P = c->patch_size, G = S / P, W = c->vision_width;
    int T = sdfed_image_token_count(c);
    int patch_len = 3 * P * P;
    if (n < 1 || !pixels) return sdfed_fail(err, SDFED_ERR_ARG, "image: no images given");
    size_t n_pixels = (size_t)n * 3 * S * S;
    for (size_t i = 0; i < n_pixels; i++)
        if (!isfinite(pixels[i])) return sdfed_fail(err, SDFED_ERR_NUMERIC, "image: pixel values hold NaN or Inf");

    int N = n * T;
    float *patches = sdfed_arena_floats(arena, (size_t)n * G * G * patch_len);
    float *emb = sdfed_arena_floats(arena, (size_t)n * G * G * W);
    float *x = sdfed_arena_floats(arena, (size_t)N * W);
    *scratch = sdfed_arena_floats(arena, sdfed_kernel_scratch_floats(k, patch_len > W ? patch_len : W));
    sdfed_attn_span *spans = sdfed_arena_alloc(arena, sizeof *spans * (size_t)n);
    if (!patches || !emb || !x || !*scratch || !spans) return sdfed_fail(err, SDFED_ERR_NOMEM, "image: out of memory");

    for (int i = 0; i < n; i++) patchify(patches + (size_t)i * G * G * patch_len, pixels + (size_t)i * 3 * S * S, S, P);
    (m->int8_images ? k->linear_int8 : k->linear)(emb, patches, &m->patch_embd, NULL, n * G * G, *scratch);
    for (int i = 0; i < n; i++) {
        float *x_i = x + (size_t)i * T * W;
        for (int t = 0; t < T; t++) {
            const float *src = t == 0 ? m->class_embd : emb + ((size_t)i * G * G + t - 1) * W;
            const float *pe = m->vision_pos + (size_t)t * W;
            for (int ch = 0; ch < W; ch++) x_i[(size_t)t * W + ch] = src[ch] + pe[ch];
        }
        spans[i] = (sdfed_attn_span){.q0 = i * T, .nq = T, .c0 = 0, .nc = 0};
    }
    sdfed_layernorm_forward(x, NULL, NULL, x, m->ln_pre_w, m->ln_pre_b, N, W, c->layer_norm_eps);

    sdfed_transformer t = {.blocks = m->vision_blocks,
                           .n_layers = c->vision_layers,
                           .C = W,
                           .heads = c->vision_heads,
                           .activation = c->activation,
                           .causal = 0,
                           .eps = c->layer_norm_eps,
                           .spans = spans,
                           .n_spans = n,
                           .N = N,
                           .int8 = m->int8_images,
                           .att_offset = NULL,
                           .acts = NULL};
    *hidden = x;
    return sdfed_transformer_forward(k, &t, x, 0, arena, err);
}

/* out (rows, embed_dim) = ln_post(hidden row r * stride for each r) @ proj:
 * stride T takes each image's class token, stride 1 every token. Each row's
 * arithmetic is the same whichever rows are projected with it. */
static int project_tokens(const sdfed_clip_model *m, const sdfed_kernels *k, float *out, const float *hidden, int rows,
                          int stride, float *scratch, sdfed_arena *arena, sdfed_error *err) {
    const sdfed_clip_config *c = &m->cfg;
    int W = c->vision_width;
    float *normed = sdfed_arena_floats(arena, (size_t)rows * W);
    if (!normed) return sdfed_fail(err, SDFED_ERR_NOMEM, "image: out of memory");
    for (int r = 0; r < rows; r++)
        sdfed_layernorm_forward(normed + (size_t)r * W, NULL, NULL, hidden + (size_t)r * stride * W, m->ln_post_w,
                                m->ln_post_b, 1, W, c->layer_norm_eps);
    (m->int8_images ? k->linear_int8 : k->linear)(out, normed, &m->vision_proj, NULL, rows, scratch);
    return SDFED_OK;
}

int sdfed_image_token_count(const sdfed_clip_config *c) {
    int G = c->image_size / c->patch_size;
    return G * G + 1;
}

int sdfed_image_encode(const sdfed_clip_model *m, const sdfed_kernels *k, const float *pixels, int n, float *features,
                       sdfed_arena *arena, sdfed_error *err) {
    float *hidden, *scratch;
    int rc = encode_hidden(m, k, pixels, n, &hidden, &scratch, arena, err);
    if (rc) return rc;
    return project_tokens(m, k, features, hidden, n, sdfed_image_token_count(&m->cfg), scratch, arena, err);
}

int sdfed_image_encode_tokens(const sdfed_clip_model *m, const sdfed_kernels *k, const float *pixels, int n,
                              float *tokens, sdfed_arena *arena, sdfed_error *err) {
    float *hidden, *scratch;
    int rc = encode_hidden(m, k, pixels, n, &hidden, &scratch, arena, err);
    if (rc) return rc;
    return project_tokens(m, k, tokens, hidden, n * sdfed_image_token_count(&m->cfg), 1, scratch, arena, err);
}

/* pixels (n, 3, S, S) in the arena: the n images preprocessed as CLIP does,
 * with the model's mean and std. */
static int preprocess_all(const sdfed_clip_model *m, const sdfed_image *images, int n, float **pixels,
                          sdfed_arena *arena, sdfed_error *err) {
    const sdfed_clip_config *c = &m->cfg;
    size_t per = (size_t)3 * c->image_size * c->image_size;
    if (n < 1 || !images) return sdfed_fail(err, SDFED_ERR_ARG, "image: no images given");
    *pixels = sdfed_arena_floats(arena, (size_t)n * per);
    if (!*pixels) return sdfed_fail(err, SDFED_ERR_NOMEM, "image preprocessing: out of memory");
    for (int i = 0; i < n; i++) {
        int rc = sdfed_image_preprocess(&images[i], c->image_size, c->image_mean, c->image_std, *pixels + i * per, err);
        if (rc) return sdfed_fail_context(err, rc, "image %d", i);
    }
    return SDFED_OK;
}

int sdfed_image_features(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_image *images, int n,
                         float *features, sdfed_arena *arena, sdfed_error *err) {
    int E = m->cfg.embed_dim;
    float *pixels;
    int rc = preprocess_all(m, images, n, &pixels, arena, err);
    if (rc) return rc;
    float *raw = sdfed_arena_floats(arena, (size_t)n * E), *norms = sdfed_arena_floats(arena, (size_t)n);
    if (!raw || !norms) return sdfed_fail(err, SDFED_ERR_NOMEM, "image features: out of memory");
    rc = sdfed_image_encode(m, k, pixels, n, raw, arena, err);
    if (rc == SDFED_OK) sdfed_l2_normalize_forward(features, norms, raw, n, E);
    return rc;
}

int sdfed_image_patch_features(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_image *images, int n,
                               float *patches, sdfed_arena *arena, sdfed_error *err) {
    int E = m->cfg.embed_dim, T = sdfed_image_token_count(&m->cfg);
    float *pixels;
    int rc = preprocess_all(m, images, n, &pixels, arena, err);
    if (rc) return rc;
    float *tokens = sdfed_arena_floats(arena, (size_t)n * T * E), *norms = sdfed_arena_floats(arena, (size_t)T);
    if (!tokens || !norms) return sdfed_fail(err, SDFED_ERR_NOMEM, "image patch features: out of memory");
    rc = sdfed_image_encode_tokens(m, k, pixels, n, tokens, arena, err);
    if (rc) return rc;
    sdfed_image_patches_from_tokens(&m->cfg, tokens, n, patches, norms);
    return SDFED_OK;
}

void sdfed_image_patches_from_tokens(const sdfed_clip_config *c, const float *tokens, int n, float *patches,
                                     float *norms) {
    int E = c->embed_dim, T = sdfed_image_token_count(c);
    for (int i = 0; i < n; i++) {
        const float *patch_tokens = tokens + ((size_t)i * T + 1) * E; /* past the class token */
        sdfed_l2_normalize_forward(patches + (size_t)i * (T - 1) * E, norms, patch_tokens, T - 1, E);
    }
}
