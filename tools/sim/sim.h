/* One federation in one process: the clients of a task (fed_client.h),
 * their local training, the round engine's decisions (fed/round.h: who is
 * chosen, who drops out with the task's dropout, whether the round closes
 * with the paper's sample-weighted mean over its clients in client order,
 * or is abandoned with fewer than the task's min_clients reports), and
 * every client's accuracy on its own test split (or validation split) after
 * each round, averaged over the clients that have test images (a client
 * without any has no accuracy, NaN, and is left out). With the task's secure_aggregation, each round is the whole
 * protocol with the real cryptography (secure_round.h): the new global is
 * the round's global plus the survivors' mean quantised change, unmasked
 * from their sum; with noise, the privacy spent so far is kept per round.
 * With the task's devices, each client gets a simulated device
 * (fed/devices.h) whose step times feed its local prompt rule
 * (fed/local_prompt.h), and the clock is simulated: a client's local work
 * takes its plan's seconds; one whose work exceeds local_prompt.budget_s
 * (or who has no step within it) misses the round: it trains (its local
 * prompt learns) but its update comes after the deadline and does not
 * count. A round lasts as long as its slowest reporting client, or the
 * whole budget when one missed it. Pace steering sits out the clients
 * that missed rounds, as the aggregator's does (fed/pace.h): a client's
 * misses are rounds, so the simulator and the aggregator agree. */
#ifndef SDFED_SIM_H
#define SDFED_SIM_H

#include <stdio.h>

#include "fed/secagg_task.h"
#include "native/fed_client.h"
#include "secure_round.h"

typedef struct sim_round {
    double accuracy;         /* mean of client_accuracy over the clients with test images; NaN when none has any */
    double *client_accuracy; /* (n_clients) accuracy on its test images, NaN without any (no accuracy, not 0) */
    double ce_local, ce_global, stretch, separation, total; /* mean over the round's steps */
    int steps, participants;
    int abandoned; /* too few reports (the task's dropout, min_clients): the parameters stayed */
    double seconds;
    char global_sha256[65]; /* of the shared parameters after the round ("" without any) */
    int secure;             /* a secure round: secagg holds its stages */
    secure_round_stats secagg;
    double epsilon;     /* with noise: the privacy spent after this round (at the task's delta), else 0 */
    double sim_seconds; /* with devices: the round's simulated wall-clock */
    int missed;         /* with devices: chosen clients whose work did not fit the budget */
    int paced;          /* clients sitting out the round after missed ones (fed/pace.h) */
} sim_round;

typedef struct sim_result {
    int n_rounds, n_clients;
    sim_round *rounds;
    int *client_train, *client_test, *client_local_len; /* (n_clients) */
    int *client_device, *client_steps;                  /* (n_clients) the device (-1: none) and steps a round */
    double final_accuracy;                              /* mean of the last final_rounds rounds' accuracy (NaN) */
    int final_rounds;                                   /* min(10, rounds) */
    int clients_without_test;                           /* clients with no test image: left out of the means */
    int secure;                                         /* the rounds were secure: plan is theirs */
    sdfed_secagg_plan plan;
} sim_result;

/* With validation, one in SIM_VALIDATION_EVERY of each client's training
 * images of each class is held out (sdfed_partition_hold_out) and is what
 * the client is tested on: the test split is never seen. */
#define SIM_VALIDATION_EVERY 5

/* Runs the task; `log` (may be NULL) receives one line per round. */
int sim_run(const sdfed_task *task, const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls,
            const native_fed_data *data, int validation, sim_result *out, FILE *log, sdfed_error *err);
void sim_result_free(sim_result *r);

#endif
