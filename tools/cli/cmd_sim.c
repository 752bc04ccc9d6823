/* sdfed sim: a whole federation in one process (tools/sim/sim.h).
 *   sdfed sim --task TASK.json [--method M] [--seed S] [--rounds N] [--out DIR]
 *             [--cache DIR] [--data DIR] [--backend NAME]
 * The flags override the task's keys. Fashion-MNIST's training images
 * 30000..59999 are the clients' training pool and its test set their test
 * pool (images 0..29999 trained the default model). The run prints a line
 * per round, writes results.json and accuracy.svg into DIR, and ends with
 * "final accuracy: XX.XX%". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "dataset_file.h"
#include "feature_cache.h"
#include "idx.h"
#include "report.h"
#include "sha256.h"
#include "sim.h"

/* The federation's slice of Fashion-MNIST's training set. */
#define POOL_FIRST 30000
/* The multi-domain setting's domain assignment and noise are fixed (not the
 * task seed) so that its images, and their cached features, are one dataset. */
#define DOMAIN_SEED 20260

typedef struct pool {
    int n;
    uint8_t *pixels; /* owned copy when transformed into domains, else NULL */
    const uint8_t *source, *labels;
    uint8_t *domains;
    float *features;
} pool;

/* Gives each image of the pool a domain and its transformed pixels. */
static int make_domains(pool *p, int rows, int cols, uint64_t stream, sdfed_error *err) {
    size_t per = (size_t)rows * cols;
    p->domains = malloc((size_t)p->n);
    p->pixels = malloc(per * (size_t)p->n);
    if (!p->domains || !p->pixels) return sdfed_fail(err, SDFED_ERR_NOMEM, "sim: out of memory");
    int rc = sdfed_domain_assign(p->n, SDFED_DOMAINS, DOMAIN_SEED + stream, p->domains, err);
    for (int i = 0; i < p->n && rc == SDFED_OK; i++)
        rc = sdfed_domain_apply(p->domains[i], p->source + per * i, rows, cols, DOMAIN_SEED + stream, (uint64_t)i,
                                p->pixels + per * i, err);
    p->source = p->pixels;
    return rc;
}

static int load_pools(const sdfed_task *task, const char *data_dir, const char *cache, const cli_model *m,
                      const char *sha, const sdfed_kernels *k, pool *train, pool *test, sdfed_dataset *ds_train,
                      sdfed_dataset *ds_test, sdfed_error *err) {
    int rc = sdfed_fmnist_load(data_dir, SDFED_FMNIST_TRAIN, ds_train, err);
    if (rc == SDFED_OK) rc = sdfed_fmnist_load(data_dir, SDFED_FMNIST_TEST, ds_test, err);
    if (rc) return rc;
    if (ds_train->n <= POOL_FIRST) return sdfed_fail(err, SDFED_ERR_FORMAT, "sim: the training set is too small");
    size_t per = (size_t)ds_train->rows * ds_train->cols;
    train->n = ds_train->n - POOL_FIRST;
    train->source = ds_train->pixels + per * POOL_FIRST;
    train->labels = ds_train->labels + POOL_FIRST;
    test->n = ds_test->n;
    test->source = ds_test->pixels;
    test->labels = ds_test->labels;
    int domains = task->partition.kind == SDFED_PARTITION_DOMAINS;
    if (domains && ((rc = make_domains(train, ds_train->rows, ds_train->cols, 0, err)) ||
                    (rc = make_domains(test, ds_test->rows, ds_test->cols, 1, err))))
        return rc;
    pool *pools[2] = {train, test};
    for (int i = 0; i < 2 && rc == SDFED_OK; i++) {
        char name[128];
        snprintf(name, sizeof name, "fashion-mnist-%s%s", i ? "test" : "train-30000-59999", domains ? "-domains" : "");
        pools[i]->features = malloc(sizeof(float) * (size_t)pools[i]->n * m->clip.cfg.embed_dim);
        if (!pools[i]->features) return sdfed_fail(err, SDFED_ERR_NOMEM, "sim: out of memory");
        feature_source src = {name, pools[i]->n, ds_train->rows, ds_train->cols, pools[i]->source};
        rc = feature_cache_load(cache, m, sha, k, &src, pools[i]->features, err);
    }
    return rc;
}

static void free_pool(pool *p) {
    free(p->pixels);
    free(p->domains);
    free(p->features);
}

static int make_dir(const char *path, sdfed_error *err) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++)
        if (*p == '/' || *p == '\0') {
            char keep = *p;
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return sdfed_fail(err, SDFED_ERR_IO, "%s: %s", buf, strerror(errno));
            if (!(*p = keep)) break;
        }
    return SDFED_OK;
}

