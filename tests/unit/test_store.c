/* The aggregator's store (aggregator/store.h), the same checks on both back
 * ends: a SQLite state folder and a PostgreSQL database. Opening, closing
 * and opening again keeps everything; meta; clients and tokens; round rows
 * (the first, started with participants and sampler state, closed with and
 * without abandonment, the next row added atomically); updates (added, a
 * duplicate refused, pending ones in order, merged by a close); metrics
 * (stored only beside their client's update for the round) and the
 * accuracy history; group commit (a batch whose commit fails stores
 * none of its updates, the same batch again stores them together, each
 * with its outcome); device figures and pace steering's rows (the
 * latest kept, a stored update marked paced ending its client's pace
 * row); every float
 * read back bit for bit. PostgreSQL only:
 * errors that name the URI without its password (bad password, missing
 * database, no server, an unreadable URI), and a server stopped and started
 * again under an open store (one fault, reported once, cleared by the next
 * write); and the cluster mode's tables through two connections, two
 * nodes: the coordinator row claimed once at a time, a superseded epoch's
 * decisions refused and changing nothing, a round started once and closed
 * once (a second close refused, by the decision and by the closed row's
 * trigger), updates refused once their round closed or their client left
 * it, presence that counts only while its node's lease holds, and a
 * departure recorded only by the node that held the client. SQLite only:
 * the state folder 0700 and its files 0600, a new state and an older one
 * alike; no token in its files, only its hash; a state from before tokens
 * were hashed migrated (and PostgreSQL's too); a database moved away under
 * an open store not written (one fault) until it is back; a folder that
 * cannot be made refused, naming it.
 * tests/unit/test_store.sh starts the server and runs this.
 *   test_store WORK_DIR SOCKET_DIR PASSWORD PAUSE_COMMAND RESUME_COMMAND SQL_COMMAND
 * (user sdfed; the databases store_test and cluster_test exist and are
 * empty; SQL_COMMAND 'SQL' runs SQL on store_test) */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sqlite3.h>

#include "native/crypto.h"
#include "check.h"
#include "read_file.h"
#include "store.h"

enum { N_VALUES = 70 };

/* floats of every kind, as bit patterns: signed zeros, subnormals, NaNs
 * with payloads, infinities, extremes, then arbitrary bits */
static void values_of(uint32_t seed, float *out) {
    static const uint32_t special[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x7fc00001u,
                                       0xffa00000u, 0x7f800000u, 0xff800000u, 0x7f7fffffu, 0x3f800000u};
    uint32_t x = seed;
    for (int i = 0; i < N_VALUES; i++) {
        x = x * 1664525u + 1013904223u;
        uint32_t bits = i < (int)(sizeof special / sizeof *special) ? special[i] : x;
        memcpy(&out[i], &bits, sizeof bits);
    }
}

static int same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof *a) == 0; }

typedef struct faults {
    int begun, cleared;
    char first[512];
} faults;

static void on_fault(void *ctx, const char *message) {
    faults *f = ctx;
    if (message) {
        f->begun++;
        snprintf(f->first, sizeof f->first, "%s", message);
    } else {
        f->cleared++;
    }
}

static agg_store *open_store(const char *where, const char *label) {
    agg_store *s = NULL;
    sdfed_error err = {0};
    CHECK(agg_store_open(&s, where, &err) == SDFED_OK, "%s: open: %s", label, err.message);
    return s;
}

static void check_round(agg_store *s, const char *label, int64_t round, const float *global, const char *sha,
                        int started, int closed) {
    agg_store_round r;
    int found;
    sdfed_error err = {0};
    CHECK(agg_store_get_round(s, round, &r, &found, &err) == SDFED_OK && found, "%s: round %lld: %s", label,
          (long long)round, err.message);
    if (!found) return;
    CHECK(r.round == round && r.n_values == N_VALUES && same_bits(r.global, global, N_VALUES),
          "%s: round %lld's parameters are not the bits stored", label, (long long)round);
    CHECK(strcmp(r.sha256, sha) == 0, "%s: round %lld's sha256 %s", label, (long long)round, r.sha256);
    CHECK(r.started == started && r.closed == closed, "%s: round %lld started %d closed %d, not %d %d", label,
          (long long)round, r.started, r.closed, started, closed);
    agg_store_round_free(&r);
}

/* the pending updates are exactly want[] (round, client, samples, values seed), in that order */
typedef struct want_update {
    int64_t round, client, samples;
    uint32_t seed;
} want_update;

static void check_pending(agg_store *s, const char *label, const want_update *want, int n_want) {
    agg_store_update *u;
    int n;
    sdfed_error err = {0};
    CHECK(agg_store_pending_updates(s, &u, &n, &err) == SDFED_OK, "%s: pending: %s", label, err.message);
    CHECK(n == n_want, "%s: %d updates pending, not %d", label, n, n_want);
    for (int i = 0; i < n && i < n_want; i++) {
        float values[N_VALUES];
        values_of(want[i].seed, values);
        CHECK(u[i].round == want[i].round && u[i].client == want[i].client && u[i].samples == want[i].samples,
              "%s: pending %d is (%lld, %lld, %lld), not (%lld, %lld, %lld)", label, i, (long long)u[i].round,
              (long long)u[i].client, (long long)u[i].samples, (long long)want[i].round, (long long)want[i].client,
              (long long)want[i].samples);
        CHECK(u[i].n_values == N_VALUES && same_bits(u[i].values, values, N_VALUES),
              "%s: pending %d's values are not the bits stored", label, i);
    }
    agg_store_updates_free(u, n);
}

/* one update in a batch of its own: its outcome, -1 when the batch did not commit */
static int add_one(agg_store *s, int64_t round, int64_t client, int64_t samples, const float *values,
                   agg_store_update_rule rule, sdfed_error *err) {
    agg_store_new_update u = {
        .round = round, .client = client, .samples = samples, .values = values, .n_values = N_VALUES};
    agg_store_outcome outcome;
    agg_store_batch b = {.updates = &u, .n_updates = 1};
    return agg_store_add_batch(s, &b, rule, &outcome, err) == SDFED_OK ? (int)outcome : -1;
}

/* one metrics row in a batch of its own: its outcome, -1 when the batch did not commit */
static int add_metrics(agg_store *s, int64_t round, int64_t client, double accuracy, double loss, int64_t test_samples,
                       sdfed_error *err) {
    agg_store_new_metrics m = {
        .round = round, .client = client, .accuracy = accuracy, .loss = loss, .test_samples = test_samples};
    agg_store_outcome outcome;
    agg_store_batch b = {.metrics = &m, .n_metrics = 1, .metrics_outcome = &outcome};
    return agg_store_add_batch(s, &b, STORE_ANY_ROUND, NULL, err) == SDFED_OK ? (int)outcome : -1;
}

static void add_update(agg_store *s, const char *label, const want_update *w) {
    float values[N_VALUES];
    values_of(w->seed, values);
    sdfed_error err = {0};
    CHECK(add_one(s, w->round, w->client, w->samples, values, STORE_ANY_ROUND, &err) == STORE_STORED,
          "%s: update (%lld, %lld): %s", label, (long long)w->round, (long long)w->client, err.message);
}

/* rounds 0 and 1's metrics, and with want == 3 round 2's (check_batches') */
static void check_history(agg_store *s, const char *label, int want) {
    int64_t *rounds, *clients;
    double *accuracy;
    int n;
    sdfed_error err = {0};
    CHECK(agg_store_accuracy_history(s, &rounds, &accuracy, &clients, &n, &err) == SDFED_OK, "%s: history: %s", label,
          err.message);
    CHECK(n == want, "%s: %d rounds in the history, not %d", label, n, want);
    if (n == want) {
        CHECK(rounds[0] == 0 && clients[0] == 2 && accuracy[0] == (0.25 + 0.75) / 2, "%s: round 0: %lld %lld %.17g",
              label, (long long)rounds[0], (long long)clients[0], accuracy[0]);
        CHECK(rounds[1] == 1 && clients[1] == 1 && accuracy[1] == 0.125, "%s: round 1: %lld %lld %.17g", label,
              (long long)rounds[1], (long long)clients[1], accuracy[1]);
        CHECK(want < 3 || (rounds[2] == 2 && clients[2] == 1 && accuracy[2] == 0.5), "%s: round 2: %lld %lld %.17g",
              label, (long long)rounds[2], (long long)clients[2], accuracy[2]);
    }
    free(rounds);
    free(clients);
    free(accuracy);
}

