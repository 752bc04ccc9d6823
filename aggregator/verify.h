/* `sdfed-aggregator --verify`: every stored round's parameters recomputed
 * from what the store holds, a check that needs nothing but the store and
 * the task. Round 0's parameters must be the task's initial ones; a closed
 * round's next row must hold the combination (fed/round.h) of exactly the
 * updates merged into it, taken in the round's client order (its stored
 * participants) with the given aggregation, and count them; an abandoned
 * round's next row must hold its parameters unchanged; every round but the
 * latest must be closed. One line per round on out. */
#ifndef SDFED_AGGREGATOR_VERIFY_H
#define SDFED_AGGREGATOR_VERIFY_H

#include <stdio.h>

#include "clip/clip_model.h"
#include "fed/aggregate.h"
#include "fed/task.h"
#include "store.h"

/* *mismatches counts the rounds that failed a check; the status is the
 * store's or the computation's own failure. */
int agg_verify_rounds(agg_store *st, const sdfed_task *task, const sdfed_clip_model *m, const sdfed_kernels *k,
                      const sdfed_classes *cls, const sdfed_aggregate_config *cfg, FILE *out, int *mismatches,
                      sdfed_error *err);

#endif
