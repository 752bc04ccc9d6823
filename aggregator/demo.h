/* Demo shards for volunteers without their own images: the task's
 * partition of its dataset (Fashion-MNIST or a folder dataset), as `sdfed
 * sim` and the headless clients make it, handed out one shard per browser
 * (GET /demo/shard). A shard is free when no connected client holds it and
 * it was not handed out in the last DEMO_LEASE_MS; one address holds at
 * most a few such leases at a time, so that no one can take every shard; a
 * page that kept its shard asks for it again by number (which leases
 * nothing). A shard travels as JSON: its number
 * and its training and test images with their labels; Fashion-MNIST's as
 * grey pixels ("width", "height", "pixels": base64 of them all), a folder
 * dataset's as its image files as they are ("files": base64 of each, read
 * when the shard is asked for), which the page decodes as it decodes a
 * volunteer's own files; a folder dataset in derived domains as each
 * image's pixels in its domain ("images"), with "domains" listing them. */
#ifndef SDFED_AGGREGATOR_DEMO_H
#define SDFED_AGGREGATOR_DEMO_H

#include <stdint.h>

#include "base/io.h"
#include "base/status.h"
#include "fed/task.h"
#include "native/fed_data.h"
#include "peers.h"

#define DEMO_LEASE_MS (10 * 60 * 1000)

/* agg_demo_lease's answers that are not a shard */
enum { DEMO_NONE_FREE = -1, DEMO_HOLDER_FULL = -2 };

typedef struct agg_demo agg_demo;

/* The shards of the task's images (native/fed_data.h's, loaded by the
 * caller), which the demo takes: data is emptied, and freed with the demo
 * (or at once when this fails). */
int agg_demo_open(agg_demo **out, const sdfed_task *task, native_fed_data *data, sdfed_error *err);
void agg_demo_close(agg_demo *d);

/* A free shard, leased to holder from now_ms; DEMO_HOLDER_FULL when holder
 * already holds max_per_holder leases (*free_in_ms: until the first of
 * them ends), DEMO_NONE_FREE when no shard is free. in_use(ctx, k) says
 * whether a connected client holds shard k. */
int agg_demo_lease(agg_demo *d, const agg_peer_address *holder, int max_per_holder, int64_t now_ms,
                   int (*in_use)(void *ctx, int shard), void *ctx, int64_t *free_in_ms);
/* Ends shard k's lease at once: a leased shard that could not be sent is
 * free again, and no longer counts among its holder's leases. */
void agg_demo_release(agg_demo *d, int k);
int agg_demo_shards(const agg_demo *d);
/* Shard k as JSON into out, whole or not at all: when memory runs out or
 * an image file cannot be read, out is freed and the error says so. */
int agg_demo_shard_json(const agg_demo *d, int k, sdfed_buffer *out, sdfed_error *err);

#endif
