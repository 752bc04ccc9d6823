/* The store's queries over either back end (see store.h): the back end is
 * chosen by where the store is opened, and every query, row and fault is
 * handled here once, through the back end's statement runner
 * (store_backend.h). */
#include "store_backend.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "native/clock.h"
#include "native/crypto.h"

/* Parameters go in, and blobs come back, as the host's bytes: little-endian
 * float32 and int64 on every host the aggregator builds for, so both back
 * ends hold the same bits as the wire does. */
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the store's blobs are little-endian");

int agg_store_is_database(const char *where) {
    return strncmp(where, "postgresql://", 13) == 0 || strncmp(where, "postgres://", 11) == 0;
}

int agg_store_fail(agg_store *s, sdfed_error *err, const char *what, const char *reason) {
    sdfed_error e;
    int rc = sdfed_fail(&e, SDFED_ERR_IO, "store: %s: %s", what, reason);
    if (err) *err = e;
    s->failures++;
    if (!s->failing) {
        s->failing = 1;
        if (s->on_fault) s->on_fault(s->fault_ctx, e.message);
    }
    return rc;
}

/* A write committed: a fault, if any, is over. */
static void committed(agg_store *s) {
    if (!s->failing) return;
    s->failing = 0;
    if (s->on_fault) s->on_fault(s->fault_ctx, NULL);
}

void agg_store_watch_faults(agg_store *s, agg_store_fault_fn fn, void *ctx) {
    s->on_fault = fn;
    s->fault_ctx = ctx;
}

int agg_store_failing(const agg_store *s) { return s->failing; }

int64_t agg_store_failures(const agg_store *s) { return s->failures; }

const char *agg_store_name(const agg_store *s) { return s->name; }

static int migrate_tokens(agg_store *s, sdfed_error *err);

int agg_store_open(agg_store **out, const char *where, sdfed_error *err) {
    *out = NULL;
    agg_store *s = calloc(1, sizeof *s);
    if (!s) return sdfed_fail(err, SDFED_ERR_NOMEM, "store: out of memory");
    s->backend = agg_store_is_database(where) ? &agg_store_postgres : &agg_store_sqlite;
    int rc = s->backend->open(s, where, err);
    if (rc == SDFED_OK) rc = migrate_tokens(s, err);
    if (rc) {
        agg_store_close(s);
        return rc;
    }
    *out = s;
    return SDFED_OK;
}

void agg_store_close(agg_store *s) {
    if (!s) return;
    s->backend->close(s);
    free(s->name);
    free(s);
}

static agg_store_value integer(int64_t v) { return (agg_store_value){.type = STORE_INT, .integer = v}; }
static agg_store_value real(double v) { return (agg_store_value){.type = STORE_REAL, .real = v}; }
static agg_store_value text(const char *v) { return (agg_store_value){.type = STORE_TEXT, .text = v}; }
static agg_store_value blob(const void *v, size_t bytes) {
    return (agg_store_value){.type = STORE_BLOB, .blob = v, .bytes = bytes};
}
static agg_store_value now(void) { return real(native_clock_seconds(native_clock_wall_ns())); }

/* A column as a number, whichever numeric type the back end gave it. */
static int64_t as_integer(const agg_store_value *v) {
    if (v->type == STORE_INT) return v->integer;
    return v->type == STORE_REAL ? (int64_t)v->real : 0;
}
static double as_real(const agg_store_value *v) {
    if (v->type == STORE_REAL) return v->real;
    return v->type == STORE_INT ? (double)v->integer : 0;
}

static int query(agg_store *s, const char *sql, const agg_store_value *params, int n, agg_store_row_fn row, void *ctx,
                 const char *what, sdfed_error *err) {
    return s->backend->exec(s, sql, params, n, row, ctx, what, err);
}

/* Whether the back end may write now (store_backend.h's writable). */
static int ready_to_write(agg_store *s, sdfed_error *err) {
    return s->backend->writable ? s->backend->writable(s, err) : SDFED_OK;
}

/* A write (rows, if any, to row); outside a transaction it has committed
 * when this returns 0. */
static int write_statement(agg_store *s, const char *sql, const agg_store_value *params, int n, agg_store_row_fn row,
                           void *ctx, const char *what, sdfed_error *err) {
    int rc = s->in_transaction ? SDFED_OK : ready_to_write(s, err);
    if (rc) return rc;
    rc = s->backend->exec(s, sql, params, n, row, ctx, what, err);
    if (rc == SDFED_OK && !s->in_transaction) committed(s);
    return rc;
}

/* A write transaction of several statements: begun, then
 * ended by commit_or_abandon with the status of what ran inside it, which
 * it returns (or the commit's own failure); on any failure nothing of it
 * is stored. */
static int transaction_begin(agg_store *s, sdfed_error *err) {
    assert(!s->in_transaction);
    int rc = ready_to_write(s, err);
    if (rc == SDFED_OK) rc = query(s, s->backend->begin, NULL, 0, NULL, NULL, "begin", err);
    s->in_transaction = rc == SDFED_OK;
    return rc;
}

static int commit_or_abandon(agg_store *s, int rc, sdfed_error *err) {
    if (rc == SDFED_OK) rc = query(s, "COMMIT", NULL, 0, NULL, NULL, "commit", err);
    s->in_transaction = 0;
    if (rc) {
        s->backend->rollback(s);
        return rc;
    }
    committed(s);
    return SDFED_OK;
}

static int no_memory(sdfed_error *err) { return sdfed_fail(err, SDFED_ERR_NOMEM, "store: out of memory"); }

static int row_text(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    char **value = ctx;
    free(*value);
    *value = strdup(c[0].type == STORE_TEXT ? c[0].text : "");
    return *value ? SDFED_OK : no_memory(err);
}

static int row_integer(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    *(int64_t *)ctx = as_integer(&c[0]);
    return SDFED_OK;
}

int agg_store_get_meta(agg_store *s, const char *key, char **value, sdfed_error *err) {
    *value = NULL;
    agg_store_value p[] = {text(key)};
    int rc = query(s, "SELECT value FROM meta WHERE key = $1", p, 1, row_text, value, "meta", err);
    if (rc) {
        free(*value);
        *value = NULL;
    }
    return rc;
}

