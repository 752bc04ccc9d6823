/* Loading the federation's data (see fed_data.h). */
#include "native/fed_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/idx.h"
#include "native/dataset_file.h"
#include "native/feature_cache.h"
#include "native/image_folder.h"

/* The federation's slice of Fashion-MNIST's training set. */
#define POOL_FIRST 30000
/* The multi-domain setting's domain assignment and noise are fixed (not the
 * task seed) so that its images, and their cached features, are one dataset. */
#define DOMAIN_SEED 20260

typedef struct storage {
    sdfed_dataset train, test;
    uint8_t *domain_pixels[2];
    image_folder folder[2], all; /* a folder dataset: train and test; all when test is held out of it */
    int held_out;
} storage;

/* Gives each of n images a domain and its transformed pixels. */
static int make_domains(int n, const uint8_t *pixels, int rows, int cols, uint64_t stream, uint8_t **domains,
                        uint8_t **out, sdfed_error *err) {
    size_t per = (size_t)rows * cols;
    *domains = malloc((size_t)n);
    *out = malloc(per * (size_t)n);
    if (!*domains || !*out) return sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
    int rc = sdfed_domain_assign(n, SDFED_DOMAINS, DOMAIN_SEED + stream, *domains, err);
    for (int i = 0; i < n && rc == SDFED_OK; i++)
        rc = sdfed_domain_apply((*domains)[i], pixels + per * i, rows, cols, DOMAIN_SEED + stream, (uint64_t)i,
                                *out + per * i, err);
    return rc;
}

/* A folder dataset: its two splits, the test classes matched to the train ones. */
static int load_folders(const sdfed_task *task, const char *own, storage *s, fed_data *out, sdfed_error *err) {
    /* the task's classes, when it names them, else the folders' */
    const char *const *task_classes = task->n_classes > 0 ? (const char *const *)task->class_names : NULL;
    int rc;
    if (task->test_fraction > 0 || own) {
        s->held_out = 1;
        rc = image_folder_scan(own ? own : task->data_train, task_classes, task->n_classes, own != NULL, &s->all, err);
        if (rc == SDFED_OK)
            rc = image_folder_hold_out(&s->all, own ? 0.2 : task->test_fraction, &s->folder[0], &s->folder[1], err);
    } else {
        rc = image_folder_scan(task->data_train, task_classes, task->n_classes, 0, &s->folder[0], err);
        if (rc == SDFED_OK)
            rc = image_folder_scan(task->data_test, (const char *const *)s->folder[0].class_names,
                                   s->folder[0].n_classes, 0, &s->folder[1], err);
    }
    if (rc) return sdfed_fail_context(err, rc, "dataset");
    out->n_classes = s->folder[0].n_classes;
    out->class_names = (const char *const *)s->folder[0].class_names;
    out->n_train = s->folder[0].n, out->n_test = s->folder[1].n;
    out->train_labels = s->folder[0].labels, out->test_labels = s->folder[1].labels;
    out->train_paths = (const char *const *)s->folder[0].paths,
    out->test_paths = (const char *const *)s->folder[1].paths;
    out->skipped = s->held_out ? s->all.skipped : s->folder[0].skipped + s->folder[1].skipped;
    return SDFED_OK;
}

