/* A federation's task: the JSON file that `sdfed sim` and the aggregator
 * read. Every key is optional (defaults below, DESIGN.md's settings); an
 * unknown key or a value of the wrong type or range is an error naming the
 * key. Keys:
 *   model                  path of the GGUF model     ("": the host's)
 *   dataset                the name of a data set the host has ("": the
 *                          host's; native/task_file.h's), or a folder dataset in the ImageFolder
 *                          layout (one sub-folder per class): {"train": DIR,
 *                          "test": DIR}, or {"folder": DIR, "test_fraction": 0.2}
 *                          (paths relative to the task file: native/task_file.h);
 *                          "folder" alone is a folder dataset whose folders are
 *                          the host's, as clients are told of it (a host's
 *                          task file must name its folders)
 *   clients                number of clients          (10)
 *   partition              {"kind": "pathological"|"dirichlet"|"iid"|"domains",
 *                           "classes_per_client": 2, "alpha": 0.3, "shots": 0 (all),
 *                           "test_per_client": 0 (the test pool shared out),
 *                           "clients_per_domain": 2}
 *   rounds (50), clients_per_round (0 = all), local_epochs (1), batch_size (16)
 *   lr (0.01), momentum (0), weight_decay (0)
 *   global_prompt_length (8), local_prompt_length (16, or [min, max] drawn per client)
 *   local_prompt           instead of local_prompt_length, a client's length
 *                          fitted to its device and data (fed/local_prompt.h):
 *                          {"lengths": [4, 8, 16], "rule": "random"|"fixed"|
 *                          "adaptive" ("random"), "budget_s": seconds of local
 *                          work a round (0: none; adaptive needs one),
 *                          "images_per_token": 0 (no data cap)}
 *   devices                the simulator's device population (fed/devices.h):
 *                          [{"name": "phone", "share": 0.3, "step_ms": [one a
 *                          listed length]}, ...] (none; needs local_prompt)
 *   method ("sdfed"), projector ("complement"), stretch ("mean" or "sum": the
 *   reading of L_str, prompt/objective.h), lambda (0.6), gamma (0.8), theta (0.2)
 *   transport              fedotp's matching of prompts to patches
 *                          (prompt/transport.h): {"kind": "partial"|"balanced",
 *                          "epsilon": 0.1, "mass": 0.8 (1 for balanced),
 *                          "iterations": 100, "threshold": 0.001}
 *   seed (1)
 *   name, description      what the page and the status page show ("", "")
 *   classes                the classes in label order: each a string (its
 *                          name, which is also its text) or {"name": "T-shirt/top",
 *                          "text": "t-shirt"} when prompts say something else;
 *                          names unique, two or more (default: the
 *                          dataset's, which its host gives:
 *                          sdfed_task_set_classes)
 *   template               the zero-shot prompt, one {} for the class text
 *                          ("a photo of a {}."): zero-shot and FedOT's classifier
 *   prompt_init            words whose token embeddings start every learned
 *                          prompt (the first min(T, tokens) rows of a prompt of T
 *                          rows; the rest random as without); none by default
 *   demo                   whether the server offers demo shards (true: when it
 *                          has the dataset)
 *   background             "#rrggbb" (hex digits, either case): the colour that
 *                          transparent pixels are composited onto, natively and
 *                          in the browser alike (clip/image_composite.h)
 *                          ("#ffffff", white)
 *   secure_aggregation     off unless present: the server learns only the sum of
 *                          the round's inputs (docs/secure-aggregation.md,
 *                          fed/secagg_task.h): {"dropout_rate": 0.33,
 *                          "corrupt_rate": 0.05, "clip": 0.5, "l2_clip": 0 (none),
 *                          "quant_bits": 16, "ring_bits": 32, "max_weight": 4096,
 *                          "noise": {"epsilon": E, "delta": 1e-5} (none),
 *                          "drop": {"advertise": 0, "share": 0, "unmask": 0}}
 * lambda, gamma and projector default to each method's own values when the
 * task does not set them (FedPHA: rowspace, 0.2, 1.0).
 *
 * The task's text (name, description, template, prompt_init, classes) is
 * variable-size and lives on the heap, owned by the task: sdfed_task_free
 * releases it. The struct itself stays small (no text arrays: the wasm
 * stack is small and tasks are locals in several places) and is copied by
 * value; a copy borrows the text of the task it was copied from, which must
 * outlive it and is the only one freed. */
