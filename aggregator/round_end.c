/* How a round ends, whatever its policy: the verdict acted on (a close the
 * core makes, an abandonment the policy records, also of a round whose
 * updates cannot be combined), one the store refused tried again, and the
 * end announced (see core.h). */
#include <stdlib.h>
#include <string.h>

#include "cluster_sync.h"
#include "core.h"
#include "native/crypto.h"
#include "native/clock.h"
#include "native/log.h"

void agg_core_round_act(agg_federation *f, sdfed_round_verdict verdict, int64_t now_ms) {
    if (verdict == SDFED_ROUND_WAIT) return;
    int rc = verdict == SDFED_ROUND_CLOSE ? agg_core_round_close(f, now_ms) : SDFED_OK;
    /* updates that cannot be combined now never will be: the round is
     * abandoned, not closed again and again */
    if (rc == SDFED_ERR_NUMERIC) verdict = SDFED_ROUND_ABANDON;
    if (verdict == SDFED_ROUND_ABANDON) rc = f->policy->abandon(f, now_ms);
    if (rc && !f->cl) f->pending = verdict;
}

int agg_core_round_retry(agg_federation *f, int64_t now_ms) {
    if (f->pending == SDFED_ROUND_WAIT) return 0;
    agg_core_round_act(f, f->pending, now_ms);
    return 1;
}

/* In the decision's transaction (a cluster's coordinator: the round's row
 * is locked, so the updates read are all it will ever have). A store
 * failure leaves the round as it was, to be ended on the next tick; the
 * store reports its fault (store.h), so only the aggregation's own
 * failures are logged here. An aggregation whose result is not finite
 * (fed/aggregate.h: SDFED_ERR_NUMERIC) fails because of the updates
 * themselves, and would fail again with them: agg_core_round_act abandons
 * the round instead. */
int agg_core_round_close(agg_federation *f, int64_t now_ms) {
    sdfed_error err = {0};
    agg_store_update *u = NULL;
    int n = 0;
    int rc = agg_store_begin_decision(f->st, agg_core_fence(f), f->round, STORE_CLOSE, &err);
    if (rc) {
        agg_cluster_refused(f, rc, &err, now_ms);
        return rc;
    }
    rc = agg_store_pending_updates(f->st, &u, &n, NULL);
    if (rc || n == 0) {
        agg_store_abort_decision(f->st);
        agg_store_updates_free(u, n);
        return rc ? rc : SDFED_ERR_ARG;
    }
    sdfed_round_update *updates = malloc(sizeof *updates * (size_t)n);
    float *next = malloc(sizeof *next * f->n);
    if (!updates || !next) rc = sdfed_fail(&err, SDFED_ERR_NOMEM, "out of memory");
    /* as the store gives them (by base version, then client), unless the
     * policy orders them (sync: as the round's clients were chosen, as the
     * simulator trains them) */
    for (int i = 0; i < n && rc == SDFED_OK; i++)
        updates[i] = (sdfed_round_update){
            .client = u[i].client, .base = u[i].round, .samples = u[i].samples, .values = u[i].values};
    if (rc == SDFED_OK && f->policy->order) rc = f->policy->order(f, updates, n, &err);
    int64_t t0 = native_clock_monotonic_ns();
    sdfed_arena_reset(&f->arena);
    if (rc == SDFED_OK)
        rc = sdfed_round_combine(&f->opt.aggregate, f->task.seed, f->round, updates, n, f->global, f->n, next,
                                 &f->arena, &err);
    double aggregation_ms = 1e-6 * (double)(native_clock_monotonic_ns() - t0);
    if (rc) {
        native_log_line line;
        native_log_open(&line, "error");
        sdfed_jw_int(&line.w, "round", f->round);
        sdfed_jw_stringf(&line.w, "message", "aggregation failed: %s%s", err.message,
                         rc == SDFED_ERR_NUMERIC ? "; the round is abandoned" : "");
        native_log_close(&line);
        agg_store_abort_decision(f->st);
    } else {
        rc = agg_core_round_closed(f, next, n, aggregation_ms, now_ms);
    }
    free(updates);
    free(next);
    agg_store_updates_free(u, n);
    return rc;
}

int agg_core_round_closed(agg_federation *f, const float *next, int reports, double aggregation_ms, int64_t now_ms) {
    char sha[65];
    int rc = native_sha256_hex(next, sizeof(float) * f->n, sha, NULL);
    if (rc == SDFED_OK) rc = agg_store_close_round(f->st, f->round, next, f->n, sha, reports, 0, aggregation_ms, NULL);
    if (rc == SDFED_OK) rc = agg_store_commit_decision(f->st, NULL);
    if (rc) {
        agg_store_abort_decision(f->st);
        return rc;
    }
    memcpy(f->global, next, sizeof *next * f->n);
    memcpy(f->sha, sha, sizeof sha);
    f->rounds_closed++;
    f->last_aggregation_ms = aggregation_ms;
    f->total_aggregation_ms += aggregation_ms;
    native_log_line line;
    native_log_open(&line, "round_end");
    sdfed_jw_int(&line.w, "round", f->round);
    sdfed_jw_int(&line.w, "updates", reports);
    sdfed_jw_fixed(&line.w, "aggregation_ms", aggregation_ms, 3);
    sdfed_jw_string(&line.w, "rule", sdfed_aggregate_rule_name(f->opt.aggregate.rule));
    sdfed_jw_double(&line.w, "clip_norm", f->opt.aggregate.clip_norm);
    sdfed_jw_double(&line.w, "noise_multiplier", f->opt.aggregate.noise_multiplier);
    sdfed_jw_string(&line.w, "global_sha256", sha);
    native_log_close(&line);
    agg_core_round_next(f, now_ms, reports, 0);
    return SDFED_OK;
}

int agg_core_round_abandoned(agg_federation *f, int reports, int64_t now_ms) {
    sdfed_error err = {0};
    int rc = agg_store_begin_decision(f->st, agg_core_fence(f), f->round, STORE_CLOSE, &err);
    if (rc) {
        agg_cluster_refused(f, rc, &err, now_ms);
        return rc;
    }
    rc = agg_store_close_round(f->st, f->round, f->global, f->n, f->sha, reports, 1, 0, NULL);
    if (rc == SDFED_OK) rc = agg_store_commit_decision(f->st, NULL);
    if (rc) {
        agg_store_abort_decision(f->st);
        return rc;
    }
    f->rounds_abandoned++;
    return SDFED_OK;
}

void agg_core_round_next(agg_federation *f, int64_t now_ms, int reports, int abandoned) {
    if (f->cl) {
        agg_cluster_catch_up(f, now_ms);
        return;
    }
    agg_core_round_end(f, now_ms, f->round + 1, reports, abandoned, 1);
}

void agg_core_round_end(agg_federation *f, int64_t now_ms, int64_t next, int reports, int abandoned, int decided_here) {
    agg_federation_message m = {.type = FEDERATION_ROUND_END,
                                .client = FEDERATION_EVERYONE,
                                .round = next - 1,
                                .next_round = next,
                                .participants = reports,
                                .abandoned = abandoned};
    f->round = next;
    f->done = f->round >= f->task.rounds;
    f->pending = SDFED_ROUND_WAIT;
    memcpy(m.global_sha256, f->sha, sizeof m.global_sha256);
    agg_outbox_put(&f->out, m);
    if (f->done) agg_outbox_done(&f->out, FEDERATION_EVERYONE, f->task.rounds);
    f->policy->ended(f, decided_here, now_ms);
    agg_core_note_waiting(f, now_ms);
}
