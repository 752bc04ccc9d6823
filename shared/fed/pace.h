/* Pace steering (Bonawitz et al. 2019, "Towards federated learning at
 * scale"): a client sampled for rounds that end without its update sits
 * out the next ones, so that a device too slow for the rounds' deadline
 * stops holding them up, and comes back after. The rule, in rounds (no
 * clock): a client that missed SDFED_PACE_MISSES rounds in a row (sampled,
 * and no update before the round ended at its deadline) sits out the next
 * round; each further round it misses without reporting in between doubles
 * the rounds it sits out (1, 2, 4, ... at most SDFED_PACE_MOST_OUT); an
 * update it reports forgets its misses. A round that closes before its
 * deadline, or that a client left, is no miss: the caller says which. */
#ifndef SDFED_FED_PACE_H
#define SDFED_FED_PACE_H

#include <stdint.h>

enum { SDFED_PACE_MISSES = 3, SDFED_PACE_MOST_OUT = 64 };

typedef struct sdfed_pace {
    int misses;      /* rounds missed in a row */
    int64_t back_at; /* the first round it may be sampled for again (0: any) */
} sdfed_pace;

/* Round `round`, which the client was sampled for, ended at its deadline
 * without its update. */
void sdfed_pace_missed(sdfed_pace *p, int64_t round);
/* The client reported an update: its misses forgotten. */
void sdfed_pace_reported(sdfed_pace *p);
/* How many rounds from `round` on (round included) it still sits out: 0
 * when it may be sampled for `round`. */
int64_t sdfed_pace_rounds_out(const sdfed_pace *p, int64_t round);

#endif