#ifndef SDFED_TASK_H
#define SDFED_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "base/io.h"
#include "base/status.h"
#include "data/partition.h"
#include "fed/aggregate.h"
#include "fed/devices.h"
#include "fed/local_prompt.h"
#include "method/methods.h"
#include "prompt/prompt.h"

/* The task's "secure_aggregation" (fed/secagg_task.h applies it). */
typedef struct sdfed_task_secagg {
    int on;                            /* 0: plain rounds (the key is absent) */
    double dropout_rate, corrupt_rate; /* delta and gamma of the (k, t) rule (fed/secagg_params.h) */
    double clip;                       /* c: each coordinate of a client's change clipped to [-c, c] */
    double l2_clip;                    /* the change's L2 norm clipped to at most this first (0: not) */
    int quant_bits, ring_bits;         /* b and B (fed/secagg_ring.h) */
    int64_t max_weight;                /* an input's weight: its sample count, at most this */
    double epsilon, delta;             /* distributed DP over the whole run (epsilon 0: no noise) */
    /* the simulator's dropouts at the stages (the masked input's is the task's dropout): the
     * chance a client still in the round leaves before sending its keys, its shares, its
     * unmasking answer */
    double drop_advertise, drop_share, drop_unmask;
} sdfed_task_secagg;

typedef struct sdfed_task {
    char model[1024];
    char dataset[64]; /* a data set the host has by name, "folder", or "" (the host's) */
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
    sdfed_local_prompt local_prompt; /* n_lengths 0: the key is absent (min and max are its shortest and longest) */
    sdfed_devices devices;           /* the simulator's device population (n 0: none) */
    int method;
    int projector;              /* -1: the method's own */
    int stretch;                /* -1: the method's own (SDFED_STRETCH_*) */
    float lambda, gamma, theta; /* NAN: the method's own */
    sdfed_transport transport;  /* fedotp's */
    uint64_t seed;
    /* heap text, owned (see above); NULL: the default */
    char *name, *description;
    char *template_text; /* NULL: SDFED_TEMPLATE_DEFAULT */
    char *prompt_init;   /* NULL: random prompts */
    int n_classes;       /* 0: the dataset's classes, not known yet */
    char **class_names, **class_texts;
    int demo;              /* 1: offer demo shards when the server has the dataset */
    uint8_t background[3]; /* red, green, blue behind transparent pixels */
    sdfed_task_secagg secagg;
} sdfed_task;

/* The random streams of a task's seed (base/rng.h), shared by the simulator,
 * the aggregator and the clients so they all draw the same values:
 * partitions use their own streams 0..2 (data/partition.h). */
enum {
    SDFED_STREAM_SERVER = 10,       /* the federation's initial shared parameters */
    SDFED_STREAM_LENGTHS = 11,      /* local prompt lengths, one draw per client in order */
    SDFED_STREAM_ROUNDS = 12,       /* the clients chosen for each round */
    SDFED_STREAM_DROPOUT = 13,      /* whether a chosen client drops out of a round */
    SDFED_STREAM_SECAGG_DROP = 14,  /* + (round << 20) + (stage << 8): secure aggregation's dropouts at a stage */
    SDFED_STREAM_SECAGG_ROUND = 15, /* + (round << 20): a secure round's stochastic rounding (per client) */
    SDFED_STREAM_SECAGG_GRAPH = 16, /* + (round << 20): a secure round's graph key from the seed */
    SDFED_STREAM_DEVICES = 17,      /* + (client << 20): a simulated client's device (fed/devices.h) */
    SDFED_STREAM_CLIENTS = 1000,    /* + c: client c's initialisation and batch order */
    SDFED_STREAM_NOISE = 100000,    /* + r: round r's differential-privacy noise */
};

const char *sdfed_partition_kind_name(int kind);

void sdfed_task_defaults(sdfed_task *t);
/* Parses a task over the defaults; on error the task is left at its
 * defaults and err names the key. t's previous text is not freed. */
