/* Prompt features f(P) in the CoOp layout, forward and backward. */
#include "prompt/prompt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "clip/layers.h"

void sdfed_classes_free(sdfed_classes *c) {
    free(c->ids);
    free(c->first);
    free(c->zeroshot_ids);
    free(c->zeroshot_first);
    free(c->init_ids);
    memset(c, 0, sizeof *c);
}

int sdfed_classes_init_json(sdfed_classes *c, const sdfed_tokenizer *tok, int context_length, const char *json,
                            size_t len, int max_names, sdfed_error *err) {
    sdfed_json j;
    int rc = sdfed_json_parse(&j, json, len, err);
    if (rc) return rc;
    int n = j.nodes[0].type == SDFED_JSON_ARRAY ? j.nodes[0].size : 0;
    char **names = n >= 1 && n <= max_names ? calloc((size_t)n, sizeof *names) : NULL;
    if (!names)
        rc = n >= 1 && n <= max_names
                 ? sdfed_fail(err, SDFED_ERR_NOMEM, "classes: out of memory")
                 : sdfed_fail(err, SDFED_ERR_FORMAT, "classes: an array of 1..%d names is needed", max_names);
    for (int i = 0; rc == SDFED_OK && i < n; i++)
        if (!(names[i] = sdfed_json_string_dup(&j, sdfed_json_at(&j, 0, i))))
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "classes: every name must be a string");
    if (rc == SDFED_OK) rc = sdfed_classes_init(c, tok, context_length, (const char *const *)names, n, err);
    for (int i = 0; names && i < n; i++) free(names[i]);
    free(names);
    sdfed_json_free(&j);
    return rc;
}

int sdfed_classes_from_ids(sdfed_classes *c, int32_t sot, int32_t eot, int context_length, const int32_t *const *ids,
                           const int *lens, int n_classes, sdfed_error *err) {
    memset(c, 0, sizeof *c);
    if (n_classes < 1) return sdfed_fail(err, SDFED_ERR_ARG, "classes: no classes given");
    size_t total = 0;
    for (int i = 0; i < n_classes; i++) {
        /* SOT, at least one prompt vector, the name, EOT */
        if (lens[i] < 1 || lens[i] + 3 > context_length)
            return sdfed_fail(err, SDFED_ERR_ARG, "classes: class %d has %d tokens (1..%d fit the context)", i, lens[i],
                              context_length - 3);
        total += (size_t)lens[i];
    }
    c->ids = malloc(sizeof *c->ids * total);
    c->first = malloc(sizeof *c->first * (size_t)(n_classes + 1));
    if (!c->ids || !c->first) {
        sdfed_classes_free(c);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "classes: out of memory");
    }
    c->first[0] = 0;
    for (int i = 0; i < n_classes; i++) {
        memcpy(c->ids + c->first[i], ids[i], sizeof *c->ids * (size_t)lens[i]);
        c->first[i + 1] = c->first[i] + lens[i];
    }
    c->n_classes = n_classes;
    c->sot = sot;
    c->eot = eot;
    c->context_length = context_length;
    return SDFED_OK;
}

/* ids[first[i] ..] = the tokens of sentence i, back to back; each must fit
 * between SOT and EOT. what names the sentences in errors. */
static int encode_all(const sdfed_tokenizer *tok, int context_length, const char *const *sentences, int n,
                      const char *what, int32_t **ids_out, int **first_out, sdfed_error *err) {
    int cap = context_length - 2;
    int32_t *ids = malloc(sizeof *ids * ((size_t)n * cap + 1));
    int *first = malloc(sizeof *first * (size_t)(n + 1));
    int rc = ids && first ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "classes: out of memory");
    if (rc == SDFED_OK) first[0] = 0;
    for (int i = 0; i < n && rc == SDFED_OK; i++) {
        int len = 0;
        rc = sdfed_tokenizer_encode(tok, sentences[i], strlen(sentences[i]), ids + first[i], cap, &len, err);
        if (rc) sdfed_fail_context(err, rc, "%s '%s' (at most %d tokens fit the context)", what, sentences[i], cap);
        first[i + 1] = first[i] + len;
    }
    if (rc) {
        free(ids);
        free(first);
        return rc;
    }
    *ids_out = ids;
    *first_out = first;
    return SDFED_OK;
}

/* The template with its one {} replaced by text (heap), or NULL. */
static char *fill_template(const char *template_text, const char *text) {
    const char *slot = strstr(template_text, "{}");
    size_t before = (size_t)(slot - template_text), len = strlen(text), after = strlen(slot + 2);
    char *s = malloc(before + len + after + 1);
    if (!s) return NULL;
    memcpy(s, template_text, before);
    memcpy(s + before, text, len);
    memcpy(s + before + len, slot + 2, after + 1);
    return s;
}

