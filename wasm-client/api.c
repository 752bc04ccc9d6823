/* The core's API for JavaScript (api.h): the state of one client and thin
 * wrappers over shared/. */
#include "api.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "clip/image_composite.h"
#include "clip/image_encoder.h"
#include "clip/image_preprocess.h"
#include "clip/layers.h"
#include "data/folder_rule.h"
#include "fed/protocol.h"
#include "fed/secagg_client.h"
#include "fed/secagg_layout.h"
#include "fed/secagg_ring.h"
#include "fed/task.h"
#include "method/local_training.h"
#include "method/methods_io.h"
#include "prompt/losses.h"
#include "text/tokenizer.h"

#if defined(__EMSCRIPTEN__)
#include <time.h>

/* The module's clock, the one the core is given where it times its own
 * speed (base/clock.h): the engine's monotonic clock (performance.now). */
static int64_t module_clock_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
#endif

/* The most classes a client's labels can name (they are bytes). */
#define WC_MAX_CLASSES 256

typedef struct samples {
    float *features;
    uint8_t *labels;
    int n;
} samples;

static struct {
    sdfed_error err;
    const sdfed_kernels *k;
    sdfed_arena arena;
    /* the model */
    uint8_t *model_bytes;
    sdfed_clip_model model;
    sdfed_tokenizer tokenizer;
    int have_model;
    int int8_images; /* the model's int8_images (clip_model.h), 1 until wc_set_int8_images */
    /* the task and the client's parameters */
    sdfed_task task;
    sdfed_method_config cfg;
    sdfed_classes cls;
    sdfed_method_params params;
    sdfed_rng rng;
    int have_task, index;
    samples train, test;
    /* the device: its plan (fed/local_prompt.h) once chosen, and the probe that times its steps */
    sdfed_local_plan device_plan;
    int have_device_plan, device_plan_out[4];
    sdfed_step_watch watch; /* its rounds, for drift (the page measures again when one drifted) */
    sdfed_method_config probe_cfg;
    sdfed_method_params probe_params;
    sdfed_rng probe_rng;
    sdfed_local_round probe_round;
    sdfed_feature_set probe_set;
    int probing;
    sdfed_feature_set train_set;
    /* the round in progress */
    sdfed_local_round round;
    uint32_t round_number;
    int in_round;
    float *round_start; /* (global size) the round's global as received */
    double losses[5];
    /* a secure round's client, and the last plan (kept for its n: with
       noise it takes a bisection on the accountant) and its figures */
    sdfed_secagg_client secagg;
    sdfed_secagg_plan plan;
    int plan_n; /* 0: none */
    double plan_values[15];
    sdfed_buffer out;
} wasm;

static int fail(int code, const char *what) { return sdfed_fail(&wasm.err, code, "%s", what); }

void wc_probe_end(void) {
    if (!wasm.probing) return;
    sdfed_local_round_end(&wasm.probe_round);
    sdfed_method_params_free(&wasm.probe_params);
    wasm.probing = 0;
}

static void drop_task(void) {
    if (wasm.in_round) sdfed_local_round_end(&wasm.round);
    wasm.in_round = 0;
    free(wasm.round_start);
    wasm.round_start = NULL;
    sdfed_secagg_client_free(&wasm.secagg);
    wasm.plan_n = 0;
    wc_probe_end();
    wasm.have_device_plan = 0;
    wasm.watch = (sdfed_step_watch){0};
    if (wasm.have_task) {
        sdfed_method_params_free(&wasm.params);
        sdfed_classes_free(&wasm.cls);
        sdfed_task_free(&wasm.task);
    }
    wasm.have_task = 0;
    for (int which = 0; which < 2; which++) {
        samples *s = which ? &wasm.test : &wasm.train;
        free(s->features);
        free(s->labels);
        memset(s, 0, sizeof *s);
    }
}

static void drop_model(void) {
    drop_task();
    if (wasm.have_model) {
        sdfed_tokenizer_free(&wasm.tokenizer);
        sdfed_clip_free(&wasm.model);
    }
    free(wasm.model_bytes);
    wasm.model_bytes = NULL;
    wasm.have_model = 0;
}

/* The kernels and the scratch arena, before anything else runs. */
static void init_once(void) {
    static int done;
    if (done) return;
    done = 1;
#if defined(__EMSCRIPTEN__) && defined(__wasm_simd128__)
    sdfed_kernels_relaxed_clock(module_clock_ns); /* before the backends are listed */
#endif
    if (!wasm.k) wasm.k = sdfed_kernels_default();
    wasm.int8_images = 1;
    sdfed_task_defaults(&wasm.task); /* what wasm.task is whenever no task is set */
    sdfed_arena_init(&wasm.arena);
}

#if defined(__EMSCRIPTEN_PTHREADS__)
int wc_set_threads(int n) {
    init_once();
    wasm.k = sdfed_kernels_threaded(sdfed_kernels_default(), n < 1 ? 1 : n, module_clock_ns);
    return sdfed_kernels_thread_count();
}
#endif

const char *wc_kernels(void) {
    init_once();
    return wasm.k->name;
}

const char *wc_int8_dot(void) {
    init_once();
    return wasm.k->relaxed_dot && wasm.k->relaxed_dot() ? "relaxed" : "simd128";
}

const char *wc_int8_dot_form(void) {
    init_once();
#if defined(SDFED_KERNELS_SIMD128_RELAXED)
    if (wasm.k->relaxed_dot && wasm.k->relaxed_dot()) return sdfed_kernels_relaxed_dot_form();
#endif
    return "";
}

const char *wc_f32_madd(void) {
    init_once();
    return wasm.k->fma_chains && wasm.k->fma_chains() ? "fused" : "unfused";
}

