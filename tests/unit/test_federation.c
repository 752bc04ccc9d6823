/* The aggregator's decisions without sockets (aggregator/federation.h):
 * events go in, the outbox is read. Round start and who is told to wait,
 * late, early, duplicate and malformed updates, a chosen client leaving,
 * the deadline, a chosen client rejoining (its connection replaced, or
 * lost and back within the grace) or gone past it, resuming after a
 * restart (with the deadline's time left), updates that cannot be combined
 * (the round abandoned), the asynchronous buffer
 * with stale updates, group commit (updates acknowledged only once
 * their batch committed, none when it failed), and metrics counted only
 * from clients whose update for the round was accepted; each closed round's parameters are compared with
 * the round engine's combination of the same updates, bit for bit.
 *   test_federation MODEL.gguf STATE_DIR */
#include <float.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "check.h"
#include "federation.h"
#include "fed/round.h"
#include "native/model.h"
#include "native/task_file.h"

static native_model model;
static sdfed_classes cls;
static const char *state_root;
static int n_states;

static sdfed_task task_for(int clients, int clients_per_round, int rounds) {
    char json[512];
    snprintf(json, sizeof json,
             "{\"model\": \"m.gguf\", \"dataset\": \"fashion-mnist\", \"clients\": %d, \"partition\": {\"kind\": "
             "\"iid\"}, \"rounds\": %d, \"clients_per_round\": %d, \"method\": \"promptfl\", "
             "\"global_prompt_length\": 4, \"seed\": 7}",
             clients, rounds, clients_per_round);
    sdfed_task t;
    sdfed_error err = {0};
    int rc = sdfed_task_parse(&t, json, strlen(json), &err);
    if (rc == SDFED_OK) rc = native_task_host_defaults(&t, &err); /* as the aggregator reads it */
    CHECK(rc == SDFED_OK, "task: %s", err.message);
    return t;
}

static sdfed_task task_of(int clients_per_round, int rounds) { return task_for(4, clients_per_round, rounds); }

static agg_store *new_store(char *dir, size_t cap) {
    snprintf(dir, cap, "%s/state-%ld-%d", state_root, (long)getpid(), n_states++);
    agg_store *st = NULL;
    sdfed_error err = {0};
    CHECK(agg_store_open(&st, dir, &err) == SDFED_OK, "store %s: %s", dir, err.message);
    return st;
}

static agg_federation *open_federation(const sdfed_task *t, agg_store *st, const agg_federation_options *opt,
                                       int64_t now) {
    agg_federation *f = NULL;
    sdfed_error err = {0};
    CHECK(agg_federation_open(&f, t, &model.clip, sdfed_kernels_default(), &cls, st, opt, now, &err) == SDFED_OK,
          "federation_open: %s", err.message);
    return f;
}

/* how many outbox messages of a type went to a client (or to everyone) */
static int count(const agg_federation *f, agg_federation_message_type type, int64_t client) {
    int n, k = 0;
    const agg_federation_message *m = agg_federation_outbox(f, &n);
    for (int i = 0; i < n; i++) k += m[i].type == type && m[i].client == client;
    return k;
}

static const agg_federation_message *find(const agg_federation *f, agg_federation_message_type type, int64_t client) {
    int n;
    const agg_federation_message *m = agg_federation_outbox(f, &n);
    for (int i = 0; i < n; i++)
        if (m[i].type == type && m[i].client == client) return &m[i];
    return NULL;
}

/* an update: the current global parameters plus a client's own offset */
static float *update_of(const agg_federation *f, float offset) {
    agg_federation_global g = agg_federation_get_global(f);
    float *u = malloc(sizeof *u * g.n);
    for (size_t j = 0; j < g.n; j++) u[j] = g.values[j] + offset * (float)((j % 7) + 1) * 1e-3f;
    return u;
}

/* the last refusal's message */
static char last_refusal[256];

static sdfed_code send_update(agg_federation *f, int64_t client, int64_t round, int64_t samples, const float *u,
                              int64_t now) {
    agg_federation_global g = agg_federation_get_global(f);
    last_refusal[0] = '\0';
    return agg_federation_update(f, client, round, samples, 2, g.shape, u, now, last_refusal, sizeof last_refusal);
}

/* the round engine's combination of the given updates over `before` */
static int same_as_engine(const agg_federation *f, const sdfed_task *t, const agg_federation_options *opt,
                          int64_t round, const float *before, const sdfed_round_update *u, int n) {
    agg_federation_global g = agg_federation_get_global(f);
    float *want = malloc(sizeof *want * g.n);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    int rc = sdfed_round_combine(&opt->aggregate, t->seed, round, u, n, before, g.n, want, &arena, NULL);
    int same = rc == SDFED_OK && memcmp(want, g.values, sizeof *want * g.n) == 0;
    sdfed_arena_free(&arena);
    free(want);
    return same;
}

static float *copy_global(const agg_federation *f) {
    agg_federation_global g = agg_federation_get_global(f);
    float *c = malloc(sizeof *c * g.n);
    memcpy(c, g.values, sizeof *c * g.n);
    return c;
}

/* the client was sent round_start */
static void w_in_round(const agg_federation *f, int64_t client, const char *what) {
    agg_federation_status s;
    agg_federation_get_status(f, &s);
    CHECK(s.open && find(f, FEDERATION_ROUND_START, client) != NULL, "%s", what);
}

/* a federation of clients 1, 2 and 3 (shards 0..2), joined at time 0;
 * its round 0 open with the three, the outbox empty */
static agg_federation *three_in_round_0(const sdfed_task *t, agg_store *st, const agg_federation_options *opt) {
    agg_federation *f = open_federation(t, st, opt, 0);
    for (int64_t c = 1; c <= 3; c++) agg_federation_join(f, c, (int)c - 1, 0);
    agg_federation_status s;
    agg_federation_get_status(f, &s);
    CHECK(s.open && s.participants == 3, "round 0 starts with the three clients");
    agg_federation_outbox_clear(f);
    return f;
}

