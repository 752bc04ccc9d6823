/* Pace steering's rule (fed/pace.h). */
#include "fed/pace.h"

void sdfed_pace_missed(sdfed_pace *p, int64_t round) {
    p->misses++;
    if (p->misses < SDFED_PACE_MISSES) return;
    int doublings = p->misses - SDFED_PACE_MISSES;
    int64_t out = doublings >= 6 ? SDFED_PACE_MOST_OUT : (int64_t)1 << doublings;
    p->back_at = round + 1 + out;
}

void sdfed_pace_reported(sdfed_pace *p) { *p = (sdfed_pace){0}; }

int64_t sdfed_pace_rounds_out(const sdfed_pace *p, int64_t round) {
    return p->back_at > round ? p->back_at - round : 0;
}
