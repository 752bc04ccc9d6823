/* The federation's batch of accepted updates, metrics, presence rows and
 * secure rounds' messages
 * (group commit, group_commit.h), as the core uses it: written when it is
 * due or when its policy says that storing it could end the round, and
 * then each row answered by its outcome (see core.h). */
#include <stddef.h>

#include "core.h"
#include "fed/secagg_message.h"
#include "fed/secagg_stage.h"
#include "native/log.h"

int agg_core_batch_due(const agg_federation *f, int64_t now_ms) {
    int n = f->batch.n_updates;
    if (agg_group_commit_due_in_ms(&f->batch, now_ms) == 0) return 1;
    if (n == 0) return 0; /* metrics alone decide nothing */
    return f->policy->could_end(f, n);
}

/* An update stored: acknowledged, counted, and its policy told. */
static void stored(agg_federation *f, const agg_store_new_update *u) {
    f->updates_accepted++;
    agg_outbox_put(&f->out, (agg_federation_message){.type = FEDERATION_ACK, .client = u->client, .round = u->round});
    native_log_line line;
    native_log_open(&line, "update");
    sdfed_jw_int(&line.w, "client", u->client);
    sdfed_jw_int(&line.w, "round", u->round);
    sdfed_jw_int(&line.w, "samples", u->samples);
    native_log_close(&line);
    f->policy->stored(f, u);
}

/* Writes the waiting updates, metrics and presence rows in one
 * transaction, then answers each update: an ack once stored, a refusal
 * when not (all of them, and the metrics, server_error, when the
 * transaction did not commit; presence rows not stored are stored again by
 * a tick); then the policy judges the round on them. */
void agg_core_write_batch(agg_federation *f, int64_t now_ms) {
    agg_group_commit *g = &f->batch;
    if (g->n_updates + g->n_metrics + g->n_presence + g->n_secagg == 0) return;
    sdfed_error err = {0};
    int rc = agg_group_commit_write(g, f->st, f->cl ? STORE_OPEN_ROUND : STORE_ANY_ROUND, &err);
    for (int i = 0; i < g->n_metrics; i++)
        if (rc)
            agg_outbox_refusal(&f->out, g->metrics[i].client, f->round, SDFED_CODE_SERVER_ERROR,
                               "metrics for round %lld not stored: %s", (long long)g->metrics[i].round, err.message);
        else if (g->metrics_outcome[i] == STORE_NO_UPDATE)
            agg_outbox_refusal(&f->out, g->metrics[i].client, f->round, SDFED_CODE_NOT_IN_ROUND,
                               "metrics for round %lld: client %lld has no update accepted in that round",
                               (long long)g->metrics[i].round, (long long)g->metrics[i].client);
        else
            f->metrics_stored++;
    for (int i = 0; i < g->n_presence && rc == SDFED_OK; i++) {
        agg_roster_client *p = agg_roster_find(&f->clients, g->presence[i].client);
        if (p) p->present = 1;
    }
    for (int i = 0; i < g->n_updates; i++) {
        const agg_store_new_update *u = &g->updates[i];
        if (rc)
            agg_outbox_refusal(&f->out, u->client, f->round, SDFED_CODE_SERVER_ERROR, "not stored: %s", err.message);
        else if (g->outcome[i] == STORE_DUPLICATE)
            agg_outbox_refusal(&f->out, u->client, f->round, SDFED_CODE_DUPLICATE_UPDATE,
                               "round %lld already has this client's update", (long long)u->round);
        else if (g->outcome[i] == STORE_NOT_OPEN && f->done)
            agg_outbox_done(&f->out, u->client, f->task.rounds);
        else if (g->outcome[i] == STORE_NOT_OPEN)
            agg_outbox_refusal(&f->out, u->client, f->round, SDFED_CODE_WRONG_ROUND,
                               "round %lld is not open for client %lld (closed, or it left)", (long long)u->round,
                               (long long)u->client);
        else
            stored(f, u);
    }
    int secagg_stored = rc == SDFED_OK;
    for (int i = 0; i < g->n_secagg; i++) {
        const agg_store_new_secagg *m = &g->secagg[i];
        if (rc == SDFED_OK && g->secagg_outcome[i] != STORE_STORED) secagg_stored = 0;
        if (!sdfed_secagg_msg_kind_of(m->message, m->len)) continue; /* a leave: its client is gone */
        if (rc)
            agg_outbox_refusal(&f->out, m->client, m->round, SDFED_CODE_SERVER_ERROR, "not stored: %s", err.message);
        else if (g->secagg_outcome[i] == STORE_DUPLICATE)
            agg_outbox_refusal(&f->out, m->client, m->round, SDFED_CODE_SECAGG_REPEATED,
                               "round %lld holds this client's %s message already", (long long)m->round,
                               sdfed_secagg_msg_name(m->message[0]));
        else if (g->secagg_outcome[i] == STORE_NOT_OPEN)
            agg_outbox_refusal(&f->out, m->client, m->round, SDFED_CODE_SECAGG_WRONG_STAGE,
                               "round %lld's %s stage is over", (long long)m->round, sdfed_secagg_stage_name(m->stage));
        else
            agg_outbox_put(&f->out, (agg_federation_message){.type = FEDERATION_SECAGG_ACK,
                                                             .client = m->client,
                                                             .round = m->round,
                                                             .reason = sdfed_secagg_msg_name(m->message[0])});
    }
    if (rc == SDFED_OK && f->policy->written) f->policy->written(f, g, now_ms);
    const int secagg = g->n_secagg;
    agg_group_commit_clear(g);
    /* after the batch is empty: the policy may store and write again */
    if (secagg) f->policy->secagg_written(f, secagg_stored, now_ms);
}