static void test_sync_rounds(void) {
    char dir[512];
    sdfed_task t = task_of(2, 3);
    /* rounds start with 3 connected and choose 2 of them */
    agg_federation_options opt = {.min_clients = 3, .deadline_ms = 1000, .max_samples = 1000000};
    agg_store *st = new_store(dir, sizeof dir);
    agg_federation *f = open_federation(&t, st, &opt, 0);
    agg_federation_status s;

    /* one client: welcomed, told to wait for more */
    agg_federation_join(f, 1, 0, 0);
    const agg_federation_message *w = find(f, FEDERATION_WAIT, 1);
    CHECK(count(f, FEDERATION_WELCOME, 1) == 1 && w && !strcmp(w->reason, "too_few_clients") && w->round == 0,
          "a lone client is welcomed and waits for too_few_clients");
    agg_federation_outbox_clear(f);
    /* three clients: round 0 starts with two of them, the third waits */
    agg_federation_join(f, 2, 1, 10);
    agg_federation_join(f, 3, 2, 20);
    agg_federation_get_status(f, &s);
    CHECK(s.open && s.round == 0 && s.participants == 2 && s.connected == 3, "round 0 opens with 2 of 3 clients");
    int started =
        count(f, FEDERATION_ROUND_START, 1) + count(f, FEDERATION_ROUND_START, 2) + count(f, FEDERATION_ROUND_START, 3);
    CHECK(started == 2, "round_start goes to the two chosen (%d)", started);
    int64_t chosen[2], other = -1, k = 0;
    for (int64_t c = 1; c <= 3; c++) {
        if (find(f, FEDERATION_ROUND_START, c))
            chosen[k++] = c;
        else
            other = c;
    }
    w = find(f, FEDERATION_WAIT, other);
    CHECK(w && !strcmp(w->reason, "not_sampled"), "the client not chosen waits: not_sampled");
    agg_federation_outbox_clear(f);

    /* refusals change nothing */
    float *u0 = update_of(f, 1), *u1 = update_of(f, -2);
    CHECK(send_update(f, chosen[0], 1, 10, u0, 30) == SDFED_CODE_WRONG_ROUND, "an update for a later round");
    CHECK(send_update(f, other, 0, 10, u0, 30) == SDFED_CODE_NOT_IN_ROUND, "an update from a client not chosen");
    CHECK(send_update(f, chosen[0], 0, 0, u0, 30) == SDFED_CODE_BAD_SAMPLES, "zero samples");
    char message[256];
    uint32_t wrong[2] = {agg_federation_get_global(f).shape[0] + 1, agg_federation_get_global(f).shape[1]};
    CHECK(agg_federation_update(f, chosen[0], 0, 10, 2, wrong, u0, 30, message, sizeof message) == SDFED_CODE_BAD_SHAPE,
          "a wrong shape");
    agg_federation_get_status(f, &s);
    CHECK(s.updates_accepted == 0 && s.reported == 0, "refused updates are not counted");
    agg_federation_outbox_clear(f);

    /* the first report is acknowledged; a second copy is a duplicate */
    float *before = copy_global(f);
    CHECK(send_update(f, chosen[1], 0, 30, u1, 40) == SDFED_CODE_NONE && find(f, FEDERATION_ACK, chosen[1]),
          "an update from a chosen client is acknowledged");
    CHECK(send_update(f, chosen[1], 0, 30, u1, 41) == SDFED_CODE_DUPLICATE_UPDATE, "a second update");
    agg_federation_get_status(f, &s);
    CHECK(s.open && s.reported == 1, "the round waits for its other client");
    agg_federation_tick(f, 999);
    agg_federation_get_status(f, &s);
    CHECK(s.open, "no close before the deadline");
    agg_federation_outbox_clear(f);
    /* the other chosen client reports: the round closes in the engine's order */
    CHECK(send_update(f, chosen[0], 0, 10, u0, 50) == SDFED_CODE_NONE, "the second report");
    agg_federation_get_status(f, &s);
    const agg_federation_message *end = find(f, FEDERATION_ROUND_END, FEDERATION_EVERYONE);
    CHECK(s.round == 1 && s.rounds_closed == 1 && end && end->round == 0 && end->next_round == 1 &&
              end->participants == 2 && !strcmp(end->global_sha256, s.global_sha256),
          "round 0 closes when its clients reported; round_end to everyone");
    sdfed_round_update ordered[2] = {{.client = chosen[0], .base = 0, .samples = 10, .values = u0},
                                     {.client = chosen[1], .base = 0, .samples = 30, .values = u1}};
    CHECK(same_as_engine(f, &t, &opt, 0, before, ordered, 2),
          "the new global is the round engine's combination, in the chosen order");
    /* round 1 starts at once (no pause); a late update for round 0 is refused */
    CHECK(s.open && s.round == 1, "round 1 starts at once");
    CHECK(send_update(f, chosen[0], 0, 10, u0, 60) == SDFED_CODE_WRONG_ROUND, "a late update for round 0");
    agg_federation_outbox_clear(f);
    free(u0);
    free(u1);
    free(before);
    agg_federation_close(f);
    agg_store_close(st);
    sdfed_task_free(&t);
}

/* the waiting reason in the status (and its name), each time no round is open */
static int waiting(const agg_federation *f, agg_federation_wait_reason reason, int64_t needed, int64_t connected) {
    agg_federation_status s;
    agg_federation_get_status(f, &s);
    return s.waiting.reason == reason && s.waiting.needed == needed && s.waiting.connected == connected;
}

/* Why no round is open, as the status says it: a host's task (20
 * volunteers, 10 a round) started with 2 needed runs its rounds with the 2
 * at hand; then the pause between rounds, and the end. */
static void test_waiting(void) {
    char dir[512];
    sdfed_task t = task_for(20, 10, 2);
    agg_federation_options opt = {.min_clients = 2, .deadline_ms = 1000, .round_pause_ms = 500, .max_samples = 1000000};
    agg_store *st = new_store(dir, sizeof dir);
    agg_federation *f = open_federation(&t, st, &opt, 0);
    CHECK(waiting(f, FEDERATION_TOO_FEW_CLIENTS, 2, 0) &&
              !strcmp(agg_federation_wait_reason_name(FEDERATION_TOO_FEW_CLIENTS), "too_few_clients"),
          "a new federation waits for 2 clients, none connected");
    agg_federation_join(f, 1, 0, 0);
    CHECK(waiting(f, FEDERATION_TOO_FEW_CLIENTS, 2, 1), "one client: waiting for 2, 1 connected");
    agg_federation_join(f, 2, 1, 10);
    agg_federation_status s;
    agg_federation_get_status(f, &s);
    CHECK(s.open && s.participants == 2 && waiting(f, FEDERATION_NOT_WAITING, 2, 2) &&
              agg_federation_wait_reason_name(FEDERATION_NOT_WAITING) == NULL,
          "a second client: round 0 starts with both of the 10 a round wants, no wait");
    float *u1 = update_of(f, 1), *u2 = update_of(f, -1);
    CHECK(send_update(f, 1, 0, 10, u1, 20) == SDFED_CODE_NONE && send_update(f, 2, 0, 10, u2, 20) == SDFED_CODE_NONE,
          "both report");
    agg_federation_get_status(f, &s);
    CHECK(s.rounds_closed == 1 && !s.open && waiting(f, FEDERATION_ROUND_PAUSE, 2, 2),
          "round 0 closes with its 2 reports; then the pause between rounds");
    agg_federation_tick(f, 300);
    CHECK(waiting(f, FEDERATION_ROUND_PAUSE, 2, 2), "still in the pause");
    agg_federation_leave(f, 2, FEDERATION_LEFT, 400);
    agg_federation_tick(f, 600);
    CHECK(waiting(f, FEDERATION_TOO_FEW_CLIENTS, 2, 1), "after the pause with one client left: too few");
    agg_federation_join(f, 3, 2, 700);
    agg_federation_get_status(f, &s);
    CHECK(s.open && s.round == 1 && waiting(f, FEDERATION_NOT_WAITING, 2, 2), "round 1 starts with the newcomer");
    free(u1);
    free(u2);
    u1 = update_of(f, 1);
    u2 = update_of(f, -1);
    send_update(f, 1, 1, 10, u1, 800);
    send_update(f, 3, 1, 10, u2, 800);
    CHECK(waiting(f, FEDERATION_FINISHED, 2, 2), "the last round closed: finished");
    agg_federation_outbox_clear(f);
    const agg_federation_message *done = NULL;
    CHECK(send_update(f, 1, 2, 10, u1, 900) == SDFED_CODE_NONE && (done = find(f, FEDERATION_DONE, 1)) &&
              done->rounds == 2 && !find(f, FEDERATION_REFUSAL, 1),
          "an update once the federation is done is answered done, not a round that never opens");
    agg_federation_outbox_clear(f);
    char message[256];
    CHECK(agg_federation_metrics(f, 1, 1, 0.5, 1.0, 10, NULL, 900, message, sizeof message) == SDFED_CODE_NONE &&
              !find(f, FEDERATION_DONE, 1) &&
              agg_federation_metrics(f, 1, 2, 0.5, 1.0, 10, NULL, 900, message, sizeof message) == SDFED_CODE_NONE &&
              find(f, FEDERATION_DONE, 1),
          "metrics of the last round are taken; of a round past it, answered done");
    free(u1);
    free(u2);
    agg_federation_outbox_clear(f);
    agg_federation_close(f);
    agg_store_close(st);
    sdfed_task_free(&t);
}

