/* Learned prompts in the CoOp layout: for a prompt P (T x W) and class c the
 * text tower reads [SOT] P_1..P_T [tokens of "<class text>."] [EOT], and
 * f(P) is the L2-normalised feature of every class (C x D). The classes are
 * tokenised once; f(P) and its gradient with respect to P are computed with
 * the shared prefix [SOT, P_1..P_T] run once for all classes. */
#ifndef SDFED_PROMPT_H
#define SDFED_PROMPT_H

#include <stdint.h>

#include "base/arena.h"
#include "clip/clip_model.h"
#include "clip/text_encoder.h"
#include "text/tokenizer.h"

/* The zero-shot template when a task gives none: "a photo of a <text>." */
#define SDFED_TEMPLATE_DEFAULT "a photo of a {}."

typedef struct sdfed_classes {
    int n_classes;
    int32_t sot, eot;
    int32_t *ids; /* the BPE ids of every "<text>." back to back */
    int *first;   /* (n_classes + 1): class c owns ids[first[c] .. first[c + 1]) */
    int context_length;
    /* the zero-shot prompts: the template with {} replaced by each class's
     * text, tokenised as one sentence (without SOT/EOT), back to back;
     * NULL when the classes came from ids alone */
    int32_t *zeroshot_ids;
    int *zeroshot_first; /* (n_classes + 1) */
    /* the prompt initialisation's tokens (NULL, 0: random prompts) */
    int32_t *init_ids;
    int init_len;
} sdfed_classes;

/* What the classes put into prompts. */
typedef struct sdfed_class_text {
    const char *const *texts; /* (n) each class's text, tokenised as "<text>." after the learned prompt */
    int n;
    const char *template_text; /* one "{}" for the class: the zero-shot prompt (NULL: SDFED_TEMPLATE_DEFAULT) */
    const char *prompt_init;   /* words whose token embeddings start the learned prompts (NULL or "": none) */
} sdfed_class_text;

/* Tokenises "<text>." for each class, the zero-shot prompts and the
 * prompt initialisation; errors name the class, the template or the
 * prompt_init that does not tokenise or fit the context. */
int sdfed_classes_build(sdfed_classes *c, const sdfed_tokenizer *tok, int context_length, const sdfed_class_text *text,
                        sdfed_error *err);
/* The same with the default template and no prompt initialisation. */
int sdfed_classes_init(sdfed_classes *c, const sdfed_tokenizer *tok, int context_length, const char *const *names,
                       int n_names, sdfed_error *err);
/* The same from a JSON array of 1..max_names strings (a reference file's
 * class_names). */
int sdfed_classes_init_json(sdfed_classes *c, const sdfed_tokenizer *tok, int context_length, const char *json,
                            size_t len, int max_names, sdfed_error *err);
/* The same from ready ids (name tokens without SOT/EOT), e.g. a reference. */
int sdfed_classes_from_ids(sdfed_classes *c, int32_t sot, int32_t eot, int context_length, const int32_t *const *ids,
                           const int *lens, int n_classes, sdfed_error *err);
void sdfed_classes_free(sdfed_classes *c);

/* Longest prompt that fits every class in the context. */
int sdfed_classes_max_prompt(const sdfed_classes *c);

/* feats (C, D) = L2-normalised features of the zero-shot prompts (the
 * template filled with each class's text: CLIP's zero-shot classifier). */
int sdfed_classes_zeroshot(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls, float *feats,
                           sdfed_arena *arena, sdfed_error *err);

/* One evaluation of f(P) for one or more prompts, kept for the backward
 * pass. Several prompts run as one pass of the text tower. */
typedef struct sdfed_prompt_pass {
    int n;
    sdfed_text_batch *batches;
    sdfed_text_pass text;
    float **raw;   /* per prompt, (C, D) unnormalised features */
    float **norms; /* per prompt, (C) their L2 norms */
} sdfed_prompt_pass;

/* feats[i] (C, D) = f(P[i]) for n prompts P[i] (T[i], W), computed in one
 * pass. With pass != NULL it keeps what sdfed_prompt_backward needs (the
 * prompts must stay unchanged until then). */
int sdfed_prompt_features(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls, int n,
                          const float *const *P, const int *T, float *const *feats, sdfed_prompt_pass *pass,
                          sdfed_arena *arena, sdfed_error *err);

/* dP[i] (T[i], W) += d loss / dP[i] given d_feats[i] (C, D) = d loss /
 * d f(P[i]), for the first n_grad prompts of the pass. */
int sdfed_prompt_backward(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_prompt_pass *pass, int n_grad,
                          const float *const *feats, const float *const *d_feats, float *const *dP, sdfed_arena *arena,
                          sdfed_error *err);

#endif
