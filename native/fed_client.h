/* A federated client as both the simulator and the headless client run it,
 * so that the two compute the same bits: its method parameters, its own
 * random stream, its partition shard, its local training and its accuracy.
 *
 * Randomness comes from the task seed's streams (fed/task.h). */
#ifndef SDFED_NATIVE_FED_CLIENT_H
#define SDFED_NATIVE_FED_CLIENT_H

#include "data/partition.h"
#include "native/fed_data.h"
#include "method/methods.h"

/* The task's partition of the data into clients. */
int native_fed_partition(const sdfed_task *task, const native_fed_data *d, sdfed_partition *p, sdfed_error *err);

/* The images of the task's partition a program reads: every client's
 * (client -1: the simulator's) or one client's (the headless client's),
 * their training and test images; with native_fed_shards_mark, a
 * native_fed_wanted. */
typedef struct native_fed_shards {
    const sdfed_task *task;
    int client;
} native_fed_shards;
int native_fed_shards_mark(const void *shards, const native_fed_data *d, uint8_t *train, uint8_t *test,
                           sdfed_error *err);

typedef struct native_fed_client {
    int index;
    sdfed_method_config cfg; /* with its own local prompt length */
    sdfed_local_plan plan;   /* its length and local work a round (fed/local_prompt.h) */
    sdfed_method_params params;
    sdfed_rng rng;
    const sdfed_client_split *split;
} native_fed_client;

/* step_s: the device's seconds a step at each of the task's
 * local_prompt.lengths (the adaptive rule's; NULL: none known). */
int native_fed_client_init(native_fed_client *c, const sdfed_task *task, int index, const sdfed_client_split *split,
                           const double *step_s, const sdfed_clip_model *m, const sdfed_kernels *k,
                           const sdfed_classes *cls, sdfed_arena *arena, sdfed_error *err);
void native_fed_client_free(native_fed_client *c);

/* The client's local training of one round (local_epochs over its shard in
 * batches, at most its plan's steps); the losses are added to *sum and the
 * steps to *steps. Its update weighs plan.samples. */
int native_fed_client_train(native_fed_client *c, const sdfed_task *task, const sdfed_clip_model *m,
                            const sdfed_kernels *k, const sdfed_classes *cls, const native_fed_data *d,
                            sdfed_losses *sum, int *steps, sdfed_arena *arena, sdfed_error *err);

/* Accuracy on the client's test split with its current parameters. */
int native_fed_client_accuracy(const native_fed_client *c, const sdfed_clip_model *m, const sdfed_kernels *k,
                               const sdfed_classes *cls, const native_fed_data *d, double *accuracy, sdfed_arena *arena,
                               sdfed_error *err);

#endif
