/* Properties of the encoders that the reference tensors do not cover:
 * splicing a token's own embedding at a prompt slot changes nothing, the
 * shared-prefix plan gives what encoding each sequence alone gives, images
 * batch independently, and every backend agrees with the portable one on
 * whole forward passes.   argv[1] = a mini-vit GGUF model */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "check.h"
#include "read_file.h"
#include "clip_model.h"
#include "dtype.h"
#include "image_encoder.h"
#include "text_encoder.h"
#include "tokenizer.h"

static double max_rel(const float *a, const float *b, size_t n) {
    double err = 0, ref = 0;
    for (size_t i = 0; i < n; i++) {
        err = fmax(err, fabs((double)a[i] - b[i]));
        ref = fmax(ref, fabs((double)b[i]));
    }
    return ref > 0 ? err / ref : err;
}

static const char *texts[] = {"a photo of a dress.", "a photo of a trouser.", "a photo of an ankle boot.",
                              "a photo of a t-shirt/top, worn.", "sneaker"};
#define N_TEXTS 5

static void tokenize_all(const sdfed_tokenizer *tok, int ctx, int32_t *ids) {
    for (int i = 0; i < N_TEXTS; i++) {
        int n;
        sdfed_tokenize(tok, texts[i], strlen(texts[i]), ctx, ids + i * ctx, &n, NULL);
    }
}

static void test_prefix_and_splice(const sdfed_clip_model *m, const sdfed_tokenizer *tok, const sdfed_kernels *k) {
    const sdfed_clip_config *c = &m->cfg;
    int ctx = c->context_length, E = c->embed_dim, W = c->text_width;
    int32_t *ids = calloc((size_t)N_TEXTS * ctx, sizeof *ids);
    float *together = malloc(sizeof(float) * N_TEXTS * E), *alone = malloc(sizeof(float) * N_TEXTS * E);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    tokenize_all(tok, ctx, ids);

    /* the first four texts share "a photo of a" after SOT: one batch (shared
     * prefix) against one call per sequence (no sharing possible) */
    sdfed_text_batch batch = {N_TEXTS, ids, ctx, NULL, NULL, 0};
    CHECK(sdfed_text_encode(m, k, &batch, together, &arena, &err) == SDFED_OK, "batch: %s", err.message);
    for (int i = 0; i < N_TEXTS; i++) {
        sdfed_text_batch one = {1, ids + i * ctx, ctx, NULL, NULL, 0};
        sdfed_arena_reset(&arena);
        CHECK(sdfed_text_encode(m, k, &one, alone + i * E, &arena, &err) == SDFED_OK, "single: %s", err.message);
    }
    double rel = max_rel(together, alone, (size_t)N_TEXTS * E);
    CHECK(rel < 1e-5, "%s: shared-prefix batch equals one-by-one encoding (rel %.2e)", k->name, rel);

    /* splicing the embedding rows of the tokens at positions 1..3 (the
     * prompt-slot mechanism) must reproduce the plain encoding */
    int pos[3] = {1, 2, 3};
    float *vectors = malloc(sizeof(float) * 3 * W);
    size_t row_bytes = sdfed_type_row_bytes(m->token_embd.type, (uint64_t)W);
    for (int j = 0; j < 3; j++)
        sdfed_row_to_f32(m->token_embd.type, vectors + j * W,
                         (const char *)m->token_embd.data + (size_t)ids[pos[j]] * row_bytes, W);
    float *spliced = malloc(sizeof(float) * 4 * E);
    sdfed_text_batch with_slots = {4, ids, ctx, vectors, pos, 3};
    sdfed_arena_reset(&arena);
    CHECK(sdfed_text_encode(m, k, &with_slots, spliced, &arena, &err) == SDFED_OK, "spliced: %s", err.message);
    rel = max_rel(spliced, together, (size_t)4 * E);
    CHECK(rel < 1e-5, "%s: splicing the tokens' own embeddings changes nothing (rel %.2e)", k->name, rel);

    /* a different vector at a slot must change the feature (not by a constant
     * shift, which LayerNorm removes exactly) */
    for (int d = 0; d < W; d++) vectors[d] += 0.5f * sinf((float)d);
    sdfed_arena_reset(&arena);
    sdfed_text_encode(m, k, &with_slots, spliced, &arena, &err);
    CHECK(max_rel(spliced, together, (size_t)4 * E) > 1e-3, "%s: a different prompt vector changes the feature",
          k->name);

    /* invalid batches are refused with a message */
    vectors[5] = NAN;
    sdfed_arena_reset(&arena);
    CHECK(sdfed_text_encode(m, k, &with_slots, spliced, &arena, &err) == SDFED_ERR_NUMERIC, "NaN in a prompt vector");
    int late[1] = {40};
    sdfed_text_batch bad_slot = {4, ids, ctx, vectors, late, 1};
    CHECK(sdfed_text_encode(m, k, &bad_slot, spliced, &arena, &err) == SDFED_ERR_ARG && strstr(err.message, "EOT"),
          "a slot after the EOT: %s", err.message);
    ids[2] = c->vocab_size + 5;
    CHECK(sdfed_text_encode(m, k, &batch, together, &arena, &err) == SDFED_ERR_ARG &&
              strstr(err.message, "outside the vocabulary"),
          "an id outside the vocabulary: %s", err.message);
    sdfed_arena_free(&arena);
    free(ids), free(together), free(alone), free(vectors), free(spliced);
}

