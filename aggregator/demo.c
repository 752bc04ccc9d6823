/* Demo shards (see demo.h). */
#include "demo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fed/protocol.h"
#include "native/fed_client.h"
#include "native/fed_data.h"
#include "native/file_map.h"

struct demo {
    native_fed_data data;
    sdfed_partition part;
    int64_t *leased_until;   /* per shard */
    peer_address *leased_to; /* per shard, while leased */
};

int demo_open(demo **out, const sdfed_task *task, native_fed_data *data, sdfed_error *err) {
    *out = NULL;
    demo *d = calloc(1, sizeof *d);
    if (!d) return sdfed_fail(err, SDFED_ERR_NOMEM, "demo: out of memory");
    d->data = *data;
    memset(data, 0, sizeof *data);
    int rc = native_fed_partition(task, &d->data, &d->part, err);
    if (rc == SDFED_OK && (!(d->leased_until = calloc((size_t)d->part.n_clients, sizeof *d->leased_until)) ||
                           !(d->leased_to = calloc((size_t)d->part.n_clients, sizeof *d->leased_to))))
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "demo: out of memory");
    if (rc) {
        demo_close(d);
        return sdfed_fail_context(err, rc, "demo shards");
    }
    *out = d;
    return SDFED_OK;
}

void demo_close(demo *d) {
    if (!d) return;
    sdfed_partition_free(&d->part);
    native_fed_data_free(&d->data);
    free(d->leased_until);
    free(d->leased_to);
    free(d);
}

int demo_shards(const demo *d) { return d ? d->part.n_clients : 0; }

int demo_lease(demo *d, const peer_address *holder, int max_per_holder, int64_t now_ms,
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

/* Writes data as base64; non-zero when a write failed. */
static int base64(sdfed_sink *sink, const uint8_t *data, size_t n) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char quad[4];
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v =
            (uint32_t)data[i] << 16 | (i + 1 < n ? (uint32_t)data[i + 1] << 8 : 0) | (i + 2 < n ? data[i + 2] : 0);
        for (int j = 0; j < 4; j++) quad[j] = alphabet[(v >> (18 - 6 * j)) & 63];
        if (i + 1 >= n) quad[2] = '=';
        if (i + 2 >= n) quad[3] = '=';
        if (sink->write(sink->ctx, quad, 4)) return 1;
    }
    return 0;
}

/* key and a list of the listed images' values (their labels, their
 * domains): "labels": [...]; non-zero when a write failed */
static int values_json(sdfed_sink *sink, const char *key, const int *ids, int n, const uint8_t *values) {
    int failed = sdfed_sink_printf(*sink, "%s [", key);
    for (int i = 0; i < n && !failed; i++) failed = sdfed_sink_printf(*sink, "%s%d", i ? ", " : "", values[ids[i]]);
    return failed || sink->write(sink->ctx, "]", 1);
}

/* "pixels": "<base64>": the listed images' grey pixels, one after another;
 * non-zero when memory ran out. */
static int pixels_json(sdfed_sink *sink, const int *ids, int n, const uint8_t *pixels, size_t per) {
    uint8_t *packed = malloc(per * (size_t)n + 1);
    for (int i = 0; packed && i < n; i++) memcpy(packed + per * i, pixels + per * ids[i], per);
    int failed = !packed || sink->write(sink->ctx, ", \"pixels\": \"", 13) || base64(sink, packed, per * (size_t)n) ||
                 sink->write(sink->ctx, "\"", 1);
    free(packed);
    return failed;
}

/* "files": ["<base64>", ...]: the listed images' files as they are on disk */
static int files_json(sdfed_sink *sink, const int *ids, int n, const char *const *paths, sdfed_error *err) {
    if (sink->write(sink->ctx, ", \"files\": [", 12)) return sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        native_file_map f;
        int rc = native_file_map_open(&f, paths[ids[i]], err);
        if (rc) return rc;
        int failed = sink->write(sink->ctx, i ? ", \"" : "\"", i ? 3 : 1) || base64(sink, f.data, f.size) ||
                     sink->write(sink->ctx, "\"", 1);
        native_file_map_close(&f);
        if (failed) return sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    }
    return sink->write(sink->ctx, "]", 1) ? sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory") : SDFED_OK;
}

