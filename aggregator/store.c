/* The aggregator's SQLite state (see store.h). */
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sqlite3.h>

#include "native/clock.h"

struct store {
    sqlite3 *db;
    store_fault_fn on_fault;
    void *fault_ctx;
    int failing;
    int64_t failures;
};

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS clients (id INTEGER PRIMARY KEY, token TEXT UNIQUE NOT NULL, shard INTEGER,"
    "  kind TEXT, created REAL NOT NULL);"
    "CREATE TABLE IF NOT EXISTS rounds (round INTEGER PRIMARY KEY, global BLOB NOT NULL, sha256 TEXT NOT NULL,"
    "  rng BLOB, participants BLOB, started REAL, closed REAL, n_updates INTEGER, aggregation_ms REAL,"
    "  abandoned INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS updates (round INTEGER NOT NULL, client INTEGER NOT NULL, samples INTEGER NOT NULL,"
    "  data BLOB NOT NULL, received REAL NOT NULL, merged INTEGER, PRIMARY KEY (round, client));"
    /* the open round's updates, found without scanning every past round's */
    "CREATE INDEX IF NOT EXISTS updates_pending ON updates (round, client) WHERE merged IS NULL;"
    "CREATE TABLE IF NOT EXISTS metrics (round INTEGER NOT NULL, client INTEGER NOT NULL, accuracy REAL,"
    "  loss REAL, test_samples INTEGER, received REAL NOT NULL, PRIMARY KEY (round, client));";

/* Every failed operation comes here; the first one begins a fault. */
static int db_fail(store *s, sdfed_error *err, const char *what) {
    sdfed_error e;
    int rc = sdfed_fail(&e, SDFED_ERR_IO, "store: %s: %s", what, sqlite3_errmsg(s->db));
    if (err) *err = e;
    s->failures++;
    if (!s->failing) {
        s->failing = 1;
        if (s->on_fault) s->on_fault(s->fault_ctx, e.message);
    }
    return rc;
}

/* A write reached the disk: a fault, if any, is over. */
static void committed(store *s) {
    if (!s->failing) return;
    s->failing = 0;
    if (s->on_fault) s->on_fault(s->fault_ctx, NULL);
}

void store_watch_faults(store *s, store_fault_fn fn, void *ctx) {
    s->on_fault = fn;
    s->fault_ctx = ctx;
}

int store_failing(const store *s) { return s->failing; }

int64_t store_failures(const store *s) { return s->failures; }

int store_open(store **out, const char *dir, sdfed_error *err) {
    *out = NULL;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return sdfed_fail(err, SDFED_ERR_IO, "%s: %s", dir, strerror(errno));
    char path[4096];
    snprintf(path, sizeof path, "%s/aggregator.sqlite", dir);
    store *s = calloc(1, sizeof *s);
    if (!s) return sdfed_fail(err, SDFED_ERR_NOMEM, "store: out of memory");
    int rc = SDFED_OK;
    if (sqlite3_open(path, &s->db) != SQLITE_OK) rc = db_fail(s, err, path);
    /* WAL with full synchronisation: a commit is on disk when it returns */
    if (rc == SDFED_OK &&
        sqlite3_exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;", NULL, NULL,
                     NULL) != SQLITE_OK)
        rc = db_fail(s, err, "pragmas");
    if (rc == SDFED_OK) sqlite3_busy_timeout(s->db, 5000);
    if (rc == SDFED_OK && sqlite3_exec(s->db, schema, NULL, NULL, NULL) != SQLITE_OK) rc = db_fail(s, err, "schema");
    /* a state folder from before abandoned rounds gets their column */
    sqlite3_stmt *probe;
    if (rc == SDFED_OK && sqlite3_prepare_v2(s->db, "SELECT abandoned FROM rounds", -1, &probe, NULL) == SQLITE_OK)
        sqlite3_finalize(probe);
    else if (rc == SDFED_OK && sqlite3_exec(s->db, "ALTER TABLE rounds ADD COLUMN abandoned INTEGER NOT NULL DEFAULT 0",
                                            NULL, NULL, NULL) != SQLITE_OK)
        rc = db_fail(s, err, "schema (abandoned rounds)");
    if (rc) {
        store_close(s);
        return rc;
    }
    *out = s;
    return SDFED_OK;
}

void store_close(store *s) {
    if (!s) return;
    sqlite3_close(s->db);
    free(s);
}

static int prepare(store *s, const char *sql, sqlite3_stmt **st, sdfed_error *err) {
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK) return db_fail(s, err, "prepare");
    return SDFED_OK;
}

