/* The aggregator's durable state, behind one interface with two back ends
 * (store_backend.h): a state folder holds it in one SQLite database
 * (store_sqlite.c: aggregator.sqlite, WAL, synchronous FULL), and a
 * postgresql:// or postgres:// URI names a PostgreSQL database
 * (store_postgres.c, libpq) that holds the same tables. It keeps the task
 * it serves, client tokens, the global parameters every round starts from,
 * the updates accepted for the open round, and the metrics clients report.
 * Nothing is acknowledged to a client before the transaction that stores it
 * has committed, so after kill -9 and a restart the server resumes with
 * every acknowledged update. Floats are stored as their little-endian
 * float32 bytes (a BLOB, a bytea): both back ends hold the same bits.
 *
 *   meta     (key, value)                      task sha256
 *   clients  (id, token_sha256, shard, kind, ...)  one row per client ever seen: its token's
 *            SHA-256, never the token (a state from before is migrated on opening)
 *   rounds   (round, global, sha256, rng, participants, started, closed, abandoned, ...)
 *            row r holds the parameters round r starts from; participants
 *            (client ids) and the sampler state once it started; closed
 *            once it was aggregated into row r + 1, or abandoned (row
 *            r + 1 then holds the same parameters, and its updates were
 *            set aside)
 *   updates  (round, client, samples, data, merged)
 *            accepted updates (round: the version they were computed
 *            from); merged is the round they were aggregated into, NULL
 *            while they wait
 *   metrics  (round, client, accuracy, loss, test_samples)
 *   devices  (client, step_ms, threads, kernels, reported)   each client's
 *            latest device figures (devices.h; step_ms its float64 step
 *            times, one a local prompt length of the task), as its metrics
 *            carried them, whichever node heard them
 *   pace     (client, misses, back_at)   pace steering's state of a client
 *            that missed rounds (fed/pace.h); gone once it reports an update
 *   secagg_rounds    (round, graph_key)   a secure round's 32-byte graph key
 *            (aggregator/round_secure.c), stored before the round starts
 *   secagg_messages  (round, seq, client, message)   each stage message a
 *            secure round accepted (fed/secagg_message.h's bytes; a stage's
 *            end as a marker, below), numbered by seq in the order they
 *            were stored (every node of a cluster writes them: store.c says
 *            how seq stays in commit order), stored before it is
 *            acknowledged; a masked input is masked, and the sum is never
 *            stored
 *
 * Cluster mode (PostgreSQL only): several aggregator processes, the
 * nodes, serve one federation from one database; these tables hold what
 * they share besides the above (docs/cluster.md):
 *   nodes        (id, host, pid, started, lease_until)   a node's lease, renewed by its heartbeat
 *   presence     (client, node, shard)                    the node that holds each connected client
 *   coordinator  (id = 1, node, epoch, lease_until)       the one row of the coordinator's lease
 *   departures   (round, client)                          a chosen client whose connection closed
 *   decisions    (round, kind, epoch, node, at)           each round's start and close, once each
 * Time in leases is the database's clock (now()), never a node's. The
 * connected clients are the presence rows of nodes whose lease has not
 * expired: a node that dies stops counting its clients once its lease
 * runs out, and a client that reconnects elsewhere moves its row. The
 * coordinator is the node that claimed the expired coordinator row,
 * raising its epoch; its decisions (agg_store_begin_decision) run in one
 * transaction that first share-locks that row at its epoch, so a node
 * whose epoch was superseded has its writes refused in that transaction,
 * and a claim skips the row while a decision holds it (it never waits on
 * one: a node stays responsive while the coordinator's decision does). A round row is
 * locked for its decision and its decision row is inserted once
 * (decisions' primary key): a round starts once and closes once; a
 * trigger refuses any change to a closed round's row. Updates are
 * inserted only while their round row is started and not closed, under
 * a share lock of that row, so none is acknowledged into a round that
 * closed without it. Every start and close NOTIFYs sdfed_rounds. */
#ifndef SDFED_AGGREGATOR_STORE_H
#define SDFED_AGGREGATOR_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "devices.h"
#include "pace.h"
#include "base/status.h"

