/* sdfed encode-text / encode-image: CLIP features, one line of numbers per
 * input (unnormalised like CLIP's encode_*, or unit length with --normalize). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clip/image_encoder.h"
#include "clip/image_preprocess.h"
#include "clip/text_encoder.h"

#if !defined(__wasm__)
#include "native/image_decode.h"
#endif

/* Images encoded per call: bounds the activation memory. */
#define IMAGE_BATCH 8

const char cmd_encode_text_help[] =
    "usage: sdfed encode-text [--model MODEL.gguf] [--normalize] [--backend NAME] TEXT...\n"
    "\n"
    "Prints CLIP's text features of each text, one line of numbers per text (unnormalised, as CLIP's\n"
    "encode_text gives them, or of unit length with --normalize).\n"
    "\n"
    "  --model FILE   the model (the default model)\n"
    "  --normalize    unit-length features\n"
    "  --backend NAME the kernels (see 'sdfed help' for this build's)\n";

const char cmd_encode_image_help[] =
    "usage: sdfed encode-image [--model MODEL.gguf] [--normalize] [--backend NAME] [--f32-images] IMAGE...\n"
    "\n"
    "Prints CLIP's image features of each PNG or JPEG file, one line of numbers per image (unnormalised,\n"
    "as CLIP's encode_image gives them, or of unit length with --normalize). Images are read as a folder\n"
    "dataset's are: transparency composited onto white, JPEG orientation honoured, very large images\n"
    "decoded at reduced size; then CLIP's preprocessing (bicubic resize, centre crop).\n"
    "\n"
    "  --model FILE   the model (the default model)\n"
    "  --normalize    unit-length features\n"
    "  --backend NAME the kernels (see 'sdfed help' for this build's)\n"
    "  --f32-images   a Q8_0 image tower on f32 activations (the weights dequantised), as the page's WebGPU path\n";

static void print_features(const float *f, int n, int dim, int normalize) {
    for (int i = 0; i < n; i++) {
        const float *row = f + (size_t)i * dim;
        double norm = 0.0;
        for (int d = 0; d < dim; d++) norm += (double)row[d] * row[d];
        double scale = normalize && norm > 0.0 ? 1.0 / sqrt(norm) : 1.0;
        for (int d = 0; d < dim; d++) printf(d ? " %.7g" : "%.7g", row[d] * scale);
        printf("\n");
    }
}

typedef struct encode_args {
    const char *model, *backend;
    int normalize, f32_images;
    char **inputs;
    int n_inputs;
} encode_args;

static int parse_encode(const char *name, int argc, char **argv, encode_args *a) {
    memset(a, 0, sizeof *a);
    const native_cli_option options[] = {{.name = "--model", .value = &a->model, .flag = NULL},
                                         {.name = "--backend", .value = &a->backend, .flag = NULL},
                                         {.name = "--normalize", .value = NULL, .flag = &a->normalize},
                                         {.name = "--f32-images", .value = NULL, .flag = &a->f32_images}};
    a->inputs = calloc((size_t)argc + 1, sizeof *a->inputs);
    if (!a->inputs) return native_cli_error(CLI_FAILED, "%s: out of memory", name);
    int status = native_cli_parse(argc, argv, options, 4, &a->inputs, &a->n_inputs);
    if (status == CLI_OK && a->n_inputs == 0) status = native_cli_error(CLI_USAGE, "%s: give at least one input", name);
    if (status == CLI_OK && !native_backend(a->backend))
        status =
            native_cli_error(CLI_USAGE, "%s: backend '%s' is not in this build (see 'sdfed help')", name, a->backend);
    if (status) free(a->inputs);
    return status;
}

