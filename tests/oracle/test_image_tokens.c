/* Tests of every output token of the image tower (clip/image_encoder.h,
 * sdfed_image_encode_tokens, sdfed_image_patch_features): on every backend
 * each image's class-token row is sdfed_image_encode's pooled feature bit
 * for bit, in any batch; every row matches the tokens that
 * tests/oracle/image_tokens_oracle.py computes in torch (F32 weights: the
 * reference tolerance, relative error <= 1e-4; quantised weights: cosine
 * >= 0.999 per row, as check-reference judges them); and the patch
 * features of 8-bit images are the unit-length patch rows, without the
 * class token.
 *
 * Usage: test_image_tokens MODEL.gguf DIR   (DIR: the oracle's tokens.txt,
 * pixels.f32, tokens.f32) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/dtype.h"
#include "check.h"
#include "clip/clip_model.h"
#include "clip/image_encoder.h"
#include "clip/layers.h"
#include "read_file.h"

typedef struct oracle {
    int n, T, D;
    float *pixels; /* (n, 3, S, S) */
    float *tokens; /* (n, T, D) */
} oracle;

static int read_oracle(oracle *o, const char *dir, int S) {
    char path[1024];
    size_t size, pixel_bytes, token_bytes;
    snprintf(path, sizeof path, "%s/tokens.txt", dir);
    char *shape = (char *)read_file(path, &size);
    int ok = shape && sscanf(shape, "%d %d %d", &o->n, &o->T, &o->D) == 3;
    free(shape);
    if (!ok) return 0;
    snprintf(path, sizeof path, "%s/pixels.f32", dir);
    o->pixels = (float *)read_file(path, &pixel_bytes);
    snprintf(path, sizeof path, "%s/tokens.f32", dir);
    o->tokens = (float *)read_file(path, &token_bytes);
    return o->pixels && o->tokens && pixel_bytes == sizeof(float) * (size_t)o->n * 3 * S * S &&
           token_bytes == sizeof(float) * (size_t)o->n * o->T * o->D;
}

static double cosine(const float *a, const float *b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return ab / sqrt(aa * bb);
}

/* The class-token rows against the pooled features, the whole batch against
 * one image at a time, and every row against the oracle. */
static void test_tokens(const sdfed_clip_model *m, const sdfed_kernels *k, const oracle *o) {
    int n = o->n, T = o->T, E = o->D, S = m->cfg.image_size;
    size_t per_image = (size_t)3 * S * S, per_tokens = (size_t)T * E;
    float *tokens = malloc(sizeof(float) * n * per_tokens), *alone = malloc(sizeof(float) * n * per_tokens);
    float *pooled = malloc(sizeof(float) * n * E);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    CHECK(sdfed_image_encode_tokens(m, k, o->pixels, n, tokens, &arena, &err) == SDFED_OK, "tokens: %s", err.message);
    sdfed_arena_reset(&arena);
    CHECK(sdfed_image_encode(m, k, o->pixels, n, pooled, &arena, &err) == SDFED_OK, "pooled: %s", err.message);
    int same_class_rows = 1;
    for (int i = 0; i < n; i++)
        same_class_rows &= !memcmp(tokens + i * per_tokens, pooled + (size_t)i * E, sizeof(float) * E);
    CHECK(same_class_rows, "%s: every class-token row is the pooled feature, bit for bit", k->name);

    for (int i = 0; i < n; i++) {
        sdfed_arena_reset(&arena);
        sdfed_image_encode_tokens(m, k, o->pixels + i * per_image, 1, alone + i * per_tokens, &arena, &err);
    }
    CHECK(!memcmp(alone, tokens, sizeof(float) * n * per_tokens),
          "%s: an image's tokens are the same bits alone and in a batch", k->name);

    if (m->vision_blocks[0].attn_qkv.type == SDFED_TYPE_F32) {
        double max_err = 0, max_ref = 0;
        for (size_t i = 0; i < (size_t)n * per_tokens; i++) {
            max_err = fmax(max_err, fabs((double)tokens[i] - o->tokens[i]));
            max_ref = fmax(max_ref, fabs((double)o->tokens[i]));
        }
        CHECK(max_err / max_ref <= 1e-4, "%s: every token matches torch (rel %.2e)", k->name, max_err / max_ref);
    } else {
        double worst = 1;
        for (int r = 0; r < n * T; r++)
            worst = fmin(worst, cosine(tokens + (size_t)r * E, o->tokens + (size_t)r * E, E));
        CHECK(worst >= 0.999, "%s: every token is within cosine 0.999 of torch's (worst %.6f)", k->name, worst);
    }

    CHECK(sdfed_image_encode_tokens(m, k, o->pixels, 0, tokens, &arena, &err) == SDFED_ERR_ARG, "no images refused");
    sdfed_arena_free(&arena);
    free(tokens);
    free(alone);
    free(pooled);
}