/* the federation's counts (agg_store_federation_counts) */
static void check_counts(agg_store *s, const char *label, int64_t closed, int64_t abandoned, int64_t updates,
                         int64_t clients) {
    agg_store_counts c;
    sdfed_error err = {0};
    CHECK(agg_store_federation_counts(s, &c, &err) == SDFED_OK && c.rounds_closed == closed &&
              c.rounds_abandoned == abandoned && c.updates == updates && c.clients == clients,
          "%s: counts: %lld closed, %lld abandoned, %lld updates, %lld clients (want %lld %lld %lld %lld) %s", label,
          (long long)c.rounds_closed, (long long)c.rounds_abandoned, (long long)c.updates, (long long)c.clients,
          (long long)closed, (long long)abandoned, (long long)updates, (long long)clients, err.message);
}

/* the clients each closed round started with (agg_store_closed_round_sizes): the abandoned ones left out */
static void check_round_sizes(agg_store *s, const char *label, const int64_t *want, int n_want) {
    sdfed_error err = {0};
    int64_t *sizes;
    int n;
    CHECK(agg_store_closed_round_sizes(s, &sizes, &n, &err) == SDFED_OK && n == n_want,
          "%s: %d closed rounds' sizes %s", label, n, err.message);
    for (int i = 0; i < n && i < n_want; i++)
        CHECK(sizes[i] == want[i], "%s: closed round %d started with %lld, not %lld", label, i, (long long)sizes[i],
              (long long)want[i]);
    free(sizes);
}

/* the volunteers last heard from (agg_store_recent_volunteers), at most limit:
 * want their clients in order, each one's updates and last accuracy (NAN:
 * none) */
typedef struct want_volunteer {
    int64_t client, rounds;
    double accuracy;
} want_volunteer;

static void check_volunteers(agg_store *s, const char *label, int limit, const want_volunteer *want, int n_want) {
    agg_store_volunteer *v;
    int n;
    sdfed_error err = {0};
    CHECK(agg_store_recent_volunteers(s, limit, &v, &n, &err) == SDFED_OK, "%s: volunteers: %s", label, err.message);
    CHECK(n == n_want, "%s: %d volunteers (at most %d), not %d", label, n, limit, n_want);
    for (int i = 0; i < n && i < n_want; i++) {
        int accuracy = isnan(want[i].accuracy) ? isnan(v[i].accuracy) : v[i].accuracy == want[i].accuracy;
        CHECK(v[i].client == want[i].client && v[i].rounds == want[i].rounds && accuracy && v[i].first_seen > 1e9 &&
                  v[i].last_seen >= v[i].first_seen && (i == 0 || v[i].last_seen <= v[i - 1].last_seen),
              "%s: volunteer %d: client %lld (want %lld), %lld rounds (%lld), accuracy %g (%g), seen %.6f..%.6f", label,
              i, (long long)v[i].client, (long long)want[i].client, (long long)v[i].rounds, (long long)want[i].rounds,
              v[i].accuracy, want[i].accuracy, v[i].first_seen, v[i].last_seen);
    }
    free(v);
}

static const char sha0[] = "0000000000000000000000000000000000000000000000000000000000000000",
                  sha1[] = "1111111111111111111111111111111111111111111111111111111111111111",
                  sha2[] = "2222222222222222222222222222222222222222222222222222222222222222";

/* what the first session leaves, checked again after reopening */
static void check_kept(agg_store *s, const char *label, int64_t ids[3]) {
    sdfed_error err = {0};
    char *value = NULL;
    CHECK(agg_store_get_meta(s, "task_sha256", &value, &err) == SDFED_OK && value && strcmp(value, "second") == 0,
          "%s: meta task_sha256 is %s", label, value ? value : "(absent)");
    free(value);
    int64_t id;
    int shard;
    /* round 0 closed, 1 abandoned; 7 updates (one of a client never registered), 3 clients */
    check_counts(s, label, 1, 1, 7, 3);
    const int64_t closed_sizes[] = {3}; /* round 0 started with 3 clients; round 1 (2) was abandoned */
    check_round_sizes(s, label, closed_sizes, 1);
    /* heard from last: a's and b's metrics, in the order they came (a's last), then c's update */
    const want_volunteer heard[] = {{.client = ids[0], .rounds = 3, .accuracy = 0.125},
                                    {.client = ids[1], .rounds = 2, .accuracy = 0.75},
                                    {.client = ids[2], .rounds = 1, .accuracy = NAN}};
    check_volunteers(s, label, 10, heard, 3);
    check_volunteers(s, label, 2, heard, 2);
    CHECK(agg_store_find_client(s, "token-b", &id, &shard, &err) == SDFED_OK && id == ids[1] && shard == -1,
          "%s: token-b is client %lld, shard %d", label, (long long)id, shard);
    CHECK(agg_store_find_client(s, "token-c", &id, &shard, &err) == SDFED_OK && id == ids[2] && shard == 7,
          "%s: token-c is client %lld, shard %d", label, (long long)id, shard);
    float g0[N_VALUES], g1[N_VALUES];
    values_of(100, g0);
    values_of(101, g1);
    check_round(s, label, 0, g0, sha0, 1, 1);
    check_round(s, label, 1, g1, sha1, 1, 1);
    check_round(s, label, 2, g1, sha2, 0, 0); /* round 1 was abandoned: the same parameters */
    agg_store_round r;
    int found;
    CHECK(agg_store_latest_round(s, &r, &found, &err) == SDFED_OK && found && r.round == 2, "%s: the latest round",
          label);
    agg_store_round_free(&r);
    agg_store_round started;
    CHECK(agg_store_get_round(s, 0, &started, &found, &err) == SDFED_OK && found && started.n_participants == 3 &&
              started.participants[0] == ids[2] && started.participants[1] == ids[0] &&
              started.participants[2] == ((int64_t)1 << 40) && started.rng[0] == 0xffffffffffffffffu &&
              started.rng[1] == 1 && started.rng[2] == 0x8000000000000000u && started.rng[3] == 0x0123456789abcdefu,
          "%s: round 0's participants and sampler state", label);
    agg_store_round_free(&started);
    const want_update pending[] = {{.round = 1, .client = 9, .samples = 4, .seed = 14},
                                   {.round = 2, .client = ids[0], .samples = 5, .seed = 13},
                                   {.round = 2, .client = ids[1], .samples = 6, .seed = 12}};
    check_pending(s, label, pending, 3);
    check_history(s, label, 2);
}

/* the device figures and pace rows check_devices_and_pace leaves */
static void check_devices_pace_kept(agg_store *s, const char *label, const int64_t ids[3]) {
    sdfed_error err = {0};
    agg_device_board d = {0};
    CHECK(agg_store_devices(s, &d, &err) == SDFED_OK && d.n == 2, "%s: devices: %d (%s)", label, d.n, err.message);
    if (d.n == 2) {
        const agg_device_figures *a = &d.figures[0], *b = &d.figures[1];
        CHECK(a->client == ids[0] && a->n_step_ms == 2 && a->step_ms[0] == 40.25 && a->step_ms[1] == 0x1p-30 &&
                  a->threads == 2 && !strcmp(a->kernels, "native-avx2"),
              "%s: client a's latest figures, bit for bit", label);
        CHECK(b->client == ids[1] && b->n_step_ms == 3 && b->step_ms[0] == 1e300 && b->step_ms[2] == 3 &&
                  b->threads == 1 && !strcmp(b->kernels, "simd128-relaxed"),
              "%s: client b's figures, its metrics for a round without its update not stored", label);
    }
    agg_devices_free(&d);
    agg_pace_board p = {0};
    CHECK(agg_store_pace(s, &p, &err) == SDFED_OK && p.n == 1 && p.clients[0].client == ids[1] &&
              p.clients[0].pace.misses == 4 && p.clients[0].pace.back_at == ((int64_t)1 << 40),
          "%s: pace: one row, b's (%d rows; %s)", label, p.n, err.message);
    agg_pace_free(&p);
}

