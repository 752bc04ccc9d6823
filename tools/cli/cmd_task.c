/* sdfed task: what a host runs before opening a federation.
 *   sdfed task init DIR [--clients N] [--model M.gguf] [--out TASK.json]
 *       a task for the ImageFolder DIR (DIR/train and DIR/test when both
 *       hold the classes, else DIR with a fifth of each class held out for
 *       testing): its classes and images per class are printed, the task
 *       is written to TASK.json (task.json) with the model (the default
 *       one unless given), every client in every round, and a Dirichlet
 *       partition over N clients (10) when they have at least
 *       INIT_DIRICHLET_MIN training images each on average (else an iid one,
 *       which always works; the line printed says which and why)
 *   sdfed task check TASK.json [--cache DIR] [--data DIR] [--backend NAME]
 *       validates the task and prints its classes with their images, each
 *       client's class histogram under the partition, the model's facts
 *       and CLIP's zero-shot accuracy on the test split (features from the
 *       cache, computed with a progress line the first time) */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sha256.h"
#include "cli.h"
#include "fed/protocol.h"
#include "native/fed_client.h"
#include "native/fed_data.h"
#include "native/image_folder.h"
#include "native/task_file.h"
#include "prompt/prompt.h"

/* images of each class among n labels */
static void print_classes(const char *const *names, int C, const uint8_t *train, int n_train, const uint8_t *test,
                          int n_test) {
    printf("%d classes:\n", C);
    for (int c = 0; c < C; c++) {
        int a = 0, b = 0;
        for (int i = 0; i < n_train; i++) a += train[i] == c;
        for (int i = 0; test && i < n_test; i++) b += test[i] == c;
        if (test)
            printf("  %-24s %6d training, %5d test images\n", names[c], a, b);
        else
            printf("  %-24s %6d images\n", names[c], a);
    }
}

/* path made absolute (from the current folder) into out[PATH_MAX]; 0 when too long */
static int absolute(const char *path, char out[PATH_MAX]) {
    char cwd[PATH_MAX];
    return path[0] == '/' ? snprintf(out, PATH_MAX, "%s", path) < PATH_MAX
                          : getcwd(cwd, sizeof cwd) && snprintf(out, PATH_MAX, "%s/%s", cwd, path) < PATH_MAX;
}

/* A Dirichlet split (alpha 0.5) leaves some clients with few images: below
 * this average the partition's min_train (16) is out of reach too often. */
#define INIT_DIRICHLET_MIN 128

