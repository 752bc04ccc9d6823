/* sdfed sim: a whole federation in one process (tools/sim/sim.h).
 *   sdfed sim --task TASK.json [--method M] [--seed S] [--rounds N] [--lr X] [--out DIR]
 *             [--cache DIR] [--data DIR] [--backend NAME] [--isa NAME] [--validation] [--f32-images]
 * The flags override the task's keys; --isa caps the native tiles'
 * instruction set (portable, avx2, avx512: the same results, which is what
 * it is for: a check that a run does not depend on the CPU); --validation tests every client on a
 * fifth of its training images held out (sim.h) instead of its test split,
 * for choosing hyperparameters; --f32-images keeps a Q8_0 image tower on f32
 * activations (clip_model.h's int8_images off: the features docs/results.md
 * was made with). Fashion-MNIST's training images
 * 30000..59999 are the clients' training pool and its test set their test
 * pool (images 0..29999 trained the default model; see fed_data.h). The
 * run prints a line per round ("round 9: accuracy 43.75% (10 of 10 rounds
 * done), ..."; rounds count from 0, as everywhere; a secure round's line
 * goes on with its stages: "; secure: 10 advertised, 10 shared, 9 masked,
 * 9 survivors, 0.05 s", and with noise "; epsilon 1.234 spent of 8 (delta
 * 1e-05)"), writes results.json and accuracy.svg into DIR, and ends with
 * "final accuracy (mean of the last 10 rounds): XX.XX%" (of the last
 * min(10, rounds) rounds; "final accuracy: none (no client has a test
 * image)" when no client has one), after "secure aggregation: 49 of 50 rounds
 * unmasked[, epsilon 7.990 spent of 8 at delta 1e-05]" when the task asks
 * for it. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "native/crypto.h"
#include "cli.h"
#include "native/fed_client.h"
#include "native/fed_data.h"
#include "native/task_file.h"
#include "report.h"
#include "sim.h"

/* Task file, then the flags over it. */
const char cmd_sim_help[] =
    "usage: sdfed sim --task TASK.json [--method M] [--seed S] [--rounds N] [--lr X] [--out DIR] [--cache DIR] "
    "[--data DIR] [--backend NAME] [--isa portable|avx2|avx512] [--validation] [--f32-images]\n"
    "\n"
    "Runs a whole federation in one process, with the same client code as the headless client and the\n"
    "page and the same round engine as the aggregator: a line per round, results.json and accuracy.svg in\n"
    "DIR, and the final accuracy (the mean of the last rounds' accuracy) at the end.\n"
    "\n"
    "  --task FILE     the federation's task (tasks/*.json, or one from 'sdfed task init')\n"
    "  --method M      sdfed, promptfl, coop, promptfolio, fedpha, fedot, fedotp or zeroshot (the task's)\n"
    "  --seed S, --rounds N, --lr X   override the task's\n"
    "  --out DIR       where results.json and accuracy.svg go (sim-out)\n"
    "  --cache DIR     the image-feature cache ($SDFED_CACHE, ~/.cache/sdfed)\n"
    "  --data DIR      a volunteer's own ImageFolder instead of the task's images\n"
    "  --backend NAME  the kernels (see 'sdfed help')\n"
    "  --isa NAME      cap the native tiles at portable C, AVX2 or AVX-512: the same bits, a check that a run\n"
    "                  does not depend on the CPU\n"
    "  --validation    test every client on a fifth of its training images held out, for choosing\n"
    "                  hyperparameters, never on the test split\n"
    "  --f32-images    a Q8_0 image tower on f32 activations (the features docs/results.md was made with)\n";

/* The flags over the task's keys, read before the task: a wrong one is the
 * command line's (CLI_USAGE), in the ranges of the task's keys. */
typedef struct overrides {
    int method; /* -1: the task's */
    long long seed, rounds;
    double lr; /* seed, rounds, lr: -1, 0, 0 for the task's */
} overrides;

