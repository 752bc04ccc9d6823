/* Loading the federation's data (see fed_data.h). */
#include "native/fed_data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "native/crypto.h"
#include "data/domain.h"
#include "data/idx.h"
#include "native/dataset_file.h"
#include "native/image_check.h"
#include "native/image_decode.h"
#include "native/progress.h"

/* The federation's slice of Fashion-MNIST's training set. */
#define POOL_FIRST 30000
/* The multi-domain setting's domain assignment and noise are fixed (not the
 * task seed) so that its images, and their cached features, are one dataset. */
#define DOMAIN_SEED 20260

typedef struct storage {
    sdfed_dataset train, test;
    uint8_t *domain_pixels[2];
    /* a folder dataset: train and test; all when test is held out of it */
    native_image_folder folder[2], all;
    int held_out;
    native_image_folder_skips skipped;
    uint8_t *keys[2];            /* (n, 32) each file's content key (image_check.h) */
    int *noise_index[2];         /* (n) each file's place among its split's files found: its domain's noise */
    native_image_checks *checks; /* what decodes, remembered */
} storage;

static const char *const split_names[2] = {"training images", "test images"};

/* Gives each of n images a domain (stream: 0 train, 1 test). */
static int assign_domains(int n, int stream, uint8_t **domains, sdfed_error *err) {
    if (!(*domains = malloc((size_t)n + 1))) return sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
    return sdfed_domain_assign(n, SDFED_DOMAINS, DOMAIN_SEED + (uint64_t)stream, *domains, err);
}

/* Moves the list's entries to the end of into. */
static int take_skips(native_image_folder_skips *into, native_image_folder_skips *from, sdfed_error *err) {
    int rc = SDFED_OK;
    for (int i = 0; i < from->n && rc == SDFED_OK; i++)
        rc = native_image_folder_skip_add(into, from->items[i].path, from->items[i].reason, from->items[i].image, err);
    native_image_folder_skips_free(from);
    return rc;
}

/* A folder dataset's files: its two splits (the test classes matched to the
 * train ones), every image found, none decoded yet. */
static int scan_folders(const sdfed_task *task, const char *own, storage *s, sdfed_error *err) {
    /* the task's classes, when it names them, else its folders' (the host's,
     * also for a volunteer's own images, which may hold some of them only) */
    const char *const *task_classes = task->n_classes > 0 ? (const char *const *)task->class_names : NULL;
    int n_classes = task->n_classes, rc = SDFED_OK;
    native_image_folder host = {0};
    if (own && !task_classes) {
        rc = native_image_folder_scan(task->data_train, NULL, 0, 0, &host, err);
        if (rc) {
            native_image_folder_free(&host);
            return sdfed_fail_context(err, rc, "no 'classes' in the task: its classes are its folder's");
        }
        task_classes = (const char *const *)host.class_names;
        n_classes = host.n_classes;
    }
    if (task->test_fraction > 0 || own) {
        s->held_out = 1;
        rc = native_image_folder_scan(own ? own : task->data_train, task_classes, n_classes, own != NULL, &s->all, err);
        if (rc == SDFED_OK)
            rc = native_image_folder_hold_out(&s->all, own ? 0.2 : task->test_fraction, &s->folder[0], &s->folder[1],
                                              err);
        if (rc == SDFED_OK) rc = take_skips(&s->skipped, &s->all.skipped, err);
    } else {
        rc = native_image_folder_scan_splits(task->data_train, task->data_test, task_classes, n_classes, &s->folder[0],
                                             &s->folder[1], err);
        for (int i = 0; i < 2 && rc == SDFED_OK; i++) rc = take_skips(&s->skipped, &s->folder[i].skipped, err);
    }
    native_image_folder_free(&host);
    return rc;
}

/* The fields of out that show split i of a folder dataset. */
static void show_split(native_fed_data *out, storage *s, int i) {
    native_image_folder *f = &s->folder[i];
    if (i == 0) {
        out->n_train = f->n;
        out->train_labels = f->labels;
        out->train_paths = (const char *const *)f->paths;
    } else {
        out->n_test = f->n;
        out->test_labels = f->labels;
        out->test_paths = (const char *const *)f->paths;
    }
}