typedef struct agg_store agg_store;

/* Opens the store at `where`: a PostgreSQL URI (agg_store_is_database), else a
 * state folder (made if missing, 0700, its files 0600: docs/state.md). An
 * unreadable URI is SDFED_ERR_ARG; a server that cannot be reached or
 * refuses the login, a folder that cannot be made, a database that cannot
 * be read, or a state with plain tokens that cannot be written to hash
 * them, is SDFED_ERR_IO, the message naming the folder or the URI (without
 * its password). A database that can be read but not written opens: its
 * writes fail (a fault) until it can be written again, and it is opened
 * again read-write by itself then. */
int agg_store_open(agg_store **out, const char *where, sdfed_error *err);
void agg_store_close(agg_store *s);
/* Whether `where` is a postgresql:// or postgres:// URI. */
int agg_store_is_database(const char *where);
/* The state folder, or the URI without its password, for messages. */
const char *agg_store_name(const agg_store *s);

/* Faults: a failed operation (a full disk, a read-only database, one moved
 * or deleted under the server, an I/O error) begins one, and the next write
 * that commits ends it. fn hears both ends, once each: the
 * first failure's message, then NULL when the fault is over (a full disk
 * fails every write until space is freed; it is reported once). */
typedef void (*agg_store_fault_fn)(void *ctx, const char *message);
void agg_store_watch_faults(agg_store *s, agg_store_fault_fn fn, void *ctx);
/* Whether a fault is going on, and how many operations failed so far. */
int agg_store_failing(const agg_store *s);
int64_t agg_store_failures(const agg_store *s);

/* meta values (text); *value is heap (caller frees), NULL when absent */
int agg_store_get_meta(agg_store *s, const char *key, char **value, sdfed_error *err);
int agg_store_set_meta(agg_store *s, const char *key, const char *value, sdfed_error *err);

/* New clients, each with its token, in one transaction (group commit, as
 * the handlers register the hellos that came together): ids[i] receives
 * client i's number. On any failure none of them is stored. */
typedef struct agg_store_new_client {
    const char *token;
    int shard; /* -1: none */
    const char *kind;
} agg_store_new_client;
int agg_store_add_clients(agg_store *s, const agg_store_new_client *clients, int n, int64_t *ids, sdfed_error *err);
/* The client holding token (found by its hash); *id = -1 when none. */
int agg_store_find_client(agg_store *s, const char *token, int64_t *id, int *shard, sdfed_error *err);

typedef struct agg_store_round {
    int64_t round;
    float *global; /* heap */
    size_t n_values;
    char sha256[65];
    int started, closed;
    double started_at;     /* when it started, in seconds of the wall clock of the node that started it */
    uint64_t rng[4];       /* the sampler state after choosing (valid when started) */
    int64_t *participants; /* heap, n_participants client ids */
    int n_participants;
    int n_updates, abandoned; /* once closed */
} agg_store_round;

/* The latest round row (*found 0 when the database holds no round). */
int agg_store_latest_round(agg_store *s, agg_store_round *r, int *found, sdfed_error *err);
/* Any round row (*found 0 if absent); for /status and tests. */
int agg_store_get_round(agg_store *s, int64_t round, agg_store_round *r, int *found, sdfed_error *err);
void agg_store_round_free(agg_store_round *r);
/* Round 0's parameters (a new federation). */
int agg_store_add_first_round(agg_store *s, const float *global, size_t n, const char *sha256, sdfed_error *err);
/* Marks round r started with its participants and sampler state. */
int agg_store_start_round(agg_store *s, int64_t round, const int64_t *participants, int n, const uint64_t rng[4],
                          sdfed_error *err);
/* Closes round r, marks every waiting update merged into r + 1 (set aside
 * when the round is abandoned) and adds row r + 1 with the new parameters,
 * atomically. */
int agg_store_close_round(agg_store *s, int64_t round, const float *next_global, size_t n, const char *sha256,
                          int n_updates, int abandoned, double aggregation_ms, sdfed_error *err);