static void test_dropout_and_deadline(void) {
    char dir[512];
    sdfed_task t = task_of(2, 8);
    agg_federation_options opt = {.min_clients = 1, .deadline_ms = 1000, .max_samples = 1000000};
    agg_store *st = new_store(dir, sizeof dir);
    agg_federation *f = open_federation(&t, st, &opt, 0);
    agg_federation_join(f, 1, 0, 0); /* min_clients 1: round 0 starts with client 1 alone */
    agg_federation_status s;
    agg_federation_get_status(f, &s);
    CHECK(s.open && s.participants == 1, "round 0 starts with the one client");
    float *u = update_of(f, 3);
    CHECK(send_update(f, 1, 0, 5, u, 10) == SDFED_CODE_NONE, "its report");
    agg_federation_get_status(f, &s);
    CHECK(s.round == 1 && s.open && s.participants == 1, "and round 1 begins");
    agg_federation_join(f, 2, 1, 20);
    agg_federation_outbox_clear(f);
    const int64_t now = 20;
    /* both in the next round: client 2 reports, client 1 stays silent */
    free(u);
    u = update_of(f, 1);
    CHECK(send_update(f, 1, 1, 5, u, now) == SDFED_CODE_NONE, "client 1 reports round 1");
    agg_federation_get_status(f, &s);
    CHECK(s.round == 2 && s.open && s.participants == 2, "round 2 takes both clients");
    agg_federation_outbox_clear(f);
    free(u);
    u = update_of(f, 2);
    CHECK(send_update(f, 2, 2, 7, u, now + 1) == SDFED_CODE_NONE, "client 2 reports round 2");
    agg_federation_tick(f, now + 500);
    agg_federation_get_status(f, &s);
    CHECK(s.open && s.round == 2 && s.reported == 1, "client 1 is still due before the deadline");
    /* client 1 leaves: everyone still in has reported, one report is enough */
    float *before = copy_global(f);
    agg_federation_leave(f, 1, FEDERATION_LEFT, now + 600);
    agg_federation_get_status(f, &s);
    CHECK(s.round == 3 && s.connected == 1, "a chosen client leaving closes the round when the rest reported");
    sdfed_round_update one = {.client = 2, .base = 2, .samples = 7, .values = u};
    CHECK(same_as_engine(f, &t, &opt, 2, before, &one, 1), "the round's parameters are its one report's combination");
    free(before);

    /* the deadline: client 3 joins; min_clients 1; round 3 has clients 2, 3 */
    agg_federation_join(f, 3, 2, now + 700);
    agg_federation_get_status(f, &s);
    int64_t opened = now + 600; /* round 3 opened when round 2 closed */
    CHECK(s.open && s.round == 3 && s.participants == 1, "round 3 started with client 2 alone (%lld)",
          (long long)s.participants);
    agg_federation_outbox_clear(f);
    agg_federation_tick(f, opened + 999);
    agg_federation_get_status(f, &s);
    CHECK(s.open && s.round == 3, "no report before the deadline: still open");
    char sha_before[65];
    snprintf(sha_before, sizeof sha_before, "%s", agg_federation_get_global(f).sha256);
    agg_federation_tick(f, opened + 1000);
    agg_federation_get_status(f, &s);
    const agg_federation_message *end = find(f, FEDERATION_ROUND_END, FEDERATION_EVERYONE);
    CHECK(s.round == 4 && s.rounds_abandoned == 1 && end && end->abandoned && end->round == 3 && end->next_round == 4 &&
              end->participants == 0 && !strcmp(end->global_sha256, sha_before) && !strcmp(s.global_sha256, sha_before),
          "no report at the deadline: round 3 is abandoned, the parameters stay");
    CHECK(s.open && s.participants == 2 && find(f, FEDERATION_ROUND_START, 3),
          "round 4 starts at once with the client that joined meanwhile");
    free(u);
    u = update_of(f, 4);
    CHECK(send_update(f, 2, 3, 9, u, opened + 1100) == SDFED_CODE_WRONG_ROUND, "a late report for round 3 is refused");
    agg_federation_outbox_clear(f);

    /* both chosen for round 4 leave: the quorum of 1 is out of reach at once */
    agg_federation_leave(f, 2, FEDERATION_LEFT, opened + 1200);
    agg_federation_get_status(f, &s);
    CHECK(s.open && s.round == 4 && s.participants == 1, "one of two left: participants drops to 1");
    agg_federation_leave(f, 3, FEDERATION_LEFT, opened + 1300);
    agg_federation_get_status(f, &s);
    end = find(f, FEDERATION_ROUND_END, FEDERATION_EVERYONE);
    CHECK(s.round == 5 && !s.open && s.rounds_abandoned == 2 && end && end->abandoned,
          "everyone left round 4: abandoned at once, no round until a client comes");
    agg_federation_join(f, 3, 2, opened + 1400);
    w_in_round(f, 3, "round 5 starts with a client that comes back");
    free(u);
    agg_federation_close(f);
    agg_store_close(st);
    sdfed_task_free(&t);
}

static void test_resume(void) {
    char dir[512];
    sdfed_task t = task_of(2, 3);
    agg_federation_options opt = {.min_clients = 2, .deadline_ms = 1000, .max_samples = 1000000};
    agg_store *st = new_store(dir, sizeof dir);
    agg_federation *f = open_federation(&t, st, &opt, 0);
    agg_federation_join(f, 1, 0, 0);
    agg_federation_join(f, 2, 1, 0);
    float *u = update_of(f, 1);
    CHECK(send_update(f, 1, 0, 5, u, 1) == SDFED_CODE_NONE, "a report before the restart");
    agg_federation_status before;
    agg_federation_get_status(f, &before);
    agg_federation_close(f);
    agg_store_close(st);

    sdfed_error err = {0};
    CHECK(agg_store_open(&st, dir, &err) == SDFED_OK, "reopen: %s", err.message);
    f = open_federation(&t, st, &opt, 100);
    agg_federation_status s;
    agg_federation_get_status(f, &s);
    CHECK(s.open && s.round == 0 && s.participants == 2 && s.reported == 1 &&
              !strcmp(s.global_sha256, before.global_sha256),
          "the open round resumes with its clients and its stored report");
    agg_federation_join(f, 1, 0, 110);
    const agg_federation_message *w = find(f, FEDERATION_WAIT, 1);
    CHECK(w && !strcmp(w->reason, "reported"), "a client that reported waits");
    agg_federation_join(f, 2, 1, 120);
    CHECK(find(f, FEDERATION_ROUND_START, 2) != NULL, "a chosen client that comes back gets its round again");
    free(u);
    u = update_of(f, -1);
    CHECK(send_update(f, 2, 0, 5, u, 130) == SDFED_CODE_NONE, "its report after the restart");
    agg_federation_get_status(f, &s);
    CHECK(s.round == 1, "the resumed round closes");
    free(u);
    agg_federation_close(f);
    agg_store_close(st);
    sdfed_task_free(&t);
}

