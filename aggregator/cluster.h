/* This process as one node of a cluster (cluster mode, store.h): its node
 * row and the heartbeat that renews the row's lease, and the coordinator's
 * lease: claimed when it has expired, renewed while held, with the epoch
 * that fences the coordinator's decisions (agg_store_begin_decision). Leases
 * last lease_s seconds of the database's clock and are renewed every third
 * of that; a node that cannot renew (the database is away) keeps its role
 * until a renewal says otherwise, since its decisions are refused anyway
 * once another node has claimed the row. It decides nothing itself: the
 * federation asks it whether this node coordinates. */
#ifndef SDFED_AGGREGATOR_CLUSTER_H
#define SDFED_AGGREGATOR_CLUSTER_H

#include <stdint.h>

#include "store.h"

typedef struct agg_cluster agg_cluster;

/* Joins: a node row (this host and process), LISTEN for the coordinator's
 * notifications. */
int agg_cluster_open(agg_cluster **out, agg_store *st, double lease_s, sdfed_error *err);
/* Leaves: the node's presence rows and leases end, so that another node
 * takes over at once (nothing when the database is away). */
void agg_cluster_close(agg_cluster *c);
/* Renews or claims leases when due. */
void agg_cluster_tick(agg_cluster *c, int64_t now_ms);
int64_t agg_cluster_node(const agg_cluster *c);
/* The coordinator's fence; NULL while this node is not the coordinator. */
const agg_store_fence *agg_cluster_fence(const agg_cluster *c);
/* A decision was refused at the fence: another node coordinates now. */
void agg_cluster_step_down(agg_cluster *c);

#endif