/* A round's start or close as one transaction. A single process (fence
 * NULL) decides alone: this begins nothing, and agg_store_start_round and
 * agg_store_close_round are each atomic. A cluster's coordinator gives its
 * fence: this begins the transaction, refuses (SDFED_ERR_ARG) unless the
 * coordinator row is still at the fence's node and epoch, locks round
 * row r, refuses (SDFED_ERR_NOT_FOUND) unless it is still to be started
 * (STORE_START) or open (STORE_CLOSE), and records the decision; the
 * statements that follow (agg_store_pending_updates, agg_store_start_round,
 * agg_store_close_round) run in it until agg_store_commit_decision (which
 * notifies the nodes) or agg_store_abort_decision. */
typedef struct agg_store_fence {
    int64_t node, epoch;
} agg_store_fence;
/* STORE_STAGE: a secure round's stage ends (agg_store_end_secagg_stage): the
 * round locked as for its close, no decision row (its marker is the record). */
typedef enum agg_store_decision { STORE_START, STORE_CLOSE, STORE_STAGE } agg_store_decision;
int agg_store_begin_decision(agg_store *s, const agg_store_fence *fence, int64_t round, agg_store_decision what,
                             sdfed_error *err);
int agg_store_commit_decision(agg_store *s, sdfed_error *err);
void agg_store_abort_decision(agg_store *s);

/* Updates and metrics are written in batches (group commit,
 * aggregator/group_commit.h): many in one transaction, so that one commit
 * (one fsync) stores them all. */
typedef struct agg_store_new_update {
    int64_t round, client, samples;
    const float *values;
    size_t n_values;
    int paced; /* its client has a pace row (misses noted): stored, the update ends it */
} agg_store_new_update;
/* A client's evaluation of a round (its metrics message); a later one for
 * the same round and client replaces it. It is stored only when the
 * client's update for that round is (the same batch, or an earlier one):
 * the accuracy a federation shows is its reporting clients' alone. The
 * device figures it carried replace the client's earlier ones whether or
 * not the evaluation is stored. */
typedef struct agg_store_new_metrics {
    int64_t round, client;
    double accuracy, loss;
    int64_t test_samples;
    agg_device_figures device; /* device.n_step_ms 0: none carried */
} agg_store_new_metrics;
/* A client connected to node (cluster): its presence row, as
 * agg_store_presence_add writes it. */
typedef struct agg_store_new_presence {
    int64_t client;
    int shard; /* -1: none */
} agg_store_new_presence;
/* What became of one update or metrics row of a batch. */
typedef enum agg_store_outcome {
    STORE_STORED,    /* in the database */
    STORE_DUPLICATE, /* update: (round, client) had one already: nothing stored */
    STORE_NOT_OPEN,  /* update, STORE_OPEN_ROUND: its round is not open for its client: nothing stored */
    STORE_NO_UPDATE, /* metrics: no update of its client for its round is stored: nothing stored */
} agg_store_outcome;
/* A secure round's message (secagg_messages), accepted at `stage` (the
 * round's stage, fed/secagg_stage.h), or with the one byte 0 the client's
 * leave (a cluster's): stored after the round's rows (its seq the next)
 * unless that stage has ended (its marker is stored), the round holds the
 * client's message of that kind already, or the client left the round. */
typedef struct agg_store_new_secagg {
    int64_t round, client;
    int stage;
    const unsigned char *message;
    size_t len;
} agg_store_new_secagg;
typedef struct agg_store_batch {
    const agg_store_new_update *updates;
    int n_updates;
    const agg_store_new_metrics *metrics;
    int n_metrics;
    agg_store_outcome *metrics_outcome;     /* each metrics row's, once written (NULL: not wanted) */
    const agg_store_new_presence *presence; /* cluster: the rows of node */
    int n_presence;
    int64_t node;
    const agg_store_new_secagg *secagg; /* secure rounds' rows */
    int n_secagg;
    agg_store_outcome *secagg_outcome; /* each one's, once written: stored, STORE_DUPLICATE (the round holds the
                                      client's message of that kind), STORE_NOT_OPEN (its stage or round is over) */
} agg_store_batch;
/* Which rounds take updates: any (a single process, whose federation
 * checks the round itself), or only one that is started and not closed,
 * and not from a client that left it, under a share lock of the round's
 * row held until the batch commits (a cluster's synchronous round, whose
 * coordinator may close it meanwhile). A secure round's messages, with
 * STORE_OPEN_ROUND, only into a round started and not closed, under an
 * exclusive lock of its row held until the batch commits. */
