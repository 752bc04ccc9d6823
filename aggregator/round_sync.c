/* The synchronous round policy (round_policy.h; docs/protocol.md): round r
 * starts when at least min_clients are connected, after an optional pause
 * from the last one's end (time for volunteers to join); the round engine
 * (fed/round.h, the simulator's too) chooses its clients among the
 * connected ones sorted by shard then id, and they get round_start, the
 * others wait. A client that closes its connection (a close frame, or
 * leave) leaves its round for good; one whose connection is lost (it ends
 * without a close: a crash, the network) keeps its place for
 * rejoin_grace_ms, and one that says hello again, on a new connection
 * while the old one is still open or within that grace, is due in the
 * round again (round_start with the time left) and its update counts, as
 * if it had never left; past the grace it is out. The engine sees a client
 * leave only when it is out, and decides when the round ends: it closes
 * when its target reported, or every chosen client still in it reported
 * and at least min_clients did, or at its deadline with min_clients
 * reports; it is abandoned (the parameters stay, stored and announced as
 * such) as soon as min_clients reports cannot be reached, or at the
 * deadline without them (and, by the core, when its reports cannot be
 * combined: round_end.c). A closed round's reports are combined in the
 * order its clients were chosen. After a restart the open round resumes
 * with its chosen clients, stored updates and what was left of its
 * deadline, and a chosen client that comes back is sent the round again. Why no round is open (too few
 * clients, the pause, a cluster's front-end) is decided here.
 *
 * In cluster mode (federation.h) only the coordinator decides: it chooses
 * among every node's connected clients and judges the open round on every
 * tick; every node, the coordinator too, learns of starts and ends from
 * the store (cluster_sync.h) and keeps its clients' presence there
 * (presence.h). */
#include "round_sync.h"

#include <stdlib.h>
#include <string.h>

#include "cluster_sync.h"
#include "core.h"
#include "base/grow.h"
#include "native/clock.h"
#include "native/log.h"

agg_round_sync *agg_round_sync_of(const agg_federation *f) { return f->rounds; }

/* round_start with the time left until the round's deadline */
static void send_round(agg_federation *f, int64_t client, int64_t now_ms) {
    const agg_round_sync *s = agg_round_sync_of(f);
    agg_outbox_round_start(&f->out, client, f->round, s->deadline > now_ms ? s->deadline - now_ms : 0);
}

/* wait: paced (with the longest the rounds it sits out take: each its
 * deadline and the pause after it), or for `reason` */
static void send_wait(agg_federation *f, int64_t client, const char *reason) {
    int64_t out = agg_pace_rounds_out(&f->pace, client, f->round);
    if (out > 0)
        agg_outbox_wait_paced(&f->out, client, f->round, out * (f->opt.deadline_ms + f->opt.round_pause_ms));
    else
        agg_outbox_wait(&f->out, client, f->round, reason);
}

void agg_round_sync_announce(agg_federation *f, int64_t now_ms) {
    const agg_round_sync *s = agg_round_sync_of(f);
    for (int i = 0; i < f->clients.n; i++) {
        if (sdfed_round_due(&s->current, f->clients.clients[i].id))
            send_round(f, f->clients.clients[i].id, now_ms);
        else
            send_wait(f, f->clients.clients[i].id, "not_sampled");
    }
}

/* ------------------------------------------------------------ starting */

/* Starts the next round if nothing holds it back. */
static void start_round_if_due(agg_federation *f, int64_t now_ms) {
    agg_round_sync *s = agg_round_sync_of(f);
    if (s->open || f->done || !agg_core_deciding(f) || now_ms < s->next_start) return;
    if (!f->cl && (f->clients.n < f->opt.min_clients || f->clients.n == 0)) return;
    sdfed_round next = {0};
    if (agg_core_round_choose(f, &s->sampler, &next, &s->present, now_ms)) return;
    if (f->cl) { /* announced as every node learns of it */
        sdfed_round_free(&next);
        agg_cluster_catch_up(f, now_ms);
        return;
    }
    sdfed_round_free(&s->current);
    s->current = next;
    s->open = 1;
    s->deadline = now_ms + f->opt.deadline_ms;
    agg_round_sync_announce(f, now_ms);
}