/* A folder's image i, decoded (which this takes), as the model sees it:
 * in its domain when the task has domains. */
static int in_domain(const native_fed_data *d, int test, int i, uint8_t *decoded, int width, int height, int channels,
                     sdfed_image *out, uint8_t **owned, sdfed_error *err) {
    const uint8_t *domains = test ? d->test_domains : d->train_domains;
    if (domains) {
        const storage *s = d->storage;
        uint8_t *original = decoded;
        decoded = malloc((size_t)width * height * channels);
        int rc = decoded
                     ? sdfed_domain_apply(domains[i], original, height, width, channels, DOMAIN_SEED + (uint64_t)test,
                                          (uint64_t)s->noise_index[test][i], decoded, err)
                     : sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
        free(original);
        if (rc) {
            free(decoded);
            return rc;
        }
        if (domains[i] == SDFED_DOMAIN_ROTATED) {
            int rotated_width = height;
            height = width;
            width = rotated_width;
        }
    }
    *owned = decoded;
    *out = (sdfed_image){
        .pixels = decoded, .width = width, .height = height, .channels = channels, .stride = (size_t)width * channels};
    return SDFED_OK;
}

/* Each file's content key; a file that cannot be read is named and not
 * used (*usable 0). */
static int read_keys(storage *s, int split, uint8_t *usable, sdfed_error *err) {
    native_image_folder *f = &s->folder[split];
    if (!(s->keys[split] = malloc(32 * ((size_t)f->n + 1))))
        return sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
    int rc = SDFED_OK;
    for (int i = 0; i < f->n && rc == SDFED_OK; i++) {
        sdfed_error why = {0};
        usable[i] = native_image_file_key(f->paths[i], s->keys[split] + (size_t)i * 32, &why) == SDFED_OK;
        if (!usable[i]) rc = native_image_folder_skip_add(&s->skipped, f->paths[i], why.message, 1, err);
        native_progress_show("reading the %s: %d of %d", split_names[split], i + 1, f->n);
    }
    return rc;
}

/* Whether each readable file decodes, without a model. */
static int check_split(const native_fed_data *d, storage *s, int split, uint8_t *usable, sdfed_error *err) {
    native_image_folder *f = &s->folder[split];
    int rc = SDFED_OK;
    for (int i = 0; i < f->n && rc == SDFED_OK; i++) {
        if (!usable[i]) continue;
        char reason[IMAGE_CHECK_REASON];
        int ok = 0;
        rc = native_image_checks_verdict(s->checks, f->paths[i], s->keys[split] + (size_t)i * 32, &d->decode, &ok,
                                         reason, err);
        if (rc == SDFED_OK && !ok) rc = native_image_folder_skip_add(&s->skipped, f->paths[i], reason, 1, err);
        usable[i] = ok;
        native_progress_show("checking the %s: %d of %d", split_names[split], i + 1, f->n);
    }
    return rc;
}

/* The feature cache's view of a split's readable images: items[j] is the
 * split's image the source's image j is. */
typedef struct split_view {
    const native_fed_data *data;
    storage *s;
    int split;
    const int *items;
} split_view;

/* What image i's features depend on besides the model: the file's content
 * (with the decoding rules), the background its transparency is composited
 * onto, and its domain and the noise it draws. */
static int file_feature_key(const void *ctx, int j, uint8_t key[32], sdfed_error *err) {
    const split_view *v = ctx;
    int i = v->items[j];
    const uint8_t *domains = v->split ? v->data->test_domains : v->data->train_domains;
    native_sha256_ctx h;
    int rc = native_sha256_begin(&h, err);
    if (rc) return rc;
    native_sha256_add(&h, "sdfed image file", 16);
    native_sha256_add(&h, v->s->keys[v->split] + (size_t)i * 32, 32);
    native_sha256_add(&h, v->data->decode.background, 3);
    if (domains) {
        int32_t view[3] = {domains[i], v->split, v->s->noise_index[v->split][i]};
        native_sha256_add(&h, view, sizeof view);
    }
    return native_sha256_end(&h, key, err);
}

