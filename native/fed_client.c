/* Federated clients: initialisation, local training, evaluation. */
#include "native/fed_client.h"

#include <string.h>

#include "method/local_training.h"

int native_fed_partition(const sdfed_task *task, const native_fed_data *d, sdfed_partition *p, sdfed_error *err) {
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
    sdfed_samples train = {.n = d->n_train, .id = NULL, .label = d->train_labels, .domain = d->train_domains};
    sdfed_samples test = {.n = d->n_test, .id = NULL, .label = d->test_labels, .domain = d->test_domains};
    int rc = sdfed_partition_make(&pc, &train, &test, p, err);
    /* min_train is no task key: say which of the task's keys set it and what else moves it */
    if (rc && pc.min_train > 0 && err && strstr(err->message, "min_train"))
        return sdfed_fail_context(err, rc,
                                  "task: a %s partition gives each client at least 'batch_size' (%d) training "
                                  "images (its min_train); lower 'batch_size' or %s, or raise 'partition.alpha'",
                                  sdfed_partition_kind_name(task->partition.kind), task->batch_size,
                                  task->partition.kind == SDFED_PARTITION_DOMAINS
                                      ? "'partition.clients_per_domain' (and 'clients')"
                                      : "'clients'");
    return rc;
}

int native_fed_shards_mark(const void *shards, const native_fed_data *d, uint8_t *train, uint8_t *test,
                           sdfed_error *err) {
    const native_fed_shards *w = shards;
    sdfed_partition p;
    int rc = native_fed_partition(w->task, d, &p, err);
    if (rc) return rc;
    for (int c = 0; c < p.n_clients; c++) {
        if (w->client >= 0 && c != w->client) continue;
        const sdfed_client_split *s = &p.clients[c];
        for (int i = 0; i < s->n_train; i++) train[s->train[i]] = 1;
        for (int i = 0; i < s->n_test; i++) test[s->test[i]] = 1;
    }
    sdfed_partition_free(&p);
    return SDFED_OK;
}

int native_fed_client_init(native_fed_client *c, const sdfed_task *task, int index, const sdfed_client_split *split,
                           const double *step_s, const sdfed_clip_model *m, const sdfed_kernels *k,
                           const sdfed_classes *cls, sdfed_arena *arena, sdfed_error *err) {
    memset(c, 0, sizeof *c);
    c->index = index;
    c->split = split;
    int rc = sdfed_task_local_plan(task, index, step_s, split->n_train, &c->plan, err);
    if (rc) return sdfed_fail_context(err, rc, "client %d", index);
    return sdfed_task_client_params(task, index, c->plan.length, m, k, cls, &c->cfg, &c->rng, &c->params, arena, err);
}

void native_fed_client_free(native_fed_client *c) { sdfed_method_params_free(&c->params); }

int native_fed_client_train(native_fed_client *c, const sdfed_task *task, const sdfed_clip_model *m,
                            const sdfed_kernels *k, const sdfed_classes *cls, const native_fed_data *d,
                            sdfed_losses *sum, int *steps, sdfed_arena *arena, sdfed_error *err) {
    sdfed_feature_set train = {.features = d->train_features,
                               .labels = d->train_labels,
                               .dim = d->dim,
                               .index = c->split->train,
                               .n = c->split->n_train};
    return sdfed_local_train(&c->cfg, m, k, cls, &c->params, &c->rng, &train, task->local_epochs, task->batch_size,
                             c->plan.steps, sum, steps, arena, err);
}

int native_fed_client_accuracy(const native_fed_client *c, const sdfed_clip_model *m, const sdfed_kernels *k,
                               const sdfed_classes *cls, const native_fed_data *d, double *accuracy, sdfed_arena *arena,
                               sdfed_error *err) {
    sdfed_feature_set test = {.features = d->test_features,
                              .labels = d->test_labels,
                              .dim = d->dim,
                              .index = c->split->test,
                              .n = c->split->n_test};
    return sdfed_local_accuracy(&c->cfg, m, k, cls, &c->params, &test, accuracy, arena, err);
}
