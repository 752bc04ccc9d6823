/* Stored rounds recomputed (see verify.h). */
#include "verify.h"

#include <stdlib.h>
#include <string.h>

#include "native/crypto.h"
#include "fed/round.h"
#include "method/methods.h"

/* Round r's next parameters from its stored updates into next (n values). */
static int recompute(agg_store *st, const sdfed_task *task, const sdfed_aggregate_config *cfg, const agg_store_round *r,
                     float *next, int *n_updates, sdfed_arena *arena, sdfed_error *err) {
    agg_store_update *u;
    int n, rc = agg_store_merged_updates(st, r->round + 1, &u, &n, err);
    if (rc) return rc;
    *n_updates = n;
    sdfed_round order = {0};
    sdfed_round_update *updates = malloc(sizeof *updates * (size_t)(n ? n : 1));
    if (!updates) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "verify: out of memory");
    for (int i = 0; rc == SDFED_OK && i < n; i++) {
        if (u[i].n_values != r->n_values)
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "verify: client %lld's update holds %zu values, not %zu",
                            (long long)u[i].client, u[i].n_values, r->n_values);
        updates[i] = (sdfed_round_update){
            .client = u[i].client, .base = u[i].round, .samples = u[i].samples, .values = u[i].values};
    }
    if (rc == SDFED_OK)
        rc = sdfed_round_resume(&order, r->round, r->participants, r->n_participants, task->clients_per_round, err);
    if (rc == SDFED_OK) rc = sdfed_round_order(&order, updates, n, err);
    sdfed_arena_reset(arena);
    if (rc == SDFED_OK)
        rc = sdfed_round_combine(cfg, task->seed, r->round, updates, n, r->global, r->n_values, next, arena, err);
    sdfed_round_free(&order);
    free(updates);
    agg_store_updates_free(u, n);
    return rc;
}

int agg_verify_rounds(agg_store *st, const sdfed_task *task, const sdfed_clip_model *m, const sdfed_kernels *k,
                      const sdfed_classes *cls, const sdfed_aggregate_config *cfg, FILE *out, int *mismatches,
                      sdfed_error *err) {
    *mismatches = 0;
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_method_params initial = {0};
    agg_store_round r = {0}, next = {0};
    float *computed = NULL;
    int found, rc = sdfed_task_server_params(task, m, k, cls, &initial, &arena, err);
    if (rc == SDFED_OK) rc = agg_store_get_round(st, 0, &r, &found, err);
    if (rc == SDFED_OK && !found) rc = sdfed_fail(err, SDFED_ERR_NOT_FOUND, "verify: the store holds no round");
    size_t n = (size_t)initial.global_rows * initial.width;
    if (rc == SDFED_OK && (r.n_values != n || memcmp(r.global, initial.global, n * sizeof(float)) != 0)) {
        fprintf(out, "round 0: MISMATCH: the parameters are not the task's initial ones\n");
        ++*mismatches;
    }
    if (rc == SDFED_OK && !(computed = malloc(sizeof *computed * (n ? n : 1))))
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "verify: out of memory");
    while (rc == SDFED_OK) {
        if ((rc = agg_store_get_round(st, r.round + 1, &next, &found, err)) || !found) break;
        const char *problem = NULL;
        int n_updates = 0;
        char sha[65];
        if (!r.closed) {
            problem = "a next round is stored but this one is not closed";
        } else if (r.abandoned) {
            if (next.n_values != n || memcmp(next.global, r.global, n * sizeof(float)) != 0)
                problem = "abandoned, yet the next round's parameters differ";
        } else if ((rc = recompute(st, task, cfg, &r, computed, &n_updates, &arena, err)) == SDFED_OK &&
                   (rc = native_sha256_hex(computed, n * sizeof(float), sha, err)) == SDFED_OK) {
            if (n_updates != r.n_updates)
                problem = "the count of updates merged differs from the round's";
            else if (next.n_values != n || memcmp(next.global, computed, n * sizeof(float)) != 0 ||
                     strcmp(sha, next.sha256) != 0)
                problem = "the stored parameters differ from the recomputed ones";
        }
        if (rc) break;
        if (problem) ++*mismatches;
        fprintf(out, "round %lld: %s, %d updates, next %s: %s%s\n", (long long)r.round,
                r.abandoned ? "abandoned" : "closed", r.abandoned ? r.n_updates : n_updates, next.sha256,
                problem ? "MISMATCH: " : "recomputed", problem ? problem : "");
        agg_store_round_free(&r);
        r = next;
        memset(&next, 0, sizeof next);
    }
    agg_store_round_free(&r);
    agg_store_round_free(&next);
    free(computed);
    sdfed_method_params_free(&initial);
    sdfed_arena_free(&arena);
    return rc;
}