int sdfed_classes_build(sdfed_classes *c, const sdfed_tokenizer *tok, int context_length, const sdfed_class_text *text,
                        sdfed_error *err) {
    memset(c, 0, sizeof *c);
    int n = text->n;
    const char *template_text = text->template_text ? text->template_text : SDFED_TEMPLATE_DEFAULT;
    const char *slot = strstr(template_text, "{}");
    if (n < 1) return sdfed_fail(err, SDFED_ERR_ARG, "classes: no classes given");
    if (!slot || strstr(slot + 2, "{}"))
        return sdfed_fail(err, SDFED_ERR_ARG, "classes: the template '%s' must hold exactly one {}", template_text);
    if (context_length < 4)
        return sdfed_fail(err, SDFED_ERR_ARG, "classes: a context of %d is too short", context_length);
    /* "<text>." after the learned prompt (CoOp), and the filled template */
    char **sentences = calloc((size_t)n * 2, sizeof *sentences);
    int rc = sentences ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "classes: out of memory");
    for (int i = 0; i < n && rc == SDFED_OK; i++) {
        size_t len = strlen(text->texts[i]);
        if ((sentences[i] = malloc(len + 2))) {
            memcpy(sentences[i], text->texts[i], len);
            memcpy(sentences[i] + len, ".", 2);
        }
        sentences[n + i] = fill_template(template_text, text->texts[i]);
        if (!sentences[i] || !sentences[n + i]) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "classes: out of memory");
    }
    int32_t *ids = NULL;
    int *first = NULL;
    if (rc == SDFED_OK)
        rc = encode_all(tok, context_length, (const char *const *)sentences, n, "class", &ids, &first, err);
    if (rc == SDFED_OK) {
        const int32_t **rows = malloc(sizeof *rows * (size_t)n);
        int *lens = malloc(sizeof *lens * (size_t)n);
        rc = rows && lens ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "classes: out of memory");
        for (int i = 0; i < n && rc == SDFED_OK; i++) {
            rows[i] = ids + first[i];
            lens[i] = first[i + 1] - first[i];
        }
        if (rc == SDFED_OK)
            rc = sdfed_classes_from_ids(c, tok->sot_id, tok->eot_id, context_length, rows, lens, n, err);
        free(rows);
        free(lens);
    }
    free(ids);
    free(first);
    if (rc == SDFED_OK)
        rc = encode_all(tok, context_length, (const char *const *)sentences + n, n, "zero-shot prompt",
                        &c->zeroshot_ids, &c->zeroshot_first, err);
    if (rc == SDFED_OK && text->prompt_init && text->prompt_init[0]) {
        int *first_init = NULL;
        rc = encode_all(tok, context_length, &text->prompt_init, 1, "prompt_init", &c->init_ids, &first_init, err);
        if (rc == SDFED_OK) c->init_len = first_init[1];
        free(first_init);
    }
    for (int i = 0; sentences && i < 2 * n; i++) free(sentences[i]);
    free(sentences);
    if (rc) sdfed_classes_free(c);
    return rc;
}

int sdfed_classes_init(sdfed_classes *c, const sdfed_tokenizer *tok, int context_length, const char *const *names,
                       int n_names, sdfed_error *err) {
    sdfed_class_text text = {.texts = names, .n = n_names};
    return sdfed_classes_build(c, tok, context_length, &text, err);
}

int sdfed_classes_max_prompt(const sdfed_classes *c) {
    int longest = 0;
    for (int i = 0; i < c->n_classes; i++)
        if (c->first[i + 1] - c->first[i] > longest) longest = c->first[i + 1] - c->first[i];
    return c->context_length - 2 - longest;
}

int sdfed_classes_zeroshot(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls, float *feats,
                           sdfed_arena *arena, sdfed_error *err) {
    int C = cls->n_classes, L = cls->context_length, D = m->cfg.embed_dim;
    if (!cls->zeroshot_ids)
        return sdfed_fail(err, SDFED_ERR_ARG, "classes: no zero-shot template (classes built from ids)");
    int32_t *ids = sdfed_arena_alloc(arena, sizeof *ids * (size_t)C * L);
    float *raw = sdfed_arena_floats(arena, (size_t)C * D), *norms = sdfed_arena_floats(arena, (size_t)C);
    if (!ids || !raw || !norms) return sdfed_fail(err, SDFED_ERR_NOMEM, "classes: out of memory");
    memset(ids, 0, sizeof *ids * (size_t)C * L);
    for (int c = 0; c < C; c++) {
        /* [SOT] tokens of the filled template [EOT]; encode_all kept it within L */
        int32_t *row = ids + (size_t)c * L;
        int n = cls->zeroshot_first[c + 1] - cls->zeroshot_first[c];
        row[0] = cls->sot;
        memcpy(row + 1, cls->zeroshot_ids + cls->zeroshot_first[c], sizeof *row * (size_t)n);
        row[1 + n] = cls->eot;
    }
    sdfed_text_batch batch = {.n_seqs = C, .ids = ids, .stride = L, .splice = NULL, .splice_pos = NULL, .n_splice = 0};
    int rc = sdfed_text_encode(m, k, &batch, raw, arena, err);
    if (rc == SDFED_OK) sdfed_l2_normalize_forward(feats, norms, raw, C, D);
    return rc;
}

