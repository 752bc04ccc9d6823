/* sdfed check-reference: runs the model against tensors the reference
 * PyTorch CLIP produced (../shared/clip/mini-vit.reference.safetensors); see
 * check_reference.h for the output and the tolerances. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "check_reference.h"

void check_report(checker *c, const char *name, int pass, const char *detail) {
    printf("%-34s %s  %s\n", name, detail, pass ? "PASS" : "FAIL");
    if (pass)
        c->passed++;
    else
        c->failed++;
}

void check_report_error(checker *c, const char *name, const sdfed_error *err) {
    char detail[SDFED_ERROR_MESSAGE_MAX + 16];
    snprintf(detail, sizeof detail, "error: %s", err->message);
    check_report(c, name, 0, detail);
}

void *check_load(checker *c, const char *name, size_t n_values, int integer, sdfed_error *err) {
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

check_result check_measure(checker *c, const float *got, const float *want, int n, int dim, check_kind kind) {
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
        double cos = ng == nw ? 1.0 : 0.0; /* two zero vectors are alike; a zero and another are not */
        if (ng > 0 && nw > 0) cos = dot / sqrt(ng * nw);
        worst_cos = fmin(worst_cos, cos);
    }
    double rel = max_ref > 0 ? max_err / max_ref : max_err;
    int type = kind == KIND_MODEL_FREE ? SDFED_TYPE_F32 : c->m->clip.weight_type;
    double tol = kind == KIND_GRADIENT ? 1e-3 : 1e-4;
    check_result r;
    if (type == SDFED_TYPE_Q8_0 && kind != KIND_LOSS) {
        /* a row of C logits is judged like a gradient: few values moving together */
        double min_cos = kind == KIND_GRADIENT || dim < 16 ? 0.99 : 0.999;
        r.pass = finite && worst_cos >= min_cos;
        snprintf(r.detail, sizeof r.detail, "max_abs %.3e  rel %.3e  min_cosine %.6f (q8_0: cosine >= %g)", max_err,
                 rel, worst_cos, min_cos);
    } else {
        if (type == SDFED_TYPE_Q8_0)
            tol = 1e-2;
        else if (type == SDFED_TYPE_F16)
            tol *= 10;
        r.pass = finite && rel <= tol;
        snprintf(r.detail, sizeof r.detail, "max_abs %.3e  rel %.3e  (%s: rel <= %g)", max_err, rel,
                 kind == KIND_MODEL_FREE ? "model-free" : sdfed_type_name(type), tol);
    }
    return r;
}

void check_compare(checker *c, const char *name, const float *got, const float *want, int n, int dim, check_kind kind) {
    check_result r = check_measure(c, got, want, n, dim, kind);
    check_report(c, name, r.pass, r.detail);
}

void check_compare_scaled_loss(checker *c, const char *name, float got, float want, double scale,
                               const char *scale_name) {
    int type = c->m->clip.weight_type;
    if (type == SDFED_TYPE_F32) {
        check_compare(c, name, &got, &want, 1, 1, KIND_LOSS);
        return;
    }
    double err = fabs((double)got - want), tol = type == SDFED_TYPE_F16 ? 1e-3 : 1e-2;
    char detail[200];
    snprintf(detail, sizeof detail, "max_abs %.3e  rel %.3e  err/%s %.3e  (%s: err/%s <= %g)", err,
             want != 0.0f ? err / fabs(want) : err, scale_name, err / scale, sdfed_type_name(type), scale_name, tol);
    check_report(c, name, isfinite(got) && err / scale <= tol, detail);
}

const char cmd_check_reference_help[] =
    "usage: sdfed check-reference --model MODEL.gguf --reference REFERENCE.safetensors [--backend NAME]\n"
    "\n"
    "Checks a model against reference tensors computed by openai/CLIP in PyTorch (the tokenizer, text and\n"
    "image features, the prompt autodiff, SDFed's SVD, projector, losses and gradients), one line per check\n"
    "with its error and PASS or FAIL, ending \"reference: N passed, M failed\"; exits 0 only when nothing\n"
    "failed. The reference and its model ship beside the project in ../shared/clip (mini-vit).\n"
    "\n"
    "  --model FILE      the model converted from the reference's checkpoint\n"
    "  --reference FILE  the reference tensors (mini-vit.reference.safetensors)\n"
    "  --backend NAME    the kernels (see 'sdfed help' for this build's)\n";

int cmd_check_reference(int argc, char **argv) {
    const char *model = NULL, *reference = NULL, *backend = NULL;
    const native_cli_option options[] = {{.name = "--model", .value = &model, .flag = NULL},
                                         {.name = "--reference", .value = &reference, .flag = NULL},
                                         {.name = "--backend", .value = &backend, .flag = NULL}};
    int status = native_cli_parse(argc, argv, options, 3, NULL, NULL);
    if (status) return status;
    if (!model || !reference)
        return native_cli_error(CLI_USAGE, "check-reference: --model and --reference are required");
    checker c = {0};
    c.k = native_backend(backend);
    if (!c.k) return native_cli_error(CLI_USAGE, "check-reference: backend '%s' is not in this build", backend);

    native_model m;
    native_file_map ref_file;
    sdfed_error err = {0};
    if (native_model_open(&m, model, &err)) return native_cli_error(CLI_FAILED, "check-reference: %s", err.message);
    sdfed_clip_pack(&m.clip, c.k, SDFED_CLIP_TEXT | SDFED_CLIP_IMAGE);
    int rc = native_file_map_open(&ref_file, reference, &err);
    if (rc == SDFED_OK && (rc = sdfed_safetensors_open(&c.ref, ref_file.data, ref_file.size, &err))) {
        sdfed_fail_context(&err, rc, "%s", reference);
        native_file_map_close(&ref_file);
    }
    if (rc) {
        native_model_close(&m);
        return native_cli_error(CLI_FAILED, "check-reference: %s", err.message);
    }
    c.m = &m;
    sdfed_arena_init(&c.arena);
    printf("check-reference: model %s (matrices %s), kernels %s\n", model, sdfed_type_name(m.clip.weight_type),
           c.k->name);

    void (*const checks[])(checker *) = {check_tokenizer, check_text_features, check_image_features, check_prompts,
                                         check_sdfed};
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        checks[i](&c);
        sdfed_arena_reset(&c.arena);
    }
    printf("reference: %d passed, %d failed\n", c.passed, c.failed);

    sdfed_arena_free(&c.arena);
    sdfed_safetensors_close(&c.ref);
    native_file_map_close(&ref_file);
    native_model_close(&m);
    return c.failed == 0 && c.passed > 0 ? CLI_OK : CLI_FAILED;
}