static void maybe_start_round(agg_federation *f, int64_t now_ms) {
    start_round_if_due(f, now_ms);
    agg_core_note_waiting(f, now_ms);
}

/* ------------------------------------------------------------- ending */

/* Ends the round when the engine says so. */
static void check_round(agg_federation *f, int64_t now_ms) {
    const agg_round_sync *s = agg_round_sync_of(f);
    if (s->open && agg_core_deciding(f))
        agg_core_round_act(f, sdfed_round_check(&s->current, f->opt.min_clients, 0), now_ms);
}

/* The round's counts at its deadline (EVENT deadline) or when it is abandoned. */
static void log_round_counts(const char *event, const agg_federation *f, const sdfed_round *r) {
    native_log_line line;
    native_log_open(&line, event);
    sdfed_jw_int(&line.w, "round", f->round);
    sdfed_jw_int(&line.w, "reported", r->n_reported);
    sdfed_jw_int(&line.w, "still_in", sdfed_round_still_in(r));
    sdfed_jw_int(&line.w, "of", r->n_clients);
    native_log_close(&line);
}

/* The parameters stay, its reports are set aside. */
static int sync_abandon(agg_federation *f, int64_t now_ms) {
    const agg_round_sync *s = agg_round_sync_of(f);
    int rc = agg_core_round_abandoned(f, s->current.n_reported, now_ms);
    if (rc) return rc;
    log_round_counts("round_abandoned", f, &s->current);
    agg_core_round_next(f, now_ms, s->current.n_reported, 1);
    return SDFED_OK;
}

/* In the order the round's clients were chosen, as the simulator trains them. */
static int sync_order(const agg_federation *f, sdfed_round_update *u, int n, sdfed_error *err) {
    return sdfed_round_order(&agg_round_sync_of(f)->current, u, n, err);
}

static void sync_ended(agg_federation *f, int decided_here, int64_t now_ms) {
    agg_round_sync *s = agg_round_sync_of(f);
    s->open = 0;
    s->deadline_noted = 0;
    sdfed_round_free(&s->current);
    s->next_start = now_ms + f->opt.round_pause_ms;
    if (decided_here) start_round_if_due(f, now_ms);
}

/* ------------------------------------------------------------ clients */

/* The client's place kept while its connection was lost: forgotten (it
 * came back, or its time is up); whether it had one. */
static int sync_comes_back(agg_federation *f, int64_t client) {
    agg_round_sync *s = agg_round_sync_of(f);
    for (int i = 0; i < s->n_away; i++)
        if (s->away[i].client == client) {
            s->away[i] = s->away[--s->n_away];
            return 1;
        }
    return 0;
}

static void sync_joined(agg_federation *f, int64_t client, int64_t now_ms) {
    const agg_round_sync *s = agg_round_sync_of(f);
    if (s->open) {
        /* a client that left its round is out of it for good; one whose
         * connection was replaced or lost (and that is back in time), and
         * after a restart the open round's clients, are due until they
         * report; one that sits the round out is told when to come back */
        if (sdfed_round_due(&s->current, client))
            send_round(f, client, now_ms);
        else if (sdfed_round_reported(&s->current, client))
            agg_outbox_wait(&f->out, client, f->round, "reported");
        else
            send_wait(f, client, "round_in_progress");
        return;
    }
    if (!f->cl) maybe_start_round(f, now_ms); /* a cluster's coordinator starts rounds on its ticks */
    if (!s->open) agg_outbox_wait(&f->out, client, f->round, "too_few_clients");
}