int sdfed_task_parse(sdfed_task *t, const char *json, size_t len, sdfed_error *err);
/* Frees the task's text; the task is left at its defaults. */
void sdfed_task_free(sdfed_task *t);
/* Sets the task's classes (copies of names and texts; texts NULL: the
 * names), replacing any it had: for a dataset whose default classes are
 * known only once it is read. Duplicate names are an error naming 'classes';
 * one class is an error naming it (a task of one class learns nothing, its
 * every image being of it): the one check of the task's classes, whether
 * its "classes" key or its folders give them. */
int sdfed_task_set_classes(sdfed_task *t, const char *const *names, const char *const *texts, int n, sdfed_error *err);

/* The task's classes: the "classes" key, else the dataset's as its host
 * set them (0 when a dataset's classes are not known yet). */
int sdfed_task_class_count(const sdfed_task *t);
const char *sdfed_task_class_name(const sdfed_task *t, int i);
const char *sdfed_task_class_text(const sdfed_task *t, int i);
const char *sdfed_task_name(const sdfed_task *t);        /* "" when not set */
const char *sdfed_task_description(const sdfed_task *t); /* "" when not set */
const char *sdfed_task_template(const sdfed_task *t);
/* The classes as prompts see them: each class's text, the template and
 * prompt_init, tokenised by tok (prompt/prompt.h). */
int sdfed_task_classes(const sdfed_task *t, const sdfed_tokenizer *tok, int context_length, sdfed_classes *out,
                       sdfed_error *err);
/* Cross-key checks (clients_per_round <= clients, ...), after overrides. */
int sdfed_task_validate(const sdfed_task *t, sdfed_error *err);
/* Whether the server may combine the task's rounds by cfg (the aggregator's
 * --aggregate, --clip and --noise): with secure_aggregation only the plain
 * mean, without the server's clipping or noise, since the server holds
 * nothing but the masked sum (SDFED_ERR_ARG saying why). */
int sdfed_task_check_aggregate(const sdfed_task *t, const sdfed_aggregate_config *cfg, sdfed_error *err);

/* The task in the task-file format, every key explicit (the method's own
 * projector, lambda and gamma written out, the classes as {"name", "text"}
 * objects; model, dataset and classes only when known, else left to the
 * host; prompt_init only when set), readable by sdfed_task_parse.
 * model_url NULL: the task as its host has it; else the task as clients are
 * told of it: the model's URL for its path, and a folder dataset as "folder"
 * (the host's folders, which name paths on the host, left out). */
int sdfed_task_write(const sdfed_task *t, const char *model_url, sdfed_buffer *out, sdfed_error *err);

/* The method's settings for a task: its defaults, then the task's keys. */
sdfed_method_config sdfed_task_method_config(const sdfed_task *t);
/* Client c's local prompt length (its draw from SDFED_STREAM_LENGTHS) under
 * local_prompt_length or the random and fixed rules; the adaptive rule's is
 * sdfed_task_local_plan's. */
int sdfed_task_local_prompt_length(const sdfed_task *t, int c);
/* Client c's local work a round (fed/local_prompt.h), with n_train images
 * and, for the adaptive rule, its device's seconds a step at each of
 * local_prompt.lengths (step_s; NULL otherwise allowed). Without the
 * local_prompt key: its length drawn, the whole local epochs. */
int sdfed_task_local_plan(const sdfed_task *t, int c, const double *step_s, int n_train, sdfed_local_plan *out,
                          sdfed_error *err);
/* The federation's initial shared parameters (SDFED_STREAM_SERVER). */
int sdfed_task_server_params(const sdfed_task *t, const sdfed_clip_model *m, const sdfed_kernels *k,
                             const sdfed_classes *cls, sdfed_method_params *out, sdfed_arena *arena, sdfed_error *err);
/* Client c's starting point, the same in the browser, the headless client
 * and the simulator: its method settings (with its own local prompt
 * length local_len, sdfed_task_local_plan's; the task's lengths must fit
 * the classes in the model's context), its random stream (SDFED_STREAM_CLIENTS + c) and its initial
 * parameters drawn from it. */
int sdfed_task_client_params(const sdfed_task *t, int c, int local_len, const sdfed_clip_model *m,
                             const sdfed_kernels *k, const sdfed_classes *cls, sdfed_method_config *cfg, sdfed_rng *rng,
                             sdfed_method_params *out, sdfed_arena *arena, sdfed_error *err);

#endif