/* Task file, then the flags over it. */
static int read_task(const char *path, const char *method, const char *seed, const char *rounds, sdfed_task *task,
                     sdfed_error *err) {
    file_map f;
    char resolved[4096];
    int rc = file_map_open(&f, cli_resolve_path(path, resolved, sizeof resolved), err);
    if (rc) return rc;
    rc = sdfed_task_parse(task, (const char *)f.data, f.size, err);
    file_map_close(&f);
    if (rc) return sdfed_fail_context(err, rc, "%s", path);
    if (method && (task->method = sdfed_method_from_name(method)) < 0)
        return sdfed_fail(err, SDFED_ERR_ARG, "--method '%s' is not a method (see 'sdfed help')", method);
    char *end;
    if (seed) {
        task->seed = strtoull(seed, &end, 10);
        if (*end || !*seed) return sdfed_fail(err, SDFED_ERR_ARG, "--seed must be a non-negative integer");
    }
    if (rounds) {
        long v = strtol(rounds, &end, 10);
        if (*end || v < 1 || v > 1000000) return sdfed_fail(err, SDFED_ERR_ARG, "--rounds must be a positive integer");
        task->rounds = (int)v;
    }
    return sdfed_task_validate(task, err);
}

int cmd_sim(int argc, char **argv) {
    const char *task_path = NULL, *method = NULL, *seed = NULL, *rounds = NULL, *out_dir = "sim-out", *cache = NULL;
    const char *data_dir = SDFED_FMNIST_DEFAULT_DIR, *backend = NULL;
    const cli_option options[] = {{"--task", &task_path, NULL}, {"--method", &method, NULL},  {"--seed", &seed, NULL},
                                  {"--rounds", &rounds, NULL},  {"--out", &out_dir, NULL},    {"--cache", &cache, NULL},
                                  {"--data", &data_dir, NULL},  {"--backend", &backend, NULL}};
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    int n_pos = 0, status = pos ? cli_parse(argc, argv, options, 8, &pos, &n_pos) : CLI_FAILED;
    free(pos);
    if (status) return status;
    if (n_pos) return cli_error(CLI_USAGE, "sim: unexpected argument (the task is given with --task)");
    if (!task_path) return cli_error(CLI_USAGE, "sim: --task is required");
    const sdfed_kernels *k = cli_backend(backend);
    if (!k) return cli_error(CLI_USAGE, "sim: backend '%s' is not in this build", backend);

    sdfed_task task;
    sdfed_error err = {0};
    if (read_task(task_path, method, seed, rounds, &task, &err)) return cli_error(CLI_FAILED, "sim: %s", err.message);
    cli_model m;
    if (cli_model_open(&m, task.model, &err)) return cli_error(CLI_FAILED, "sim: model: %s", err.message);
    char sha[65];
    sdfed_sha256_hex(m.file.data, m.file.size, sha);
    sdfed_classes cls;
    pool train = {0}, test = {0};
    sdfed_dataset ds_train = {0}, ds_test = {0};
    sim_result result = {0};
    int rc = sdfed_classes_init(&cls, &m.tokenizer, m.clip.cfg.context_length, sdfed_fmnist_class_names,
                                SDFED_FMNIST_CLASSES, &err);
    if (rc == SDFED_OK)
        rc = load_pools(&task, data_dir, cache ? cache : feature_cache_default_dir(), &m, sha, k, &train, &test,
                        &ds_train, &ds_test, &err);
    if (rc == SDFED_OK) {
        printf("sim: %s on %s (%s), %d clients, %d rounds, seed %llu, model %s\n", sdfed_method_name(task.method),
               task.dataset, sdfed_partition_kind_name(task.partition.kind), task.clients, task.rounds,
               (unsigned long long)task.seed, task.model);
        sim_data data = {m.clip.cfg.embed_dim, SDFED_FMNIST_CLASSES, train.n,     test.n,        train.features,
                         test.features,        train.labels,         test.labels, train.domains, test.domains};
        rc = sim_run(&task, &m.clip, k, &cls, &data, &result, stdout, &err);
    }
    char path[1200];
    if (rc == SDFED_OK) rc = make_dir(out_dir, &err);
    if (rc == SDFED_OK) {
        snprintf(path, sizeof path, "%s/results.json", out_dir);
        rc = report_write_json(path, &task, sha, &result, &err);
    }
    if (rc == SDFED_OK) {
        snprintf(path, sizeof path, "%s/accuracy.svg", out_dir);
        rc = report_write_svg(path, &task, &result, &err);
    }
    if (rc == SDFED_OK)
        printf("final accuracy: %.2f%%\n", 100 * result.final_accuracy);
    else
        status = cli_error(CLI_FAILED, "sim: %s", err.message);
    sim_result_free(&result);
    free_pool(&train);
    free_pool(&test);
    sdfed_dataset_free(&ds_train);
    sdfed_dataset_free(&ds_test);
    sdfed_classes_free(&cls);
    cli_model_close(&m);
    return status;
}