/* A chosen client whose connection was lost keeps its place for the grace. */
static int sync_keeps_place(agg_federation *f, int64_t client, agg_federation_departure how, int64_t now_ms) {
    agg_round_sync *s = agg_round_sync_of(f);
    if (how != FEDERATION_LOST || f->opt.rejoin_grace_ms <= 0 || !s->open || !sdfed_round_due(&s->current, client))
        return 0;
    agg_round_sync_away *grown = sdfed_grow(s->away, &s->cap_away, s->n_away, sizeof *grown);
    if (!grown) return 0;
    s->away = grown;
    s->away[s->n_away++] = (agg_round_sync_away){.client = client, .until = now_ms + f->opt.rejoin_grace_ms};
    return 1;
}

/* Out of the round at once (a cluster node records the departure). */
static void sync_left(agg_federation *f, int64_t client, int64_t now_ms) {
    agg_round_sync *s = agg_round_sync_of(f);
    if (f->cl) {
        int due = s->open && sdfed_round_due(&s->current, client);
        agg_presence_depart(f, client, due ? f->round : -1);
    } else if (s->open && sdfed_round_leave(&s->current, client) >= 0) {
        check_round(f, now_ms);
    }
}

/* Clients whose connection was lost and who did not come back within the
 * grace: out of the round now (a cluster node records the departure from
 * the round open then, if they are due in it). */
static void expire_away(agg_federation *f, int64_t now_ms) {
    agg_round_sync *s = agg_round_sync_of(f);
    for (int i = 0; i < s->n_away;) {
        agg_round_sync_away a = s->away[i];
        if (now_ms < a.until) {
            i++;
            continue;
        }
        s->away[i] = s->away[--s->n_away];
        int due = s->open && sdfed_round_due(&s->current, a.client);
        native_log_line line;
        native_log_open(&line, "gone");
        sdfed_jw_int(&line.w, "client", a.client);
        sdfed_jw_int(&line.w, "round", f->round);
        sdfed_jw_bool(&line.w, "due", due);
        native_log_close(&line);
        if (f->cl)
            agg_presence_depart(f, a.client, due ? f->round : -1);
        else if (due && sdfed_round_leave(&s->current, a.client) >= 0)
            check_round(f, now_ms);
    }
}

/* ------------------------------------------------------------ reports */

static sdfed_code sync_admit_update(agg_federation *f, int64_t client, int64_t round, char *message, size_t cap) {
    const agg_round_sync *s = agg_round_sync_of(f);
    if (!s->open || round != f->round)
        return agg_core_refuse(message, cap, SDFED_CODE_WRONG_ROUND, "round %lld is not open; the %s round is %lld",
                               (long long)round, s->open ? "current" : "next", (long long)f->round);
    if (sdfed_round_index(&s->current, client) < 0)
        return agg_core_refuse(message, cap, SDFED_CODE_NOT_IN_ROUND, "client %lld was not chosen for round %lld",
                               (long long)client, (long long)round);
    if (sdfed_round_reported(&s->current, client))
        return agg_core_refuse(message, cap, SDFED_CODE_DUPLICATE_UPDATE, "round %lld already has this client's update",
                               (long long)round);
    return SDFED_CODE_NONE;
}

/* The open round's reports are known here; an earlier round's (and a
 * cluster's) the store checks as it writes. */
static sdfed_code sync_admit_metrics(agg_federation *f, int64_t client, int64_t round, char *message, size_t cap) {
    const agg_round_sync *s = agg_round_sync_of(f);
    if (!f->cl && round == f->round &&
        !(s->open && (sdfed_round_reported(&s->current, client) || agg_group_commit_holds(&f->batch, round, client))))
        return agg_core_refuse(message, cap, SDFED_CODE_NOT_IN_ROUND,
                               "metrics for round %lld: client %lld has no update accepted in that round",
                               (long long)round, (long long)client);
    return SDFED_CODE_NONE;
}

/* Its target or every client still in it (a single process's: in a
 * cluster the coordinator judges the round on its ticks). */
