/* One secure round in one process: the round's sampled clients
 * (native/secagg_client.h) and the server (native/secagg_server.h,
 * native/secagg_unmask.h) through the four stages with the real
 * cryptography, every message handed over as the bytes the aggregator will
 * carry, and the task's dropouts at each stage (fed/secagg_task.h). A
 * client trains (the caller's train function) only when it reaches its
 * masked input, so a client that drops out before it, as in a plain round,
 * does not train.
 *
 * Randomness: each client's secrets (keys, its seeds, Shamir coefficients)
 * and its noise from its own AES-256-CTR keystream under a key
 * from getrandom (one system call a client, not one a draw), unless the
 * caller passes sources; the graph's shuffle from the task seed (a key per round from
 * SDFED_STREAM_SECAGG_GRAPH + (round << 20)), so that which round is
 * abandoned in the unmasking does not change from run to run; the rounding
 * from the seed per (round, client). Without noise a run's results are
 * therefore the same every time, though every key and mask differs.
 *
 * The parity check: once unmasked, the same inputs (each client's before
 * its masks) are summed as plain integers without any mask
 * (sdfed_secagg_plain_global): the round's global must equal it bit for
 * bit; its sha256 is kept next to the round's. */
#ifndef SDFED_SIM_SECURE_ROUND_H
#define SDFED_SIM_SECURE_ROUND_H

#include <stdint.h>

#include "fed/secagg_random.h"
#include "fed/secagg_stage.h"
#include "fed/secagg_task.h"

/* *x = client `client`'s copy of the global parameters after it trained on
 * it, *samples its sample count; *x = NULL: it has nothing to train on and
 * leaves. */
typedef int (*secure_round_train_fn)(void *ctx, int64_t client, const float **x, int64_t *samples, sdfed_error *err);

typedef struct secure_round_stats {
    int advertised, shared, masked, survivors; /* completed each stage (masked: inputs in the sum) */
    int abandoned;                             /* never unmasked: the global stays */
    char why[200];                             /* why it was abandoned */
    int64_t weight_sum;                        /* the survivors' weights */
    double protocol_seconds;                   /* the round's time less the clients' training */
    double server_seconds;                     /* of which the server's: its requests, receiving, unmasking */
    double unmask_seconds;                     /* of which the unmasking into the sum (native_secagg_server_finish) */
    double unmask_cpu_seconds;                 /* the unmasking's CPU time, all threads (the others are wall) */
    int64_t bytes_up, bytes_down;              /* the protocol's messages, all clients: to the server, from it */
    char plain_sha256[65];                     /* of the plain global of the same inputs ("" when abandoned) */
    /* by stage (advertise to unmask; the unmasking into the sum apart): the CPU time of the clients' own steps
     * (training excluded) and of the server's, the messages each way */
    struct {
        double client_cpu_seconds, server_cpu_seconds;
        int64_t bytes_up, bytes_down;
    } stage[SDFED_SECAGG_UNMASK + 1];
} secure_round_stats;

/* What a test may set instead of the defaults (NULL members: the defaults). */
typedef struct secure_round_options {
    const sdfed_secagg_bytes *secret; /* the clients' secrets (each its own keystream) */
    const sdfed_secagg_bytes *noise;  /* their noise (the same) */
    /* whether client `client` leaves before its message of `stage` (the task's dropouts) */
    int (*drops)(void *ctx, int64_t client, sdfed_secagg_stage stage);
    void *drops_ctx;
} secure_round_options;

/* next (P) = the global after round `round` of the n = plan->params.n
 * clients `clients` (their task indices, in the round's order) from the
 * global g; when abandoned, next = g. options may be NULL. */
int secure_round_run(const sdfed_task *task, const sdfed_secagg_plan *plan, int64_t round, const int64_t *clients,
                     const float *g, secure_round_train_fn train, void *ctx, const secure_round_options *options,
                     float *next, secure_round_stats *stats, sdfed_error *err);

#endif
