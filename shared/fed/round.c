/* The round engine (see round.h). */
#include "fed/round.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fed/task.h"

void sdfed_round_sampler(sdfed_rng *sampler, uint64_t seed) {
    sdfed_rng_seed_stream(sampler, seed, SDFED_STREAM_ROUNDS);
}

void sdfed_round_free(sdfed_round *r) {
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
    if (!r->clients || !r->reported || !r->gone) {
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
    }
    free(chosen);
    return rc;
}

int sdfed_round_resume(sdfed_round *r, int64_t number, const int64_t *clients, int n, int target, sdfed_error *err) {
    int rc = round_alloc(r, number, n, err);
    if (rc) return rc;
    memcpy(r->clients, clients, sizeof *clients * (size_t)n);
    r->target = target > 0 && target < n ? target : n;
    return SDFED_OK;
}

int sdfed_round_index(const sdfed_round *r, int64_t client) {
    for (int i = 0; i < r->n_clients; i++)
        if (r->clients[i] == client) return i;
    return -1;
}

int sdfed_round_due(const sdfed_round *r, int64_t client) {
    int i = sdfed_round_index(r, client);
    return i >= 0 && !r->reported[i] && !r->gone[i];
}

int sdfed_round_report(sdfed_round *r, int64_t client) {
    int i = sdfed_round_index(r, client);
    if (i >= 0 && !r->reported[i] && !r->gone[i]) r->reported[i] = 1, r->n_reported++;
    return i;
}

int sdfed_round_leave(sdfed_round *r, int64_t client) {
    int i = sdfed_round_index(r, client);
    if (i >= 0 && !r->reported[i] && !r->gone[i]) r->gone[i] = 1, r->n_gone++;
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

void sdfed_round_order(const sdfed_round *r, sdfed_round_update *u, int n) {
    /* insertion sort by place in the round, stable; rounds are small */
    for (int i = 1; i < n; i++) {
        sdfed_round_update x = u[i];
        int place = sdfed_round_index(r, x.client), j = i;
        unsigned key = place < 0 ? (unsigned)r->n_clients : (unsigned)place;
        while (j > 0) {
            int prev = sdfed_round_index(r, u[j - 1].client);
            if ((prev < 0 ? (unsigned)r->n_clients : (unsigned)prev) <= key) break;
            u[j] = u[j - 1], j--;
        }
        u[j] = x;
    }
}

int sdfed_round_combine(const sdfed_aggregate_config *cfg, const sdfed_kernels *k, uint64_t seed, int64_t number,
                        const sdfed_round_update *u, int n, const float *global, size_t P, float *next,
                        sdfed_arena *arena, sdfed_error *err) {
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
    if (rc == SDFED_OK) rc = sdfed_aggregate(cfg, k, rows, weights, n, P, global, &noise, next, arena, err);
    free(rows), free(weights);
    return rc;
}
