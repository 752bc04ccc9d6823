/* The federation's data as the simulator, the headless client, `sdfed task`
 * and the aggregator's demo shards see it: for "fashion-mnist", its
 * training images 30000..59999 as the pool clients train on, its test set
 * as the pool they are tested on (images 0..29999 trained the default
 * model), each image turned into one of the four derived domains when the
 * task has domains; for a folder dataset (native/image_folder.h), its
 * train and test folders, or one folder and its held-out test images (held
 * out among every image found, before any is decoded), each image seen in
 * its domain when the task has domains (not a volunteer's own images).
 *
 * A folder's images are the ones that decode: every file is checked once
 * per content (native/image_check.h) and one that does not decode is left
 * out of the dataset and named in `skipped` with the reason, beside the
 * files that are no images; the partition sees only the images left, the
 * same ones in every program. Every image's features under the model, as
 * the task's method reads them (the pooled feature, or fedotp's patch
 * features: method/methods.h), come from the feature cache, per image
 * (native/feature_cache.h), so a changed folder recomputes only the images
 * that changed. Of Fashion-MNIST's 40,000 images, only those a program
 * reads are encoded (native_fed_wanted): a client's shard, not the pool. */
#ifndef SDFED_NATIVE_FED_DATA_H
#define SDFED_NATIVE_FED_DATA_H

#include <stdint.h>

#include "clip/image_preprocess.h"
#include "fed/task.h"
#include "native/feature_cache.h"
#include "native/image_decode.h"
#include "native/image_folder.h"
#include "native/model.h"

typedef struct native_fed_data {
    int dim, n_classes;
    const char *const *class_names; /* (n_classes): Fashion-MNIST's, or the folders' */
    int n_train, n_test;
    int rows, cols;                                     /* of every image */
    const uint8_t *train_pixels, *test_pixels;          /* (n, rows, cols) grey, in their domains; NULL for folders */
    const char *const *train_paths, *const *test_paths; /* (n) a folder dataset's image files; NULL otherwise */
    float *train_features, *test_features;              /* (n, dim); NULL from native_fed_data_load_images */
    const uint8_t *train_labels, *test_labels;
    uint8_t *train_domains, *test_domains;    /* NULL unless the task has domains */
    const native_image_folder_skips *skipped; /* a folder dataset's files not used, and why; NULL otherwise */
    native_feature_counts features;     /* native_fed_data_load: the images' features, from the cache or computed */
    native_image_decode_options decode; /* a folder's files: over the task's background */
    void *storage;                      /* what native_fed_data_free releases */
} native_fed_data;

/* Which of Fashion-MNIST's images a program reads, known once their labels
 * are (the partition is drawn from the labels): mark(ctx, d, train, test)
 * sets train[i] (test[i]) to 1 for each training (test) image whose
 * features it reads; the arrays come zeroed. Only those are encoded; the
 * rows of the others are NaN, so that a read of one cannot pass unseen. A
 * folder dataset's images are all encoded (which of them decode decides
 * the partition). */
typedef struct native_fed_wanted {
    int (*mark)(const void *ctx, const native_fed_data *d, uint8_t *train, uint8_t *test, sdfed_error *err);
    const void *ctx;
} native_fed_wanted;

/* The images and labels only (a folder's images checked to decode).
 * data_dir: for "fashion-mnist", Debian's folder (NULL for the default);
 * for a folder task, NULL for the task's folders, or a volunteer's own
 * ImageFolder (its folders matched to the task's classes, any of them
 * missing, none extra; a fifth of each class held out). cache_dir: where
 * the checks are kept (NULL for native_feature_cache_default_dir()). */
int native_fed_data_load_images(const sdfed_task *task, const char *data_dir, const char *cache_dir,
                                native_fed_data *out, sdfed_error *err);
/* The images and the features of those wanted (NULL: every image). */
int native_fed_data_load(const sdfed_task *task, const char *data_dir, const char *cache_dir, const native_model *m,
                         const char *model_sha256, const sdfed_kernels *k, const native_fed_wanted *wanted,
                         native_fed_data *out, sdfed_error *err);
/* Image i of the training (test 0) or the test split (test 1) as the model
 * sees it, in its domain: *owned (free()) holds what was decoded for it, or
 * NULL when its pixels are the data's own. */
int native_fed_data_image(const native_fed_data *d, int test, int i, sdfed_image *out, uint8_t **owned,
                          sdfed_error *err);
/* A folder dataset's task that names no classes takes the folders' names
 * (sdfed_task_set_classes); other tasks stay as they are. */
int native_fed_data_task_classes(sdfed_task *task, const native_fed_data *d, sdfed_error *err);
void native_fed_data_free(native_fed_data *d);

#endif