static int sync_could_end(const agg_federation *f, int waiting) {
    const agg_round_sync *s = agg_round_sync_of(f);
    int reports = s->current.n_reported + waiting;
    return !f->cl && (reports >= s->current.target || reports >= sdfed_round_still_in(&s->current));
}

static void sync_stored(agg_federation *f, const agg_store_new_update *u) {
    if (u->round == f->round) sdfed_round_report(&agg_round_sync_of(f)->current, u->client);
    agg_pace_reported(&f->pace, u->client);
}

static void sync_written(agg_federation *f, const agg_group_commit *g, int64_t now_ms) { check_round(f, now_ms); }

/* --------------------------------------------------------------- time */

/* Pace steering (pace.h): the chosen clients still due at the deadline
 * missed the round (those that left it did not); those that reported are
 * forgiven (in a cluster, also the clients of other nodes); the clients
 * whose state changed are written to the store. */
static void note_misses(agg_federation *f) {
    const agg_round_sync *s = agg_round_sync_of(f);
    agg_pace_client *changed = malloc(sizeof *changed * (size_t)(s->current.n_clients ? s->current.n_clients : 1));
    int n_changed = 0;
    for (int i = 0; i < s->current.n_clients; i++) {
        int64_t client = s->current.clients[i];
        sdfed_pace before = agg_pace_state(&f->pace, client);
        if (sdfed_round_reported(&s->current, client)) agg_pace_reported(&f->pace, client);
        int due = sdfed_round_due(&s->current, client);
        native_log_line line;
        if (due && agg_pace_missed(&f->pace, client, f->round)) {
            native_log_open(&line, "error");
            sdfed_jw_string(&line.w, "message", "out of memory noting a missed round");
            native_log_close(&line);
        } else if (due && agg_pace_rounds_out(&f->pace, client, f->round + 1)) {
            native_log_open(&line, "paced");
            sdfed_jw_int(&line.w, "client", client);
            sdfed_jw_int(&line.w, "round", f->round);
            sdfed_jw_int(&line.w, "rounds_out", agg_pace_rounds_out(&f->pace, client, f->round + 1));
            native_log_close(&line);
        }
        sdfed_pace after = agg_pace_state(&f->pace, client);
        if (changed && (after.misses != before.misses || after.back_at != before.back_at))
            changed[n_changed++] = (agg_pace_client){.client = client, .pace = after};
    }
    /* the changes stored (pace.h), so that a restart, and a coordinator that
     * takes over, keeps them; not when memory or the store fails (the store
     * reports its fault): pace steering only advises the choice */
    if (n_changed) agg_store_set_pace(f->st, changed, n_changed, NULL);
    free(changed);
}

/* Places kept past their grace; a cluster node's leases, store and
 * presence; then, where rounds are decided, the next round, or the open
 * one judged (its deadline noted once, when it passes). Judged on every
 * tick, a round whose end the store refused is ended again: the same
 * verdict, or the deadline's, which no refusal holds back. */
static void sync_tick(agg_federation *f, int64_t now_ms) {
    agg_round_sync *s = agg_round_sync_of(f);
    expire_away(f, now_ms);
    if (f->cl) {
        agg_cluster_follow(f, now_ms);
        agg_presence_retry(f);
    }
    if (!agg_core_deciding(f)) return;
    if (!s->open) maybe_start_round(f, now_ms);
    if (!s->open) return;
    int passed = now_ms >= s->deadline;
    if (passed && !s->deadline_noted) {
        s->deadline_noted = 1;
        log_round_counts("deadline", f, &s->current);
        note_misses(f);
    }
    agg_core_round_act(f, sdfed_round_check(&s->current, f->opt.min_clients, passed), now_ms);
}

/* ------------------------------------------------------------- status */