/* Device figures carried by metrics (the metrics stored or not, the
 * latest figures a client's) and pace steering's rows (written, replaced,
 * gone when a client has no misses or its update marked paced is stored). */
static void check_devices_and_pace(agg_store *s, const char *label, const int64_t ids[3]) {
    sdfed_error err = {0};
    agg_store_new_metrics m[] = {
        {.round = 99,
         .client = ids[0],
         .device =
             {.client = ids[0], .n_step_ms = 2, .step_ms = {41.5, 0x1p-30}, .threads = 4, .kernels = "native-avx2"}},
        {.round = 99,
         .client = ids[1],
         .device = {.client = ids[1],
                    .n_step_ms = 3,
                    .step_ms = {1e300, 2.25, 3},
                    .threads = 1,
                    .kernels = "simd128-relaxed"}},
        {.round = 99, .client = ids[2]}, /* no figures */
    };
    agg_store_outcome outcome[3];
    agg_store_batch b = {.metrics = m, .n_metrics = 3, .metrics_outcome = outcome};
    CHECK(agg_store_add_batch(s, &b, STORE_ANY_ROUND, NULL, &err) == SDFED_OK && outcome[0] == STORE_NO_UPDATE,
          "%s: metrics with device figures: %s", label, err.message);
    m[0].device.step_ms[0] = 40.25;
    m[0].device.threads = 2;
    b.n_metrics = 1;
    CHECK(agg_store_add_batch(s, &b, STORE_ANY_ROUND, NULL, &err) == SDFED_OK, "%s: client a's new figures: %s", label,
          err.message);
    const agg_pace_client pace[] = {{.client = ids[0], .pace = {.misses = 3, .back_at = 5}},
                                    {.client = ids[1], .pace = {.misses = 1}},
                                    {.client = ids[2], .pace = {.misses = 2}},
                                    {.client = 77}};
    CHECK(agg_store_set_pace(s, pace, 4, &err) == SDFED_OK, "%s: pace: %s", label, err.message);
    agg_pace_board p = {0};
    CHECK(agg_store_pace(s, &p, &err) == SDFED_OK && p.n == 3 && p.clients[0].client == ids[0] &&
              p.clients[0].pace.misses == 3 && p.clients[0].pace.back_at == 5 && p.clients[2].client == ids[2],
          "%s: pace: three rows, in client order (%d)", label, p.n);
    agg_pace_free(&p);
    const agg_pace_client later[] = {{.client = ids[1], .pace = {.misses = 4, .back_at = (int64_t)1 << 40}},
                                     {.client = ids[2]}};
    CHECK(agg_store_set_pace(s, later, 2, &err) == SDFED_OK, "%s: pace again: %s", label, err.message);
    float values[N_VALUES];
    values_of(31, values);
    /* a's update, marked paced, ends its row; b's, not marked, leaves b's */
    agg_store_new_update two[] = {
        {.round = 60, .client = ids[0], .samples = 3, .values = values, .n_values = N_VALUES, .paced = 1},
        {.round = 60, .client = ids[1], .samples = 3, .values = values, .n_values = N_VALUES}};
    agg_store_outcome stored[2];
    agg_store_batch updates = {.updates = two, .n_updates = 2};
    CHECK(agg_store_add_batch(s, &updates, STORE_ANY_ROUND, stored, &err) == SDFED_OK && stored[0] == STORE_STORED &&
              stored[1] == STORE_STORED,
          "%s: a's and b's updates: %s", label, err.message);
    check_devices_pace_kept(s, label, ids);
}

/* Makes commits fail (1) as each back end fails for real, or lets them
 * through again (0): SQLite past a file size limit (its write-ahead log
 * cannot grow: a full disk), PostgreSQL by a deferred constraint trigger
 * that raises disk_full when the transaction commits. */
typedef void (*break_commits_fn)(int broken);

static struct rlimit file_limit;

static void break_sqlite_commits(int broken) {
    struct rlimit tiny = {1, file_limit.rlim_max};
    CHECK(setrlimit(RLIMIT_FSIZE, broken ? &tiny : &file_limit) == 0, "setrlimit: %s", strerror(errno));
}

static const char *sql_command; /* runs its argument as SQL on store_test */

static void run_sql(const char *sql) {
    char command[8192];
    snprintf(command, sizeof command, "%s '%s'", sql_command, sql);
    CHECK(system(command) == 0, "could not run: %s", sql);
}

static void break_postgres_commits(int broken) {
    if (broken)
        run_sql("CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE disk_full; END $$; "
                "CREATE CONSTRAINT TRIGGER full_disk AFTER INSERT ON updates DEFERRABLE INITIALLY DEFERRED "
                "FOR EACH ROW EXECUTE FUNCTION full_disk()");
    else
        run_sql("DROP TRIGGER full_disk ON updates; DROP FUNCTION full_disk()");
}

/* Group commit: a batch whose commit fails stores none of its updates
 * (none may be acknowledged), and the same batch written again commits
 * them together, each with its outcome (a duplicate among them stores
 * nothing and fails nothing). On what check_kept left: `before` pending. */
static void check_batches(agg_store *s, const char *label, const int64_t ids[3], break_commits_fn break_commits) {
    faults f = {0};
    agg_store_watch_faults(s, on_fault, &f);
    sdfed_error err = {0};
    const want_update before[] = {{.round = 1, .client = 9, .samples = 4, .seed = 14},
                                  {.round = 2, .client = ids[0], .samples = 5, .seed = 13},
                                  {.round = 2, .client = ids[1], .samples = 6, .seed = 12}};
    const want_update batch[] = {{.round = 2, .client = ids[2], .samples = 7, .seed = 21},
                                 {.round = 3, .client = ids[0], .samples = 8, .seed = 22},
                                 {.round = 2, .client = ids[0], .samples = 9, .seed = 23},
                                 {.round = 3, .client = ids[1], .samples = 10, .seed = 24}};
    enum { N_BATCH = sizeof batch / sizeof *batch };
    float values[N_BATCH][N_VALUES];
    agg_store_new_update updates[N_BATCH];
    for (int i = 0; i < N_BATCH; i++) {
        values_of(batch[i].seed, values[i]);
        updates[i] = (agg_store_new_update){.round = batch[i].round,
                                            .client = batch[i].client,
                                            .samples = batch[i].samples,
                                            .values = values[i],
                                            .n_values = N_VALUES};
    }
    agg_store_outcome outcome[N_BATCH];
    /* c's metrics of round 2 beside its update of round 2 in the same batch; its metrics of round 3 have none */
    const agg_store_new_metrics metrics[] = {
        {.round = 2, .client = ids[2], .accuracy = 0.5, .loss = 1.0, .test_samples = 20},
        {.round = 3, .client = ids[2], .accuracy = 0.0, .loss = 1.0, .test_samples = 20}};
    agg_store_outcome metrics_outcome[2];
    agg_store_batch b = {.updates = updates,
                         .n_updates = N_BATCH,
                         .metrics = metrics,
                         .n_metrics = 2,
                         .metrics_outcome = metrics_outcome};
    break_commits(1);
    int rc = agg_store_add_batch(s, &b, STORE_ANY_ROUND, outcome, &err);
    break_commits(0);
    CHECK(rc != SDFED_OK, "%s: a batch whose commit failed was stored", label);
    CHECK(f.begun == 1 && agg_store_failing(s), "%s: the failed commit was not a fault (%d begun): %s", label, f.begun,
          err.message);
    check_pending(s, label, before, 3); /* nothing of the batch */
    check_history(s, label, 2);
    for (int i = 0; i < N_BATCH; i++) outcome[i] = -1;
    CHECK(agg_store_add_batch(s, &b, STORE_ANY_ROUND, outcome, &err) == SDFED_OK, "%s: the batch written again: %s",
          label, err.message);
    CHECK(outcome[0] == STORE_STORED && outcome[1] == STORE_STORED && outcome[2] == STORE_DUPLICATE &&
              outcome[3] == STORE_STORED,
          "%s: the batch's outcomes %d %d %d %d", label, outcome[0], outcome[1], outcome[2], outcome[3]);
    CHECK(metrics_outcome[0] == STORE_STORED && metrics_outcome[1] == STORE_NO_UPDATE,
          "%s: the batch's metrics outcomes %d %d", label, metrics_outcome[0], metrics_outcome[1]);
    CHECK(f.cleared == 1 && !agg_store_failing(s), "%s: the commit did not end the fault", label);
    const want_update after[] = {before[0], before[1], before[2], batch[0], batch[1], batch[3]};
    check_pending(s, label, after, 6);
    check_history(s, label, 3); /* and its metrics */
    b = (agg_store_batch){0};
    CHECK(agg_store_add_batch(s, &b, STORE_ANY_ROUND, outcome, &err) == SDFED_OK, "%s: an empty batch: %s", label,
          err.message);
    agg_store_watch_faults(s, NULL, NULL);
}