int wc_load_model(uint8_t *bytes, size_t size) {
    init_once();
    drop_model();
    wasm.model_bytes = bytes;
    int rc = sdfed_clip_load(&wasm.model, bytes, size, &wasm.err);
    if (rc) return rc;
    rc = sdfed_tokenizer_init_gguf(&wasm.tokenizer, &wasm.model.file, &wasm.err);
    if (rc) {
        sdfed_clip_free(&wasm.model);
        return rc;
    }
    wasm.model.int8_images = wasm.int8_images;
    wasm.have_model = 1;
    return SDFED_OK;
}

void wc_set_int8_images(int on) {
    init_once();
    wasm.int8_images = on != 0;
    if (wasm.have_model) wasm.model.int8_images = wasm.int8_images;
}

size_t wc_pack_image_weights(void) {
    init_once();
    return wasm.have_model ? sdfed_clip_pack(&wasm.model, wasm.k, SDFED_CLIP_IMAGE) : 0;
}

int wc_image_size(void) { return wasm.have_model ? wasm.model.cfg.image_size : 0; }
int wc_embed_dim(void) { return wasm.have_model ? wasm.model.cfg.embed_dim : 0; }

int wc_set_task(const char *task_json, int index) {
    if (!wasm.have_model) return fail(SDFED_ERR_ARG, "load a model first");
    if (index < 0) return fail(SDFED_ERR_ARG, "the client index must be >= 0");
    drop_task();
    int rc = sdfed_task_parse(&wasm.task, task_json, strlen(task_json), &wasm.err);
    if (rc == SDFED_OK) rc = sdfed_task_validate(&wasm.task, &wasm.err);
    if (rc == SDFED_OK && sdfed_task_class_count(&wasm.task) > WC_MAX_CLASSES)
        rc =
            sdfed_fail(&wasm.err, SDFED_ERR_UNSUPPORTED, "key 'classes': %d classes, a browser client holds at most %d",
                       sdfed_task_class_count(&wasm.task), WC_MAX_CLASSES);
    if (rc == SDFED_OK)
        rc = sdfed_task_classes(&wasm.task, &wasm.tokenizer, wasm.model.cfg.context_length, &wasm.cls, &wasm.err);
    if (rc) {
        sdfed_task_free(&wasm.task);
        return sdfed_fail_context(&wasm.err, rc, "the federation's task");
    }
    sdfed_arena_reset(&wasm.arena);
    rc = sdfed_task_client_params(&wasm.task, index, sdfed_task_local_prompt_length(&wasm.task, index), &wasm.model,
                                  wasm.k, &wasm.cls, &wasm.cfg, &wasm.rng, &wasm.params, &wasm.arena, &wasm.err);
    if (rc) {
        sdfed_classes_free(&wasm.cls);
        sdfed_task_free(&wasm.task);
        return rc;
    }
    wasm.have_task = 1;
    wasm.index = index;
    return SDFED_OK;
}

/* the samples a probe times steps on: the training ones, else the held-out ones */
static const samples *probe_samples(void) { return wasm.train.n > 0 ? &wasm.train : &wasm.test; }

int wc_probe_begin(int length) {
    if (!wasm.have_task) return fail(SDFED_ERR_ARG, "set the task first");
    /* between rounds (the last one's steps done: its update or masked input may still be asked for, which a
     * probe leaves as they are), as when the page measures again after a round whose steps drifted */
    if (wasm.in_round && !sdfed_local_round_done(&wasm.round))
        return fail(SDFED_ERR_ARG, "no probe while a round's steps are left");
    const samples *s = probe_samples();
    if (s->n == 0) return fail(SDFED_ERR_ARG, "add images first: a step is timed on them");
    if (length < 1 || length > sdfed_classes_max_prompt(&wasm.cls))
        return fail(SDFED_ERR_ARG, "the probe's length does not fit the model's context");
    wc_probe_end();
    wasm.probe_cfg = sdfed_task_method_config(&wasm.task);
    wasm.probe_cfg.local_len = length;
    sdfed_rng_seed_stream(&wasm.probe_rng, wasm.task.seed,
                          SDFED_STREAM_SERVER); /* its own: the client's is untouched */
    sdfed_arena_reset(&wasm.arena);
    int rc = sdfed_method_params_init(&wasm.probe_params, &wasm.probe_cfg, &wasm.model, wasm.k, &wasm.cls,
                                      &wasm.probe_rng, &wasm.arena, &wasm.err);
    if (rc) return rc;
    wasm.probe_set = (sdfed_feature_set){
        .features = s->features, .labels = s->labels, .dim = wc_feature_size(), .index = NULL, .n = s->n};
    /* a few steps, however few the samples: as many passes as steps */
    rc = sdfed_local_round_begin(&wasm.probe_round, &wasm.probe_set, WC_PROBE_STEPS, wasm.task.batch_size,
                                 WC_PROBE_STEPS, &wasm.err);
    if (rc) {
        sdfed_method_params_free(&wasm.probe_params);
        return rc;
    }
    wasm.probing = 1;
    return SDFED_OK;
}

int wc_probe_step(void) {
    if (!wasm.probing || sdfed_local_round_done(&wasm.probe_round)) return fail(SDFED_ERR_ARG, "no probe step left");
    sdfed_losses l;
    return sdfed_local_round_step(&wasm.probe_round, &wasm.probe_cfg, &wasm.model, wasm.k, &wasm.cls,
                                  &wasm.probe_params, &wasm.probe_rng, &l, &wasm.arena, &wasm.err);
}

