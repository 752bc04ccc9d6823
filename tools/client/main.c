/* sdfed-client: a headless federation client (native, libwebsockets).
 *   sdfed-client --server ws://HOST:PORT [--client-index K] [options]
 * It takes the task from the server's welcome (its classes, template and
 * prompt_init too), trains on shard K of the task's partition of its
 * dataset (for a folder task, whose folders the server does not send, those
 * the host's task file names, --host-task on the host's machine; or with
 * --data DIR its own ImageFolder, a fifth of each class held out) exactly
 * as `sdfed sim` trains client K
 * (native/fed_client.h), uploads the shared parameters after each round
 * and reports its accuracy. After a disconnect it reconnects with its token,
 * waiting as fed/backoff.h says (exponential backoff with jitter from
 * --jitter-seed, the server's retry_after as a floor); an update it already
 * computed for a round is sent again, never retrained, so a server crash
 * cannot change what it contributes; one the server could not store
 * (server_error) is resent after the same kind of wait. Loading the data and
 * training run on a thread of their own while the event loop keeps
 * answering the server (its keepalive hangs up a client silent for a
 * minute; a loaded machine can take longer than that); what the server says
 * meanwhile is handled, in order, once the work is done. Used by the tests,
 * the load tests and `make run`. A secure task's rounds (secure.h) send
 * the masked input instead of the update, never the prompt in the clear. */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json_writer.h"
#include "native/crypto.h"
#include "fed/backoff.h"
#include "fed/protocol.h"
#include "fed/round.h"
#include "native/args.h"
#include "native/clock.h"
#include "native/fed_client.h"
#include "native/fed_data.h"
#include "native/model.h"
#include "native/step_timer.h"
#include "native/task_file.h"
#include "native/ws_client.h"
#include "secure.h"

/* the longest message the server sends that this client reads */
#define MAX_MESSAGE_BYTES ((size_t)1 << 24)
/* how long a client that quits waits for its close frame to be answered */
#define LEAVE_MS 2000

typedef struct client client;
struct client {
    /* options */
    int index, json, quiet;
    const char *model_path, *cache, *data_dir, *host_task, *token_file, *join_key;
    const char *attack;   /* NULL, "flip" or "scale:F" */
    double attack_factor; /* what the attack multiplies the change by: -1 (flip) or F */
    sdfed_task host;      /* --host-task's file, read at the start (its model is the default --model) */
    double give_up_s;
    /* connection */
    native_ws_client ws;
    native_ws_conn conn;
    double disconnected_at;
    sdfed_backoff backoff;               /* when to try again */
    lws_sorted_usec_list_t resend_timer; /* an update the server could not store goes again */
    char token[SDFED_MSG_TEXT];
    /* federation */
    int ready, finished, failed;
    sdfed_task task;
    native_model model;
    sdfed_classes cls;
    native_fed_data data;
    sdfed_partition part;
    sdfed_client_split own; /* --data with a folder task: every image of its own */
    int *own_ids;
    native_fed_client fc;
    const sdfed_kernels *k;
    sdfed_arena arena;
    int64_t waiting_round; /* a round_start whose parameters are to come */
    int vanishing;         /* dropping out of the round: close the connection */
    int64_t cached_round;  /* the round the cached update answers */
    float *cached;
    int64_t rounds_done;
    char model_sha256[65];
    /* the work on its own thread ("work" below) and what it leaves */
    pthread_t worker;
    int working;          /* from work_start until work_finish */
    atomic_int work_done; /* set by the thread as it ends */
    void (*work_body)(client *c);
    void (*work_end)(client *c);
    int work_rc;
    sdfed_error work_err;
    native_ws_send_queue held; /* the server's messages that came while working */
    int64_t train_round;       /* a round's training: its round, */
    float *train_before;       /* its global parameters as they came (for --attack), */
    sdfed_losses train_sum;    /* and its results */
    int train_steps;
    double train_accuracy;
    /* the device (native/step_timer.h): --step-ms's step times, or measured
     * at join and again when a round's steps drift from what was expected
     * (fed/local_prompt.h's watch; remeasured: the last round's did, and
     * expected_before_s is what it expected), one a length of the task's
     * local_prompt (n_step_s 0: none); --step-sleep-ms from the slow_from-th
     * round trained on (0: from the start, the measurement at join too) */
    const char *step_ms;
    int step_sleep_ms, slow_from, rounds_trained, n_step_s, step_measured, remeasured;
    double step_s[SDFED_LOCAL_PROMPT_MAX_LENGTHS], round_step_s, expected_before_s;
    sdfed_step_watch watch;
    /* secure rounds (secure.h) */
    client_secure sec;
    sdfed_message secure_start; /* a secure round_start whose parameters are to come (its fields, no heap) */
    const char *exit_after;     /* a test's: the stage after whose acknowledgement it kills itself */
};

/* Ctrl-C ends the event loop; in the middle of a long computation (loading
 * the data, a round's training) it ends the process at once: the feature
 * cache resumes from a cut file and an unsent round is retrained the same. */
static volatile sig_atomic_t interrupted, busy;
static void on_signal(int sig) {
    if (busy) _exit(128 + sig);
    interrupted = 1;
}