int fed_data_load_images(const sdfed_task *task, const char *data_dir, fed_data *out, sdfed_error *err) {
    memset(out, 0, sizeof *out);
    storage *s = calloc(1, sizeof *s);
    if (!s) return sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
    out->storage = s;
    if (strcmp(task->dataset, "folder") == 0) {
        int rc = load_folders(task, data_dir, s, out, err);
        if (rc) fed_data_free(out);
        return rc;
    }
    int rc = sdfed_fmnist_load(data_dir ? data_dir : SDFED_FMNIST_DEFAULT_DIR, SDFED_FMNIST_TRAIN, &s->train, err);
    if (rc == SDFED_OK)
        rc = sdfed_fmnist_load(data_dir ? data_dir : SDFED_FMNIST_DEFAULT_DIR, SDFED_FMNIST_TEST, &s->test, err);
    if (rc == SDFED_OK && s->train.n <= POOL_FIRST)
        rc = sdfed_fail(err, SDFED_ERR_FORMAT, "data: the training set is too small");
    if (rc) {
        fed_data_free(out);
        return rc;
    }
    out->rows = s->train.rows, out->cols = s->train.cols;
    size_t per = (size_t)out->rows * out->cols;
    out->n_classes = SDFED_FMNIST_CLASSES;
    out->class_names = sdfed_fmnist_class_names;
    out->n_train = s->train.n - POOL_FIRST;
    out->n_test = s->test.n;
    out->train_labels = s->train.labels + POOL_FIRST;
    out->test_labels = s->test.labels;
    out->train_pixels = s->train.pixels + per * POOL_FIRST;
    out->test_pixels = s->test.pixels;
    if (task->partition.kind == SDFED_PARTITION_DOMAINS) {
        rc = make_domains(out->n_train, out->train_pixels, out->rows, out->cols, 0, &out->train_domains,
                          &s->domain_pixels[0], err);
        if (rc == SDFED_OK)
            rc = make_domains(out->n_test, out->test_pixels, out->rows, out->cols, 1, &out->test_domains,
                              &s->domain_pixels[1], err);
        out->train_pixels = s->domain_pixels[0], out->test_pixels = s->domain_pixels[1];
    }
    if (rc) fed_data_free(out);
    return rc;
}

int fed_data_load(const sdfed_task *task, const char *data_dir, const char *cache_dir, const native_model *m,
                  const char *model_sha256, const sdfed_kernels *k, fed_data *out, sdfed_error *err) {
    int rc = fed_data_load_images(task, data_dir, out, err);
    if (rc) return rc;
    int domains = task->partition.kind == SDFED_PARTITION_DOMAINS;
    out->dim = m->clip.cfg.embed_dim;
    int n[2] = {out->n_train, out->n_test};
    const uint8_t *pixels[2] = {out->train_pixels, out->test_pixels};
    float **features[2] = {&out->train_features, &out->test_features};
    storage *s = out->storage;
    int folder = strcmp(task->dataset, "folder") == 0;
    for (int i = 0; i < 2 && rc == SDFED_OK; i++) {
        char name[128], digest[65];
        if (folder) { /* named by what is in it */
            rc = image_folder_digest(&s->folder[i], digest, err);
            snprintf(name, sizeof name, "folder-%s-%.32s", i ? "test" : "train", digest);
        } else {
            snprintf(name, sizeof name, "fashion-mnist-%s%s", i ? "test" : "train-30000-59999",
                     domains ? "-domains" : "");
        }
        *features[i] = malloc(sizeof(float) * ((size_t)n[i] * out->dim + 1));
        if (!*features[i]) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
        feature_source src = {name, n[i], out->rows, out->cols, pixels[i], folder ? s->folder[i].paths : NULL};
        if (rc == SDFED_OK)
            rc = feature_cache_load(cache_dir ? cache_dir : feature_cache_default_dir(), m, model_sha256, k, &src,
                                    *features[i], err);
    }
    if (rc) fed_data_free(out);
    return rc;
}

int fed_data_task_classes(sdfed_task *task, const fed_data *d, sdfed_error *err) {
    if (task->n_classes > 0 || strcmp(task->dataset, "folder") != 0) return SDFED_OK;
    return sdfed_task_set_classes(task, d->class_names, NULL, d->n_classes, err);
}

void fed_data_free(fed_data *d) {
    storage *s = d->storage;
    if (s) {
        sdfed_dataset_free(&s->train);
        sdfed_dataset_free(&s->test);
        free(s->domain_pixels[0]);
        free(s->domain_pixels[1]);
        if (s->held_out) {
            image_folder_free_split(&s->folder[0]), image_folder_free_split(&s->folder[1]);
            image_folder_free(&s->all);
        } else {
            image_folder_free(&s->folder[0]), image_folder_free(&s->folder[1]);
        }
        free(s);
    }
    free(d->train_features);
    free(d->test_features);
    free(d->train_domains);
    free(d->test_domains);
    memset(d, 0, sizeof *d);
}