int wc_choose(const double *step_ms) {
    if (!wasm.have_task) return fail(SDFED_ERR_ARG, "set the task first");
    if (wasm.in_round) return fail(SDFED_ERR_ARG, "the length cannot change during a round");
    int n = wasm.task.local_prompt.n_lengths;
    double step_s[SDFED_LOCAL_PROMPT_MAX_LENGTHS];
    for (int i = 0; i < n; i++) step_s[i] = step_ms[i] / 1000;
    sdfed_local_plan plan;
    int rc = sdfed_task_local_plan(&wasm.task, wasm.index, n ? step_s : NULL, wasm.train.n, &plan, &wasm.err);
    if (rc) return rc;
    sdfed_method_config cfg;
    sdfed_method_params params;
    sdfed_rng rng;
    sdfed_arena_reset(&wasm.arena);
    rc = sdfed_task_client_params(&wasm.task, wasm.index, plan.length, &wasm.model, wasm.k, &wasm.cls, &cfg, &rng,
                                  &params, &wasm.arena, &wasm.err);
    if (rc) return rc;
    sdfed_method_params_free(&wasm.params);
    wasm.params = params;
    wasm.cfg = cfg;
    wasm.rng = rng;
    wasm.device_plan = plan;
    wasm.have_device_plan = 1;
    return SDFED_OK;
}

const int *wc_plan(void) {
    int *o = wasm.device_plan_out;
    o[0] = wasm.have_device_plan ? wasm.device_plan.length : wasm.cfg.local_len;
    o[1] = wasm.have_device_plan ? wasm.device_plan.steps : 0;
    o[2] = wasm.have_device_plan ? wasm.device_plan.epoch_steps : 0;
    o[3] = wasm.have_device_plan ? (int)wasm.device_plan.samples : wasm.train.n;
    return o;
}

int wc_method_global_size(void) { return wasm.have_task ? wasm.params.global_rows * wasm.params.width : 0; }
int wc_class_count(void) { return wasm.have_task ? wasm.cls.n_classes : 0; }

int wc_folder_classify(const char *path, int *class_length, int *class_index) {
    sdfed_folder_entry e = sdfed_folder_classify(path);
    *class_length = (int)e.class_length;
    *class_index = -1;
    for (int c = 0; wasm.have_task && e.kind == SDFED_FOLDER_IMAGE && c < wasm.task.n_classes && *class_index < 0;
         c++) {
        const char *name = sdfed_task_class_name(&wasm.task, c);
        if (sdfed_folder_names_match(path, e.class_length, name, strlen(name))) *class_index = c;
    }
    return (int)e.kind;
}

const char *wc_folder_why(const char *path) {
    static char why[64];
    sdfed_folder_entry e = sdfed_folder_classify(path);
    const char *reason = sdfed_folder_kind_reason(e.kind);
    snprintf(why, sizeof why, "%s%s%s", e.format ? e.format : "", e.format ? ": " : "", reason ? reason : "");
    return why;
}

/* The method whose features images are encoded for: the task's, or (no
 * task yet) one that reads the pooled feature. */
static int feature_method(void) { return wasm.have_task ? wasm.cfg.method : SDFED_METHOD_ZEROSHOT; }

int wc_image_reduction_factor(int width, int height) {
    return sdfed_image_reduction_factor((uint64_t)width, (uint64_t)height, SDFED_IMAGE_MAX_PIXELS);
}

int wc_feature_size(void) { return wasm.have_model ? sdfed_method_feature_size(feature_method(), &wasm.model.cfg) : 0; }

/* An RGBA image onto the task's background (the default's before a task),
 * RGB packed in place. */
static int composited(uint8_t *rgba, int width, int height, sdfed_image *img) {
    if (!wasm.have_model) return fail(SDFED_ERR_ARG, "load a model first");
    if (width < 1 || height < 1) return fail(SDFED_ERR_ARG, "an image needs a width and a height of at least 1");
    sdfed_composite(rgba, 4, (size_t)width * (size_t)height, wasm.task.background, rgba);
    *img = (sdfed_image){.pixels = rgba, .width = width, .height = height, .channels = 3, .stride = (size_t)width * 3};
    return SDFED_OK;
}

int wc_encode_image(uint8_t *rgba, int width, int height, float *features) {
    sdfed_image img;
    int rc = composited(rgba, width, height, &img);
    if (rc) return rc;
    sdfed_arena_reset(&wasm.arena);
    return sdfed_method_image_features(feature_method(), &wasm.model, wasm.k, &img, 1, features, &wasm.arena,
                                       &wasm.err);
}

int wc_image_tower(double *shape) {
    if (!wasm.have_model) return fail(SDFED_ERR_ARG, "load a model first");
    const sdfed_clip_config *c = &wasm.model.cfg;
    double values[8] = {c->image_size,   c->patch_size, c->vision_width, c->vision_layers,
                        c->vision_heads, c->embed_dim,  c->activation,   c->layer_norm_eps};
    memcpy(shape, values, sizeof values);
    return SDFED_OK;
}

/* Tensors of a block, in wc_image_tensor's order. */
#define WC_BLOCK_TENSORS 12
/* Tensors before the first block, and after the last. */
#define WC_TOWER_HEAD 5
#define WC_TOWER_TAIL 3

/* A vector of the tower (F32, one row) as a weight. */
static sdfed_weight vector_of(const float *v, int rows, int cols) {
    return (sdfed_weight){.type = SDFED_TYPE_F32, .rows = rows, .cols = cols, .data = v};
}

static sdfed_weight block_tensor(const sdfed_clip_block *b, int i, int W) {
    const sdfed_weight list[WC_BLOCK_TENSORS] = {vector_of(b->ln1_w, 1, W),
                                                 vector_of(b->ln1_b, 1, W),
                                                 b->attn_qkv,
                                                 vector_of(b->attn_qkv_b, 1, 3 * W),
                                                 b->attn_out,
                                                 vector_of(b->attn_out_b, 1, W),
                                                 vector_of(b->ln2_w, 1, W),
                                                 vector_of(b->ln2_b, 1, W),
                                                 b->mlp_fc,
                                                 vector_of(b->mlp_fc_b, 1, 4 * W),
                                                 b->mlp_proj,
                                                 vector_of(b->mlp_proj_b, 1, W)};
    return list[i];
}