static void test_async(void) {
    char dir[512];
    sdfed_task t = task_of(0, 10);
    agg_federation_options opt = {.async = 1, .buffer = 2, .max_staleness = 1, .min_clients = 1, .max_samples = 100};
    agg_store *st = new_store(dir, sizeof dir);
    agg_federation *f = open_federation(&t, st, &opt, 0);
    for (int64_t c = 1; c <= 3; c++) agg_federation_join(f, c, (int)c, 0);
    CHECK(count(f, FEDERATION_ROUND_START, 1) && count(f, FEDERATION_ROUND_START, 2) &&
              count(f, FEDERATION_ROUND_START, 3),
          "async: every client gets version 0 at once");
    agg_federation_outbox_clear(f);
    float *v0 = copy_global(f), *a = update_of(f, 1), *b = update_of(f, 2), *c = update_of(f, 3);
    CHECK(send_update(f, 1, 0, 10, a, 1) == SDFED_CODE_NONE, "client 1 on version 0");
    CHECK(send_update(f, 1, 0, 10, a, 1) == SDFED_CODE_DUPLICATE_UPDATE, "client 1 again");
    CHECK(send_update(f, 2, 0, 101, b, 1) == SDFED_CODE_BAD_SAMPLES, "more samples than allowed");
    agg_federation_status s;
    agg_federation_get_status(f, &s);
    CHECK(s.round == 0, "one update in a buffer of 2: no new version");
    CHECK(send_update(f, 2, 0, 20, b, 2) == SDFED_CODE_NONE, "client 2 fills the buffer");
    agg_federation_get_status(f, &s);
    CHECK(s.round == 1 && find(f, FEDERATION_ROUND_START, 1) && find(f, FEDERATION_ROUND_START, 2),
          "version 1; the idle clients get it");
    sdfed_round_update first[2] = {{.client = 1, .base = 0, .samples = 10, .values = a},
                                   {.client = 2, .base = 0, .samples = 20, .values = b}};
    CHECK(same_as_engine(f, &t, &opt, 0, v0, first, 2), "version 1 is the engine's combination");
    float *v1 = copy_global(f);
    /* client 3 still trains on version 0: stale by 1, accepted and down-weighted */
    agg_federation_outbox_clear(f);
    CHECK(send_update(f, 3, 0, 30, c, 3) == SDFED_CODE_NONE, "a stale update within max_staleness");
    CHECK(find(f, FEDERATION_ROUND_START, 3) != NULL, "its client gets the newer version at once");
    free(a);
    a = update_of(f, 5);
    CHECK(send_update(f, 1, 1, 10, a, 4) == SDFED_CODE_NONE, "client 1 on version 1");
    agg_federation_get_status(f, &s);
    sdfed_round_update second[2] = {{.client = 3, .base = 0, .samples = 30, .values = c},
                                    {.client = 1, .base = 1, .samples = 10, .values = a}};
    CHECK(s.round == 2 && same_as_engine(f, &t, &opt, 1, v1, second, 2),
          "version 2 weighs the stale update by samples / sqrt(2), in base-version order");
    CHECK(send_update(f, 2, 0, 20, b, 5) == SDFED_CODE_WRONG_ROUND &&
              !strcmp(last_refusal, "version 0 is more than 1 behind the current 2"),
          "an update 2 versions old is refused as stale: %s", last_refusal);
    CHECK(send_update(f, 2, 5, 20, b, 5) == SDFED_CODE_WRONG_ROUND &&
              !strcmp(last_refusal, "version 5 is ahead of the current 2"),
          "an update for a version to come is refused as such: %s", last_refusal);
    free(v0);
    free(v1);
    free(a);
    free(b);
    free(c);
    agg_federation_close(f);
    agg_store_close(st);
    sdfed_task_free(&t);
}

/* Group commit: accepted updates and metrics wait for their batch,
 * unacknowledged and not counted, until it is due (its size, its wait, or
 * when storing its updates could end the round; metrics alone never
 * hurry it); a batch whose commit fails (a full disk: a file size limit on
 * the SQLite write-ahead log) is refused, every update and metrics row in
 * it with server_error, none acknowledged or counted; resent, they are
 * stored together and acknowledged. */
static void test_group_commit(void) {
    char dir[512];
    sdfed_task t = task_of(3, 2);
    agg_federation_options opt = {
        .min_clients = 3, .deadline_ms = 100000, .max_samples = 1000000, .batch_rows = 8, .batch_wait_ms = 5};
    agg_store *st = new_store(dir, sizeof dir);
    agg_federation *f = three_in_round_0(&t, st, &opt);
    agg_federation_status s;
    float *u[3] = {update_of(f, 1), update_of(f, 2), update_of(f, 3)};

    CHECK(send_update(f, 1, 0, 10, u[0], 10) == SDFED_CODE_NONE, "an update is accepted");
    agg_federation_get_status(f, &s);
    CHECK(!find(f, FEDERATION_ACK, 1) && s.reported == 0 && s.updates_accepted == 0,
          "an update waiting for its batch is neither acknowledged nor counted");
    CHECK(agg_federation_flush_in_ms(f, 12) == 3, "its batch is due 5 ms after it came, not %lld",
          (long long)agg_federation_flush_in_ms(f, 12));
    CHECK(send_update(f, 1, 0, 10, u[0], 12) == SDFED_CODE_DUPLICATE_UPDATE, "a second copy while it waits");
    char message[256];
    CHECK(agg_federation_metrics(f, 2, 0, 0.5, 1.0, 10, NULL, 13, message, sizeof message) == SDFED_CODE_NOT_IN_ROUND,
          "metrics of a client whose update for the round is not in are refused: not_in_round");
    CHECK(agg_federation_metrics(f, 1, 0, 0.5, 1.0, 10, NULL, 13, message, sizeof message) == SDFED_CODE_NONE,
          "metrics beside their update are accepted into the same batch");
    agg_federation_flush(f, 14);
    CHECK(!find(f, FEDERATION_ACK, 1), "a batch not due yet is not written");

    /* the disk fills: the batch's commit fails, nothing is acknowledged */
    struct rlimit limit, tiny;
    CHECK(getrlimit(RLIMIT_FSIZE, &limit) == 0, "getrlimit");
    tiny = (struct rlimit){1, limit.rlim_max};
    signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &tiny) == 0, "setrlimit");
    agg_federation_flush(f, 15);
    CHECK(setrlimit(RLIMIT_FSIZE, &limit) == 0, "setrlimit");
    const agg_federation_message *refusal = find(f, FEDERATION_REFUSAL, 1);
    agg_federation_get_status(f, &s);
    CHECK(refusal && refusal->code == SDFED_CODE_SERVER_ERROR && !find(f, FEDERATION_ACK, 1) && s.reported == 0 &&
              s.updates_accepted == 0,
          "a batch that did not commit is refused with server_error, and nothing acknowledged or counted");
    CHECK(count(f, FEDERATION_REFUSAL, 1) == 2 && s.metrics_stored == 0,
          "its metrics are refused with server_error too, and not counted");
    CHECK(agg_federation_flush_in_ms(f, 15) == -1, "nothing waits after a failed batch");
    agg_federation_outbox_clear(f);

    /* resent with another: stored together once due */
    CHECK(send_update(f, 1, 0, 10, u[0], 20) == SDFED_CODE_NONE &&
              send_update(f, 2, 0, 20, u[1], 21) == SDFED_CODE_NONE,
          "two updates accepted");
    agg_federation_tick(f, 22); /* a tick writes what waits: decisions are taken on stored updates */
    agg_federation_get_status(f, &s);
    CHECK(find(f, FEDERATION_ACK, 1) && find(f, FEDERATION_ACK, 2) && s.reported == 2 && s.updates_accepted == 2 &&
              s.open,
          "both acknowledged once their batch is written");
    agg_federation_outbox_clear(f);
    /* the last report could end the round: written at once, and the round closes */
    CHECK(send_update(f, 3, 0, 30, u[2], 30) == SDFED_CODE_NONE, "the last report");
    agg_federation_get_status(f, &s);
    CHECK(find(f, FEDERATION_ACK, 3) && find(f, FEDERATION_ROUND_END, FEDERATION_EVERYONE) && s.rounds_closed == 1,
          "an update that can end the round is written at once, and the round closes");
    /* metrics of the closed round wait for their batch's time, then are stored */
    CHECK(agg_federation_metrics(f, 1, 0, 0.75, 0.5, 10, NULL, 40, message, sizeof message) == SDFED_CODE_NONE &&
              agg_federation_metrics(f, 2, 0, 0.5, 1.0, 10, NULL, 41, message, sizeof message) == SDFED_CODE_NONE,
          "metrics of the round that closed");
    agg_federation_get_status(f, &s);
    CHECK(s.metrics_stored == 0 && agg_federation_flush_in_ms(f, 41) == 4,
          "metrics wait for their batch (%lld stored, due in %lld ms)", (long long)s.metrics_stored,
          (long long)agg_federation_flush_in_ms(f, 41));
    agg_federation_flush(f, 45);
    agg_federation_get_status(f, &s);
    CHECK(s.metrics_stored == 2 && agg_federation_flush_in_ms(f, 45) == -1, "both stored once due (%lld)",
          (long long)s.metrics_stored);
    for (int i = 0; i < 3; i++) free(u[i]);
    agg_federation_close(f);
    agg_store_close(st);
    sdfed_task_free(&t);
}

