/* Federated clients: initialisation, local training, evaluation. */
#include "fed_client.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int fed_partition(const sdfed_task *task, const fed_data *d, sdfed_partition *p, sdfed_error *err) {
    sdfed_partition_config pc;
    memset(&pc, 0, sizeof pc);
    pc.method = task->partition.kind;
    pc.n_clients = task->clients;
    pc.n_classes = d->n_classes;
    pc.classes_per_client = task->partition.classes_per_client;
    pc.alpha = task->partition.alpha;
    /* Dirichlet shares: at least one batch per client */
    pc.min_train = task->partition.kind == SDFED_PARTITION_DIRICHLET || task->partition.kind == SDFED_PARTITION_DOMAINS
                       ? task->batch_size
                       : 0;
    pc.n_domains = 4;
    pc.clients_per_domain = task->partition.clients_per_domain;
    pc.shots = task->partition.shots;
    pc.test_per_client = task->partition.test_per_client;
    pc.seed = task->seed;
    sdfed_samples train = {d->n_train, NULL, d->train_labels, d->train_domains};
    sdfed_samples test = {d->n_test, NULL, d->test_labels, d->test_domains};
    return sdfed_partition_make(&pc, &train, &test, p, err);
}

int fed_client_init(fed_client *c, const sdfed_task *task, int index, const sdfed_client_split *split,
                    const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls, sdfed_arena *arena,
                    sdfed_error *err) {
    memset(c, 0, sizeof *c);
    c->index = index;
    c->split = split;
    c->cfg = sdfed_task_method_config(task);
    c->cfg.local_len = sdfed_task_local_prompt_length(task, index);
    sdfed_rng_seed_stream(&c->rng, task->seed, SDFED_STREAM_CLIENTS + (uint64_t)index);
    return sdfed_method_params_init(&c->params, &c->cfg, m, k, cls, &c->rng, arena, err);
}

void fed_client_free(fed_client *c) { sdfed_method_params_free(&c->params); }

int fed_client_train(fed_client *c, const sdfed_task *task, const sdfed_clip_model *m, const sdfed_kernels *k,
                     const sdfed_classes *cls, const fed_data *d, sdfed_losses *sum, int *steps, sdfed_arena *arena,
                     sdfed_error *err) {
    const sdfed_client_split *s = c->split;
    int B = task->batch_size, rc = SDFED_OK;
    int *order = malloc(sizeof(int) * (size_t)(s->n_train + 1));
    float *features = malloc(sizeof(float) * (size_t)B * d->dim);
    int32_t *labels = malloc(sizeof(int32_t) * (size_t)B);
    if (!order || !features || !labels) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "client: out of memory");
    for (int e = 0; e < task->local_epochs && rc == SDFED_OK; e++) {
        for (int i = 0; i < s->n_train; i++) order[i] = s->train[i];
        sdfed_rng_shuffle(&c->rng, order, (size_t)s->n_train);
        for (int first = 0; first < s->n_train && rc == SDFED_OK; first += B) {
            int n = s->n_train - first < B ? s->n_train - first : B;
            for (int b = 0; b < n; b++) {
                memcpy(features + (size_t)b * d->dim, d->train_features + (size_t)order[first + b] * d->dim,
                       sizeof(float) * (size_t)d->dim);
                labels[b] = d->train_labels[order[first + b]];
            }
            sdfed_batch batch = {features, labels, n};
            sdfed_losses l;
            sdfed_arena_reset(arena);
            rc = sdfed_method_step(&c->cfg, m, k, cls, &c->params, &batch, &l, NULL, arena, err);
            if (rc) break;
            sum->ce_local += l.ce_local, sum->ce_global += l.ce_global, sum->stretch += l.stretch;
            sum->separation += l.separation, sum->total += l.total;
            (*steps)++;
        }
    }
    free(order), free(features), free(labels);
    return rc;
}

int fed_client_accuracy(const fed_client *c, const sdfed_clip_model *m, const sdfed_kernels *k,
                        const sdfed_classes *cls, const fed_data *d, double *accuracy, sdfed_arena *arena,
                        sdfed_error *err) {
    const sdfed_client_split *s = c->split;
    *accuracy = 0.0;
    float *feats = sdfed_arena_floats(arena, (size_t)d->n_classes * d->dim);
    if (!feats) return sdfed_fail(err, SDFED_ERR_NOMEM, "client: out of memory");
    int rc = sdfed_method_class_features(&c->cfg, m, k, cls, &c->params, feats, arena, err);
    if (rc || s->n_test == 0) return rc;
    int right = 0;
    for (int i = 0; i < s->n_test; i++) {
        int32_t pred;
        sdfed_predict(feats, d->n_classes, d->dim, d->test_features + (size_t)s->test[i] * d->dim, 1, &pred);
        right += pred == d->test_labels[s->test[i]];
    }
    *accuracy = (double)right / s->n_test;
    return SDFED_OK;
}