int wc_image_tensor(int index, int *desc) {
    if (!wasm.have_model) return fail(SDFED_ERR_ARG, "load a model first");
    const sdfed_clip_model *m = &wasm.model;
    int W = m->cfg.vision_width, L = m->cfg.vision_layers, T = sdfed_image_token_count(&m->cfg);
    int tail = index - WC_TOWER_HEAD - L * WC_BLOCK_TENSORS;
    if (index < 0 || tail >= WC_TOWER_TAIL) return fail(SDFED_ERR_ARG, "no such tensor of the image tower");
    sdfed_weight w;
    if (index < WC_TOWER_HEAD) {
        const sdfed_weight head[WC_TOWER_HEAD] = {m->patch_embd, vector_of(m->class_embd, 1, W),
                                                  vector_of(m->vision_pos, T, W), vector_of(m->ln_pre_w, 1, W),
                                                  vector_of(m->ln_pre_b, 1, W)};
        w = head[index];
    } else if (tail < 0) {
        int i = index - WC_TOWER_HEAD;
        w = block_tensor(&m->vision_blocks[i / WC_BLOCK_TENSORS], i % WC_BLOCK_TENSORS, W);
    } else {
        const sdfed_weight last[WC_TOWER_TAIL] = {vector_of(m->ln_post_w, 1, W), vector_of(m->ln_post_b, 1, W),
                                                  m->vision_proj};
        w = last[tail];
    }
    desc[0] = w.type;
    desc[1] = w.rows;
    desc[2] = w.cols;
    desc[3] = (int)(uintptr_t)w.data;
    return SDFED_OK;
}

int wc_preprocess_image(uint8_t *rgba, int width, int height, float *pixels) {
    sdfed_image img;
    int rc = composited(rgba, width, height, &img);
    if (rc) return rc;
    const sdfed_clip_config *c = &wasm.model.cfg;
    return sdfed_image_preprocess(&img, c->image_size, c->image_mean, c->image_std, pixels, &wasm.err);
}

int wc_feature_tokens(void) {
    if (!wasm.have_model) return 0;
    return sdfed_method_reads_patches(feature_method()) ? sdfed_image_token_count(&wasm.model.cfg) : 1;
}

int wc_features_from_tokens(const float *tokens, float *features) {
    if (!wasm.have_model) return fail(SDFED_ERR_ARG, "load a model first");
    const sdfed_clip_config *c = &wasm.model.cfg;
    sdfed_arena_reset(&wasm.arena);
    float *norms = sdfed_arena_floats(&wasm.arena, (size_t)sdfed_image_token_count(c));
    if (!norms) return fail(SDFED_ERR_NOMEM, "out of memory");
    if (wc_feature_tokens() == 1)
        sdfed_l2_normalize_forward(features, norms, tokens, 1, c->embed_dim);
    else
        sdfed_image_patches_from_tokens(c, tokens, 1, features, norms);
    return SDFED_OK;
}

int wc_set_samples(int which, const float *features, const uint8_t *labels, int n) {
    if (!wasm.have_task) return fail(SDFED_ERR_ARG, "set the task first");
    if (wasm.in_round) return fail(SDFED_ERR_ARG, "samples cannot change during a round");
    if ((which != 0 && which != 1) || n < 0) return fail(SDFED_ERR_ARG, "samples: which is 0 or 1, n >= 0");
    size_t D = (size_t)wc_feature_size();
    for (int i = 0; i < n; i++)
        if (labels[i] >= wasm.cls.n_classes) return fail(SDFED_ERR_ARG, "samples: a label names no class of the task");
    for (size_t i = 0; i < (size_t)n * D; i++)
        if (!isfinite(features[i])) return fail(SDFED_ERR_NUMERIC, "samples: features are not finite");
    samples s = {.features = malloc(sizeof(float) * D * (size_t)n + 1), .labels = malloc((size_t)n + 1), .n = n};
    if (!s.features || !s.labels) {
        free(s.features);
        free(s.labels);
        return fail(SDFED_ERR_NOMEM, "samples: out of memory");
    }
    memcpy(s.features, features, sizeof(float) * D * (size_t)n);
    memcpy(s.labels, labels, (size_t)n);
    samples *dst = which ? &wasm.test : &wasm.train;
    if (!which) wasm.have_device_plan = 0; /* other training samples: another plan (wc_choose) */
    free(dst->features);
    free(dst->labels);
    *dst = s;
    return SDFED_OK;
}