typedef enum agg_store_update_rule { STORE_ANY_ROUND, STORE_OPEN_ROUND } agg_store_update_rule;
/* Stores a batch in one transaction (its metrics after its updates; a
 * stored update marked paced also ends its client's pace row). When
 * it returns 0 the transaction has committed, every presence row is stored,
 * outcome[i] says what became of update i and b->metrics_outcome[j] of
 * metrics row j; any other status means that nothing was committed:
 * acknowledge none of them. */
int agg_store_add_batch(agg_store *s, const agg_store_batch *b, agg_store_update_rule rule, agg_store_outcome *outcome,
                        sdfed_error *err);
typedef struct agg_store_update {
    int64_t round, client, samples;
    float *values; /* heap */
    size_t n_values;
} agg_store_update;
/* The updates not merged yet, ordered by round then client id. */
int agg_store_pending_updates(agg_store *s, agg_store_update **updates, int *n, sdfed_error *err);
/* The updates merged into round `round`'s parameters (closing round - 1), in the same order. */
int agg_store_merged_updates(agg_store *s, int64_t round, agg_store_update **updates, int *n, sdfed_error *err);
void agg_store_updates_free(agg_store_update *u, int n);

/* A secure round's graph key: stored (again: replaced, until the round has
 * started: a superseded coordinator cannot change a started round's key)
 * before it starts,
 * and read back (*found 0 when the round has none). */
int agg_store_set_secagg_key(agg_store *s, int64_t round, const unsigned char key[32], sdfed_error *err);
int agg_store_secagg_key(agg_store *s, int64_t round, unsigned char key[32], int *found, sdfed_error *err);
/* The end of `stage` of a secure round: its marker row (client -1, the
 * stage's one byte) stored as the round's row `seq`, only when the round
 * holds seq rows (*stored 0: other rows came meanwhile; read them first).
 * A cluster's coordinator calls it in a decision (STORE_STAGE). */
int agg_store_end_secagg_stage(agg_store *s, int64_t round, int64_t seq, int stage, int *stored, sdfed_error *err);
/* A secure round's stored rows from seq `from` on, in seq order (heap:
 * agg_store_secagg_free). Rows commit in seq order, without gaps. */
typedef struct agg_store_secagg {
    int64_t seq, client;
    unsigned char *message;
    size_t len;
} agg_store_secagg;
int agg_store_secagg_rows(agg_store *s, int64_t round, int64_t from, agg_store_secagg **rows, int *n, sdfed_error *err);
void agg_store_secagg_free(agg_store_secagg *rows, int n);

/* Every client's latest device figures, in client order (replacing out's
 * rows; agg_devices_free). */
int agg_store_devices(agg_store *s, agg_device_board *out, sdfed_error *err);

/* Pace steering's state (replacing out's rows; agg_pace_free), and the
 * given clients' written in one transaction: a client with no misses and
 * no rounds to sit out has no row. */
int agg_store_pace(agg_store *s, agg_pace_board *out, sdfed_error *err);
int agg_store_set_pace(agg_store *s, const agg_pace_client *clients, int n, sdfed_error *err);

/* Mean accuracy reported per round: rounds[i], accuracy[i], clients[i];
 * only the metrics of clients whose update for the round is stored count
 * (a state written before that rule may hold others), and of those only
 * the ones with test images (test_samples 0: no accuracy, not 0); a round
 * none of whose metrics count is not listed. */
int agg_store_accuracy_history(agg_store *s, int64_t **rounds, double **accuracy, int64_t **clients, int *n,
                               sdfed_error *err);