/* 8-bit images of several sizes and channel counts: the patch features are
 * the token rows 1..T-1 of the preprocessed pixels, each scaled to unit
 * length, the same bits. */
#define N_IMAGES 3
static void test_patch_features(const sdfed_clip_model *m, const sdfed_kernels *k) {
    const sdfed_clip_config *c = &m->cfg;
    int S = c->image_size, E = c->embed_dim, T = sdfed_image_token_count(c);
    static const int shapes[N_IMAGES][3] = {{70, 50, 3}, {64, 64, 1}, {33, 90, 4}};
    sdfed_image images[N_IMAGES];
    uint8_t *bytes[N_IMAGES];
    srand(11);
    for (int i = 0; i < N_IMAGES; i++) {
        size_t stride = (size_t)shapes[i][0] * shapes[i][2];
        bytes[i] = malloc(stride * shapes[i][1]);
        for (size_t b = 0; b < stride * shapes[i][1]; b++) bytes[i][b] = (uint8_t)(rand() & 255);
        images[i] = (sdfed_image){bytes[i], shapes[i][0], shapes[i][1], shapes[i][2], stride};
    }
    size_t per_image = (size_t)3 * S * S;
    float *pixels = malloc(sizeof(float) * N_IMAGES * per_image), *tokens = malloc(sizeof(float) * N_IMAGES * T * E);
    float *want = malloc(sizeof(float) * N_IMAGES * (T - 1) * E), *got = malloc(sizeof(float) * N_IMAGES * (T - 1) * E);
    float *norms = malloc(sizeof(float) * T);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    for (int i = 0; i < N_IMAGES; i++)
        sdfed_image_preprocess(&images[i], S, c->image_mean, c->image_std, pixels + i * per_image, &err);
    CHECK(sdfed_image_encode_tokens(m, k, pixels, N_IMAGES, tokens, &arena, &err) == SDFED_OK, "tokens: %s",
          err.message);
    for (int i = 0; i < N_IMAGES; i++)
        sdfed_l2_normalize_forward(want + (size_t)i * (T - 1) * E, norms, tokens + ((size_t)i * T + 1) * E, T - 1, E);
    sdfed_arena_reset(&arena);
    CHECK(sdfed_image_patch_features(m, k, images, N_IMAGES, got, &arena, &err) == SDFED_OK, "patches: %s",
          err.message);
    CHECK(!memcmp(got, want, sizeof(float) * N_IMAGES * (T - 1) * E),
          "%s: patch features are the unit-length patch rows of the tokens, bit for bit", k->name);
    double worst = 0;
    for (int r = 0; r < N_IMAGES * (T - 1); r++) {
        double ss = 0;
        for (int d = 0; d < E; d++) ss += (double)got[(size_t)r * E + d] * got[(size_t)r * E + d];
        worst = fmax(worst, fabs(sqrt(ss) - 1));
    }
    CHECK(worst < 1e-5, "%s: every patch feature has unit length (worst |norm - 1| %.2e)", k->name, worst);

    images[1].channels = 2;
    sdfed_arena_reset(&arena);
    CHECK(sdfed_image_patch_features(m, k, images, N_IMAGES, got, &arena, &err) != SDFED_OK &&
              strstr(err.message, "image 1"),
          "a bad image is refused by its index: %s", err.message);
    sdfed_arena_free(&arena);
    for (int i = 0; i < N_IMAGES; i++) free(bytes[i]);
    free(pixels);
    free(tokens);
    free(want);
    free(got);
    free(norms);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_image_tokens MODEL.gguf DIR\n");
        return 2;
    }
    size_t size;
    unsigned char *data = read_file(argv[1], &size);
    sdfed_clip_model m;
    sdfed_error err = {0};
    CHECK(data != NULL, "read %s", argv[1]);
    if (!data || sdfed_clip_load(&m, data, size, &err)) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], err.message);
        return check_report("test_image_tokens") | 1;
    }
    oracle o = {0};
    int have_oracle = read_oracle(&o, argv[2], m.cfg.image_size);
    CHECK(have_oracle && o.T == sdfed_image_token_count(&m.cfg) && o.D == m.cfg.embed_dim,
          "the oracle's files in %s, of this model's shape", argv[2]);
    for (const sdfed_kernels *const *k = sdfed_kernels_all(); *k; k++) {
        if (have_oracle) test_tokens(&m, *k, &o);
        test_patch_features(&m, *k);
    }
#if defined(SDFED_HAVE_NATIVE_KERNELS)
    /* natively also the kernels split over the thread pool */
    const sdfed_kernels *split = sdfed_kernels_threaded(sdfed_kernels_default(), 2, NULL);
    if (have_oracle) test_tokens(&m, split, &o);
#endif
    free(o.pixels);
    free(o.tokens);
    sdfed_clip_free(&m);
    free(data);
    return check_report("test_image_tokens");
}
