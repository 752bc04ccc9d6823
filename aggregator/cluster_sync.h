/* Cluster mode (options.cluster, a PostgreSQL store; store.h,
 * docs/cluster.md): a node follows the rounds the coordinator decided,
 * through the store. It catches up with what the store holds: rounds that
 * ended (the next one's parameters, announced to this node's clients), a
 * round that started (announced to its clients here, with the deadline
 * counted from now), and the open round's reports and departures from
 * every node (the coordinator judges the round on them). It reads at once
 * when notified (LISTEN/NOTIFY), every poll_ms without a notification,
 * on every tick on the coordinator, before it answers a hello when a
 * notification came, and before an update for a round it has not seen
 * open. Each round policy that runs in a cluster catches up its own way
 * (round_policy.h: catch_up): synchronous rounds here (the open round's
 * reports and departures, into round_sync.h's state), secure rounds in
 * round_secure.c (the open round's stored rows, replayed). */
#ifndef SDFED_AGGREGATOR_CLUSTER_SYNC_H
#define SDFED_AGGREGATOR_CLUSTER_SYNC_H

#include <stdint.h>

#include "federation.h"
#include "store.h"
#include "base/rng.h"

/* What the store holds now, learnt (the policy's catch_up). */
void agg_cluster_catch_up(agg_federation *f, int64_t now_ms);
/* The rounds that ended since this node's current one, learnt (the
 * parameters, the ended round's sampler state into sampler, agg_core_round_end);
 * 1 with the latest round row in *latest (agg_store_round_free), 0 when the
 * store could not be read. */
int agg_cluster_learn_ends(agg_federation *f, sdfed_rng *sampler, agg_store_round *latest, int64_t now_ms);
/* The synchronous policy's catch_up. */
void agg_cluster_sync_catch_up(agg_federation *f, int64_t now_ms);
/* Before an update for `round`: caught up unless that round is open here. */
void agg_cluster_catch_up_to(agg_federation *f, int64_t round, int64_t now_ms);
/* A tick: the node's leases (cluster.h), and the store read when notified,
 * on the coordinator, or poll_ms after the last time. */
void agg_cluster_follow(agg_federation *f, int64_t now_ms);
/* A decision the store did not record (rc, err): at the fence, another
 * node coordinates now (this one steps down); else the round moved on
 * meanwhile (read it again). Nothing in a single process. */
void agg_cluster_refused(agg_federation *f, int rc, const sdfed_error *err, int64_t now_ms);

#endif
