/* The secure round both secure-aggregation fuzzers play (fuzz_secagg.c,
 * the server; fuzz_secagg_client.c, a client): 6 clients (k and t by the
 * rule at delta 0.33, gamma 0.05), 7 coordinates in a 42-bit ring. */
#ifndef SDFED_TESTS_FUZZ_SECAGG_PLAN_H
#define SDFED_TESTS_FUZZ_SECAGG_PLAN_H

#include <stdlib.h>
#include <string.h>

#include "fed/secagg_params.h"
#include "fed/secagg_task.h"

#define FUZZ_SECAGG_CLIENTS 6
#define FUZZ_SECAGG_DIMS 7

/* The round's plan, made once (an abort if it cannot be). */
static inline const sdfed_secagg_plan *fuzz_secagg_plan(void) {
    static sdfed_secagg_plan plan;
    static int planned;
    if (planned) return &plan;
    sdfed_error err = {0};
    memset(&plan, 0, sizeof plan);
    plan.ring = (sdfed_secagg_ring){
        .clip = 0.5, .quant_bits = 16, .max_weight = 4096, .ring_bits = 42, .clients = FUZZ_SECAGG_CLIENTS};
    plan.dims = FUZZ_SECAGG_DIMS;
    if (sdfed_secagg_params_choose(FUZZ_SECAGG_CLIENTS, 0.33, 0.05, 0, &plan.params, &err) ||
        sdfed_secagg_ring_check(&plan.ring, &err))
        abort();
    planned = 1;
    return &plan;
}

#endif
