/* A client's round of local training on image features it holds, the same
 * on every target (the simulator, the headless client, the browser):
 * local_epochs passes over its training samples, each pass in an order
 * shuffled by the client's random stream, one method step per batch of
 * batch_size (the last batch of a pass may be smaller), stopped after
 * max_steps when the client's device cannot do more in a round (a partial
 * pass: fed/local_prompt.h; max_steps < 0: every step of the epochs).
 *
 * The round is an iterator so that a caller can show progress or yield
 * between steps (the browser's worker does); sdfed_local_train runs it to
 * the end. */
#ifndef SDFED_LOCAL_TRAINING_H
#define SDFED_LOCAL_TRAINING_H

#include "method/methods.h"

/* Samples by index into a feature matrix: sample i is row index[i] of
 * features (n_rows, dim), with label labels[index[i]] (a class index, as
 * data/partition.h keeps them); index NULL means rows 0..n-1. */
typedef struct sdfed_feature_set {
    const float *features;
    const uint8_t *labels;
    int dim;
    const int *index;
    int n;
} sdfed_feature_set;

typedef struct sdfed_local_round {
    const sdfed_feature_set *train;
    int epochs, batch_size;
    int epoch, first; /* the next batch: pass `epoch`, from position `first` */
    int steps, total_steps;
    int *order;      /* (n) this pass's order */
    float *batch;    /* (batch_size, dim) */
    int32_t *labels; /* (batch_size) */
} sdfed_local_round;

int sdfed_local_round_begin(sdfed_local_round *r, const sdfed_feature_set *train, int epochs, int batch_size,
                            int max_steps, sdfed_error *err);
/* Whether every step of the round was taken. */
int sdfed_local_round_done(const sdfed_local_round *r);
/* The next step (the round must not be done); its losses in *losses. */
int sdfed_local_round_step(sdfed_local_round *r, const sdfed_method_config *cfg, const sdfed_clip_model *m,
                           const sdfed_kernels *k, const sdfed_classes *cls, sdfed_method_params *p, sdfed_rng *rng,
                           sdfed_losses *losses, sdfed_arena *arena, sdfed_error *err);
void sdfed_local_round_end(sdfed_local_round *r);

/* A whole round; the steps' losses are added to *sum, their count to *steps. */
int sdfed_local_train(const sdfed_method_config *cfg, const sdfed_clip_model *m, const sdfed_kernels *k,
                      const sdfed_classes *cls, sdfed_method_params *p, sdfed_rng *rng, const sdfed_feature_set *train,
                      int epochs, int batch_size, int max_steps, sdfed_losses *sum, int *steps, sdfed_arena *arena,
                      sdfed_error *err);

/* The share of samples the client's parameters classify right; NaN for an
 * empty set: no accuracy, which a mean over clients leaves out (not 0). */
int sdfed_local_accuracy(const sdfed_method_config *cfg, const sdfed_clip_model *m, const sdfed_kernels *k,
                         const sdfed_classes *cls, const sdfed_method_params *p, const sdfed_feature_set *test,
                         double *accuracy, sdfed_arena *arena, sdfed_error *err);

#endif
