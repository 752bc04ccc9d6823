/* The federation loop (see sim.h). Randomness comes from rng streams of the
 * task seed, so a run is reproducible: 0 the partition (partition.h),
 * 10 the server's initial parameters, 11 the local prompt lengths, 12 the
 * clients of each round, 1000 + c client c's own initialisation and batch
 * order. */
#include "sim.h"

#include <math.h>

#include "aggregate.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { STREAM_SERVER = 10, STREAM_LENGTHS = 11, STREAM_ROUNDS = 12, STREAM_CLIENTS = 1000 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

sdfed_method_config sim_method_config(const sdfed_task *task) {
    sdfed_method_config c = sdfed_method_defaults(task->method);
    c.global_len = task->global_prompt_length;
    c.local_len = task->local_prompt_max;
    c.theta = task->theta;
    c.sgd = (sdfed_sgd){task->lr, task->momentum, task->weight_decay};
    if (task->projector >= 0) c.objective.projector = task->projector;
    if (!isnan(task->lambda)) c.objective.lambda = task->lambda;
    if (!isnan(task->gamma)) c.objective.gamma = task->gamma;
    return c;
}

typedef struct client {
    sdfed_method_config cfg; /* its own local prompt length */
    sdfed_method_params params;
    sdfed_rng rng;
    const sdfed_client_split *split;
} client;

void sim_result_free(sim_result *r) {
    for (int i = 0; r->rounds && i < r->n_rounds; i++) free(r->rounds[i].client_accuracy);
    free(r->rounds);
    free(r->client_train);
    free(r->client_test);
    free(r->client_local_len);
    memset(r, 0, sizeof *r);
}

