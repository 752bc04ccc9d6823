/* A small portable PRNG whose every output is the same bits on every target.
 *
 * Generator: xoshiro256** (Blackman and Vigna), its four state words seeded
 * by four consecutive outputs of splitmix64 from the seed. Everything else
 * is built on sdfed_rng_u64:
 *   uniform    (u64 >> 11) * 2^-53, in [0, 1)
 *   below(n)   rejection of the u64 below 2^64 mod n, then u64 % n (unbiased)
 *   shuffle    Fisher-Yates from the last element down: a[i] <-> a[below(i+1)]
 *   choose     k of n: Fisher-Yates from the front for k steps,
 *              a[i] <-> a[i + below(n - i)], then the k sorted ascending
 *   normal     Marsaglia's polar method (the second value of a pair is dropped)
 *   gamma      Marsaglia-Tsang for alpha >= 1; for alpha < 1,
 *              Gamma(alpha + 1) * U^(1/alpha) with U uniform in (0, 1)
 *   dirichlet  log-gammas l_i, then p_i = exp(l_i - max l) / sum_j exp(l_j - max l)
 *              (in log space, so tiny alpha cannot make every weight underflow)
 *
 * "The same seed gives the same split on every machine": libm's log, exp,
 * pow and cos differ in their last bits between glibc, musl (wasi-libc) and
 * Emscripten, so nothing here calls them. The samplers use only +, -, *, /
 * and sqrt, which IEEE 754 defines exactly, plus sdfed_rng_log and
 * sdfed_rng_exp below, which are themselves made of those operations.
 * rng.c also requires FLT_EVAL_METHOD == 0 (no x87 excess precision) and
 * turns off FMA contraction, so each expression rounds the same everywhere.
 * tests/unit/test_partition.c hashes a fixed-seed sequence of every sampler and
 * compares it with a constant in the native, Emscripten and WASI builds. */
#ifndef SDFED_RNG_H
#define SDFED_RNG_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct sdfed_rng {
    uint64_t s[4];
} sdfed_rng;

void sdfed_rng_seed(sdfed_rng *r, uint64_t seed);
/* An independent stream per (seed, stream) pair, e.g. one per image index:
 * sdfed_rng_seed(r, seed ^ sdfed_rng_mix64(stream)). */
void sdfed_rng_seed_stream(sdfed_rng *r, uint64_t seed, uint64_t stream);
/* splitmix64's output function of x + 0x9E3779B97F4A7C15: a bijective hash. */
uint64_t sdfed_rng_mix64(uint64_t x);

uint64_t sdfed_rng_u64(sdfed_rng *r);
/* [0, 1), a multiple of 2^-53 */
double sdfed_rng_uniform(sdfed_rng *r);
/* Uniform integer in [0, n) without modulo bias; 0 when n <= 1. */
uint64_t sdfed_rng_below(sdfed_rng *r, uint64_t n);
void sdfed_rng_shuffle(sdfed_rng *r, int *a, size_t n);
/* A round's clients: out[0..k) receives k distinct indices of 0..n-1 in
 * ascending order (out has room for n). The simulator and the aggregator
 * both draw with it, so they choose the same clients. */
void sdfed_rng_choose(sdfed_rng *r, int n, int k, int *out);
/* Standard normal N(0, 1). */
double sdfed_rng_normal(sdfed_rng *r);
/* Gamma(alpha, 1); NaN when alpha is not a finite number > 0. For alpha far
 * below 1 the value may underflow to 0 (the Dirichlet sampler does not). */
double sdfed_rng_gamma(sdfed_rng *r, double alpha);
/* out (k) ~ Dirichlet(alpha, ..., alpha): out[i] >= 0, sum within a few ulp
 * of 1. SDFED_ERR_ARG when k < 1 or alpha is not a finite number > 0. */
int sdfed_rng_dirichlet(sdfed_rng *r, double alpha, int k, double *out, sdfed_error *err);

/* Natural log and exp from +, -, *, / only, the same bits on every target.
 * log: exponent and mantissa taken from the bits, the mantissa m moved into
 * [sqrt(1/2), sqrt(2)], log m = 2 atanh(s) with s = (m-1)/(m+1) (|s| < 0.172)
 * summed to s^25 (truncation < 1e-19), plus k ln 2 in two parts. exp:
 * x = k ln 2 + r with |r| <= ln(2)/2 (Cody-Waite), Taylor series of e^r to
 * r^15 (truncation < 1e-18), times 2^k built from the bits. Both are within
 * 4 ulp of the correctly rounded value (tested against libm on many
 * arguments). Special values: log(0) = -inf, log(x < 0 or NaN) = NaN,
 * log(inf) = inf; exp(x > 709.78) = inf, exp(x < -745.13) = 0, exp(NaN) = NaN. */
double sdfed_rng_log(double x);
double sdfed_rng_exp(double x);

#endif
