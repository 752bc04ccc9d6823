/* The native side of the browser test's parity check: the same client API
 * (wasm-client/api.c) built natively, on the inputs the browser got.
 *   step_native DIR
 * DIR holds model.gguf, task.json (its classes the prompts' text), index (a number),
 * images.rgba (n images of width x height RGBA), images.shape ("n width
 * height"), labels.u8 (n), int8_images ("0": the image tower on f32
 * activations; "1": Q8_0 matrices in integer products, wc_set_int8_images).
 * It writes global.frame (the federation's initial
 * parameters, the round the browser trains from) and, natively, encodes the
 * images and trains that round on them. When DIR also holds what the wasm
 * computed from the same inputs (wasm.features.f32, wasm.params), it
 * compares, else the exit status is 1: on f32 activations, features and
 * updated parameters must agree within 1e-4 of the largest value
 * (relative). On the integer path the two builds' f32 steps between the
 * linears (the attention products, natively the FMA tiles' chains, in wasm
 * SIMD128's) differ in the last bits, and a
 * quant that lands on the other side of a rounding boundary moves the rest
 * of the tower by a quantisation step: each image's features must be within
 * 1 - cosine <= 1e-4 of the native ones (the path's accuracy bound against
 * F32, test_encoders), and the parameters trained on them are printed, not
 * compared. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "fed/protocol.h"
#include "fed/task.h"
#include "method/methods_io.h"
#include "cosine.h"
#include "read_file.h"
#include "text/tokenizer.h"

static char dir[1024];

static unsigned char *slurp(const char *name, size_t *size, int required) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unsigned char *data = read_file(path, size);
    if (!data && required) fprintf(stderr, "step_native: cannot read %s\n", path), exit(2);
    return data;
}

static void spill(const char *name, const void *data, size_t size) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f))
        fprintf(stderr, "step_native: cannot write %s\n", path), exit(2);
}

static void check(int rc, const char *what) {
    if (rc) fprintf(stderr, "step_native: %s: %s\n", what, wc_error()), exit(2);
}

/* max |a - b| / max |b| */
static double relative(const float *a, const float *b, size_t n) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= diff)) diff = d; /* NaN counts as the largest */
        if (fabs(b[i]) > scale) scale = fabs(b[i]);
    }
    return scale > 0 ? diff / scale : diff;
}

/* The task, model and classes as the aggregator loads them, apart from the API's. */
static sdfed_task task;
static sdfed_clip_model m;
static sdfed_classes cls;
static sdfed_arena arena;

/* The aggregator's round-0 parameters for the task, as a global frame. */
static unsigned char *server_frame(const unsigned char *model, size_t model_size, const char *task_json,
                                   size_t task_size, size_t *frame_size) {
    sdfed_error err = {0};
    sdfed_tokenizer tok;
    sdfed_method_params p;
    sdfed_arena_init(&arena);
    if (sdfed_task_parse(&task, task_json, task_size, &err) || sdfed_clip_load(&m, model, model_size, &err) ||
        sdfed_tokenizer_init_gguf(&tok, &m.file, &err) ||
        sdfed_task_classes(&task, &tok, m.cfg.context_length, &cls, &err) ||
        sdfed_task_server_params(&task, &m, sdfed_kernels_default(), &cls, &p, &arena, &err))
        fprintf(stderr, "step_native: %s\n", err.message), exit(2);
    uint32_t shape[2] = {(uint32_t)p.global_rows, (uint32_t)p.width};
    sdfed_buffer frame = {0};
    if (sdfed_frame_encode(SDFED_FRAME_GLOBAL, 0, 0, 2, shape, p.global, &frame, &err))
        fprintf(stderr, "step_native: %s\n", err.message), exit(2);
    *frame_size = frame.size;
    return frame.data; /* the process ends soon: the rest is left to the OS */
}

/* "Try it": wc_predict's probabilities for each image against their
 * definition, the softmax over classes of the logits: exp(logit_scale) *
 * cosine, computed here from the class features of the trained parameters
 * (for fedotp, its transport scores from method/methods.h); returns 0 if
 * they agree. */
static int check_predict(const sdfed_method_params *trained, int client, const float *features, int n) {
    sdfed_error err = {0};
    sdfed_method_config cfg = sdfed_task_method_config(&task);
    cfg.local_len = sdfed_task_local_prompt_length(&task, client);
    int C = cls.n_classes, D = m.cfg.embed_dim, size = wc_feature_size();
    sdfed_classifier clf;
    float *got = malloc(sizeof(float) * (size_t)C), *logits = malloc(sizeof(float) * (size_t)C);
    double *want = malloc(sizeof(double) * (size_t)C), worst = 0.0;
    if (!got || !logits || !want ||
        sdfed_method_classifier(&cfg, &m, sdfed_kernels_default(), &cls, trained, &clf, &arena, &err))
        fprintf(stderr, "step_native: class features: %s\n", err.message), exit(2);
    const float *class_features = clf.feats;
    for (int i = 0; i < n; i++) {
        const float *x = features + (size_t)i * size;
        int best = wc_predict(x, got);
        if (clf.patches && sdfed_classifier_logits(&clf, x, 1, logits, &arena, &err))
            fprintf(stderr, "step_native: transport scores: %s\n", err.message), exit(2);
        double total = 0.0;
        for (int c = 0; c < C; c++) {
            double cosine = 0.0;
            for (int d = 0; d < D && !clf.patches; d++) cosine += (double)x[d] * class_features[(size_t)c * D + d];
            total += want[c] = exp(clf.patches ? logits[c] : exp(m.logit_scale) * cosine);
        }
        double top = 0.0;
        for (int c = 0; c < C; c++) {
            worst = fmax(worst, fabs(got[c] - want[c] / total));
            top = fmax(top, want[c] / total);
        }
        if (best < 0 || want[best] / total < top - 1e-5) worst = INFINITY; /* not the most likely class */
    }
    int ok = worst <= 1e-5;
    printf("try it: %d predictions vs the softmax of the %s, max difference %.3g %s\n", n,
           clf.patches ? "transport logits" : "exp(logit_scale) * cosine", worst, ok ? "ok" : "FAIL");
    free(got), free(logits), free(want);
    return !ok;
}