int agg_store_set_meta(agg_store *s, const char *key, const char *value, sdfed_error *err) {
    agg_store_value p[] = {text(key), text(value)};
    return write_statement(
        s, "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value", p, 2,
        NULL, NULL, "meta", err);
}

typedef struct found_client {
    int64_t *id;
    int *shard;
} found_client;

static int row_client(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    found_client *f = ctx;
    *f->id = as_integer(&c[0]);
    *f->shard = c[1].type == STORE_NULL ? -1 : (int)as_integer(&c[1]);
    return SDFED_OK;
}

/* What the store keeps of a token: its SHA-256 (lower-case hex), so that
 * reading the state gives no one a volunteer's identity. */
static int token_hash(const char *token, char hex[65], sdfed_error *err) {
    return native_sha256_hex(token, strlen(token), hex, err);
}

int agg_store_find_client(agg_store *s, const char *token, int64_t *id, int *shard, sdfed_error *err) {
    *id = -1;
    char hash[65];
    int rc = token_hash(token, hash, err);
    if (rc) return rc;
    agg_store_value p[] = {text(hash)};
    found_client f = {.id = id, .shard = shard};
    return query(s, "SELECT id, shard FROM clients WHERE token_sha256 = $1", p, 1, row_client, &f, "find client", err);
}

void agg_store_round_free(agg_store_round *r) {
    free(r->global);
    free(r->participants);
    memset(r, 0, sizeof *r);
}

typedef struct found_round {
    agg_store_round *r;
    int *found;
} found_round;

/* a copy of a blob column (one byte more, so that an empty one is not NULL) */
static void *copy_blob(const agg_store_value *v, size_t *bytes) {
    *bytes = v->type == STORE_BLOB ? v->bytes : 0;
    void *copy = malloc(*bytes + 1);
    if (copy && *bytes) memcpy(copy, v->blob, *bytes);
    return copy;
}

static int row_round(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    found_round *f = ctx;
    agg_store_round *r = f->r;
    *f->found = 1;
    r->round = as_integer(&c[0]);
    size_t global_bytes, participant_bytes;
    r->global = copy_blob(&c[1], &global_bytes);
    r->participants = copy_blob(&c[4], &participant_bytes);
    if (!r->global || !r->participants) return no_memory(err);
    r->n_values = global_bytes / sizeof(float);
    r->n_participants = (int)(participant_bytes / sizeof(int64_t));
    snprintf(r->sha256, sizeof r->sha256, "%s", c[2].type == STORE_TEXT ? c[2].text : "");
    if (c[3].type == STORE_BLOB && c[3].bytes == sizeof r->rng) memcpy(r->rng, c[3].blob, sizeof r->rng);
    r->started = c[5].type != STORE_NULL;
    r->started_at = as_real(&c[5]);
    r->closed = c[6].type != STORE_NULL;
    r->n_updates = (int)as_integer(&c[7]);
    r->abandoned = (int)as_integer(&c[8]);
    return SDFED_OK;
}

static int read_round(agg_store *s, const char *sql, const agg_store_value *params, int n, agg_store_round *r,
                      int *found, sdfed_error *err) {
    memset(r, 0, sizeof *r);
    *found = 0;
    found_round f = {.r = r, .found = found};
    int rc = query(s, sql, params, n, row_round, &f, "round", err);
    if (rc) {
        agg_store_round_free(r);
        *found = 0;
    }
    return rc;
}

#define ROUND_COLUMNS "round, global, sha256, rng, participants, started, closed, n_updates, abandoned"

int agg_store_latest_round(agg_store *s, agg_store_round *r, int *found, sdfed_error *err) {
    return read_round(s, "SELECT " ROUND_COLUMNS " FROM rounds ORDER BY round DESC LIMIT 1", NULL, 0, r, found, err);
}

int agg_store_get_round(agg_store *s, int64_t round, agg_store_round *r, int *found, sdfed_error *err) {
    agg_store_value p[] = {integer(round)};
    return read_round(s, "SELECT " ROUND_COLUMNS " FROM rounds WHERE round = $1", p, 1, r, found, err);
}

int agg_store_add_first_round(agg_store *s, const float *global, size_t n, const char *sha256, sdfed_error *err) {
    agg_store_value p[] = {blob(global, n * sizeof *global), text(sha256)};
    return write_statement(s, "INSERT INTO rounds (round, global, sha256) VALUES (0, $1, $2)", p, 2, NULL, NULL,
                           "first round", err);
}

int agg_store_start_round(agg_store *s, int64_t round, const int64_t *participants, int n, const uint64_t rng[4],
                          sdfed_error *err) {
    agg_store_value p[] = {blob(participants, sizeof *participants * (size_t)n), blob(rng, 4 * sizeof *rng), now(),
                           integer(round)};
    return write_statement(s, "UPDATE rounds SET participants = $1, rng = $2, started = $3 WHERE round = $4", p, 4,
                           NULL, NULL, "start round", err);
}

int agg_store_close_round(agg_store *s, int64_t round, const float *next_global, size_t n, const char *sha256,
                          int n_updates, int abandoned, double aggregation_ms, sdfed_error *err) {
    /* inside a decision its transaction holds these statements; else their own */
    int own = !s->in_transaction, rc = own ? transaction_begin(s, err) : SDFED_OK;
    if (rc) return rc;
    agg_store_value closing[] = {now(), integer(n_updates), real(aggregation_ms), integer(abandoned), integer(round)};
    rc = write_statement(
        s, "UPDATE rounds SET closed = $1, n_updates = $2, aggregation_ms = $3, abandoned = $4 WHERE round = $5",
        closing, 5, NULL, NULL, "close round", err);
    agg_store_value merge[] = {integer(round + 1)};
    if (rc == SDFED_OK)
        rc = write_statement(s, "UPDATE updates SET merged = $1 WHERE merged IS NULL", merge, 1, NULL, NULL,
                             "merge updates", err);
    agg_store_value next[] = {integer(round + 1), blob(next_global, n * sizeof *next_global), text(sha256)};
    if (rc == SDFED_OK)
        rc = write_statement(s, "INSERT INTO rounds (round, global, sha256) VALUES ($1, $2, $3)", next, 3, NULL, NULL,
                             "next round", err);
    if (!own) return rc;
    rc = commit_or_abandon(s, rc, err);
    if (rc == SDFED_OK && s->backend->between_rounds) s->backend->between_rounds(s);
    return rc;
}

