/* Rows waiting for their batch's commit (see group_commit.h). */
#include "group_commit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"

void agg_group_commit_init(agg_group_commit *g, int max_rows, int64_t max_wait_ms, int64_t node) {
    memset(g, 0, sizeof *g);
    g->node = node;
    g->max_rows = max_rows > 1 ? max_rows : 1;
    g->max_wait_ms = max_wait_ms > 0 ? max_wait_ms : 0;
}

void agg_group_commit_clear(agg_group_commit *g) {
    for (int i = 0; i < g->n_updates; i++) free((float *)g->updates[i].values);
    for (int i = 0; i < g->n_secagg; i++) free((unsigned char *)g->secagg[i].message);
    g->n_updates = g->n_metrics = g->n_presence = g->n_secagg = 0;
}

void agg_group_commit_free(agg_group_commit *g) {
    agg_group_commit_clear(g);
    free(g->updates);
    free(g->outcome);
    free(g->metrics);
    free(g->metrics_outcome);
    free(g->presence);
    free(g->secagg);
    free(g->secagg_outcome);
    free(g->hellos);
    memset(g, 0, sizeof *g);
}

static int rows(const agg_group_commit *g) { return g->n_updates + g->n_metrics + g->n_presence + g->n_secagg; }

static void arrived(agg_group_commit *g, int64_t now_ms) {
    if (rows(g) == 0) g->oldest_ms = now_ms;
}

int agg_group_commit_add(agg_group_commit *g, const agg_store_new_update *u, int64_t now_ms) {
    int outcome_cap = g->cap_updates; /* a parallel array: as many */
    agg_store_outcome *outcome = sdfed_grow(g->outcome, &outcome_cap, g->n_updates, sizeof *outcome);
    if (!outcome) return SDFED_ERR_NOMEM;
    g->outcome = outcome;
    agg_store_new_update *updates = sdfed_grow(g->updates, &g->cap_updates, g->n_updates, sizeof *updates);
    if (!updates) return SDFED_ERR_NOMEM;
    g->updates = updates;
    float *copy = malloc(sizeof *copy * (u->n_values ? u->n_values : 1));
    if (!copy) return SDFED_ERR_NOMEM;
    memcpy(copy, u->values, sizeof *copy * u->n_values);
    arrived(g, now_ms);
    g->updates[g->n_updates] = *u;
    g->updates[g->n_updates++].values = copy;
    return SDFED_OK;
}

int agg_group_commit_add_metrics(agg_group_commit *g, const agg_store_new_metrics *m, int64_t now_ms) {
    int outcome_cap = g->cap_metrics; /* a parallel array: as many */
    agg_store_outcome *outcome = sdfed_grow(g->metrics_outcome, &outcome_cap, g->n_metrics, sizeof *outcome);
    if (!outcome) return SDFED_ERR_NOMEM;
    g->metrics_outcome = outcome;
    agg_store_new_metrics *metrics = sdfed_grow(g->metrics, &g->cap_metrics, g->n_metrics, sizeof *metrics);
    if (!metrics) return SDFED_ERR_NOMEM;
    g->metrics = metrics;
    arrived(g, now_ms);
    g->metrics[g->n_metrics++] = *m;
    return SDFED_OK;
}

int agg_group_commit_add_presence(agg_group_commit *g, int64_t client, int shard, int64_t now_ms) {
    agg_store_new_presence *presence = sdfed_grow(g->presence, &g->cap_presence, g->n_presence, sizeof *presence);
    if (!presence) return SDFED_ERR_NOMEM;
    g->presence = presence;
    arrived(g, now_ms);
    g->presence[g->n_presence++] = (agg_store_new_presence){.client = client, .shard = shard};
    return SDFED_OK;
}