int main(int argc, char **argv) {
    if (argc != 2) return fprintf(stderr, "usage: step_native DIR\n"), 2;
    snprintf(dir, sizeof dir, "%s", argv[1]);
    sdfed_error err = {0};
    size_t size, size_model, task_size;
    unsigned char *model = slurp("model.gguf", &size_model, 1);
    unsigned char *model_copy = malloc(size_model); /* the API owns and frees what it is given */
    memcpy(model_copy, model, size_model);
    char *int8 = (char *)slurp("int8_images", &size, 1);
    int int8_images = atoi(int8);
    wc_set_int8_images(int8_images);
    check(wc_load_model(model_copy, size_model), "model");
    char *task_json = (char *)slurp("task.json", &task_size, 1);
    char *index = (char *)slurp("index", &size, 1);
    check(wc_set_task(task_json, atoi(index)), "task");

    /* the federation's initial parameters, as the aggregator makes them */
    size_t frame_size;
    unsigned char *frame = server_frame(model, size_model, task_json, task_size, &frame_size);
    spill("global.frame", frame, frame_size);

    /* the client's part: features, then one round from that frame */
    char *shape = (char *)slurp("images.shape", &size, 1);
    int n, w, h;
    if (sscanf(shape, "%d %d %d", &n, &w, &h) != 3 || n < 1 || w < 1 || h < 1)
        fprintf(stderr, "step_native: images.shape must be 'n width height'\n"), exit(2);
    unsigned char *images = slurp("images.rgba", &size, 1);
    unsigned char *labels = slurp("labels.u8", &size, 1);
    if (size != (size_t)n) fprintf(stderr, "step_native: %d labels needed\n", n), exit(2);
    int D = wc_feature_size();
    float *features = malloc(sizeof *features * (size_t)n * D);
    for (int i = 0; i < n; i++)
        check(wc_encode_image(images + (size_t)i * w * h * 4, w, h, features + (size_t)i * D), "encode");
    check(wc_set_samples(0, features, labels, n), "samples");
    check(wc_round_begin(frame, frame_size), "round");
    while (!wc_round_done()) check(wc_round_step(), "step");
    check(wc_params_save(), "save");
    printf("native: %d images encoded, %d steps trained\n", n, wc_round_steps_taken());
    int method;
    sdfed_method_params mine, theirs;
    if (sdfed_method_params_load(wc_out_data(), wc_out_size(), &method, &mine, &err))
        fprintf(stderr, "step_native: params: %s\n", err.message), exit(2);
    int failed = check_predict(&mine, atoi(index), features, n);

    /* what the wasm computed from the same inputs, if it is there yet */
    size_t wasm_features_size, wasm_params_size;
    float *wasm_features = (float *)slurp("wasm.features.f32", &wasm_features_size, 0);
    unsigned char *wasm_params = slurp("wasm.params", &wasm_params_size, 0);
    if (!wasm_features || !wasm_params) return failed;
    if (sdfed_method_params_load(wasm_params, wasm_params_size, &method, &theirs, &err))
        fprintf(stderr, "step_native: params: %s\n", err.message), exit(2);
    if (wasm_features_size != sizeof(float) * (size_t)n * D || mine.global_rows != theirs.global_rows ||
        mine.local_rows != theirs.local_rows || mine.width != theirs.width)
        fprintf(stderr, "step_native: the wasm results have other shapes\n"), exit(1);
    double rel[3] = {relative(wasm_features, features, (size_t)n * D),
                     relative(theirs.global, mine.global, (size_t)mine.global_rows * mine.width),
                     relative(theirs.local, mine.local, (size_t)mine.local_rows * mine.width)};
    const char *names[3] = {"image features", "global prompt", "local prompt"};
    if (int8_images) {
        double worst = worst_one_minus_cosine(wasm_features, features, n, D);
        int ok = worst <= 1e-4;
        printf("image features (integer path): wasm vs native, worst 1 - cosine of %d images %.3g %s\n", n, worst,
               ok ? "ok" : "FAIL");
        failed |= !ok;
    }
    for (int i = int8_images ? 1 : 0; i < 3; i++) {
        int ok = rel[i] <= 1e-4;
        printf("%s: wasm vs native, max difference / max value %.3g %s\n", names[i], rel[i],
               int8_images ? "(not compared)"
               : ok        ? "ok"
                           : "FAIL");
        if (!int8_images) failed |= !ok;
    }
    return failed;
}