/* Image i as the model sees it; a file that does not decode is named and
 * given without pixels. */
static int file_image(const void *ctx, int j, sdfed_image *out, uint8_t **owned, sdfed_error *err) {
    const split_view *v = ctx;
    int i = v->items[j];
    const char *path = (v->split ? v->data->test_paths : v->data->train_paths)[i];
    char reason[IMAGE_CHECK_REASON];
    uint8_t *pixels;
    int width, height, channels;
    *owned = NULL;
    out->pixels = NULL;
    int rc = native_image_checks_decode(v->s->checks, path, v->s->keys[v->split] + (size_t)i * 32, &v->data->decode,
                                        &pixels, &width, &height, &channels, reason, err);
    if (rc) return rc;
    if (!pixels) return native_image_folder_skip_add(&v->s->skipped, path, reason, 1, err);
    return in_domain(v->data, v->split, i, pixels, width, height, channels, out, owned, err);
}

/* The features of a split's readable images; *usable 0 for those that do
 * not decode. */
static int encode_split(native_fed_data *out, storage *s, int split, uint8_t *usable, const sdfed_task *task,
                        const char *cache_dir, const native_model *m, const char *model_sha256, const sdfed_kernels *k,
                        sdfed_error *err) {
    int n = split ? out->n_test : out->n_train;
    float **features = split ? &out->test_features : &out->train_features;
    int *items = malloc(sizeof *items * ((size_t)n + 1));
    uint8_t *decoded = malloc((size_t)n + 1);
    *features = malloc(sizeof(float) * ((size_t)n * out->dim + 1));
    int rc = items && decoded && *features ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
    int readable = 0;
    for (int i = 0; i < n && rc == SDFED_OK; i++)
        if (usable[i]) items[readable++] = i;
    split_view view = {.data = out, .s = s, .split = split, .items = items};
    native_feature_source src = {.name = split_names[split],
                                 .method = task->method,
                                 .n = readable,
                                 .key = file_feature_key,
                                 .image = file_image,
                                 .ctx = &view};
    if (rc == SDFED_OK)
        rc = native_feature_cache_load(cache_dir, m, model_sha256, k, &src, *features, decoded, &out->features, err);
    /* the rows of the images that decoded, in order: the split's images that stay */
    int kept = 0;
    for (int j = 0; j < readable && rc == SDFED_OK; j++) {
        usable[items[j]] = decoded[j];
        if (!decoded[j]) continue;
        memmove(*features + (size_t)kept * out->dim, *features + (size_t)j * out->dim,
                sizeof(float) * (size_t)out->dim);
        kept++;
    }
    free(items);
    free(decoded);
    return rc;
}

/* Keeps split's usable images in every array that lists them (the
 * features are kept so already). */
static void keep_usable(native_fed_data *out, storage *s, int split, const uint8_t *usable) {
    int n = split ? out->n_test : out->n_train, kept = 0;
    uint8_t *domains = split ? out->test_domains : out->train_domains;
    for (int i = 0; i < n; i++) {
        if (!usable[i]) continue;
        memmove(s->keys[split] + (size_t)kept * 32, s->keys[split] + (size_t)i * 32, 32);
        if (domains) {
            domains[kept] = domains[i];
            s->noise_index[split][kept] = s->noise_index[split][i];
        }
        kept++;
    }
    native_image_folder_keep(&s->folder[split], usable);
    show_split(out, s, split);
}

/* A class with no image left in the training split cannot be learned. */
static int check_classes(const native_fed_data *out, sdfed_error *err) {
    int *count = calloc((size_t)out->n_classes + 1, sizeof *count);
    if (!count) return sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
    for (int i = 0; i < out->n_train; i++) count[out->train_labels[i]]++;
    int empty = -1;
    for (int c = 0; c < out->n_classes && empty < 0; c++)
        if (!count[c]) empty = c;
    free(count);
    if (empty < 0) return SDFED_OK;
    return sdfed_fail(err, SDFED_ERR_FORMAT, "class '%s' has no training image that decodes", out->class_names[empty]);
}