/* Runs a prepared write to completion and finalises it. */
static int finish(store *s, sqlite3_stmt *st, sdfed_error *err, const char *what) {
    int step = sqlite3_step(st);
    int rc = step == SQLITE_DONE || step == SQLITE_ROW ? SDFED_OK : db_fail(s, err, what);
    sqlite3_finalize(st);
    if (rc == SDFED_OK && sqlite3_get_autocommit(s->db)) committed(s); /* no transaction around it: it is on disk */
    return rc;
}

int store_get_meta(store *s, const char *key, char **value, sdfed_error *err) {
    *value = NULL;
    sqlite3_stmt *st;
    int rc = prepare(s, "SELECT value FROM meta WHERE key = ?", &st, err);
    if (rc) return rc;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(st, 0);
        *value = strdup(v ? v : "");
        if (!*value) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "store: out of memory");
    } else if (step != SQLITE_DONE) {
        rc = db_fail(s, err, "meta");
    }
    sqlite3_finalize(st);
    return rc;
}

int store_set_meta(store *s, const char *key, const char *value, sdfed_error *err) {
    sqlite3_stmt *st;
    int rc = prepare(s, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", &st, err);
    if (rc) return rc;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
    return finish(s, st, err, "meta");
}

int store_add_client(store *s, const char *token, int shard, const char *kind, int64_t *id, sdfed_error *err) {
    sqlite3_stmt *st;
    int rc = prepare(s, "INSERT INTO clients (token, shard, kind, created) VALUES (?, ?, ?, ?)", &st, err);
    if (rc) return rc;
    sqlite3_bind_text(st, 1, token, -1, SQLITE_STATIC);
    if (shard >= 0)
        sqlite3_bind_int(st, 2, shard);
    else
        sqlite3_bind_null(st, 2);
    sqlite3_bind_text(st, 3, kind, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 4, native_clock_seconds(native_clock_wall_ns()));
    rc = finish(s, st, err, "add client");
    if (rc == SDFED_OK) *id = sqlite3_last_insert_rowid(s->db);
    return rc;
}

int store_find_client(store *s, const char *token, int64_t *id, int *shard, sdfed_error *err) {
    *id = -1;
    sqlite3_stmt *st;
    int rc = prepare(s, "SELECT id, shard FROM clients WHERE token = ?", &st, err);
    if (rc) return rc;
    sqlite3_bind_text(st, 1, token, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        *shard = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 1);
    } else if (step != SQLITE_DONE) {
        rc = db_fail(s, err, "find client");
    }
    sqlite3_finalize(st);
    return rc;
}

int store_count_clients(store *s, int64_t *n, sdfed_error *err) {
    sqlite3_stmt *st;
    int rc = prepare(s, "SELECT count(*) FROM clients", &st, err);
    if (rc) return rc;
    *n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return SDFED_OK;
}

void store_round_free(store_round *r) {
    free(r->global);
    free(r->participants);
    memset(r, 0, sizeof *r);
}

static int read_round(store *s, sqlite3_stmt *st, store_round *r, int *found, sdfed_error *err) {
    memset(r, 0, sizeof *r);
    *found = 0;
    int step = sqlite3_step(st), rc = SDFED_OK;
    if (step == SQLITE_ROW) {
        *found = 1;
        r->round = sqlite3_column_int64(st, 0);
        int bytes = sqlite3_column_bytes(st, 1);
        r->n_values = (size_t)bytes / sizeof(float);
        r->global = malloc((size_t)bytes + 1);
        const char *sha = (const char *)sqlite3_column_text(st, 2);
        snprintf(r->sha256, sizeof r->sha256, "%s", sha ? sha : "");
        r->started = sqlite3_column_type(st, 5) != SQLITE_NULL;
        r->closed = sqlite3_column_type(st, 6) != SQLITE_NULL;
        int rng_bytes = sqlite3_column_bytes(st, 3), part_bytes = sqlite3_column_bytes(st, 4);
        r->n_participants = part_bytes / (int)sizeof(int64_t);
        r->participants = malloc((size_t)part_bytes + 1);
        if (!r->global || !r->participants) {
            rc = sdfed_fail(err, SDFED_ERR_NOMEM, "store: out of memory");
        } else {
            memcpy(r->global, sqlite3_column_blob(st, 1), (size_t)bytes);
            if (rng_bytes == (int)sizeof r->rng) memcpy(r->rng, sqlite3_column_blob(st, 3), sizeof r->rng);
            if (part_bytes) memcpy(r->participants, sqlite3_column_blob(st, 4), (size_t)part_bytes);
        }
    } else if (step != SQLITE_DONE) {
        rc = db_fail(s, err, "round");
    }
    sqlite3_finalize(st);
    if (rc) store_round_free(r);
    return rc;
}

