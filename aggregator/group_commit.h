/* Group commit: rows that wait for the transaction that stores them, so
 * that one commit, one fsync, stores many. Two batches: the round's (the
 * updates the federation accepted, the metrics clients reported, a secure
 * round's stage messages and, in a cluster, the presence rows of clients
 * that connected), written in one
 * store transaction (agg_store_add_batch); and new clients' hellos, registered
 * together in one of their own (agg_store_add_clients). Each row is copied in
 * as it comes; a batch is due when max_rows wait or its oldest has waited
 * max_wait_ms, whichever comes first (the caller's event loop asks when,
 * and never waits). Nothing here answers a client: once a batch is written
 * the caller acknowledges each update by its outcome and welcomes each new
 * client, or, when the transaction did not commit, refuses them all
 * (server_error), so that nothing is acknowledged before it is stored. */
#ifndef SDFED_AGGREGATOR_GROUP_COMMIT_H
#define SDFED_AGGREGATOR_GROUP_COMMIT_H

#include <stdint.h>

#include "store.h"

/* A new client's hello waiting for its registration. */
typedef struct agg_group_commit_hello {
    void *hello;       /* the caller's handle for it (NULL once cancelled: not registered) */
    const char *token; /* the caller's, valid while it waits */
    int shard;         /* -1: none */
    char kind[32];
} agg_group_commit_hello;

typedef struct agg_group_commit {
    int max_rows;                  /* >= 1 (1: every update and metrics row in its own transaction) */
    int64_t max_wait_ms;           /* the longest a row waits for its batch */
    agg_store_new_update *updates; /* values copied (heap) */
    agg_store_outcome *outcome;    /* each waiting update's, once written */
    int n_updates, cap_updates;
    agg_store_new_metrics *metrics;
    agg_store_outcome *metrics_outcome; /* each waiting metrics row's, once written */
    int n_metrics, cap_metrics;
    agg_store_new_presence *presence;
    int n_presence, cap_presence;
    int64_t node;                      /* the presence rows' */
    agg_store_new_secagg *secagg;      /* messages copied (heap) */
    agg_store_outcome *secagg_outcome; /* each waiting message's, once written */
    int n_secagg, cap_secagg;
    int64_t oldest_ms;              /* when the first waiting row came */
    agg_group_commit_hello *hellos; /* the other batch */
    int n_hellos, cap_hellos;
    int64_t oldest_hello_ms;
} agg_group_commit;

/* node: the cluster node whose presence rows it writes (0 in a single process). */
void agg_group_commit_init(agg_group_commit *g, int max_rows, int64_t max_wait_ms, int64_t node);
void agg_group_commit_free(agg_group_commit *g);
/* Adds an update, its values copied; SDFED_ERR_NOMEM (nothing added) when memory ran out. */
int agg_group_commit_add(agg_group_commit *g, const agg_store_new_update *u, int64_t now_ms);
/* Adds a metrics row; SDFED_ERR_NOMEM (nothing added) when memory ran out. */
int agg_group_commit_add_metrics(agg_group_commit *g, const agg_store_new_metrics *m, int64_t now_ms);
/* Adds a presence row; SDFED_ERR_NOMEM (nothing added) when memory ran out. */
int agg_group_commit_add_presence(agg_group_commit *g, int64_t client, int shard, int64_t now_ms);
/* Adds a secure round's row, its message copied; SDFED_ERR_NOMEM (nothing
 * added) when memory ran out. */
int agg_group_commit_add_secagg(agg_group_commit *g, const agg_store_new_secagg *row, int64_t now_ms);
/* Whether (round, client) has an update waiting. */
int agg_group_commit_holds(const agg_group_commit *g, int64_t round, int64_t client);
/* How long until the batch is due: -1 when nothing waits, 0 when due now. */
int64_t agg_group_commit_due_in_ms(const agg_group_commit *g, int64_t now_ms);
/* Writes every waiting row in one transaction (agg_store_add_batch): on
 * SDFED_OK it committed and g->outcome holds each update's outcome and
 * g->metrics_outcome each metrics row's (stored only beside its update),
 * g->secagg_outcome each secure round's message's; on any
 * other status nothing was stored. The rows stay until agg_group_commit_clear. */
int agg_group_commit_write(agg_group_commit *g, agg_store *s, agg_store_update_rule rule, sdfed_error *err);
void agg_group_commit_clear(agg_group_commit *g);

/* Adds a hello (kind copied); SDFED_ERR_NOMEM (nothing added) when memory ran out. */
int agg_group_commit_add_hello(agg_group_commit *g, void *hello, const char *token, int shard, const char *kind,
                               int64_t now_ms);
/* The hello's connection is gone: it is not registered. */
void agg_group_commit_cancel_hello(agg_group_commit *g, const void *hello);
/* How long until the hellos are due: -1 when none waits, 0 when due now. */
int64_t agg_group_commit_hellos_due_in_ms(const agg_group_commit *g, int64_t now_ms);
/* Registers the waiting hellos not cancelled in one transaction
 * (agg_store_add_clients): on SDFED_OK ids[k] is the k-th of them's new id; on
 * any other status none was stored. ids has room for g->n_hellos. The
 * hellos stay until agg_group_commit_clear_hellos. */
int agg_group_commit_write_hellos(agg_group_commit *g, agg_store *s, int64_t *ids, sdfed_error *err);
void agg_group_commit_clear_hellos(agg_group_commit *g);

#endif
