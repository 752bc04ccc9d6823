/* The distributed discrete Gaussian's accountant (see secagg_accountant.h). */
#include "fed/secagg_accountant.h"

#include <math.h>

static const double PI = 3.14159265358979323846;

int sdfed_secagg_dp_rho(const sdfed_secagg_dp *dp, double *rho, sdfed_error *err) {
    if (!(dp->l2_bound >= 0) || !isfinite(dp->l2_bound))
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg accountant: an L2 bound of %g", dp->l2_bound);
    if (dp->sigma2 < 1 || dp->min_inputs < 1 || dp->dims < 1)
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg accountant: sigma^2 %llu, %d inputs, %zu coordinates",
                          (unsigned long long)dp->sigma2, dp->min_inputs, dp->dims);
    double s2 = (double)dp->sigma2, tau = 0;
    for (int k = 1; k < dp->min_inputs; k++) tau += exp(-2 * PI * PI * s2 * k / (k + 1.0));
    tau *= 10;
    double e2 = dp->l2_bound * dp->l2_bound / (dp->min_inputs * s2) + tau * (double)dp->dims / 2;
    *rho = e2 / 2;
    return SDFED_OK;
}

/* the conversion's epsilon at order alpha = 1 + exp(u) */
static double conversion(double rho, double log_inv_delta, double u) {
    double am1 = exp(u), alpha = 1 + am1;
    return alpha * rho + log_inv_delta / am1 + log(am1 / alpha) - log(alpha) / am1;
}

int sdfed_secagg_dp_epsilon(double rho, int64_t rounds, double delta, double *epsilon, sdfed_error *err) {
    if (!(rho >= 0) || !isfinite(rho)) return sdfed_fail(err, SDFED_ERR_ARG, "secagg accountant: rho = %g", rho);
    if (rounds < 0) return sdfed_fail(err, SDFED_ERR_ARG, "secagg accountant: %lld rounds", (long long)rounds);
    if (!(delta > 0 && delta < 1)) return sdfed_fail(err, SDFED_ERR_ARG, "secagg accountant: delta = %g", delta);
    double total = rho * (double)rounds, l = log(1 / delta);
    if (total == 0) {
        *epsilon = 0;
        return SDFED_OK;
    }
    const int steps = 4000;
    const double lo = log(1e-6), hi = log(1e6), step = (hi - lo) / (steps - 1);
    int best = 0;
    double best_value = INFINITY;
    for (int i = 0; i < steps; i++) {
        double v = conversion(total, l, lo + step * i);
        if (v < best_value) {
            best_value = v;
            best = i;
        }
    }
    /* golden-section search in u between the best order's neighbours */
    double a = lo + step * (best > 0 ? best - 1 : 0), b = lo + step * (best < steps - 1 ? best + 1 : steps - 1);
    const double g = (sqrt(5.0) - 1) / 2;
    double c = b - g * (b - a), d = a + g * (b - a), fc = conversion(total, l, c), fd = conversion(total, l, d);
    for (int i = 0; i < 100; i++) {
        if (fc < fd) {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = conversion(total, l, c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = conversion(total, l, d);
        }
    }
    double found = fc < fd ? fc : fd;
    if (found < best_value) best_value = found;
    double classic = total + 2 * sqrt(total * l);
    *epsilon = best_value < classic ? best_value : classic;
    return SDFED_OK;
}

double sdfed_secagg_l2_bound(const sdfed_secagg_ring *r, size_t P) {
    return (double)r->max_weight * (double)sdfed_secagg_ring_qmax(r) * sqrt((double)P);
}
