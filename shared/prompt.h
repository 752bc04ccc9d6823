/* Learned prompts in the CoOp layout: for a prompt P (T x W) and class c the
 * text tower reads [SOT] P_1..P_T [tokens of "<class name>."] [EOT], and
 * f(P) is the L2-normalised feature of every class (C x D). The classes are
 * tokenised once; f(P) and its gradient with respect to P are computed with
 * the shared prefix [SOT, P_1..P_T] run once for all classes. */
#ifndef SDFED_PROMPT_H
#define SDFED_PROMPT_H

#include <stdint.h>

#include "arena.h"
#include "clip_model.h"
#include "text_encoder.h"
#include "tokenizer.h"

typedef struct sdfed_classes {
    int n_classes;
    int32_t sot, eot;
    int32_t *ids; /* the BPE ids of every "<name>." back to back */
    int *first;   /* (n_classes + 1): class c owns ids[first[c] .. first[c + 1]) */
    int context_length;
} sdfed_classes;

/* Tokenises "<name>." for each class name. */
int sdfed_classes_init(sdfed_classes *c, const sdfed_tokenizer *tok, int context_length, const char *const *names,
                       int n_names, sdfed_error *err);
/* The same from ready ids (name tokens without SOT/EOT), e.g. a reference. */
int sdfed_classes_from_ids(sdfed_classes *c, int32_t sot, int32_t eot, int context_length, const int32_t *const *ids,
                           const int *lens, int n_classes, sdfed_error *err);
void sdfed_classes_free(sdfed_classes *c);

/* Longest prompt that fits every class in the context. */
int sdfed_classes_max_prompt(const sdfed_classes *c);

/* One evaluation of f(P), kept for the backward pass. */
typedef struct sdfed_prompt_pass {
    sdfed_text_batch batch;
    sdfed_text_pass text;
    float *raw;   /* (C, D) unnormalised features */
    float *norms; /* (C) their L2 norms */
} sdfed_prompt_pass;

/* feats (C, D) = f(P) for prompt P (T, W). With pass != NULL the pass keeps
 * what sdfed_prompt_backward needs (P must stay unchanged until then). */
int sdfed_prompt_features(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls, const float *P,
                          int T, float *feats, sdfed_prompt_pass *pass, sdfed_arena *arena, sdfed_error *err);

/* dP (T, W) += d loss / dP given d_feats (C, D) = d loss / d f(P). */
int sdfed_prompt_backward(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_prompt_pass *pass,
                          const float *feats, const float *d_feats, float *dP, sdfed_arena *arena, sdfed_error *err);

#endif