static int task_init(int argc, char **argv) {
    const char *clients = "10", *out = "task.json", *model = NULL;
    const cli_option options[] = {{"--clients", &clients, NULL}, {"--out", &out, NULL}, {"--model", &model, NULL}};
    char **rest = malloc(sizeof *rest * (size_t)(argc + 1));
    int n_rest = 0, status = rest ? cli_parse(argc, argv, options, 3, &rest, &n_rest) : CLI_FAILED;
    if (status) {
        free(rest);
        return status;
    }
    if (n_rest != 1) {
        free(rest);
        return cli_error(CLI_USAGE, "task init: give one folder (see 'sdfed task --help')");
    }
    /* the folder as an absolute path, so that the task file may live anywhere */
    char dir[PATH_MAX], train[PATH_MAX + 8], test[PATH_MAX + 8];
    int fits = absolute(rest[0], dir);
    free(rest);
    if (!fits) return cli_error(CLI_FAILED, "task init: the folder's path is too long");
    for (size_t len = strlen(dir); len > 1 && dir[len - 1] == '/'; len--) dir[len - 1] = '\0';
    char *end;
    long n_clients = strtol(clients, &end, 10);
    if (*end || n_clients < 1 || n_clients > 100000)
        return cli_error(CLI_USAGE, "task init: --clients must be an integer in 1..100000");
    /* the model as an absolute path too, checked to be a CLIP GGUF */
    char model_path[PATH_MAX], resolved[PATH_MAX];
    sdfed_error err = {0};
    native_model m = {0};
    if (model && !absolute(native_resolve_path(model, resolved, sizeof resolved), model_path))
        return cli_error(CLI_FAILED, "task init: the model's path is too long");
    if (model && native_model_open(&m, model_path, &err)) return cli_error(CLI_FAILED, "task init: %s", err.message);
    if (model) native_model_close(&m);
    image_folder f = {0}, t = {0};
    snprintf(train, sizeof train, "%s/train", dir);
    snprintf(test, sizeof test, "%s/test", dir);
    int split = image_folder_scan(train, NULL, 0, 0, &f, &err) == SDFED_OK &&
                image_folder_scan(test, (const char *const *)f.class_names, f.n_classes, 0, &t, &err) == SDFED_OK;
    if (!split) {
        image_folder_free(&f), image_folder_free(&t);
        if (image_folder_scan(dir, NULL, 0, 0, &f, &err)) return cli_error(CLI_FAILED, "task init: %s", err.message);
    }
    print_classes((const char *const *)f.class_names, f.n_classes, f.labels, f.n, split ? t.labels : NULL, t.n);
    if (f.skipped + t.skipped) printf("%d files skipped (not PNG or JPEG)\n", f.skipped + t.skipped);
    sdfed_buffer b = {0}, dataset = {0};
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &dataset, NULL);
    sdfed_jw_string(&w, split ? "train" : "folder", split ? train : dir);
    if (split)
        sdfed_jw_string(&w, "test", test);
    else
        sdfed_jw_double(&w, "test_fraction", 0.2);
    int rc = sdfed_jw_end(&w, &err);
    const char *name = strrchr(dir, '/');
    sdfed_jw_begin(&w, &b, NULL);
    sdfed_jw_string(&w, "name", name && name[1] ? name + 1 : dir);
    sdfed_jw_string(&w, "model", model ? model_path : NATIVE_DEFAULT_MODEL);
    sdfed_jw_raw(&w, "dataset", (const char *)dataset.data, dataset.size);
    sdfed_jw_int(&w, "clients", n_clients);
    int n_train = split ? f.n : f.n - f.n / 5, dirichlet = n_train >= INIT_DIRICHLET_MIN * n_clients;
    static const char partition_dirichlet[] = "{\"kind\": \"dirichlet\", \"alpha\": 0.5}",
                      partition_iid[] = "{\"kind\": \"iid\"}";
    sdfed_jw_raw(&w, "partition", dirichlet ? partition_dirichlet : partition_iid,
                 dirichlet ? sizeof partition_dirichlet - 1 : sizeof partition_iid - 1);
    printf("partition: %s, about %d training images a client", dirichlet ? "Dirichlet (alpha 0.5)" : "iid",
           n_train / (int)n_clients);
    if (dirichlet)
        printf("\n");
    else
        printf(" (a Dirichlet split needs about %d a client or more)\n", INIT_DIRICHLET_MIN);
    sdfed_jw_int(&w, "rounds", 50);
    sdfed_jw_string(&w, "method", "sdfed");
    sdfed_jw_int(&w, "seed", 1);
    if (rc == SDFED_OK) rc = sdfed_jw_end(&w, &err);
    char *text = rc == SDFED_OK ? malloc(b.size + 2) : NULL;
    if (rc == SDFED_OK && !text) rc = sdfed_fail(&err, SDFED_ERR_NOMEM, "out of memory");
    if (rc == SDFED_OK) {
        memcpy(text, b.data, b.size);
        memcpy(text + b.size, "\n", 2);
        rc = native_write_file(out, text, &err);
    }
    free(text);
    sdfed_buffer_free(&b), sdfed_buffer_free(&dataset);
    image_folder_free(&f), image_folder_free(&t);
    if (rc) return cli_error(CLI_FAILED, "task init: %s", err.message);
    printf("wrote %s (check it with: sdfed task check %s)\n", out, out);
    return CLI_OK;
}

/* CLIP's zero-shot accuracy: the nearest class prompt to each test image */
static int zeroshot_accuracy(const native_model *m, const sdfed_kernels *k, const sdfed_classes *cls, const fed_data *d,
                             double *accuracy, sdfed_error *err) {
    int C = cls->n_classes, D = d->dim;
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    float *text = sdfed_arena_floats(&arena, (size_t)C * D);
    int rc = text ? sdfed_classes_zeroshot(&m->clip, k, cls, text, &arena, err)
                  : sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    int right = 0;
    for (int i = 0; i < d->n_test && rc == SDFED_OK; i++) {
        const float *x = d->test_features + (size_t)i * D;
        int best = 0;
        double best_score = -2;
        for (int c = 0; c < C; c++) {
            double s = 0;
            for (int j = 0; j < D; j++) s += (double)x[j] * text[(size_t)c * D + j];
            if (s > best_score) best_score = s, best = c;
        }
        right += best == d->test_labels[i];
    }
    *accuracy = d->n_test ? (double)right / d->n_test : 0;
    sdfed_arena_free(&arena);
    return rc;
}

