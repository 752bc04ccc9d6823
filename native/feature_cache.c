/* The on-disk image-feature cache (see feature_cache.h). */
#include "native/feature_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "method/methods.h"
#include "native/clock.h"
#include "native/paths.h"

#define CHUNK 256
/* its number: the image encoder's arithmetic (feature_cache.h) */
static const char magic[8] = {'S', 'D', 'F', 'E', 'A', 'T', '2', '\0'};

typedef struct header {
    char magic[8];
    uint32_t dim, total, done, reserved;
} header;

const char *feature_cache_default_dir(void) {
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

/* Encodes images [first, first + n) of src into out (n, D) as its method reads them;
 * owned[] holds what src allocated for them while they are encoded. */
static int encode_chunk(const native_model *m, const sdfed_kernels *k, const feature_source *src, int first, int n,
                        float *out, sdfed_image *images, uint8_t **owned, sdfed_arena *arena, sdfed_error *err) {
    int rc = SDFED_OK;
    for (int i = 0; i < n && rc == SDFED_OK; i++) rc = src->image(src->ctx, first + i, &images[i], &owned[i], err);
    if (rc == SDFED_OK) rc = sdfed_method_image_features(src->method, &m->clip, k, images, n, out, arena, err);
    for (int i = 0; i < n; i++) free(owned[i]), owned[i] = NULL;
    return rc;
}

int feature_cache_load(const char *cache_dir, const native_model *m, const char *model_sha256, const sdfed_kernels *k,
                       const feature_source *src, float *out, sdfed_error *err) {
    int D = sdfed_method_feature_size(src->method, &m->clip.cfg);
    char dir[1024], path[1200];
    /* integer products give other last digits than f32 activations: a
     * folder of their own */
    snprintf(dir, sizeof dir, "%s/%s%s", cache_dir, model_sha256,
             sdfed_clip_int8_image_features(&m->clip) ? "-int8" : "");
    snprintf(path, sizeof path, "%s/%s.features", dir, src->name);
    int rc = native_make_dirs(dir, err);
    if (rc) return rc;

    /* one writer at a time (parallel runs of a comparison share the cache):
     * the others wait for the lock, then find the file complete */
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "r+b") : NULL;
    struct flock lock = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (!f || fcntl(fd, F_SETLKW, &lock) != 0) {
        if (f)
            fclose(f);
        else if (fd >= 0)
            close(fd);
        return sdfed_fail(err, SDFED_ERR_IO, "%s: cannot open and lock: %s", path, strerror(errno));
    }
    /* resume what a previous run left, if it is this file */
    header h = {{0}, (uint32_t)D, (uint32_t)src->n, 0, 0};
    memcpy(h.magic, magic, sizeof magic);
    header old;
    if (fread(&old, sizeof old, 1, f) == 1 && !memcmp(old.magic, magic, sizeof magic) && old.dim == h.dim &&
        old.total == h.total && old.done <= old.total &&
        fread(out, sizeof(float) * (size_t)D, old.done, f) == old.done) {
        h.done = old.done;
    } else if (fseek(f, 0, SEEK_SET) || fwrite(&h, sizeof h, 1, f) != 1 || fflush(f)) {
        fclose(f);
        return sdfed_fail(err, SDFED_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    }
    if ((int)h.done == src->n) {
        fclose(f);
        return SDFED_OK;
    }
    sdfed_image images[CHUNK];
    uint8_t *owned[CHUNK] = {0};
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    double t0 = native_clock_seconds(native_clock_monotonic_ns()), last = 0;
    int resumed = (int)h.done;
    while (rc == SDFED_OK && (int)h.done < src->n) {
        int n = src->n - (int)h.done < CHUNK ? src->n - (int)h.done : CHUNK;
        float *chunk = out + (size_t)h.done * D;
        sdfed_arena_reset(&arena);
        rc = encode_chunk(m, k, src, (int)h.done, n, chunk, images, owned, &arena, err);
        if (rc) break;
        /* the data first, then the count that makes it visible */
        if (fseek(f, (long)(sizeof h + sizeof(float) * (size_t)D * h.done), SEEK_SET) ||
            fwrite(chunk, sizeof(float) * (size_t)D, (size_t)n, f) != (size_t)n || fflush(f)) {
            rc = sdfed_fail(err, SDFED_ERR_IO, "%s: write failed: %s", path, strerror(errno));
            break;
        }
        h.done += (uint32_t)n;
        if (fseek(f, 0, SEEK_SET) || fwrite(&h, sizeof h, 1, f) != 1 || fflush(f)) {
            rc = sdfed_fail(err, SDFED_ERR_IO, "%s: write failed: %s", path, strerror(errno));
            break;
        }
        double t = native_clock_seconds(native_clock_monotonic_ns()) - t0;
        if (t - last > 0.5 || (int)h.done == src->n) {
            last = t;
            double rate = (h.done - resumed) / (t > 0 ? t : 1e-9), left = (src->n - (int)h.done) / rate;
            fprintf(stderr, "\rencoding %s: %u/%d images (%.0f%%), %.1f images/s, %d:%02d left ", src->name, h.done,
                    src->n, 100.0 * h.done / src->n, rate, (int)(left / 60), (int)left % 60);
            fflush(stderr);
        }
    }
    if ((int)h.done == src->n) fprintf(stderr, "\n");
    if (fclose(f) != 0 && rc == SDFED_OK) rc = sdfed_fail(err, SDFED_ERR_IO, "%s: close failed", path);
    sdfed_arena_free(&arena);
    return rc;
}