/* a statement's rows counted */
static int row_count(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    ++*(int *)ctx;
    return SDFED_OK;
}

/* round $1's row locked for writing, while it is open (started, not closed) */
static const char lock_open_round[] =
    "SELECT round FROM rounds WHERE round = $1 AND started IS NOT NULL AND closed IS NULL FOR UPDATE";

int agg_store_begin_decision(agg_store *s, const agg_store_fence *fence, int64_t round, agg_store_decision what,
                             sdfed_error *err) {
    if (!fence) return SDFED_OK;
    assert(!s->in_transaction);
    int rc = query(s, s->backend->begin, NULL, 0, NULL, NULL, "begin", err);
    if (rc) return rc;
    s->in_transaction = s->deciding = 1;
    int held = 0, lockable = 0;
    agg_store_value f[] = {integer(fence->epoch), integer(fence->node)};
    rc = query(s, "SELECT epoch FROM coordinator WHERE id = 1 AND epoch = $1 AND node = $2 FOR SHARE", f, 2, row_count,
               &held, "fence", err);
    if (rc == SDFED_OK && !held)
        rc = sdfed_fail(err, SDFED_ERR_ARG,
                        "store: the coordinator's epoch %lld was superseded; its decision is refused",
                        (long long)fence->epoch);
    agg_store_value r[] = {integer(round)};
    if (rc == SDFED_OK)
        rc = query(s,
                   what == STORE_START ? "SELECT round FROM rounds WHERE round = $1 AND started IS NULL FOR UPDATE"
                                       : lock_open_round,
                   r, 1, row_count, &lockable, "lock round", err);
    if (rc == SDFED_OK && !lockable)
        rc = sdfed_fail(err, SDFED_ERR_NOT_FOUND, "store: round %lld is not %s", (long long)round,
                        what == STORE_START ? "waiting to start" : "open");
    agg_store_value d[] = {integer(round), text(what == STORE_START ? "start" : "close"), integer(fence->epoch),
                           integer(fence->node)};
    if (rc == SDFED_OK && what != STORE_STAGE)
        rc = write_statement(s, "INSERT INTO decisions (round, kind, epoch, node) VALUES ($1, $2, $3, $4)", d, 4, NULL,
                             NULL, "decision", err);
    if (rc) agg_store_abort_decision(s);
    return rc;
}

int agg_store_commit_decision(agg_store *s, sdfed_error *err) {
    if (!s->deciding) return SDFED_OK;
    int rc = query(s, "NOTIFY sdfed_rounds", NULL, 0, NULL, NULL, "notify", err);
    if (rc == SDFED_OK) rc = write_statement(s, "COMMIT", NULL, 0, NULL, NULL, "commit", err);
    s->in_transaction = s->deciding = 0;
    if (rc) s->backend->rollback(s);
    if (rc == SDFED_OK) committed(s);
    return rc;
}

void agg_store_abort_decision(agg_store *s) {
    if (!s->deciding) return;
    s->backend->rollback(s);
    s->in_transaction = s->deciding = 0;
}

/* Round $1 is open for client $2: started, not closed, and not left by the client. */
#define OPEN_FOR_CLIENT                                                                                                \
    "r.round = $1 AND r.started IS NOT NULL AND r.closed IS NULL AND NOT EXISTS (SELECT 1 FROM departures d WHERE "    \
    "d.round = $1 AND d.client = $2)"

/* An update into any round; into an open round (STORE_OPEN_ROUND) only
 * while its row is started and not closed and its client has not left it,
 * under a share lock of the row. Either inserts nothing for a (round,
 * client) that has an update already, and returns a row when it inserted. */
static const char *const insert_update[] = {
    [STORE_ANY_ROUND] = "INSERT INTO updates (round, client, samples, data, received) VALUES ($1, $2, $3, $4, $5) "
                        "ON CONFLICT DO NOTHING RETURNING round",
    [STORE_OPEN_ROUND] =
        "INSERT INTO updates (round, client, samples, data, received) SELECT $1, $2, $3, $4, $5 FROM rounds r "
        "WHERE " OPEN_FOR_CLIENT " FOR SHARE OF r ON CONFLICT DO NOTHING RETURNING round",
};

int agg_store_add_clients(agg_store *s, const agg_store_new_client *clients, int n, int64_t *ids, sdfed_error *err) {
    int rc = transaction_begin(s, err);
    if (rc) return rc;
    agg_store_value created = now();
    for (int i = 0; i < n && rc == SDFED_OK; i++) {
        const agg_store_new_client *c = &clients[i];
        char hash[65];
        ids[i] = -1;
        if ((rc = token_hash(c->token, hash, err))) break;
        agg_store_value p[] = {text(hash), c->shard >= 0 ? integer(c->shard) : (agg_store_value){.type = STORE_NULL},
                               text(c->kind), created};
        rc = query(s, "INSERT INTO clients (token_sha256, shard, kind, created) VALUES ($1, $2, $3, $4) RETURNING id",
                   p, 4, row_integer, &ids[i], "add client", err);
    }
    return commit_or_abandon(s, rc, err);
}

static const char upsert_presence[] = "INSERT INTO presence (client, node, shard) VALUES ($1, $2, $3) ON CONFLICT "
                                      "(client) DO UPDATE SET node = excluded.node, shard = excluded.shard";

/* a metrics row, only beside its client's update for its round; a row when stored */
static const char insert_metrics[] =
    "INSERT INTO metrics (round, client, accuracy, loss, test_samples, received) SELECT $1, $2, $3, $4, $5, $6 "
    "WHERE EXISTS (SELECT 1 FROM updates WHERE round = $1 AND client = $2) "
    "ON CONFLICT (round, client) DO UPDATE SET accuracy = excluded.accuracy, loss = excluded.loss, "
    "test_samples = excluded.test_samples, received = excluded.received RETURNING round";

/* A secure round's rows are numbered by seq in the order they are stored:
 * the next after the round's highest, counted under the round's row lock
 * that every writer of its rows holds until it commits (STORE_OPEN_ROUND
 * and STORE_STAGE in a cluster; a SQLite database has one writer anyway).
 * So rows commit in seq order, without gaps, and a node that read a
 * round's rows up to some seq never misses one committed later below it,
 * which a sequence or an identity column would allow (their numbers are
 * drawn in one order and committed in another). */