static void sync_waiting(const agg_federation *f, int64_t now_ms, agg_federation_waiting *w) {
    const agg_round_sync *s = agg_round_sync_of(f);
    if (f->cl && agg_core_deciding(f)) w->connected = s->present;
    w->reason = agg_core_round_wait_reason(f, w, s->open, s->next_start, now_ms);
}

static void sync_status(const agg_federation *f, agg_federation_status *st) {
    const agg_round_sync *s = agg_round_sync_of(f);
    st->open = s->open;
    st->participants = sdfed_round_still_in(&s->current);
    st->reported = s->current.n_reported;
}

/* ------------------------------------------------------------ restart */

/* A resumed round's deadline: --deadline from its start as the store holds
 * it (this machine's wall clock), what is left of it now; all of it when
 * the clock was set back past the start. */
static int64_t resumed_deadline(const agg_federation *f, const agg_store_round *r, int64_t now_ms) {
    double elapsed_ms = 1e3 * (native_clock_seconds(native_clock_wall_ns()) - r->started_at);
    if (!(elapsed_ms > 0)) return now_ms + f->opt.deadline_ms;
    return elapsed_ms >= (double)f->opt.deadline_ms ? now_ms : now_ms + f->opt.deadline_ms - (int64_t)elapsed_ms;
}

/* The open round resumed (its clients, sampler and stored updates), or
 * the sampler as the last round left it; a cluster node then reads the
 * open round's departures. */
static int sync_open(agg_federation *f, const agg_store_round *latest, const agg_store_update *waiting, int n_waiting,
                     int64_t now_ms, sdfed_error *err) {
    agg_round_sync *s = calloc(1, sizeof *s);
    if (!s) return sdfed_fail(err, SDFED_ERR_NOMEM, "federation: out of memory");
    f->rounds = s;
    sdfed_round_sampler(&s->sampler, f->task.seed);
    int rc = SDFED_OK;
    if (latest->started && !latest->closed) {
        memcpy(s->sampler.s, latest->rng, sizeof latest->rng);
        rc = sdfed_round_resume(&s->current, latest->round, latest->participants, latest->n_participants,
                                f->task.clients_per_round, err);
        s->open = rc == SDFED_OK;
    } else if (latest->round > 0) {
        agg_store_round previous = {0};
        int found;
        if ((rc = agg_store_get_round(f->st, latest->round - 1, &previous, &found, err)) == SDFED_OK && found &&
            previous.started)
            memcpy(s->sampler.s, previous.rng, sizeof previous.rng);
        agg_store_round_free(&previous);
    }
    if (rc) return rc;
    for (int i = 0; i < n_waiting; i++) sdfed_round_report(&s->current, waiting[i].client);
    if (f->cl) agg_cluster_catch_up(f, now_ms); /* the open round's departures */
    /* a cluster's node counts the deadline from when it learns of the
     * start, by its own clock (cluster_sync.h); a single process from the
     * start it stored */
    if (s->open) s->deadline = f->cl ? now_ms + f->opt.deadline_ms : resumed_deadline(f, latest, now_ms);
    return SDFED_OK;
}

static void sync_close(agg_federation *f) {
    agg_round_sync *s = agg_round_sync_of(f);
    sdfed_round_free(&s->current);
    free(s->away);
    free(s);
    f->rounds = NULL;
}

const agg_round_policy agg_round_sync_policy = {
    .mode = "sync",
    .open = sync_open,
    .close = sync_close,
    .comes_back = sync_comes_back,
    .joined = sync_joined,
    .keeps_place = sync_keeps_place,
    .left = sync_left,
    .admit_update = sync_admit_update,
    .admit_metrics = sync_admit_metrics,
    .could_end = sync_could_end,
    .stored = sync_stored,
    .written = sync_written,
    .tick = sync_tick,
    .order = sync_order,
    .abandon = sync_abandon,
    .ended = sync_ended,
    .waiting = sync_waiting,
    .status = sync_status,
    .catch_up = agg_cluster_sync_catch_up,
};
