/* sdfed check-reference: runs the model against tensors the reference
 * PyTorch CLIP produced (../shared/clip/mini-vit.reference.safetensors) and
 * prints, per check, the max abs error, the relative error (max abs error /
 * max abs expected value) and PASS/FAIL, then "reference: N passed, M failed".
 *
 * Tolerances (those of ../shared/clip/README.md): features and logits 1e-4,
 * losses 1e-4, gradients 1e-3 relative; x10 for F16 models. Q8_0 models are
 * judged by cosine similarity instead, per feature vector (>= 0.999). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dtype.h"
#include "json.h"
#include "safetensors.h"
#include "text_encoder.h"
#include "image_encoder.h"

typedef struct checker {
    cli_model *m;
    const sdfed_kernels *k;
    sdfed_safetensors ref;
    sdfed_arena arena;
    int passed, failed;
} checker;

#define TOL_FEATURES 1e-4
#define COSINE_Q8_0 0.999

static void report(checker *c, const char *name, int pass, const char *detail) {
    printf("%-24s %s  %s\n", name, detail, pass ? "PASS" : "FAIL");
    if (pass)
        c->passed++;
    else
        c->failed++;
}

static void report_error(checker *c, const char *name, const sdfed_error *err) {
    char detail[SDFED_ERROR_MESSAGE_MAX + 16];
    snprintf(detail, sizeof detail, "error: %s", err->message);
    report(c, name, 0, detail);
}

/* Loads reference tensor `name` as f32 (or int32) with n_values values. */
static void *load(checker *c, const char *name, size_t n_values, int integer, sdfed_error *err) {
    const sdfed_st_tensor *t = sdfed_safetensors_find(&c->ref, name);
    if (!t) {
        sdfed_fail(err, SDFED_ERR_NOT_FOUND, "reference tensor '%s' is missing", name);
        return NULL;
    }
    if ((size_t)t->n_elements != n_values) {
        sdfed_fail(err, SDFED_ERR_FORMAT, "reference tensor '%s' holds %lld values, the model needs %zu", name,
                   (long long)t->n_elements, n_values);
        return NULL;
    }
    void *out = sdfed_arena_alloc(&c->arena, n_values * 4);
    if (!out) {
        sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
        return NULL;
    }
    int rc = integer ? sdfed_st_to_i32(t, out, err) : sdfed_st_to_f32(t, out, err);
    return rc ? NULL : out;
}

/* Compares n vectors of `dim` values against the reference, with the
 * tolerance `tol` (scaled for F16) or, for Q8_0, by cosine similarity. */
static void compare(checker *c, const char *name, const float *got, const float *want, int n, int dim, double tol,
                    double min_cosine) {
    double max_err = 0.0, max_ref = 0.0, worst_cos = 1.0;
    int finite = 1;
    for (int i = 0; i < n; i++) {
        double dot = 0.0, ng = 0.0, nw = 0.0;
        for (int d = 0; d < dim; d++) {
            double g = got[(size_t)i * dim + d], w = want[(size_t)i * dim + d];
            if (!isfinite(g)) finite = 0;
            max_err = fmax(max_err, fabs(g - w));
            max_ref = fmax(max_ref, fabs(w));
            dot += g * w;
            ng += g * g;
            nw += w * w;
        }
        double cos = ng > 0 && nw > 0 ? dot / sqrt(ng * nw) : (ng == nw ? 1.0 : 0.0);
        worst_cos = fmin(worst_cos, cos);
    }
    double rel = max_ref > 0 ? max_err / max_ref : max_err;
    char detail[160];
    int type = c->m->clip.weight_type, pass;
    if (type == SDFED_TYPE_Q8_0) {
        pass = finite && worst_cos >= min_cosine;
        snprintf(detail, sizeof detail, "max_abs %.3e  rel %.3e  min_cosine %.6f (q8_0: cosine >= %g)", max_err, rel,
                 worst_cos, min_cosine);
    } else {
        double limit = type == SDFED_TYPE_F16 ? tol * 10 : tol;
        pass = finite && rel <= limit;
        snprintf(detail, sizeof detail, "max_abs %.3e  rel %.3e  (%s: rel <= %g)", max_err, rel, sdfed_type_name(type),
                 limit);
    }
    report(c, name, pass, detail);
}

static void check_tokenizer(checker *c) {
    sdfed_error err = {0};
    int ctx = c->m->clip.cfg.context_length;
    char *texts = sdfed_safetensors_metadata(&c->ref, "tokenizer_texts");
    sdfed_json j;
    if (!texts || sdfed_json_parse(&j, texts, strlen(texts), &err) || j.nodes[0].type != SDFED_JSON_ARRAY) {
        if (!err.message[0]) sdfed_fail(&err, SDFED_ERR_FORMAT, "metadata 'tokenizer_texts' is missing or not a list");
        report_error(c, "tokenizer.ids", &err);
        free(texts);
        return;
    }
    int n = j.nodes[0].size, mismatches = 0, first_bad = -1;
    const int32_t *want = load(c, "tokenizer.ids", (size_t)n * ctx, 1, &err);
    int32_t *got = sdfed_arena_alloc(&c->arena, sizeof *got * (size_t)ctx);
    for (int i = 0; i < n && want && got; i++) {
        char *text = sdfed_json_string_dup(&j, sdfed_json_at(&j, 0, i));
        int len;
        int bad = !text || sdfed_tokenize(&c->m->tokenizer, text, strlen(text), ctx, got, &len, &err) != SDFED_OK ||
                  memcmp(got, want + (size_t)i * ctx, sizeof *got * (size_t)ctx) != 0;
        if (bad && first_bad < 0) first_bad = i;
        mismatches += bad;
        free(text);
    }
    if (!want || !got) {
        report_error(c, "tokenizer.ids", &err);
    } else {
        char detail[160];
        if (mismatches)
            snprintf(detail, sizeof detail, "%d texts, %d differ (first: text %d)  max_abs n/a  rel n/a", n, mismatches,
                     first_bad);
        else
            snprintf(detail, sizeof detail, "%d texts, all ids equal  max_abs 0  rel 0  (exact)", n);
        report(c, "tokenizer.ids", mismatches == 0 && n > 0, detail);
    }
    sdfed_json_free(&j);
    free(texts);
}