#define NEXT_SECAGG_SEQ "(SELECT coalesce(max(seq) + 1, 0) FROM secagg_messages WHERE round = $1)"
/* $2 client, $3 message: the client's message of the same kind */
#define SAME_KIND "client = $2 AND substr(message, 1, 1) = substr($3, 1, 1)"
/* $5 the message's stage, $6 a leave's message: stored unless that stage
 * has ended, the round holds its client's message of its kind already, or
 * its client left the round */
static const char insert_secagg[] =
    "INSERT INTO secagg_messages (round, seq, client, message, received) SELECT $1, " NEXT_SECAGG_SEQ ", $2, $3, $4 "
    "WHERE NOT EXISTS (SELECT 1 FROM secagg_messages WHERE round = $1 AND client = -1 AND message = $5) "
    "AND NOT EXISTS (SELECT 1 FROM secagg_messages WHERE round = $1 AND (" SAME_KIND
    " OR client = $2 AND message = $6))"
    " RETURNING seq";

static const char upsert_device_sql[] =
    "INSERT INTO devices (client, step_ms, threads, kernels, reported) VALUES ($1, $2, $3, $4, $5) ON CONFLICT "
    "(client) DO UPDATE SET step_ms = excluded.step_ms, threads = excluded.threads, kernels = excluded.kernels, "
    "reported = excluded.reported";

/* the step times as their float64 bytes */
static int upsert_device(agg_store *s, const agg_device_figures *d, agg_store_value received, sdfed_error *err) {
    char kernels[sizeof d->kernels + 1];
    snprintf(kernels, sizeof kernels, "%.*s", (int)sizeof d->kernels, d->kernels);
    agg_store_value p[] = {integer(d->client), blob(d->step_ms, sizeof *d->step_ms * (size_t)d->n_step_ms),
                           integer(d->threads), text(kernels), received};
    return query(s, upsert_device_sql, p, 5, NULL, NULL, "device figures", err);
}

int agg_store_add_batch(agg_store *s, const agg_store_batch *b, agg_store_update_rule rule, agg_store_outcome *outcome,
                        sdfed_error *err) {
    int rc = transaction_begin(s, err);
    if (rc) return rc;
    agg_store_value received = now();
    for (int i = 0; i < b->n_updates && rc == SDFED_OK; i++) {
        const agg_store_new_update *u = &b->updates[i];
        agg_store_value p[] = {integer(u->round), integer(u->client), integer(u->samples),
                               blob(u->values, u->n_values * sizeof *u->values), received};
        int stored = 0, open_for_it = 0;
        rc = query(s, insert_update[rule], p, 5, row_count, &stored, "add update", err);
        /* refused: a duplicate if its round is open for it, else the round is not */
        if (rc == SDFED_OK && !stored && rule == STORE_OPEN_ROUND)
            rc = query(s, "SELECT 1 FROM rounds r WHERE " OPEN_FOR_CLIENT, p, 2, row_count, &open_for_it, "add update",
                       err);
        outcome[i] = STORE_STORED;
        if (!stored) outcome[i] = open_for_it || rule == STORE_ANY_ROUND ? STORE_DUPLICATE : STORE_NOT_OPEN;
        if (rc == SDFED_OK && stored && u->paced) /* it reported: its misses forgotten */
            rc = query(s, "DELETE FROM pace WHERE client = $1", &p[1], 1, NULL, NULL, "pace", err);
    }
    for (int i = 0; i < b->n_metrics && rc == SDFED_OK; i++) {
        const agg_store_new_metrics *m = &b->metrics[i];
        agg_store_value p[] = {integer(m->round), integer(m->client),       real(m->accuracy),
                               real(m->loss),     integer(m->test_samples), received};
        int stored = 0;
        rc = query(s, insert_metrics, p, 6, row_count, &stored, "metrics", err);
        if (b->metrics_outcome) b->metrics_outcome[i] = stored ? STORE_STORED : STORE_NO_UPDATE;
        if (rc == SDFED_OK && m->device.n_step_ms) rc = upsert_device(s, &m->device, received, err);
    }
    int64_t locked = -1; /* STORE_OPEN_ROUND: the round whose row the transaction locked, open or not */
    int open = rule == STORE_ANY_ROUND;
    for (int i = 0; i < b->n_secagg && rc == SDFED_OK; i++) {
        const agg_store_new_secagg *m = &b->secagg[i];
        const unsigned char stage = (unsigned char)m->stage, left = 0;
        agg_store_value p[] = {integer(m->round), integer(m->client), blob(m->message, m->len),
                               received,          blob(&stage, 1),    blob(&left, 1)};
        int stored = 0, duplicate = 0;
        if (rule == STORE_OPEN_ROUND && m->round != locked) {
            open = 0;
            locked = m->round;
            rc = query(s, lock_open_round, p, 1, row_count, &open, "lock round", err);
        }
        if (rc == SDFED_OK && open)
            rc = query(s, insert_secagg, p, 6, row_count, &stored, "secure round's message", err);
        if (rc == SDFED_OK && open && !stored)
            rc = query(s, "SELECT 1 FROM secagg_messages WHERE round = $1 AND " SAME_KIND, p, 3, row_count, &duplicate,
                       "secure round's message", err);
        if (b->secagg_outcome) {
            b->secagg_outcome[i] = STORE_STORED;
            if (!stored) b->secagg_outcome[i] = duplicate ? STORE_DUPLICATE : STORE_NOT_OPEN;
        }
    }
    for (int i = 0; i < b->n_presence && rc == SDFED_OK; i++) {
        const agg_store_new_presence *c = &b->presence[i];
        agg_store_value p[] = {integer(c->client), integer(b->node),
                               c->shard >= 0 ? integer(c->shard) : (agg_store_value){.type = STORE_NULL}};
        rc = query(s, upsert_presence, p, 3, NULL, NULL, "presence", err);
    }
    return commit_or_abandon(s, rc, err);
}

void agg_store_updates_free(agg_store_update *u, int n) {
    for (int i = 0; u && i < n; i++) free(u[i].values);
    free(u);
}

