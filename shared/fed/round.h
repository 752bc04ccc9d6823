/* The round engine: one round of a federation as both `sdfed sim` and the
 * aggregator decide it, so that their bit-for-bit parity holds by
 * construction rather than by two copies kept in step.
 *
 *   choosing   a round's clients are a seeded partial shuffle
 *              (sdfed_rng_choose) of the candidates, which the caller lists
 *              in its fixed order (the simulator: client index; the
 *              aggregator: shard, then client id); its target is
 *              clients_per_round of them (all when 0), and with
 *              over-selection F >= 1, ceil(F x target) are chosen (at most
 *              all); the chosen keep that order, and it is the order their
 *              updates are combined in
 *   closing    (Bonawitz et al. 2019) each chosen client is due until it
 *              reports or leaves; a client that leaves (disconnects,
 *              drops out) is out of the round for good. With the quorum
 *              q = min(min_clients, chosen): the round closes as soon as
 *              the target has reported, or when nobody is due any more and
 *              at least q reported; it is abandoned (the global parameters
 *              stay, the next round starts) as soon as the reports plus
 *              the clients still due cannot reach q, and at its deadline
 *              unless q reported (then it closes)
 *   dropping   the simulator's model of volunteers leaving: a chosen client
 *   out        drops out of round r with the task's probability, drawn
 *              from the seed's stream SDFED_STREAM_DROPOUT for (r, client);
 *              the headless client draws the same for its shard and leaves
 *   combining  the updates, in the round's order (sync) or as given
 *              (async: by base version, then client), weighted by
 *              samples / sqrt(1 + staleness), staleness = round - base
 *              (0 in a synchronous round, so the weight is the sample
 *              count exactly), through the rule, clipping and noise of
 *              fed/aggregate.h; the noise is drawn from the task seed's
 *              stream SDFED_STREAM_NOISE + round, so a round closed again
 *              after a restart draws the same noise.
 * The engine holds no sockets, store or clock: callers pass events in and
 * act on its verdicts. */
#ifndef SDFED_FED_ROUND_H
#define SDFED_FED_ROUND_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/rng.h"
#include "base/status.h"
#include "fed/aggregate.h"

typedef struct sdfed_round_place sdfed_round_place;

typedef struct sdfed_round {
    int64_t number;
    int64_t *clients; /* the chosen, in combining order */
    unsigned char *reported, *gone;
    int n_clients, n_reported, n_gone;
    int target;                /* reports that close the round at once */
    sdfed_round_place *lookup; /* each client's place, sorted by client: found in log n */
} sdfed_round;

/* The sampler every federation with this seed chooses its rounds with. */
void sdfed_round_sampler(sdfed_rng *sampler, uint64_t seed);

/* Chooses round `number`'s clients among n candidates (in the caller's
 * fixed order); over_select >= 1 (1: none). The sampler advances. r is
 * replaced. */
int sdfed_round_choose(sdfed_round *r, int64_t number, const int64_t *candidates, int n, int clients_per_round,
                       double over_select, sdfed_rng *sampler, sdfed_error *err);
/* A round whose clients are known (resumed after a restart): each is due
 * until it comes back and reports, or the deadline. r is replaced. */
int sdfed_round_resume(sdfed_round *r, int64_t number, const int64_t *clients, int n, int target, sdfed_error *err);
void sdfed_round_free(sdfed_round *r);

/* The client's place in the round, -1 when it was not chosen. */
int sdfed_round_index(const sdfed_round *r, int64_t client);
/* Whether the client is still due (chosen, not reported, not gone). */
int sdfed_round_due(const sdfed_round *r, int64_t client);
/* Whether the client's report counted (it was chosen and reported). */
int sdfed_round_reported(const sdfed_round *r, int64_t client);
/* Events; each returns the client's place, -1 when it was not chosen. A
 * report counts once and only from a client still due; a client that
 * reported is never gone. */
int sdfed_round_report(sdfed_round *r, int64_t client);
int sdfed_round_leave(sdfed_round *r, int64_t client);
/* The chosen clients still in the round (reported or due). */
int sdfed_round_still_in(const sdfed_round *r);

typedef enum sdfed_round_verdict {
    SDFED_ROUND_WAIT,    /* reports are still due */
    SDFED_ROUND_CLOSE,   /* combine the reports and start the next round */
    SDFED_ROUND_ABANDON, /* the quorum cannot be reached: keep the parameters, start the next round */
} sdfed_round_verdict;

/* What to do now, given whether the deadline has passed. */
sdfed_round_verdict sdfed_round_check(const sdfed_round *r, int min_clients, int deadline_passed);

/* Whether client `client` (the simulator's index, the headless client's
 * shard) drops out of round `number` with probability p. */
int sdfed_round_drops_out(uint64_t seed, int64_t number, int64_t client, double p);

typedef struct sdfed_round_update {
    int64_t client;
    int64_t base; /* the round (version) it was trained from */
    int64_t samples;
    const float *values;
} sdfed_round_update;

/* Orders a synchronous round's updates as its clients were chosen (updates
 * from clients not chosen go last, in their given order); n log n. */
int sdfed_round_order(const sdfed_round *r, sdfed_round_update *u, int n, sdfed_error *err);

/* next (P) = round `number`'s combination of n updates of P values each;
 * global (P) is the current global parameters. */
int sdfed_round_combine(const sdfed_aggregate_config *cfg, uint64_t seed, int64_t number, const sdfed_round_update *u,
                        int n, const float *global, size_t P, float *next, sdfed_arena *arena, sdfed_error *err);

#endif
