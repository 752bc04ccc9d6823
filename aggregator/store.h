/* The aggregator's durable state, behind one interface with two back ends
 * (store_backend.h): a state folder holds it in one SQLite database
 * (store_sqlite.c: aggregator.sqlite, WAL, synchronous FULL), and a
 * postgresql:// or postgres:// URI names a PostgreSQL database
 * (store_postgres.c, libpq) that holds the same tables. It keeps the task
 * it serves, client tokens, the global parameters every round starts from,
 * the updates accepted for the open round, and the metrics clients report.
 * Nothing is acknowledged to a client before the statement that stores it
 * has committed, so after kill -9 and a restart the server resumes with
 * every acknowledged update. Floats are stored as their little-endian
 * float32 bytes (a BLOB, a bytea): both back ends hold the same bits.
 *
 *   meta     (key, value)                      task sha256
 *   clients  (id, token, shard, kind, ...)     one row per client ever seen
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
 *   metrics  (round, client, accuracy, loss, test_samples) */
#ifndef SDFED_AGGREGATOR_STORE_H
#define SDFED_AGGREGATOR_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct store store;

/* Opens the store at `where`: a PostgreSQL URI (store_is_database), else a
 * state folder (made if missing). An unreadable URI is SDFED_ERR_ARG; a
 * server that cannot be reached or refuses the login is SDFED_ERR_IO with
 * libpq's reason, the message naming the URI without its password. */
int store_open(store **out, const char *where, sdfed_error *err);
void store_close(store *s);
/* Whether `where` is a postgresql:// or postgres:// URI. */
int store_is_database(const char *where);
/* The state folder, or the URI without its password, for messages. */
const char *store_name(const store *s);

/* Faults: a failed operation (a full disk, an I/O error) begins one, and
 * the next write that commits ends it. fn hears both ends, once each: the
 * first failure's message, then NULL when the fault is over (a full disk
 * fails every write until space is freed; it is reported once). */
typedef void (*store_fault_fn)(void *ctx, const char *message);
void store_watch_faults(store *s, store_fault_fn fn, void *ctx);
/* Whether a fault is going on, and how many operations failed so far. */
int store_failing(const store *s);
int64_t store_failures(const store *s);

/* meta values (text); *value is heap (caller frees), NULL when absent */
int store_get_meta(store *s, const char *key, char **value, sdfed_error *err);
int store_set_meta(store *s, const char *key, const char *value, sdfed_error *err);

/* A new client with a token; *id receives its number. */
int store_add_client(store *s, const char *token, int shard, const char *kind, int64_t *id, sdfed_error *err);
/* The client holding token; *id = -1 when none. */
int store_find_client(store *s, const char *token, int64_t *id, int *shard, sdfed_error *err);
int store_count_clients(store *s, int64_t *n, sdfed_error *err);

typedef struct store_round {
    int64_t round;
    float *global; /* heap */
    size_t n_values;
    char sha256[65];
    int started, closed;
    uint64_t rng[4];       /* the sampler state after choosing (valid when started) */
    int64_t *participants; /* heap, n_participants client ids */
    int n_participants;
} store_round;

/* The latest round row (*found 0 when the database holds no round). */
int store_latest_round(store *s, store_round *r, int *found, sdfed_error *err);
/* Any round row (*found 0 if absent); for /status and tests. */
int store_get_round(store *s, int64_t round, store_round *r, int *found, sdfed_error *err);
void store_round_free(store_round *r);
/* Round 0's parameters (a new federation). */
int store_add_first_round(store *s, const float *global, size_t n, const char *sha256, sdfed_error *err);
/* Marks round r started with its participants and sampler state. */
int store_start_round(store *s, int64_t round, const int64_t *participants, int n, const uint64_t rng[4],
                      sdfed_error *err);
/* Closes round r, marks every waiting update merged into r + 1 (set aside
 * when the round is abandoned) and adds row r + 1 with the new parameters,
 * atomically. */
int store_close_round(store *s, int64_t round, const float *next_global, size_t n, const char *sha256, int n_updates,
                      int abandoned, double aggregation_ms, sdfed_error *err);

/* Stores an update (durably: acknowledge it only after this returns 0);
 * SDFED_ERR_ARG when (round, client) already has one. */
int store_add_update(store *s, int64_t round, int64_t client, int64_t samples, const float *values, size_t n,
                     sdfed_error *err);
typedef struct store_update {
    int64_t round, client, samples;
    float *values; /* heap */
    size_t n_values;
} store_update;
/* The updates not merged yet, ordered by round then client id. */
int store_pending_updates(store *s, store_update **updates, int *n, sdfed_error *err);
void store_updates_free(store_update *u, int n);

int store_add_metrics(store *s, int64_t round, int64_t client, double accuracy, double loss, int64_t test_samples,
                      sdfed_error *err);
/* Mean accuracy reported per round: rounds[i], accuracy[i], clients[i]. */
int store_accuracy_history(store *s, int64_t **rounds, double **accuracy, int64_t **clients, int *n, sdfed_error *err);

#endif
