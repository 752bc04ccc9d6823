/* Updates waiting for their batch's commit (see group_commit.h). */
#include "group_commit.h"

#include <stdlib.h>
#include <string.h>

void group_commit_init(group_commit *g, int max_updates, int64_t max_wait_ms) {
    memset(g, 0, sizeof *g);
    g->max_updates = max_updates > 1 ? max_updates : 1;
    g->max_wait_ms = max_wait_ms > 0 ? max_wait_ms : 0;
}

void group_commit_clear(group_commit *g) {
    for (int i = 0; i < g->n; i++) free((float *)g->waiting[i].values);
    g->n = 0;
}

void group_commit_free(group_commit *g) {
    group_commit_clear(g);
    free(g->waiting);
    free(g->outcome);
    memset(g, 0, sizeof *g);
}

int group_commit_add(group_commit *g, int64_t round, int64_t client, int64_t samples, const float *values,
                     size_t n_values, int64_t now_ms) {
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 64;
        store_new_update *waiting = realloc(g->waiting, sizeof *waiting * (size_t)cap);
        if (waiting) g->waiting = waiting;
        store_outcome *outcome = realloc(g->outcome, sizeof *outcome * (size_t)cap);
        if (outcome) g->outcome = outcome;
        if (!waiting || !outcome) return SDFED_ERR_NOMEM;
        g->cap = cap;
    }
    float *copy = malloc(sizeof *copy * (n_values ? n_values : 1));
    if (!copy) return SDFED_ERR_NOMEM;
    memcpy(copy, values, sizeof *copy * n_values);
    if (g->n == 0) g->oldest_ms = now_ms;
    g->waiting[g->n++] = (store_new_update){round, client, samples, copy, n_values};
    return SDFED_OK;
}

int group_commit_holds(const group_commit *g, int64_t round, int64_t client) {
    for (int i = 0; i < g->n; i++)
        if (g->waiting[i].round == round && g->waiting[i].client == client) return 1;
    return 0;
}

int64_t group_commit_due_in_ms(const group_commit *g, int64_t now_ms) {
    if (g->n == 0) return -1;
    if (g->n >= g->max_updates) return 0;
    int64_t left = g->oldest_ms + g->max_wait_ms - now_ms;
    return left > 0 ? left : 0;
}

int group_commit_write(group_commit *g, store *s, store_update_rule rule, sdfed_error *err) {
    return store_add_updates(s, g->waiting, g->n, rule, g->outcome, err);
}
