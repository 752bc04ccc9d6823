/* sdfed-aggregator: the federation's server.
 *   sdfed-aggregator --task TASK.json [--port 8080] [--state DIR | --db URI] [options]
 * One port serves the volunteer page, the browser build, the model (HTTP)
 * and the sdfed.v1 WebSocket protocol. The state folder, or the PostgreSQL
 * database, keeps everything a restart needs (store.h); either is refused
 * for another task. With --db the process is one node of a cluster: any
 * number of them, started with the same task, database and round options,
 * serve one federation (cluster.h, federation.h, docs/cluster.md).
 * --verify recomputes every stored round's parameters from its stored
 * updates and exits (verify.h).
 * With --port 0 the kernel chooses a free port; the "listening" log line
 * and the --port-file name it once the server is ready for connections. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "native/args.h"
#include "native/fed_data.h"
#include "native/model.h"
#include "native/clock.h"
#include "native/log.h"
#include "native/paths.h"
#include "native/task_file.h"
#include "cluster.h"
#include "description.h"
#include "handlers.h"
#include "loop.h"
#include "verify.h"

static loop *running;

static void on_signal(int sig) {
    (void)sig;
    if (running) loop_stop(running);
}

static const char usage[] =
    "usage: sdfed-aggregator --task TASK.json [options]\n"
    "  --port P              listening port (8080); 0: a free one the kernel chooses\n"
    "  --port-file F         once listening, write the port to F (removed on a clean stop)\n"
    "  --host ADDRESS        bind address: IPv4, IPv6, an interface or a name that resolves (all)\n"
    "  --state DIR           durable state in a folder, SQLite (state); private to its owner (0700, files\n"
    "                        0600), tokens kept as hashes (docs/state.md)\n"
    "  --db URI              durable state in PostgreSQL instead: postgresql://USER:PASSWORD@HOST/DATABASE\n"
    "                        (libpq's URI; ?host=/socket/dir for a Unix socket); every process with the same\n"
    "                        --db is a node of one federation (synchronous rounds; docs/cluster.md)\n"
    "  --node-lease S        cluster: seconds a node's and the coordinator's lease last without renewal (10)\n"
    "  --poll S              cluster: seconds between reads of the round without a notification (1)\n"
    "  --verify              recompute every stored round's parameters from its stored updates, then exit\n"
    "  --web DIR             the volunteer page (web/)\n"
    "  --wasm DIR            the browser build (build/targets/emscripten/wasm-client)\n"
    "  --mode sync|async     rounds (sync)\n"
    "  --min-clients N       sync: clients to start a round and reports a round needs, else it is\n"
    "                        abandoned (the task's min_clients, else clients_per_round, else clients)\n"
    "  --over-select F       sync: choose F x clients_per_round clients, close when clients_per_round\n"
    "                        reported (1: no over-selection)\n"
    "  --deadline S          sync: seconds a round waits for its clients (300)\n"
    "  --round-pause S       sync: seconds between one round's end and the next's start (0)\n"
    "  --rejoin-grace S      sync: seconds a chosen client whose connection was lost (no close) keeps its place\n"
    "                        in the round, to come back with its token (30; 0: it is out at once)\n"
    "  --buffer K            async: updates per new version (10)\n"
    "  --max-staleness S     async: oldest base version accepted (10)\n"
    "  --aggregate RULE      mean (the paper), median or trimmed_mean (mean)\n"
    "  --trim F              trimmed_mean: fraction cut at each end (0.1)\n"
    "  --clip-norm C         clip each update's change to norm C (off)\n"
    "  --noise-multiplier Z  central DP: Gaussian noise Z * C / n (off; needs --clip-norm)\n"
    "  --max-update-norm N   refuse updates that change the parameters by more than N (off)\n"
    "  --max-samples N       refuse larger sample counts (1000000)\n"
    "  --commit-batch N      group commit: at most N updates and metrics, or N new clients, stored in one\n"
    "                        transaction (512; 1: each alone)\n"
    "  --commit-wait S       group commit: the longest any of them waits for its transaction (0.005)\n"
    "  --ping-after S        WebSocket keepalive: a PING to a connection silent for S seconds (30)\n"
    "  --hangup-after S      WebSocket keepalive: hang up a connection silent for S seconds (60)\n"
    "  --join-key KEY        clients must present KEY\n"
    "  --cert FILE --key FILE  serve TLS (wss://, https://)\n"
    "  --rate-limit N        at most N messages on a connection in each --rate-window (50)\n"
    "  --rate-window S       the rate limit's window, seconds (1)\n"
    "  --max-message-bytes N (4194304)   --max-refusals N (20)\n";

typedef struct args {
    const char *task, *port, *port_file, *host, *state, *db, *web, *wasm, *mode, *min_clients, *over_select, *deadline,
        *pause, *grace, *buffer, *staleness;
    const char *rule, *trim, *clip, *noise, *max_norm, *max_samples, *join_key, *cert, *key, *max_bytes, *rate,
        *rate_window, *refusals, *lease, *poll, *commit_batch, *commit_wait, *ping_after, *hangup_after;
    int help, verify;
} args;

static int number(const char *text, const char *name, double lo, double hi, double *out) {
    char *end;
    double v = strtod(text, &end);
    if (!*text || *end || !(v >= lo && v <= hi))
        return cli_error(CLI_USAGE, "%s must be a number in [%g, %g], not '%s'", name, lo, hi, text);
    *out = v;
    return CLI_OK;
}

/* The task's images as the demo shards and `sdfed sim` count them, and
 * the files that are not used, each named (at most 20, then a count). */
