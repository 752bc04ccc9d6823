/* Secure aggregation's distributed differential privacy: the integer noise
 * each client adds to its input before masking, so that the sum the server
 * unmasks carries noise of a central scale.
 *
 * Mechanism: the discrete Gaussian N_Z(0, sigma^2) (P[X = x] proportional to
 * exp(-x^2 / (2 sigma^2)) on the integers), sampled exactly from the
 * caller's random bytes by Canonne, Kamath and Steinke's algorithm (NeurIPS
 * 2020, "The discrete Gaussian for differential privacy", Algorithms 1-3):
 * Bernoulli(exp(-gamma)) for rational gamma from uniform integers only,
 * the discrete Laplace of scale t = floor(sigma) + 1, accepted with
 * probability exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)). Integers throughout
 * (128-bit where needed): the same samples from the same bytes on every
 * target, and no floating point whose rounding could leak. sigma^2 is an
 * integer from 1 to 2^48 (ring units); a candidate with |Y| t >= 2^63 is
 * rejected outright (its acceptance probability is below exp(-2^27)).
 *
 * Calibration (Kairouz, Liu, Steinke, ICML 2021, "The distributed discrete
 * Gaussian mechanism for federated learning with secure aggregation"):
 * every client adds N_Z(0, sigma_c^2) with sigma_c^2 = ceil(sigma^2 / m), m
 * the fewest masked inputs a round accepts (secagg_params.h' min_inputs), so
 * that any sum the server can unmask holds at least m such draws, variance
 * >= sigma^2. The accountant (secagg_accountant.h) takes the sum's
 * divergence from a discrete Gaussian into account. The noise of n clients
 * summed stays within noise_bound = ceil(20 sqrt(n sigma_c^2)) except with
 * probability below 2 exp(-200) per coordinate (sub-Gaussian tails): the
 * ring's no-wrap rule (secagg_ring.h) includes it. */
#ifndef SDFED_SECAGG_NOISE_H
#define SDFED_SECAGG_NOISE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "fed/secagg_random.h"

#define SDFED_DGAUSS_MAX_SIGMA2 ((uint64_t)1 << 48)

/* *out ~ N_Z(0, sigma2), 1 <= sigma2 <= 2^48. */
int sdfed_dgauss_sample(uint64_t sigma2, const sdfed_secagg_bytes *random, int64_t *out, sdfed_error *err);
/* v (len) += independent N_Z(0, sigma2) samples, in Z_{2^ring_bits}. */
int sdfed_secagg_add_noise(int ring_bits, uint64_t *v, size_t len, uint64_t sigma2, const sdfed_secagg_bytes *random,
                           sdfed_error *err);
/* *sigma2 = ceil(central_sigma^2 / min_inputs): each client's share of a
 * central noise of standard deviation central_sigma (ring units). */
int sdfed_secagg_noise_per_client(double central_sigma, int min_inputs, uint64_t *sigma2, sdfed_error *err);
/* ceil(20 sqrt(clients sigma2)): the bound the ring keeps room for. */
uint64_t sdfed_secagg_noise_bound(uint64_t sigma2, int clients);

#endif
