/* Properties of the encoders that the reference tensors do not cover:
 * splicing a token's own embedding at a prompt slot changes nothing, the
 * shared-prefix plan gives what encoding each sequence alone gives, images
 * and prompts give the same bits in any batch, and every backend agrees with the portable one on
 * whole forward passes; natively, matrices packed once give the bits of their per-call packing. With Q8_0 weights and
 * the F32 model beside them, the accuracy of the integer path: image features within 1 - cosine <= 1e-4 of the F32
 * model's.
 *   argv[1] = a mini-vit GGUF model, argv[2] (Q8_0 only) = the same model in F32 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/dtype.h"
#include "check.h"
#include "clip/clip_model.h"
#include "clip/image_encoder.h"
#include "clip/text_encoder.h"
#include "cosine.h"
#include "read_file.h"
#include "text/tokenizer.h"

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
    sdfed_text_batch batch = {
        .n_seqs = N_TEXTS, .ids = ids, .stride = ctx, .splice = NULL, .splice_pos = NULL, .n_splice = 0};
    CHECK(sdfed_text_encode(m, k, &batch, together, &arena, &err) == SDFED_OK, "batch: %s", err.message);
    for (int i = 0; i < N_TEXTS; i++) {
        sdfed_text_batch one = {
            .n_seqs = 1, .ids = ids + i * ctx, .stride = ctx, .splice = NULL, .splice_pos = NULL, .n_splice = 0};
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
    sdfed_text_batch with_slots = {
        .n_seqs = 4, .ids = ids, .stride = ctx, .splice = vectors, .splice_pos = pos, .n_splice = 3};
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
    sdfed_text_batch bad_slot = {
        .n_seqs = 4, .ids = ids, .stride = ctx, .splice = vectors, .splice_pos = late, .n_splice = 1};
    CHECK(sdfed_text_encode(m, k, &bad_slot, spliced, &arena, &err) == SDFED_ERR_ARG && strstr(err.message, "EOT"),
          "a slot after the EOT: %s", err.message);
    ids[2] = c->vocab_size + 5;
    CHECK(sdfed_text_encode(m, k, &batch, together, &arena, &err) == SDFED_ERR_ARG &&
              strstr(err.message, "outside the vocabulary"),
          "an id outside the vocabulary: %s", err.message);
    sdfed_arena_free(&arena);
    free(ids);
    free(together);
    free(alone);
    free(vectors);
    free(spliced);
}

/* An image's features are the same bits whatever else is in its batch and
 * wherever the batch starts: N images in one batch against batches of every
 * size from 1 to max_batch (17 for F32 weights; for Q8_0 weights a few sizes
 * suffice: test_kernels checks the integer linear across its tile and chunk
 * boundaries against the row-by-row definition), started at every offset.
 * The ways of cutting share most of their batches (the same first image, the
 * same count): each distinct batch is encoded and compared once. */
#define N_IMAGES 20
static void test_image_batches(const sdfed_clip_model *m, const sdfed_kernels *k) {
    int max_batch = m->vision_blocks[0].attn_qkv.type == SDFED_TYPE_F32 ? 17 : 3;
    int S = m->cfg.image_size, E = m->cfg.embed_dim;
    size_t per = (size_t)3 * S * S;
    float *pixels = malloc(sizeof(float) * N_IMAGES * per), *together = malloc(sizeof(float) * N_IMAGES * E),
          *cut = malloc(sizeof(float) * N_IMAGES * E);
    srand(5);
    for (size_t i = 0; i < N_IMAGES * per; i++) pixels[i] = (float)((double)rand() / RAND_MAX * 4.0 - 2.0);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    CHECK(sdfed_image_encode(m, k, pixels, N_IMAGES, together, &arena, &err) == SDFED_OK, "images: %s", err.message);
    bool checked[N_IMAGES][N_IMAGES + 1] = {{false}}; /* [first][count] */
    int differing = 0, batches = 0;
    for (int size = 1; size <= max_batch; size++)
        for (int offset = 0; offset < size; offset++) {
            /* images [0, offset) as one batch, then batches of `size` */
            for (int first = 0; first < N_IMAGES;) {
                int count = N_IMAGES - first < size ? N_IMAGES - first : size;
                if (first < offset) count = offset;
                if (!checked[first][count]) {
                    checked[first][count] = true;
                    sdfed_arena_reset(&arena);
                    sdfed_image_encode(m, k, pixels + first * per, count, cut, &arena, &err);
                    batches++;
                    if (memcmp(cut, together + first * E, sizeof(float) * count * E)) differing++;
                }
                first += count;
            }
        }
    CHECK(differing == 0, "%s: %d of the %d batches of every way of cutting %d images change a feature's bits", k->name,
          differing, batches, N_IMAGES);
    pixels[7] = INFINITY;
    CHECK(sdfed_image_encode(m, k, pixels, 3, together, &arena, &err) == SDFED_ERR_NUMERIC, "Inf pixels refused");
    sdfed_arena_free(&arena);
    free(pixels);
    free(together);
    free(cut);
}

