/* The on-disk image-feature cache (see feature_cache.h). */
#include "native/feature_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "method/methods.h"
#include "native/clock.h"
#include "native/keyed_records.h"
#include "native/progress.h"

/* images encoded, then written, together */
#define CHUNK 64
/* its version: the image encoder's arithmetic (feature_cache.h) */
static const char magic[8] = {'S', 'D', 'F', 'E', 'A', 'T', '3', '\0'};

const char *native_feature_cache_default_dir(void) {
    static char dir[1024];
    const char *env = getenv("SDFED_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (env && env[0])
        snprintf(dir, sizeof dir, "%s", env);
    else if (xdg && xdg[0])
        snprintf(dir, sizeof dir, "%s/sdfed", xdg);
    else
        snprintf(dir, sizeof dir, "%s/.cache/sdfed", home && home[0] ? home : ".");
    return dir;
}

/* The images still to compute, their keys, and the chunk being encoded. */
typedef struct pending {
    int *index;    /* (n) images of the source */
    uint8_t *keys; /* (n, 32) */
    int n;
} pending;

/* Encodes the pending images [first, first + n) into out, writes the
 * usable ones to the cache; *done counts them. */
static int encode_chunk(const native_model *m, const sdfed_kernels *k, const native_feature_source *src,
                        native_keyed_records *r, const pending *p, int first, int n, int D, float *out, uint8_t *usable,
                        native_feature_counts *counts, sdfed_arena *arena, sdfed_error *err) {
    sdfed_image images[CHUNK];
    uint8_t *owned[CHUNK] = {0}, keys[CHUNK][32];
    int which[CHUNK], m_images = 0, rc = SDFED_OK;
    for (int j = 0; j < n && rc == SDFED_OK; j++) {
        int i = p->index[first + j];
        rc = src->image(src->ctx, i, &images[m_images], &owned[m_images], err);
        if (rc != SDFED_OK) break;
        if (!images[m_images].pixels) {
            usable[i] = 0;
            counts->unusable++;
            continue;
        }
        which[m_images] = i;
        memcpy(keys[m_images], p->keys + (size_t)(first + j) * 32, 32);
        m_images++;
    }
    size_t rows = m_images > 0 ? (size_t)m_images : 1; /* an arena of 0 floats is no arena */
    float *features = rc == SDFED_OK ? sdfed_arena_floats(arena, rows * D) : NULL;
    if (rc == SDFED_OK && !features) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "features: out of memory");
    if (rc == SDFED_OK && m_images)
        rc = sdfed_method_image_features(src->method, &m->clip, k, images, m_images, features, arena, err);
    for (int j = 0; j < CHUNK; j++) free(owned[j]);
    if (rc == SDFED_OK) rc = native_keyed_records_append(r, &keys[0][0], features, m_images, err);
    for (int j = 0; j < m_images && rc == SDFED_OK; j++) {
        memcpy(out + (size_t)which[j] * D, features + (size_t)j * D, sizeof(float) * (size_t)D);
        usable[which[j]] = 1;
        counts->computed++;
    }
    return rc;
}

int native_feature_cache_load(const char *cache_dir, const native_model *m, const char *model_sha256,
                              const sdfed_kernels *k, const native_feature_source *src, float *out, uint8_t *usable,
                              native_feature_counts *counts, sdfed_error *err) {
    int D = sdfed_method_feature_size(src->method, &m->clip.cfg);
    char path[1200];
    /* integer products give other last digits than f32 activations: a
     * folder of their own */
    snprintf(path, sizeof path, "%s/%s%s/%s-v3.records", cache_dir, model_sha256,
             sdfed_clip_int8_image_features(&m->clip) ? "-int8" : "",
             sdfed_method_reads_patches(src->method) ? "patches" : "pooled");
    native_keyed_records *r;
    int rc = native_keyed_records_open(&r, path, magic, (uint32_t)(sizeof(float) * (size_t)D), err);
    if (rc) return rc;
    pending p = {.index = malloc(sizeof(int) * ((size_t)src->n + 1)), .keys = malloc(32 * ((size_t)src->n + 1))};
    if (!p.index || !p.keys) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "features: out of memory");
    /* what the cache has */
    for (int i = 0; i < src->n && rc == SDFED_OK; i++) {
        uint8_t *key = p.keys + (size_t)p.n * 32;
        rc = src->key(src->ctx, i, key, err);
        if (rc == SDFED_OK && native_keyed_records_find(r, key, out + (size_t)i * D)) {
            usable[i] = 1;
            counts->cached++;
        } else if (rc == SDFED_OK) {
            p.index[p.n++] = i;
        }
    }
    /* the rest, computed a chunk at a time */
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    int64_t t0 = native_clock_monotonic_ns();
    for (int first = 0; first < p.n && rc == SDFED_OK; first += CHUNK) {
        int n = p.n - first < CHUNK ? p.n - first : CHUNK;
        sdfed_arena_reset(&arena);
        rc = encode_chunk(m, k, src, r, &p, first, n, D, out, usable, counts, &arena, err);
        if (rc) break;
        int done = first + n;
        double t = native_clock_seconds(native_clock_monotonic_ns() - t0), rate = done / (t > 0 ? t : 1e-9);
        int left = (int)((p.n - done) / rate);
        native_progress_show("features of the %s: %d of %d computed (%.0f%%), %.1f images/s, %d:%02d left%s", src->name,
                             done, p.n, 100.0 * done / p.n, rate, left / 60, left % 60,
                             src->n > p.n ? ", the others from the cache" : "");
    }
    native_progress_end();
    sdfed_arena_free(&arena);
    free(p.index);
    free(p.keys);
    native_keyed_records_close(r);
    return rc;
}
