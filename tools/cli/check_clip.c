/* check-reference, first group: the tokenizer against clip.tokenize, and
 * the text and image encoders against encode_text / encode_image. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "check_reference.h"
#include "clip/image_encoder.h"
#include "clip/text_encoder.h"

void check_tokenizer(checker *c) {
    sdfed_error err = {0};
    int ctx = c->m->clip.cfg.context_length;
    char *texts = sdfed_safetensors_metadata(&c->ref, "tokenizer_texts");
    sdfed_json j;
    if (!texts || sdfed_json_parse(&j, texts, strlen(texts), &err) || j.nodes[0].type != SDFED_JSON_ARRAY) {
        if (!err.message[0]) sdfed_fail(&err, SDFED_ERR_FORMAT, "metadata 'tokenizer_texts' is missing or not a list");
        check_report_error(c, "tokenizer.ids", &err);
        free(texts);
        return;
    }
    int n = j.nodes[0].size, mismatches = 0, first_bad = -1;
    const int32_t *want = check_load(c, "tokenizer.ids", (size_t)n * ctx, 1, &err);
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
        check_report_error(c, "tokenizer.ids", &err);
    } else {
        char detail[160];
        if (mismatches)
            snprintf(detail, sizeof detail, "%d texts, %d differ (first: text %d)  max_abs n/a  rel n/a", n, mismatches,
                     first_bad);
        else
            snprintf(detail, sizeof detail, "%d texts, all ids equal  max_abs 0  rel 0  (exact)", n);
        check_report(c, "tokenizer.ids", mismatches == 0 && n > 0, detail);
    }
    sdfed_json_free(&j);
    free(texts);
}

void check_text_features(checker *c) {
    sdfed_error err = {0};
    const sdfed_clip_config *cfg = &c->m->clip.cfg;
    const sdfed_st_tensor *t = sdfed_safetensors_find(&c->ref, "text.ids");
    int n = t && t->n_dims == 2 ? (int)t->shape[0] : 0;
    const int32_t *ids = n ? check_load(c, "text.ids", (size_t)n * cfg->context_length, 1, &err) : NULL;
    const float *want = ids ? check_load(c, "text.features", (size_t)n * cfg->embed_dim, 0, &err) : NULL;
    float *got = sdfed_arena_floats(&c->arena, (size_t)n * cfg->embed_dim);
    if (!n) sdfed_fail(&err, SDFED_ERR_NOT_FOUND, "reference tensor 'text.ids' is missing");
    if (want && got) {
        sdfed_text_batch batch = {
            .n_seqs = n, .ids = ids, .stride = cfg->context_length, .splice = NULL, .splice_pos = NULL, .n_splice = 0};
        if (sdfed_text_encode(&c->m->clip, c->k, &batch, got, &c->arena, &err) == SDFED_OK) {
            check_compare(c, "text.features", got, want, n, cfg->embed_dim, KIND_FEATURES);
            return;
        }
    }
    check_report_error(c, "text.features", &err);
}

void check_image_features(checker *c) {
    sdfed_error err = {0};
    const sdfed_clip_config *cfg = &c->m->clip.cfg;
    const sdfed_st_tensor *t = sdfed_safetensors_find(&c->ref, "image.pixels");
    int n = t && t->n_dims == 4 ? (int)t->shape[0] : 0;
    size_t per_image = (size_t)3 * cfg->image_size * cfg->image_size;
    const float *pixels = n ? check_load(c, "image.pixels", (size_t)n * per_image, 0, &err) : NULL;
    const float *want = pixels ? check_load(c, "image.features", (size_t)n * cfg->embed_dim, 0, &err) : NULL;
    float *got = sdfed_arena_floats(&c->arena, (size_t)n * cfg->embed_dim);
    if (!n) sdfed_fail(&err, SDFED_ERR_NOT_FOUND, "reference tensor 'image.pixels' is missing");
    if (want && got) {
        if (sdfed_image_encode(&c->m->clip, c->k, pixels, n, got, &c->arena, &err) == SDFED_OK) {
            check_compare(c, "image.features", got, want, n, cfg->embed_dim, KIND_FEATURES);
            return;
        }
    }
    check_report_error(c, "image.features", &err);
}