#define ROUND_COLUMNS "round, global, sha256, rng, participants, started, closed"

int store_latest_round(store *s, store_round *r, int *found, sdfed_error *err) {
    sqlite3_stmt *st;
    int rc = prepare(s, "SELECT " ROUND_COLUMNS " FROM rounds ORDER BY round DESC LIMIT 1", &st, err);
    return rc ? rc : read_round(s, st, r, found, err);
}

int store_get_round(store *s, int64_t round, store_round *r, int *found, sdfed_error *err) {
    sqlite3_stmt *st;
    int rc = prepare(s, "SELECT " ROUND_COLUMNS " FROM rounds WHERE round = ?", &st, err);
    if (rc) return rc;
    sqlite3_bind_int64(st, 1, round);
    return read_round(s, st, r, found, err);
}

int store_add_first_round(store *s, const float *global, size_t n, const char *sha256, sdfed_error *err) {
    sqlite3_stmt *st;
    int rc = prepare(s, "INSERT INTO rounds (round, global, sha256) VALUES (0, ?, ?)", &st, err);
    if (rc) return rc;
    sqlite3_bind_blob(st, 1, global, (int)(n * sizeof(float)), SQLITE_STATIC);
    sqlite3_bind_text(st, 2, sha256, -1, SQLITE_STATIC);
    return finish(s, st, err, "first round");
}

int store_start_round(store *s, int64_t round, const int64_t *participants, int n, const uint64_t rng[4],
                      sdfed_error *err) {
    sqlite3_stmt *st;
    int rc = prepare(s, "UPDATE rounds SET participants = ?, rng = ?, started = ? WHERE round = ?", &st, err);
    if (rc) return rc;
    sqlite3_bind_blob(st, 1, participants, (int)(sizeof *participants * (size_t)n), SQLITE_STATIC);
    sqlite3_bind_blob(st, 2, rng, (int)(4 * sizeof *rng), SQLITE_STATIC);
    sqlite3_bind_double(st, 3, native_clock_seconds(native_clock_wall_ns()));
    sqlite3_bind_int64(st, 4, round);
    return finish(s, st, err, "start round");
}

int store_close_round(store *s, int64_t round, const float *next_global, size_t n, const char *sha256, int n_updates,
                      int abandoned, double aggregation_ms, sdfed_error *err) {
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) return db_fail(s, err, "begin");
    sqlite3_stmt *st;
    int rc = prepare(
        s, "UPDATE rounds SET closed = ?, n_updates = ?, aggregation_ms = ?, abandoned = ? WHERE round = ?", &st, err);
    if (rc == SDFED_OK) {
        sqlite3_bind_double(st, 1, native_clock_seconds(native_clock_wall_ns()));
        sqlite3_bind_int(st, 2, n_updates);
        sqlite3_bind_double(st, 3, aggregation_ms);
        sqlite3_bind_int(st, 4, abandoned);
        sqlite3_bind_int64(st, 5, round);
        rc = finish(s, st, err, "close round");
    }
    if (rc == SDFED_OK &&
        (rc = prepare(s, "UPDATE updates SET merged = ? WHERE merged IS NULL", &st, err)) == SDFED_OK) {
        sqlite3_bind_int64(st, 1, round + 1);
        rc = finish(s, st, err, "merge updates");
    }
    if (rc == SDFED_OK &&
        (rc = prepare(s, "INSERT INTO rounds (round, global, sha256) VALUES (?, ?, ?)", &st, err)) == SDFED_OK) {
        sqlite3_bind_int64(st, 1, round + 1);
        sqlite3_bind_blob(st, 2, next_global, (int)(n * sizeof(float)), SQLITE_STATIC);
        sqlite3_bind_text(st, 3, sha256, -1, SQLITE_STATIC);
        rc = finish(s, st, err, "next round");
    }
    if (sqlite3_exec(s->db, rc ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL) != SQLITE_OK && rc == SDFED_OK)
        rc = db_fail(s, err, "commit");
    /* a COMMIT that failed (a full disk) may leave the transaction open,
     * and every later BEGIN would fail with it */
    if (rc && !sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    if (rc == SDFED_OK) committed(s);
    return rc;
}

