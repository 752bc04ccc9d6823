/* The store's SQLite back end: aggregator.sqlite in the state folder (WAL,
 * synchronous FULL: a commit is on disk when it returns), private to its
 * owner (the folder 0700, the database 0600, and SQLite gives its -wal and
 * -shm the database's mode), opened again read-write when it was read-only
 * once it can be written, and never written once moved or deleted. */
#include "store_backend.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sqlite3.h>

#include "native/clock.h"
#include "native/paths.h"

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS clients (id INTEGER PRIMARY KEY, token_sha256 TEXT UNIQUE NOT NULL, shard INTEGER,"
    "  kind TEXT, created REAL NOT NULL);"
    "CREATE TABLE IF NOT EXISTS rounds (round INTEGER PRIMARY KEY, global BLOB NOT NULL, sha256 TEXT NOT NULL,"
    "  rng BLOB, participants BLOB, started REAL, closed REAL, n_updates INTEGER, aggregation_ms REAL,"
    "  abandoned INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS updates (round INTEGER NOT NULL, client INTEGER NOT NULL, samples INTEGER NOT NULL,"
    "  data BLOB NOT NULL, received REAL NOT NULL, merged INTEGER, PRIMARY KEY (round, client));"
    /* the open round's updates, found without scanning every past round's */
    "CREATE INDEX IF NOT EXISTS updates_pending ON updates (round, client) WHERE merged IS NULL;"
    /* each client's updates and metrics, for the status page's volunteers */
    "CREATE INDEX IF NOT EXISTS updates_client ON updates (client, received);"
    "CREATE TABLE IF NOT EXISTS metrics (round INTEGER NOT NULL, client INTEGER NOT NULL, accuracy REAL,"
    "  loss REAL, test_samples INTEGER, received REAL NOT NULL, PRIMARY KEY (round, client));"
    "CREATE INDEX IF NOT EXISTS metrics_client ON metrics (client, round);"
    /* the clients' devices and pace steering (store.h) */
    "CREATE TABLE IF NOT EXISTS devices (client INTEGER PRIMARY KEY, step_ms BLOB NOT NULL, threads INTEGER NOT NULL,"
    "  kernels TEXT NOT NULL, reported REAL NOT NULL);"
    "CREATE TABLE IF NOT EXISTS pace (client INTEGER PRIMARY KEY, misses INTEGER NOT NULL, back_at INTEGER NOT NULL);"
    /* secure rounds (store.h) */
    "CREATE TABLE IF NOT EXISTS secagg_rounds (round INTEGER PRIMARY KEY, graph_key BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS secagg_messages (round INTEGER NOT NULL, seq INTEGER NOT NULL, client INTEGER NOT NULL,"
    "  message BLOB NOT NULL, received REAL NOT NULL, PRIMARY KEY (round, seq));"
    /* a client's messages and the stages' ends, found as each message is stored (store.c) */
    "CREATE INDEX IF NOT EXISTS secagg_messages_client ON secagg_messages (round, client);";

/* The connection and its prepared statements, kept for its life and found
 * by their SQL text, most recently used first: a batch runs the same few
 * statements for every row, and preparing them again for each row cost
 * more than running them. */
enum { CACHED_STATEMENTS = 64 };
typedef struct sqlite_connection {
    sqlite3 *db;
    sqlite3_stmt *cached[CACHED_STATEMENTS];
    int n_cached;
    char *folder, *path;  /* the state folder and its aggregator.sqlite */
    int read_only;        /* opened read-only, or a write found it so: opened again before a write */
    int64_t reopen_at_ms; /* not before (monotonic): at most once a second */
} sqlite_connection;

static sqlite3 *db_of(const agg_store *s) { return ((const sqlite_connection *)s->connection)->db; }

static int fail(agg_store *s, sdfed_error *err, const char *what) {
    return agg_store_fail(s, err, what, sqlite3_errmsg(db_of(s)));
}

/* sql's statement, reset and unbound (NULL: SQLite could not prepare it) */
static sqlite3_stmt *prepared(sqlite_connection *c, const char *sql) {
    int i = 0;
    while (i < c->n_cached && strcmp(sqlite3_sql(c->cached[i]), sql) != 0) i++;
    sqlite3_stmt *st = i < c->n_cached ? c->cached[i] : NULL;
    if (!st) {
        if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) return NULL;
        if (c->n_cached == CACHED_STATEMENTS) sqlite3_finalize(c->cached[--c->n_cached]);
        i = c->n_cached++;
    }
    memmove(&c->cached[1], &c->cached[0], sizeof c->cached[0] * (size_t)i);
    c->cached[0] = st;
    return st;
}

