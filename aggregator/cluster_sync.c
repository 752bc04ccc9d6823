/* A cluster node following the rounds the coordinator decided, through the
 * store (see cluster_sync.h). */
#include "cluster_sync.h"

#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "round_sync.h"
#include "native/log.h"

int agg_cluster_learn_ends(agg_federation *f, sdfed_rng *sampler, agg_store_round *latest, int64_t now_ms) {
    int found;
    if (agg_store_latest_round(f->st, latest, &found, NULL) || !found) return 0; /* the store reports its fault */
    if (latest->n_values != f->n) {
        native_log_line line;
        native_log_open(&line, "error");
        sdfed_jw_string(&line.w, "message", "the stored parameters do not fit the task's method");
        native_log_close(&line);
        agg_store_round_free(latest);
        return 0;
    }
    if (latest->round > f->round) {
        agg_store_round ended = {0};
        int have = 0;
        agg_store_get_round(f->st, latest->round - 1, &ended, &have, NULL);
        memcpy(f->global, latest->global, sizeof *f->global * f->n);
        memcpy(f->sha, latest->sha256, sizeof f->sha);
        if (have && ended.started) memcpy(sampler->s, ended.rng, sizeof ended.rng);
        agg_core_round_end(f, now_ms, latest->round, have ? ended.n_updates : 0, have && ended.abandoned, 0);
        agg_store_round_free(&ended);
    }
    return 1;
}

void agg_cluster_catch_up(agg_federation *f, int64_t now_ms) { f->policy->catch_up(f, now_ms); }

void agg_cluster_sync_catch_up(agg_federation *f, int64_t now_ms) {
    agg_round_sync *s = agg_round_sync_of(f);
    agg_store_round latest;
    if (!agg_cluster_learn_ends(f, &s->sampler, &latest, now_ms)) return;
    if (latest.round == f->round && latest.started && !latest.closed && !s->open && !f->done &&
        sdfed_round_resume(&s->current, latest.round, latest.participants, latest.n_participants,
                           f->task.clients_per_round, NULL) == SDFED_OK) {
        memcpy(s->sampler.s, latest.rng, sizeof latest.rng);
        s->open = 1;
        s->deadline = now_ms + f->opt.deadline_ms;
        agg_core_read_pace(f); /* whom the coordinator has sitting out, told when to come back */
        agg_round_sync_announce(f, now_ms);
    }
    agg_store_round_free(&latest);
    int64_t *reported, *departed;
    int n_reported, n_departed;
    if (!s->open ||
        agg_store_round_events(f->st, f->round, &reported, &n_reported, &departed, &n_departed, NULL) != SDFED_OK)
        return;
    for (int i = 0; i < n_reported; i++) sdfed_round_report(&s->current, reported[i]);
    for (int i = 0; i < n_departed; i++) sdfed_round_leave(&s->current, departed[i]);
    free(reported);
    free(departed);
}

void agg_cluster_catch_up_to(agg_federation *f, int64_t round, int64_t now_ms) {
    agg_federation_status open = {0};
    f->policy->status(f, &open);
    if (!open.open || round != f->round) agg_cluster_catch_up(f, now_ms);
}

void agg_cluster_follow(agg_federation *f, int64_t now_ms) {
    agg_cluster_tick(f->cl, now_ms);
    if (agg_store_notified(f->st) || agg_core_deciding(f) || now_ms >= f->next_catch_up) {
        agg_cluster_catch_up(f, now_ms);
        f->next_catch_up = now_ms + f->opt.poll_ms;
    }
}

void agg_cluster_refused(agg_federation *f, int rc, const sdfed_error *err, int64_t now_ms) {
    if (!f->cl) return;
    if (rc != SDFED_ERR_IO) { /* the store reports its faults */
        native_log_line line;
        native_log_open(&line, "decision_refused");
        sdfed_jw_string(&line.w, "message", err->message);
        native_log_close(&line);
    }
    if (rc == SDFED_ERR_ARG) agg_cluster_step_down(f->cl);
    agg_cluster_catch_up(f, now_ms);
}