/* The CoOp token rows of every class for a prompt of T vectors. */
static int build_batch(const sdfed_classes *cls, const float *P, int T, sdfed_text_batch *batch, sdfed_arena *arena,
                       sdfed_error *err) {
    int C = cls->n_classes, L = cls->context_length;
    if (T < 1 || T > sdfed_classes_max_prompt(cls))
        return sdfed_fail(err, SDFED_ERR_ARG, "prompt: %d vectors do not fit the context with these classes (max %d)",
                          T, sdfed_classes_max_prompt(cls));
    int32_t *ids = sdfed_arena_alloc(arena, sizeof *ids * (size_t)C * L);
    int *slots = sdfed_arena_alloc(arena, sizeof *slots * (size_t)T);
    if (!ids || !slots) return sdfed_fail(err, SDFED_ERR_NOMEM, "prompt: out of memory");
    memset(ids, 0, sizeof *ids * (size_t)C * L);
    for (int c = 0; c < C; c++) {
        int32_t *row = ids + (size_t)c * L;
        int n = cls->first[c + 1] - cls->first[c];
        row[0] = cls->sot;
        memcpy(row + 1 + T, cls->ids + cls->first[c], sizeof *row * (size_t)n);
        row[1 + T + n] = cls->eot;
    }
    for (int t = 0; t < T; t++) slots[t] = 1 + t;
    *batch = (sdfed_text_batch){.n_seqs = C, .ids = ids, .stride = L, .splice = P, .splice_pos = slots, .n_splice = T};
    return SDFED_OK;
}

int sdfed_prompt_features(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls, int n,
                          const float *const *P, const int *T, float *const *feats, sdfed_prompt_pass *pass,
                          sdfed_arena *arena, sdfed_error *err) {
    int C = cls->n_classes, D = m->cfg.embed_dim;
    if (cls->context_length != m->cfg.context_length)
        return sdfed_fail(err, SDFED_ERR_ARG, "prompt: classes were built for a context of %d, the model has %d",
                          cls->context_length, m->cfg.context_length);
    sdfed_prompt_pass local;
    sdfed_prompt_pass *p = pass ? pass : &local;
    p->n = n;
    p->batches = sdfed_arena_alloc(arena, sizeof *p->batches * (size_t)n);
    p->raw = sdfed_arena_alloc(arena, sizeof *p->raw * (size_t)n);
    p->norms = sdfed_arena_alloc(arena, sizeof *p->norms * (size_t)n);
    if (!p->batches || !p->raw || !p->norms) return sdfed_fail(err, SDFED_ERR_NOMEM, "prompt: out of memory");
    for (int i = 0; i < n; i++) {
        p->raw[i] = sdfed_arena_floats(arena, (size_t)C * D);
        p->norms[i] = sdfed_arena_floats(arena, (size_t)C);
        if (!p->raw[i] || !p->norms[i]) return sdfed_fail(err, SDFED_ERR_NOMEM, "prompt: out of memory");
        int rc = build_batch(cls, P[i], T[i], &p->batches[i], arena, err);
        if (rc) return rc;
    }
    int rc = sdfed_text_forward(m, k, p->batches, n, p->raw, pass ? &p->text : NULL, arena, err);
    if (rc) return rc;
    for (int i = 0; i < n; i++) sdfed_l2_normalize_forward(feats[i], p->norms[i], p->raw[i], C, D);
    return SDFED_OK;
}

int sdfed_prompt_backward(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_prompt_pass *pass, int n_grad,
                          const float *const *feats, const float *const *d_feats, float *const *dP, sdfed_arena *arena,
                          sdfed_error *err) {
    int C = pass->batches[0].n_seqs, D = m->cfg.embed_dim;
    float **d_raw = sdfed_arena_alloc(arena, sizeof *d_raw * (size_t)n_grad);
    if (!d_raw) return sdfed_fail(err, SDFED_ERR_NOMEM, "prompt: out of memory");
    for (int i = 0; i < n_grad; i++) {
        d_raw[i] = sdfed_arena_floats(arena, (size_t)C * D);
        if (!d_raw[i]) return sdfed_fail(err, SDFED_ERR_NOMEM, "prompt: out of memory");
        memset(d_raw[i], 0, sizeof(float) * (size_t)C * D);
        sdfed_l2_normalize_backward(d_raw[i], d_feats[i], feats[i], pass->norms[i], C, D);
    }
    return sdfed_text_backward(m, k, &pass->text, n_grad, (const float *const *)d_raw, dP, arena, err);
}