/* A folder dataset: its images that decode and, with a model, their features. */
static int load_folder_dataset(const sdfed_task *task, const char *own, const char *cache_dir, const native_model *m,
                               const char *model_sha256, const sdfed_kernels *k, storage *s, native_fed_data *out,
                               sdfed_error *err) {
    int rc = scan_folders(task, own, s, err);
    if (rc) return sdfed_fail_context(err, rc, "dataset");
    out->skipped = &s->skipped;
    out->n_classes = s->folder[0].n_classes;
    out->class_names = (const char *const *)s->folder[0].class_names;
    for (int i = 0; i < 2; i++) show_split(out, s, i);
    /* a volunteer's own images stay as they are */
    if (task->partition.kind == SDFED_PARTITION_DOMAINS && !own)
        for (int i = 0; i < 2 && rc == SDFED_OK; i++) {
            int n = s->folder[i].n;
            rc = assign_domains(n, i, i ? &out->test_domains : &out->train_domains, err);
            if (rc == SDFED_OK && !(s->noise_index[i] = malloc(sizeof(int) * ((size_t)n + 1))))
                rc = sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
            for (int j = 0; j < n && rc == SDFED_OK; j++) s->noise_index[i][j] = j;
        }
    if (rc == SDFED_OK) rc = native_image_checks_open(&s->checks, cache_dir, err);
    if (m) out->dim = sdfed_method_feature_size(task->method, &m->clip.cfg);
    for (int i = 0; i < 2 && rc == SDFED_OK; i++) {
        uint8_t *usable = malloc((size_t)s->folder[i].n + 1);
        rc = usable ? read_keys(s, i, usable, err) : sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
        if (rc == SDFED_OK)
            rc = m ? encode_split(out, s, i, usable, task, cache_dir, m, model_sha256, k, err)
                   : check_split(out, s, i, usable, err);
        if (rc == SDFED_OK) keep_usable(out, s, i, usable);
        free(usable);
    }
    native_progress_end();
    if (rc == SDFED_OK && !own) rc = check_classes(out, err);
    return rc ? sdfed_fail_context(err, rc, "dataset") : SDFED_OK;
}

/* Fashion-MNIST's pools, each image in its domain when the task has domains. */
static int load_fmnist(const sdfed_task *task, const char *data_dir, storage *s, native_fed_data *out,
                       sdfed_error *err) {
    int rc = native_fmnist_load(data_dir ? data_dir : SDFED_FMNIST_DEFAULT_DIR, SDFED_FMNIST_TRAIN, &s->train, err);
    if (rc == SDFED_OK)
        rc = native_fmnist_load(data_dir ? data_dir : SDFED_FMNIST_DEFAULT_DIR, SDFED_FMNIST_TEST, &s->test, err);
    if (rc == SDFED_OK && s->train.n <= POOL_FIRST)
        rc = sdfed_fail(err, SDFED_ERR_FORMAT, "data: the training set is too small");
    if (rc) return rc;
    out->rows = s->train.rows;
    out->cols = s->train.cols;
    size_t per = (size_t)out->rows * out->cols;
    out->n_classes = SDFED_FMNIST_CLASSES;
    out->class_names = native_fmnist_class_names;
    out->n_train = s->train.n - POOL_FIRST;
    out->n_test = s->test.n;
    out->train_labels = s->train.labels + POOL_FIRST;
    out->test_labels = s->test.labels;
    out->train_pixels = s->train.pixels + per * POOL_FIRST;
    out->test_pixels = s->test.pixels;
    if (task->partition.kind != SDFED_PARTITION_DOMAINS) return SDFED_OK;
    for (int split = 0; split < 2 && rc == SDFED_OK; split++) { /* every image in its domain, once */
        int n = split ? out->n_test : out->n_train;
        const uint8_t **pixels = split ? &out->test_pixels : &out->train_pixels;
        uint8_t **domains = split ? &out->test_domains : &out->train_domains;
        if (!(s->domain_pixels[split] = malloc(per * (size_t)n + 1)))
            return sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
        rc = assign_domains(n, split, domains, err);
        for (int i = 0; i < n && rc == SDFED_OK; i++)
            rc = sdfed_domain_apply((*domains)[i], *pixels + per * i, out->rows, out->cols, 1,
                                    DOMAIN_SEED + (uint64_t)split, (uint64_t)i, s->domain_pixels[split] + per * i, err);
        *pixels = s->domain_pixels[split];
    }
    return rc;
}