/* metrics of no test image (test_samples 0) carry no accuracy: left out of
 * their round's mean and count, a round whose metrics all have none is not
 * in the history, and a volunteer whose latest round had none has no last
 * accuracy (after check_batches: c reported round 2 at 0.5, a and b have
 * updates of round 3) */
static void check_untested(agg_store *s, const char *label, const int64_t ids[3]) {
    sdfed_error err = {0};
    CHECK(add_metrics(s, 0, ids[2], 0.0, 1.0, 0, &err) == STORE_STORED &&
              add_metrics(s, 3, ids[0], 0.0, 1.0, 0, &err) == STORE_STORED,
          "%s: metrics of no test image: %s", label, err.message);
    check_history(s, label, 3); /* round 0 still a's and b's alone, round 3 none */
    const want_volunteer last[] = {{.client = ids[0], .rounds = 4, .accuracy = NAN}};
    check_volunteers(s, label, 1, last, 1);
}

/* a secure round's key and rows: stored, replaced (the key), numbered by
 * the store and read back in seq order (from a seq on); a client's second
 * message of a kind, a message of a stage that ended, a stage's end at a
 * seq another row has and a message of a client that left are not stored */
static void check_secagg(agg_store *s, const char *label) {
    sdfed_error err = {0};
    unsigned char key[32], back[32];
    int found = 1;
    CHECK(agg_store_secagg_key(s, 7, back, &found, &err) == SDFED_OK && !found, "%s: a round without a key has one",
          label);
    memset(key, 0xa5, sizeof key);
    CHECK(agg_store_set_secagg_key(s, 7, key, &err) == SDFED_OK, "%s: secagg key: %s", label, err.message);
    key[0] = 0x5a; /* a start tried again draws another */
    CHECK(agg_store_set_secagg_key(s, 7, key, &err) == SDFED_OK, "%s: secagg key again: %s", label, err.message);
    CHECK(agg_store_secagg_key(s, 7, back, &found, &err) == SDFED_OK && found && !memcmp(back, key, 32),
          "%s: the secagg key read back is the last one stored", label);
    const unsigned char advertise[] = {1, 0, 0, 0, 0, 0, 0, 0, 7, 42};
    const agg_store_new_secagg rows[] = {
        {.round = 7, .client = 3, .stage = 0, .message = advertise, .len = sizeof advertise},
        {.round = 7, .client = 3, .stage = 0, .message = advertise, .len = sizeof advertise}};
    agg_store_outcome out[2] = {STORE_NOT_OPEN, STORE_NOT_OPEN};
    agg_store_batch b = {.secagg = rows, .n_secagg = 2, .secagg_outcome = out};
    CHECK(agg_store_add_batch(s, &b, STORE_ANY_ROUND, NULL, &err) == SDFED_OK && out[0] == STORE_STORED &&
              out[1] == STORE_DUPLICATE,
          "%s: secagg rows (a client's second advertise is a duplicate): %s", label, err.message);
    int stored = 1;
    CHECK(agg_store_end_secagg_stage(s, 7, 0, 0, &stored, &err) == SDFED_OK && !stored,
          "%s: a stage's end stored at a seq another row has", label);
    CHECK(agg_store_end_secagg_stage(s, 7, 1, 0, &stored, &err) == SDFED_OK && stored, "%s: a stage's end: %s", label,
          err.message);
    const agg_store_new_secagg late[] = {{.round = 7, .client = 4, .stage = 0, .message = advertise, .len = 1}};
    b = (agg_store_batch){.secagg = late, .n_secagg = 1, .secagg_outcome = out};
    CHECK(agg_store_add_batch(s, &b, STORE_ANY_ROUND, NULL, &err) == SDFED_OK && out[0] == STORE_NOT_OPEN,
          "%s: a message of a stage that ended was stored", label);
    agg_store_secagg *read = NULL;
    int n = 0;
    CHECK(agg_store_secagg_rows(s, 7, 0, &read, &n, &err) == SDFED_OK && n == 2, "%s: %d secagg rows read: %s", label,
          n, err.message);
    if (n == 2)
        CHECK(read[0].seq == 0 && read[0].client == 3 && read[0].len == sizeof advertise &&
                  !memcmp(read[0].message, advertise, sizeof advertise) && read[1].seq == 1 && read[1].client == -1 &&
                  read[1].len == 1 && read[1].message[0] == 0,
              "%s: the secagg rows read back in seq order, whole", label);
    agg_store_secagg_free(read, n);
    CHECK(agg_store_secagg_rows(s, 7, 1, &read, &n, &err) == SDFED_OK && n == 1 && read[0].seq == 1,
          "%s: the secagg rows from seq 1: %d", label, n);
    agg_store_secagg_free(read, n);
    /* client 3 leaves (at any stage): stored once, and no message of its after it */
    const unsigned char left[] = {0}, shares[] = {3, 0, 0, 0, 0, 0, 0, 0, 7, 1};
    const agg_store_new_secagg after[] = {
        {.round = 7, .client = 3, .stage = 4, .message = left, .len = 1},
        {.round = 7, .client = 3, .stage = 4, .message = left, .len = 1},
        {.round = 7, .client = 3, .stage = 1, .message = shares, .len = sizeof shares}};
    agg_store_outcome left_out[3];
    b = (agg_store_batch){.secagg = after, .n_secagg = 3, .secagg_outcome = left_out};
    CHECK(agg_store_add_batch(s, &b, STORE_ANY_ROUND, NULL, &err) == SDFED_OK && left_out[0] == STORE_STORED &&
              left_out[1] == STORE_DUPLICATE && left_out[2] == STORE_NOT_OPEN,
          "%s: a leave, again, and a message after it: %d %d %d", label, left_out[0], left_out[1], left_out[2]);
}

