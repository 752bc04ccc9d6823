/* The federation's state for people and monitors:
 *   /status       JSON: the task's name and description, round, clients,
 *                 why no round is open (waiting), the federation's counts,
 *                 global_prompt_sha256, accuracy per round, the
 *                 federation's devices (status_devices.h), ...
 *   /status.html  a page for a host, readable on a phone: the task's name
 *                 and description, the round and how many are done, why no
 *                 round is open, the federation's counts, the
 *                 accuracy-per-round chart clients report, the chart of
 *                 the devices' step time against local prompt length, and the
 *                 STATUS_VOLUNTEERS volunteers heard from last (anonymous
 *                 names, first and last seen, rounds, last accuracy)
 *                 (it reloads every 5 s; 503 when the page cannot be built)
 *   /status.css   status.html's style
 *   /metrics      Prometheus text: clients, rounds, updates accepted and
 *                 refused by reason (by this process), store failures,
 *                 aggregation time, the connections held and what the
 *                 edge's limits refused, by limit (peers.h), the devices
 * The federation's counts (rounds closed and abandoned, updates accepted,
 * clients registered) are the store's, since the federation began: a
 * restart or another node changes nothing in them. The accuracy history
 * is read from the store again only when new metrics came in, and at most
 * once a second (every open page polls /status).
 * In cluster mode (cluster.h) the clients connected to any node, the live
 * nodes, the coordinator and its epoch come from the store too, and "node"
 * (/status) and the sdfed_node_* metrics say what this node does: its id,
 * its role (coordinator or front-end), its epoch, its own connections, and
 * the updates it accepted and rounds it closed. */
#ifndef SDFED_AGGREGATOR_STATUS_H
#define SDFED_AGGREGATOR_STATUS_H

#include <stdint.h>

#include <libwebsockets.h>

#include "cluster.h"
#include "federation.h"
#include "join_key.h"
#include "peers.h"
#include "store.h"

enum { STATUS_VOLUNTEERS = 200 }; /* the volunteers status.html lists at most */

typedef struct agg_status_board {
    agg_federation *fed;
    agg_store *st;
    agg_cluster *cl;                              /* cluster mode: this node; NULL in a single process */
    const agg_peers *peers;                       /* the edge's connections and refusals (peers.h) */
    const agg_join_key *join_key, *metrics_token; /* for status.html's links, which carry the key when one is needed */
    const char *model_sha256;
    const char *name, *description; /* the task's, shown on both (NULL: "") */
    agg_store_counts counts;        /* the federation's, as last read from the store */
    struct {
        int64_t *rounds, *clients;
        double *accuracy;
        int n, valid;
        int64_t metrics_seen, read_at_ms;
    } history;
    struct { /* the devices' summary as last read from the store (read_devices) */
        agg_devices_summary summary;
        int valid;
        int64_t metrics_seen, read_at_ms;
    } devices;
} agg_status_board;

void agg_status_board_free(agg_status_board *b);

/* Answers path when it is one of the status routes; 0 when it is not
 * (*answered stays 0), else what the lws HTTP callback returns. */
int agg_status_serve(agg_status_board *b, struct lws *wsi, const char *path, int *answered);

#endif
