/* Image features of a dataset under a model, computed once and kept on
 * disk: <cache>/<model sha256>/<name>.features. The file is written in
 * chunks with its header's count updated after each chunk is on disk, so an
 * interrupted run resumes where it stopped; a file that does not match
 * (size, dimension, count) is recomputed. Progress goes to stderr. */
#ifndef SDFED_NATIVE_FEATURE_CACHE_H
#define SDFED_NATIVE_FEATURE_CACHE_H

#include <stdint.h>

#include "clip/image_preprocess.h"
#include "native/model.h"

/* The images to encode: n of them; image(ctx, i, ...) gives image i in
 * *out and, in *owned (freed with free() once it is encoded), what it
 * allocated for it, or NULL. */
typedef struct feature_source {
    const char *name; /* file name stem, e.g. "fashion-mnist-train-30000-59999" */
    int n;
    int (*image)(const void *ctx, int i, sdfed_image *out, uint8_t **owned, sdfed_error *err);
    const void *ctx;
} feature_source;

/* The default cache folder: $SDFED_CACHE, else $XDG_CACHE_HOME/sdfed, else
 * ~/.cache/sdfed. */
const char *feature_cache_default_dir(void);

/* out (n, embed_dim): unit-length image features of every image. */
int feature_cache_load(const char *cache_dir, const native_model *m, const char *model_sha256, const sdfed_kernels *k,
                       const feature_source *src, float *out, sdfed_error *err);

#endif