/* The whole federation as stored, since it began (every restart, every
 * node): rounds closed (aggregated) and abandoned, updates stored, clients
 * registered (every client that ever said hello). */
typedef struct agg_store_counts {
    int64_t rounds_closed, rounds_abandoned, updates, clients;
} agg_store_counts;
int agg_store_federation_counts(agg_store *s, agg_store_counts *c, sdfed_error *err);

/* The clients each closed (aggregated) round started with, in round order:
 * a secure federation's unmasked rounds, whose plans (fed/secagg_task.h)
 * say what privacy each spent (heap: free). */
int agg_store_closed_round_sizes(agg_store *s, int64_t **sizes, int *n, sdfed_error *err);

/* A client as a host sees it: when it registered and when it was last
 * heard from (the latest of its registration, its updates and its latest
 * metrics; unix seconds), its updates stored (the rounds it took part in;
 * async: its contributions) and the accuracy it reported last (for its
 * latest round; NAN when it reported none, or none that round: no test
 * image). */
typedef struct agg_store_volunteer {
    int64_t client;
    double first_seen, last_seen;
    int64_t rounds;
    double accuracy;
} agg_store_volunteer;
/* The `limit` clients last heard from, the latest first (heap, *n). */
int agg_store_recent_volunteers(agg_store *s, int limit, agg_store_volunteer **volunteers, int *n, sdfed_error *err);

/* ---- cluster mode (PostgreSQL only; see the top of this file) ---- */

/* This process as a node: a new row with a lease of lease_s seconds;
 * renewed; and left (its clients' presence removed, its leases ended). */
int agg_store_node_join(agg_store *s, const char *host, int pid, double lease_s, int64_t *node, sdfed_error *err);
int agg_store_node_renew(agg_store *s, int64_t node, double lease_s, sdfed_error *err);
int agg_store_node_leave(agg_store *s, int64_t node, sdfed_error *err);
/* Claims the coordinator row if its lease expired (and the node's has
 * not): *epoch the new epoch, 0 when another node holds it. */
int agg_store_coordinator_claim(agg_store *s, int64_t node, double lease_s, int64_t *epoch, sdfed_error *err);
/* Renews the lease at the fence's epoch; *held 0 when it was superseded. */
int agg_store_coordinator_renew(agg_store *s, const agg_store_fence *fence, double lease_s, int *held,
                                sdfed_error *err);
/* The coordinator row: its node (-1 none) and epoch, and whether its lease holds. */
int agg_store_coordinator(agg_store *s, int64_t *node, int64_t *epoch, int *live, sdfed_error *err);

/* A client connected to node. */
int agg_store_presence_add(agg_store *s, int64_t client, int shard, int64_t node, sdfed_error *err);
/* A client's connection to node closed: its presence goes if node still
 * held it (*removed), and then, when departed_round >= 0, it left that
 * round (a departure). */
int agg_store_presence_remove(agg_store *s, int64_t client, int64_t node, int64_t departed_round, int *removed,
                              sdfed_error *err);
/* The connected clients: presence rows of nodes whose lease holds
 * (heap arrays, *n of each; shard -1 when none). */
int agg_store_present_clients(agg_store *s, int64_t **clients, int **shards, int *n, sdfed_error *err);
/* Round r's reports (its stored updates) and departures (heap). */
int agg_store_round_events(agg_store *s, int64_t round, int64_t **reported, int *n_reported, int64_t **departed,
                           int *n_departed, sdfed_error *err);
typedef struct agg_store_cluster {
    int64_t nodes_live, clients_present, coordinator_node, coordinator_epoch;
} agg_store_cluster;
/* The cluster's nodes, clients and coordinator, for /status and /metrics
 * (the federation's counts: agg_store_federation_counts). */
int agg_store_cluster_status(agg_store *s, agg_store_cluster *c, sdfed_error *err);

/* LISTEN for the coordinator's notifications (sdfed_rounds); then
 * agg_store_notified says whether any came (or may have been missed) since
 * the last call. */
int agg_store_listen(agg_store *s, sdfed_error *err);
int agg_store_notified(agg_store *s);

#endif