static void test_image_batches(const sdfed_clip_model *m, const sdfed_kernels *k) {
    int S = m->cfg.image_size, E = m->cfg.embed_dim;
    size_t per = (size_t)3 * S * S;
    float *pixels = malloc(sizeof(float) * 3 * per), *together = malloc(sizeof(float) * 3 * E),
          *alone = malloc(sizeof(float) * 3 * E);
    srand(5);
    for (size_t i = 0; i < 3 * per; i++) pixels[i] = (float)((double)rand() / RAND_MAX * 4.0 - 2.0);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    CHECK(sdfed_image_encode(m, k, pixels, 3, together, &arena, &err) == SDFED_OK, "images: %s", err.message);
    for (int i = 0; i < 3; i++) {
        sdfed_arena_reset(&arena);
        sdfed_image_encode(m, k, pixels + i * per, 1, alone + i * E, &arena, &err);
    }
    double rel = max_rel(together, alone, (size_t)3 * E);
    CHECK(rel < 1e-5, "%s: a batch of images equals one at a time (rel %.2e)", k->name, rel);
    pixels[7] = INFINITY;
    CHECK(sdfed_image_encode(m, k, pixels, 3, together, &arena, &err) == SDFED_ERR_NUMERIC, "Inf pixels refused");
    sdfed_arena_free(&arena);
    free(pixels), free(together), free(alone);
}

/* Whole forward passes on every backend against the portable kernels. */
static void test_backends(const sdfed_clip_model *m, const sdfed_tokenizer *tok) {
    int ctx = m->cfg.context_length, E = m->cfg.embed_dim, S = m->cfg.image_size;
    int32_t *ids = calloc((size_t)N_TEXTS * ctx, sizeof *ids);
    tokenize_all(tok, ctx, ids);
    float *pixels = malloc(sizeof(float) * 3 * S * S);
    for (int i = 0; i < 3 * S * S; i++) pixels[i] = (float)sin(i * 0.01);
    float ref_t[N_TEXTS * 64], ref_i[64], got_t[N_TEXTS * 64], got_i[64];
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_text_batch batch = {N_TEXTS, ids, ctx, NULL, NULL, 0};
    if (E <= 64) {
        sdfed_text_encode(m, &sdfed_kernels_portable, &batch, ref_t, &arena, NULL);
        sdfed_image_encode(m, &sdfed_kernels_portable, pixels, 1, ref_i, &arena, NULL);
        for (const sdfed_kernels *const *k = sdfed_kernels_all(); *k; k++) {
            sdfed_arena_reset(&arena);
            sdfed_text_encode(m, *k, &batch, got_t, &arena, NULL);
            sdfed_image_encode(m, *k, pixels, 1, got_i, &arena, NULL);
            CHECK(max_rel(got_t, ref_t, (size_t)N_TEXTS * E) < 1e-5 && max_rel(got_i, ref_i, (size_t)E) < 1e-5,
                  "%s: text and image features equal the portable backend's", (*k)->name);
        }
    }
    sdfed_arena_free(&arena);
    free(ids), free(pixels);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_encoders MODEL.gguf\n");
        return 2;
    }
    size_t size;
    unsigned char *data = read_file(argv[1], &size);
    sdfed_clip_model m;
    sdfed_tokenizer tok;
    sdfed_error err = {0};
    CHECK(data != NULL, "read %s", argv[1]);
    if (!data || sdfed_clip_load(&m, data, size, &err) || sdfed_tokenizer_init_gguf(&tok, &m.file, &err)) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], err.message);
        return check_report("test_encoders") | 1;
    }
    for (const sdfed_kernels *const *k = sdfed_kernels_all(); *k; k++) {
        test_prefix_and_splice(&m, &tok, *k);
        test_image_batches(&m, *k);
    }
    test_backends(&m, &tok);
    sdfed_tokenizer_free(&tok);
    sdfed_clip_free(&m);
    free(data);
    return check_report("test_encoders");
}