static int read_overrides(const char *method, const char *seed, const char *rounds, const char *lr, overrides *o) {
    *o = (overrides){.method = -1, .seed = -1, .rounds = 0, .lr = 0};
    if (method && (o->method = sdfed_method_from_name(method)) < 0)
        return native_cli_error(CLI_USAGE, "sim: --method '%s' is not a method (see 'sdfed help')", method);
    if (seed && native_cli_integer(seed, "sim: --seed", 0, 9007199254740991LL, &o->seed)) return CLI_USAGE;
    if (rounds && native_cli_integer(rounds, "sim: --rounds", 1, 1000000, &o->rounds)) return CLI_USAGE;
    if (lr && native_cli_number(lr, "sim: --lr", 1e-9, 1000, &o->lr)) return CLI_USAGE;
    return CLI_OK;
}

/* Task file, then the flags over it. */
static int read_task(const char *path, const overrides *o, sdfed_task *task, sdfed_error *err) {
    int rc = native_task_read(path, task, NULL, err);
    if (rc) return rc;
    if (o->method >= 0) task->method = o->method;
    if (o->seed >= 0) task->seed = (uint64_t)o->seed;
    if (o->rounds > 0) task->rounds = (int)o->rounds;
    if (o->lr > 0) task->lr = (float)o->lr;
    return sdfed_task_validate(task, err);
}

/* --out: made now, before anything runs, and a folder this process can
 * write into (else named, and nothing run). */