static int task_check(int argc, char **argv) {
    const char *cache = NULL, *data_dir = NULL, *backend = NULL;
    const cli_option options[] = {
        {"--cache", &cache, NULL}, {"--data", &data_dir, NULL}, {"--backend", &backend, NULL}};
    char **rest = malloc(sizeof *rest * (size_t)(argc + 1));
    int n_rest = 0, status = rest ? cli_parse(argc, argv, options, 3, &rest, &n_rest) : CLI_FAILED;
    if (status) {
        free(rest);
        return status;
    }
    if (n_rest != 1) {
        free(rest);
        return cli_error(CLI_USAGE, "task check: give one task file (see 'sdfed task --help')");
    }
    const char *path = rest[0];
    const sdfed_kernels *k = native_backend(backend);
    sdfed_task task;
    sdfed_task_defaults(&task);
    sdfed_error err = {0};
    native_model m = {0};
    fed_data d = {0};
    sdfed_classes cls = {0};
    sdfed_partition part = {0};
    char sha[65];
    int rc = k ? native_task_read(path, &task, NULL, &err) : sdfed_fail(&err, SDFED_ERR_ARG, "no backend %s", backend);
    if (rc == SDFED_OK) rc = native_model_open(&m, task.model, &err);
    if (rc == SDFED_OK) {
        sdfed_sha256_hex(m.file.data, m.file.size, sha);
        const sdfed_clip_config *c = &m.clip.cfg;
        printf("task %s: %s on %s, %d clients (%s partition), %d rounds\n", path, sdfed_method_name(task.method),
               task.dataset, task.clients, sdfed_partition_kind_name(task.partition.kind), task.rounds);
        printf("model %s (sha256 %.16s...): images %dx%d in %dx%d patches, vision %d layers x %d, text %d layers x "
               "%d, features %d\n",
               task.model, sha, c->image_size, c->image_size, c->patch_size, c->patch_size, c->vision_layers,
               c->vision_width, c->text_layers, c->text_width, c->embed_dim);
        rc = fed_data_load(&task, data_dir, cache, &m, sha, k, &d, &err);
    }
    if (rc == SDFED_OK) {
        if (d.skipped) printf("%d files skipped (not PNG or JPEG)\n", d.skipped);
        rc = fed_data_task_classes(&task, &d, &err);
        const char **names = rc == SDFED_OK ? malloc(sizeof *names * (size_t)d.n_classes) : NULL;
        if (rc == SDFED_OK && !names) rc = sdfed_fail(&err, SDFED_ERR_NOMEM, "out of memory");
        for (int c = 0; names && c < d.n_classes; c++) names[c] = sdfed_task_class_name(&task, c);
        if (names) print_classes(names, d.n_classes, d.train_labels, d.n_train, d.test_labels, d.n_test);
        free(names);
        if (rc == SDFED_OK) rc = sdfed_task_classes(&task, &m.tokenizer, m.clip.cfg.context_length, &cls, &err);
    }
    if (rc == SDFED_OK) rc = fed_partition(&task, &d, &part, &err);
    for (int i = 0; rc == SDFED_OK && i < part.n_clients; i++) {
        const sdfed_client_split *s = &part.clients[i];
        printf("client %3d: %5d training, %5d test images; by class:", i, s->n_train, s->n_test);
        for (int c = 0; c < d.n_classes; c++) {
            int n = 0;
            for (int j = 0; j < s->n_train; j++) n += d.train_labels[s->train[j]] == c;
            printf(" %d", n);
        }
        printf("\n");
    }
    double accuracy = 0;
    if (rc == SDFED_OK) rc = zeroshot_accuracy(&m, k, &cls, &d, &accuracy, &err);
    if (rc == SDFED_OK) printf("zero-shot accuracy on the %d test images: %.2f%%\n", d.n_test, 100 * accuracy);
    sdfed_partition_free(&part);
    sdfed_classes_free(&cls);
    sdfed_task_free(&task);
    fed_data_free(&d);
    if (m.file.data) native_model_close(&m);
    free(rest);
    return rc ? cli_error(CLI_FAILED, "task check: %s", err.message) : CLI_OK;
}

int cmd_task(int argc, char **argv) {
    if (argc >= 1 && strcmp(argv[0], "init") == 0) return task_init(argc - 1, argv + 1);
    if (argc >= 1 && strcmp(argv[0], "check") == 0) return task_check(argc - 1, argv + 1);
    return cli_error(CLI_USAGE, "task: 'init' or 'check' (see 'sdfed task --help')");
}