/* Both loads: the images, and their features when m is given. */
static int load(const sdfed_task *task, const char *data_dir, const char *cache_dir, const native_model *m,
                const char *model_sha256, const sdfed_kernels *k, native_fed_data *out, sdfed_error *err) {
    memset(out, 0, sizeof *out);
    storage *s = calloc(1, sizeof *s);
    if (!s) return sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
    out->storage = s;
    out->decode = native_image_decode_defaults(task->background);
    if (!cache_dir) cache_dir = native_feature_cache_default_dir();
    int rc = strcmp(task->dataset, "folder") == 0
                 ? load_folder_dataset(task, data_dir, cache_dir, m, model_sha256, k, s, out, err)
                 : load_fmnist(task, data_dir, s, out, err);
    if (rc) native_fed_data_free(out);
    return rc;
}

int native_fed_data_load_images(const sdfed_task *task, const char *data_dir, const char *cache_dir,
                                native_fed_data *out, sdfed_error *err) {
    return load(task, data_dir, cache_dir, NULL, NULL, NULL, out, err);
}

int native_fed_data_image(const native_fed_data *d, int test, int i, sdfed_image *out, uint8_t **owned,
                          sdfed_error *err) {
    *owned = NULL;
    const char *const *paths = test ? d->test_paths : d->train_paths;
    if (!paths) { /* Fashion-MNIST's pixels, already in their domains */
        const uint8_t *pixels = test ? d->test_pixels : d->train_pixels;
        *out = (sdfed_image){.pixels = pixels + (size_t)i * d->rows * d->cols,
                             .width = d->cols,
                             .height = d->rows,
                             .channels = 1,
                             .stride = (size_t)d->cols};
        return SDFED_OK;
    }
    uint8_t *decoded;
    int width, height, channels;
    int rc = native_image_decode_file(paths[i], &d->decode, &decoded, &width, &height, &channels, err);
    return rc ? rc : in_domain(d, test, i, decoded, width, height, channels, out, owned, err);
}

/* Fashion-MNIST's wanted pixels as the cache knows them: their bytes and
 * shape; items[j] is the split's image the source's image j is. */
typedef struct pixel_view {
    const native_fed_data *data;
    int split;
    const int *items;
} pixel_view;

static int pixels_key(const void *ctx, int j, uint8_t key[32], sdfed_error *err) {
    const pixel_view *v = ctx;
    const native_fed_data *d = v->data;
    size_t per = (size_t)d->rows * d->cols;
    const uint8_t *pixels = (v->split ? d->test_pixels : d->train_pixels) + per * (size_t)v->items[j];
    int32_t shape[3] = {d->rows, d->cols, 1};
    native_sha256_ctx h;
    int rc = native_sha256_begin(&h, err);
    if (rc) return rc;
    native_sha256_add(&h, "sdfed pixels", 12);
    native_sha256_add(&h, shape, sizeof shape);
    native_sha256_add(&h, pixels, per);
    return native_sha256_end(&h, key, err);
}

static int pixels_image(const void *ctx, int j, sdfed_image *out, uint8_t **owned, sdfed_error *err) {
    const pixel_view *v = ctx;
    return native_fed_data_image(v->data, v->split, v->items[j], out, owned, err);
}

/* A split's features: the wanted images' (wanted NULL: every image's) from
 * the cache, the other rows NaN. */
