/* How far apart two sets of feature rows are in the C tests: the worst
 * 1 - cosine over matching rows (a NaN counts as the worst). */
#ifndef SDFED_TESTS_COSINE_H
#define SDFED_TESTS_COSINE_H

#include <math.h>
#include <stddef.h>

/* The worst 1 - cosine between rows of a and b (n rows of dim values). */
static inline double worst_one_minus_cosine(const float *a, const float *b, int n, int dim) {
    double worst = 0;
    for (int r = 0; r < n; r++) {
        double dot = 0, na = 0, nb = 0;
        for (int c = 0; c < dim; c++) {
            double x = a[(size_t)r * dim + c], y = b[(size_t)r * dim + c];
            dot += x * y, na += x * x, nb += y * y;
        }
        double d = 1 - dot / sqrt(na * nb);
        if (!(d <= worst)) worst = d;
    }
    return worst;
}

#endif