static void log_dataset(const fed_data *d) {
    native_logf("dataset", "\"classes\": %d, \"train\": %d, \"test\": %d, \"skipped\": %d", d->n_classes, d->n_train,
                d->n_test, d->skipped ? d->skipped->n : 0);
    for (int i = 0; d->skipped && i < d->skipped->n && i < 20; i++) {
        char message[2048];
        snprintf(message, sizeof message, "%s: %s", d->skipped->items[i].path, d->skipped->items[i].reason);
        native_log_message("dataset_skipped", "", message);
    }
    if (d->skipped && d->skipped->n > 20) native_logf("dataset_skipped", "\"more\": %d", d->skipped->n - 20);
}

int main(int argc, char **argv) {
    cli_set_program("sdfed-aggregator");
    args a = {0};
    a.port = "8080", a.mode = "sync", a.deadline = "300", a.pause = "0", a.buffer = "10", a.staleness = "10";
    a.grace = "30";
    a.rule = "mean", a.trim = "0.1", a.clip = "0", a.noise = "0", a.max_norm = "0", a.max_samples = "1000000";
    a.max_bytes = "4194304", a.rate = "50", a.rate_window = "1", a.refusals = "20", a.lease = "10", a.poll = "1";
    a.commit_batch = "512", a.commit_wait = "0.005", a.ping_after = "30", a.hangup_after = "60";
    const cli_option options[] = {{"--task", &a.task, NULL},
                                  {"--port", &a.port, NULL},
                                  {"--port-file", &a.port_file, NULL},
                                  {"--host", &a.host, NULL},
                                  {"--state", &a.state, NULL},
                                  {"--db", &a.db, NULL},
                                  {"--web", &a.web, NULL},
                                  {"--wasm", &a.wasm, NULL},
                                  {"--mode", &a.mode, NULL},
                                  {"--min-clients", &a.min_clients, NULL},
                                  {"--over-select", &a.over_select, NULL},
                                  {"--deadline", &a.deadline, NULL},
                                  {"--round-pause", &a.pause, NULL},
                                  {"--rejoin-grace", &a.grace, NULL},
                                  {"--buffer", &a.buffer, NULL},
                                  {"--max-staleness", &a.staleness, NULL},
                                  {"--aggregate", &a.rule, NULL},
                                  {"--trim", &a.trim, NULL},
                                  {"--clip-norm", &a.clip, NULL},
                                  {"--noise-multiplier", &a.noise, NULL},
                                  {"--max-update-norm", &a.max_norm, NULL},
                                  {"--max-samples", &a.max_samples, NULL},
                                  {"--join-key", &a.join_key, NULL},
                                  {"--cert", &a.cert, NULL},
                                  {"--key", &a.key, NULL},
                                  {"--max-message-bytes", &a.max_bytes, NULL},
                                  {"--rate-limit", &a.rate, NULL},
                                  {"--rate-window", &a.rate_window, NULL},
                                  {"--max-refusals", &a.refusals, NULL},
                                  {"--node-lease", &a.lease, NULL},
                                  {"--poll", &a.poll, NULL},
                                  {"--commit-batch", &a.commit_batch, NULL},
                                  {"--commit-wait", &a.commit_wait, NULL},
                                  {"--ping-after", &a.ping_after, NULL},
                                  {"--hangup-after", &a.hangup_after, NULL},
                                  {"--verify", NULL, &a.verify},
                                  {"--help", NULL, &a.help}};
    int status = cli_parse(argc - 1, argv + 1, options, (int)(sizeof options / sizeof options[0]), NULL, NULL);
    if (status) return status;
    if (a.help) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    if (!a.task) return cli_error(CLI_USAGE, "--task is required (see --help)");
    double port, deadline, pause, grace, buffer, staleness, trim, clip, noise, max_norm, max_samples, max_bytes, rate,
        rate_window, refusals, lease, poll, commit_batch, commit_wait, ping_after, hangup_after;
    if (number(a.port, "--port", 0, 65535, &port) || number(a.deadline, "--deadline", 0.01, 86400 * 7, &deadline) ||
        number(a.pause, "--round-pause", 0, 86400, &pause) || number(a.grace, "--rejoin-grace", 0, 86400, &grace) || number(a.buffer, "--buffer", 1, 1e6, &buffer) ||
        number(a.staleness, "--max-staleness", 0, 1e6, &staleness) || number(a.trim, "--trim", 0, 0.49, &trim) ||
        number(a.clip, "--clip-norm", 0, 1e9, &clip) || number(a.noise, "--noise-multiplier", 0, 1e6, &noise) ||
        number(a.max_norm, "--max-update-norm", 0, 1e12, &max_norm) ||
        number(a.max_samples, "--max-samples", 1, 1e12, &max_samples) ||
        number(a.max_bytes, "--max-message-bytes", 1024, 1 << 30, &max_bytes) ||
        number(a.rate, "--rate-limit", 1, 1e6, &rate) || number(a.rate_window, "--rate-window", 0.001, 86400, &rate_window) ||
        number(a.refusals, "--max-refusals", 1, 1e6, &refusals) ||
        number(a.lease, "--node-lease", 0.5, 3600, &lease) || number(a.poll, "--poll", 0.05, 3600, &poll) ||
        number(a.commit_batch, "--commit-batch", 1, 1e6, &commit_batch) ||
        number(a.commit_wait, "--commit-wait", 0, 10, &commit_wait) ||
        number(a.ping_after, "--ping-after", 0.1, 86400, &ping_after) ||
        number(a.hangup_after, "--hangup-after", 0.2, 86400, &hangup_after))
        return CLI_USAGE;
    if (hangup_after <= ping_after)
        return cli_error(CLI_USAGE, "--hangup-after (%g s) must be longer than --ping-after (%g s)",
                         hangup_after, ping_after);
    int rule = sdfed_aggregate_rule_from_name(a.rule);
    if (rule < 0) return cli_error(CLI_USAGE, "--aggregate must be mean, median or trimmed_mean");
    if (strcmp(a.mode, "sync") && strcmp(a.mode, "async"))
        return cli_error(CLI_USAGE, "--mode must be sync or async");
    if (noise > 0 && clip == 0) return cli_error(CLI_USAGE, "--noise-multiplier needs --clip-norm");
    if (!a.cert != !a.key) return cli_error(CLI_USAGE, "TLS needs both --cert and --key");
    if (a.db && a.state) return cli_error(CLI_USAGE, "--state and --db both name the state; give one");
    if (a.state && store_is_database(a.state))
        return cli_error(CLI_USAGE, "--state takes a folder; a PostgreSQL URI goes to --db");
    if (a.db && !store_is_database(a.db))
        return cli_error(CLI_USAGE, "--db must be a postgresql:// or postgres:// URI");
    if (a.db && !strcmp(a.mode, "async"))
        return cli_error(CLI_USAGE,
                         "--db runs a cluster's synchronous rounds; asynchronous rounds run in one process "
                         "with --state");
    const char *where = a.db ? a.db : a.state ? a.state : "state";
    sdfed_error host_err = {0};
    char bind_address[256];
    if (loop_resolve_host(a.host, bind_address, sizeof bind_address, &host_err))
        return cli_error(CLI_USAGE, "%s", host_err.message);

    /* the task and its model; on any failure below, `done` frees what was made */
    sdfed_error err = {0};
    int rc = CLI_FAILED;
    native_model model = {0};
    sdfed_classes cls = {0};
    store *st = NULL;
    cluster *cl = NULL;
    loop *server = NULL;
    handlers *h = NULL;
    http_site site = {0};
    char *description = NULL;
    federation *fed = NULL;
    demo *shards = NULL;
    fed_data images = {0};
    char resolved[4096];
    sdfed_task task;
    char task_sha[65];
    if (native_task_read(a.task, &task, task_sha, &err)) return cli_error(CLI_FAILED, "%s", err.message);
    double min_clients = task.min_clients > 0         ? task.min_clients
                         : task.clients_per_round > 0 ? task.clients_per_round
                                                      : task.clients,
           over_select = 1;
    if ((a.min_clients && number(a.min_clients, "--min-clients", 1, 1e6, &min_clients)) ||
        (a.over_select && number(a.over_select, "--over-select", 1, 100, &over_select))) {
        sdfed_task_free(&task);
        return CLI_USAGE;
    }
    if (native_model_open(&model, task.model, &err)) {
        cli_error(CLI_FAILED, "model: %s", err.message);
        goto done;
    }
    char model_sha[65], model_path[4096];
    sdfed_sha256_hex(model.file.data, model.file.size, model_sha);
    snprintf(model_path, sizeof model_path, "%s", native_resolve_path(task.model, resolved, sizeof resolved));
    /* the task's images: a folder dataset's classes are its folders' unless
     * the task names them, and the demo shards are made of them (a missing
     * Fashion-MNIST only turns the shards off) */
    int folder = strcmp(task.dataset, "folder") == 0;
    sdfed_error images_err = {0};
    int images_rc = folder || task.demo ? fed_data_load_images(&task, NULL, NULL, &images, &images_err)
                                        : SDFED_ERR_NOT_FOUND;
    if (folder && images_rc == SDFED_OK) images_rc = fed_data_task_classes(&task, &images, &images_err);
    if (folder && images_rc) {
        cli_error(CLI_FAILED, "classes: %s", images_err.message);
        goto done;
    }
    if (images_rc == SDFED_OK) log_dataset(&images);
    if (sdfed_task_classes(&task, &model.tokenizer, model.clip.cfg.context_length, &cls, &err)) {
        cli_error(CLI_FAILED, "classes: %s", err.message);
        goto done;
    }

    /* the state folder or database: this task's, or new */
    char *stored_task = NULL;
    int stored = store_open(&st, where, &err);
    if (stored == SDFED_ERR_ARG) { /* a URI libpq cannot read */
        rc = cli_error(CLI_USAGE, "--db: %s", err.message);
        goto done;
    }
    if (stored == SDFED_OK) stored = store_get_meta(st, "task_sha256", &stored_task, &err);
    if (stored == SDFED_OK && stored_task && strcmp(stored_task, task_sha) != 0)
        stored =
            sdfed_fail(&err, SDFED_ERR_ARG, "the state in %s belongs to another task (sha256 %.12s...); use another %s",
                       store_name(st), stored_task, a.db ? "--db" : "--state");
    else if (stored == SDFED_OK && !stored_task)
        stored = store_set_meta(st, "task_sha256", task_sha, &err);
    free(stored_task);
    if (stored) {
        cli_error(CLI_FAILED, "%s", err.message);
        goto done;
    }

    sdfed_aggregate_config aggregate = {rule, trim, clip, noise};
    if (a.verify) {
        int mismatches = 0;
        if (verify_rounds(st, &task, &model.clip, sdfed_kernels_default(), &cls, &aggregate, stdout, &mismatches,
                          &err)) {
            cli_error(CLI_FAILED, "--verify: %s", err.message);
            goto done;
        }
        printf("verify: %s\n", mismatches ? "MISMATCH" : "every stored round recomputed");
        rc = mismatches ? CLI_FAILED : CLI_OK;
        goto done;
    }
    if (a.db) {
        /* every node decides alike: the first one's round options are the cluster's */
        char decisions[256], *stored_decisions = NULL;
        snprintf(decisions, sizeof decisions, "aggregate %s trim %g clip %g noise %g min_clients %g over_select %g",
                 a.rule, trim, clip, noise, min_clients, over_select);
        stored = store_get_meta(st, "decisions", &stored_decisions, &err);
        if (stored == SDFED_OK && stored_decisions && strcmp(stored_decisions, decisions) != 0)
            stored = sdfed_fail(&err, SDFED_ERR_ARG,
                                "the cluster in %s decides rounds with '%s'; this node was started with '%s'",
                                store_name(st), stored_decisions, decisions);
        else if (stored == SDFED_OK && !stored_decisions)
            stored = store_set_meta(st, "decisions", decisions, &err);
        free(stored_decisions);
        if (stored == SDFED_OK) stored = cluster_open(&cl, st, lease, &err);
        if (stored) {
            cli_error(CLI_FAILED, "%s", err.message);
            goto done;
        }
    }

    char web[4096], wasm[4096], model_url[128];
    snprintf(web, sizeof web, "%s", native_resolve_path(a.web ? a.web : "web", resolved, sizeof resolved));
    snprintf(wasm, sizeof wasm, "%s",
             native_resolve_path(a.wasm ? a.wasm : "build/targets/emscripten/wasm-client", resolved, sizeof resolved));
    snprintf(model_url, sizeof model_url, "/model/%s.gguf", model_sha);
    /* demo shards for volunteers without images: a missing dataset only
     * turns them off */
    if (task.demo && images_rc == SDFED_OK && demo_open(&shards, &task, &images, &err))
        native_log_message("warning", "", err.message);
    else if (task.demo && images_rc != SDFED_OK)
        native_log_message("warning", "", images_err.message);
    federation_options fo = {.async = !strcmp(a.mode, "async"),
                             .min_clients = (int)min_clients,
                             .over_select = over_select,
                             .deadline_ms = (int64_t)(deadline * 1000),
                             .round_pause_ms = (int64_t)(pause * 1000),
                             .rejoin_grace_ms = (int64_t)(grace * 1000),
                             .buffer = (int)buffer,
                             .max_staleness = (int)staleness,
                             .aggregate = aggregate,
                             .max_update_norm = max_norm,
                             .max_samples = (int64_t)max_samples,
                             .cluster = cl,
                             .poll_ms = (int64_t)(poll * 1000),
                             .batch_rows = (int)commit_batch,
                             .batch_wait_ms = (int64_t)(commit_wait * 1000)};
    description_model dm = {model_url, model_sha, model.file.size};
    if (federation_open(&fed, &task, &model.clip, sdfed_kernels_default(), &cls, st, &fo,
                        native_clock_ms(native_clock_monotonic_ns()), &err) ||
        description_write(&task, &dm, federation_get_global(fed).shape, demo_shards(shards), &description, &err)) {
        cli_error(CLI_FAILED, "%s", err.message);
        goto done;
    }
    handlers_options ho = {.join_key = a.join_key,
                           .description = description,
                           .max_message_bytes = (size_t)max_bytes,
                           .rate_limit = (int)rate,
                           .rate_window_ms = (int64_t)(rate_window * 1000),
                           .max_refusals = (int)refusals,
                           .batch_rows = (int)commit_batch,
                           .batch_wait_ms = (int64_t)(commit_wait * 1000)};
    site = (http_site){.web_dir = web,
                       .wasm_dir = wasm,
                       .model_path = model_path,
                       .model_sha256 = model_sha,
                       .description = description,
                       .fed = fed,
                       .demo = shards,
                       .status = {.fed = fed,
                                  .st = st,
                                  .cl = cl,
                                  .model_sha256 = model_sha,
                                  .name = sdfed_task_name(&task),
                                  .description = sdfed_task_description(&task)}};
    loop_options lo = {.host = a.host ? bind_address : NULL,
                       .port = (int)port,
                       .cert = a.cert,
                       .key = a.key,
                       .max_message_bytes = (size_t)max_bytes,
                       .header_timeout_s = 5,
                       .keepalive = {(int64_t)(ping_after * 1000), (int64_t)(hangup_after * 1000)}};
    if (handlers_create(&h, &ho, fed, st, &err) || loop_create(&server, &lo, &site, h, &err)) {
        cli_error(CLI_FAILED, "%s", err.message);
        goto done;
    }

    running = server;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* a file size limit fails the store's writes (a store fault), not the server */
    int bound = loop_port(server);
    char number[16];
    snprintf(number, sizeof number, "%d\n", bound);
    if (a.port_file && native_write_file(a.port_file, number, &err)) {
        cli_error(CLI_FAILED, "--port-file %s", err.message);
        goto done;
    }
    native_logf("listening",
                "\"address\": \"%s\", \"port\": %d, \"url\": \"%s://%s:%d/\", \"task\": \"%s\", \"state\": \"%s\", "
                "\"model_sha256\": \"%s\"",
                bind_address, bound, a.cert ? "https" : "http", a.host ? a.host : "localhost", bound, a.task,
                store_name(st), model_sha);
    rc = loop_run(server) ? CLI_FAILED : CLI_OK;
    native_log("stopping", "");
    if (a.port_file) remove(a.port_file);
done:
    loop_destroy(server);
    handlers_destroy(h);
    status_board_free(&site.status);
    free(description);
    federation_close(fed);
    demo_close(shards);
    fed_data_free(&images);
    cluster_close(cl);
    store_close(st);
    sdfed_classes_free(&cls);
    native_model_close(&model);
    sdfed_task_free(&task);
    return rc;
}
