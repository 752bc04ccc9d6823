/* Secure aggregation as a task runs it: the task's "secure_aggregation"
 * key (fed/task.h) turned into one round's settings, each client's input,
 * and the new global parameters from the unmasked sum, the same in the
 * simulator, the headless client, the page and the aggregator.
 *
 *   the input   a client's change to the global parameters, d = x - g (x
 *               its copy after local training, g the round's global; float
 *               subtraction), its L2 norm clipped to l2_clip when set (d
 *               times l2_clip / |d|, in double, rounded to float), then
 *               quantised and weighted by fed/secagg_ring.h (each
 *               coordinate clipped to [-clip, clip], stochastic rounding, w
 *               = the sample count clipped to max_weight), then with noise
 *               the discrete Gaussian N_Z(0, sigma_c^2) added to each of the
 *               P weighted coordinates (not to w).
 *   rounding    the stochastic rounding's bits come from the task seed's
 *               stream SDFED_STREAM_SECAGG_ROUND + (round << 20), seeded
 *               with seed ^ mix64(client) (base/rng.h, little-endian u64s):
 *               a run is reproducible and the aggregator's headless clients
 *               reproduce the simulator's inputs. They are no secret: the
 *               masks hide the input, not its rounding.
 *   noise       from the client's own randomness (getrandom,
 *               crypto.getRandomValues), never from the seed: a server that
 *               could derive a client's noise could subtract it from the sum
 *               and the privacy would be gone. A run with noise is therefore
 *               not reproducible bit for bit.
 *   the global  the sum S (P + 1) of the inputs of the round's survivors
 *               decodes (fed/secagg_ring.h) to W = sum of weights and the
 *               mean change m_j = (float)(S_j / (W s)); the new global is
 *               g_j + m_j (float addition).
 *   noise scale the task asks for epsilon at delta over its whole run of R
 *               rounds. One round's zCDP rho is the largest with epsilon(R
 *               rho, delta) <= epsilon (fed/secagg_accountant.h, bisection);
 *               each client's sigma_c^2 is the least integer whose round
 *               (min_inputs clients, P coordinates, L2 bound Delta) is at
 *               most rho-zCDP. Delta = max_weight min(qmax sqrt(P), s
 *               l2_clip + sqrt(P)), s = qmax / clip: stochastic rounding
 *               moves each coordinate by less than 1, so |q| < s |d| +
 *               sqrt(P). Only rounds that are unmasked spend privacy; the
 *               epsilon spent after them is at most the task's.
 *   dropouts    (the simulator's model, the headless client's too) a client
 *               still in round r leaves before sending its keys, its shares
 *               or its unmasking answer with the probabilities of
 *               secure_aggregation.drop, drawn from SDFED_STREAM_SECAGG_DROP
 *               + (r << 20) + (stage << 8) seeded with seed ^ mix64(client),
 *               and before its masked input (its report) exactly as a plain
 *               round's client drops out (fed/round.h, the task's dropout). */
#ifndef SDFED_SECAGG_TASK_H
#define SDFED_SECAGG_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"
#include "base/status.h"
#include "fed/secagg_params.h"
#include "fed/secagg_random.h"
#include "fed/secagg_ring.h"
#include "fed/secagg_stage.h"
#include "fed/task.h"

typedef struct sdfed_secagg_plan {
    sdfed_secagg_params params; /* k, t and min_inputs for the round's n */
    sdfed_secagg_ring ring;     /* its clients n, and the noise's bound */
    size_t dims;                /* P: the shared parameters' coordinates */
    double l2_clip;             /* a change's L2 norm at most (0: not clipped) */
    uint64_t sigma2;            /* each client's noise, sigma_c^2 (0: none) */
    double l2_bound;            /* Delta, ring units */
    double rho;                 /* one unmasked round's zCDP (0: no noise) */
    double delta;               /* the accountant's delta */
} sdfed_secagg_plan;

/* out = the settings of a round of n sampled clients and P coordinates
 * under the task's key; a configuration whose sum could wrap, or noise the
 * ring cannot hold, is refused naming the keys. */
int sdfed_secagg_plan_make(const sdfed_task *t, int n, size_t P, sdfed_secagg_plan *out, sdfed_error *err);
/* *epsilon at the plan's delta after rounds whose rho add up to rho_spent. */
int sdfed_secagg_epsilon(const sdfed_secagg_plan *p, double rho_spent, double *epsilon, sdfed_error *err);

/* key = round `round`'s graph key drawn from the task's seed: the
 * simulator's, and the aggregator's with --graph-from-seed (reproducible
 * rounds; by default its key comes from the OS). */
void sdfed_secagg_graph_key(uint64_t seed, int64_t round, unsigned char key[32]);

/* The rounding bytes of `client` in round `round` (see above); state holds
 * the generator and must outlive the source. */
sdfed_secagg_bytes sdfed_secagg_rounding(sdfed_rng *state, uint64_t seed, int64_t round, int64_t client);

/* out (P + 1) = the client's input: x and g (P each), its sample count. The
 * noise, with the plan's sigma2, is drawn from `noise` (NULL: none may be
 * asked for). */
int sdfed_secagg_input(const sdfed_secagg_plan *p, const float *x, const float *g, int64_t samples,
                       const sdfed_secagg_bytes *rounding, const sdfed_secagg_bytes *noise, uint64_t *out,
                       sdfed_error *err);
/* next (P) = g + the mean change the unmasked sum (P + 1) holds; *weight_sum = W. */
int sdfed_secagg_global(const sdfed_secagg_plan *p, const uint64_t *sum, const float *g, float *next,
                        int64_t *weight_sum, sdfed_error *err);
/* The same from the n inputs themselves, summed as exact integers without
 * any mask (sdfed_secagg_plain_mean): the parity reference. */
int sdfed_secagg_plain_global(const sdfed_secagg_plan *p, const uint64_t *const *inputs, int n, const float *g,
                              float *next, int64_t *weight_sum, sdfed_error *err);

/* Whether `client` leaves round `round` before sending its message of
 * `stage` (advertise, share, masked or unmask). */
int sdfed_secagg_drops_out(const sdfed_task *t, int64_t round, int64_t client, sdfed_secagg_stage stage);

#endif