/* n updates of `samples`, every value FLT_MAX (each finite, accepted):
 * their mean cannot be combined, the weights rounded to float summing past
 * 1 (fed/aggregate.h), as the round engine says. */
static float *overflowing(const agg_federation *f, const sdfed_task *t, const agg_federation_options *opt,
                          int64_t round, const int64_t *samples, int n) {
    agg_federation_global g = agg_federation_get_global(f);
    float *huge = malloc(sizeof *huge * g.n), *next = malloc(sizeof *next * g.n);
    for (size_t j = 0; j < g.n; j++) huge[j] = FLT_MAX;
    sdfed_round_update u[8];
    for (int i = 0; i < n; i++)
        u[i] = (sdfed_round_update){.client = i + 1, .base = round, .samples = samples[i], .values = huge};
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    CHECK(sdfed_round_combine(&opt->aggregate, t->seed, round, u, n, g.values, g.n, next, &arena, NULL) ==
              SDFED_ERR_NUMERIC,
          "the mean of %d updates of FLT_MAX overflows", n);
    sdfed_arena_free(&arena);
    free(next);
    return huge;
}

/* Updates that cannot be combined (their mean overflows): the round is
 * abandoned as soon as it would close, its parameters unchanged and its
 * updates set aside, and the next round runs (after a restart too: nothing
 * is tried again); an asynchronous version the same. */
static void test_uncombinable(void) {
    const int64_t samples[3] = {1, 8, 1};
    char dir[512];
    sdfed_task t = task_of(3, 3);
    agg_federation_options opt = {.min_clients = 3, .deadline_ms = 100000, .max_samples = 1000000};
    agg_store *st = new_store(dir, sizeof dir);
    agg_federation *f = three_in_round_0(&t, st, &opt);
    agg_federation_status s;
    float *huge = overflowing(f, &t, &opt, 0, samples, 3);
    char sha_before[65];
    snprintf(sha_before, sizeof sha_before, "%s", agg_federation_get_global(f).sha256);
    for (int64_t c = 1; c <= 3; c++)
        CHECK(send_update(f, c, 0, samples[c - 1], huge, 10) == SDFED_CODE_NONE, "client %lld's FLT_MAX is accepted",
              (long long)c);
    agg_federation_get_status(f, &s);
    const agg_federation_message *end = find(f, FEDERATION_ROUND_END, FEDERATION_EVERYONE);
    CHECK(find(f, FEDERATION_ACK, 1) && find(f, FEDERATION_ACK, 2) && find(f, FEDERATION_ACK, 3),
          "all three acknowledged");
    CHECK(end && end->abandoned && end->round == 0 && end->next_round == 1 && end->participants == 3 &&
              !strcmp(end->global_sha256, sha_before),
          "round 0 is abandoned at once, its 3 reports set aside, the parameters unchanged");
    CHECK(s.round == 1 && s.open && s.rounds_abandoned == 1 && s.rounds_closed == 0 &&
              !strcmp(s.global_sha256, sha_before),
          "round 1 opens from the same parameters (round %lld, open %d, abandoned %lld)", (long long)s.round, s.open,
          (long long)s.rounds_abandoned);
    agg_federation_tick(f, 2000);
    agg_federation_get_status(f, &s);
    CHECK(s.round == 1 && s.rounds_abandoned == 1, "nothing is tried again on a tick");
    agg_federation_close(f);
    agg_store_close(st);
    sdfed_error err = {0};
    CHECK(agg_store_open(&st, dir, &err) == SDFED_OK, "reopen: %s", err.message);
    f = open_federation(&t, st, &opt, 3000);
    agg_federation_tick(f, 3000);
    agg_federation_get_status(f, &s);
    CHECK(s.round == 1 && s.open && s.reported == 0, "after a restart round 1 resumes without them");
    for (int64_t c = 1; c <= 3; c++) agg_federation_join(f, c, (int)c - 1, 3010);
    float *v = update_of(f, 1);
    for (int64_t c = 1; c <= 3; c++) send_update(f, c, 1, 10, v, 3020);
    agg_federation_get_status(f, &s);
    CHECK(s.round == 2 && s.rounds_closed == 1, "round 1 closes with ordinary updates");
    free(v);
    free(huge);
    agg_federation_close(f);
    agg_store_close(st);

    /* asynchronous: a version's buffer that cannot be combined */
    agg_federation_options async = {.async = 1, .buffer = 3, .max_staleness = 1, .min_clients = 1, .max_samples = 100};
    st = new_store(dir, sizeof dir);
    f = open_federation(&t, st, &async, 0);
    for (int64_t c = 1; c <= 3; c++) agg_federation_join(f, c, (int)c - 1, 0);
    huge = overflowing(f, &t, &async, 0, samples, 3);
    snprintf(sha_before, sizeof sha_before, "%s", agg_federation_get_global(f).sha256);
    agg_federation_outbox_clear(f);
    for (int64_t c = 1; c <= 3; c++) send_update(f, c, 0, samples[c - 1], huge, 10);
    agg_federation_get_status(f, &s);
    end = find(f, FEDERATION_ROUND_END, FEDERATION_EVERYONE);
    CHECK(s.round == 1 && s.rounds_abandoned == 1 && end && end->abandoned && end->participants == 3 &&
              !strcmp(s.global_sha256, sha_before) && find(f, FEDERATION_ROUND_START, 1) &&
              find(f, FEDERATION_ROUND_START, 3),
          "async: version 1 is version 0's parameters, its buffer set aside, and the clients get it");
    v = update_of(f, 1);
    for (int64_t c = 1; c <= 3; c++) send_update(f, c, 1, 10, v, 20);
    agg_federation_get_status(f, &s);
    CHECK(s.round == 2 && s.rounds_closed == 1, "version 2 combines ordinary updates");
    free(v);
    free(huge);
    agg_federation_close(f);
    agg_store_close(st);
    sdfed_task_free(&t);
}

