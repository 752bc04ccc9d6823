/* A value held to a range [lo, hi] (lo <= hi): the project's one clamp, for
 * integers of each width and for doubles (a NaN stays NaN). */
#ifndef SDFED_BASE_CLAMP_H
#define SDFED_BASE_CLAMP_H

#include <stdint.h>

static inline int sdfed_clamp_int(int v, int lo, int hi) {
    if (v < lo) return lo;
    if (v > hi) return hi;
    return v;
}

static inline int64_t sdfed_clamp_i64(int64_t v, int64_t lo, int64_t hi) {
    if (v < lo) return lo;
    if (v > hi) return hi;
    return v;
}

static inline double sdfed_clamp_double(double v, double lo, double hi) {
    if (v < lo) return lo;
    if (v > hi) return hi;
    return v;
}

#endif
