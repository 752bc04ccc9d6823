/* Image features under a model, computed once per image and kept on disk:
 * <cache>/<model sha256>[-int8]/<pooled|patches>-v3.records
 * (native/keyed_records.h), each image's features found by a key that
 * names what they depend on besides the model: its file's content, how it
 * is seen (the decoding rules, the background alpha is composited on, its
 * domain). A changed folder therefore recomputes only the images that
 * changed, parallel runs share the file, and a run that is interrupted
 * keeps what it finished. -int8: features from integer products,
 * clip_model.h's int8_images; pooled features, or the patch features of a
 * method that reads them (method/methods.h). The file's version (3) is the
 * image encoder's arithmetic, raised whenever the features' bits change,
 * so that features an earlier sdfed computed are not mixed with these.
 * Progress goes to stderr (native/progress.h). */
#ifndef SDFED_NATIVE_FEATURE_CACHE_H
#define SDFED_NATIVE_FEATURE_CACHE_H

#include <stdint.h>

#include "clip/image_preprocess.h"
#include "native/model.h"

/* The images to encode: n of them. key(ctx, i, key) gives image i's key;
 * image(ctx, i, ...) gives image i in *out and, in *owned (freed with
 * free() once it is encoded), what it allocated for it, or NULL; an image
 * that does not decode leaves out->pixels NULL (its source names it). */
typedef struct native_feature_source {
    const char *name; /* what the progress line calls them: "training images" */
    int method;       /* whose features: SDFED_METHOD_* (method/methods.h: pooled, or fedotp's patches) */
    int n;
    int (*key)(const void *ctx, int i, uint8_t key[32], sdfed_error *err);
    int (*image)(const void *ctx, int i, sdfed_image *out, uint8_t **owned, sdfed_error *err);
    const void *ctx;
} native_feature_source;

/* What a load found: features read from the cache, computed, and images
 * that did not decode. */
typedef struct native_feature_counts {
    int cached, computed, unusable;
} native_feature_counts;

/* The default cache folder: $SDFED_CACHE, else $XDG_CACHE_HOME/sdfed, else
 * ~/.cache/sdfed. */
const char *native_feature_cache_default_dir(void);

/* out (n, sdfed_method_feature_size): every image's features as the
 * source's method reads them (unit-length rows); usable (n): 0 for an
 * image that did not decode (its row left as it was); counts added to. */
int native_feature_cache_load(const char *cache_dir, const native_model *m, const char *model_sha256,
                              const sdfed_kernels *k, const native_feature_source *src, float *out, uint8_t *usable,
                              native_feature_counts *counts, sdfed_error *err);

#endif