/* A prompt's text features are the same bits whether its batch runs alone
 * or stacked in one pass with another batch, before or after it. */
static void test_text_batches(const sdfed_clip_model *m, const sdfed_tokenizer *tok, const sdfed_kernels *k) {
    int ctx = m->cfg.context_length, E = m->cfg.embed_dim, W = m->cfg.text_width;
    int32_t *ids = calloc((size_t)N_TEXTS * ctx, sizeof *ids);
    tokenize_all(tok, ctx, ids);
    int pos[2] = {1, 2};
    float *prompt_a = malloc(sizeof(float) * 2 * W), *prompt_b = malloc(sizeof(float) * 2 * W);
    for (int d = 0; d < 2 * W; d++) {
        prompt_a[d] = 0.02f * sinf((float)d);
        prompt_b[d] = 0.02f * cosf(0.3f * d);
    }
    /* the first four texts (the fifth is too short for two slots) */
    sdfed_text_batch a = {.n_seqs = 4, .ids = ids, .stride = ctx, .splice = prompt_a, .splice_pos = pos, .n_splice = 2},
                     b = {3, ids + ctx, ctx, prompt_b, pos, 2};
    float *alone = malloc(sizeof(float) * N_TEXTS * E), *first = malloc(sizeof(float) * N_TEXTS * E),
          *second = malloc(sizeof(float) * N_TEXTS * E), *other = malloc(sizeof(float) * 3 * E);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    CHECK(sdfed_text_forward(m, k, &a, 1, &alone, NULL, &arena, &err) == SDFED_OK, "text: %s", err.message);
    sdfed_text_batch ab[2] = {a, b}, ba[2] = {b, a};
    float *out_ab[2] = {first, other}, *out_ba[2] = {other, second};
    sdfed_arena_reset(&arena);
    sdfed_text_forward(m, k, ab, 2, out_ab, NULL, &arena, &err);
    sdfed_arena_reset(&arena);
    sdfed_text_forward(m, k, ba, 2, out_ba, NULL, &arena, &err);
    size_t bytes = sizeof(float) * 4 * E;
    CHECK(!memcmp(alone, first, bytes) && !memcmp(alone, second, bytes),
          "%s: a prompt's text features are the same bits alone, stacked first and stacked second", k->name);
    sdfed_arena_free(&arena);
    free(ids);
    free(prompt_a);
    free(prompt_b);
    free(alone);
    free(first);
    free(second);
    free(other);
}

#if defined(SDFED_HAVE_NATIVE_KERNELS)
/* Two kernel sets that promise the same arithmetic give the same image
 * features, bit for bit, on a batch large enough to be split. */
static void test_same_bits(const sdfed_clip_model *m, const sdfed_kernels *a, const sdfed_kernels *b) {
    int S = m->cfg.image_size, E = m->cfg.embed_dim;
    size_t per = (size_t)3 * S * S;
    float *pixels = malloc(sizeof(float) * N_IMAGES * per), *fa = malloc(sizeof(float) * N_IMAGES * E),
          *fb = malloc(sizeof(float) * N_IMAGES * E);
    for (size_t i = 0; i < N_IMAGES * per; i++) pixels[i] = (float)sin(0.37 * (double)i);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_image_encode(m, a, pixels, N_IMAGES, fa, &arena, NULL);
    sdfed_arena_reset(&arena);
    sdfed_image_encode(m, b, pixels, N_IMAGES, fb, &arena, NULL);
    CHECK(!memcmp(fa, fb, sizeof(float) * N_IMAGES * E), "%s split over %d threads gives the same bits", a->name,
          sdfed_kernels_thread_count());
    sdfed_arena_free(&arena);
    free(pixels);
    free(fa);
    free(fb);
}
#endif

#if defined(SDFED_HAVE_NATIVE_KERNELS)
/* The model's matrices packed once (sdfed_clip_pack) for either image path:
 * text and image features with the bits of k's per-call packing on both
 * paths (one of them then finds its matrices packed for the other); one
 * tower packed alone; and packing with a backend that has no packed layout
 * leaves none. */
