/* The round engine (see round.h). */
#include "fed/round.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fed/task.h"

void sdfed_round_sampler(sdfed_rng *sampler, uint64_t seed) {
    sdfed_rng_seed_stream(sampler, seed, SDFED_STREAM_ROUNDS);
}

struct sdfed_round_place {
    int64_t client;
    int place;
};

static int compare_places(const void *a, const void *b) {
    const sdfed_round_place *x = a, *y = b;
    return x->client < y->client ? -1 : x->client > y->client;
}

/* the lookup from client to place, once the clients are in */
static void index_clients(sdfed_round *r) {
    for (int i = 0; i < r->n_clients; i++) r->lookup[i] = (sdfed_round_place){.client = r->clients[i], .place = i};
    qsort(r->lookup, (size_t)r->n_clients, sizeof *r->lookup, compare_places);
}

void sdfed_round_free(sdfed_round *r) {
    free(r->lookup);
    free(r->clients);
    free(r->reported);
    free(r->gone);
    memset(r, 0, sizeof *r);
}

/* r with room for n clients, none reported or gone */
static int round_alloc(sdfed_round *r, int64_t number, int n, sdfed_error *err) {
    sdfed_round_free(r);
    r->number = number;
    r->clients = malloc(sizeof *r->clients * (size_t)(n > 0 ? n : 1));
    r->reported = calloc((size_t)n + 1, 1);
    r->gone = calloc((size_t)n + 1, 1);
    r->lookup = malloc(sizeof *r->lookup * (size_t)(n > 0 ? n : 1));
    if (!r->clients || !r->reported || !r->gone || !r->lookup) {
        sdfed_round_free(r);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "round %lld: out of memory", (long long)number);
    }
    r->n_clients = n;
    return SDFED_OK;
}

int sdfed_round_choose(sdfed_round *r, int64_t number, const int64_t *candidates, int n, int clients_per_round,
                       double over_select, sdfed_rng *sampler, sdfed_error *err) {
    int target = clients_per_round > 0 && clients_per_round < n ? clients_per_round : n;
    double over = ceil((over_select > 1.0 ? over_select : 1.0) * target);
    int want = over < n ? (int)over : n;
    int *chosen = malloc(sizeof *chosen * (size_t)(n > 0 ? n : 1));
    if (!chosen) return sdfed_fail(err, SDFED_ERR_NOMEM, "round %lld: out of memory", (long long)number);
    int rc = round_alloc(r, number, want, err);
    if (rc == SDFED_OK) {
        r->target = target;
        sdfed_rng_choose(sampler, n, want, chosen);
        for (int i = 0; i < want; i++) r->clients[i] = candidates[chosen[i]];
        index_clients(r);
    }
    free(chosen);
    return rc;
}

int sdfed_round_resume(sdfed_round *r, int64_t number, const int64_t *clients, int n, int target, sdfed_error *err) {
    int rc = round_alloc(r, number, n, err);
    if (rc) return rc;
    memcpy(r->clients, clients, sizeof *clients * (size_t)n);
    index_clients(r);
    r->target = target > 0 && target < n ? target : n;
    return SDFED_OK;
}

int sdfed_round_index(const sdfed_round *r, int64_t client) {
    sdfed_round_place key = {.client = client, .place = 0};
    const sdfed_round_place *found =
        r->n_clients ? bsearch(&key, r->lookup, (size_t)r->n_clients, sizeof key, compare_places) : NULL;
    return found ? found->place : -1;
}

int sdfed_round_due(const sdfed_round *r, int64_t client) {
    int i = sdfed_round_index(r, client);
    return i >= 0 && !r->reported[i] && !r->gone[i];
}

int sdfed_round_reported(const sdfed_round *r, int64_t client) {
    int i = sdfed_round_index(r, client);
    return i >= 0 && r->reported[i];
}