/* Rows read into an array that grows (base/grow.h), item_size bytes each. */
typedef struct row_list {
    void *rows;
    int n, cap;
    size_t item_size;
} row_list;

/* Room for one more row, zeroed and counted; NULL when memory ran out. */
static void *row_list_add(row_list *l) {
    void *grown = sdfed_grow(l->rows, &l->cap, l->n, l->item_size);
    if (!grown) return NULL;
    l->rows = grown;
    void *row = (char *)grown + l->item_size * (size_t)l->n++;
    memset(row, 0, l->item_size);
    return row;
}

static int row_update(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    agg_store_update *u = row_list_add(ctx);
    size_t bytes;
    if (!u || !(u->values = copy_blob(&c[3], &bytes))) return no_memory(err);
    u->round = as_integer(&c[0]);
    u->client = as_integer(&c[1]);
    u->samples = as_integer(&c[2]);
    u->n_values = bytes / sizeof(float);
    return SDFED_OK;
}

static int read_updates(agg_store *s, const char *sql, const agg_store_value *p, int n_params,
                        agg_store_update **updates, int *n, sdfed_error *err) {
    row_list l = {.item_size = sizeof(agg_store_update)};
    int rc = query(s, sql, p, n_params, row_update, &l, "updates", err);
    if (rc) {
        agg_store_updates_free(l.rows, l.n);
        l = (row_list){0};
    }
    *updates = l.rows;
    *n = l.n;
    return rc;
}

int agg_store_pending_updates(agg_store *s, agg_store_update **updates, int *n, sdfed_error *err) {
    return read_updates(s,
                        "SELECT round, client, samples, data FROM updates WHERE merged IS NULL ORDER BY round, client",
                        NULL, 0, updates, n, err);
}

int agg_store_merged_updates(agg_store *s, int64_t round, agg_store_update **updates, int *n, sdfed_error *err) {
    agg_store_value p[] = {integer(round)};
    return read_updates(s, "SELECT round, client, samples, data FROM updates WHERE merged = $1 ORDER BY round, client",
                        p, 1, updates, n, err);
}

static int row_device(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    agg_device_figures *d = row_list_add(ctx);
    if (!d) return no_memory(err);
    d->client = as_integer(&c[0]);
    size_t bytes = c[1].bytes < sizeof d->step_ms ? c[1].bytes : sizeof d->step_ms;
    d->n_step_ms = (int)(bytes / sizeof *d->step_ms);
    if (bytes) memcpy(d->step_ms, c[1].blob, bytes);
    d->threads = (int)as_integer(&c[2]);
    snprintf(d->kernels, sizeof d->kernels, "%s", c[3].text ? c[3].text : "");
    return SDFED_OK;
}

int agg_store_devices(agg_store *s, agg_device_board *out, sdfed_error *err) {
    row_list l = {.item_size = sizeof(agg_device_figures)};
    int rc = query(s, "SELECT client, step_ms, threads, kernels FROM devices ORDER BY client", NULL, 0, row_device, &l,
                   "device figures", err);
    if (rc) {
        free(l.rows);
        return rc;
    }
    agg_devices_free(out);
    *out = (agg_device_board){.figures = l.rows, .n = l.n, .cap = l.cap};
    return SDFED_OK;
}

static int row_pace(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    agg_pace_client *p = row_list_add(ctx);
    if (!p) return no_memory(err);
    p->client = as_integer(&c[0]);
    p->pace = (sdfed_pace){.misses = (int)as_integer(&c[1]), .back_at = as_integer(&c[2])};
    return SDFED_OK;
}

int agg_store_pace(agg_store *s, agg_pace_board *out, sdfed_error *err) {
    row_list l = {.item_size = sizeof(agg_pace_client)};
    int rc = query(s, "SELECT client, misses, back_at FROM pace ORDER BY client", NULL, 0, row_pace, &l, "pace", err);
    if (rc) {
        free(l.rows);
        return rc;
    }
    agg_pace_free(out);
    *out = (agg_pace_board){.clients = l.rows, .n = l.n, .cap = l.cap};
    return SDFED_OK;
}

int agg_store_set_pace(agg_store *s, const agg_pace_client *clients, int n, sdfed_error *err) {
    int rc = transaction_begin(s, err);
    if (rc) return rc;
    for (int i = 0; i < n && rc == SDFED_OK; i++) {
        const agg_pace_client *c = &clients[i];
        agg_store_value p[] = {integer(c->client), integer(c->pace.misses), integer(c->pace.back_at)};
        if (c->pace.misses == 0 && c->pace.back_at == 0)
            rc = query(s, "DELETE FROM pace WHERE client = $1", p, 1, NULL, NULL, "pace", err);
        else
            rc = query(s,
                       "INSERT INTO pace (client, misses, back_at) VALUES ($1, $2, $3) ON CONFLICT (client) DO UPDATE "
                       "SET misses = excluded.misses, back_at = excluded.back_at",
                       p, 3, NULL, NULL, "pace", err);
    }
    return commit_or_abandon(s, rc, err);
}

int agg_store_set_secagg_key(agg_store *s, int64_t round, const unsigned char key[32], sdfed_error *err) {
    agg_store_value p[] = {integer(round), blob(key, 32)};
    return write_statement(s,
                           "INSERT INTO secagg_rounds (round, graph_key) VALUES ($1, $2) ON CONFLICT (round) DO UPDATE "
                           "SET graph_key = excluded.graph_key WHERE NOT EXISTS (SELECT 1 FROM rounds WHERE round = "
                           "excluded.round AND started IS NOT NULL)",
                           p, 2, NULL, NULL, "secure round's key", err);
}

typedef struct key_row {
    unsigned char *key;
    int found;
} key_row;

static int row_key(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    key_row *k = ctx;
    if (c[0].type != STORE_BLOB || c[0].bytes != 32)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "store: a secure round's graph key is not 32 bytes");
    memcpy(k->key, c[0].blob, 32);
    k->found = 1;
    return SDFED_OK;
}

int agg_store_secagg_key(agg_store *s, int64_t round, unsigned char key[32], int *found, sdfed_error *err) {
    agg_store_value p[] = {integer(round)};
    key_row k = {.key = key};
    int rc =
        query(s, "SELECT graph_key FROM secagg_rounds WHERE round = $1", p, 1, row_key, &k, "secure round's key", err);
    *found = rc == SDFED_OK && k.found;
    return rc;
}