static void test_packed(sdfed_clip_model *m, const sdfed_tokenizer *tok, const sdfed_kernels *k) {
    int ctx = m->cfg.context_length, E = m->cfg.embed_dim, S = m->cfg.image_size;
    size_t per = (size_t)3 * S * S, text_floats = (size_t)N_TEXTS * E, image_floats = (size_t)N_IMAGES * E;
    int32_t *ids = calloc((size_t)N_TEXTS * ctx, sizeof *ids);
    tokenize_all(tok, ctx, ids);
    float *pixels = malloc(sizeof(float) * N_IMAGES * per);
    for (size_t i = 0; i < N_IMAGES * per; i++) pixels[i] = (float)sin(0.37 * (double)i);
    float *want = malloc(sizeof(float) * 2 * (text_floats + image_floats));
    float *got = malloc(sizeof(float) * (text_floats + image_floats));
    sdfed_text_batch batch = {
        .n_seqs = N_TEXTS, .ids = ids, .stride = ctx, .splice = NULL, .splice_pos = NULL, .n_splice = 0};
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    for (int int8 = 0; int8 < 2; int8++) { /* per call */
        float *want_int8 = want + (size_t)int8 * (text_floats + image_floats);
        m->int8_images = int8;
        sdfed_arena_reset(&arena);
        sdfed_text_encode(m, k, &batch, want_int8, &arena, NULL);
        sdfed_image_encode(m, k, pixels, N_IMAGES, want_int8 + text_floats, &arena, NULL);
    }
    for (int packed_int8 = 0; packed_int8 < 2; packed_int8++) {
        m->int8_images = packed_int8;
        size_t bytes = sdfed_clip_pack(m, k, SDFED_CLIP_TEXT | SDFED_CLIP_IMAGE);
        for (int int8 = 0; int8 < 2; int8++) {
            m->int8_images = int8;
            memset(got, 0xff, sizeof(float) * (text_floats + image_floats));
            sdfed_arena_reset(&arena);
            sdfed_text_encode(m, k, &batch, got, &arena, NULL);
            sdfed_image_encode(m, k, pixels, N_IMAGES, got + text_floats, &arena, NULL);
            CHECK(bytes > 0 && m->vision_blocks[0].mlp_fc.packed && m->text_blocks[0].attn_qkv.packed &&
                      !memcmp(got, want + (size_t)int8 * (text_floats + image_floats),
                              sizeof(float) * (text_floats + image_floats)),
                  "%s on %d threads, matrices packed once (%zu bytes) for int8_images %d: the per-call bits with "
                  "int8_images %d",
                  k->name, sdfed_kernels_thread_count(), bytes, packed_int8, int8);
        }
    }
    CHECK(sdfed_clip_pack(m, k, SDFED_CLIP_TEXT) > 0 && m->text_proj.packed && m->text_blocks[0].attn_qkv.packed &&
              !m->vision_proj.packed && !m->patch_embd.packed && !m->vision_blocks[0].mlp_fc.packed,
          "the text tower packed alone");
    CHECK(sdfed_clip_pack(m, k, SDFED_CLIP_IMAGE) > 0 && !m->text_proj.packed && !m->text_blocks[0].attn_qkv.packed &&
              m->vision_proj.packed && m->patch_embd.packed && m->vision_blocks[0].mlp_fc.packed,
          "the image tower packed alone");
    CHECK(sdfed_clip_pack(m, &sdfed_kernels_portable, SDFED_CLIP_TEXT | SDFED_CLIP_IMAGE) == 0 &&
              !m->text_proj.packed && !m->vision_proj.packed && !m->vision_blocks[0].mlp_fc.packed &&
              !m->text_blocks[0].attn_qkv.packed,
          "packed for a backend without a packed layout: none");
    m->int8_images = 1;
    sdfed_arena_free(&arena);
    free(ids);
    free(pixels);
    free(want);
    free(got);
}
#endif

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
    sdfed_text_batch batch = {
        .n_seqs = N_TEXTS, .ids = ids, .stride = ctx, .splice = NULL, .splice_pos = NULL, .n_splice = 0};
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
    free(ids);
    free(pixels);
}

/* The Q8_0 model's image features on the integer path against the F32
 * model's, on the default backend, for images of smooth patterns; the Q8_0
 * weights on f32 activations are measured beside it, the two Q8_0 paths
 * must differ (the integer one ran), and the text tower, which stays on f32
 * activations, gives the same bits either way. */