/* A round resumed after a restart keeps its deadline: what was left of
 * it when the store's start says so (here the start moved back in the
 * store, as if the server had been down meanwhile). */
static void test_resume_deadline(void) {
    char dir[512];
    sdfed_task t = task_of(2, 3);
    agg_federation_options opt = {.min_clients = 2, .deadline_ms = 10000, .max_samples = 1000000};
    for (int down_s = 4; down_s <= 60; down_s += 56) {
        agg_store *st = new_store(dir, sizeof dir);
        agg_federation *f = open_federation(&t, st, &opt, 0);
        agg_federation_join(f, 1, 0, 0);
        agg_federation_join(f, 2, 1, 0);
        agg_federation_close(f);
        agg_store_close(st);
        char path[600], sql[96];
        snprintf(path, sizeof path, "%s/aggregator.sqlite", dir);
        snprintf(sql, sizeof sql, "UPDATE rounds SET started = started - %d WHERE round = 0", down_s);
        sqlite3 *db = NULL;
        CHECK(sqlite3_open(path, &db) == SQLITE_OK && sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "%s: %s",
              path, sqlite3_errmsg(db));
        sqlite3_close(db);
        sdfed_error err = {0};
        CHECK(agg_store_open(&st, dir, &err) == SDFED_OK, "reopen: %s", err.message);
        f = open_federation(&t, st, &opt, 100);
        agg_federation_status s;
        if (down_s < 10) {
            agg_federation_join(f, 1, 0, 100);
            const agg_federation_message *m = find(f, FEDERATION_ROUND_START, 1);
            CHECK(m && m->deadline_ms > 0 && m->deadline_ms <= 6000,
                  "down %d s of a 10 s deadline: round 0 resumes with at most 6 s left (%lld ms)", down_s,
                  m ? (long long)m->deadline_ms : -1);
        } else {
            agg_federation_tick(f, 100);
            agg_federation_get_status(f, &s);
            CHECK(s.round == 1 && s.rounds_abandoned == 1,
                  "down %d s, past the 10 s deadline: round 0 is abandoned on the first tick (round %lld)", down_s,
                  (long long)s.round);
        }
        agg_federation_close(f);
        agg_store_close(st);
    }
    sdfed_task_free(&t);
}

/* A chosen client that comes back: its connection replaced while the old
 * one was open, or lost and back within the grace, it is due in the round
 * again (round_start with the time left) and its update counts, and the
 * round closes bit for bit as if it had never left; lost past the grace,
 * or closed on purpose, it is out of the round (here: abandoned, all three
 * were needed). */
static void test_rejoin(void) {
    char dir[512];
    sdfed_task t = task_of(3, 4);
    agg_federation_options opt = {
        .min_clients = 3, .deadline_ms = 10000, .max_samples = 1000000, .rejoin_grace_ms = 500};
    agg_store *st = new_store(dir, sizeof dir);
    agg_federation *f = three_in_round_0(&t, st, &opt);
    agg_federation_status s;

    /* 2 says hello again while its old connection is open (a phone whose network blinked) */
    agg_federation_join(f, 2, 1, 100);
    int n;
    const agg_federation_message *out = agg_federation_outbox(f, &n);
    CHECK(n == 2 && out[0].type == FEDERATION_WELCOME && out[0].client == 2 && out[1].type == FEDERATION_ROUND_START &&
              out[1].client == 2 && out[1].round == 0 && out[1].deadline_ms == 9900,
          "a replaced connection: welcome first, then round 0 again with 9900 ms left");
    agg_federation_get_status(f, &s);
    CHECK(s.connected == 3 && s.participants == 3, "it never left: 3 connected, 3 in the round");
    agg_federation_outbox_clear(f);

    /* 3's connection is lost: its place is kept; 1 and 2 report; the round waits for 3 */
    agg_federation_leave(f, 3, FEDERATION_LOST, 200);
    agg_federation_get_status(f, &s);
    CHECK(s.open && s.connected == 2 && s.participants == 3, "a lost connection keeps its place (%lld in the round)",
          (long long)s.participants);
    float *before = copy_global(f), *u1 = update_of(f, 1), *u2 = update_of(f, 2), *u3 = update_of(f, 3);
    CHECK(send_update(f, 1, 0, 10, u1, 300) == SDFED_CODE_NONE && send_update(f, 2, 0, 20, u2, 300) == SDFED_CODE_NONE,
          "1 and 2 report");
    agg_federation_tick(f, 699);
    agg_federation_get_status(f, &s);
    CHECK(s.open && s.round == 0 && s.reported == 2, "the round waits for 3 within its grace");
    agg_federation_outbox_clear(f);
    agg_federation_join(f, 3, 2, 400);
    const agg_federation_message *again = find(f, FEDERATION_ROUND_START, 3);
    CHECK(again && again->round == 0 && again->deadline_ms == 9600, "3 is back: round 0 again, 9600 ms left");
    agg_federation_tick(f, 800); /* its grace would have ended: nothing happens, it came back */
    CHECK(send_update(f, 3, 0, 30, u3, 900) == SDFED_CODE_NONE, "its update counts");
    agg_federation_get_status(f, &s);
    sdfed_round_update all[3] = {{.client = 1, .base = 0, .samples = 10, .values = u1},
                                 {.client = 2, .base = 0, .samples = 20, .values = u2},
                                 {.client = 3, .base = 0, .samples = 30, .values = u3}};
    CHECK(s.round == 1 && s.rounds_closed == 1 && same_as_engine(f, &t, &opt, 0, before, all, 3),
          "round 0 closes with the three, bit for bit as if 3 had never left");
    agg_federation_outbox_clear(f);

    /* round 1: 1's connection is lost and it does not come back: out at the end of its grace */
    agg_federation_leave(f, 1, FEDERATION_LOST, 1000);
    agg_federation_tick(f, 1499);
    agg_federation_get_status(f, &s);
    CHECK(s.open && s.round == 1, "round 1 waits within 1's grace");
    agg_federation_tick(f, 1500);
    agg_federation_get_status(f, &s);
    const agg_federation_message *end = find(f, FEDERATION_ROUND_END, FEDERATION_EVERYONE);
    CHECK(s.round == 2 && s.rounds_abandoned == 1 && end && end->abandoned,
          "past its grace 1 is out: round 1 cannot reach its 3 reports, abandoned");
    agg_federation_join(f, 1, 0, 1600);
    agg_federation_get_status(f, &s);
    CHECK(s.open && s.round == 2 && find(f, FEDERATION_ROUND_START, 1), "1 comes back later: round 2 starts with it");
    agg_federation_outbox_clear(f);

    /* round 2: 2 closes its connection on purpose: out at once */
    agg_federation_leave(f, 2, FEDERATION_LEFT, 1700);
    agg_federation_get_status(f, &s);
    CHECK(s.round == 3 && s.rounds_abandoned == 2,
          "a client that closed on purpose leaves at once (round 2 abandoned)");
    agg_federation_join(f, 2, 1, 1800);
    agg_federation_outbox_clear(f);
    /* round 3: with no grace (0), a lost connection is out at once, as a close is */
    agg_federation_close(f);
    opt.rejoin_grace_ms = 0;
    f = open_federation(&t, st, &opt, 2000);
    for (int64_t c = 1; c <= 3; c++) agg_federation_join(f, c, (int)c - 1, 2000);
    agg_federation_get_status(f, &s);
    CHECK(s.open && s.round == 3, "round 3 resumed after a restart");
    agg_federation_leave(f, 3, FEDERATION_LOST, 2100);
    agg_federation_get_status(f, &s);
    CHECK(s.round == 4 && s.done && s.rounds_abandoned == 1, "without a grace a lost connection is out at once");
    free(before);
    free(u1);
    free(u2);
    free(u3);
    agg_federation_outbox_clear(f);
    agg_federation_close(f);
    agg_store_close(st);
    sdfed_task_free(&t);
}