static void check_text_features(checker *c) {
    sdfed_error err = {0};
    const sdfed_clip_config *cfg = &c->m->clip.cfg;
    const sdfed_st_tensor *t = sdfed_safetensors_find(&c->ref, "text.ids");
    int n = t && t->n_dims == 2 ? (int)t->shape[0] : 0;
    const int32_t *ids = n ? load(c, "text.ids", (size_t)n * cfg->context_length, 1, &err) : NULL;
    const float *want = ids ? load(c, "text.features", (size_t)n * cfg->embed_dim, 0, &err) : NULL;
    float *got = sdfed_arena_floats(&c->arena, (size_t)n * cfg->embed_dim);
    if (!n) sdfed_fail(&err, SDFED_ERR_NOT_FOUND, "reference tensor 'text.ids' is missing");
    if (want && got) {
        sdfed_text_batch batch = {n, ids, cfg->context_length, NULL, NULL, 0};
        if (sdfed_text_encode(&c->m->clip, c->k, &batch, got, &c->arena, &err) == SDFED_OK) {
            compare(c, "text.features", got, want, n, cfg->embed_dim, TOL_FEATURES, COSINE_Q8_0);
            return;
        }
    }
    report_error(c, "text.features", &err);
}

static void check_image_features(checker *c) {
    sdfed_error err = {0};
    const sdfed_clip_config *cfg = &c->m->clip.cfg;
    const sdfed_st_tensor *t = sdfed_safetensors_find(&c->ref, "image.pixels");
    int n = t && t->n_dims == 4 ? (int)t->shape[0] : 0;
    size_t per_image = (size_t)3 * cfg->image_size * cfg->image_size;
    const float *pixels = n ? load(c, "image.pixels", (size_t)n * per_image, 0, &err) : NULL;
    const float *want = pixels ? load(c, "image.features", (size_t)n * cfg->embed_dim, 0, &err) : NULL;
    float *got = sdfed_arena_floats(&c->arena, (size_t)n * cfg->embed_dim);
    if (!n) sdfed_fail(&err, SDFED_ERR_NOT_FOUND, "reference tensor 'image.pixels' is missing");
    if (want && got) {
        if (sdfed_image_encode(&c->m->clip, c->k, pixels, n, got, &c->arena, &err) == SDFED_OK) {
            compare(c, "image.features", got, want, n, cfg->embed_dim, TOL_FEATURES, COSINE_Q8_0);
            return;
        }
    }
    report_error(c, "image.features", &err);
}

int cmd_check_reference(int argc, char **argv) {
    const char *model = NULL, *reference = NULL, *backend = NULL;
    const cli_option options[] = {
        {"--model", &model, NULL}, {"--reference", &reference, NULL}, {"--backend", &backend, NULL}};
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    int n_pos = 0, status = pos ? cli_parse(argc, argv, options, 3, &pos, &n_pos) : CLI_FAILED;
    free(pos);
    if (status) return status;
    if (n_pos) return cli_error(CLI_USAGE, "check-reference: unexpected argument (use --model and --reference)");
    if (!model || !reference) return cli_error(CLI_USAGE, "check-reference: --model and --reference are required");
    checker c = {0};
    c.k = cli_backend(backend);
    if (!c.k) return cli_error(CLI_USAGE, "check-reference: backend '%s' is not in this build", backend);

    cli_model m;
    file_map ref_file;
    sdfed_error err = {0};
    if (cli_model_open(&m, model, &err)) return cli_error(CLI_FAILED, "check-reference: %s", err.message);
    int rc = file_map_open(&ref_file, reference, &err);
    if (rc == SDFED_OK && (rc = sdfed_safetensors_open(&c.ref, ref_file.data, ref_file.size, &err))) {
        sdfed_fail_context(&err, rc, "%s", reference);
        file_map_close(&ref_file);
    }
    if (rc) {
        cli_model_close(&m);
        return cli_error(CLI_FAILED, "check-reference: %s", err.message);
    }
    c.m = &m;
    sdfed_arena_init(&c.arena);
    printf("check-reference: model %s (matrices %s), kernels %s\n", model, sdfed_type_name(m.clip.weight_type),
           c.k->name);

    void (*const checks[])(checker *) = {check_tokenizer, check_text_features, check_image_features};
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        checks[i](&c);
        sdfed_arena_reset(&c.arena);
    }
    printf("reference: %d passed, %d failed\n", c.passed, c.failed);

    sdfed_arena_free(&c.arena);
    sdfed_safetensors_close(&c.ref);
    file_map_close(&ref_file);
    cli_model_close(&m);
    return c.failed == 0 && c.passed > 0 ? CLI_OK : CLI_FAILED;
}
