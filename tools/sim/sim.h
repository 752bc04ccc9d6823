/* One federation in one process: the clients of a task, their local
 * training with a method, the server's sample-weighted average of the
 * shared parameters (the paper's G_s <- sum h_l / sum h * G_s,l), and every
 * client's accuracy on its own test split after each round. */
#ifndef SDFED_SIM_H
#define SDFED_SIM_H

#include <stdint.h>
#include <stdio.h>

#include "methods.h"
#include "partition.h"
#include "task.h"

/* Cached unit-length image features of the train and test pools. */
typedef struct sim_data {
    int dim, n_classes;
    int n_train, n_test;
    const float *train_features, *test_features; /* (n, dim) */
    const uint8_t *train_labels, *test_labels;
    const uint8_t *train_domains, *test_domains; /* NULL unless the task has domains */
} sim_data;

typedef struct sim_round {
    double accuracy;                                        /* mean over clients of local test accuracy */
    double *client_accuracy;                                /* (n_clients) */
    double ce_local, ce_global, stretch, separation, total; /* mean over the round's steps */
    int steps, participants;
    double seconds;
} sim_round;

typedef struct sim_result {
    int n_rounds, n_clients;
    sim_round *rounds;
    int *client_train, *client_test, *client_local_len; /* (n_clients) */
    double final_accuracy;                              /* mean of the last min(10, rounds) rounds' accuracy */
} sim_result;

/* The method's settings for a task (its defaults, then the task's keys). */
sdfed_method_config sim_method_config(const sdfed_task *task);

/* Runs the task; `log` (may be NULL) receives one line per round. */
int sim_run(const sdfed_task *task, const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls,
            const sim_data *data, sim_result *out, FILE *log, sdfed_error *err);
void sim_result_free(sim_result *r);

#endif
