/* The portable PRNG and its samplers (see rng.h for the methods and why no
 * libm transcendental is called here). */
#include "base/rng.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Every expression must round the same way on every target: no excess
 * precision (doubles evaluated as doubles: FLT_EVAL_METHOD 0 or 1, or 16..64
 * as GCC reports with AVX512-FP16; not 2, x87, nor -1, unknown), and no
 * a * b + c fused into one FMA by the compiler (which GCC in GNU mode and
 * clang do on FMA hardware unless told not to; an explicit
 * -ffp-contract=fast or -ffast-math still overrides this, and the hash in
 * tests/unit/test_partition.c then fails). */
#if FLT_EVAL_METHOD < 0 || FLT_EVAL_METHOD == 2 || FLT_EVAL_METHOD > 64
#error "rng.c needs double arithmetic in double precision (SSE2 or wasm, not x87) for identical bits on every target"
#endif
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t sdfed_rng_mix64(uint64_t x) { return splitmix64(&x); }

void sdfed_rng_seed(sdfed_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

void sdfed_rng_seed_stream(sdfed_rng *r, uint64_t seed, uint64_t stream) {
    sdfed_rng_seed(r, seed ^ sdfed_rng_mix64(stream));
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t sdfed_rng_u64(sdfed_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double sdfed_rng_uniform(sdfed_rng *r) { return (double)(sdfed_rng_u64(r) >> 11) * 0x1.0p-53; }

/* (0, 1): (m + 1/2) 2^-52 with m < 2^52 is exact, never 0 nor 1 */
static double uniform_open(sdfed_rng *r) { return ((double)(sdfed_rng_u64(r) >> 12) + 0.5) * 0x1.0p-52; }

uint64_t sdfed_rng_below(sdfed_rng *r, uint64_t n) {
    if (n <= 1) return 0;
    uint64_t threshold = (0 - n) % n; /* 2^64 mod n: [threshold, 2^64) holds a multiple of n values */
    for (;;) {
        uint64_t x = sdfed_rng_u64(r);
        if (x >= threshold) return x % n;
    }
}

static int compare_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

void sdfed_rng_choose(sdfed_rng *r, int n, int k, int *out) {
    for (int i = 0; i < n; i++) out[i] = i;
    for (int i = 0; i < k; i++) {
        int j = i + (int)sdfed_rng_below(r, (uint64_t)(n - i)), t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
    qsort(out, (size_t)k, sizeof *out, compare_int);
}

void sdfed_rng_shuffle(sdfed_rng *r, int *a, size_t n) {
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)sdfed_rng_below(r, i);
        int t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

/* ---- log and exp from arithmetic only ----------------------------------- */

/* ln 2 = LN2_HI + LN2_LO, LN2_HI with 21 trailing zero bits so k * LN2_HI is
 * exact for |k| < 2^21 (fdlibm's split) */
static const double LN2_HI = 6.93147180369123816490e-01;
static const double LN2_LO = 1.90821492927058770002e-10;
static const double INV_LN2 = 1.44269504088896338700e+00;
static const double SQRT2 = 1.41421356237309514547e+00;

static double from_bits(uint64_t b) {
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

static uint64_t to_bits(double x) {
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

double sdfed_rng_log(double x) {
    if (x != x || x < 0) return NAN;
    if (x == 0) return -INFINITY;
    if (x == INFINITY) return x;
    uint64_t b = to_bits(x);
    int k = (int)(b >> 52) - 1023;
    if ((b >> 52) == 0) { /* subnormal: scale into the normal range first */
        b = to_bits(x * 0x1.0p54);
        k = (int)(b >> 52) - 1023 - 54;
    }
    double m = from_bits((b & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull); /* [1, 2) */
    if (m > SQRT2) {
        m *= 0.5; /* exact */
        k++;
    }
    /* log m = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...), |s| <= 0.1716 */
    double s = (m - 1.0) / (m + 1.0), s2 = s * s;
    double p = 1.0 / 25.0;
    for (int j = 23; j >= 1; j -= 2) p = p * s2 + 1.0 / j;
    double log_m = 2.0 * s * p;
    return (double)k * LN2_HI + ((double)k * LN2_LO + log_m);
}

/* 2^k for -1022 <= k <= 1023 */
static double pow2(int k) { return from_bits((uint64_t)(k + 1023) << 52); }

double sdfed_rng_exp(double x) {
    if (x != x) return x;
    if (x > 709.782712893383973096) return INFINITY;
    if (x < -745.133219101941108420) return 0.0;
    double t = x * INV_LN2;
    int k = (int)(t < 0 ? t - 0.5 : t + 0.5); /* nearest integer to x / ln 2 */
    double r = (x - (double)k * LN2_HI) - (double)k * LN2_LO;
    /* e^r = 1 + r (1 + r/2 (1 + r/3 (... (1 + r/15)))) */
    double p = 1.0;
    for (int j = 15; j >= 1; j--) p = 1.0 + r * p / j;
    if (k > 1023) return p * pow2(1023) * pow2(k - 1023);
    if (k < -1022) return p * pow2(k + 600) * pow2(-600); /* subnormal or 0 */
    return p * pow2(k);
}

/* ---- normal, gamma, Dirichlet ------------------------------------------- */

double sdfed_rng_normal(sdfed_rng *r) {
    for (;;) {
        double u = 2.0 * sdfed_rng_uniform(r) - 1.0;
        double v = 2.0 * sdfed_rng_uniform(r) - 1.0;
        double s = u * u + v * v;
        if (s > 0.0 && s < 1.0) return u * sqrt(-2.0 * sdfed_rng_log(s) / s);
    }
}

/* Marsaglia and Tsang (2000), alpha >= 1; the value is > 0 */
static double gamma_at_least_one(sdfed_rng *r, double alpha) {
    double d = alpha - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do {
            x = sdfed_rng_normal(r);
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        double u = uniform_open(r), x2 = x * x;
        if (u < 1.0 - 0.0331 * x2 * x2) return d * v;
        if (sdfed_rng_log(u) < 0.5 * x2 + d * (1.0 - v + sdfed_rng_log(v))) return d * v;
    }
}

static int valid_alpha(double alpha) { return alpha > 0.0 && alpha <= DBL_MAX; }

double sdfed_rng_gamma(sdfed_rng *r, double alpha) {
    if (!valid_alpha(alpha)) return NAN;
    if (alpha >= 1.0) return gamma_at_least_one(r, alpha);
    double g = gamma_at_least_one(r, alpha + 1.0);
    return g * sdfed_rng_exp(sdfed_rng_log(uniform_open(r)) / alpha);
}

/* log of a Gamma(alpha) sample: the same draws as sdfed_rng_gamma */
static double log_gamma_sample(sdfed_rng *r, double alpha) {
    if (alpha >= 1.0) return sdfed_rng_log(gamma_at_least_one(r, alpha));
    double g = gamma_at_least_one(r, alpha + 1.0);
    return sdfed_rng_log(g) + sdfed_rng_log(uniform_open(r)) / alpha;
}

int sdfed_rng_dirichlet(sdfed_rng *r, double alpha, int k, double *out, sdfed_error *err) {
    if (k < 1) return sdfed_fail(err, SDFED_ERR_ARG, "dirichlet: need at least one component, got %d", k);
    if (!valid_alpha(alpha))
        return sdfed_fail(err, SDFED_ERR_ARG, "dirichlet: alpha must be a finite number > 0, got %g", alpha);
    double max = -INFINITY;
    for (int i = 0; i < k; i++) {
        out[i] = log_gamma_sample(r, alpha);
        if (out[i] > max) max = out[i];
    }
    double sum = 0.0;
    for (int i = 0; i < k; i++) {
        out[i] = sdfed_rng_exp(out[i] - max);
        sum += out[i];
    }
    for (int i = 0; i < k; i++) out[i] /= sum;
    return SDFED_OK;
}
