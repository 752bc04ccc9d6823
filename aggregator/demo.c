/* Demo shards (see demo.h). */
#include "demo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fed/protocol.h"
#include "native/fed_client.h"
#include "native/fed_data.h"

struct demo {
    fed_data data;
    sdfed_partition part;
    int64_t *leased_until; /* per shard */
};

int demo_open(demo **out, const sdfed_task *task, sdfed_error *err) {
    *out = NULL;
    if (strcmp(task->dataset, "fashion-mnist") != 0) return SDFED_OK;
    demo *d = calloc(1, sizeof *d);
    if (!d) return sdfed_fail(err, SDFED_ERR_NOMEM, "demo: out of memory");
    int rc = fed_data_load_images(task, NULL, &d->data, err);
    if (rc == SDFED_OK) rc = fed_partition(task, &d->data, &d->part, err);
    if (rc == SDFED_OK && !(d->leased_until = calloc((size_t)d->part.n_clients, sizeof *d->leased_until)))
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
    fed_data_free(&d->data);
    free(d->leased_until);
    free(d);
}

int demo_shards(const demo *d) { return d ? d->part.n_clients : 0; }

int demo_lease(demo *d, int64_t now_ms, int (*in_use)(void *ctx, int shard), void *ctx) {
    for (int k = 0; d && k < d->part.n_clients; k++)
        if (d->leased_until[k] <= now_ms && !in_use(ctx, k)) {
            d->leased_until[k] = now_ms + DEMO_LEASE_MS;
            return k;
        }
    return -1;
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

/* "name": {"labels": [...], "pixels": "<base64>"} for the listed images;
 * non-zero when memory ran out (the output is then incomplete). */
static int split_json(sdfed_sink *sink, const char *name, const int *ids, int n, const uint8_t *pixels,
                      const uint8_t *labels, size_t per, int first) {
    char item[32];
    int len = snprintf(item, sizeof item, "%s\"%s\": {\"labels\": [", first ? "" : ", ", name);
    int failed = sink->write(sink->ctx, item, (size_t)len);
    for (int i = 0; i < n && !failed; i++) {
        len = snprintf(item, sizeof item, "%s%d", i ? ", " : "", labels[ids[i]]);
        failed = sink->write(sink->ctx, item, (size_t)len);
    }
    failed = failed || sink->write(sink->ctx, "], \"pixels\": \"", 14);
    uint8_t *packed = failed ? NULL : malloc(per * (size_t)n + 1);
    for (int i = 0; packed && i < n; i++) memcpy(packed + per * i, pixels + per * ids[i], per);
    failed = failed || !packed || base64(sink, packed, per * (size_t)n) || sink->write(sink->ctx, "\"}", 2);
    free(packed);
    return failed;
}

int demo_shard_json(const demo *d, int k, sdfed_buffer *out, sdfed_error *err) {
    if (!d || k < 0 || k >= d->part.n_clients) return sdfed_fail(err, SDFED_ERR_ARG, "no demo shard %d", k);
    const sdfed_client_split *s = &d->part.clients[k];
    const fed_data *f = &d->data;
    size_t per = (size_t)f->rows * f->cols;
    sdfed_sink sink = sdfed_buffer_sink(out);
    char head[128];
    int len = snprintf(head, sizeof head, "{\"shard\": %d, \"width\": %d, \"height\": %d, ", k, f->cols, f->rows);
    int failed = sink.write(sink.ctx, head, (size_t)len) ||
                 split_json(&sink, "train", s->train, s->n_train, f->train_pixels, f->train_labels, per, 1) ||
                 split_json(&sink, "test", s->test, s->n_test, f->test_pixels, f->test_labels, per, 0) ||
                 sink.write(sink.ctx, "}", 1);
    if (!failed) return SDFED_OK;
    sdfed_buffer_free(out);
    return sdfed_fail(err, SDFED_ERR_NOMEM, "demo shard %d: out of memory", k);
}