/* Metrics count only from a client whose update for that round was
 * accepted: ten clients that were in no round send metrics for rounds 0 to
 * 2, before and after round 0 closes, and every one is refused (the open
 * round's and the rounds ahead at once, a past round's once the store
 * found no update beside it); the accuracy history holds the two
 * reporters' alone. */
static void test_metrics(void) {
    char dir[512];
    sdfed_task t = task_of(2, 3);
    agg_federation_options opt = {
        .min_clients = 2, .deadline_ms = 100000, .max_samples = 1000, .batch_rows = 64, .batch_wait_ms = 5};
    agg_store *st = new_store(dir, sizeof dir);
    agg_federation *f = open_federation(&t, st, &opt, 0);
    agg_federation_join(f, 1, 0, 0);
    agg_federation_join(f, 2, 1, 0);
    char message[256];
    int refused = 0;
    for (int64_t c = 100; c < 110; c++) /* round 0 is open without them; 1 and 2 are ahead */
        refused +=
            agg_federation_metrics(f, c, 0, 0.0, 1.0, 10, NULL, 1, message, sizeof message) ==
                SDFED_CODE_NOT_IN_ROUND &&
            agg_federation_metrics(f, c, 1, 0.0, 1.0, 10, NULL, 1, message, sizeof message) == SDFED_CODE_WRONG_ROUND &&
            agg_federation_metrics(f, c, 2, 0.0, 1.0, 10, NULL, 1, message, sizeof message) == SDFED_CODE_WRONG_ROUND;
    CHECK(refused == 10, "metrics from clients in no round, for the open round and later ones, refused (%d)", refused);
    CHECK(agg_federation_metrics(f, 1, 0, 0.5, 1.0, 10, NULL, 2, message, sizeof message) == SDFED_CODE_NOT_IN_ROUND,
          "metrics before the update: not_in_round");
    float *u = update_of(f, 1);
    CHECK(send_update(f, 1, 0, 10, u, 3) == SDFED_CODE_NONE && send_update(f, 2, 0, 10, u, 3) == SDFED_CODE_NONE,
          "both report round 0");
    agg_federation_status s;
    agg_federation_get_status(f, &s);
    CHECK(s.round == 1 && s.open, "round 0 closed");
    CHECK(agg_federation_metrics(f, 1, 0, 0.5, 1.0, 10, NULL, 4, message, sizeof message) == SDFED_CODE_NONE &&
              agg_federation_metrics(f, 2, 0, 0.5, 1.0, 1000, NULL, 4, message, sizeof message) == SDFED_CODE_NONE,
          "the reporters' metrics of round 0");
    CHECK(agg_federation_metrics(f, 2, 0, 0.5, 1.0, 1001, NULL, 4, message, sizeof message) == SDFED_CODE_BAD_MESSAGE,
          "more test samples than --max-samples: bad_message");
    agg_federation_outbox_clear(f);
    for (int64_t c = 100; c < 110; c++) {
        CHECK(agg_federation_metrics(f, c, 0, 0.0, 1.0, 10, NULL, 5, message, sizeof message) == SDFED_CODE_NONE,
              "a past round's metrics wait for the store's verdict");
        CHECK(agg_federation_metrics(f, c, 1, 0.0, 1.0, 10, NULL, 5, message, sizeof message) ==
                      SDFED_CODE_NOT_IN_ROUND &&
                  agg_federation_metrics(f, c, 2, 0.0, 1.0, 10, NULL, 5, message, sizeof message) ==
                      SDFED_CODE_WRONG_ROUND,
              "round 1 (open without them) and round 2 (ahead) refused at once");
    }
    agg_federation_flush(f, 20);
    refused = 0;
    for (int64_t c = 100; c < 110; c++) {
        const agg_federation_message *r = find(f, FEDERATION_REFUSAL, c);
        refused += r && r->code == SDFED_CODE_NOT_IN_ROUND && strstr(r->text, "no update accepted");
    }
    agg_federation_get_status(f, &s);
    CHECK(refused == 10 && s.metrics_stored == 2 && !find(f, FEDERATION_REFUSAL, 1) && !find(f, FEDERATION_REFUSAL, 2),
          "once written: the ten refused (not_in_round, %d), the two reporters' stored (%lld)", refused,
          (long long)s.metrics_stored);
    int64_t *rounds, *clients;
    double *accuracy;
    int n;
    CHECK(agg_store_accuracy_history(st, &rounds, &accuracy, &clients, &n, NULL) == SDFED_OK && n == 1 &&
              rounds[0] == 0 && accuracy[0] == 0.5 && clients[0] == 2,
          "the accuracy history is the reporters' alone: %d rounds, round 0 %g from %lld clients", n,
          n ? accuracy[0] : -1.0, n ? (long long)clients[0] : -1LL);
    free(rounds);
    free(accuracy);
    free(clients);
    free(u);
    agg_federation_outbox_clear(f);
    agg_federation_close(f);
    agg_store_close(st);
    sdfed_task_free(&t);
}

/* pace steering (fed/pace.h): client 2 of two misses rounds 1, 2 and 3 at
 * their deadline (client 1 reports each); it sits out round 4, told
 * "paced" with the rounds' longest time as retry_after, is sampled for
 * round 5, misses it and, the server restarted then, sits out 6 and 7; an
 * update forgets its misses.
 * With min_clients 2 nobody sits out (too few would be left). */
