/* Federated partitioners: which training samples each client holds, and the
 * test samples each client is scored on.
 *
 * Input: a training set and (optionally) a separate test pool, each a list
 * of samples with a label (and a domain for the DOMAINS method). Output: for
 * each client its train ids and test ids. Train splits are disjoint; every
 * train sample goes to exactly one client, except the samples of classes no
 * client holds (PATHOLOGICAL with n_clients * k < n_classes) and those cut by
 * `shots` (both counted in `unassigned`).
 *
 * Methods (C = n_classes, K = n_clients):
 *   IID           the samples shuffled, then dealt in contiguous blocks: client
 *                 c gets n / K samples, plus one when c < n % K.
 *   PATHOLOGICAL  client c holds the k = classes_per_client classes
 *                 (c*k + j) mod C, j = 0..k-1 (round-robin, so all classes are
 *                 covered when K*k >= C). A class's samples, shuffled, are
 *                 split between its holders in ascending client order into
 *                 contiguous shares of n_x / h, plus one for the first n_x % h.
 *   DIRICHLET     for each class x in order, proportions p ~ Dir(alpha) over
 *                 the K clients; the class's n_x shuffled samples are split
 *                 into contiguous shares of sizes round(n_x p) by largest
 *                 remainder (floors, then +1 to the largest fractional parts,
 *                 ties to the lower client), so the counts sum to n_x exactly.
 *                 min_train > 0: when a client ends with fewer than min_train
 *                 samples, ALL the classes' proportions are drawn again (the
 *                 rng continues; the shuffles are kept), at most
 *                 SDFED_PARTITION_MAX_REDRAWS times, then SDFED_ERR_ARG.
 *   DOMAINS       K = n_domains * clients_per_domain; clients d*m .. d*m+m-1
 *                 (m = clients_per_domain) belong to domain d and split that
 *                 domain's samples exactly as DIRICHLET does (min_train per
 *                 domain). Samples need a domain id (see sdfed_domain_assign).
 *
 * Few-shot (shots > 0, any method): each client's samples (ascending
 * position) are shuffled and, scanning that order, kept while the client has
 * fewer than `shots` of that label: at most `shots` per class per client.
 *
 * Test splits (when a pool is given): client c gets T samples, T =
 * test_per_client, or when that is 0 the pool shared out among the H
 * clients that hold train samples (DOMAINS: the pool of its domain among
 * the domain's clients that do): pool / H each (integer division), and one
 * more for the first pool % H of them in client order, so that all of it
 * is asked for (a pool smaller than H: one each for the first). The label
 * counts follow the client's final train histogram h (N train samples):
 * t_x = T h_x / N by largest remainder in exact integer arithmetic (ties to
 * the lower class), so a pathological client is tested on its classes only.
 * A client without train samples gets no test samples. Samples are taken
 * from the pool's shuffled class lists (per domain for DOMAINS), clients in
 * order, each list consumed front to back, so the test splits are disjoint
 * when, for every class (and domain), the pool holds at least what the
 * clients ask of it in total. When a list runs out it starts again from its
 * front: those samples are then shared between clients and counted in
 * `test_reused` (with the pool shared out and train proportions differing
 * from the pool's, a few are). A client never gets the same sample twice: its t_x is
 * capped at the list's size, and what the cap (or a class absent from the
 * pool) removes is not made up from other classes but counted in
 * `test_short`.
 *
 * Randomness: everything is a function of the inputs and `seed`, through
 * three streams of sdfed_rng (base/rng.h), the same bits on every target:
 *   stream 0 (train): IID one shuffle of all positions; PATHOLOGICAL the class
 *     lists shuffled in class order; DIRICHLET the class lists shuffled in
 *     class order, then one Dir(alpha) draw per class (per redraw); DOMAINS
 *     the same for domain 0, then domain 1, ...
 *   stream 1 (shots): each client's list shuffled, clients in order.
 *   stream 2 (test): the pool's class lists shuffled, in (domain, class) order.
 * So changing shots or the test size never changes the train split.
 * Cost: O(n log n + pool log pool + K C log K) time, O(n + pool + K C) memory.
 *
 * Ids: a split lists sample ids (samples->id[i], or the position i when id is
 * NULL), in ascending order of position. */
#ifndef SDFED_PARTITION_H
#define SDFED_PARTITION_H

#include <stdint.h>

#include "base/status.h"

enum {
    SDFED_PARTITION_IID = 0,
    SDFED_PARTITION_PATHOLOGICAL,
    SDFED_PARTITION_DIRICHLET,
    SDFED_PARTITION_DOMAINS,
    SDFED_PARTITION_KIND_COUNT
};

#define SDFED_PARTITION_MAX_CLIENTS 65536
#define SDFED_PARTITION_MAX_REDRAWS 1000

typedef struct sdfed_samples {
    int n;
    const int *id;         /* (n) ids reported in the splits, or NULL: the positions 0..n-1 */
    const uint8_t *label;  /* (n), each < n_classes */
    const uint8_t *domain; /* (n), each < n_domains; read by DOMAINS only */
} sdfed_samples;

typedef struct sdfed_partition_config {
    int method;             /* SDFED_PARTITION_* */
    int n_clients;          /* 1..SDFED_PARTITION_MAX_CLIENTS; DOMAINS: 0 or n_domains * clients_per_domain */
    int n_classes;          /* 1..256 */
    int classes_per_client; /* PATHOLOGICAL: k in 1..n_classes */
    double alpha;           /* DIRICHLET, DOMAINS: finite, > 0 */
    int min_train;          /* DIRICHLET, DOMAINS: >= 0 (0: no minimum) */
    int n_domains;          /* DOMAINS: 1..256 */
    int clients_per_domain; /* DOMAINS: >= 1 */
    int shots;              /* >= 0; 0: keep every sample */
    int test_per_client;    /* >= 0; 0: the pool shared out among the clients with train samples */
    uint64_t seed;
} sdfed_partition_config;

typedef struct sdfed_client_split {
    int domain; /* DOMAINS: the client's domain; -1 otherwise */
    int n_train, n_test;
    int *train; /* (n_train) ids of the training set */
    int *test;  /* (n_test) ids of the test pool */
} sdfed_client_split;

typedef struct sdfed_partition {
    int n_clients;
    sdfed_client_split *clients; /* (n_clients) */
    int unassigned;              /* train samples no client got */
    int redraws;                 /* Dirichlet draws rejected by min_train */
    int test_reused;             /* test ids handed out again after their pool list ran out (0: disjoint) */
    int test_short;              /* test samples fewer than asked (a class missing or too small in the pool) */
    int *ids;                    /* storage behind every train and test list */
} sdfed_partition;

/* test_pool may be NULL (no test splits). On failure *out is zeroed. */
int sdfed_partition_make(const sdfed_partition_config *cfg, const sdfed_samples *train, const sdfed_samples *test_pool,
                         sdfed_partition *out, sdfed_error *err);
void sdfed_partition_free(sdfed_partition *p);

/* A validation split, for choosing hyperparameters without the test split:
 * of the n_c training samples of each class c of every client, n_c / every
 * (rounded down) are held out and become the client's test set in place of
 * its test pool (their ids are then training ids). Which ones: the class's
 * samples in ascending order shuffled by stream 3 of seed (clients in
 * order, classes ascending), the first n_c / every. The lists stay in
 * ascending order, in the partition's storage. train must be the samples
 * the partition was made of, without ids (positions). */
int sdfed_partition_hold_out(sdfed_partition *p, const sdfed_samples *train, int every, uint64_t seed,
                             sdfed_error *err);

#endif