static int encode_pixels(native_fed_data *out, int split, const uint8_t *wanted, const sdfed_task *task,
                         const char *cache_dir, const native_model *m, const char *model_sha256, const sdfed_kernels *k,
                         sdfed_error *err) {
    int n = split ? out->n_test : out->n_train;
    size_t dim = (size_t)out->dim;
    float **features = split ? &out->test_features : &out->train_features;
    *features = malloc(sizeof(float) * ((size_t)n * dim + 1));
    int *items = malloc(sizeof *items * ((size_t)n + 1));
    uint8_t *usable = malloc((size_t)n + 1);
    int rc = *features && items && usable ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
    int count = 0;
    for (int i = 0; i < n && rc == SDFED_OK; i++)
        if (!wanted || wanted[i]) items[count++] = i;
    pixel_view view = {.data = out, .split = split, .items = items};
    native_feature_source src = {.name = split_names[split],
                                 .method = task->method,
                                 .n = count,
                                 .key = pixels_key,
                                 .image = pixels_image,
                                 .ctx = &view};
    if (rc == SDFED_OK)
        rc = native_feature_cache_load(cache_dir, m, model_sha256, k, &src, *features, usable, &out->features, err);
    /* rows 0..count-1 to their images' rows, from the last (items[j] >= j), the rest NaN */
    for (int i = n - 1, j = count - 1; i >= 0 && rc == SDFED_OK; i--) {
        float *row = *features + (size_t)i * dim;
        if (j >= 0 && items[j] == i) {
            memmove(row, *features + (size_t)j * dim, sizeof(float) * dim);
            j--;
        } else {
            for (size_t e = 0; e < dim; e++) row[e] = NAN;
        }
    }
    free(items);
    free(usable);
    return rc;
}

int native_fed_data_load(const sdfed_task *task, const char *data_dir, const char *cache_dir, const native_model *m,
                         const char *model_sha256, const sdfed_kernels *k, const native_fed_wanted *wanted,
                         native_fed_data *out, sdfed_error *err) {
    int rc = load(task, data_dir, cache_dir, m, model_sha256, k, out, err);
    if (rc || out->train_paths) return rc; /* a folder's features come with its images */
    out->dim = sdfed_method_feature_size(task->method, &m->clip.cfg);
    uint8_t *marks[2] = {calloc((size_t)out->n_train + 1, 1), calloc((size_t)out->n_test + 1, 1)};
    rc = marks[0] && marks[1] ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "data: out of memory");
    if (rc == SDFED_OK && wanted) rc = wanted->mark(wanted->ctx, out, marks[0], marks[1], err);
    const char *cache = cache_dir ? cache_dir : native_feature_cache_default_dir();
    for (int split = 0; split < 2 && rc == SDFED_OK; split++)
        rc = encode_pixels(out, split, wanted ? marks[split] : NULL, task, cache, m, model_sha256, k, err);
    free(marks[0]);
    free(marks[1]);
    if (rc) native_fed_data_free(out);
    return rc;
}

int native_fed_data_task_classes(sdfed_task *task, const native_fed_data *d, sdfed_error *err) {
    if (task->n_classes > 0 || strcmp(task->dataset, "folder") != 0) return SDFED_OK;
    int rc = sdfed_task_set_classes(task, d->class_names, NULL, d->n_classes, err);
    return rc ? sdfed_fail_context(err, rc, "the class folders of %s", task->data_train) : SDFED_OK;
}

void native_fed_data_free(native_fed_data *d) {
    storage *s = d->storage;
    if (s) {
        sdfed_dataset_free(&s->train);
        sdfed_dataset_free(&s->test);
        for (int i = 0; i < 2; i++) {
            free(s->domain_pixels[i]);
            free(s->keys[i]);
            free(s->noise_index[i]);
        }
        if (s->held_out) {
            native_image_folder_free_split(&s->folder[0]);
            native_image_folder_free_split(&s->folder[1]);
            native_image_folder_free(&s->all);
        } else {
            native_image_folder_free(&s->folder[0]);
            native_image_folder_free(&s->folder[1]);
        }
        native_image_folder_skips_free(&s->skipped);
        native_image_checks_close(s->checks);
        free(s);
    }
    free(d->train_features);
    free(d->test_features);
    free(d->train_domains);
    free(d->test_domains);
    memset(d, 0, sizeof *d);
}
