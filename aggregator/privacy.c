/* The privacy a secure federation with distributed DP has spent
 * (federation.h: agg_federation_privacy): each round it unmasked spent the rho
 * of its plan for the clients it started with (fed/secagg_task.h), summed
 * in round order as the simulator sums them, and epsilon at the task's
 * delta follows from the sum. The rounds come from the store, so every
 * node of a cluster and a restarted process say the same. */
#include <stdlib.h>

#include "core.h"
#include "fed/secagg_accountant.h"
#include "fed/secagg_task.h"

int agg_federation_privacy(const agg_federation *f, agg_federation_privacy_spent *out, sdfed_error *err) {
    const sdfed_task_secagg *task = &f->task.secagg;
    *out = (agg_federation_privacy_spent){
        .noise = task->on && task->epsilon > 0, .epsilon_budget = task->epsilon, .delta = task->delta};
    if (!out->noise) return SDFED_OK;
    int64_t *sizes;
    int n;
    int rc = agg_store_closed_round_sizes(f->st, &sizes, &n, err);
    double rho_spent = 0;
    sdfed_secagg_plan plan = {0};
    int planned_for = -1; /* consecutive rounds of one size share a plan */
    for (int i = 0; i < n && rc == SDFED_OK; i++) {
        if (sizes[i] != planned_for) {
            planned_for = (int)sizes[i];
            rc = sdfed_secagg_plan_make(&f->task, planned_for, f->n, &plan, err);
        }
        rho_spent += plan.rho;
    }
    free(sizes);
    out->rounds_unmasked = n;
    if (rc == SDFED_OK && n > 0) rc = sdfed_secagg_dp_epsilon(rho_spent, 1, task->delta, &out->epsilon_spent, err);
    return rc;
}
