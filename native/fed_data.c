/* Loading the federation's data (see fed_data.h). */
#include "native/fed_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/domain.h"
#include "data/idx.h"
#include "native/dataset_file.h"
#include "native/feature_cache.h"
#include "native/image_decode.h"
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

/* Gives each of n images a domain (stream: 0 train, 1 test). */
static int assign_domains(int n, int stream, uint8_t **domains, sdfed_error *err) {
    if (!(*domains = malloc((size_t)n + 1))) return sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
    return sdfed_domain_assign(n, SDFED_DOMAINS, DOMAIN_SEED + (uint64_t)stream, *domains, err);
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
    out->decode = sdfed_image_decode_defaults(task->background);
    storage *s = calloc(1, sizeof *s);
    if (!s) return sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
    out->storage = s;
    if (strcmp(task->dataset, "folder") == 0) {
        int rc = load_folders(task, data_dir, s, out, err);
        /* a volunteer's own images stay as they are */
        if (rc == SDFED_OK && task->partition.kind == SDFED_PARTITION_DOMAINS && !data_dir)
            if ((rc = assign_domains(out->n_train, 0, &out->train_domains, err)) == SDFED_OK)
                rc = assign_domains(out->n_test, 1, &out->test_domains, err);
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
    if (task->partition.kind == SDFED_PARTITION_DOMAINS) /* every image in its domain, once */
        for (int split = 0; split < 2 && rc == SDFED_OK; split++) {
            int n = split ? out->n_test : out->n_train;
            const uint8_t **pixels = split ? &out->test_pixels : &out->train_pixels;
            uint8_t **domains = split ? &out->test_domains : &out->train_domains;
            if (!(s->domain_pixels[split] = malloc(per * (size_t)n + 1))) {
                rc = sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
                break;
            }
            rc = assign_domains(n, split, domains, err);
            for (int i = 0; i < n && rc == SDFED_OK; i++)
                rc = sdfed_domain_apply((*domains)[i], *pixels + per * i, out->rows, out->cols, 1,
                                        DOMAIN_SEED + (uint64_t)split, (uint64_t)i, s->domain_pixels[split] + per * i,
                                        err);
            *pixels = s->domain_pixels[split];
        }
    if (rc) fed_data_free(out);
    return rc;
}

int fed_data_image(const fed_data *d, int test, int i, sdfed_image *out, uint8_t **owned, sdfed_error *err) {
    *owned = NULL;
    const char *const *paths = test ? d->test_paths : d->train_paths;
    if (!paths) { /* Fashion-MNIST's pixels, already in their domains */
        const uint8_t *pixels = test ? d->test_pixels : d->train_pixels;
        *out = (sdfed_image){pixels + (size_t)i * d->rows * d->cols, d->cols, d->rows, 1, (size_t)d->cols};
        return SDFED_OK;
    }
    uint8_t *decoded;
    int width, height, channels;
    int rc = sdfed_image_decode_file(paths[i], &d->decode, &decoded, &width, &height, &channels, err);
    if (rc) return rc;
    const uint8_t *domains = test ? d->test_domains : d->train_domains;
    if (domains) {
        uint8_t *original = decoded;
        decoded = malloc((size_t)width * height * channels);
        rc = decoded ? sdfed_domain_apply(domains[i], original, height, width, channels, DOMAIN_SEED + (uint64_t)test,
                                          (uint64_t)i, decoded, err)
                     : sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
        free(original);
        if (rc) {
            free(decoded);
            return rc;
        }
        if (domains[i] == SDFED_DOMAIN_ROTATED) {
            int rotated_width = height;
            height = width, width = rotated_width;
        }
    }
    *owned = decoded;
    *out = (sdfed_image){decoded, width, height, channels, (size_t)width * channels};
    return SDFED_OK;
}

/* The feature cache's view of a split: its images as the model sees them. */
typedef struct split_images {
    const fed_data *data;
    int test;
} split_images;

static int split_image(const void *ctx, int i, sdfed_image *out, uint8_t **owned, sdfed_error *err) {
    const split_images *split = ctx;
    return fed_data_image(split->data, split->test, i, out, owned, err);
}

int fed_data_load(const sdfed_task *task, const char *data_dir, const char *cache_dir, const native_model *m,
                  const char *model_sha256, const sdfed_kernels *k, fed_data *out, sdfed_error *err) {
    int rc = fed_data_load_images(task, data_dir, out, err);
    if (rc) return rc;
    const char *domains = out->train_domains ? "-domains" : "";
    const char *kind = sdfed_method_reads_patches(task->method) ? "-patches" : "";
    out->dim = sdfed_method_feature_size(task->method, &m->clip.cfg);
    int n[2] = {out->n_train, out->n_test};
    float **features[2] = {&out->train_features, &out->test_features};
    storage *s = out->storage;
    for (int i = 0; i < 2 && rc == SDFED_OK; i++) {
        char name[128], digest[65];
        if (out->train_paths) { /* named by what is in it */
            rc = image_folder_digest(&s->folder[i], digest, err);
            snprintf(name, sizeof name, "folder-%s-%.32s%s%s", i ? "test" : "train", digest, domains, kind);
        } else {
            snprintf(name, sizeof name, "fashion-mnist-%s%s%s", i ? "test" : "train-30000-59999", domains, kind);
        }
        *features[i] = malloc(sizeof(float) * ((size_t)n[i] * out->dim + 1));
        if (!*features[i]) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
        split_images split = {out, i};
        feature_source src = {name, task->method, n[i], split_image, &split};
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