int store_add_update(store *s, int64_t round, int64_t client, int64_t samples, const float *values, size_t n,
                     sdfed_error *err) {
    sqlite3_stmt *st;
    int rc =
        prepare(s, "INSERT INTO updates (round, client, samples, data, received) VALUES (?, ?, ?, ?, ?)", &st, err);
    if (rc) return rc;
    sqlite3_bind_int64(st, 1, round);
    sqlite3_bind_int64(st, 2, client);
    sqlite3_bind_int64(st, 3, samples);
    sqlite3_bind_blob(st, 4, values, (int)(n * sizeof(float)), SQLITE_STATIC);
    sqlite3_bind_double(st, 5, native_clock_seconds(native_clock_wall_ns()));
    int step = sqlite3_step(st);
    rc = step == SQLITE_DONE         ? SDFED_OK
         : step == SQLITE_CONSTRAINT ? sdfed_fail(err, SDFED_ERR_ARG,
                                                  "client %lld's update for round %lld is "
                                                  "already stored",
                                                  (long long)client, (long long)round)
                                     : db_fail(s, err, "add update");
    sqlite3_finalize(st);
    if (rc == SDFED_OK) committed(s);
    return rc;
}

void store_updates_free(store_update *u, int n) {
    for (int i = 0; u && i < n; i++) free(u[i].values);
    free(u);
}

int store_pending_updates(store *s, store_update **updates, int *n, sdfed_error *err) {
    *updates = NULL;
    *n = 0;
    sqlite3_stmt *st;
    int rc = prepare(s, "SELECT round, client, samples, data FROM updates WHERE merged IS NULL ORDER BY round, client",
                     &st, err);
    if (rc) return rc;
    int cap = 0, step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            store_update *grown = realloc(*updates, sizeof *grown * (size_t)cap);
            if (!grown) {
                rc = sdfed_fail(err, SDFED_ERR_NOMEM, "store: out of memory");
                break;
            }
            *updates = grown;
        }
        store_update *u = &(*updates)[*n];
        int bytes = sqlite3_column_bytes(st, 3);
        u->round = sqlite3_column_int64(st, 0);
        u->client = sqlite3_column_int64(st, 1);
        u->samples = sqlite3_column_int64(st, 2);
        u->n_values = (size_t)bytes / sizeof(float);
        if (!(u->values = malloc((size_t)bytes + 1))) {
            rc = sdfed_fail(err, SDFED_ERR_NOMEM, "store: out of memory");
            break;
        }
        memcpy(u->values, sqlite3_column_blob(st, 3), (size_t)bytes);
        (*n)++;
    }
    if (rc == SDFED_OK && step != SQLITE_DONE) rc = db_fail(s, err, "updates");
    sqlite3_finalize(st);
    if (rc) {
        store_updates_free(*updates, *n);
        *updates = NULL;
        *n = 0;
    }
    return rc;
}

int store_add_metrics(store *s, int64_t round, int64_t client, double accuracy, double loss, int64_t test_samples,
                      sdfed_error *err) {
    sqlite3_stmt *st;
    int rc = prepare(s,
                     "INSERT OR REPLACE INTO metrics (round, client, accuracy, loss, test_samples, received) "
                     "VALUES (?, ?, ?, ?, ?, ?)",
                     &st, err);
    if (rc) return rc;
    sqlite3_bind_int64(st, 1, round);
    sqlite3_bind_int64(st, 2, client);
    sqlite3_bind_double(st, 3, accuracy);
    sqlite3_bind_double(st, 4, loss);
    sqlite3_bind_int64(st, 5, test_samples);
    sqlite3_bind_double(st, 6, native_clock_seconds(native_clock_wall_ns()));
    return finish(s, st, err, "metrics");
}

int store_accuracy_history(store *s, int64_t **rounds, double **accuracy, int64_t **clients, int *n, sdfed_error *err) {
    *rounds = NULL, *accuracy = NULL, *clients = NULL, *n = 0;
    sqlite3_stmt *st;
    int rc = prepare(s, "SELECT round, avg(accuracy), count(*) FROM metrics GROUP BY round ORDER BY round", &st, err);
    if (rc) return rc;
    int cap = 0, step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            int64_t *r = realloc(*rounds, sizeof *r * (size_t)cap), *c = realloc(*clients, sizeof *c * (size_t)cap);
            double *a = realloc(*accuracy, sizeof *a * (size_t)cap);
            if (r) *rounds = r;
            if (c) *clients = c;
            if (a) *accuracy = a;
            if (!r || !c || !a) {
                rc = sdfed_fail(err, SDFED_ERR_NOMEM, "store: out of memory");
                break;
            }
        }
        (*rounds)[*n] = sqlite3_column_int64(st, 0);
        (*accuracy)[*n] = sqlite3_column_double(st, 1);
        (*clients)[*n] = sqlite3_column_int64(st, 2);
        (*n)++;
    }
    sqlite3_finalize(st);
    return rc;
}