int wc_round_begin(const uint8_t *frame, size_t size) {
    if (!wasm.have_task) return fail(SDFED_ERR_ARG, "set the task first");
    if (wasm.train.n == 0) return fail(SDFED_ERR_ARG, "add training images first");
    if (wasm.task.local_prompt.rule == SDFED_LOCAL_RULE_ADAPTIVE && wasm.task.local_prompt.n_lengths > 0 &&
        !wasm.have_device_plan)
        return fail(SDFED_ERR_ARG, "time this device's steps and choose the local prompt first (wc_choose)");
    sdfed_frame f;
    sdfed_code code;
    size_t n = (size_t)wc_method_global_size();
    int rc = sdfed_frame_decode(frame, size, n, &f, &code, &wasm.err);
    if (rc) return rc;
    if (f.kind != SDFED_FRAME_GLOBAL || f.n_dims != 2 || (int)f.shape[0] != wasm.params.global_rows ||
        (int)f.shape[1] != wasm.params.width)
        return fail(SDFED_ERR_FORMAT, "the server's parameters do not have this method's shape");
    if (wasm.in_round) sdfed_local_round_end(&wasm.round);
    wasm.in_round = 0;
    free(wasm.round_start);
    wasm.round_start = malloc(sizeof *wasm.round_start * n);
    if (!wasm.round_start) return fail(SDFED_ERR_NOMEM, "the round: out of memory");
    sdfed_frame_values(&f, wasm.params.global);
    memcpy(wasm.round_start, wasm.params.global, sizeof *wasm.round_start * n);
    wasm.train_set = (sdfed_feature_set){.features = wasm.train.features,
                                         .labels = wasm.train.labels,
                                         .dim = wc_feature_size(),
                                         .index = NULL,
                                         .n = wasm.train.n};
    rc = sdfed_local_round_begin(&wasm.round, &wasm.train_set, wasm.task.local_epochs, wasm.task.batch_size,
                                 wasm.have_device_plan ? wasm.device_plan.steps : -1, &wasm.err);
    if (rc) return rc;
    wasm.in_round = 1;
    wasm.round_number = f.round;
    return SDFED_OK;
}

int wc_round_step(void) {
    if (!wasm.in_round) return fail(SDFED_ERR_ARG, "no round in progress");
    sdfed_losses l;
    int rc = sdfed_local_round_step(&wasm.round, &wasm.cfg, &wasm.model, wasm.k, &wasm.cls, &wasm.params, &wasm.rng, &l,
                                    &wasm.arena, &wasm.err);
    if (rc) return rc;
    double v[5] = {l.ce_local, l.ce_global, l.stretch, l.separation, l.total};
    memcpy(wasm.losses, v, sizeof v);
    return SDFED_OK;
}

int wc_round_done(void) { return !wasm.in_round || sdfed_local_round_done(&wasm.round); }
int wc_round_steps_total(void) { return wasm.in_round ? wasm.round.total_steps : 0; }
int wc_round_steps_taken(void) { return wasm.in_round ? wasm.round.steps : 0; }
const double *wc_round_losses(void) { return wasm.losses; }

int wc_round_samples(void) { return wasm.have_device_plan ? (int)wasm.device_plan.samples : wasm.train.n; }

int wc_round_update(void) {
    if (!wasm.in_round || !sdfed_local_round_done(&wasm.round)) return fail(SDFED_ERR_ARG, "the round is not finished");
    uint32_t shape[2] = {(uint32_t)wasm.params.global_rows, (uint32_t)wasm.params.width};
    sdfed_buffer_free(&wasm.out);
    uint32_t weight = (uint32_t)wc_round_samples();
    return sdfed_frame_encode(SDFED_FRAME_UPDATE, wasm.round_number, weight, 2, shape, wasm.params.global, &wasm.out,
                              &wasm.err);
}

const float *wc_round_global(int which) {
    if (!wasm.round_start) return NULL;
    return which ? wasm.params.global : wasm.round_start;
}

int wc_step_watch_round(double round_ms) { return sdfed_step_watch_round(&wasm.watch, round_ms / 1000); }

void wc_step_watch_measured(double before_ms, double now_ms) {
    sdfed_step_watch_measured(&wasm.watch, before_ms / 1000, now_ms / 1000);
}

double wc_accuracy(void) {
    if (!wasm.have_task) return -fail(SDFED_ERR_ARG, "set the task first");
    sdfed_feature_set test = {.features = wasm.test.features,
                              .labels = wasm.test.labels,
                              .dim = wc_feature_size(),
                              .index = NULL,
                              .n = wasm.test.n};
    double accuracy;
    sdfed_arena_reset(&wasm.arena);
    int rc = sdfed_local_accuracy(&wasm.cfg, &wasm.model, wasm.k, &wasm.cls, &wasm.params, &test, &accuracy,
                                  &wasm.arena, &wasm.err);
    if (rc) return -rc;
    return accuracy; /* NaN: none (no test image) */
}

int wc_predict(const float *features, float *probabilities) {
    if (!wasm.have_task) return -fail(SDFED_ERR_ARG, "set the task first");
    int C = wasm.cls.n_classes;
    sdfed_arena_reset(&wasm.arena);
    sdfed_classifier clf;
    int rc =
        sdfed_method_classifier(&wasm.cfg, &wasm.model, wasm.k, &wasm.cls, &wasm.params, &clf, &wasm.arena, &wasm.err);
    /* what training and accuracy use: the softmax of the method's logits */
    float *logits = rc ? NULL : sdfed_arena_floats(&wasm.arena, (size_t)C);
    if (rc == SDFED_OK && !logits) rc = fail(SDFED_ERR_NOMEM, "predict: out of memory");
    if (rc == SDFED_OK) rc = sdfed_classifier_logits(&clf, features, 1, logits, &wasm.arena, &wasm.err);
    return rc ? -rc : sdfed_softmax_forward(probabilities, logits, C, NULL);
}

int wc_params_save(void) {
    if (!wasm.have_task) return fail(SDFED_ERR_ARG, "set the task first");
    sdfed_buffer_free(&wasm.out);
    sdfed_sink sink = sdfed_buffer_sink(&wasm.out);
    return sdfed_method_params_save(wasm.cfg.method, &wasm.params, &sink, &wasm.err);
}

int wc_params_load(const uint8_t *bytes, size_t size) {
    if (!wasm.have_task) return fail(SDFED_ERR_ARG, "set the task first");
    if (wasm.in_round) return fail(SDFED_ERR_ARG, "parameters cannot change during a round");
    int method;
    sdfed_method_params p;
    int rc = sdfed_method_params_load(bytes, size, &method, &p, &wasm.err);
    if (rc) return rc;
    if (method != wasm.cfg.method || p.width != wasm.params.width || p.global_rows != wasm.params.global_rows ||
        p.local_rows != wasm.params.local_rows || !p.global_momentum != !wasm.params.global_momentum) {
        sdfed_method_params_free(&p);
        return fail(SDFED_ERR_FORMAT, "the saved parameters belong to another method or task");
    }
    sdfed_method_params_free(&wasm.params);
    wasm.params = p;
    return SDFED_OK;
}