static void test_pace_steering(void) {
    char dir[512];
    sdfed_task t = task_for(2, 2, 12);
    agg_federation_options opt = {.min_clients = 1, .deadline_ms = 1000, .round_pause_ms = 500, .max_samples = 1000000};
    agg_store *st = new_store(dir, sizeof dir);
    agg_federation *f = open_federation(&t, st, &opt, 0);
    agg_federation_join(f, 1, 0, 0); /* round 0 starts with client 1 alone */
    agg_federation_join(f, 2, 1, 0);
    float *u = update_of(f, 1);
    CHECK(send_update(f, 1, 0, 5, u, 1) == SDFED_CODE_NONE, "client 1 reports round 0");
    free(u);
    int64_t now = 600; /* past the pause */
    agg_federation_tick(f, now);
    int chosen[9] = {0};
    int64_t retry[9] = {0};
    for (int r = 1; r <= 7; r++) {
        agg_federation_status s;
        agg_federation_get_status(f, &s);
        CHECK(s.open && s.round == r, "round %d is open", r);
        const agg_federation_message *wait = find(f, FEDERATION_WAIT, 2);
        chosen[r] = find(f, FEDERATION_ROUND_START, 2) != NULL;
        retry[r] = wait && !strcmp(wait->reason, "paced") ? wait->retry_after_ms : -1;
        agg_federation_outbox_clear(f);
        u = update_of(f, 1);
        CHECK(send_update(f, 1, r, 5, u, now + 10) == SDFED_CODE_NONE, "client 1 reports round %d", r);
        free(u);
        now += 1000; /* the deadline: round r closes with client 1's report */
        agg_federation_tick(f, now);
        if (r == 5) { /* a restart after the fourth miss: the process forgets, the store does not */
            agg_federation_close(f);
            f = open_federation(&t, st, &opt, now);
            agg_federation_join(f, 1, 0, now);
            agg_federation_join(f, 2, 1, now);
        }
        now += 500; /* the pause */
        agg_federation_tick(f, now);
    }
    CHECK(chosen[1] && chosen[2] && chosen[3], "client 2 is sampled for rounds 1, 2 and 3 (misses 1, 2, 3)");
    CHECK(!chosen[4] && retry[4] == 1500, "after 3 misses it sits out round 4, told paced, retry_after %lld",
          (long long)retry[4]);
    CHECK(chosen[5], "it is sampled again for round 5");
    CHECK(!chosen[6] && !chosen[7] && retry[6] == 3000 && retry[7] == 1500,
          "a fourth miss, then a restart: rounds 6 and 7 sat out (retry_after %lld, %lld)", (long long)retry[6],
          (long long)retry[7]);
    agg_federation_status s;
    agg_federation_get_status(f, &s);
    CHECK(s.round == 8 && find(f, FEDERATION_ROUND_START, 2), "back for round 8");
    u = update_of(f, 2);
    CHECK(send_update(f, 2, 8, 5, u, now + 10) == SDFED_CODE_NONE &&
              send_update(f, 1, 8, 5, u, now + 10) == SDFED_CODE_NONE,
          "both report round 8");
    free(u);
    agg_federation_tick(f, now + 500);
    agg_federation_get_status(f, &s);
    CHECK(s.round == 9 && find(f, FEDERATION_ROUND_START, 2), "an update forgets the misses: sampled for round 9");
    agg_pace_board stored = {0};
    CHECK(agg_store_pace(st, &stored, NULL) == SDFED_OK && stored.n == 0,
          "and the store forgets them with it: %d pace rows", stored.n);
    agg_pace_free(&stored);
    agg_federation_close(f);
    agg_store_close(st);

    opt.min_clients = 2;
    st = new_store(dir, sizeof dir);
    f = open_federation(&t, st, &opt, 0);
    agg_federation_join(f, 1, 0, 0);
    agg_federation_join(f, 2, 1, 0);
    now = 0;
    int always = 1;
    for (int r = 0; r < 5; r++) {
        always &= find(f, FEDERATION_ROUND_START, 2) != NULL;
        agg_federation_outbox_clear(f);
        now += 1000; /* nobody reports: abandoned at the deadline */
        agg_federation_tick(f, now);
        now += 500;
        agg_federation_tick(f, now);
    }
    CHECK(always, "with min_clients 2 of 2 connected, a client that keeps missing is still sampled");
    agg_federation_close(f);
    agg_store_close(st);
    sdfed_task_free(&t);
}

/* metrics' device figures (devices.h): the task's lengths' count or
 * bad_message naming step_ms; the latest a client's, summarised, and
 * kept by a restart */
static void test_device_figures(void) {
    char dir[512];
    sdfed_task t = task_for(2, 2, 3);
    t.local_prompt = (sdfed_local_prompt){.rule = SDFED_LOCAL_RULE_RANDOM, .n_lengths = 2, .lengths = {4, 16}};
    agg_federation_options opt = {.min_clients = 2, .deadline_ms = 1000, .max_samples = 1000000};
    agg_store *st = new_store(dir, sizeof dir);
    agg_federation *f = open_federation(&t, st, &opt, 0);
    agg_federation_join(f, 1, 0, 0);
    agg_federation_join(f, 2, 1, 0);
    float *u = update_of(f, 1);
    CHECK(send_update(f, 1, 0, 5, u, 1) == SDFED_CODE_NONE && send_update(f, 2, 0, 5, u, 1) == SDFED_CODE_NONE,
          "both report round 0");
    free(u);
    char message[256];
    agg_device_figures one = {.client = 1, .n_step_ms = 1, .step_ms = {10}, .threads = 4, .kernels = "native"};
    CHECK(agg_federation_metrics(f, 1, 0, 0.5, 1.0, 10, &one, 2, message, sizeof message) == SDFED_CODE_BAD_MESSAGE &&
              strstr(message, "'step_ms'"),
          "one step time for a task of two lengths: bad_message naming step_ms (%s)", message);
    one.n_step_ms = 2;
    one.step_ms[1] = 30;
    agg_device_figures two = {.client = 2, .n_step_ms = 2, .step_ms = {20, 60}, .threads = 1, .kernels = "simd128"};
    CHECK(agg_federation_metrics(f, 1, 0, 0.5, 1.0, 10, &one, 3, message, sizeof message) == SDFED_CODE_NONE &&
              agg_federation_metrics(f, 2, 0, 0.5, 1.0, 10, &two, 3, message, sizeof message) == SDFED_CODE_NONE,
          "both clients' figures accepted");
    one.step_ms[0] = 12;
    CHECK(agg_federation_metrics(f, 1, 0, 0.5, 1.0, 10, &one, 4, message, sizeof message) == SDFED_CODE_NONE,
          "client 1's new figures");
    agg_devices_summary d;
    CHECK(agg_federation_get_devices(f, &d) == SDFED_OK && d.count == 2 && d.n_lengths == 2 && d.lengths[1] == 16 &&
              d.p10[0] == 12 && d.p50[0] == 12 && d.p90[0] == 20 && d.p50[1] == 30 && d.p90[1] == 60,
          "two devices, the latest figures, their percentiles by length");
    CHECK(d.n_threads == 2 && d.threads[0].threads == 1 && d.threads[0].devices == 1 && d.n_kernels == 2 &&
              !strcmp(d.kernels[0].kernels, "native"),
          "counted by threads and kernels");
    agg_federation_close(f);
    f = open_federation(&t, st, &opt, 10);
    agg_devices_summary again;
    CHECK(agg_federation_get_devices(f, &again) == SDFED_OK && !memcmp(&again, &d, sizeof d),
          "after a restart, the same devices");
    agg_federation_close(f);
    agg_store_close(st);
    sdfed_task_free(&t);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_federation MODEL.gguf STATE_DIR\n");
        return 2;
    }
    state_root = argv[2];
    mkdir(state_root, 0755);
    sdfed_error err = {0};
    sdfed_task defaults; /* the tasks here are Fashion-MNIST's, with its classes */
    sdfed_task_defaults(&defaults);
    if (native_task_host_defaults(&defaults, &err) || native_model_open(&model, argv[1], &err) ||
        sdfed_task_classes(&defaults, &model.tokenizer, model.clip.cfg.context_length, &cls, &err)) {
        fprintf(stderr, "test_federation: %s\n", err.message);
        return 1;
    }
    if (check_case("sync_rounds")) test_sync_rounds();
    if (check_case("waiting")) test_waiting();
    if (check_case("dropout_and_deadline")) test_dropout_and_deadline();
    if (check_case("resume")) test_resume();
    if (check_case("async")) test_async();
    if (check_case("group_commit")) test_group_commit();
    if (check_case("rejoin")) test_rejoin();
    if (check_case("metrics")) test_metrics();
    if (check_case("pace_steering")) test_pace_steering();
    if (check_case("device_figures")) test_device_figures();
    if (check_case("uncombinable")) test_uncombinable();
    if (check_case("resume_deadline")) test_resume_deadline();
    sdfed_classes_free(&cls);
    sdfed_task_free(&defaults);
    native_model_close(&model);
    return check_report("test_federation");
}