void agg_store_secagg_free(agg_store_secagg *rows, int n) {
    for (int i = 0; rows && i < n; i++) free(rows[i].message);
    free(rows);
}

static int row_secagg(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    agg_store_secagg *m = row_list_add(ctx);
    if (!m || !(m->message = copy_blob(&c[2], &m->len))) return no_memory(err);
    m->seq = as_integer(&c[0]);
    m->client = as_integer(&c[1]);
    return SDFED_OK;
}

int agg_store_end_secagg_stage(agg_store *s, int64_t round, int64_t seq, int stage, int *stored, sdfed_error *err) {
    const unsigned char marker = (unsigned char)stage;
    agg_store_value p[] = {integer(round), integer(seq), blob(&marker, 1), now()};
    *stored = 0;
    return write_statement(s,
                           "INSERT INTO secagg_messages (round, seq, client, message, received) SELECT $1, $2, -1, $3, "
                           "$4 WHERE " NEXT_SECAGG_SEQ " = $2 RETURNING seq",
                           p, 4, row_count, stored, "end of a secure round's stage", err);
}

int agg_store_secagg_rows(agg_store *s, int64_t round, int64_t from, agg_store_secagg **rows, int *n,
                          sdfed_error *err) {
    agg_store_value p[] = {integer(round), integer(from)};
    row_list l = {.item_size = sizeof(agg_store_secagg)};
    int rc = query(s, "SELECT seq, client, message FROM secagg_messages WHERE round = $1 AND seq >= $2 ORDER BY seq", p,
                   2, row_secagg, &l, "secure round's messages", err);
    if (rc) {
        agg_store_secagg_free(l.rows, l.n);
        l = (row_list){0};
    }
    *rows = l.rows;
    *n = l.n;
    return rc;
}

typedef struct history {
    int64_t *rounds, *clients;
    double *accuracy;
    int n, cap;
} history;

static int row_history(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    history *h = ctx;
    if (h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 64;
        int64_t *r = realloc(h->rounds, sizeof *r * (size_t)cap);
        if (r) h->rounds = r;
        int64_t *k = realloc(h->clients, sizeof *k * (size_t)cap);
        if (k) h->clients = k;
        double *a = realloc(h->accuracy, sizeof *a * (size_t)cap);
        if (a) h->accuracy = a;
        if (!r || !k || !a) return no_memory(err);
        h->cap = cap;
    }
    h->rounds[h->n] = as_integer(&c[0]);
    h->accuracy[h->n] = as_real(&c[1]);
    h->clients[h->n] = as_integer(&c[2]);
    h->n++;
    return SDFED_OK;
}

int agg_store_accuracy_history(agg_store *s, int64_t **rounds, double **accuracy, int64_t **clients, int *n,
                               sdfed_error *err) {
    history h = {0};
    int rc = query(s,
                   "SELECT m.round, avg(m.accuracy), count(*) FROM metrics m WHERE m.test_samples > 0 AND EXISTS "
                   "(SELECT 1 FROM updates u WHERE u.round = m.round AND u.client = m.client) GROUP BY m.round "
                   "ORDER BY m.round",
                   NULL, 0, row_history, &h, "accuracy history", err);
    if (rc) {
        free(h.rounds);
        free(h.clients);
        free(h.accuracy);
        h = (history){0};
    }
    *rounds = h.rounds;
    *accuracy = h.accuracy;
    *clients = h.clients;
    *n = h.n;
    return rc;
}

/* A row of integer columns into the fields listed, in order (NULL: -1). */
typedef struct integer_fields {
    int64_t *const *fields;
    int n;
} integer_fields;

static int row_integers(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    const integer_fields *f = ctx;
    for (int i = 0; i < n && i < f->n; i++) *f->fields[i] = c[i].type == STORE_NULL ? -1 : as_integer(&c[i]);
    return SDFED_OK;
}

/* A query of one row of n integers into fields (each 0 first). */
static int query_integers(agg_store *s, const char *sql, int64_t *const *fields, int n, const char *what,
                          sdfed_error *err) {
    for (int i = 0; i < n; i++) *fields[i] = 0;
    integer_fields f = {.fields = fields, .n = n};
    return query(s, sql, NULL, 0, row_integers, &f, what, err);
}

int agg_store_federation_counts(agg_store *s, agg_store_counts *c, sdfed_error *err) {
    int64_t *const fields[] = {&c->rounds_closed, &c->rounds_abandoned, &c->updates, &c->clients};
    return query_integers(s,
                          "SELECT (SELECT count(*) FROM rounds WHERE closed IS NOT NULL AND abandoned = 0), (SELECT "
                          "count(*) FROM rounds WHERE abandoned = 1), (SELECT count(*) FROM updates), (SELECT "
                          "count(*) FROM clients)",
                          fields, (int)(sizeof fields / sizeof *fields), "federation counts", err);
}

static int row_round_size(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    int64_t *size = row_list_add(ctx);
    if (!size) return no_memory(err);
    *size = as_integer(&c[0]);
    return SDFED_OK;
}

int agg_store_closed_round_sizes(agg_store *s, int64_t **sizes, int *n, sdfed_error *err) {
    row_list l = {.item_size = sizeof(int64_t)};
    /* participants: the clients' ids as 8-byte integers */
    int rc = query(s,
                   "SELECT length(participants) / 8 FROM rounds WHERE closed IS NOT NULL AND abandoned = 0 "
                   "ORDER BY round",
                   NULL, 0, row_round_size, &l, "closed rounds' clients", err);
    if (rc) {
        free(l.rows);
        l = (row_list){0};
    }
    *sizes = l.rows;
    *n = l.n;
    return rc;
}

static int row_volunteer(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    agg_store_volunteer *v = row_list_add(ctx);
    if (!v) return no_memory(err);
    *v = (agg_store_volunteer){.client = as_integer(&c[0]),
                               .first_seen = as_real(&c[1]),
                               .last_seen = as_real(&c[2]),
                               .rounds = as_integer(&c[3]),
                               .accuracy = c[4].type == STORE_NULL ? NAN : as_real(&c[4])};
    return SDFED_OK;
}

