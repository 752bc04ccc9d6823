/* Image features of a dataset under a model, computed once and kept on
 * disk: <cache>/<model sha256>[-int8]/<name>.features (-int8: features from
 * integer products, clip_model.h's int8_images; pooled features, or the
 * patch features of a method that reads them: method/methods.h). The file is written in
 * chunks with its header's count updated after each chunk is on disk, so an
 * interrupted run resumes where it stopped; a file that does not match
 * (magic, dimension, count) is recomputed. The magic's number is the image
 * encoder's arithmetic, raised whenever the features' bits change, so that
 * a cache an earlier sdfed filled is not mixed with features of this one
 * (2: the exponential and LayerNorm in vectors, base/vectors.h). Progress
 * goes to stderr. */
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
    int method;       /* whose features: SDFED_METHOD_* (method/methods.h: pooled, or fedotp's patches) */
    int n;
    int (*image)(const void *ctx, int i, sdfed_image *out, uint8_t **owned, sdfed_error *err);
    const void *ctx;
} feature_source;

/* The default cache folder: $SDFED_CACHE, else $XDG_CACHE_HOME/sdfed, else
 * ~/.cache/sdfed. */
const char *feature_cache_default_dir(void);

/* out (n, sdfed_method_feature_size): every image's features as the
 * source's method reads them (unit-length rows). */
int feature_cache_load(const char *cache_dir, const native_model *m, const char *model_sha256, const sdfed_kernels *k,
                       const feature_source *src, float *out, sdfed_error *err);

#endif