/* "images": [{"width", "height", "channels", "pixels": "<base64>"}, ...]:
 * the listed images decoded and turned into their domains */
static int images_json(sdfed_sink *sink, const native_fed_data *f, int test, const int *ids, int n, sdfed_error *err) {
    if (sink->write(sink->ctx, ", \"images\": [", 13)) return sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        sdfed_image image;
        uint8_t *owned;
        int rc = native_fed_data_image(f, test, ids[i], &image, &owned, err);
        if (rc) return rc;
        int failed = sdfed_sink_printf(*sink, "%s{\"width\": %d, \"height\": %d, \"channels\": %d, \"pixels\": \"",
                                       i ? ", " : "", image.width, image.height, image.channels) ||
                     base64(sink, image.pixels, (size_t)image.width * image.height * image.channels) ||
                     sink->write(sink->ctx, "\"}", 2);
        free(owned);
        if (failed) return sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    }
    return sink->write(sink->ctx, "]", 1) ? sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory") : SDFED_OK;
}

/* "name": {"labels": [...], "pixels" | "files" | "images": ..., "domains"} for the listed images */
static int split_json(sdfed_sink *sink, const native_fed_data *f, int test, const int *ids, int n, sdfed_error *err) {
    if (sdfed_sink_printf(*sink, "%s\"%s\": {", test ? ", " : "", test ? "test" : "train") ||
        values_json(sink, "\"labels\":", ids, n, test ? f->test_labels : f->train_labels))
        return sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    const uint8_t *domains = test ? f->test_domains : f->train_domains;
    int rc = SDFED_OK;
    if (!f->train_paths) { /* Fashion-MNIST: grey pixels, already in their domains */
        if (pixels_json(sink, ids, n, test ? f->test_pixels : f->train_pixels, (size_t)f->rows * f->cols))
            rc = sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    } else if (domains) { /* a folder seen in domains: each image's pixels in its domain */
        rc = images_json(sink, f, test, ids, n, err);
    } else { /* a folder: its files as they are */
        rc = files_json(sink, ids, n, test ? f->test_paths : f->train_paths, err);
    }
    if (rc == SDFED_OK && domains && values_json(sink, ", \"domains\":", ids, n, domains))
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    if (rc == SDFED_OK && sink->write(sink->ctx, "}", 1)) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    return rc;
}

int demo_shard_json(const demo *d, int k, sdfed_buffer *out, sdfed_error *err) {
    if (!d || k < 0 || k >= d->part.n_clients) return sdfed_fail(err, SDFED_ERR_ARG, "no demo shard %d", k);
    const sdfed_client_split *s = &d->part.clients[k];
    const native_fed_data *f = &d->data;
    sdfed_sink sink = sdfed_buffer_sink(out);
    int failed = f->train_paths /* files: each image has its own size */
                     ? sdfed_sink_printf(sink, "{\"shard\": %d, ", k)
                     : sdfed_sink_printf(sink, "{\"shard\": %d, \"width\": %d, \"height\": %d, ", k, f->cols, f->rows);
    int rc = failed ? sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory") : SDFED_OK;
    if (rc == SDFED_OK) rc = split_json(&sink, f, 0, s->train, s->n_train, err);
    if (rc == SDFED_OK) rc = split_json(&sink, f, 1, s->test, s->n_test, err);
    if (rc == SDFED_OK && sink.write(sink.ctx, "}", 1)) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    if (rc == SDFED_OK) return SDFED_OK;
    sdfed_buffer_free(out);
    return sdfed_fail_context(err, rc, "demo shard %d", k);
}