/* ---- a secure round ----------------------------------------------------- */

/* *v = x when it is an integer from lo to 2^53 */
static int whole(double x, double lo, const char *what, int64_t *v) {
    if (!(x >= lo && x <= 9007199254740992.0 && x == floor(x)))
        return sdfed_fail(&wasm.err, SDFED_ERR_ARG, "secagg: %s %g is not a whole number from %g", what, x, lo);
    *v = (int64_t)x;
    return SDFED_OK;
}

/* the output buffer emptied, its old bytes wiped (they may be share pairs) */
static void out_wipe(void) {
    if (wasm.out.data) memset(wasm.out.data, 0, wasm.out.capacity);
    wasm.out.size = 0;
}

/* the output buffer as size (> 0) zero bytes to fill in; NULL when out of memory */
static unsigned char *out_reserve(size_t size) {
    static const unsigned char zeros[256];
    out_wipe();
    sdfed_sink sink = sdfed_buffer_sink(&wasm.out);
    for (size_t at = 0; at < size; at += sizeof zeros) {
        if (sink.write(sink.ctx, zeros, size - at < sizeof zeros ? size - at : sizeof zeros)) {
            wasm.out.size = 0;
            fail(SDFED_ERR_NOMEM, "secagg: out of memory");
            return NULL;
        }
    }
    return wasm.out.data;
}

/* *p = the task's plan for n clients, its figures in wasm.plan_values */
static int make_plan(int n, sdfed_secagg_plan *p) {
    if (!wasm.have_task) return fail(SDFED_ERR_ARG, "set the task first");
    if (n != wasm.plan_n) {
        wasm.plan_n = 0;
        int rc = sdfed_secagg_plan_make(&wasm.task, n, (size_t)wc_method_global_size(), &wasm.plan, &wasm.err);
        if (rc) return rc;
        wasm.plan_n = n;
    }
    *p = wasm.plan;
    const double P = (double)p->dims;
    double v[15] = {p->params.n, p->params.k, p->params.t, p->params.min_inputs, p->params.complete, p->ring.ring_bits,
                    p->ring.quant_bits, p->ring.clip, (double)p->ring.max_weight, p->l2_clip, (double)p->sigma2, P,
                    (double)sdfed_secagg_stream_bytes(p->ring.ring_bits, p->dims + 1),
                    /* two secrets, 5 chunks, t - 1 coefficients of 8 bytes, and room for rejections (each 2^-61) */
                    2.0 * SDFED_SHAMIR_CHUNKS * (p->params.t - 1) * 8 + 256,
                    /* the discrete Gaussian takes about 340 bytes a draw (sd 330, at every sigma^2): running
                       short of 1,024 a coordinate and 64 KiB is beyond any chance that matters */
                    p->sigma2 ? 1024.0 * P + 65536 : 0};
    _Static_assert(sizeof v == sizeof wasm.plan_values, "every figure of the plan");
    memcpy(wasm.plan_values, v, sizeof v);
    return SDFED_OK;
}

int wc_secagg_plan(int n) {
    sdfed_secagg_plan p;
    return make_plan(n, &p);
}

const double *wc_secagg_plan_values(void) { return wasm.plan_values; }

int wc_secagg_start(int n, double round, const uint8_t *mask_seed, const uint8_t *mask_pk, const uint8_t *share_pk,
                    const uint8_t *seed) {
    sdfed_secagg_client_free(&wasm.secagg);
    wasm.secagg.stage = SDFED_SECAGG_ABANDONED;
    sdfed_secagg_plan p;
    int64_t r = 0;
    int rc = whole(round, -9007199254740992.0, "the round", &r);
    if (rc == SDFED_OK) rc = make_plan(n, &p);
    if (rc) return rc;
    return sdfed_secagg_client_start(&wasm.secagg, &p, r, mask_seed, mask_pk, share_pk, seed, &wasm.out, &wasm.err);
}

int wc_secagg_share(const uint8_t *request, size_t len, const uint8_t *random, size_t random_len) {
    sdfed_secagg_client *c = &wasm.secagg;
    sdfed_secagg_buffer buffer = {.bytes = random, .size = random_len, .used = 0};
    sdfed_secagg_bytes source = sdfed_secagg_buffer_source(&buffer);
    size_t most = (size_t)c->plan.params.k + 1;
    unsigned char *pairs = malloc(SDFED_SECAGG_PAIR_BYTES * (most ? most : 1));
    if (!pairs) return fail(SDFED_ERR_NOMEM, "secagg: out of memory");
    int rc = sdfed_secagg_client_share(c, request, len, &source, pairs, &wasm.err);
    if (rc == SDFED_OK) { /* count, then client (4) || share key (32) || info (64) || pair (80) each */
        const size_t entry = 4 + 32 + SDFED_SECAGG_INFO_BYTES + SDFED_SECAGG_PAIR_BYTES;
        uint32_t count = 0;
        for (int slot = 0; slot < c->holders; slot++) count += (uint32_t)sdfed_secagg_client_recipient(c, slot);
        unsigned char *o = out_reserve(4 + entry * count);
        rc = o ? SDFED_OK : SDFED_ERR_NOMEM;
        if (o) {
            sdfed_secagg_put_be32(o, count);
            o += 4;
        }
        for (int slot = 0; slot < c->holders && rc == SDFED_OK; slot++) {
            if (!sdfed_secagg_client_recipient(c, slot)) continue;
            sdfed_secagg_put_be32(o, (uint32_t)c->holder[slot]);
            memcpy(o + 4, c->keys + 64 * (size_t)slot + 32, 32);
            rc = sdfed_secagg_info(SDFED_SECAGG_PURPOSE_SHARE, c->session, c->round, (uint32_t)c->self,
                                   (uint32_t)c->holder[slot], o + 36, &wasm.err);
            memcpy(o + 36 + SDFED_SECAGG_INFO_BYTES, pairs + (size_t)SDFED_SECAGG_PAIR_BYTES * slot,
                   SDFED_SECAGG_PAIR_BYTES);
            o += entry;
        }
        if (rc) sdfed_secagg_client_abandon(c);
    }
    memset(pairs, 0, SDFED_SECAGG_PAIR_BYTES * (most ? most : 1));
    free(pairs);
    return rc;
}