int agg_store_recent_volunteers(agg_store *s, int limit, agg_store_volunteer **volunteers, int *n, sdfed_error *err) {
    row_list l = {.item_size = sizeof(agg_store_volunteer)};
    agg_store_value p[] = {integer(limit)};
    /* the latest time each registered client was heard from, the `limit`
     * latest (a tie: the newer client first); then, for those alone, their
     * updates and their latest round's accuracy (indexed by client; none
     * when that round's metrics had no test image) */
    int rc = query(
        s,
        "WITH seen AS (SELECT client, max(at) AS last FROM (SELECT id AS client, created AS at FROM clients "
        "UNION ALL SELECT client, received FROM updates UNION ALL SELECT client, received FROM metrics) "
        "heard WHERE client IN (SELECT id FROM clients) GROUP BY client ORDER BY last DESC, client DESC LIMIT $1) "
        "SELECT c.id, c.created, seen.last, (SELECT count(*) FROM updates u WHERE u.client = c.id), "
        "(SELECT CASE WHEN m.test_samples > 0 THEN m.accuracy END FROM metrics m WHERE m.client = c.id "
        "ORDER BY m.round DESC LIMIT 1) "
        "FROM seen JOIN clients c ON c.id = seen.client ORDER BY seen.last DESC, c.id DESC",
        p, 1, row_volunteer, &l, "recent volunteers", err);
    if (rc) {
        free(l.rows);
        l = (row_list){0};
    }
    *volunteers = l.rows;
    *n = l.n;
    return rc;
}

/* ------------------------------------------------------------ migrations */

/* A client's token as a state from before hashing held it. */
typedef struct plain_token {
    int64_t id;
    char *token; /* heap */
} plain_token;

static int row_plain_token(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    plain_token *t = row_list_add(ctx);
    if (!t || !(t->token = strdup(c[1].type == STORE_TEXT ? c[1].text : ""))) return no_memory(err);
    t->id = as_integer(&c[0]);
    return SDFED_OK;
}

/* A state written before tokens were hashed (its clients table has a
 * `token` column): in one transaction each token is replaced by its hash
 * and the column renamed; then the old values are compacted away. A state
 * that cannot be written cannot be served this way: an error naming it. */
static int migrate_tokens(agg_store *s, sdfed_error *err) {
    int64_t plain = 0;
    agg_store_value table[] = {text("clients"), text("token")};
    int rc = query(s, s->backend->column_count, table, 2, row_integer, &plain, "schema", err);
    if (rc || plain == 0) return rc;
    const char *what = "hash the stored tokens";
    sdfed_error why = {0};
    row_list l = {.item_size = sizeof(plain_token)};
    rc = transaction_begin(s, &why);
    if (rc == SDFED_OK) rc = query(s, "SELECT id, token FROM clients", NULL, 0, row_plain_token, &l, what, &why);
    if (rc == SDFED_OK)
        rc = query(s, "ALTER TABLE clients RENAME COLUMN token TO token_sha256", NULL, 0, NULL, NULL, what, &why);
    for (int i = 0; i < l.n && rc == SDFED_OK; i++) {
        const plain_token *t = (const plain_token *)l.rows + i;
        char hash[65];
        if ((rc = token_hash(t->token, hash, &why))) break;
        agg_store_value p[] = {text(hash), integer(t->id)};
        rc = query(s, "UPDATE clients SET token_sha256 = $1 WHERE id = $2", p, 2, NULL, NULL, what, &why);
    }
    for (int i = 0; i < l.n; i++) free(((plain_token *)l.rows)[i].token);
    free(l.rows);
    rc = commit_or_abandon(s, rc, &why);
    if (rc == SDFED_OK && s->backend->compact) rc = s->backend->compact(s, &why);
    if (rc)
        return sdfed_fail(err, rc,
                          "store: the state in %s holds its volunteers' tokens in plain text, and hashing them (once) "
                          "needs writing it: %s",
                          s->name, why.message);
    return SDFED_OK;
}

/* ------------------------------------------------ cluster mode (PostgreSQL) */

int agg_store_node_join(agg_store *s, const char *host, int pid, double lease_s, int64_t *node, sdfed_error *err) {
    agg_store_value p[] = {text(host), integer(pid), real(lease_s)};
    *node = -1;
    return write_statement(
        s,
        "INSERT INTO nodes (host, pid, lease_until) VALUES ($1, $2, now() + $3 * interval '1 second') "
        "RETURNING id",
        p, 3, row_integer, node, "join the cluster", err);
}

int agg_store_node_renew(agg_store *s, int64_t node, double lease_s, sdfed_error *err) {
    agg_store_value p[] = {integer(node), real(lease_s)};
    return write_statement(s, "UPDATE nodes SET lease_until = now() + $2 * interval '1 second' WHERE id = $1", p, 2,
                           NULL, NULL, "node lease", err);
}

int agg_store_node_leave(agg_store *s, int64_t node, sdfed_error *err) {
    agg_store_value p[] = {integer(node)};
    int rc = write_statement(s, "DELETE FROM presence WHERE node = $1", p, 1, NULL, NULL, "leave the cluster", err);
    if (rc == SDFED_OK)
        rc = write_statement(s, "UPDATE nodes SET lease_until = now() WHERE id = $1", p, 1, NULL, NULL,
                             "leave the cluster", err);
    if (rc == SDFED_OK)
        rc = write_statement(s, "UPDATE coordinator SET lease_until = '-infinity' WHERE id = 1 AND node = $1", p, 1,
                             NULL, NULL, "leave the cluster", err);
    return rc;
}

int agg_store_coordinator_claim(agg_store *s, int64_t node, double lease_s, int64_t *epoch, sdfed_error *err) {
    agg_store_value p[] = {integer(node), real(lease_s)};
    *epoch = 0;
    return write_statement(s,
                           "UPDATE coordinator SET node = $1, epoch = epoch + 1, lease_until = now() + $2 * interval "
                           "'1 second' WHERE id = (SELECT id FROM coordinator WHERE id = 1 AND lease_until < now() FOR "
                           "UPDATE SKIP LOCKED) AND EXISTS (SELECT 1 FROM nodes WHERE id = $1 AND lease_until > now()) "
                           "RETURNING epoch",
                           p, 2, row_integer, epoch, "claim the coordinator", err);
}

