/* A federation's task: the JSON file that `sdfed sim` and the aggregator
 * read. Every key is optional (defaults below, DESIGN.md's settings); an
 * unknown key or a value of the wrong type or range is an error naming the
 * key. Keys:
 *   model                  path of the GGUF model     ("models/fmnist-tiny-clip.q8_0.gguf")
 *   dataset                "fashion-mnist", or a folder dataset in the ImageFolder
 *                          layout (one sub-folder per class): {"train": DIR,
 *                          "test": DIR}, or {"folder": DIR, "test_fraction": 0.2}
 *                          (paths relative to the task file: native/task_file.h)
 *   clients                number of clients          (10)
 *   partition              {"kind": "pathological"|"dirichlet"|"iid"|"domains",
 *                           "classes_per_client": 2, "alpha": 0.3, "shots": 0 (all),
 *                           "test_per_client": 0 (the test pool shared out),
 *                           "clients_per_domain": 2}
 *   rounds (50), clients_per_round (0 = all), local_epochs (1), batch_size (16)
 *   lr (0.01), momentum (0), weight_decay (0)
 *   global_prompt_length (8), local_prompt_length (16, or [min, max] drawn per client)
 *   method ("sdfed"), projector ("complement"), lambda (0.6), gamma (0.8), theta (0.2)
 *   seed (1)
 * lambda, gamma and projector default to each method's own values when the
 * task does not set them (FedPHA: rowspace, 0.2, 1.0). */
#ifndef SDFED_TASK_H
#define SDFED_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "base/io.h"
#include "base/status.h"
#include "data/partition.h"
#include "method/methods.h"

typedef struct sdfed_task {
    char model[1024];
    char dataset[64]; /* "fashion-mnist" or "folder" */
    /* a folder dataset: train and test folders, or one folder (train) and
     * the fraction of each class held out for testing */
    char data_train[1024], data_test[1024];
    double test_fraction;
    int clients;
    struct {
        int kind; /* SDFED_PARTITION_* */
        int classes_per_client;
        double alpha;
        int shots, test_per_client, clients_per_domain;
    } partition;
    int rounds, clients_per_round, local_epochs, batch_size;
    int min_clients; /* reports a round needs (0: the aggregator's --min-clients default, the simulator's 1) */
    double dropout;  /* the chance a chosen client vanishes before reporting (fed/round.h) */
    float lr, momentum, weight_decay;
    int global_prompt_length, local_prompt_min, local_prompt_max;
    int method;
    int projector;              /* -1: the method's own */
    float lambda, gamma, theta; /* NAN: the method's own */
    uint64_t seed;
} sdfed_task;

/* The random streams of a task's seed (base/rng.h), shared by the simulator,
 * the aggregator and the clients so they all draw the same values:
 * partitions use their own streams 0..2 (data/partition.h). */
enum {
    SDFED_STREAM_SERVER = 10,    /* the federation's initial shared parameters */
    SDFED_STREAM_LENGTHS = 11,   /* local prompt lengths, one draw per client in order */
    SDFED_STREAM_ROUNDS = 12,    /* the clients chosen for each round */
    SDFED_STREAM_DROPOUT = 13,   /* whether a chosen client drops out of a round */
    SDFED_STREAM_CLIENTS = 1000, /* + c: client c's initialisation and batch order */
    SDFED_STREAM_NOISE = 100000, /* + r: round r's differential-privacy noise */
};

const char *sdfed_partition_kind_name(int kind);

void sdfed_task_defaults(sdfed_task *t);
/* Parses a task over the defaults; on error the task is left at its
 * defaults and err names the key. */
int sdfed_task_parse(sdfed_task *t, const char *json, size_t len, sdfed_error *err);
/* Cross-key checks (clients_per_round <= clients, ...), after overrides. */
int sdfed_task_validate(const sdfed_task *t, sdfed_error *err);

/* The task in the task-file format, every key explicit (the method's own
 * projector, lambda and gamma written out), readable by sdfed_task_parse;
 * model_override (if not NULL) replaces the model path. */
int sdfed_task_write(const sdfed_task *t, const char *model_override, sdfed_buffer *out, sdfed_error *err);

/* The method's settings for a task: its defaults, then the task's keys. */
sdfed_method_config sdfed_task_method_config(const sdfed_task *t);
/* Client c's local prompt length (its draw from SDFED_STREAM_LENGTHS). */
int sdfed_task_local_prompt_length(const sdfed_task *t, int c);
/* The federation's initial shared parameters (SDFED_STREAM_SERVER). */
int sdfed_task_server_params(const sdfed_task *t, const sdfed_clip_model *m, const sdfed_kernels *k,
                             const sdfed_classes *cls, sdfed_method_params *out, sdfed_arena *arena, sdfed_error *err);
/* Client c's starting point, the same in the browser, the headless client
 * and the simulator: its method settings (with its own local prompt
 * length), its random stream (SDFED_STREAM_CLIENTS + c) and its initial
 * parameters drawn from it. */
int sdfed_task_client_params(const sdfed_task *t, int c, const sdfed_clip_model *m, const sdfed_kernels *k,
                             const sdfed_classes *cls, sdfed_method_config *cfg, sdfed_rng *rng,
                             sdfed_method_params *out, sdfed_arena *arena, sdfed_error *err);

#endif