int wc_secagg_shares(const uint8_t *sealed, size_t len) {
    sdfed_secagg_client *c = &wasm.secagg;
    size_t count = 0;
    for (int slot = 0; slot < c->holders; slot++) count += (size_t)sdfed_secagg_client_recipient(c, slot);
    if (c->stage == SDFED_SECAGG_SHARE && len != count * SDFED_SECAGG_SEALED_BYTES) {
        sdfed_secagg_client_abandon(c);
        return sdfed_fail(&wasm.err, SDFED_ERR_ARG, "secagg: %zu bytes of sealed pairs, %zu pairs take %zu", len, count,
                          count * SDFED_SECAGG_SEALED_BYTES);
    }
    out_wipe(); /* the share jobs' pairs */
    return sdfed_secagg_client_write_shares(c, sealed, &wasm.out, &wasm.err);
}

int wc_secagg_relayed(const uint8_t *request, size_t len) {
    sdfed_secagg_client *c = &wasm.secagg;
    int *slots = malloc(sizeof *slots * (size_t)(c->holders > 0 ? c->holders : 1));
    if (!slots) return fail(SDFED_ERR_NOMEM, "secagg: out of memory");
    sdfed_secagg_list relayed = {0};
    int rc = sdfed_secagg_client_relayed(c, request, len, &relayed, slots, &wasm.err);
    if (rc == SDFED_OK) { /* count, then slot (4) || sender (4) || share key (32) || info (64) || sealed (108) each */
        const size_t entry = 8 + 32 + SDFED_SECAGG_INFO_BYTES + SDFED_SECAGG_SEALED_BYTES;
        unsigned char *o = out_reserve(4 + entry * (size_t)relayed.count);
        rc = o ? SDFED_OK : SDFED_ERR_NOMEM;
        if (o) {
            sdfed_secagg_put_be32(o, (uint32_t)relayed.count);
            o += 4;
        }
        for (int i = 0; i < relayed.count && rc == SDFED_OK; i++) {
            const unsigned char *e = relayed.entries + (size_t)SDFED_SECAGG_RELAYED_BYTES * i;
            int slot = slots[i], j = c->holder[slot];
            sdfed_secagg_put_be32(o, (uint32_t)slot);
            sdfed_secagg_put_be32(o + 4, (uint32_t)j);
            memcpy(o + 8, c->keys + 64 * (size_t)slot + 32, 32);
            rc = sdfed_secagg_info(SDFED_SECAGG_PURPOSE_SHARE, c->session, c->round, (uint32_t)j, (uint32_t)c->self,
                                   o + 40, &wasm.err);
            memcpy(o + 40 + SDFED_SECAGG_INFO_BYTES, e + 4, SDFED_SECAGG_SEALED_BYTES);
            o += entry;
        }
        if (rc) sdfed_secagg_client_abandon(c);
    }
    free(slots);
    return rc;
}

int wc_secagg_keep_pair(int slot, const uint8_t *pair) {
    return sdfed_secagg_client_keep_pair(&wasm.secagg, slot, pair, &wasm.err);
}

int wc_secagg_input(const float *x, const float *g, double sample_count, double client, const uint8_t *noise,
                    size_t noise_len) {
    sdfed_secagg_client *c = &wasm.secagg;
    int64_t count = 0, who = 0;
    int rc = whole(sample_count, 0, "the sample count", &count);
    if (rc == SDFED_OK) rc = whole(client, 0, "the client", &who);
    if (rc) return rc;
    sdfed_rng state;
    sdfed_secagg_bytes rounding = sdfed_secagg_rounding(&state, wasm.task.seed, c->round, who);
    sdfed_secagg_buffer buffer = {.bytes = noise, .size = noise_len, .used = 0};
    sdfed_secagg_bytes own = sdfed_secagg_buffer_source(&buffer);
    rc = sdfed_secagg_client_input(c, x, g, count, &rounding, noise_len ? &own : NULL, &wasm.err);
    if (rc) return rc;
    /* stream bytes, count, then slot (4) || client (4) || mask key (32) || info (64) each */
    const size_t entry = 8 + 32 + SDFED_SECAGG_INFO_BYTES;
    uint32_t masks = 0;
    for (int slot = 0; slot < c->holders; slot++) masks += (uint32_t)sdfed_secagg_client_masks_with(c, slot);
    unsigned char *o = out_reserve(8 + entry * masks);
    rc = o ? SDFED_OK : SDFED_ERR_NOMEM;
    if (o) {
        sdfed_secagg_put_be32(o, (uint32_t)sdfed_secagg_stream_bytes(c->plan.ring.ring_bits, c->plan.dims + 1));
        sdfed_secagg_put_be32(o + 4, masks);
        o += 8;
    }
    for (int slot = 0; slot < c->holders && rc == SDFED_OK; slot++) {
        if (!sdfed_secagg_client_masks_with(c, slot)) continue;
        uint32_t i = (uint32_t)c->self, j = (uint32_t)c->holder[slot];
        sdfed_secagg_put_be32(o, (uint32_t)slot);
        sdfed_secagg_put_be32(o + 4, j);
        if (i != j) memcpy(o + 8, c->keys + 64 * (size_t)slot, 32); /* its own slot: zeros */
        int low = i < j ? i : j, high = i < j ? j : i;
        int purpose = i == j ? SDFED_SECAGG_PURPOSE_SELF : SDFED_SECAGG_PURPOSE_PAIR;
        rc = sdfed_secagg_info(purpose, c->session, c->round, low, high, o + 40, &wasm.err);
        o += entry;
    }
    if (rc) sdfed_secagg_client_abandon(c);
    return rc;
}