static void run_suite(const char *where, const char *label, break_commits_fn break_commits) {
    agg_store *s = open_store(where, label);
    if (!s) return;
    faults f = {0};
    agg_store_watch_faults(s, on_fault, &f);
    sdfed_error err = {0};

    /* a new store is empty */
    agg_store_round r;
    int found = 1;
    CHECK(agg_store_latest_round(s, &r, &found, &err) == SDFED_OK && !found, "%s: a new store has a round", label);
    char *value = (char *)"x";
    CHECK(agg_store_get_meta(s, "task_sha256", &value, &err) == SDFED_OK && value == NULL, "%s: a new store has meta",
          label);

    /* meta */
    CHECK(agg_store_set_meta(s, "task_sha256", "first", &err) == SDFED_OK, "%s: set meta: %s", label, err.message);
    CHECK(agg_store_set_meta(s, "task_sha256", "second", &err) == SDFED_OK, "%s: replace meta: %s", label, err.message);
    CHECK(agg_store_get_meta(s, "task_sha256", &value, &err) == SDFED_OK && value && strcmp(value, "second") == 0,
          "%s: meta is %s", label, value ? value : "(absent)");
    free(value);

    /* clients and tokens */
    int64_t ids[3], id;
    int shard = 0;
    const agg_store_new_client three[] = {{.token = "token-a", .shard = 0, .kind = "headless"},
                                          {.token = "token-b", .shard = -1, .kind = "browser"},
                                          {.token = "token-c", .shard = 7, .kind = "browser"}};
    CHECK(agg_store_add_clients(s, three, 3, ids, &err) == SDFED_OK, "%s: clients a, b, c in one batch: %s", label,
          err.message);
    CHECK(ids[0] >= 1 && ids[1] > ids[0] && ids[2] > ids[1], "%s: client ids %lld %lld %lld", label, (long long)ids[0],
          (long long)ids[1], (long long)ids[2]);
    /* a batch with a token given before stores none of its clients */
    const agg_store_new_client again[] = {{.token = "token-d", .shard = 2, .kind = "browser"},
                                          {.token = "token-a", .shard = 1, .kind = "browser"}};
    int64_t again_ids[2];
    CHECK(agg_store_add_clients(s, again, 2, again_ids, &err) != SDFED_OK, "%s: a token given twice", label);
    CHECK(agg_store_find_client(s, "token-d", &id, &shard, &err) == SDFED_OK && id == -1,
          "%s: the batch that gave a token twice stored token-d", label);
    CHECK(agg_store_find_client(s, "token-a", &id, &shard, &err) == SDFED_OK && id == ids[0] && shard == 0,
          "%s: token-a is client %lld, shard %d", label, (long long)id, shard);
    CHECK(agg_store_find_client(s, "token-z", &id, &shard, &err) == SDFED_OK && id == -1, "%s: an unknown token",
          label);

    /* round 0 from nothing, started with its participants and sampler state */
    float g0[N_VALUES], g1[N_VALUES];
    values_of(100, g0);
    values_of(101, g1);
    CHECK(agg_store_add_first_round(s, g0, N_VALUES, sha0, &err) == SDFED_OK, "%s: first round: %s", label,
          err.message);
    check_round(s, label, 0, g0, sha0, 0, 0);
    const int64_t participants[] = {ids[2], ids[0], (int64_t)1 << 40};
    const uint64_t rng[4] = {0xffffffffffffffffu, 1, 0x8000000000000000u, 0x0123456789abcdefu};
    CHECK(agg_store_start_round(s, 0, participants, 3, rng, &err) == SDFED_OK, "%s: start: %s", label, err.message);
    check_round(s, label, 0, g0, sha0, 1, 0);

    /* updates: pending by round then client, whatever the order they came in */
    const want_update round0[] = {{.round = 0, .client = ids[0], .samples = 10, .seed = 1},
                                  {.round = 0, .client = ids[1], .samples = 20, .seed = 2},
                                  {.round = 0, .client = ids[2], .samples = 30, .seed = 3}};
    add_update(s, label, &round0[2]);
    add_update(s, label, &round0[0]);
    add_update(s, label, &round0[1]);
    float other[N_VALUES];
    values_of(99, other);
    CHECK(add_one(s, 0, ids[1], 5, other, STORE_ANY_ROUND, &err) == STORE_DUPLICATE, "%s: a duplicate update: %s",
          label, err.message);
    check_pending(s, label, round0, 3);

    /* round 0 closed: its updates merged, row 1 added */
    CHECK(agg_store_close_round(s, 0, g1, N_VALUES, sha1, 3, 0, 1.5, &err) == SDFED_OK, "%s: close: %s", label,
          err.message);
    check_round(s, label, 0, g0, sha0, 1, 1);
    check_round(s, label, 1, g1, sha1, 0, 0);
    check_pending(s, label, NULL, 0);

    /* round 1 abandoned: row 2 holds the same parameters, its updates set aside */
    CHECK(agg_store_start_round(s, 1, participants, 2, rng, &err) == SDFED_OK, "%s: start 1: %s", label, err.message);
    const want_update round1 = {.round = 1, .client = ids[0], .samples = 11, .seed = 4};
    add_update(s, label, &round1);
    CHECK(agg_store_close_round(s, 1, g1, N_VALUES, sha2, 1, 1, 0, &err) == SDFED_OK, "%s: abandon: %s", label,
          err.message);
    check_round(s, label, 1, g1, sha1, 1, 1);
    check_round(s, label, 2, g1, sha2, 0, 0);
    check_pending(s, label, NULL, 0);

    /* a close that cannot add its next row (row 2 is there) changes nothing: atomic */
    const want_update later[] = {{.round = 1, .client = 9, .samples = 4, .seed = 14},
                                 {.round = 2, .client = ids[0], .samples = 5, .seed = 13},
                                 {.round = 2, .client = ids[1], .samples = 6, .seed = 12}};
    add_update(s, label, &later[2]);
    add_update(s, label, &later[0]);
    add_update(s, label, &later[1]);
    CHECK(agg_store_close_round(s, 1, g0, N_VALUES, sha0, 3, 0, 0, &err) != SDFED_OK, "%s: row 2 added twice", label);
    check_pending(s, label, later, 3);
    check_round(s, label, 2, g1, sha2, 0, 0);

    /* before any metrics: no accuracy; heard from last through their updates
     * (a's last came after b's, both in round 2; c's in round 0) */
    const want_volunteer silent[] = {{.client = ids[0], .rounds = 3, .accuracy = NAN},
                                     {.client = ids[1], .rounds = 2, .accuracy = NAN},
                                     {.client = ids[2], .rounds = 1, .accuracy = NAN}};
    check_volunteers(s, label, 3, silent, 3);

    /* metrics (a second report replaces the first) and the accuracy history; metrics only beside their
     * client's update for the round: c reported round 0 alone, and its metrics of rounds 1 and 5 are not stored */
    CHECK(add_metrics(s, 1, ids[2], 0.0, 9.0, 10, &err) == STORE_NO_UPDATE &&
              add_metrics(s, 5, ids[2], 0.0, 9.0, 10, &err) == STORE_NO_UPDATE,
          "%s: metrics of rounds a client has no update in: %s", label, err.message);
    CHECK(add_metrics(s, 0, ids[0], 0.5, 1.0, 100, &err) == STORE_STORED, "%s: metrics: %s", label, err.message);
    CHECK(add_metrics(s, 0, ids[0], 0.25, 1.5, 100, &err) == STORE_STORED, "%s: metrics: %s", label, err.message);
    CHECK(add_metrics(s, 0, ids[1], 0.75, 0.5, 50, &err) == STORE_STORED, "%s: metrics: %s", label, err.message);
    CHECK(add_metrics(s, 1, ids[0], 0.125, 2.0, 10, &err) == STORE_STORED, "%s: metrics: %s", label, err.message);
    check_history(s, label, 2);

    check_secagg(s, label);

    /* nothing above was a fault (a duplicate is the caller's, not the store's) */
    CHECK(f.begun == 0 && agg_store_failures(s) == 0 && !agg_store_failing(s), "%s: faults reported: %d (%s)", label,
          f.begun, f.first);
    check_kept(s, label, ids);
    agg_store_close(s);

    /* opened again: everything kept */
    s = open_store(where, label);
    if (!s) return;
    check_kept(s, label, ids);
    check_batches(s, label, ids, break_commits);
    check_untested(s, label, ids);
    check_devices_and_pace(s, label, ids);
    agg_store_close(s);

    /* opened again: the devices and pace kept */
    s = open_store(where, label);
    if (!s) return;
    check_devices_pace_kept(s, label, ids);
    agg_store_close(s);
}

/* a store that cannot open: SDFED_ERR_IO (or want), one line naming the
 * URI without its password and saying why */
static void check_refused(const char *uri, int want, const char *names, const char *reason, const char *password) {
    agg_store *s = NULL;
    sdfed_error err = {0};
    int rc = agg_store_open(&s, uri, &err);
    CHECK(rc == want && s == NULL, "%s: open gave %d, not %d", uri, rc, want);
    CHECK(strstr(err.message, names) && strstr(err.message, reason), "%s: the message does not say '%s' and '%s': %s",
          uri, names, reason, err.message);
    CHECK(!strstr(err.message, password) && !strchr(err.message, '\n'), "%s: the message: %s", uri, err.message);
    agg_store_close(s);
}

/* the server stopped under an open store: writes fail, the fault is
 * reported once; started again, the next write reconnects and ends it */