#define N_ACC_IMAGES 8
static void test_int8_accuracy(sdfed_clip_model *q8, const sdfed_clip_model *f32, const sdfed_tokenizer *tok) {
    const sdfed_kernels *k = sdfed_kernels_default();
    int ctx = q8->cfg.context_length, E = q8->cfg.embed_dim, S = q8->cfg.image_size;
    size_t per = (size_t)3 * S * S;
    int32_t *ids = calloc((size_t)N_TEXTS * ctx, sizeof *ids);
    tokenize_all(tok, ctx, ids);
    float *pixels = malloc(sizeof(float) * N_ACC_IMAGES * per);
    for (int i = 0; i < N_ACC_IMAGES; i++)
        for (size_t p = 0; p < per; p++) /* smooth images of different frequencies, in CLIP's normalised range */
            pixels[i * per + p] = (float)(1.5 * sin(0.003 * (double)(i + 1) * (double)p + i));
    enum { F32, INT8, OLD, N_RUNS };
    float *img[N_RUNS], *txt[N_RUNS];
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    sdfed_text_batch batch = {
        .n_seqs = N_TEXTS, .ids = ids, .stride = ctx, .splice = NULL, .splice_pos = NULL, .n_splice = 0};
    for (int run = 0; run < N_RUNS; run++) {
        img[run] = malloc(sizeof(float) * N_ACC_IMAGES * E);
        txt[run] = malloc(sizeof(float) * N_TEXTS * E);
        const sdfed_clip_model *m = run == F32 ? f32 : q8;
        q8->int8_images = run == INT8;
        sdfed_arena_reset(&arena);
        CHECK(sdfed_image_encode(m, k, pixels, N_ACC_IMAGES, img[run], &arena, &err) == SDFED_OK &&
                  sdfed_text_encode(m, k, &batch, txt[run], &arena, &err) == SDFED_OK,
              "accuracy run %d: %s", run, err.message);
    }
    q8->int8_images = 1;
    CHECK(sdfed_clip_int8_image_features(q8) && !sdfed_clip_int8_image_features(f32),
          "integer image features: the Q8_0 model's, not the F32 model's");
    q8->int8_images = 0;
    CHECK(!sdfed_clip_int8_image_features(q8), "no integer image features with int8_images off");
    q8->int8_images = 1;
    double int8 = worst_one_minus_cosine(img[INT8], img[F32], N_ACC_IMAGES, E);
    double old = worst_one_minus_cosine(img[OLD], img[F32], N_ACC_IMAGES, E);
    printf("image features, 1 - cosine against the F32 model, worst of %d: integer path %.2e, Q8_0 weights on f32 "
           "activations %.2e; texts (f32 activations) %.2e\n",
           N_ACC_IMAGES, int8, old, worst_one_minus_cosine(txt[OLD], txt[F32], N_TEXTS, E));
    CHECK(int8 <= 1e-4, "the integer path's image features within 1 - cosine <= 1e-4 of F32 (%.2e)", int8);
    CHECK(memcmp(img[INT8], img[OLD], sizeof(float) * N_ACC_IMAGES * E),
          "the integer path ran (its image features differ from the f32-activation path's)");
    CHECK(!memcmp(txt[INT8], txt[OLD], sizeof(float) * N_TEXTS * E), "the text tower stays on f32 activations");
    for (int run = 0; run < N_RUNS; run++) {
        free(img[run]);
        free(txt[run]);
    }
    sdfed_arena_free(&arena);
    free(ids);
    free(pixels);
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
        test_text_batches(&m, &tok, *k);
    }
    test_backends(&m, &tok);
#if defined(SDFED_HAVE_NATIVE_KERNELS)
    test_packed(&m, &tok, sdfed_kernels_default());
    /* natively also the kernels split over the thread pool: the same bits */
    const sdfed_kernels *split = sdfed_kernels_threaded(sdfed_kernels_default(), 2, NULL);
    CHECK(sdfed_kernels_thread_count() == 2, "the pool started 2 threads (%d)", sdfed_kernels_thread_count());
    test_image_batches(&m, split);
    test_text_batches(&m, &tok, split);
    test_same_bits(&m, sdfed_kernels_default(), split);
    test_packed(&m, &tok, split);
#endif
    if (m.weight_type == SDFED_TYPE_Q8_0) {
        size_t f32_size;
        unsigned char *f32_data = argc > 2 ? read_file(argv[2], &f32_size) : NULL;
        sdfed_clip_model f32;
        CHECK(f32_data && sdfed_clip_load(&f32, f32_data, f32_size, &err) == SDFED_OK &&
                  f32.weight_type == SDFED_TYPE_F32,
              "the F32 model %s beside the Q8_0 one: %s", argc > 2 ? argv[2] : "(not given)", err.message);
        if (f32_data && f32.weight_type == SDFED_TYPE_F32) {
            test_int8_accuracy(&m, &f32, &tok);
            sdfed_clip_free(&f32);
        }
        free(f32_data);
    }
    sdfed_tokenizer_free(&tok);
    sdfed_clip_free(&m);
    free(data);
    return check_report("test_encoders");
}