int agg_store_coordinator_renew(agg_store *s, const agg_store_fence *fence, double lease_s, int *held,
                                sdfed_error *err) {
    agg_store_value p[] = {integer(fence->node), integer(fence->epoch), real(lease_s)};
    *held = 0;
    return write_statement(s,
                           "UPDATE coordinator SET lease_until = now() + $3 * interval '1 second' WHERE id = 1 AND "
                           "node = $1 AND epoch = $2 RETURNING epoch",
                           p, 3, row_count, held, "coordinator lease", err);
}

typedef struct coordinator_row {
    int64_t *node, *epoch;
    int *live;
} coordinator_row;

static int row_coordinator(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    coordinator_row *r = ctx;
    *r->node = c[0].type == STORE_NULL ? -1 : as_integer(&c[0]);
    *r->epoch = as_integer(&c[1]);
    *r->live = (int)as_integer(&c[2]);
    return SDFED_OK;
}

int agg_store_coordinator(agg_store *s, int64_t *node, int64_t *epoch, int *live, sdfed_error *err) {
    *node = -1;
    *epoch = 0;
    *live = 0;
    coordinator_row r = {.node = node, .epoch = epoch, .live = live};
    return query(s, "SELECT node, epoch, CASE WHEN lease_until > now() THEN 1 ELSE 0 END FROM coordinator WHERE id = 1",
                 NULL, 0, row_coordinator, &r, "coordinator", err);
}

int agg_store_presence_add(agg_store *s, int64_t client, int shard, int64_t node, sdfed_error *err) {
    agg_store_value p[] = {integer(client), integer(node),
                           shard >= 0 ? integer(shard) : (agg_store_value){.type = STORE_NULL}};
    return write_statement(s, upsert_presence, p, 3, NULL, NULL, "presence", err);
}

int agg_store_presence_remove(agg_store *s, int64_t client, int64_t node, int64_t departed_round, int *removed,
                              sdfed_error *err) {
    agg_store_value p[] = {integer(client), integer(node), integer(departed_round)};
    *removed = 0;
    /* one statement: the departure only if this node still held the client */
    return write_statement(s,
                           "WITH gone AS (DELETE FROM presence WHERE client = $1 AND node = $2 RETURNING client), "
                           "left_round AS (INSERT INTO departures (round, client) SELECT $3, client FROM gone WHERE "
                           "$3 >= 0 ON CONFLICT DO NOTHING) SELECT client FROM gone",
                           p, 3, row_count, removed, "presence", err);
}

typedef struct id_list {
    int64_t *ids;
    int *shards;
    int n, cap;
} id_list;

static int id_list_add(id_list *l, int64_t id, int shard) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        int64_t *ids = realloc(l->ids, sizeof *ids * (size_t)cap);
        if (ids) l->ids = ids;
        int *shards = realloc(l->shards, sizeof *shards * (size_t)cap);
        if (shards) l->shards = shards;
        if (!ids || !shards) return -1;
        l->cap = cap;
    }
    l->ids[l->n] = id;
    l->shards[l->n] = shard;
    l->n++;
    return 0;
}

static int row_present(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    int shard = c[1].type == STORE_NULL ? -1 : (int)as_integer(&c[1]);
    return id_list_add(ctx, as_integer(&c[0]), shard) ? no_memory(err) : SDFED_OK;
}

int agg_store_present_clients(agg_store *s, int64_t **clients, int **shards, int *n, sdfed_error *err) {
    id_list l = {0};
    int rc =
        query(s, "SELECT p.client, p.shard FROM presence p JOIN nodes n ON n.id = p.node WHERE n.lease_until > now()",
              NULL, 0, row_present, &l, "present clients", err);
    if (rc) {
        free(l.ids);
        free(l.shards);
        l = (id_list){0};
    }
    *clients = l.ids;
    *shards = l.shards;
    *n = l.n;
    return rc;
}

typedef struct round_events {
    id_list reported, departed;
} round_events;

static int row_event(void *ctx, const agg_store_value *c, int n, sdfed_error *err) {
    round_events *e = ctx;
    id_list *list = as_integer(&c[1]) ? &e->departed : &e->reported;
    return id_list_add(list, as_integer(&c[0]), 0) ? no_memory(err) : SDFED_OK;
}

int agg_store_round_events(agg_store *s, int64_t round, int64_t **reported, int *n_reported, int64_t **departed,
                           int *n_departed, sdfed_error *err) {
    round_events e = {0};
    agg_store_value p[] = {integer(round)};
    int rc = query(s,
                   "SELECT client, 0 FROM updates WHERE round = $1 UNION ALL SELECT client, 1 FROM departures WHERE "
                   "round = $1",
                   p, 1, row_event, &e, "round events", err);
    free(e.reported.shards);
    free(e.departed.shards);
    if (rc) {
        free(e.reported.ids);
        free(e.departed.ids);
        e = (round_events){0};
    }
    *reported = e.reported.ids;
    *n_reported = e.reported.n;
    *departed = e.departed.ids;
    *n_departed = e.departed.n;
    return rc;
}

int agg_store_cluster_status(agg_store *s, agg_store_cluster *c, sdfed_error *err) {
    int64_t *const fields[] = {&c->nodes_live, &c->clients_present, &c->coordinator_node, &c->coordinator_epoch};
    return query_integers(s,
                          "SELECT (SELECT count(*) FROM nodes WHERE lease_until > now()), (SELECT count(*) FROM "
                          "presence p JOIN nodes n ON n.id = p.node WHERE n.lease_until > now()), (SELECT CASE WHEN "
                          "lease_until > now() THEN node END FROM coordinator WHERE id = 1), (SELECT epoch FROM "
                          "coordinator WHERE id = 1)",
                          fields, (int)(sizeof fields / sizeof *fields), "cluster status", err);
}

int agg_store_listen(agg_store *s, sdfed_error *err) {
    if (!s->backend->listen) return sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "store: %s has no notifications", s->name);
    return s->backend->listen(s, "sdfed_rounds", err);
}

int agg_store_notified(agg_store *s) { return s->backend->notified ? s->backend->notified(s) : 0; }