int sdfed_round_report(sdfed_round *r, int64_t client) {
    int i = sdfed_round_index(r, client);
    if (i >= 0 && !r->reported[i] && !r->gone[i]) {
        r->reported[i] = 1;
        r->n_reported++;
    }
    return i;
}

int sdfed_round_leave(sdfed_round *r, int64_t client) {
    int i = sdfed_round_index(r, client);
    if (i >= 0 && !r->reported[i] && !r->gone[i]) {
        r->gone[i] = 1;
        r->n_gone++;
    }
    return i;
}

int sdfed_round_still_in(const sdfed_round *r) { return r->n_clients - r->n_gone; }

sdfed_round_verdict sdfed_round_check(const sdfed_round *r, int min_clients, int deadline_passed) {
    int quorum = min_clients < r->n_clients ? min_clients : r->n_clients;
    if (quorum < 1) quorum = 1;
    int due = r->n_clients - r->n_reported - r->n_gone;
    if (r->n_reported >= r->target && r->n_reported >= quorum) return SDFED_ROUND_CLOSE;
    if (r->n_reported + due < quorum) return SDFED_ROUND_ABANDON;
    if (due == 0 || deadline_passed) return r->n_reported >= quorum ? SDFED_ROUND_CLOSE : SDFED_ROUND_ABANDON;
    return SDFED_ROUND_WAIT;
}

int sdfed_round_drops_out(uint64_t seed, int64_t number, int64_t client, double p) {
    if (!(p > 0)) return 0;
    sdfed_rng rng;
    sdfed_rng_seed_stream(&rng, seed ^ sdfed_rng_mix64((uint64_t)client),
                          SDFED_STREAM_DROPOUT + ((uint64_t)number << 20));
    return sdfed_rng_uniform(&rng) < p;
}

/* an update's place in the order: its client's place, then where it was */
typedef struct ordered {
    int key, given;
} ordered;

static int compare_ordered(const void *a, const void *b) {
    const ordered *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->given - y->given;
}

int sdfed_round_order(const sdfed_round *r, sdfed_round_update *u, int n, sdfed_error *err) {
    ordered *o = malloc(sizeof *o * (size_t)(n > 0 ? n : 1));
    sdfed_round_update *copy = malloc(sizeof *copy * (size_t)(n > 0 ? n : 1));
    if (!o || !copy) {
        free(o);
        free(copy);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "round %lld: out of memory", (long long)r->number);
    }
    for (int i = 0; i < n; i++) {
        int place = sdfed_round_index(r, u[i].client);
        o[i] = (ordered){.key = place < 0 ? r->n_clients : place, .given = i};
    }
    qsort(o, (size_t)n, sizeof *o, compare_ordered);
    memcpy(copy, u, sizeof *u * (size_t)n);
    for (int i = 0; i < n; i++) u[i] = copy[o[i].given];
    free(o);
    free(copy);
    return SDFED_OK;
}

int sdfed_round_combine(const sdfed_aggregate_config *cfg, uint64_t seed, int64_t number, const sdfed_round_update *u,
                        int n, const float *global, size_t P, float *next, sdfed_arena *arena, sdfed_error *err) {
    if (n < 1) return sdfed_fail(err, SDFED_ERR_ARG, "round %lld: no updates to combine", (long long)number);
    const float **rows = malloc(sizeof *rows * (size_t)n);
    double *weights = malloc(sizeof *weights * (size_t)n);
    int rc =
        rows && weights ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "round %lld: out of memory", (long long)number);
    for (int i = 0; i < n && rc == SDFED_OK; i++) {
        rows[i] = u[i].values;
        weights[i] = (double)u[i].samples / sqrt(1.0 + (double)(number - u[i].base));
    }
    sdfed_rng noise;
    sdfed_rng_seed_stream(&noise, seed, SDFED_STREAM_NOISE + (uint64_t)number);
    if (rc == SDFED_OK) rc = sdfed_aggregate(cfg, rows, weights, n, P, global, &noise, next, arena, err);
    free(rows);
    free(weights);
    return rc;
}
