/* Secure aggregation's (k, t) rule (see secagg_params.h): hypergeometric
 * tails summed in double precision from log-probabilities. */
#include "fed/secagg_params.h"

#include <math.h>

static const double SMALL = 1e-14; /* keeps rounding from moving a count in the insecure direction */

/* log P(X = x), X ~ Hypergeometric(N total, K marked, k drawn) */
static double log_pmf(int N, int K, int k, int x) {
    return lgamma(K + 1.0) - lgamma(x + 1.0) - lgamma(K - x + 1.0) + lgamma(N - K + 1.0) - lgamma(k - x + 1.0) -
           lgamma(N - K - k + x + 1.0) - (lgamma(N + 1.0) - lgamma(k + 1.0) - lgamma(N - k + 1.0));
}

/* the least x with P(X > x) < q: the upper tail summed from the top down */
static int upper_quantile(int N, int K, int k, double q) {
    int lo = k - (N - K) > 0 ? k - (N - K) : 0, hi = K < k ? K : k;
    double tail = 0; /* P(X > x) for the current x */
    int x = hi;
    double lp = log_pmf(N, K, k, hi);
    while (x > lo) {
        double next = tail + exp(lp); /* P(X > x - 1) */
        if (next >= q) break;
        tail = next;
        /* log P(X = x - 1) from log P(X = x) */
        lp += log((double)x) + log((double)(N - K - k + x)) - log((double)(K - x + 1)) - log((double)(k - x + 1));
        x--;
    }
    return x;
}

/* the least x with P(Y <= x) >= q: the lower tail summed from the bottom up */
static int lower_quantile(int N, int K, int k, double q) {
    int lo = k - (N - K) > 0 ? k - (N - K) : 0, hi = K < k ? K : k;
    int x = lo;
    double lp = log_pmf(N, K, k, lo), cdf = exp(lp);
    while (cdf < q && x < hi) {
        /* log P(Y = x + 1) from log P(Y = x) */
        lp += log((double)(K - x)) + log((double)(k - x)) - log((double)(x + 1)) - log((double)(N - K - k + x + 1));
        x++;
        cdf += exp(lp);
    }
    return x;
}

/* log of the union bound on H(k, n) being cut by the A + D clients gone */
static double log_disconnected(int n, int k, int gone) {
    if (k > gone) return -HUGE_VAL;
    return log((double)n) + log((double)(n - k - 1)) - log(2.0) + lgamma(gone + 1.0) + lgamma(n - k + 1.0) -
           lgamma(n + 1.0) - lgamma(gone - k + 1.0);
}

int sdfed_secagg_params_choose(int n, double dropout, double corrupt, int quorum, sdfed_secagg_params *out,
                               sdfed_error *err) {
    if (n < 2 || n > SDFED_SECAGG_MAX_CLIENTS)
        return sdfed_fail(err, SDFED_ERR_ARG, "secure aggregation needs 2 to %d sampled clients, got %d",
                          SDFED_SECAGG_MAX_CLIENTS, n);
    if (!(dropout >= 0 && dropout < 1))
        return sdfed_fail(err, SDFED_ERR_ARG, "secure_aggregation.dropout_rate must be in [0, 1), got %g", dropout);
    if (!(corrupt >= 0 && corrupt < 1))
        return sdfed_fail(err, SDFED_ERR_ARG, "secure_aggregation.corrupt_rate must be in [0, 1), got %g", corrupt);
    if (dropout + corrupt > 0.9)
        return sdfed_fail(err, SDFED_ERR_ARG,
                          "secure_aggregation: dropout_rate + corrupt_rate must be at most 0.9, got %g + %g", dropout,
                          corrupt);
    if (quorum < 0) return sdfed_fail(err, SDFED_ERR_ARG, "secure aggregation: a quorum of %d clients", quorum);
    int corrupt_clients = (int)floor((corrupt + SMALL) * n);
    int dropped_clients = (int)floor((dropout + SMALL) * n);
    int surviving_clients = (int)ceil((1 - dropout - SMALL) * n);
    int least_survivors = surviving_clients;
    if (quorum > least_survivors) least_survivors = quorum < n ? quorum : n;
    const double security = -41 * log(2.0); /* 2^-40, split evenly over the two bad events */
    const double q_secure = pow(2.0, -41) / n, q_correct = pow(2.0, -20) / n;
    for (int k = 2; k < n - 1; k += 2) {
        if (log_disconnected(n, k, corrupt_clients + dropped_clients) >= security) continue;
        int t1 = upper_quantile(n, corrupt_clients, k, q_secure);
        int t2 = lower_quantile(n, surviving_clients, k, q_correct);
        if (t2 <= t1) continue;
        int t = t1 + 1 > 2 ? t1 + 1 : 2;
        *out = (sdfed_secagg_params){
            .n = n, .k = k, .t = t, .min_inputs = least_survivors > t ? least_survivors : t, .complete = 0};
        return SDFED_OK;
    }
    int t = least_survivors;
    int corrupt_bound = (int)ceil(corrupt * n);
    if (t < 2 || t <= corrupt_bound)
        return sdfed_fail(err, SDFED_ERR_ARG,
                          "secure aggregation of %d clients: the complete graph's threshold %d must be at least 2 and "
                          "exceed the %d corrupt clients that secure_aggregation.corrupt_rate %g allows",
                          n, t, corrupt_bound, corrupt);
    *out = (sdfed_secagg_params){.n = n, .k = n - 1, .t = t, .min_inputs = t, .complete = 1};
    return SDFED_OK;
}