static void say(const client *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void say(const client *c, const char *fmt, ...) {
    if (c->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    printf("client %d: ", c->index);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
}

static void fail(client *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void fail(client *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "sdfed-client: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    c->failed = 1;
    interrupted = 1;
}

static void send_message(client *c, const void *data, size_t len, int binary) {
    sdfed_error err = {0};
    if (native_ws_conn_send(&c->conn, data, len, binary, &err)) fail(c, "%s", err.message);
}

static void send_raw(void *ctx, const void *data, size_t len, int binary) { send_message(ctx, data, len, binary); }

static void send_writer(client *c, sdfed_json_writer *w, sdfed_buffer *b) {
    if (sdfed_jw_end(w, NULL) == SDFED_OK) send_message(c, b->data, b->size, 0);
    sdfed_buffer_free(b);
}

/* ------------------------------------------------------------ work */

/* On the worker thread: the work's body, then a word to the event loop. */
static void *work_thread(void *arg) {
    client *c = arg;
    busy = 1;
    c->work_body(c);
    busy = 0;
    atomic_store(&c->work_done, 1);
    lws_cancel_service(c->ws.context);
    return NULL;
}

/* body runs on a thread of its own (it may touch the model, the data, the
 * prompts and the arena; nothing else does until it ends), then end on the
 * event loop (work_finish). */
static void work_start(client *c, void (*body)(client *), void (*end)(client *)) {
    c->work_body = body;
    c->work_end = end;
    c->work_rc = 0;
    c->work_err = (sdfed_error){0};
    atomic_store(&c->work_done, 0);
    c->working = 1;
    if (pthread_create(&c->worker, NULL, work_thread, c)) {
        c->working = 0;
        fail(c, "cannot start a thread for the work");
    }
}

/* ------------------------------------------------------------ federation */

/* With its own images the client trains on all of them and tests on the
 * held-out ones. */
static int all_images(client *c, sdfed_error *err) {
    int n = c->data.n_train + c->data.n_test;
    if (!(c->own_ids = malloc(sizeof *c->own_ids * (size_t)(n + 1))))
        return sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    for (int i = 0; i < c->data.n_train; i++) c->own_ids[i] = i;
    for (int i = 0; i < c->data.n_test; i++) c->own_ids[c->data.n_train + i] = i;
    c->own = (sdfed_client_split){.domain = -1,
                                  .n_train = c->data.n_train,
                                  .n_test = c->data.n_test,
                                  .train = c->own_ids,
                                  .test = c->own_ids + c->data.n_train};
    return SDFED_OK;
}

/* --host-task on the host's machine: the host's task file (read at the
 * start) names the folders of the server's folder task (the welcome leaves
 * them out), and this client trains on its shard of them, as sdfed sim's
 * client does. The file must be the server's task. */
static int host_folders(client *c, sdfed_error *err) {
    if (!c->host_task)
        return sdfed_fail(err, SDFED_ERR_ARG,
                          "this federation's images are its host's: give --data DIR, your own ImageFolder (or, on "
                          "the host's machine, --host-task TASK.json)");
    sdfed_task *host = &c->host;
    int rc = SDFED_OK;
    /* the server's classes are the folders' when the file names none */
    int n = sdfed_task_class_count(&c->task);
    const char **names = malloc(sizeof *names * (size_t)(2 * n + 1));
    for (int i = 0; names && i < n; i++) {
        names[i] = sdfed_task_class_name(&c->task, i);
        names[n + i] = sdfed_task_class_text(&c->task, i);
    }
    if (!names)
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    else if (sdfed_task_class_count(host) == 0)
        rc = sdfed_task_set_classes(host, names, names + n, n, err);
    free(names);
    sdfed_buffer mine = {0}, theirs = {0};
    if (rc == SDFED_OK) rc = sdfed_task_write(host, c->task.model, &mine, err);
    if (rc == SDFED_OK) rc = sdfed_task_write(&c->task, c->task.model, &theirs, err);
    if (rc == SDFED_OK && (mine.size != theirs.size || memcmp(mine.data, theirs.data, mine.size) != 0))
        rc = sdfed_fail(err, SDFED_ERR_ARG, "--host-task %s is not the server's task", c->host_task);
    if (rc == SDFED_OK) {
        memcpy(c->task.data_train, host->data_train, sizeof host->data_train);
        memcpy(c->task.data_test, host->data_test, sizeof host->data_test);
        c->task.test_fraction = host->test_fraction;
    }
    sdfed_buffer_free(&mine);
    sdfed_buffer_free(&theirs);
    return rc;
}

/* --step-sleep-ms as it applies now (--slow-from-round) */
static int sleep_ms_now(const client *c) { return c->rounds_trained >= c->slow_from ? c->step_sleep_ms : 0; }

/* The device's step times timed here on this shard's images with these kernels. */
static int measure_steps(client *c, const sdfed_client_split *split, sdfed_error *err) {
    int test = split->n_train == 0;
    sdfed_feature_set own = {.features = test ? c->data.test_features : c->data.train_features,
                             .labels = test ? c->data.test_labels : c->data.train_labels,
                             .dim = c->data.dim,
                             .index = test ? split->test : split->train,
                             .n = test ? split->n_test : split->n_train};
    c->step_measured = 1;
    return native_step_timer_measure(&c->task, &c->model.clip, c->k, &c->cls, &own, sleep_ms_now(c), c->step_s,
                                     &c->arena, err);
}

/* With a local_prompt key: the device's step times, --step-ms's or measured. */
static int device_steps(client *c, const sdfed_client_split *split, sdfed_error *err) {
    int n = c->task.local_prompt.n_lengths;
    if (n == 0) return SDFED_OK;
    c->n_step_s = n;
    if (!c->step_ms) return measure_steps(c, split, err);
    const char *p = c->step_ms;
    for (int i = 0; i < n; i++) {
        char *end = NULL;
        double ms = strtod(p, &end);
        if (end == p || !(ms > 0) || (*end != (i + 1 < n ? ',' : '\0')))
            return sdfed_fail(err, SDFED_ERR_ARG,
                              "--step-ms must give %d step times in ms, one for each of the task's local prompt "
                              "lengths, separated by commas (got '%s')",
                              n, c->step_ms);
        c->step_s[i] = ms / 1000;
        p = end + 1;
    }
    return SDFED_OK;
}

/* On the worker: the data and this client's shard (the task and model
 * read). */
static void prepare_body(client *c) {
    sdfed_error *err = &c->work_err;
    /* a folder task with --data: the volunteer's own ImageFolder, its folders
     * matched to the task's classes, a fifth of each class held out */
    int folder = strcmp(c->task.dataset, "folder") == 0, own = folder && c->data_dir;
    native_fed_shards shard = {.task = &c->task, .client = c->index};
    native_fed_wanted shard_images = {.mark = native_fed_shards_mark, .ctx = &shard};
    c->work_rc = (folder && !own && host_folders(c, err)) ||
                 sdfed_task_classes(&c->task, &c->model.tokenizer, c->model.clip.cfg.context_length, &c->cls, err) ||
                 native_fed_data_load(&c->task, c->data_dir, c->cache, &c->model, c->model_sha256, c->k, &shard_images,
                                      &c->data, err) ||
                 (own ? all_images(c, err) : native_fed_partition(&c->task, &c->data, &c->part, err)) ||
                 device_steps(c, own ? &c->own : &c->part.clients[c->index], err) ||
                 native_fed_client_init(&c->fc, &c->task, c->index, own ? &c->own : &c->part.clients[c->index],
                                        c->n_step_s ? c->step_s : NULL, &c->model.clip, c->k, &c->cls, &c->arena, err);
}

static void prepare_end(client *c) {
    if (c->work_rc) {
        fail(c, "%s", c->work_err.message);
        return;
    }
    c->ready = 1;
    say(c, "%s, shard of %d training and %d test images, local prompt %d", sdfed_method_name(c->task.method),
        c->fc.split->n_train, c->fc.split->n_test, c->fc.cfg.local_len);
    for (int i = 0; i < c->n_step_s; i++)
        if (c->task.local_prompt.lengths[i] == c->fc.plan.length)
            say(c, "this device: %.1f ms a step (%s) -> a local prompt of %d tokens, %d of %d steps a round",
                1000 * c->step_s[i], c->step_measured ? "measured" : "--step-ms", c->fc.plan.length, c->fc.plan.steps,
                c->fc.plan.epoch_steps);
}

/* The first welcome: the task and the model (checked against the server's
 * hash) here, then the data and this client's shard as work. */
static int prepare(client *c, const sdfed_message *m) {
    sdfed_error err = {0};
    if (sdfed_task_parse(&c->task, m->task_json, strlen(m->task_json), &err)) {
        fail(c, "the server's task: %s", err.message);
        return -1;
    }
    if (c->index < 0 || c->index >= c->task.clients) {
        fail(c, "--client-index %d is not a shard of this task (0..%d)", c->index, c->task.clients - 1);
        return -1;
    }
    client_secure_init(&c->sec, &c->task, c->index, send_raw, c);
    if (native_model_open(&c->model, c->model_path, &err)) {
        fail(c, "model: %s", err.message);
        return -1;
    }
    if (native_sha256_hex(c->model.file.data, c->model.file.size, c->model_sha256, &err)) {
        fail(c, "model: %s", err.message);
        return -1;
    }
    if (strcmp(c->model_sha256, m->model_sha256) != 0) {
        fail(c, "the model %s (sha256 %.12s...) is not the server's (%.12s...)", c->model_path, c->model_sha256,
             m->model_sha256);
        return -1;
    }
    sdfed_clip_pack(&c->model.clip, c->k, SDFED_CLIP_TEXT | SDFED_CLIP_IMAGE);
    work_start(c, prepare_body, prepare_end);
    return 0;
}

/* A scaled or sign-flipped change, for robustness tests. */
static void apply_attack(const client *c, float *update, const float *before, size_t n) {
    if (!c->attack) return;
    for (size_t i = 0; i < n; i++) update[i] = (float)(before[i] + c->attack_factor * ((double)update[i] - before[i]));
}

static void send_update(client *c, int64_t round) {
    sdfed_method_params *p = &c->fc.params;
    size_t n = (size_t)p->global_rows * p->width;
    uint32_t shape[2] = {(uint32_t)p->global_rows, (uint32_t)p->width};
    uint32_t samples = (uint32_t)c->fc.plan.samples;
    if (c->json) {
        sdfed_buffer b = {0};
        sdfed_json_writer w;
        sdfed_jw_begin(&w, &b, "update");
        sdfed_jw_int(&w, "round", round);
        sdfed_jw_int(&w, "samples", samples);
        sdfed_jw_shape(&w, "shape", 2, shape);
        sdfed_jw_floats(&w, "data", c->cached, n);
        send_writer(c, &w, &b);
    } else {
        sdfed_buffer frame = {0};
        if (sdfed_frame_encode(SDFED_FRAME_UPDATE, (uint32_t)round, samples, 2, shape, c->cached, &frame, NULL) == 0)
            send_message(c, frame.data, frame.size, 1);
        sdfed_buffer_free(&frame);
    }
}

/* What a secure round's step said, logged; when it leaves the round (the
 * task's dropouts) the connection closes, as a plain round's dropout. */
static void secure_said(client *c) {
    if (c->sec.log[0]) say(c, "%s", c->sec.log);
    c->sec.log[0] = '\0';
    if (!c->sec.vanish) return;
    c->sec.vanish = 0;
    c->vanishing = 1;
}

/* The measured step time at the plan's length. */
static double planned_step_s(const client *c) {
    for (int i = 0; i < c->n_step_s; i++)
        if (c->task.local_prompt.lengths[i] == c->fc.plan.length) return c->step_s[i];
    return 0;
}

/* On the worker: a round's training (its steps timed: a measured device
 * whose steps drifted from what was expected is measured again,
 * fed/local_prompt.h), then the accuracy on the test split. */
static void train_body(client *c) {
    c->train_sum = (sdfed_losses){0};
    c->train_steps = 0;
    c->train_accuracy = 0;
    c->remeasured = 0;
    int64_t started = native_clock_monotonic_ns();
    c->work_rc = native_fed_client_train(&c->fc, &c->task, &c->model.clip, c->k, &c->cls, &c->data, &c->train_sum,
                                         &c->train_steps, &c->arena, &c->work_err);
    if (c->work_rc) return;
    native_step_timer_sleep_ms(c->train_steps * sleep_ms_now(c)); /* --step-sleep-ms: a slow device */
    c->round_step_s = c->train_steps ? native_clock_seconds(native_clock_monotonic_ns() - started) / c->train_steps : 0;
    sdfed_arena_reset(&c->arena);
    if (c->step_measured && sdfed_step_watch_round(&c->watch, c->round_step_s)) {
        c->remeasured = 1; /* the device as it was this round */
        c->expected_before_s = c->watch.expected_s;
        double before_s = planned_step_s(c);
        c->work_rc = measure_steps(c, c->fc.split, &c->work_err);
        sdfed_arena_reset(&c->arena);
        sdfed_step_watch_measured(&c->watch, before_s, c->work_rc ? 0 : planned_step_s(c));
    }
    c->rounds_trained++;
    if (c->work_rc) return;
    sdfed_error ignored = {0}; /* an accuracy it cannot compute is reported as 0 */
    native_fed_client_accuracy(&c->fc, &c->model.clip, c->k, &c->cls, &c->data, &c->train_accuracy, &c->arena,
                               &ignored);
}

/* The round trained: keep the update, upload it and report, if the
 * connection is still the round's (else the server sends the round again
 * on rejoining and the kept update goes then). */
static void train_end(client *c) {
    int64_t round = c->train_round;
    sdfed_method_params *p = &c->fc.params;
    size_t shared = (size_t)p->global_rows * p->width;
    float *before = c->train_before;
    c->train_before = NULL;
    if (c->work_rc) {
        fail(c, "round %lld: %s", (long long)round, c->work_err.message);
        free(before);
        return;
    }
    free(c->cached);
    if (!(c->cached = malloc(sizeof(float) * shared))) {
        fail(c, "out of memory");
        free(before);
        return;
    }
    memcpy(c->cached, p->global, sizeof(float) * shared);
    apply_attack(c, c->cached, before, shared);
    free(before);
    c->cached_round = round;
    int steps = c->train_steps;
    double loss = steps ? c->train_sum.total / steps : 0.0;
    if (c->task.secagg.on) { /* never in the clear: its masked input, when the server asks for it */
        client_secure_trained(&c->sec, round, c->cached, c->fc.split->n_train);
        secure_said(c);
    } else if (c->conn.state == WS_CONN_OPEN) {
        send_update(c, round);
        sdfed_buffer b = {0};
        sdfed_json_writer w;
        sdfed_jw_begin(&w, &b, "metrics");
        sdfed_jw_int(&w, "round", round);
        /* none (no test image, NaN) goes as the protocol's number, 0, beside its test_samples 0 */
        sdfed_jw_double(&w, "accuracy", isnan(c->train_accuracy) ? 0 : c->train_accuracy);
        sdfed_jw_double(&w, "loss", loss);
        sdfed_jw_int(&w, "test_samples", c->fc.split->n_test);
        if (c->n_step_s) { /* the device: its step time at each of the task's lengths, threads, kernels */
            float ms[SDFED_LOCAL_PROMPT_MAX_LENGTHS];
            for (int i = 0; i < c->n_step_s; i++) ms[i] = (float)(1000 * c->step_s[i]);
            sdfed_jw_floats(&w, "step_ms", ms, (size_t)c->n_step_s);
            sdfed_jw_int(&w, "threads", native_backend_threads());
            sdfed_jw_string(&w, "kernels", c->k->name);
        }
        send_writer(c, &w, &b);
    }
    char accuracy[40] = "no accuracy (no test image)";
    if (!isnan(c->train_accuracy)) snprintf(accuracy, sizeof accuracy, "accuracy %.2f%%", 100 * c->train_accuracy);
    say(c, "round %lld: %d steps, loss %.4f, %s%s", (long long)round, steps, loss, accuracy,
        c->attack ? " (attacking)" : "");
    if (c->remeasured)
        say(c, "round %lld: %.1f ms a step, not the %.1f ms expected: measured again, now %.1f ms a step",
            (long long)round, 1000 * c->round_step_s, 1000 * c->expected_before_s, 1000 * planned_step_s(c));
}

/* The round's parameters arrived: train (once per round) as work, then
 * upload and report. */
static void run_round(client *c, int64_t round, const float *global, size_t n) {
    sdfed_method_params *p = &c->fc.params;
    size_t shared = (size_t)p->global_rows * p->width;
    if (n != shared) {
        fail(c, "round %lld: the server's parameters hold %zu values, the method %zu", (long long)round, n, shared);
        return;
    }
    if (c->task.secagg.on) {
        if (c->secure_start.round != round) {
            say(c, "round %lld: a secure task's round without its secure settings", (long long)round);
            return;
        }
        int rc = client_secure_start(&c->sec, &c->secure_start, global, n);
        secure_said(c);
        if (rc) return;
        if (c->cached_round == round) return; /* trained before the server went away: the masked input is due */
    } else if (c->cached_round == round) {
        say(c, "round %lld: sending the update computed before the disconnect", (long long)round);
        send_update(c, round);
        return;
    }
    /* the task's model of volunteers leaving, drawn as the simulator draws it (a secure round's: secure.h) */
    if (!c->task.secagg.on && sdfed_round_drops_out(c->task.seed, round, c->index, c->task.dropout)) {
        say(c, "round %lld: dropping out (the task's dropout %g): disconnecting", (long long)round, c->task.dropout);
        c->vanishing = 1;
        return;
    }
    /* its device cannot take one step within the budget: it misses the round, as the simulator's does */
    if (c->fc.plan.steps == 0 && c->fc.split->n_train > 0) {
        say(c, "round %lld: not one step fits local_prompt.budget_s on this device: disconnecting", (long long)round);
        c->vanishing = 1;
        return;
    }
    if (!(c->train_before = malloc(sizeof(float) * shared))) {
        fail(c, "out of memory");
        return;
    }
    memcpy(c->train_before, global, sizeof(float) * shared);
    memcpy(p->global, global, sizeof(float) * shared);
    c->train_round = round;
    work_start(c, train_body, train_end);
}

/* The cached update goes again after the schedule's next delay, if its
 * round is still the one the client is in then. */
static void resend_now(lws_sorted_usec_list_t *sul) {
    client *c = lws_container_of(sul, client, resend_timer);
    if (c->conn.state != WS_CONN_OPEN || c->cached_round < 0 || c->rounds_done > c->cached_round) return;
    say(c, "round %lld: sending the update again", (long long)c->cached_round);
    send_update(c, c->cached_round);
}

static void resend_later(client *c) {
    int64_t delay_ms = sdfed_backoff_next_ms(&c->backoff);
    say(c, "the server could not store the update; sending it again in %lld ms", (long long)delay_ms);
    lws_sul_schedule(c->ws.context, 0, &c->resend_timer, resend_now, (lws_usec_t)delay_ms * 1000);
}

static void save_token(client *c) {
    if (!c->token_file) return;
    FILE *f = fopen(c->token_file, "w");
    if (f) {
        fprintf(f, "%s\n", c->token);
        fclose(f);
    }
}

static void handle_text(client *c, const char *text, size_t len) {
    sdfed_message m;
    sdfed_code code;
    sdfed_error err = {0};
    if (sdfed_message_parse(text, len, SDFED_SENT_BY_SERVER, MAX_MESSAGE_BYTES, &m, &code, &err)) {
        fail(c, "the server sent a bad message (%s): %s", sdfed_code_name(code), err.message);
        return;
    }
    switch (m.type) {
    case SDFED_MSG_WELCOME:
        sdfed_backoff_reset(&c->backoff); /* a session that succeeded */
        snprintf(c->token, sizeof c->token, "%s", m.token);
        save_token(c);
        if (!c->ready && !c->working && !interrupted) prepare(c, &m);
        break;
    case SDFED_MSG_ROUND_START:
        if (!c->ready) break;
        c->secure_start = m; /* its secure fields, for run_round */
        c->secure_start.values = NULL;
        c->secure_start.task_json = NULL;
        if (m.values)
            run_round(c, m.round, m.values, m.n_values);
        else
            c->waiting_round = m.round;
        break;
    case SDFED_MSG_ACK: say(c, "the update for round %lld was acknowledged", (long long)m.round); break;
    case SDFED_MSG_ROUND_END:
        c->rounds_done = m.round + 1;
        if (m.round == c->sec.round) client_secure_end(&c->sec);
        break;
    case SDFED_MSG_SECAGG_ACK:
        say(c, "round %lld: the server stored its %s message", (long long)m.round, m.stage);
        if (c->exit_after && strcmp(c->exit_after, m.stage) == 0) { /* a test's dropout: gone, as by kill -9 */
            say(c, "exiting after the %s stage (--exit-after-stage)", m.stage);
            raise(SIGKILL);
        }
        break;
    case SDFED_MSG_DONE:
        say(c, "the federation finished its %lld rounds", (long long)m.rounds);
        c->finished = 1;
        interrupted = 1;
        break;
    case SDFED_MSG_ERROR:
        say(c, "the server refused: %s (%s)", m.code, m.message);
        sdfed_backoff_server_asked(&c->backoff, m.retry_after_ms);
        /* refusals that no retry can mend end the client */
        sdfed_code refusal = sdfed_code_from_name(m.code);
        if (refusal == SDFED_CODE_BAD_JOIN_KEY || refusal == SDFED_CODE_BAD_TOKEN || refusal == SDFED_CODE_BAD_PROTOCOL)
            fail(c, "the server refused to let this client in: %s", m.message);
        if (refusal == SDFED_CODE_SERVER_ERROR && !c->task.secagg.on) resend_later(c);
        break;
    case SDFED_MSG_WAIT:
        if (!strcmp(m.reason, "paced")) /* pace steering: it missed its last rounds' deadlines */
            say(c, "round %lld: paced: sitting it out after missed deadlines, back in %lld ms at the soonest",
                (long long)m.round, (long long)m.retry_after_ms);
        sdfed_backoff_server_asked(&c->backoff, m.retry_after_ms);
        break;
    default: break; /* heartbeat */
    }
    sdfed_message_free(&m);
}

static void handle_binary(client *c, const unsigned char *data, size_t len) {
    sdfed_frame f;
    sdfed_code code;
    sdfed_error err = {0};
    if (sdfed_secure_frame_is(data, len)) {
        if (!c->ready) return;
        client_secure_request(&c->sec, data, len);
        secure_said(c);
        return;
    }
    if (sdfed_frame_decode(data, len, MAX_MESSAGE_BYTES, &f, &code, &err) || f.kind != SDFED_FRAME_GLOBAL) {
        fail(c, "the server sent a bad frame: %s", err.message);
        return;
    }
    if (!c->ready || (int64_t)f.round != c->waiting_round) return;
    float *global = malloc(sizeof *global * f.n_values);
    if (!global) {
        fail(c, "out of memory");
        return;
    }
    sdfed_frame_values(&f, global);
    c->waiting_round = -1;
    run_round(c, f.round, global, f.n_values);
    free(global);
}

/* ------------------------------------------------------------ connection */

static void reconnect_later(client *c) {
    if (interrupted) return;
    if (c->disconnected_at == 0) c->disconnected_at = native_clock_seconds(native_clock_monotonic_ns());
    if (native_clock_seconds(native_clock_monotonic_ns()) - c->disconnected_at > c->give_up_s) {
        fail(c, "no connection to %s:%d for %.0f s; giving up", c->ws.server.address, c->ws.server.port, c->give_up_s);
        return;
    }
    int attempt = c->backoff.attempt;
    int64_t delay_ms = sdfed_backoff_next_ms(&c->backoff);
    say(c, "connecting again in %lld ms (try %d)", (long long)delay_ms, attempt + 1);
    native_ws_conn_connect(&c->conn, delay_ms * 1000);
}

static void on_connected(native_ws_conn *conn) {
    client *c = conn->user;
    c->disconnected_at = 0;
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &b, "hello");
    sdfed_jw_string(&w, "protocol", SDFED_PROTOCOL);
    if (c->token[0]) sdfed_jw_string(&w, "token", c->token);
    if (c->join_key) sdfed_jw_string(&w, "join_key", c->join_key);
    sdfed_jw_string(&w, "kind", "headless");
    sdfed_jw_string(&w, "encoding", c->json ? "json" : "binary");
    if (c->index >= 0) sdfed_jw_int(&w, "shard", c->index);
    send_writer(c, &w, &b);
}

static void handle_message(client *c, const unsigned char *data, size_t len, int binary) {
    if (binary)
        handle_binary(c, data, len);
    else
        handle_text(c, (const char *)data, len);
}

/* The work is done: its end, then what the server said meanwhile, in
 * order, until a message starts new work. */
static void work_finish(client *c) {
    pthread_join(c->worker, NULL);
    c->working = 0;
    c->work_end(c);
    const native_ws_outgoing *m;
    while (!c->working && !interrupted && (m = native_ws_send_queue_peek(&c->held))) {
        handle_message(c, m->payload, m->len, m->binary);
        native_ws_send_queue_pop(&c->held);
        if (c->vanishing) { /* as in on_message; what is left was for that connection */
            c->vanishing = 0;
            native_ws_send_queue_clear(&c->held);
            native_ws_conn_close(&c->conn);
        }
    }
}

static int on_message(native_ws_conn *conn, native_ws_rx rx) {
    client *c = conn->user;
    if (rx == WS_RX_TOO_LARGE) {
        fail(c, "the server sent a message over %zu bytes", MAX_MESSAGE_BYTES);
        return -1;
    }
    if (rx == WS_RX_NO_MEMORY) {
        fail(c, "out of memory");
        return -1;
    }
    if (c->working) { /* handled when the work is done */
        sdfed_error err = {0};
        if (native_ws_send_queue_push(&c->held, conn->in.data, conn->in.len, conn->in.binary, &err))
            fail(c, "%s", err.message);
        return 0;
    }
    handle_message(c, conn->in.data, conn->in.len, conn->in.binary);
    if (c->vanishing) { /* closed now; it comes back like a volunteer who reloads the page */
        c->vanishing = 0;
        return -1;
    }
    return 0;
}

static void on_closed(native_ws_conn *conn, int was_open, const char *why) {
    client *c = conn->user;
    /* what was queued, either way, was for the old connection; the cached
     * update goes again if the round is resent */
    native_ws_send_queue_clear(&conn->out);
    native_ws_send_queue_clear(&c->held);
    if (!c->finished && !interrupted) {
        if (was_open) say(c, "disconnected");
        reconnect_later(c);
    }
}

static const char usage[] =
    "usage: sdfed-client --server ws://HOST:PORT [options]\n"
    "  --client-index K      train on shard K of the task's partition (0)\n"
    "  --model M             the model file (--host-task's model, else " NATIVE_DEFAULT_MODEL ")\n"
    "  --data DIR            a folder task: the volunteer's own ImageFolder (its folders named as the task's\n"
    "                        classes), trained on instead of shard K; else Fashion-MNIST's folder\n"
    "  --host-task TASK.json a folder task, on the host's machine: train on shard K of the folders the\n"
    "                        host's task file names (the server does not send them)\n"
    "  --cache DIR           image-feature cache ($SDFED_CACHE, else ~/.cache/sdfed)\n"
    "  --backend NAME        kernels (the fastest in this build)\n"
    "  --token-file F        keep the rejoin token in F, so a restart resumes as the same client\n"
    "  --join-key KEY        the federation's join key\n"
    "  --encoding E          updates as binary frames or json (binary)\n"
    "  --give-up S           stop after S seconds without the server (60)\n"
    "  --jitter-seed N       seed of the random waits before trying again (the client index)\n"
    "  --attack flip|scale:F send a sign-flipped or scaled update (robustness tests)\n"
    "  --step-ms T1,T2,...   a task with local_prompt: this device's ms a step at each of its lengths, instead\n"
    "                        of timing steps at join (reproducible runs)\n"
    "  --step-sleep-ms N     sleep N ms after every local step (a slow device)\n"
    "  --slow-from-round N   --step-sleep-ms only from the N-th round it trains on (0: from the start, its\n"
    "                        timing at join too): a device that slows down, measured again\n"
    "  --exit-after-stage S  a secure round's dropout, for tests: killed (SIGKILL) once the server\n"
    "                        acknowledged its advertise, shares, masked or unmask message\n"
    "  --quiet               log errors only\n";

int main(int argc, char **argv) {
    static client c;
    const char *server = NULL, *index = "0", *backend = NULL, *give_up = "60", *encoding = "binary", *jitter = NULL;
    const char *step_sleep = "0", *slow_from = "0";
    int quiet = 0, help = 0;
    native_cli_set_program("sdfed-client");
    const native_cli_option options[] = {{.name = "--server", .value = &server, .flag = NULL},
                                         {.name = "--client-index", .value = &index, .flag = NULL},
                                         {.name = "--model", .value = &c.model_path, .flag = NULL},
                                         {.name = "--cache", .value = &c.cache, .flag = NULL},
                                         {.name = "--data", .value = &c.data_dir, .flag = NULL},
                                         {.name = "--host-task", .value = &c.host_task, .flag = NULL},
                                         {.name = "--backend", .value = &backend, .flag = NULL},
                                         {.name = "--token-file", .value = &c.token_file, .flag = NULL},
                                         {.name = "--attack", .value = &c.attack, .flag = NULL},
                                         {.name = "--give-up", .value = &give_up, .flag = NULL},
                                         {.name = "--encoding", .value = &encoding, .flag = NULL},
                                         {.name = "--join-key", .value = &c.join_key, .flag = NULL},
                                         {.name = "--jitter-seed", .value = &jitter, .flag = NULL},
                                         {.name = "--exit-after-stage", .value = &c.exit_after, .flag = NULL},
                                         {.name = "--step-ms", .value = &c.step_ms, .flag = NULL},
                                         {.name = "--step-sleep-ms", .value = &step_sleep, .flag = NULL},
                                         {.name = "--slow-from-round", .value = &slow_from, .flag = NULL},
                                         {.name = "--quiet", .value = NULL, .flag = &quiet},
                                         {.name = "--help", .value = NULL, .flag = &help}};
    int status = native_cli_parse(argc - 1, argv + 1, options, (int)(sizeof options / sizeof options[0]), NULL, NULL);
    if (status) return status;
    if (help) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    if (!server) return native_cli_error(CLI_USAGE, "--server is required (see --help)");
    native_ws_url url;
    if (native_ws_url_parse(&url, server, NULL))
        return native_cli_error(CLI_USAGE, "--server must be ws://HOST:PORT or wss://...");
    long long index_value;
    if (native_cli_integer(index, "--client-index", 0, INT32_MAX, &index_value)) return CLI_USAGE;
    c.index = (int)index_value;
    char *end = NULL;
    unsigned long long seed = jitter ? strtoull(jitter, &end, 10) : (unsigned long long)c.index;
    if (jitter && (!*jitter || *end || *jitter == '-'))
        return native_cli_error(CLI_USAGE, "--jitter-seed must be a non-negative integer, not '%s'", jitter);
    sdfed_backoff_init(&c.backoff, seed);
    if (strcmp(encoding, "json") && strcmp(encoding, "binary"))
        return native_cli_error(CLI_USAGE, "--encoding must be binary or json");
    c.json = strcmp(encoding, "json") == 0;
    c.quiet = quiet;
    long long sleep_ms, slow_round;
    if (native_cli_number(give_up, "--give-up", 0, 1e9, &c.give_up_s) ||
        native_cli_integer(step_sleep, "--step-sleep-ms", 0, 3600000, &sleep_ms) ||
        native_cli_integer(slow_from, "--slow-from-round", 0, INT32_MAX, &slow_round))
        return CLI_USAGE;
    c.step_sleep_ms = (int)sleep_ms;
    c.slow_from = (int)slow_round;
    c.k = native_backend(backend);
    c.cached_round = c.waiting_round = c.secure_start.round = -1;
    c.sec.round = -1;
    if (!c.k) return native_cli_error(CLI_USAGE, "backend '%s' is not in this build", backend);
    if (c.attack && strcmp(c.attack, "flip") && strncmp(c.attack, "scale:", 6))
        return native_cli_error(CLI_USAGE, "--attack must be flip or scale:F");
    c.attack_factor = -1.0;
    if (c.attack && strcmp(c.attack, "flip") &&
        native_cli_number(c.attack + 6, "--attack scale:F's F", -1e6, 1e6, &c.attack_factor))
        return CLI_USAGE;
    if (c.exit_after && strcmp(c.exit_after, "advertise") && strcmp(c.exit_after, "shares") &&
        strcmp(c.exit_after, "masked") && strcmp(c.exit_after, "unmask"))
        return native_cli_error(CLI_USAGE, "--exit-after-stage must be advertise, shares, masked or unmask");
    /* the host's task file is read now: a bad one is said before connecting,
     * and its model (found as the file finds it) is the one to load */
    sdfed_error err = {0};
    if (c.host_task && native_task_read(c.host_task, &c.host, NULL, &err))
        return native_cli_error(CLI_FAILED, "--host-task: %s", err.message);
    if (!c.model_path) c.model_path = c.host_task ? c.host.model : NATIVE_DEFAULT_MODEL;
    if (c.token_file) {
        FILE *f = fopen(c.token_file, "r");
        if (f) {
            if (fgets(c.token, sizeof c.token, f)) c.token[strcspn(c.token, "\r\n")] = '\0';
            fclose(f);
        }
    }
    const native_ws_client_handlers on = {.connected = on_connected, .message = on_message, .closed = on_closed};
    if (native_ws_client_start(&c.ws, &url, 1, MAX_MESSAGE_BYTES, &on, &err)) {
        sdfed_task_free(&c.host);
        return native_cli_error(CLI_FAILED, "%s", err.message);
    }
    sdfed_arena_init(&c.arena);
    native_ws_conn_init(&c.conn, &c.ws, &c);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    native_ws_conn_connect(&c.conn, 0);
    while (!interrupted && native_ws_client_service(&c.ws) >= 0)
        if (c.working && atomic_load(&c.work_done)) work_finish(&c);
    if (c.working) pthread_join(c.worker, NULL);
    native_ws_conn_leave(&c.conn, LEAVE_MS); /* done, failed or stopped: it quits, and says so */
    native_ws_client_stop(&c.ws);
    native_ws_send_queue_clear(&c.held);
    free(c.train_before);
    native_ws_conn_free(&c.conn);
    free(c.cached);
    client_secure_end(&c.sec);
    if (c.ready) {
        native_fed_client_free(&c.fc);
        sdfed_partition_free(&c.part);
        free(c.own_ids);
        native_fed_data_free(&c.data);
        sdfed_classes_free(&c.cls);
        native_model_close(&c.model);
    }
    sdfed_task_free(&c.task);
    sdfed_task_free(&c.host);
    sdfed_arena_free(&c.arena);
    return c.failed ? CLI_FAILED : CLI_OK;
}