static void check_server_restart(const char *uri, const char *pause, const char *resume) {
    agg_store *s = open_store(uri, "postgres restart");
    if (!s) return;
    faults f = {0};
    agg_store_watch_faults(s, on_fault, &f);
    sdfed_error err = {0};
    CHECK(system(pause) == 0, "could not stop the server: %s", pause);
    CHECK(agg_store_set_meta(s, "k", "1", &err) == SDFED_ERR_IO &&
              agg_store_set_meta(s, "k", "2", &err) == SDFED_ERR_IO,
          "writes to a stopped server did not fail");
    CHECK(f.begun == 1 && f.cleared == 0 && agg_store_failing(s) && agg_store_failures(s) == 2,
          "a stopped server: %d faults begun, %d cleared, %lld failures", f.begun, f.cleared,
          (long long)agg_store_failures(s));
    CHECK(strstr(f.first, "store: meta: ") != NULL, "the fault's message: %s", f.first);
    CHECK(system(resume) == 0, "could not start the server again: %s", resume);
    CHECK(agg_store_set_meta(s, "k", "3", &err) == SDFED_OK, "no write after the server came back: %s", err.message);
    CHECK(f.begun == 1 && f.cleared == 1 && !agg_store_failing(s), "the fault did not end: %d begun, %d cleared",
          f.begun, f.cleared);
    char *value = NULL;
    CHECK(agg_store_get_meta(s, "k", &value, &err) == SDFED_OK && value && strcmp(value, "3") == 0, "k is %s",
          value ? value : "(absent)");
    free(value);
    /* stopped and started again while the store was idle: its first
     * statement reconnects, without failing */
    CHECK(system(pause) == 0 && system(resume) == 0, "could not restart the server");
    CHECK(agg_store_set_meta(s, "k", "4", &err) == SDFED_OK, "the first write after a restart: %s", err.message);
    CHECK(f.begun == 1 && agg_store_failures(s) == 2, "a restart while idle was a fault: %d begun, %lld failures",
          f.begun, (long long)agg_store_failures(s));
    agg_store_close(s);
}

static int in_list(const int64_t *ids, int n, int64_t id) {
    for (int i = 0; i < n; i++)
        if (ids[i] == id) return 1;
    return 0;
}

static void check_cluster(const char *uri) {
    agg_store *a = open_store(uri, "cluster a"), *b = open_store(uri, "cluster b");
    if (!a || !b) {
        agg_store_close(a);
        agg_store_close(b);
        return;
    }
    sdfed_error err = {0};
    agg_store_fence fa = {0}, fb = {0};
    CHECK(agg_store_node_join(a, "host-a", 1, 30, &fa.node, &err) == SDFED_OK &&
              agg_store_node_join(b, "host-b", 2, 30, &fb.node, &err) == SDFED_OK && fa.node != fb.node,
          "two nodes: %s", err.message);
    /* one coordinator at a time */
    CHECK(agg_store_coordinator_claim(a, fa.node, 30, &fa.epoch, &err) == SDFED_OK && fa.epoch == 1,
          "a claims the coordinator: epoch %lld %s", (long long)fa.epoch, err.message);
    CHECK(agg_store_coordinator_claim(b, fb.node, 30, &fb.epoch, &err) == SDFED_OK && fb.epoch == 0,
          "b claimed a coordinator row whose lease holds");

    /* round 0 started once */
    float g0[N_VALUES], g1[N_VALUES];
    values_of(200, g0);
    values_of(201, g1);
    const int64_t chosen[] = {11, 12, 13};
    const uint64_t rng[4] = {1, 2, 3, 4};
    CHECK(agg_store_add_first_round(a, g0, N_VALUES, sha0, &err) == SDFED_OK, "first round: %s", err.message);
    CHECK(agg_store_begin_decision(a, &fa, 0, STORE_START, &err) == SDFED_OK &&
              agg_store_start_round(a, 0, chosen, 3, rng, &err) == SDFED_OK &&
              agg_store_commit_decision(a, &err) == SDFED_OK,
          "a starts round 0: %s", err.message);
    CHECK(agg_store_begin_decision(a, &fa, 0, STORE_START, &err) == SDFED_ERR_NOT_FOUND, "round 0 started twice");

    /* presence: a client on each node, one of them in a batch (group commit); only the node that holds a
     * client removes it */
    const agg_store_new_presence thirteen = {.client = 13, .shard = 2};
    agg_store_batch joined = {.presence = &thirteen, .n_presence = 1, .node = fa.node};
    CHECK(agg_store_presence_add(a, 11, 0, fa.node, &err) == SDFED_OK &&
              agg_store_presence_add(b, 12, 1, fb.node, &err) == SDFED_OK &&
              agg_store_add_batch(a, &joined, STORE_OPEN_ROUND, NULL, &err) == SDFED_OK,
          "presence: %s", err.message);
    int removed = 1;
    CHECK(agg_store_presence_remove(a, 12, fa.node, 0, &removed, &err) == SDFED_OK && !removed,
          "a removed b's client (and recorded its departure)");
    int64_t *clients, *reported, *departed;
    int *shards, n, n_reported, n_departed;
    CHECK(agg_store_present_clients(b, &clients, &shards, &n, &err) == SDFED_OK && n == 3 && in_list(clients, n, 12),
          "three clients present: %d", n);
    free(clients);
    free(shards);

    /* updates while round 0 is open; none from a client that left it */
    float u[N_VALUES];
    values_of(202, u);
    CHECK(add_one(b, 0, 12, 5, u, STORE_OPEN_ROUND, &err) == STORE_STORED, "an update: %s", err.message);
    CHECK(add_one(a, 0, 12, 5, u, STORE_OPEN_ROUND, &err) == STORE_DUPLICATE, "a duplicate update");
    CHECK(agg_store_presence_remove(a, 13, fa.node, 0, &removed, &err) == SDFED_OK && removed, "13 leaves: %s",
          err.message);
    CHECK(add_one(a, 0, 13, 5, u, STORE_OPEN_ROUND, &err) == STORE_NOT_OPEN,
          "an update from a client that left its round: %s", err.message);
    CHECK(add_one(a, 0, 11, 7, u, STORE_OPEN_ROUND, &err) == STORE_STORED, "an update: %s", err.message);
    CHECK(agg_store_round_events(b, 0, &reported, &n_reported, &departed, &n_departed, &err) == SDFED_OK &&
              n_reported == 2 && in_list(reported, 2, 11) && in_list(reported, 2, 12) && n_departed == 1 &&
              departed[0] == 13,
          "round 0's events: %d reported, %d departed", n_reported, n_departed);
    free(reported);
    free(departed);

    /* a node whose lease ran out: its clients are not counted */
    CHECK(agg_store_node_renew(a, fa.node, -1, &err) == SDFED_OK, "a's lease: %s", err.message);
    CHECK(agg_store_present_clients(b, &clients, &shards, &n, &err) == SDFED_OK && n == 1 && clients[0] == 12 &&
              shards[0] == 1,
          "with a's lease expired, %d clients present", n);
    free(clients);
    free(shards);

    /* b takes over once a's coordinator lease is gone; a's decisions are refused and change nothing */
    CHECK(agg_store_node_leave(a, fa.node, &err) == SDFED_OK, "a leaves: %s", err.message);
    CHECK(agg_store_coordinator_claim(b, fb.node, 30, &fb.epoch, &err) == SDFED_OK && fb.epoch == 2,
          "b takes over: epoch %lld", (long long)fb.epoch);
    CHECK(agg_store_begin_decision(a, &fa, 0, STORE_CLOSE, &err) == SDFED_ERR_ARG && strstr(err.message, "superseded"),
          "a superseded coordinator closes round 0: %s", err.message);
    int held = 1;
    CHECK(agg_store_coordinator_renew(a, &fa, 30, &held, &err) == SDFED_OK && !held, "a renewed a superseded lease");
    CHECK(agg_store_coordinator_renew(b, &fb, 30, &held, &err) == SDFED_OK && held, "b's lease: %s", err.message);
    check_round(a, "cluster", 0, g0, sha0, 1, 0);

    /* round 0 closed once, by b */
    agg_store_update *pending = NULL;
    n = 0;
    CHECK(agg_store_begin_decision(b, &fb, 0, STORE_CLOSE, &err) == SDFED_OK &&
              agg_store_pending_updates(b, &pending, &n, &err) == SDFED_OK && n == 2 &&
              agg_store_close_round(b, 0, g1, N_VALUES, sha1, n, 0, 0, &err) == SDFED_OK &&
              agg_store_commit_decision(b, &err) == SDFED_OK,
          "b closes round 0: %s", err.message);
    agg_store_updates_free(pending, n);
    check_round(a, "cluster", 0, g0, sha0, 1, 1);
    check_round(a, "cluster", 1, g1, sha1, 0, 0);
    CHECK(agg_store_begin_decision(b, &fb, 0, STORE_CLOSE, &err) == SDFED_ERR_NOT_FOUND, "round 0 closed twice");
    CHECK(agg_store_close_round(a, 0, g0, N_VALUES, sha2, 0, 1, 0, &err) == SDFED_ERR_ARG &&
              strstr(err.message, "closed"),
          "a closed round's row changed: %s", err.message);
    CHECK(add_one(b, 0, 11, 7, u, STORE_OPEN_ROUND, &err) == STORE_NOT_OPEN, "an update into a closed round");
    CHECK(add_one(b, 1, 11, 7, u, STORE_OPEN_ROUND, &err) == STORE_NOT_OPEN, "an update into a round not started");
    agg_store_cluster c;
    CHECK(agg_store_cluster_status(a, &c, &err) == SDFED_OK && c.nodes_live == 1 && c.clients_present == 1 &&
              c.coordinator_node == fb.node && c.coordinator_epoch == 2,
          "the cluster's status: %lld nodes, %lld clients, coordinator %lld epoch %lld", (long long)c.nodes_live,
          (long long)c.clients_present, (long long)c.coordinator_node, (long long)c.coordinator_epoch);
    check_counts(a, "cluster", 1, 0, 2, 0); /* every node's, from either */
    agg_store_close(a);
    agg_store_close(b);
}

