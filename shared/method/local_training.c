/* Local training rounds and accuracy on held features (local_training.h). */
#include "method/local_training.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int row_of(const sdfed_feature_set *s, int i) { return s->index ? s->index[i] : i; }

int sdfed_local_round_begin(sdfed_local_round *r, const sdfed_feature_set *train, int epochs, int batch_size,
                            int max_steps, sdfed_error *err) {
    memset(r, 0, sizeof *r);
    if (epochs < 0 || batch_size < 1 || train->n < 0)
        return sdfed_fail(err, SDFED_ERR_ARG, "local training: %d epochs, batches of %d", epochs, batch_size);
    r->train = train;
    r->epochs = train->n > 0 ? epochs : 0;
    r->batch_size = batch_size;
    r->total_steps = r->epochs * ((train->n + batch_size - 1) / batch_size);
    if (max_steps >= 0 && max_steps < r->total_steps) r->total_steps = max_steps;
    r->order = malloc(sizeof *r->order * (size_t)(train->n + 1));
    r->batch = malloc(sizeof *r->batch * (size_t)batch_size * (size_t)train->dim);
    r->labels = malloc(sizeof *r->labels * (size_t)batch_size);
    if (!r->order || !r->batch || !r->labels) {
        sdfed_local_round_end(r);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "local training: out of memory");
    }
    return SDFED_OK;
}

int sdfed_local_round_done(const sdfed_local_round *r) { return r->steps >= r->total_steps; }

int sdfed_local_round_step(sdfed_local_round *r, const sdfed_method_config *cfg, const sdfed_clip_model *m,
                           const sdfed_kernels *k, const sdfed_classes *cls, sdfed_method_params *p, sdfed_rng *rng,
                           sdfed_losses *losses, sdfed_arena *arena, sdfed_error *err) {
    const sdfed_feature_set *s = r->train;
    if (sdfed_local_round_done(r)) return sdfed_fail(err, SDFED_ERR_ARG, "local training: the round is over");
    if (r->first == 0) { /* a new pass: its order */
        for (int i = 0; i < s->n; i++) r->order[i] = row_of(s, i);
        sdfed_rng_shuffle(rng, r->order, (size_t)s->n);
    }
    int n = s->n - r->first < r->batch_size ? s->n - r->first : r->batch_size;
    for (int b = 0; b < n; b++) {
        int row = r->order[r->first + b];
        memcpy(r->batch + (size_t)b * s->dim, s->features + (size_t)row * s->dim, sizeof(float) * (size_t)s->dim);
        r->labels[b] = s->labels[row];
    }
    sdfed_batch batch = {.features = r->batch, .labels = r->labels, .n = n};
    sdfed_arena_reset(arena);
    int rc = sdfed_method_step(cfg, m, k, cls, p, &batch, losses, NULL, arena, err);
    if (rc) return rc;
    r->steps++;
    r->first += n;
    if (r->first >= s->n) {
        r->first = 0;
        r->epoch++;
    }
    return SDFED_OK;
}

void sdfed_local_round_end(sdfed_local_round *r) {
    free(r->order);
    free(r->batch);
    free(r->labels);
    memset(r, 0, sizeof *r);
}

int sdfed_local_train(const sdfed_method_config *cfg, const sdfed_clip_model *m, const sdfed_kernels *k,
                      const sdfed_classes *cls, sdfed_method_params *p, sdfed_rng *rng, const sdfed_feature_set *train,
                      int epochs, int batch_size, int max_steps, sdfed_losses *sum, int *steps, sdfed_arena *arena,
                      sdfed_error *err) {
    sdfed_local_round r;
    int rc = sdfed_local_round_begin(&r, train, epochs, batch_size, max_steps, err);
    while (rc == SDFED_OK && !sdfed_local_round_done(&r)) {
        sdfed_losses l;
        rc = sdfed_local_round_step(&r, cfg, m, k, cls, p, rng, &l, arena, err);
        if (rc) break;
        sum->ce_local += l.ce_local;
        sum->ce_global += l.ce_global;
        sum->stretch += l.stretch;
        sum->separation += l.separation;
        sum->total += l.total;
        (*steps)++;
    }
    sdfed_local_round_end(&r);
    return rc;
}

/* Test images scored per call: one call's scratch for many rows. */
enum { ACCURACY_CHUNK = 256 };

int sdfed_local_accuracy(const sdfed_method_config *cfg, const sdfed_clip_model *m, const sdfed_kernels *k,
                         const sdfed_classes *cls, const sdfed_method_params *p, const sdfed_feature_set *test,
                         double *accuracy, sdfed_arena *arena, sdfed_error *err) {
    *accuracy = NAN;
    if (test->n == 0) return SDFED_OK; /* no sample: no accuracy */
    *accuracy = 0.0;
    sdfed_classifier clf;
    int rc = sdfed_method_classifier(cfg, m, k, cls, p, &clf, arena, err);
    if (rc) return rc;
    size_t dim = (size_t)test->dim;
    float *rows = sdfed_arena_floats(arena, ACCURACY_CHUNK * dim);
    int32_t pred[ACCURACY_CHUNK];
    if (!rows) return sdfed_fail(err, SDFED_ERR_NOMEM, "accuracy: out of memory");
    int right = 0;
    for (int first = 0; first < test->n && rc == SDFED_OK; first += ACCURACY_CHUNK) {
        int n = test->n - first < ACCURACY_CHUNK ? test->n - first : ACCURACY_CHUNK;
        for (int i = 0; i < n; i++)
            memcpy(rows + i * dim, test->features + (size_t)row_of(test, first + i) * dim, sizeof(float) * dim);
        rc = sdfed_classifier_predict(&clf, rows, n, pred, arena, err);
        for (int i = 0; rc == SDFED_OK && i < n; i++) right += pred[i] == test->labels[row_of(test, first + i)];
    }
    *accuracy = rc ? 0.0 : (double)right / test->n;
    return rc;
}