static int make_out_dir(const char *dir, sdfed_error *err) {
    struct stat st;
    int rc = native_make_dirs(dir, err);
    if (rc) return sdfed_fail_context(err, rc, "--out");
    if (stat(dir, &st) != 0) return sdfed_fail(err, SDFED_ERR_IO, "--out %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return sdfed_fail(err, SDFED_ERR_ARG, "--out %s: not a folder", dir);
    if (access(dir, W_OK | X_OK) != 0)
        return sdfed_fail(err, SDFED_ERR_IO, "--out %s: cannot write into it: %s", dir, strerror(errno));
    return SDFED_OK;
}

int cmd_sim(int argc, char **argv) {
    const char *task_path = NULL, *method = NULL, *seed = NULL, *rounds = NULL, *out_dir = "sim-out", *cache = NULL;
    const char *data_dir = NULL, *backend = NULL, *lr = NULL, *isa = NULL;
    int validation = 0, f32_images = 0;
    const native_cli_option options[] = {{.name = "--task", .value = &task_path, .flag = NULL},
                                         {.name = "--method", .value = &method, .flag = NULL},
                                         {.name = "--seed", .value = &seed, .flag = NULL},
                                         {.name = "--rounds", .value = &rounds, .flag = NULL},
                                         {.name = "--lr", .value = &lr, .flag = NULL},
                                         {.name = "--out", .value = &out_dir, .flag = NULL},
                                         {.name = "--cache", .value = &cache, .flag = NULL},
                                         {.name = "--data", .value = &data_dir, .flag = NULL},
                                         {.name = "--backend", .value = &backend, .flag = NULL},
                                         {.name = "--isa", .value = &isa, .flag = NULL},
                                         {.name = "--validation", .value = NULL, .flag = &validation},
                                         {.name = "--f32-images", .value = NULL, .flag = &f32_images}};
    int status = native_cli_parse(argc, argv, options, (int)(sizeof options / sizeof options[0]), NULL, NULL);
    if (status) return status;
    if (!task_path) return native_cli_error(CLI_USAGE, "sim: --task is required");
    if (isa && native_cli_isa_cap(isa)) return CLI_USAGE;
    const sdfed_kernels *k = native_backend(backend);
    if (!k) return native_cli_error(CLI_USAGE, "sim: backend '%s' is not in this build", backend);
    overrides flags;
    if ((status = read_overrides(method, seed, rounds, lr, &flags))) return status;

    sdfed_task task;
    sdfed_error err = {0};
    if (read_task(task_path, &flags, &task, &err) || make_out_dir(out_dir, &err)) {
        sdfed_task_free(&task);
        return native_cli_error(CLI_FAILED, "sim: %s", err.message);
    }
    native_model m;
    if (native_model_open(&m, task.model, &err)) {
        sdfed_task_free(&task);
        return native_cli_error(CLI_FAILED, "sim: model: %s", err.message);
    }
    if (f32_images) m.clip.int8_images = 0;
    sdfed_clip_pack(&m.clip, k, SDFED_CLIP_TEXT | SDFED_CLIP_IMAGE);
    char sha[65];
    if (native_sha256_hex(m.file.data, m.file.size, sha, &err)) {
        native_model_close(&m);
        sdfed_task_free(&task);
        return native_cli_error(CLI_FAILED, "sim: model: %s", err.message);
    }
    sdfed_classes cls = {0};
    native_fed_data data = {0};
    sim_result result = {0};
    native_fed_shards shards = {.task = &task, .client = -1};
    native_fed_wanted clients_images = {.mark = native_fed_shards_mark, .ctx = &shards};
    int rc = native_fed_data_load(&task, data_dir, cache, &m, sha, k, &clients_images, &data, &err);
    if (rc == SDFED_OK) rc = native_fed_data_task_classes(&task, &data, &err);
    if (rc == SDFED_OK) rc = sdfed_task_classes(&task, &m.tokenizer, m.clip.cfg.context_length, &cls, &err);
    if (rc == SDFED_OK) {
        printf("sim: %s on %s (%s), %d clients, %d rounds, seed %llu, model %s\n", sdfed_method_name(task.method),
               task.dataset, sdfed_partition_kind_name(task.partition.kind), task.clients, task.rounds,
               (unsigned long long)task.seed, task.model);
        printf("sim: %d classes, %d training and %d test images", data.n_classes, data.n_train, data.n_test);
        if (data.skipped && data.skipped->n) printf(", %d files not used (see 'sdfed task check')", data.skipped->n);
        printf("\nsim: image features: %d from the cache, %d computed\n", data.features.cached, data.features.computed);
        if (validation) printf("sim: validation: each client tested on a fifth of its training images held out\n");
        rc = sim_run(&task, &m.clip, k, &cls, &data, validation, &result, stdout, &err);
    }
    char path[1200];
    if (rc == SDFED_OK) {
        snprintf(path, sizeof path, "%s/results.json", out_dir);
        rc = report_write_json(path, &task, sha, &result, &err);
    }
    if (rc == SDFED_OK) {
        snprintf(path, sizeof path, "%s/accuracy.svg", out_dir);
        rc = report_write_svg(path, &task, &result, &err);
    }
    if (rc == SDFED_OK && result.secure) {
        int unmasked = 0;
        for (int i = 0; i < result.n_rounds; i++) unmasked += !result.rounds[i].abandoned;
        printf("secure aggregation: %d of %d rounds unmasked", unmasked, result.n_rounds);
        if (result.plan.sigma2)
            printf(", epsilon %.3f spent of %g at delta %g", result.rounds[result.n_rounds - 1].epsilon,
                   task.secagg.epsilon, task.secagg.delta);
        printf("\n");
    }
    if (rc == SDFED_OK && isnan(result.final_accuracy))
        printf("final accuracy: none (no client has a test image)\n");
    else if (rc == SDFED_OK)
        printf("final accuracy (mean of the last %d rounds): %.2f%%\n", result.final_rounds,
               100 * result.final_accuracy);
    else
        status = native_cli_error(CLI_FAILED, "sim: %s", err.message);
    sim_result_free(&result);
    native_fed_data_free(&data);
    sdfed_classes_free(&cls);
    native_model_close(&m);
    sdfed_task_free(&task);
    return status;
}
