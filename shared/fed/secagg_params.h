/* Secure aggregation: how many neighbours k each client shares its secrets
 * with and the Shamir threshold t, from the number of sampled clients n, the
 * dropout rate delta and the corrupt rate gamma (the fraction of clients
 * that may collude with a curious server).
 *
 * The rule is Bell, Bonawitz, Gascon, Lepoint and Raykova (CCS 2020,
 * "Secure single-server aggregation with (poly)logarithmic overhead") for a
 * semi-honest server, as google-parfait/federated-compute evaluates it
 * (fcp/secagg/server/graph_parameter_finder.cc): statistical security 2^-40,
 * failure probability below 2^-20. For k = 2, 4, 6, ... below n - 1, with
 * A = floor((gamma + 1e-14) n) corrupt and S = ceil((1 - delta - 1e-14) n)
 * surviving clients at worst:
 *   connected  the Harary graph H(k, n) with random labels stays connected
 *              once A + D (D = floor((delta + 1e-14) n)) clients are gone:
 *              a union bound over the n (n - k - 1) / 2 pairs of gaps of k/2
 *              consecutive clients, each gone with probability
 *              (A+D)! (n-k)! / (n! (A+D-k)!), must be below 2^-41 (0 when
 *              k > A + D)
 *   t1         the least x with P(X > x) < 2^-41 / n, X ~ Hypergeometric(
 *              n, A, k) the corrupt among a client's k neighbours
 *   t2         the least x with P(Y <= x) >= 2^-20 / n, Y ~ Hypergeometric(
 *              n, S, k) the survivors among them
 * the first k with t1 < t2 is taken, with t = max(t1 + 1, 2). When no k
 * below n - 1 passes (small n, or large rates), the graph is complete (the
 * SecAgg of Bonawitz et al. 2017, k = n - 1) and t = max(quorum,
 * S), which must exceed ceil(gamma n).
 * The round accepts no fewer than min_inputs = max(quorum (at most n), S, t)
 * masked inputs (so that at least (1 - delta - gamma) n honest inputs
 * are in any sum the server learns), and distributed noise is calibrated for
 * that many. Shares go to the k neighbours and the client itself: k + 1
 * holders, any t of whom reconstruct. Validity: 2 <= n <= 1,000,000,
 * 0 <= delta, gamma < 1, delta + gamma <= 0.9. */
#ifndef SDFED_SECAGG_PARAMS_H
#define SDFED_SECAGG_PARAMS_H

#include "base/status.h"

#define SDFED_SECAGG_MAX_CLIENTS 1000000

typedef struct sdfed_secagg_params {
    int n;          /* sampled clients */
    int k;          /* neighbours of each client, itself not counted: even (Harary) or n - 1 (complete) */
    int t;          /* Shamir threshold among a client's k + 1 share holders */
    int min_inputs; /* the fewest masked inputs a round sums */
    int complete;   /* 1: the complete graph (SecAgg), 0: a Harary graph (SecAgg+) */
} sdfed_secagg_params;

/* out = the parameters for n clients; quorum >= 0 is the task's own least
 * number of clients a round needs (0: none). Refuses invalid rates or n by
 * name, and a complete graph whose threshold would not exceed the corrupt. */
int sdfed_secagg_params_choose(int n, double dropout, double corrupt, int quorum, sdfed_secagg_params *out,
                               sdfed_error *err);

#endif
