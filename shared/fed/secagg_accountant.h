/* Secure aggregation's privacy accountant: epsilon at a given delta after R
 * rounds of the distributed discrete Gaussian (secagg_noise.h).
 *
 *   one round  Kairouz, Liu, Steinke (ICML 2021), Theorem 1: m clients
 *              each adding N_Z(0, sigma_c^2) on d coordinates, one client's
 *              input of L2 norm at most Delta (add/remove-one adjacency),
 *              make the sum (1/2) e^2-concentrated DP (zCDP) with
 *                e^2 = Delta^2 / (m sigma_c^2) + tau d / 2,
 *                tau = 10 sum_{k=1}^{m-1} exp(-2 pi^2 sigma_c^2 k / (k + 1))
 *              (tau accounts for a sum of discrete Gaussians not being one;
 *              below 1e-30 once sigma_c >= 2). rho = e^2 / 2.
 *   R rounds   zCDP composes by adding: rho_R = R rho (Bun and Steinke
 *              2016), every round counted in full (no amplification by
 *              sampling: a volunteer may be chosen every round).
 *   to (e, d)  Canonne, Kamath, Steinke (2020), Proposition 12 (the
 *              conversion of Google's dp_accounting for RDP): rho-zCDP is
 *              (epsilon, delta)-DP with epsilon = min over alpha > 1 of
 *                alpha rho + log(1/delta) / (alpha - 1) + log(1 - 1/alpha)
 *                - log(alpha) / (alpha - 1),
 *              minimised over 4,000 orders spaced evenly in log(alpha - 1)
 *              from 1e-6 to 1e6, then by golden-section search between the
 *              best one's neighbours (the function is unimodal in alpha);
 *              never above the classic rho + 2 sqrt(rho log(1/delta)).
 * tests/oracle/secagg_dp_oracle.py computes the same in Python
 * independently, and the analytic Gaussian mechanism's exact epsilon
 * (Balle and Wang 2018) as a lower bound. Delta in ring units: for the
 * quantised prompt, max_weight (2^(b-1) - 1) sqrt(P) (every coordinate at
 * the clip: sdfed_secagg_l2_bound). */
#ifndef SDFED_SECAGG_ACCOUNTANT_H
#define SDFED_SECAGG_ACCOUNTANT_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "fed/secagg_ring.h"

typedef struct sdfed_secagg_dp {
    double l2_bound; /* Delta: the L2 norm of one client's noised coordinates, at most (ring units) */
    uint64_t sigma2; /* sigma_c^2: each client's noise */
    int min_inputs;  /* m: the fewest inputs a round sums */
    size_t dims;     /* d: the noised coordinates */
} sdfed_secagg_dp;

/* *rho = one round's zCDP. */
int sdfed_secagg_dp_rho(const sdfed_secagg_dp *dp, double *rho, sdfed_error *err);
/* *epsilon after `rounds` rounds of rho each, at delta (0 < delta < 1). */
int sdfed_secagg_dp_epsilon(double rho, int64_t rounds, double delta, double *epsilon, sdfed_error *err);
/* max_weight (2^(b-1) - 1) sqrt(P): the L2 bound of a quantised prompt of P
 * coordinates in r. */
double sdfed_secagg_l2_bound(const sdfed_secagg_ring *r, size_t P);

#endif