/* The state private to its owner: the folder not open to others (0700),
 * the database neither (0600 at most), and its -wal and -shm, when there,
 * with the database's own mode (as SQLite gives new ones). Only ever
 * narrowed, never widened past what the owner set (a database made
 * read-only stays so); best effort: a read-only mount, or another owner,
 * keeps its modes. */
static void make_private(const sqlite_connection *c) {
    struct stat st;
    if (stat(c->folder, &st) == 0 && (st.st_mode & 077)) chmod(c->folder, st.st_mode & 0700);
    if (stat(c->path, &st) != 0) return;
    mode_t mode = st.st_mode & 0600;
    if (st.st_mode & 0177) chmod(c->path, mode);
    for (int i = 0; i < 2; i++) {
        char side[4200];
        snprintf(side, sizeof side, "%s%s", c->path, i ? "-shm" : "-wal");
        if (stat(side, &st) == 0 && (st.st_mode & 0777) != mode) chmod(side, mode);
    }
}

/* A connection to the database with the store's settings; its status. */
static int connect_to(const char *path, int flags, sqlite3 **db) {
    int rc = sqlite3_open_v2(path, db, flags, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(*db,
                          "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; "
                          "PRAGMA wal_autocheckpoint=65536; PRAGMA journal_size_limit=0;",
                          NULL, NULL, NULL);
    if (rc == SQLITE_OK) sqlite3_busy_timeout(*db, 5000);
    return rc;
}

/* A state that cannot be opened: the reason, naming the folder. */
static int cannot_open(agg_store *s, sdfed_error *err, const char *why) {
    const sqlite_connection *c = s->connection;
    char what[4200];
    snprintf(what, sizeof what, "the state in %s cannot be opened", c->folder);
    return agg_store_fail(s, err, what, why);
}

/* A database there that SQLite cannot read: its reason, and when it is
 * read-only, what SQLite needs. */
static int cannot_read(agg_store *s, sdfed_error *err) {
    sqlite3 *db = ((sqlite_connection *)s->connection)->db;
    char why[512];
    snprintf(why, sizeof why, "%s%s", db ? sqlite3_errmsg(db) : "out of memory",
             db && (sqlite3_errcode(db) & 0xff) == SQLITE_READONLY
                 ? " (SQLite writes aggregator.sqlite-shm beside the database: a read-only folder needs that file "
                   "there, as the server that last wrote it left it)"
                 : "");
    return cannot_open(s, err, why);
}

static int sqlite_open(agg_store *s, const char *dir, sdfed_error *err) {
    if (!(s->name = strdup(dir))) return sdfed_fail(err, SDFED_ERR_NOMEM, "store: out of memory");
    sqlite_connection *c = calloc(1, sizeof *c);
    if (!c) return sdfed_fail(err, SDFED_ERR_NOMEM, "store: out of memory");
    s->connection = c;
    size_t n = strlen(dir) + sizeof "/aggregator.sqlite";
    if (!(c->folder = strdup(dir)) || !(c->path = malloc(n)))
        return sdfed_fail(err, SDFED_ERR_NOMEM, "store: out of memory");
    snprintf(c->path, n, "%s/aggregator.sqlite", dir);
    /* the folder (and its parents), and a new database made private before SQLite writes into it */
    sdfed_error made = {0};
    if (native_make_dirs(dir, &made)) return cannot_open(s, err, made.message);
    int fd = open(c->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    else if (errno != EEXIST)
        return cannot_open(s, err, strerror(errno));
    make_private(c);
    if (connect_to(c->path, SQLITE_OPEN_READWRITE, &c->db) != SQLITE_OK) return cannot_read(s, err);
    sqlite3 *db = c->db;
    c->read_only = sqlite3_db_readonly(db, "main") == 1;
    if (sqlite3_exec(db, schema, NULL, NULL, NULL) != SQLITE_OK) return cannot_read(s, err);
    /* a state folder from before abandoned rounds gets their column */
    sqlite3_stmt *probe;
    if (sqlite3_prepare_v2(db, "SELECT abandoned FROM rounds", -1, &probe, NULL) == SQLITE_OK) {
        sqlite3_finalize(probe);
        return SDFED_OK;
    }
    if (sqlite3_exec(db, "ALTER TABLE rounds ADD COLUMN abandoned INTEGER NOT NULL DEFAULT 0", NULL, NULL, NULL) !=
        SQLITE_OK)
        return cannot_read(s, err);
    return SDFED_OK;
}

static void forget_statements(sqlite_connection *c) {
    for (int i = 0; i < c->n_cached; i++) sqlite3_finalize(c->cached[i]);
    c->n_cached = 0;
}

static void sqlite_close(agg_store *s) {
    sqlite_connection *c = s->connection;
    if (!c) return;
    forget_statements(c);
    sqlite3_close(c->db);
    free(c->folder);
    free(c->path);
    free(c);
    s->connection = NULL;
}

/* Before a write outside a transaction: a database moved or deleted since
 * it was opened is not written (what would be acknowledged would be lost
 * with it: a fault until it is back); one that was read-only is opened
 * again read-write, at most once a second, and the connection swapped
 * once the new one can write (else the write fails read-only, a fault). */
static int sqlite_writable(agg_store *s, sdfed_error *err) {
    sqlite_connection *c = s->connection;
    int moved = 0;
    if (sqlite3_file_control(c->db, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK && moved)
        return agg_store_fail(s, err, c->path, "the database file was moved or deleted; writes wait until it is back");
    int64_t now = native_clock_ms(native_clock_monotonic_ns());
    if (!c->read_only || now < c->reopen_at_ms) return SDFED_OK;
    c->reopen_at_ms = now + 1000;
    make_private(c); /* a -wal or -shm made while it was read-only is read-only too */
    sqlite3 *db = NULL;
    if (connect_to(c->path, SQLITE_OPEN_READWRITE, &db) == SQLITE_OK && sqlite3_db_readonly(db, "main") == 0) {
        forget_statements(c);
        sqlite3_close(c->db);
        c->db = db;
        c->read_only = 0;
    } else {
        sqlite3_close(db);
    }
    return SDFED_OK;
}

/* parameter k is named $k+1 in the SQL */
static void bind(sqlite3_stmt *st, int k, const agg_store_value *v) {
    char name[16];
    snprintf(name, sizeof name, "$%d", k + 1);
    int i = sqlite3_bind_parameter_index(st, name);
    switch (v->type) {
    case STORE_NULL: sqlite3_bind_null(st, i); break;
    case STORE_INT: sqlite3_bind_int64(st, i, v->integer); break;
    case STORE_REAL: sqlite3_bind_double(st, i, v->real); break;
    case STORE_TEXT: sqlite3_bind_text(st, i, v->text, -1, SQLITE_STATIC); break;
    case STORE_BLOB: sqlite3_bind_blob64(st, i, v->blob, v->bytes, SQLITE_STATIC); break;
    }
}

static agg_store_value column(sqlite3_stmt *st, int c) {
    switch (sqlite3_column_type(st, c)) {
    case SQLITE_INTEGER: return (agg_store_value){.type = STORE_INT, .integer = sqlite3_column_int64(st, c)};
    case SQLITE_FLOAT: return (agg_store_value){.type = STORE_REAL, .real = sqlite3_column_double(st, c)};
    case SQLITE_TEXT: return (agg_store_value){.type = STORE_TEXT, .text = (const char *)sqlite3_column_text(st, c)};
    case SQLITE_BLOB: {
        const void *data = sqlite3_column_blob(st, c);
        return (agg_store_value){.type = STORE_BLOB, .blob = data, .bytes = (size_t)sqlite3_column_bytes(st, c)};
    }
    default: return (agg_store_value){.type = STORE_NULL};
    }
}

enum { MAX_COLUMNS = 10 };

static int sqlite_exec(agg_store *s, const char *sql, const agg_store_value *params, int n_params, agg_store_row_fn row,
                       void *ctx, const char *what, sdfed_error *err) {
    sqlite3_stmt *st = prepared(s->connection, sql);
    if (!st) return fail(s, err, what);
    for (int k = 0; k < n_params; k++) bind(st, k, &params[k]);
    int n = sqlite3_column_count(st), step = SQLITE_DONE, rc = SDFED_OK;
    assert(n <= MAX_COLUMNS);
    while (rc == SDFED_OK && (step = sqlite3_step(st)) == SQLITE_ROW) {
        agg_store_value columns[MAX_COLUMNS];
        for (int c = 0; c < n; c++) columns[c] = column(st, c);
        if (row) rc = row(ctx, columns, n, err);
    }
    if (rc == SDFED_OK && step == SQLITE_CONSTRAINT) {
        rc = sdfed_fail(err, SDFED_ERR_ARG, "store: %s: %s", what, sqlite3_errmsg(db_of(s)));
    } else if (rc == SDFED_OK && step != SQLITE_DONE) {
        int primary = step & 0xff; /* read-only, or its -wal cannot be opened: open it again before the next write */
        if (primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN)
            ((sqlite_connection *)s->connection)->read_only = 1;
        rc = fail(s, err, what);
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc;
}

/* a COMMIT that failed (a full disk) may leave the transaction open, and
 * every later BEGIN would fail with it */
static void sqlite_rollback(agg_store *s) {
    if (!sqlite3_get_autocommit(db_of(s))) sqlite3_exec(db_of(s), "ROLLBACK", NULL, NULL, NULL);
}

/* The write-ahead log copied into the database (a passive checkpoint,
 * which a reader in its way only shortens). SQLite's own checkpoints, each
 * a copy with its fsyncs, would otherwise fall every 4 MB of log, ten times
 * in the middle of a 10,000-client round's updates; they now come only
 * past 256 MB of log (wal_autocheckpoint above), as a bound. The log
 * starts again empty after each (journal_size_limit 0): its file holds
 * only what is not in the database yet. */
static void sqlite_between_rounds(agg_store *s) {
    sqlite3_wal_checkpoint_v2(db_of(s), NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
}

/* Rows rewritten (a migration): their old values are not left in the
 * database's free pages or its write-ahead log. */
static int sqlite_compact(agg_store *s, sdfed_error *err) {
    if (sqlite3_exec(db_of(s), "VACUUM", NULL, NULL, NULL) != SQLITE_OK) return fail(s, err, "vacuum");
    if (sqlite3_wal_checkpoint_v2(db_of(s), NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL) != SQLITE_OK)
        return fail(s, err, "checkpoint");
    return SDFED_OK;
}

const agg_store_backend agg_store_sqlite = {.open = sqlite_open,
                                            .close = sqlite_close,
                                            .exec = sqlite_exec,
                                            .begin = "BEGIN IMMEDIATE",
                                            .rollback = sqlite_rollback,
                                            .between_rounds = sqlite_between_rounds,
                                            .writable = sqlite_writable,
                                            .column_count =
                                                "SELECT count(*) FROM pragma_table_info($1) WHERE name = $2",
                                            .compact = sqlite_compact};