int agg_group_commit_add_secagg(agg_group_commit *g, const agg_store_new_secagg *row, int64_t now_ms) {
    int outcome_cap = g->cap_secagg; /* a parallel array: as many */
    agg_store_outcome *outcome = sdfed_grow(g->secagg_outcome, &outcome_cap, g->n_secagg, sizeof *outcome);
    if (!outcome) return SDFED_ERR_NOMEM;
    g->secagg_outcome = outcome;
    agg_store_new_secagg *secagg = sdfed_grow(g->secagg, &g->cap_secagg, g->n_secagg, sizeof *secagg);
    if (!secagg) return SDFED_ERR_NOMEM;
    g->secagg = secagg;
    unsigned char *copy = malloc(row->len ? row->len : 1);
    if (!copy) return SDFED_ERR_NOMEM;
    memcpy(copy, row->message, row->len);
    arrived(g, now_ms);
    g->secagg[g->n_secagg] = *row;
    g->secagg[g->n_secagg++].message = copy;
    return SDFED_OK;
}

int agg_group_commit_holds(const agg_group_commit *g, int64_t round, int64_t client) {
    for (int i = 0; i < g->n_updates; i++)
        if (g->updates[i].round == round && g->updates[i].client == client) return 1;
    return 0;
}

/* when a batch of n rows, the oldest from oldest_ms, is due */
static int64_t due_in_ms(const agg_group_commit *g, int n, int64_t oldest_ms, int64_t now_ms) {
    if (n == 0) return -1;
    if (n >= g->max_rows) return 0;
    int64_t left = oldest_ms + g->max_wait_ms - now_ms;
    return left > 0 ? left : 0;
}

int64_t agg_group_commit_due_in_ms(const agg_group_commit *g, int64_t now_ms) {
    return due_in_ms(g, rows(g), g->oldest_ms, now_ms);
}

int agg_group_commit_write(agg_group_commit *g, agg_store *s, agg_store_update_rule rule, sdfed_error *err) {
    agg_store_batch b = {.updates = g->updates,
                         .n_updates = g->n_updates,
                         .metrics = g->metrics,
                         .n_metrics = g->n_metrics,
                         .metrics_outcome = g->metrics_outcome,
                         .presence = g->presence,
                         .n_presence = g->n_presence,
                         .node = g->node,
                         .secagg = g->secagg,
                         .n_secagg = g->n_secagg,
                         .secagg_outcome = g->secagg_outcome};
    return agg_store_add_batch(s, &b, rule, g->outcome, err);
}

int agg_group_commit_add_hello(agg_group_commit *g, void *hello, const char *token, int shard, const char *kind,
                               int64_t now_ms) {
    agg_group_commit_hello *hellos = sdfed_grow(g->hellos, &g->cap_hellos, g->n_hellos, sizeof *hellos);
    if (!hellos) return SDFED_ERR_NOMEM;
    g->hellos = hellos;
    if (g->n_hellos == 0) g->oldest_hello_ms = now_ms;
    agg_group_commit_hello *h = &g->hellos[g->n_hellos++];
    *h = (agg_group_commit_hello){.hello = hello, .token = token, .shard = shard};
    snprintf(h->kind, sizeof h->kind, "%s", kind);
    return SDFED_OK;
}

void agg_group_commit_cancel_hello(agg_group_commit *g, const void *hello) {
    for (int i = 0; i < g->n_hellos; i++)
        if (g->hellos[i].hello == hello) g->hellos[i].hello = NULL;
}

int64_t agg_group_commit_hellos_due_in_ms(const agg_group_commit *g, int64_t now_ms) {
    return due_in_ms(g, g->n_hellos, g->oldest_hello_ms, now_ms);
}

int agg_group_commit_write_hellos(agg_group_commit *g, agg_store *s, int64_t *ids, sdfed_error *err) {
    agg_store_new_client *rows = malloc(sizeof *rows * (size_t)(g->n_hellos ? g->n_hellos : 1));
    if (!rows) return sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    int live = 0;
    for (int i = 0; i < g->n_hellos; i++)
        if (g->hellos[i].hello)
            rows[live++] = (agg_store_new_client){
                .token = g->hellos[i].token, .shard = g->hellos[i].shard, .kind = g->hellos[i].kind};
    int rc = live ? agg_store_add_clients(s, rows, live, ids, err) : SDFED_OK;
    free(rows);
    return rc;
}

void agg_group_commit_clear_hellos(agg_group_commit *g) { g->n_hellos = 0; }