static int partition_data(const sdfed_task *task, const sim_data *d, sdfed_partition *p, sdfed_error *err) {
    sdfed_partition_config pc;
    memset(&pc, 0, sizeof pc);
    pc.method = task->partition.kind;
    pc.n_clients = task->clients;
    pc.n_classes = d->n_classes;
    pc.classes_per_client = task->partition.classes_per_client;
    pc.alpha = task->partition.alpha;
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

/* Accuracy of a client's class features on its test split. */
static double client_accuracy(const client *c, const sim_data *d, const float *feats, int32_t *pred) {
    const sdfed_client_split *s = c->split;
    if (s->n_test == 0) return 0.0;
    int right = 0;
    for (int i = 0; i < s->n_test; i++) {
        sdfed_predict(feats, d->n_classes, d->dim, d->test_features + (size_t)s->test[i] * d->dim, 1, pred);
        right += pred[0] == d->test_labels[s->test[i]];
    }
    return (double)right / s->n_test;
}

/* One epoch or more of local steps; adds the losses to *sum. */
static int train_client(client *c, const sdfed_task *task, const sdfed_clip_model *m, const sdfed_kernels *k,
                        const sdfed_classes *cls, const sim_data *d, sdfed_losses *sum, int *steps, float *features,
                        int32_t *labels, int *order, sdfed_arena *arena, sdfed_error *err) {
    const sdfed_client_split *s = c->split;
    for (int e = 0; e < task->local_epochs; e++) {
        for (int i = 0; i < s->n_train; i++) order[i] = s->train[i];
        sdfed_rng_shuffle(&c->rng, order, (size_t)s->n_train);
        for (int first = 0; first < s->n_train; first += task->batch_size) {
            int n = s->n_train - first < task->batch_size ? s->n_train - first : task->batch_size;
            for (int b = 0; b < n; b++) {
                memcpy(features + (size_t)b * d->dim, d->train_features + (size_t)order[first + b] * d->dim,
                       sizeof(float) * (size_t)d->dim);
                labels[b] = d->train_labels[order[first + b]];
            }
            sdfed_batch batch = {features, labels, n};
            sdfed_losses l;
            sdfed_arena_reset(arena);
            int rc = sdfed_method_step(&c->cfg, m, k, cls, &c->params, &batch, &l, NULL, arena, err);
            if (rc) return rc;
            sum->ce_local += l.ce_local, sum->ce_global += l.ce_global, sum->stretch += l.stretch;
            sum->separation += l.separation, sum->total += l.total;
            (*steps)++;
        }
    }
    return SDFED_OK;
}

int sim_run(const sdfed_task *task, const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls,
            const sim_data *d, sim_result *out, FILE *log, sdfed_error *err) {
    memset(out, 0, sizeof *out);
    int rc = sdfed_task_validate(task, err);
    if (rc) return rc;
    sdfed_partition part;
    if ((rc = partition_data(task, d, &part, err))) return sdfed_fail_context(err, rc, "partition");
    int K = task->clients, C = d->n_classes;
    sdfed_method_config base = sim_method_config(task);
    int trains = task->method != SDFED_METHOD_ZEROSHOT;
    client *clients = calloc((size_t)K, sizeof *clients);
    out->rounds = calloc((size_t)task->rounds, sizeof *out->rounds);
    out->client_train = calloc((size_t)K, sizeof(int));
    out->client_test = calloc((size_t)K, sizeof(int));
    out->client_local_len = calloc((size_t)K, sizeof(int));
    int max_train = task->batch_size;
    for (int c = 0; c < K; c++) max_train = part.clients[c].n_train > max_train ? part.clients[c].n_train : max_train;
    float *features = malloc(sizeof(float) * (size_t)task->batch_size * d->dim);
    float *feats = malloc(sizeof(float) * (size_t)C * d->dim);
    int32_t *labels = malloc(sizeof(int32_t) * (size_t)task->batch_size), pred[1];
    int *order = malloc(sizeof(int) * (size_t)max_train), *chosen = malloc(sizeof(int) * (size_t)K);
    sdfed_method_params server = {0};
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    out->n_clients = K;
    if (!clients || !out->rounds || !out->client_train || !out->client_test || !out->client_local_len || !features ||
        !feats || !labels || !order || !chosen)
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "sim: out of memory");

    /* the server's initial shared parameters; each client's own state */
    sdfed_rng server_rng, lengths_rng, rounds_rng;
    sdfed_rng_seed_stream(&server_rng, task->seed, STREAM_SERVER);
    sdfed_rng_seed_stream(&lengths_rng, task->seed, STREAM_LENGTHS);
    sdfed_rng_seed_stream(&rounds_rng, task->seed, STREAM_ROUNDS);
    if (rc == SDFED_OK) rc = sdfed_method_params_init(&server, &base, m, k, cls, &server_rng, &arena, err);
    for (int c = 0; c < K && rc == SDFED_OK; c++) {
        client *cl = &clients[c];
        cl->cfg = base;
        cl->cfg.local_len =
            task->local_prompt_min +
            (int)sdfed_rng_below(&lengths_rng, (uint64_t)(task->local_prompt_max - task->local_prompt_min + 1));
        cl->split = &part.clients[c];
        sdfed_rng_seed_stream(&cl->rng, task->seed, STREAM_CLIENTS + (uint64_t)c);
        sdfed_arena_reset(&arena);
        rc = sdfed_method_params_init(&cl->params, &cl->cfg, m, k, cls, &cl->rng, &arena, err);
        if (rc == SDFED_OK && server.global_rows)
            memcpy(cl->params.global, server.global, sizeof(float) * (size_t)server.global_rows * server.width);
        out->client_train[c] = cl->split->n_train;
        out->client_test[c] = cl->split->n_test;
        out->client_local_len[c] = cl->cfg.local_len;
    }

    size_t shared = (size_t)server.global_rows * server.width;
    const float **uploads = malloc(sizeof *uploads * (size_t)K);
    double *samples = malloc(sizeof *samples * (size_t)K);
    if (rc == SDFED_OK && (!uploads || !samples)) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "sim: out of memory");
    for (int r = 0; r < task->rounds && rc == SDFED_OK; r++) {
        sim_round *round = &out->rounds[r];
        double t0 = now();
        round->client_accuracy = calloc((size_t)K, sizeof(double));
        if (!round->client_accuracy) {
            rc = sdfed_fail(err, SDFED_ERR_NOMEM, "sim: out of memory");
            break;
        }
        out->n_rounds = r + 1;
        /* this round's clients: a seeded partial shuffle */
        int n_chosen = trains ? (task->clients_per_round > 0 ? task->clients_per_round : K) : 0;
        for (int c = 0; c < K; c++) chosen[c] = c;
        for (int i = 0; i < n_chosen; i++) {
            int j = i + (int)sdfed_rng_below(&rounds_rng, (uint64_t)(K - i)), t = chosen[i];
            chosen[i] = chosen[j], chosen[j] = t;
        }
        /* train in client order, as the aggregator sorts what it receives */
        qsort(chosen, (size_t)n_chosen, sizeof *chosen, compare_int);
        sdfed_losses losses = {0};
        for (int i = 0; i < n_chosen && rc == SDFED_OK; i++) {
            client *cl = &clients[chosen[i]];
            if (cl->split->n_train == 0) continue;
            rc = train_client(cl, task, m, k, cls, d, &losses, &round->steps, features, labels, order, &arena, err);
            if (rc) sdfed_fail_context(err, rc, "round %d, client %d", r + 1, chosen[i]);
            uploads[round->participants] = cl->params.global;
            samples[round->participants++] = cl->split->n_train;
        }
        if (rc) break;
        /* the server's sample-weighted mean, broadcast to every client */
        if (shared && round->participants > 0) {
            sdfed_aggregate_config mean = {SDFED_AGGREGATE_MEAN, 0, 0, 0};
            sdfed_arena_reset(&arena);
            rc = sdfed_aggregate(&mean, k, uploads, samples, round->participants, shared, NULL, NULL, server.global,
                                 &arena, err);
            if (rc) break;
            for (int c = 0; c < K; c++) memcpy(clients[c].params.global, server.global, sizeof(float) * shared);
        }
        for (int c = 0; c < K && rc == SDFED_OK; c++) {
            sdfed_arena_reset(&arena);
            rc = sdfed_method_class_features(&clients[c].cfg, m, k, cls, &clients[c].params, feats, &arena, err);
            if (rc == SDFED_OK) round->client_accuracy[c] = client_accuracy(&clients[c], d, feats, pred);
            round->accuracy += round->client_accuracy[c] / K;
        }
        int steps = round->steps > 0 ? round->steps : 1;
        round->ce_local = losses.ce_local / steps, round->ce_global = losses.ce_global / steps;
        round->stretch = losses.stretch / steps, round->separation = losses.separation / steps;
        round->total = losses.total / steps;
        round->seconds = now() - t0;
        if (log && rc == SDFED_OK) {
            double lo = 1, hi = 0;
            for (int c = 0; c < K; c++)
                lo = fmin(lo, round->client_accuracy[c]), hi = fmax(hi, round->client_accuracy[c]);
            fprintf(log,
                    "round %d/%d: accuracy %.2f%% (clients %.1f..%.1f%%), loss %.4f, %d clients, %d steps, %.2f s\n",
                    r + 1, task->rounds, 100 * round->accuracy, 100 * lo, 100 * hi, round->total, round->participants,
                    round->steps, round->seconds);
            fflush(log);
        }
    }
    if (rc == SDFED_OK) {
        int last = out->n_rounds < 10 ? out->n_rounds : 10;
        for (int r = out->n_rounds - last; r < out->n_rounds; r++)
            out->final_accuracy += out->rounds[r].accuracy / last;
    }
    for (int c = 0; clients && c < K; c++) sdfed_method_params_free(&clients[c].params);
    sdfed_method_params_free(&server);
    free(clients), free(features), free(feats), free(labels), free(order), free(chosen), free(uploads), free(samples);
    sdfed_arena_free(&arena);
    sdfed_partition_free(&part);
    if (rc) sim_result_free(out);
    return rc;
}
