/* What a store back end provides to store.c (the store's own files only):
 * a connection that runs one SQL statement with typed parameters and hands
 * each result row to a callback. store.c holds every query and the logic
 * around them; a back end holds its connection, its schema and the
 * statements that begin and abandon a write transaction.
 * Parameters are written $1, $2, ... in every back end's SQL. */
#ifndef SDFED_AGGREGATOR_STORE_BACKEND_H
#define SDFED_AGGREGATOR_STORE_BACKEND_H

#include "store.h"

typedef enum agg_store_type { STORE_NULL, STORE_INT, STORE_REAL, STORE_TEXT, STORE_BLOB } agg_store_type;

/* A parameter or a result column; a result's text and blob point into the
 * back end's row, valid during the row callback only. */
typedef struct agg_store_value {
    agg_store_type type;
    int64_t integer;
    double real;
    const char *text;
    const void *blob;
    size_t bytes; /* the blob's */
} agg_store_value;

/* One result row; a non-zero return stops the statement with that status. */
typedef int (*agg_store_row_fn)(void *ctx, const agg_store_value *columns, int n, sdfed_error *err);

typedef struct agg_store_backend {
    /* Connects to `where` (folder or URI) and makes the schema; sets
     * s->connection and s->name. On failure store.c calls close. */
    int (*open)(agg_store *s, const char *where, sdfed_error *err);
    void (*close)(agg_store *s);
    /* Runs sql with params (row may be NULL for a statement without rows).
     * SDFED_ERR_ARG when a uniqueness constraint refuses the write (no
     * fault); any other failure goes through agg_store_fail with `what`. */
    int (*exec)(agg_store *s, const char *sql, const agg_store_value *params, int n_params, agg_store_row_fn row,
                void *ctx, const char *what, sdfed_error *err);
    const char *begin; /* the statement that begins a write transaction */
    /* Ends a failed transaction if it is still open, without reporting. */
    void (*rollback)(agg_store *s);
    /* Housekeeping once a round is closed and before the next one's writes
     * (NULL: none). */
    void (*between_rounds)(agg_store *s);
    /* Before a write outside a transaction: whether the connection may
     * write now (a failure through agg_store_fail), reopening it if it has to
     * (NULL: always). */
    int (*writable)(agg_store *s, sdfed_error *err);
    /* SQL with one row: how many columns table $1 has named $2. */
    const char *column_count;
    /* After a migration rewrote rows: their old values are not left behind
     * in the back end's files where it can see to it. */
    int (*compact)(agg_store *s, sdfed_error *err);
    /* Cluster mode (NULL in a back end without it): LISTEN on channel,
     * again after every reconnection; notified drains what arrived and
     * says whether anything did (or the connection was opened again, when
     * notifications may have been missed). */
    int (*listen)(agg_store *s, const char *channel, sdfed_error *err);
    int (*notified)(agg_store *s);
} agg_store_backend;

extern const agg_store_backend agg_store_sqlite, agg_store_postgres;

struct agg_store {
    const agg_store_backend *backend;
    void *connection; /* the back end's */
    char *name;       /* the folder, or the URI without its password (heap) */
    int in_transaction;
    int deciding;          /* a fenced decision's transaction is open (agg_store_begin_decision) */
    const char *listening; /* the channel LISTENed on, NULL when none */
    int missed;            /* reconnected since the last agg_store_notified */
    agg_store_fault_fn on_fault;
    void *fault_ctx;
    int failing;
    int64_t failures;
};

/* A failed operation: "store: <what>: <reason>" into err; the first failure
 * begins a fault (store.h). Returns SDFED_ERR_IO. */
int agg_store_fail(agg_store *s, sdfed_error *err, const char *what, const char *reason);

#endif