/* ------------------------------------------------ SQLite's files */

static int mode_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

/* whether the file holds these bytes anywhere */
static int file_holds(const char *path, const char *needle) {
    size_t n = 0;
    unsigned char *bytes = read_file(path, &n);
    int found = 0;
    for (size_t i = 0; bytes && i + strlen(needle) <= n && !found; i++)
        found = memcmp(bytes + i, needle, strlen(needle)) == 0;
    free(bytes);
    return found;
}

static void run_sqlite(const char *path, const char *sql) {
    sqlite3 *db = NULL;
    char *message = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK && sqlite3_exec(db, sql, NULL, NULL, &message) == SQLITE_OK,
          "sqlite3 %s: %s", path, message ? message : sqlite3_errmsg(db));
    sqlite3_free(message);
    sqlite3_close(db);
}

/* The state folder private to its owner: 0700, the database and its -wal
 * and -shm 0600, a new folder and one an older version left open to
 * others alike; and no token in any of its files, only its SHA-256. */
static void check_private(const char *work) {
    char dir[4096], db[4200], wal[4300], shm[4300];
    snprintf(dir, sizeof dir, "%s/private", work);
    snprintf(db, sizeof db, "%s/aggregator.sqlite", dir);
    snprintf(wal, sizeof wal, "%s-wal", db);
    snprintf(shm, sizeof shm, "%s-shm", db);
    for (int older = 0; older < 2; older++) {
        if (older) { /* as an older version left it */
            chmod(dir, 0755);
            chmod(db, 0644);
        }
        agg_store *s = open_store(dir, "private");
        if (!s) return;
        sdfed_error err = {0};
        const agg_store_new_client c = {.token = "a-volunteers-secret-token", .shard = 1, .kind = "browser"};
        int64_t id;
        CHECK(older || agg_store_add_clients(s, &c, 1, &id, &err) == SDFED_OK, "private: a client: %s", err.message);
        CHECK(agg_store_set_meta(s, "k", "v", &err) == SDFED_OK, "private: a write: %s", err.message);
        CHECK(mode_of(dir) == 0700 && mode_of(db) == 0600 && mode_of(wal) == 0600 && mode_of(shm) == 0600,
              "private (%s): folder %o, database %o, -wal %o, -shm %o", older ? "an older state" : "a new state",
              mode_of(dir), mode_of(db), mode_of(wal), mode_of(shm));
        char hash[65];
        CHECK(native_sha256_hex(c.token, strlen(c.token), hash, &err) == SDFED_OK, "private: %s", err.message);
        CHECK(!file_holds(db, c.token) && !file_holds(wal, c.token) && (file_holds(db, hash) || file_holds(wal, hash)),
              "private: the files hold the token's SHA-256, never the token");
        int shard;
        CHECK(agg_store_find_client(s, c.token, &id, &shard, &err) == SDFED_OK && id >= 1,
              "private: found by its token");
        agg_store_close(s);
    }
}

/* A state written before tokens were hashed (and before abandoned rounds):
 * opened, its tokens are hashed in place, no trace of them left in its
 * files, its clients found by their tokens as before; the accuracy it
 * shows is its reporters' alone (a metrics row of a client without an
 * update there is not counted). Opened again, nothing more to do. */
static void check_migration(const char *work) {
    char dir[4096], db[4200];
    snprintf(dir, sizeof dir, "%s/plain", work);
    snprintf(db, sizeof db, "%s/aggregator.sqlite", dir);
    mkdir(dir, 0700);
    static const char *const tokens[] = {"0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"};
    char sql[2048];
    snprintf(sql, sizeof sql,
             "PRAGMA journal_mode=WAL;"
             "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
             "CREATE TABLE clients (id INTEGER PRIMARY KEY, token TEXT UNIQUE NOT NULL, shard INTEGER, kind TEXT,"
             "  created REAL NOT NULL);"
             "CREATE TABLE rounds (round INTEGER PRIMARY KEY, global BLOB NOT NULL, sha256 TEXT NOT NULL, rng BLOB,"
             "  participants BLOB, started REAL, closed REAL, n_updates INTEGER, aggregation_ms REAL);"
             "CREATE TABLE updates (round INTEGER NOT NULL, client INTEGER NOT NULL, samples INTEGER NOT NULL,"
             "  data BLOB NOT NULL, received REAL NOT NULL, merged INTEGER, PRIMARY KEY (round, client));"
             "CREATE TABLE metrics (round INTEGER NOT NULL, client INTEGER NOT NULL, accuracy REAL, loss REAL,"
             "  test_samples INTEGER, received REAL NOT NULL, PRIMARY KEY (round, client));"
             "INSERT INTO meta VALUES ('task_sha256', 'old');"
             "INSERT INTO clients VALUES (7, '%s', 2, 'browser', 1), (8, '%s', NULL, 'headless', 2);"
             "INSERT INTO rounds (round, global, sha256) VALUES (0, x'00000000', 'h');"
             "INSERT INTO updates VALUES (0, 7, 10, x'00000000', 3, NULL);"
             "INSERT INTO metrics VALUES (0, 7, 0.5, 1, 10, 4), (0, 8, 0.0, 1, 10, 5);",
             tokens[0], tokens[1]);
    run_sqlite(db, sql);
    CHECK(file_holds(db, tokens[0]), "migration: the old state holds its tokens in plain text");
    for (int again = 0; again < 2; again++) {
        agg_store *s = open_store(dir, "migration");
        if (!s) return;
        sdfed_error err = {0};
        int64_t id;
        int shard;
        CHECK(agg_store_find_client(s, tokens[0], &id, &shard, &err) == SDFED_OK && id == 7 && shard == 2 &&
                  agg_store_find_client(s, tokens[1], &id, &shard, &err) == SDFED_OK && id == 8 && shard == -1,
              "migration%s: the clients found by their tokens: %s", again ? " (opened again)" : "", err.message);
        char wal[4300];
        snprintf(wal, sizeof wal, "%s-wal", db);
        CHECK(!file_holds(db, tokens[0]) && !file_holds(db, tokens[1]) && !file_holds(wal, tokens[0]) &&
                  !file_holds(wal, tokens[1]),
              "migration: no token left in the files");
        int64_t *rounds, *clients;
        double *accuracy;
        int n;
        CHECK(agg_store_accuracy_history(s, &rounds, &accuracy, &clients, &n, &err) == SDFED_OK && n == 1 &&
                  accuracy[0] == 0.5 && clients[0] == 1,
              "migration: the accuracy of the reporter alone (%d rounds)", n);
        free(rounds);
        free(accuracy);
        free(clients);
        agg_store_close(s);
    }
}

