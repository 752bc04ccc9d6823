/* Demo shards (see demo.h). */
#include "demo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_writer.h"
#include "native/fed_client.h"
#include "native/fed_data.h"
#include "native/file_map.h"

struct agg_demo {
    native_fed_data data;
    sdfed_partition part;
    int64_t *leased_until;       /* per shard */
    agg_peer_address *leased_to; /* per shard, while leased */
};

int agg_demo_open(agg_demo **out, const sdfed_task *task, native_fed_data *data, sdfed_error *err) {
    *out = NULL;
    agg_demo *d = calloc(1, sizeof *d);
    if (!d) return sdfed_fail(err, SDFED_ERR_NOMEM, "demo: out of memory");
    d->data = *data;
    memset(data, 0, sizeof *data);
    int rc = native_fed_partition(task, &d->data, &d->part, err);
    if (rc == SDFED_OK && (!(d->leased_until = calloc((size_t)d->part.n_clients, sizeof *d->leased_until)) ||
                           !(d->leased_to = calloc((size_t)d->part.n_clients, sizeof *d->leased_to))))
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "demo: out of memory");
    if (rc) {
        agg_demo_close(d);
        return sdfed_fail_context(err, rc, "demo shards");
    }
    *out = d;
    return SDFED_OK;
}

void agg_demo_close(agg_demo *d) {
    if (!d) return;
    sdfed_partition_free(&d->part);
    native_fed_data_free(&d->data);
    free(d->leased_until);
    free(d->leased_to);
    free(d);
}

int agg_demo_shards(const agg_demo *d) { return d ? d->part.n_clients : 0; }

int agg_demo_lease(agg_demo *d, const agg_peer_address *holder, int max_per_holder, int64_t now_ms,
                   int (*in_use)(void *ctx, int shard), void *ctx, int64_t *free_in_ms) {
    int held = 0;
    int64_t first_ends = INT64_MAX;
    for (int k = 0; k < d->part.n_clients; k++)
        if (d->leased_until[k] > now_ms && memcmp(&d->leased_to[k], holder, sizeof *holder) == 0) {
            held++;
            if (d->leased_until[k] < first_ends) first_ends = d->leased_until[k];
        }
    if (held >= max_per_holder) {
        *free_in_ms = first_ends - now_ms;
        return DEMO_HOLDER_FULL;
    }
    for (int k = 0; k < d->part.n_clients; k++)
        if (d->leased_until[k] <= now_ms && !in_use(ctx, k)) {
            d->leased_until[k] = now_ms + DEMO_LEASE_MS;
            d->leased_to[k] = *holder;
            return k;
        }
    return DEMO_NONE_FREE;
}

void agg_demo_release(agg_demo *d, int k) { d->leased_until[k] = 0; }

/* key: a list of the listed images' values (their labels, their domains) */
static void values_json(sdfed_json_writer *w, const char *key, const int *ids, int n, const uint8_t *values) {
    sdfed_jw_array(w, key);
    for (int i = 0; i < n; i++) sdfed_jw_int(w, NULL, values[ids[i]]);
    sdfed_jw_close(w);
}

/* "pixels": "<base64>": the listed images' grey pixels, one after another */
static int pixels_json(sdfed_json_writer *w, const int *ids, int n, const uint8_t *pixels, size_t per,
                       sdfed_error *err) {
    uint8_t *packed = malloc(per * (size_t)n + 1);
    if (!packed) return sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) memcpy(packed + per * i, pixels + per * ids[i], per);
    sdfed_jw_base64(w, "pixels", packed, per * (size_t)n);
    free(packed);
    return SDFED_OK;
}

/* "files": ["<base64>", ...]: the listed images' files as they are on disk */
static int files_json(sdfed_json_writer *w, const int *ids, int n, const char *const *paths, sdfed_error *err) {
    sdfed_jw_array(w, "files");
    for (int i = 0; i < n; i++) {
        native_file_map f;
        int rc = native_file_map_open(&f, paths[ids[i]], err);
        if (rc) return rc;
        sdfed_jw_base64(w, NULL, f.data, f.size);
        native_file_map_close(&f);
    }
    sdfed_jw_close(w);
    return SDFED_OK;
}

/* "images": [{"width", "height", "channels", "pixels": "<base64>"}, ...]:
 * the listed images decoded and turned into their domains */
static int images_json(sdfed_json_writer *w, const native_fed_data *f, int test, const int *ids, int n,
                       sdfed_error *err) {
    sdfed_jw_array(w, "images");
    for (int i = 0; i < n; i++) {
        sdfed_image image;
        uint8_t *owned;
        int rc = native_fed_data_image(f, test, ids[i], &image, &owned, err);
        if (rc) return rc;
        sdfed_jw_object(w, NULL);
        sdfed_jw_int(w, "width", image.width);
        sdfed_jw_int(w, "height", image.height);
        sdfed_jw_int(w, "channels", image.channels);
        sdfed_jw_base64(w, "pixels", image.pixels, (size_t)image.width * image.height * image.channels);
        sdfed_jw_close(w);
        free(owned);
    }
    sdfed_jw_close(w);
    return SDFED_OK;
}

/* "train" | "test": {"labels": [...], "pixels" | "files" | "images": ..., "domains"} for the listed images */
static int split_json(sdfed_json_writer *w, const native_fed_data *f, int test, const int *ids, int n,
                      sdfed_error *err) {
    sdfed_jw_object(w, test ? "test" : "train");
    values_json(w, "labels", ids, n, test ? f->test_labels : f->train_labels);
    const uint8_t *domains = test ? f->test_domains : f->train_domains;
    int rc;
    if (!f->train_paths) /* Fashion-MNIST: grey pixels, already in their domains */
        rc = pixels_json(w, ids, n, test ? f->test_pixels : f->train_pixels, (size_t)f->rows * f->cols, err);
    else if (domains) /* a folder seen in domains: each image's pixels in its domain */
        rc = images_json(w, f, test, ids, n, err);
    else /* a folder: its files as they are */
        rc = files_json(w, ids, n, test ? f->test_paths : f->train_paths, err);
    if (rc == SDFED_OK && domains) values_json(w, "domains", ids, n, domains);
    if (rc == SDFED_OK) sdfed_jw_close(w);
    return rc;
}

int agg_demo_shard_json(const agg_demo *d, int k, sdfed_buffer *out, sdfed_error *err) {
    if (!d || k < 0 || k >= d->part.n_clients) return sdfed_fail(err, SDFED_ERR_ARG, "no demo shard %d", k);
    const sdfed_client_split *s = &d->part.clients[k];
    const native_fed_data *f = &d->data;
    sdfed_json_writer w;
    sdfed_jw_begin(&w, out, NULL);
    sdfed_jw_int(&w, "shard", k);
    if (!f->train_paths) { /* not files: every image has the data set's size */
        sdfed_jw_int(&w, "width", f->cols);
        sdfed_jw_int(&w, "height", f->rows);
    }
    int rc = split_json(&w, f, 0, s->train, s->n_train, err);
    if (rc == SDFED_OK) rc = split_json(&w, f, 1, s->test, s->n_test, err);
    if (rc == SDFED_OK) {
        rc = sdfed_jw_end(&w, err);
        if (rc == SDFED_OK) return SDFED_OK;
    }
    sdfed_buffer_free(out);
    return sdfed_fail_context(err, rc, "demo shard %d", k);
}
