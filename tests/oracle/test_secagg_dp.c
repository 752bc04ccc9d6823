/* The distributed discrete Gaussian's accountant (fed/secagg_accountant.h)
 * against tests/oracle/secagg_dp_oracle.py, which writes FILE at test time:
 * one round's rho to 1e-12, epsilon after R rounds to 1e-6 (relative), and
 * never below the exact epsilon of the continuous Gaussian mechanism with
 * the same rho (the conversion is an upper bound), nor more than 10% above
 * it; then the refusals. Every build.
 *   test_secagg_dp FILE */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fed/secagg_accountant.h"
#include "read_file.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_secagg_dp FILE\n");
        return 2;
    }
    size_t size;
    char *text = (char *)read_file(argv[1], &size);
    CHECK(text != NULL, "reading %s", argv[1]);
    int cases = 0;
    for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        double l2, delta, rho_py, eps_py, exact;
        unsigned long long sigma2;
        int m, rounds;
        size_t dims;
        if (sscanf(line, "%lf %llu %d %zu %d %lf %lf %lf %lf", &l2, &sigma2, &m, &dims, &rounds, &delta, &rho_py,
                   &eps_py, &exact) != 9) {
            CHECK(0, "a line of the oracle's file: %s", line);
            continue;
        }
        sdfed_secagg_dp dp = {.l2_bound = l2, .sigma2 = sigma2, .min_inputs = m, .dims = dims};
        double rho, eps;
        sdfed_error err = {0};
        CHECK(sdfed_secagg_dp_rho(&dp, &rho, &err) == SDFED_OK && fabs(rho - rho_py) <= 1e-12 * rho_py,
              "rho %.17g against %.17g", rho, rho_py);
        CHECK(sdfed_secagg_dp_epsilon(rho, rounds, delta, &eps, &err) == SDFED_OK &&
                  fabs(eps - eps_py) <= 1e-6 * eps_py,
              "%d rounds at delta %g: epsilon %.12g against the oracle's %.12g", rounds, delta, eps, eps_py);
        CHECK(eps >= exact && eps <= 1.1 * exact, "epsilon %g and the exact Gaussian's %g", eps, exact);
        cases++;
    }
    CHECK(cases >= 7, "%d cases read", cases);
    free(text);
    double eps;
    sdfed_error err = {0};
    CHECK(sdfed_secagg_dp_epsilon(0.1, 0, 1e-5, &eps, &err) == SDFED_OK && eps == 0, "no rounds, no epsilon");
    CHECK(sdfed_secagg_dp_epsilon(0.1, 10, 1.0, &eps, &err) == SDFED_ERR_ARG, "delta 1");
    CHECK(sdfed_secagg_dp_epsilon(-1, 10, 1e-5, &eps, &err) == SDFED_ERR_ARG, "a negative rho");
    sdfed_secagg_dp bad = {.l2_bound = 1, .sigma2 = 0, .min_inputs = 3, .dims = 1};
    double rho;
    CHECK(sdfed_secagg_dp_rho(&bad, &rho, &err) == SDFED_ERR_ARG, "sigma^2 0");
    sdfed_secagg_ring r = {.clip = 0.5, .quant_bits = 8, .max_weight = 64, .ring_bits = 32, .clients = 10};
    CHECK(sdfed_secagg_l2_bound(&r, 4096) == 127.0 * 64 * 64, "the L2 bound of 4096 coordinates at the clip");
    return check_report("test_secagg_dp");
}
