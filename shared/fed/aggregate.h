/* Server-side aggregation of clients' shared parameters (the global prompt,
 * or FedOT's classifier), one function for the aggregator and the
 * simulator so that both compute the same bits.
 *
 *   mean          sum_i w_i u_i / sum_i w_i, w_i the clients' sample counts
 *                 (the paper's rule): the weights normalised to floats
 *                 v_i = (float)(w_i / sum w), then every coordinate summed in
 *                 update order from zero, each product and sum rounded to
 *                 float (no FMA): ((0 + v_0 u_0) + v_1 u_1) + ... The same
 *                 bits on every CPU and target, whatever the thread count.
 *   median        coordinate-wise median; of an even count, the double mean
 *                 of the middle two rounded to float
 *   trimmed_mean  coordinate-wise mean after dropping the floor(trim * n)
 *                 smallest and largest values: the rest summed in double in
 *                 ascending order, divided, rounded to float
 * (the robust rules' values are those of a stable sort of each coordinate:
 * -0 and +0 tie and keep their update order). An update with a value that is
 * not finite is refused by name, whatever the rule.
 * Optional, before combining: clip each client's change u_i - previous to
 * an L2 norm of at most clip_norm. Optional, after: Gaussian noise of
 * standard deviation noise_multiplier * clip_norm / n on every coordinate
 * (central differential privacy: clip + noise; needs clip_norm > 0).
 * Updates are taken in the order given; callers pass them sorted by client
 * so that the result does not depend on arrival order. */
#ifndef SDFED_AGGREGATE_H
#define SDFED_AGGREGATE_H

#include <stddef.h>

#include "base/arena.h"
#include "base/names.h"
#include "base/rng.h"
#include "base/status.h"

enum { SDFED_AGGREGATE_MEAN, SDFED_AGGREGATE_MEDIAN, SDFED_AGGREGATE_TRIMMED_MEAN, SDFED_AGGREGATE_RULE_COUNT };

typedef struct sdfed_aggregate_config {
    int rule;                /* SDFED_AGGREGATE_* */
    double trim;             /* trimmed mean: fraction cut at each end, [0, 0.5) */
    double clip_norm;        /* 0: no clipping */
    double noise_multiplier; /* 0: no noise */
} sdfed_aggregate_config;

/* The rules' names, indexed by SDFED_AGGREGATE_*. */
extern const sdfed_name sdfed_aggregate_rule_names[SDFED_AGGREGATE_RULE_COUNT];
const char *sdfed_aggregate_rule_name(int rule);
int sdfed_aggregate_rule_from_name(const char *name); /* -1 if unknown */

/* out (P) = the aggregate of n updates (P floats each); weights (n) are the
 * sample counts (used by mean only, all > 0); previous (P) is the current
 * global (needed for clipping); rng draws the noise (needed for noise). */
int sdfed_aggregate(const sdfed_aggregate_config *cfg, const float *const *updates, const double *weights, int n,
                    size_t P, const float *previous, sdfed_rng *rng, float *out, sdfed_arena *arena, sdfed_error *err);

#endif
