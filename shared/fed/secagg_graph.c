/* Secure aggregation's share graph (see secagg_graph.h). */
#include "fed/secagg_graph.h"

int sdfed_secagg_graph_make(sdfed_secagg_graph *g, const sdfed_secagg_params *p, const sdfed_secagg_bytes *shuffle,
                            sdfed_arena *arena, sdfed_error *err) {
    int n = p->n, k = p->k;
    if (n < 2 || n > SDFED_SECAGG_MAX_CLIENTS)
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg graph: %d clients (2 to %d)", n, SDFED_SECAGG_MAX_CLIENTS);
    int complete = k == n - 1;
    if (!complete && (k < 2 || k % 2 || k > n - 2))
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg graph: %d neighbours of %d clients (even, 2 to n - 2, or n - 1)",
                          k, n);
    int *client_at = sdfed_arena_alloc(arena, sizeof *client_at * (size_t)n);
    int *position = sdfed_arena_alloc(arena, sizeof *position * (size_t)n);
    if (!client_at || !position) return sdfed_fail(err, SDFED_ERR_NOMEM, "secagg graph of %d clients: out of memory", n);
    for (int i = 0; i < n; i++) client_at[i] = i;
    for (int place = n - 1; place > 0 && !complete; place--) {
        uint64_t j;
        int rc = sdfed_secagg_draw_below(shuffle, (uint64_t)place + 1, &j, err);
        if (rc) return sdfed_fail_context(err, rc, "secagg graph: shuffling the ring");
        int swap = client_at[place];
        client_at[place] = client_at[j];
        client_at[j] = swap;
    }
    for (int place = 0; place < n; place++) position[client_at[place]] = place;
    *g = (sdfed_secagg_graph){.n = n, .k = k, .complete = complete, .client_at = client_at, .position = position};
    return SDFED_OK;
}

int sdfed_secagg_graph_holders(const sdfed_secagg_graph *g) { return g->k + 1; }

int sdfed_secagg_graph_holder(const sdfed_secagg_graph *g, int i, int slot) {
    if (i < 0 || i >= g->n || slot < 0 || slot > g->k) return -1;
    if (g->complete) return slot;
    int place = (g->position[i] - g->k / 2 + slot + g->n) % g->n;
    return g->client_at[place];
}

int sdfed_secagg_graph_slot(const sdfed_secagg_graph *g, int i, int j) {
    if (i < 0 || i >= g->n || j < 0 || j >= g->n) return -1;
    if (g->complete) return j;
    int half = g->k / 2;
    int ahead = (g->position[j] - g->position[i] + g->n) % g->n; /* j is `ahead` places after i */
    if (ahead <= half) return half + ahead;
    if (g->n - ahead <= half) return half - (g->n - ahead);
    return -1;
}

int sdfed_secagg_graph_adjacent(const sdfed_secagg_graph *g, int i, int j) {
    return i != j && sdfed_secagg_graph_slot(g, i, j) >= 0;
}