int wc_secagg_add_mask(int slot, const uint8_t *stream, size_t len) {
    return sdfed_secagg_client_add_mask(&wasm.secagg, slot, stream, len, &wasm.err);
}

int wc_secagg_masked(void) { return sdfed_secagg_client_write_masked(&wasm.secagg, &wasm.out, &wasm.err); }

int wc_secagg_unmask(const uint8_t *request, size_t len) {
    out_wipe(); /* a refusal leaves nothing to send */
    return sdfed_secagg_client_unmask(&wasm.secagg, request, len, &wasm.out, &wasm.err);
}

void wc_secagg_abandon(void) { sdfed_secagg_client_abandon(&wasm.secagg); }

int wc_secagg_input_values(void) {
    const sdfed_secagg_client *c = &wasm.secagg;
    if (!c->have_input) return fail(SDFED_ERR_ARG, "secagg: no input made in this round");
    unsigned char *o = out_reserve(8 * (c->plan.dims + 1));
    for (size_t j = 0; o && j <= c->plan.dims; j++)
        for (int i = 0; i < 8; i++) o[8 * j + (size_t)i] = (unsigned char)(c->input[j] >> (8 * i));
    return o ? SDFED_OK : SDFED_ERR_NOMEM;
}

const char *wc_secagg_code_name(int code) { return sdfed_secagg_code_name(code); }

int wc_secure_frame_encode(const uint8_t *msg, size_t len) {
    out_wipe();
    return sdfed_secure_frame_encode(msg, len, &wasm.out, &wasm.err);
}

int wc_secure_frame_decode(const uint8_t *frame, size_t len) {
    const unsigned char *msg;
    size_t msg_len;
    sdfed_code code;
    int rc = sdfed_secure_frame_decode(frame, len, &msg, &msg_len, &code, &wasm.err);
    unsigned char *o = rc ? NULL : out_reserve(msg_len);
    if (o) memcpy(o, msg, msg_len);
    if (rc) return rc;
    return o ? SDFED_OK : SDFED_ERR_NOMEM;
}

const char *wc_secagg_msg_name(int kind) { return sdfed_secagg_msg_name(kind); }

int wc_secagg_info(int purpose, const uint8_t *session, double round, double a, double b) {
    int64_t r = 0, x = 0, y = 0;
    int rc = whole(round, -9007199254740992.0, "the round", &r);
    if (rc == SDFED_OK) rc = whole(a, 0, "client a", &x);
    if (rc == SDFED_OK) rc = whole(b, 0, "client b", &y);
    if (rc == SDFED_OK && (x > UINT32_MAX || y > UINT32_MAX)) rc = fail(SDFED_ERR_ARG, "secagg: a client beyond 2^32");
    unsigned char *info = rc ? NULL : out_reserve(SDFED_SECAGG_INFO_BYTES);
    if (rc == SDFED_OK && !info) rc = SDFED_ERR_NOMEM;
    if (rc == SDFED_OK) rc = sdfed_secagg_info(purpose, session, r, (uint32_t)x, (uint32_t)y, info, &wasm.err);
    if (rc) wasm.out.size = 0;
    return rc;
}

int wc_secagg_session_input(double round, int n, const uint8_t *mask_keys, const uint8_t *share_keys) {
    int64_t r = 0;
    int rc = whole(round, -9007199254740992.0, "the round", &r);
    if (rc == SDFED_OK && (n < 1 || n > SDFED_SECAGG_MAX_CLIENTS)) rc = fail(SDFED_ERR_ARG, "secagg: n out of range");
    if (rc) return rc;
    unsigned char *advertised = malloc((size_t)n), *scratch = malloc(64 * (size_t)n);
    unsigned char *o = out_reserve(SDFED_SECAGG_SESSION_INPUT_BYTES(n));
    size_t bytes = 0;
    if (!advertised || !scratch || !o) rc = fail(SDFED_ERR_NOMEM, "secagg: out of memory");
    if (rc == SDFED_OK) {
        memset(advertised, 1, (size_t)n);
        rc = sdfed_secagg_session_input(r, n, mask_keys, share_keys, advertised, scratch, o, &bytes, &wasm.err);
    }
    free(advertised);
    free(scratch);
    wasm.out.size = rc ? 0 : bytes;
    return rc;
}

int wc_secagg_ring_add(int ring_bits, uint64_t *v, size_t count, const uint8_t *stream, size_t len, int sign) {
    if (ring_bits < 2 || ring_bits > 64 || (sign != 1 && sign != -1))
        return fail(SDFED_ERR_ARG, "secagg: ring_bits 2 to 64, sign +1 or -1");
    return sdfed_secagg_ring_add_stream(ring_bits, v, count, stream, len, sign, &wasm.err);
}

const uint8_t *wc_out_data(void) { return wasm.out.data; }
size_t wc_out_size(void) { return wasm.out.size; }
const char *wc_error(void) { return wasm.err.message; }