/* A database moved or deleted under an open store is not written (what
 * would be acknowledged would go with it): writes fail, one fault; moved
 * back, writes go on and the fault ends. */
static void check_moved(const char *work) {
    char dir[4096], away[4096];
    snprintf(dir, sizeof dir, "%s/moved", work);
    snprintf(away, sizeof away, "%s/moved-away", work);
    agg_store *s = open_store(dir, "moved");
    if (!s) return;
    faults f = {0};
    agg_store_watch_faults(s, on_fault, &f);
    sdfed_error err = {0};
    CHECK(agg_store_set_meta(s, "k", "1", &err) == SDFED_OK, "moved: a write: %s", err.message);
    CHECK(rename(dir, away) == 0, "moved: rename: %s", strerror(errno));
    CHECK(agg_store_set_meta(s, "k", "2", &err) == SDFED_ERR_IO &&
              agg_store_set_meta(s, "k", "3", &err) == SDFED_ERR_IO && strstr(err.message, "moved or deleted"),
          "moved: writes to a database moved away fail: %s", err.message);
    CHECK(f.begun == 1 && f.cleared == 0, "moved: one fault (%d begun)", f.begun);
    CHECK(rename(away, dir) == 0, "moved: rename back: %s", strerror(errno));
    CHECK(agg_store_set_meta(s, "k", "4", &err) == SDFED_OK && f.cleared == 1 && !agg_store_failing(s),
          "moved: back, a write ends the fault: %s", err.message);
    char *value = NULL;
    CHECK(agg_store_get_meta(s, "k", &value, &err) == SDFED_OK && value && !strcmp(value, "4"), "moved: k is %s",
          value ? value : "(absent)");
    free(value);
    agg_store_close(s);
}

/* PostgreSQL: a database written before tokens were hashed is migrated
 * as a state folder is (its clients table's column renamed, each token
 * replaced by its hash, the table rewritten), its clients found as before. */
static void check_postgres_migration(const char *uri) {
    static const char token[] = "0123456789abcdef0123456789abcdef";
    char sql[1024], hash[65];
    snprintf(sql, sizeof sql,
             "DROP TABLE clients; CREATE TABLE clients (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, "
             "token text UNIQUE NOT NULL, shard integer, kind text, created double precision NOT NULL); "
             "INSERT INTO clients (id, token, shard, kind, created) VALUES (41, $$%s$$, 3, $$browser$$, 1)",
             token);
    run_sql(sql);
    agg_store *s = open_store(uri, "postgres migration");
    if (!s) return;
    sdfed_error err = {0};
    int64_t id;
    int shard;
    CHECK(agg_store_find_client(s, token, &id, &shard, &err) == SDFED_OK && id == 41 && shard == 3,
          "postgres migration: the client found by its token: %lld %s", (long long)id, err.message);
    CHECK(native_sha256_hex(token, strlen(token), hash, &err) == SDFED_OK, "postgres migration: %s", err.message);
    /* each fails (a division by zero) unless its count is as said */
    run_sql("SELECT 1 / (1 - count(*)) FROM information_schema.columns WHERE table_name = $$clients$$ AND "
            "column_name = $$token$$");
    snprintf(sql, sizeof sql, "SELECT 1 / count(*) FROM clients WHERE token_sha256 = $$%s$$", hash);
    run_sql(sql);
    snprintf(sql, sizeof sql, "SELECT 1 / (1 - count(*)) FROM clients WHERE token_sha256 = $$%s$$", token);
    run_sql(sql);
    agg_store_close(s);
}

/* A state folder that cannot be made: an error naming it. */
static void check_unwritable(const char *work) {
    char file[4096], dir[4200];
    snprintf(file, sizeof file, "%s/a-file", work);
    snprintf(dir, sizeof dir, "%s/state", file);
    FILE *fp = fopen(file, "w");
    if (fp) fclose(fp);
    agg_store *s = NULL;
    sdfed_error err = {0};
    CHECK(agg_store_open(&s, dir, &err) == SDFED_ERR_IO && !s && strstr(err.message, dir) &&
              strstr(err.message, "cannot be opened"),
          "a state folder that cannot be made: %s", err.message);
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: test_store WORK_DIR SOCKET_DIR PASSWORD PAUSE_COMMAND RESUME_COMMAND SQL_COMMAND\n");
        return 2;
    }
    const char *work = argv[1], *socket_dir = argv[2], *password = argv[3];
    char folder[4096], uri[4096], shown[4096], other[4096];
    snprintf(folder, sizeof folder, "%s/state", work);
    snprintf(uri, sizeof uri, "postgresql://sdfed:%s@/store_test?host=%s", password, socket_dir);
    snprintf(shown, sizeof shown, "postgresql://sdfed@/store_test?host=%s", socket_dir);
    CHECK(!agg_store_is_database(folder) && agg_store_is_database(uri) && agg_store_is_database("postgres://h/d"),
          "folders and URIs told apart");
    CHECK(getrlimit(RLIMIT_FSIZE, &file_limit) == 0, "getrlimit: %s", strerror(errno));
    signal(SIGXFSZ, SIG_IGN); /* a write past the limit fails (EFBIG) instead */
    sql_command = argv[6];
    if (check_case("sqlite")) run_suite(folder, "sqlite", break_sqlite_commits);
    if (check_case("private")) check_private(work);
    if (check_case("migration")) check_migration(work);
    if (check_case("moved")) check_moved(work);
    if (check_case("unwritable")) check_unwritable(work);
    if (check_case("postgres")) run_suite(uri, "postgres", break_postgres_commits);
    if (check_case("postgres_cluster")) {
        snprintf(other, sizeof other, "postgresql://sdfed:%s@/cluster_test?host=%s", password, socket_dir);
        check_cluster(other);
    }
    if (check_case("postgres_refusals")) {
        agg_store *s = open_store(uri, "postgres name");
        if (s) CHECK(strcmp(agg_store_name(s), shown) == 0, "the store's name: %s", agg_store_name(s));
        agg_store_close(s);
        /* what cannot open, and why, without the password (in the user part or in the query) */
        snprintf(other, sizeof other, "postgresql://sdfed:hunter2-wrong@/store_test?host=%s", socket_dir);
        check_refused(other, SDFED_ERR_IO, shown, "password authentication failed", "hunter2-wrong");
        snprintf(other, sizeof other, "postgres:///store_test?host=%s&user=sdfed&password=hunter2-wrong", socket_dir);
        snprintf(shown, sizeof shown, "postgres:///store_test?host=%s&user=sdfed", socket_dir);
        check_refused(other, SDFED_ERR_IO, shown, "password authentication failed", "hunter2-wrong");
        snprintf(other, sizeof other, "postgresql://sdfed:%s@/no_such_db?host=%s", password, socket_dir);
        snprintf(shown, sizeof shown, "postgresql://sdfed@/no_such_db?host=%s", socket_dir);
        check_refused(other, SDFED_ERR_IO, shown, "database \"no_such_db\" does not exist", password);
        snprintf(other, sizeof other, "postgresql://sdfed:%s@/store_test?host=%s/no-server", password, work);
        snprintf(shown, sizeof shown, "postgresql://sdfed@/store_test?host=%s/no-server", work);
        check_refused(other, SDFED_ERR_IO, shown, "No such file or directory", password);
        snprintf(other, sizeof other, "postgresql://sdfed:%s@/store_test?no_such_option=1", password);
        check_refused(other, SDFED_ERR_ARG, "postgresql://sdfed@/store_test?no_such_option=1", "no_such_option",
                      password);
    }
    if (check_case("postgres_restart")) check_server_restart(uri, argv[4], argv[5]);
    if (check_case("postgres_migration")) check_postgres_migration(uri);
    return check_report("test_store");
}