int cmd_encode_text(int argc, char **argv) {
    encode_args a;
    int status = parse_encode("encode-text", argc, argv, &a);
    if (status) return status;
    native_model m;
    sdfed_error err = {0};
    if (native_model_open(&m, a.model, &err)) {
        free(a.inputs);
        return native_cli_error(CLI_FAILED, "encode-text: %s", err.message);
    }
    int ctx = m.clip.cfg.context_length, dim = m.clip.cfg.embed_dim;
    int32_t *ids = calloc((size_t)a.n_inputs * ctx, sizeof *ids);
    float *features = malloc(sizeof *features * (size_t)a.n_inputs * dim);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    int rc = ids && features ? SDFED_OK : sdfed_fail(&err, SDFED_ERR_NOMEM, "out of memory");
    for (int i = 0; i < a.n_inputs && rc == SDFED_OK; i++) {
        int n;
        rc = sdfed_tokenize(&m.tokenizer, a.inputs[i], strlen(a.inputs[i]), ctx, ids + (size_t)i * ctx, &n, &err);
    }
    if (rc == SDFED_OK) {
        sdfed_text_batch batch = {
            .n_seqs = a.n_inputs, .ids = ids, .stride = ctx, .splice = NULL, .splice_pos = NULL, .n_splice = 0};
        rc = sdfed_text_encode(&m.clip, native_backend(a.backend), &batch, features, &arena, &err);
    }
    if (rc == SDFED_OK)
        print_features(features, a.n_inputs, dim, a.normalize);
    else
        status = native_cli_error(CLI_FAILED, "encode-text: %s", err.message);
    sdfed_arena_free(&arena);
    free(ids);
    free(features);
    free(a.inputs);
    native_model_close(&m);
    return status;
}

#if defined(__wasm__)
int cmd_encode_image(int argc, char **argv) {
    return native_cli_error(CLI_FAILED, "encode-image: decoding PNG/JPEG files needs the native build");
}
#else
/* Decodes and preprocesses one image file into pixels (3, S, S). */
static int load_image(const char *path, const sdfed_clip_config *c, float *pixels, sdfed_error *err) {
    sdfed_image img = {0};
    uint8_t *data = NULL;
    int rc = native_image_decode_file(path, NULL, &data, &img.width, &img.height, &img.channels, err);
    if (rc) return rc;
    img.pixels = data;
    img.stride = (size_t)img.width * img.channels;
    rc = sdfed_image_preprocess(&img, c->image_size, c->image_mean, c->image_std, pixels, err);
    free(data);
    return rc ? sdfed_fail_context(err, rc, "%s", path) : SDFED_OK;
}

int cmd_encode_image(int argc, char **argv) {
    encode_args a;
    int status = parse_encode("encode-image", argc, argv, &a);
    if (status) return status;
    native_model m;
    sdfed_error err = {0};
    if (native_model_open(&m, a.model, &err)) {
        free(a.inputs);
        return native_cli_error(CLI_FAILED, "encode-image: %s", err.message);
    }
    if (a.f32_images) m.clip.int8_images = 0;
    const sdfed_clip_config *c = &m.clip.cfg;
    size_t image_floats = (size_t)3 * c->image_size * c->image_size;
    float *pixels = malloc(sizeof *pixels * image_floats * IMAGE_BATCH);
    float *features = malloc(sizeof *features * (size_t)c->embed_dim * IMAGE_BATCH);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    int rc = pixels && features ? SDFED_OK : sdfed_fail(&err, SDFED_ERR_NOMEM, "out of memory");
    for (int first = 0; first < a.n_inputs && rc == SDFED_OK; first += IMAGE_BATCH) {
        int n = a.n_inputs - first < IMAGE_BATCH ? a.n_inputs - first : IMAGE_BATCH;
        for (int i = 0; i < n && rc == SDFED_OK; i++)
            rc = load_image(a.inputs[first + i], c, pixels + i * image_floats, &err);
        if (rc == SDFED_OK)
            rc = sdfed_image_encode(&m.clip, native_backend(a.backend), pixels, n, features, &arena, &err);
        if (rc == SDFED_OK) print_features(features, n, c->embed_dim, a.normalize);
        sdfed_arena_reset(&arena);
    }
    if (rc) status = native_cli_error(CLI_FAILED, "encode-image: %s", err.message);
    sdfed_arena_free(&arena);
    free(pixels);
    free(features);
    free(a.inputs);
    native_model_close(&m);
    return status;
}
#endif
