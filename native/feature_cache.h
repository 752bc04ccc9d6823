/* Image features of a dataset under a model, computed once and kept on
 * disk: <cache>/<model sha256>/<name>.features. The file is written in
 * chunks with its header's count updated after each chunk is on disk, so an
 * interrupted run resumes where it stopped; a file that does not match
 * (size, dimension, count) is recomputed. Progress goes to stderr. */
#ifndef SDFED_NATIVE_FEATURE_CACHE_H
#define SDFED_NATIVE_FEATURE_CACHE_H

#include <stdint.h>

#include "native/model.h"

/* The images to encode: n grey images of rows x cols, image i at
 * pixels + i * rows * cols (already transformed into its domain); or, with
 * paths, n image files (native/image_decode.h), decoded as they are
 * encoded. */
typedef struct feature_source {
    const char *name; /* file name stem, e.g. "fashion-mnist-train-30000-59999" */
    int n, rows, cols;
    const uint8_t *pixels;
    char *const *paths; /* or NULL */
} feature_source;

/* The default cache folder: $SDFED_CACHE, else $XDG_CACHE_HOME/sdfed, else
 * ~/.cache/sdfed. */
const char *feature_cache_default_dir(void);

/* out (n, embed_dim): unit-length image features of every image. */
int feature_cache_load(const char *cache_dir, const native_model *m, const char *model_sha256, const sdfed_kernels *k,
                       const feature_source *src, float *out, sdfed_error *err);

#endif
