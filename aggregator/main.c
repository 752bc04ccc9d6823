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
#include <sys/resource.h>

#include "native/crypto.h"
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
#include "join_key.h"
#include "loop.h"
#include "peers.h"
#include "verify.h"

static agg_loop *running;

static void on_signal(int sig) {
    (void)sig;
    if (running) agg_loop_stop(running);
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
    "  --deadline S          sync: seconds a round waits for its clients (300; with the task's\n"
    "                        local_prompt.budget_s: 2 x budget_s + 30)\n"
    "  --round-pause S       sync: seconds between one round's end and the next's start (0)\n"
    "  --rejoin-grace S      sync: seconds a chosen client whose connection was lost (no close) keeps its place\n"
    "                        in the round, to come back with its token (30; 0: it is out at once)\n"
    "  --graph-from-seed     secure rounds: each round's share graph drawn from the task's seed, as sdfed sim\n"
    "                        draws it, not from the OS (reproducible runs; the graph is the server's choice)\n"
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
    "  --join-key KEY        clients must present KEY (1 to 127 of A-Z a-z 0-9 - . _ ~): in hello, and on every\n"
    "                        path but the page's own files (Authorization: Bearer KEY, or ?key=KEY)\n"
    "  --metrics-token TOKEN /metrics needs TOKEN (Authorization: Bearer TOKEN) instead of the join key\n"
    "  --cert FILE --key FILE  serve TLS (wss://, https://)\n"
    "  --rate-limit N        at most N messages on a connection in each --rate-window (50)\n"
    "  --rate-window S       the rate limit's window, seconds (1)\n"
    "  --max-message-bytes N (4194304)   --max-refusals N (20)\n"
    "  --max-header-bytes N  a request's line and headers; longer ones are answered 431 (8192)\n"
    "  --allow-origin ORIGIN pages of ORIGIN (https://HOST[:PORT]; '*' for any) may open the WebSocket besides\n"
    "                        the server's own (repeatable; a client without Origin, not a page, always may)\n"
    "  --max-connections N   connections held at once (10000; fewer when the descriptor limit, raised as far as\n"
    "                        it goes, has no room for them, the reserve and the file sends: ulimit -n)\n"
    "  --status-reserve N    connections past --max-connections for /status, /status.html and /metrics only;\n"
    "                        anything else on them is answered 503 (32)\n"
    "  --max-connections-per-address N  connections one address holds (an IPv6 address: its /64); more are\n"
    "                        closed at once (128)\n"
    "  --max-file-sends N    files (the page's, the model) being sent at once; more are answered 503 (256)\n"
    "  --max-addresses N     addresses remembered for the limits, the least recently heard of forgotten first\n"
    "                        (65536; at least --max-connections + --status-reserve)\n"
    "  --key-failures N      wrong join keys from one address before it is locked out (10)\n"
    "  --key-lockout S       the first lock-out, seconds; each next one twice as long, a day at most (60)\n"
    "  --registrations-per-minute N  new clients one address registers in a minute (20)\n"
    "  --demo-leases-per-address N  demo shards one address holds at a time (4)\n"
    "  --proxy-protocol-from ADDRESS  a load balancer (HAProxy with send-proxy-v2) whose connections start with a\n"
    "                        PROXY protocol v2 header naming their client, so that the limits above count each\n"
    "                        client's address, not the balancer's (repeatable; exact IPv4 or IPv6 addresses)\n"
    "  --hello-timeout S     a WebSocket that says no hello for S seconds is closed (10)\n";

typedef struct args {
    const char *task, *port, *port_file, *host, *state, *db, *web, *wasm, *mode, *min_clients, *over_select, *deadline,
        *pause, *grace, *buffer, *staleness;
    const char *rule, *trim, *clip, *noise, *max_norm, *max_samples, *join_key, *cert, *key, *max_bytes, *rate,
        *rate_window, *refusals, *lease, *poll, *commit_batch, *commit_wait, *ping_after, *hangup_after, *max_header;
    const char *max_connections, *status_reserve, *per_address, *max_addresses, *key_failures, *key_lockout,
        *registrations, *metrics_token, *demo_leases, *hello_timeout, *file_sends;
    int help, verify, graph_from_seed;
} args;

/* Descriptors: one for each connection (those of the reserve too) and for
 * each file being sent, and SPARE_DESCRIPTORS more for the process (the
 * store, the model, the log, lws's own). The soft limit is raised as far
 * as the hard one lets it; when that is not enough, fewer connections,
 * said in the log. lws sizes its tables by the limit: call before the loop
 * is made. */
#define SPARE_DESCRIPTORS 64

static int fit_descriptors(double *max_connections, double others) {
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return native_cli_error(CLI_FAILED, "getrlimit(RLIMIT_NOFILE) failed");
    rlim_t want = (rlim_t)(*max_connections + others) + SPARE_DESCRIPTORS;
    if (lim.rlim_cur < want) {
        struct rlimit raised = {.rlim_cur = want < lim.rlim_max ? want : lim.rlim_max, .rlim_max = lim.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim.rlim_cur = raised.rlim_cur;
    }
    if (lim.rlim_cur >= want) return CLI_OK;
    double fit = (double)lim.rlim_cur - SPARE_DESCRIPTORS - others;
    if (fit < 1)
        return native_cli_error(
            CLI_USAGE,
            "the descriptor limit (%llu, ulimit -n) has no room for connections besides --status-reserve "
            "and --max-file-sends (%g): raise it or lower them",
            (unsigned long long)lim.rlim_cur, others);
    native_log_line line;
    native_log_open(&line, "connections_limited");
    sdfed_jw_fixed(&line.w, "max_connections", fit, 0);
    sdfed_jw_fixed(&line.w, "asked", *max_connections, 0);
    sdfed_jw_int(&line.w, "descriptors", (int64_t)lim.rlim_cur);
    sdfed_jw_string(&line.w, "message", "--max-connections lowered to what the descriptor limit (ulimit -n) holds");
    native_log_close(&line);
    *max_connections = fit;
    return CLI_OK;
}

/* The task's images as the demo shards and `sdfed sim` count them, and
 * the files that are not used, each named (at most 20, then a count). */
static void log_dataset(const native_fed_data *d) {
    native_log_line line;
    native_log_open(&line, "dataset");
    sdfed_jw_int(&line.w, "classes", d->n_classes);
    sdfed_jw_int(&line.w, "train", d->n_train);
    sdfed_jw_int(&line.w, "test", d->n_test);
    sdfed_jw_int(&line.w, "skipped", d->skipped ? d->skipped->n : 0);
    native_log_close(&line);
    for (int i = 0; d->skipped && i < d->skipped->n && i < 20; i++) {
        native_log_open(&line, "dataset_skipped");
        sdfed_jw_stringf(&line.w, "message", "%s: %s", d->skipped->items[i].path, d->skipped->items[i].reason);
        native_log_close(&line);
    }
    if (d->skipped && d->skipped->n > 20) {
        native_log_open(&line, "dataset_skipped");
        sdfed_jw_int(&line.w, "more", d->skipped->n - 20);
        native_log_close(&line);
    }
}

/* A warning that does not stop the server (the demo shards turned off). */
static void log_warning(const char *message) {
    native_log_line line;
    native_log_open(&line, "warning");
    sdfed_jw_string(&line.w, "message", message);
    native_log_close(&line);
}

/* Where the server listens and what it serves, once it does. */
static void log_listening(const args *a, const char *bind_address, int port, const char *state, const char *model_sha) {
    native_log_line line;
    native_log_open(&line, "listening");
    sdfed_jw_string(&line.w, "address", bind_address);
    sdfed_jw_int(&line.w, "port", port);
    sdfed_jw_stringf(&line.w, "url", "%s://%s:%d/", a->cert ? "https" : "http", a->host ? a->host : "localhost", port);
    sdfed_jw_string(&line.w, "task", a->task);
    sdfed_jw_string(&line.w, "state", state);
    sdfed_jw_string(&line.w, "model_sha256", model_sha);
    native_log_close(&line);
}

int main(int argc, char **argv) {
    native_cli_set_program("sdfed-aggregator");
    args a = {0};
    a.port = "8080";
    a.mode = "sync";
    a.deadline = NULL;
    a.pause = "0";
    a.buffer = "10";
    a.staleness = "10";
    a.grace = "30";
    a.rule = "mean";
    a.trim = "0.1";
    a.clip = "0";
    a.noise = "0";
    a.max_norm = "0";
    a.max_samples = "1000000";
    a.max_bytes = "4194304";
    a.rate = "50";
    a.rate_window = "1";
    a.refusals = "20";
    a.lease = "10";
    a.poll = "1";
    a.commit_batch = "512";
    a.commit_wait = "0.005";
    a.ping_after = "30";
    a.hangup_after = "60";
    a.max_header = "8192";
    a.max_connections = "10000";
    a.status_reserve = "32";
    a.per_address = "128";
    a.max_addresses = "65536";
    a.key_failures = "10";
    a.key_lockout = "60";
    a.registrations = "20";
    a.demo_leases = "4";
    a.hello_timeout = "10";
    a.file_sends = "256";
    const native_cli_option options[] = {
        {.name = "--task", .value = &a.task, .flag = NULL},
        {.name = "--port", .value = &a.port, .flag = NULL},
        {.name = "--port-file", .value = &a.port_file, .flag = NULL},
        {.name = "--host", .value = &a.host, .flag = NULL},
        {.name = "--state", .value = &a.state, .flag = NULL},
        {.name = "--db", .value = &a.db, .flag = NULL},
        {.name = "--web", .value = &a.web, .flag = NULL},
        {.name = "--wasm", .value = &a.wasm, .flag = NULL},
        {.name = "--mode", .value = &a.mode, .flag = NULL},
        {.name = "--min-clients", .value = &a.min_clients, .flag = NULL},
        {.name = "--over-select", .value = &a.over_select, .flag = NULL},
        {.name = "--deadline", .value = &a.deadline, .flag = NULL},
        {.name = "--round-pause", .value = &a.pause, .flag = NULL},
        {.name = "--rejoin-grace", .value = &a.grace, .flag = NULL},
        {.name = "--buffer", .value = &a.buffer, .flag = NULL},
        {.name = "--max-staleness", .value = &a.staleness, .flag = NULL},
        {.name = "--aggregate", .value = &a.rule, .flag = NULL},
        {.name = "--trim", .value = &a.trim, .flag = NULL},
        {.name = "--clip-norm", .value = &a.clip, .flag = NULL},
        {.name = "--noise-multiplier", .value = &a.noise, .flag = NULL},
        {.name = "--max-update-norm", .value = &a.max_norm, .flag = NULL},
        {.name = "--max-samples", .value = &a.max_samples, .flag = NULL},
        {.name = "--join-key", .value = &a.join_key, .flag = NULL},
        {.name = "--metrics-token", .value = &a.metrics_token, .flag = NULL},
        {.name = "--cert", .value = &a.cert, .flag = NULL},
        {.name = "--key", .value = &a.key, .flag = NULL},
        {.name = "--max-message-bytes", .value = &a.max_bytes, .flag = NULL},
        {.name = "--rate-limit", .value = &a.rate, .flag = NULL},
        {.name = "--rate-window", .value = &a.rate_window, .flag = NULL},
        {.name = "--max-refusals", .value = &a.refusals, .flag = NULL},
        {.name = "--node-lease", .value = &a.lease, .flag = NULL},
        {.name = "--poll", .value = &a.poll, .flag = NULL},
        {.name = "--commit-batch", .value = &a.commit_batch, .flag = NULL},
        {.name = "--commit-wait", .value = &a.commit_wait, .flag = NULL},
        {.name = "--ping-after", .value = &a.ping_after, .flag = NULL},
        {.name = "--hangup-after", .value = &a.hangup_after, .flag = NULL},
        {.name = "--max-header-bytes", .value = &a.max_header, .flag = NULL},
        {.name = "--max-connections", .value = &a.max_connections, .flag = NULL},
        {.name = "--status-reserve", .value = &a.status_reserve, .flag = NULL},
        {.name = "--max-connections-per-address", .value = &a.per_address, .flag = NULL},
        {.name = "--max-addresses", .value = &a.max_addresses, .flag = NULL},
        {.name = "--max-file-sends", .value = &a.file_sends, .flag = NULL},
        {.name = "--key-failures", .value = &a.key_failures, .flag = NULL},
        {.name = "--key-lockout", .value = &a.key_lockout, .flag = NULL},
        {.name = "--registrations-per-minute", .value = &a.registrations, .flag = NULL},
        {.name = "--demo-leases-per-address", .value = &a.demo_leases, .flag = NULL},
        {.name = "--hello-timeout", .value = &a.hello_timeout, .flag = NULL},
        {.name = "--verify", .value = NULL, .flag = &a.verify},
        {.name = "--graph-from-seed", .value = NULL, .flag = &a.graph_from_seed},
        {.name = "--help", .value = NULL, .flag = &a.help}};
    const char *allow_origin[ORIGINS_ALLOWED_MAX], *balancer_addresses[PROXY_BALANCERS_MAX];
    int n_allow_origin, n_balancers;
    const native_cli_list lists[] = {
        {.name = "--allow-origin", .values = allow_origin, .max = ORIGINS_ALLOWED_MAX, .count = &n_allow_origin},
        {.name = "--proxy-protocol-from",
         .values = balancer_addresses,
         .max = PROXY_BALANCERS_MAX,
         .count = &n_balancers}};
    int status = native_cli_parse_lists(argc - 1, argv + 1, options, (int)(sizeof options / sizeof options[0]), lists,
                                        (int)(sizeof lists / sizeof lists[0]), NULL, NULL);
    if (status) return status;
    if (a.help) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    if (!a.task) return native_cli_error(CLI_USAGE, "--task is required (see --help)");
    double port, deadline, pause, grace, buffer, staleness, trim, clip, noise, max_norm, max_samples, max_bytes, rate,
        rate_window, refusals, lease, poll, commit_batch, commit_wait, ping_after, hangup_after, max_header,
        max_connections, status_reserve, per_address, max_addresses, key_failures, key_lockout, registrations,
        demo_leases, hello_timeout, file_sends;
    if (native_cli_number(a.port, "--port", 0, 65535, &port) ||
        (a.deadline && native_cli_number(a.deadline, "--deadline", 0.01, 86400 * 7, &deadline)) ||
        native_cli_number(a.pause, "--round-pause", 0, 86400, &pause) ||
        native_cli_number(a.grace, "--rejoin-grace", 0, 86400, &grace) ||
        native_cli_number(a.buffer, "--buffer", 1, 1e6, &buffer) ||
        native_cli_number(a.staleness, "--max-staleness", 0, 1e6, &staleness) ||
        native_cli_number(a.trim, "--trim", 0, 0.49, &trim) ||
        native_cli_number(a.clip, "--clip-norm", 0, 1e9, &clip) ||
        native_cli_number(a.noise, "--noise-multiplier", 0, 1e6, &noise) ||
        native_cli_number(a.max_norm, "--max-update-norm", 0, 1e12, &max_norm) ||
        native_cli_number(a.max_samples, "--max-samples", 1, 1e12, &max_samples) ||
        native_cli_number(a.max_bytes, "--max-message-bytes", 1024, 1 << 30, &max_bytes) ||
        native_cli_number(a.rate, "--rate-limit", 1, 1e6, &rate) ||
        native_cli_number(a.rate_window, "--rate-window", 0.001, 86400, &rate_window) ||
        native_cli_number(a.refusals, "--max-refusals", 1, 1e6, &refusals) ||
        native_cli_number(a.lease, "--node-lease", 0.5, 3600, &lease) ||
        native_cli_number(a.poll, "--poll", 0.05, 3600, &poll) ||
        native_cli_number(a.commit_batch, "--commit-batch", 1, 1e6, &commit_batch) ||
        native_cli_number(a.commit_wait, "--commit-wait", 0, 10, &commit_wait) ||
        native_cli_number(a.ping_after, "--ping-after", 0.1, 86400, &ping_after) ||
        native_cli_number(a.hangup_after, "--hangup-after", 0.2, 86400, &hangup_after) ||
        native_cli_number(a.max_header, "--max-header-bytes", 4096, 32768, &max_header) ||
        native_cli_number(a.max_connections, "--max-connections", 1, 1e6, &max_connections) ||
        native_cli_number(a.status_reserve, "--status-reserve", 0, 1e4, &status_reserve) ||
        native_cli_number(a.per_address, "--max-connections-per-address", 1, 1e6, &per_address) ||
        native_cli_number(a.max_addresses, "--max-addresses", 16, 1 << 24, &max_addresses) ||
        native_cli_number(a.key_failures, "--key-failures", 1, 1e6, &key_failures) ||
        native_cli_number(a.key_lockout, "--key-lockout", 0.001, 86400, &key_lockout) ||
        native_cli_number(a.registrations, "--registrations-per-minute", 1, 1e6, &registrations) ||
        native_cli_number(a.demo_leases, "--demo-leases-per-address", 1, 1e6, &demo_leases) ||
        native_cli_number(a.hello_timeout, "--hello-timeout", 0.1, 3600, &hello_timeout) ||
        native_cli_number(a.file_sends, "--max-file-sends", 1, 1e6, &file_sends))
        return CLI_USAGE;
    if (max_addresses < max_connections + status_reserve)
        return native_cli_error(CLI_USAGE,
                                "--max-addresses (%g) must be at least --max-connections + --status-reserve (%g)",
                                max_addresses, max_connections + status_reserve);
    if (hangup_after <= ping_after)
        return native_cli_error(CLI_USAGE, "--hangup-after (%g s) must be longer than --ping-after (%g s)",
                                hangup_after, ping_after);
    int rule = sdfed_aggregate_rule_from_name(a.rule);
    if (rule < 0) return native_cli_error(CLI_USAGE, "--aggregate must be mean, median or trimmed_mean");
    if (strcmp(a.mode, "sync") && strcmp(a.mode, "async"))
        return native_cli_error(CLI_USAGE, "--mode must be sync or async");
    if (noise > 0 && clip == 0) return native_cli_error(CLI_USAGE, "--noise-multiplier needs --clip-norm");
    if (!a.cert != !a.key) return native_cli_error(CLI_USAGE, "TLS needs both --cert and --key");
    if (a.db && a.state) return native_cli_error(CLI_USAGE, "--state and --db both name the state; give one");
    if (a.state && agg_store_is_database(a.state))
        return native_cli_error(CLI_USAGE, "--state takes a folder; a PostgreSQL URI goes to --db");
    if (a.db && !agg_store_is_database(a.db))
        return native_cli_error(CLI_USAGE, "--db must be a postgresql:// or postgres:// URI");
    if (a.db && !strcmp(a.mode, "async"))
        return native_cli_error(CLI_USAGE,
                                "--db runs a cluster's synchronous rounds; asynchronous rounds run in one process "
                                "with --state");
    agg_join_key key, metrics_token;
    sdfed_error key_err = {0};
    if (agg_join_key_set(&key, "--join-key", a.join_key, &key_err) ||
        agg_join_key_set(&metrics_token, "--metrics-token", a.metrics_token, &key_err))
        return native_cli_error(CLI_USAGE, "%s", key_err.message);
    agg_origins pages = {0};
    for (int i = 0; i < n_allow_origin; i++) {
        sdfed_error origin_err = {0};
        if (agg_origins_allow(&pages, allow_origin[i], &origin_err))
            return native_cli_error(CLI_USAGE, "%s", origin_err.message);
    }
    agg_proxy_balancers balancers = {0};
    for (int i = 0; i < n_balancers; i++) {
        sdfed_error balancer_err = {0};
        if (agg_proxy_balancers_add(&balancers, balancer_addresses[i], "--proxy-protocol-from", &balancer_err))
            return native_cli_error(CLI_USAGE, "%s", balancer_err.message);
    }
    const char *where = a.db ? a.db : a.state;
    if (!where) where = "state";
    sdfed_error host_err = {0};
    char bind_address[256];
    if (agg_loop_resolve_host(a.host, bind_address, sizeof bind_address, &host_err))
        return native_cli_error(CLI_USAGE, "%s", host_err.message);

    /* the task and its model; on any failure below, `done` frees what was made */
    sdfed_error err = {0};
    int rc = CLI_FAILED;
    native_model model = {0};
    sdfed_classes cls = {0};
    agg_store *st = NULL;
    agg_cluster *cl = NULL;
    agg_loop *server = NULL;
    agg_handlers *h = NULL;
    agg_http_site site = {0};
    char *description = NULL;
    agg_federation *fed = NULL;
    agg_demo *shards = NULL;
    agg_peers *addresses = NULL;
    native_fed_data images = {0};
    char resolved[4096];
    sdfed_task task;
    char task_sha[65];
    if (native_task_read(a.task, &task, task_sha, &err)) return native_cli_error(CLI_FAILED, "%s", err.message);
    if (!a.deadline) { /* the budget's (fed/local_prompt.h), else 300 s */
        deadline = sdfed_local_prompt_deadline_s(&task.local_prompt);
        if (deadline == 0) deadline = 300;
    }
    double min_clients = task.clients_per_round > 0 ? task.clients_per_round : task.clients, over_select = 1;
    if (task.min_clients > 0) min_clients = task.min_clients;
    if ((a.min_clients && native_cli_number(a.min_clients, "--min-clients", 1, 1e6, &min_clients)) ||
        (a.over_select && native_cli_number(a.over_select, "--over-select", 1, 100, &over_select))) {
        sdfed_task_free(&task);
        return CLI_USAGE;
    }
    if (native_model_open(&model, task.model, &err)) {
        native_cli_error(CLI_FAILED, "model: %s", err.message);
        goto done;
    }
    char model_sha[65], model_path[4096];
    if (native_sha256_hex(model.file.data, model.file.size, model_sha, &err)) {
        native_cli_error(CLI_FAILED, "model: %s", err.message);
        goto done;
    }
    snprintf(model_path, sizeof model_path, "%s", native_resolve_path(task.model, resolved, sizeof resolved));
    /* the task's images: a folder dataset's classes are its folders' unless
     * the task names them, and the demo shards are made of them (a missing
     * Fashion-MNIST only turns the shards off) */
    int folder = strcmp(task.dataset, "folder") == 0;
    sdfed_error images_err = {0};
    int images_rc = folder || task.demo ? native_fed_data_load_images(&task, NULL, NULL, &images, &images_err)
                                        : SDFED_ERR_NOT_FOUND;
    if (folder && images_rc == SDFED_OK) images_rc = native_fed_data_task_classes(&task, &images, &images_err);
    if (folder && images_rc) {
        native_cli_error(CLI_FAILED, "classes: %s", images_err.message);
        goto done;
    }
    if (sdfed_task_classes(&task, &model.tokenizer, model.clip.cfg.context_length, &cls, &err)) {
        native_cli_error(CLI_FAILED, "classes: %s", err.message);
        goto done;
    }

    /* the state folder or database: this task's, or new */
    char *stored_task = NULL;
    int stored = agg_store_open(&st, where, &err);
    if (stored == SDFED_ERR_ARG) { /* a URI libpq cannot read */
        rc = native_cli_error(CLI_USAGE, "--db: %s", err.message);
        goto done;
    }
    if (stored == SDFED_OK) stored = agg_store_get_meta(st, "task_sha256", &stored_task, &err);
    if (stored == SDFED_OK && stored_task && strcmp(stored_task, task_sha) != 0)
        stored =
            sdfed_fail(&err, SDFED_ERR_ARG, "the state in %s belongs to another task (sha256 %.12s...); use another %s",
                       agg_store_name(st), stored_task, a.db ? "--db" : "--state");
    else if (stored == SDFED_OK && !stored_task)
        stored = agg_store_set_meta(st, "task_sha256", task_sha, &err);
    free(stored_task);
    if (stored) {
        native_cli_error(CLI_FAILED, "%s", err.message);
        goto done;
    }

    sdfed_aggregate_config aggregate = {.rule = rule, .trim = trim, .clip_norm = clip, .noise_multiplier = noise};
    if (a.verify) {
        int mismatches = 0;
        if (agg_verify_rounds(st, &task, &model.clip, sdfed_kernels_default(), &cls, &aggregate, stdout, &mismatches,
                              &err)) {
            native_cli_error(CLI_FAILED, "--verify: %s", err.message);
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
        stored = agg_store_get_meta(st, "decisions", &stored_decisions, &err);
        if (stored == SDFED_OK && stored_decisions && strcmp(stored_decisions, decisions) != 0)
            stored = sdfed_fail(&err, SDFED_ERR_ARG,
                                "the cluster in %s decides rounds with '%s'; this node was started with '%s'",
                                agg_store_name(st), stored_decisions, decisions);
        else if (stored == SDFED_OK && !stored_decisions)
            stored = agg_store_set_meta(st, "decisions", decisions, &err);
        free(stored_decisions);
        if (stored == SDFED_OK) stored = agg_cluster_open(&cl, st, lease, &err);
        if (stored) {
            native_cli_error(CLI_FAILED, "%s", err.message);
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
    if (images_rc == SDFED_OK) log_dataset(&images); /* once the state opened: a refused start says one line */
    if (task.demo && images_rc == SDFED_OK && agg_demo_open(&shards, &task, &images, &err))
        log_warning(err.message);
    else if (task.demo && images_rc != SDFED_OK)
        log_warning(images_err.message);
    agg_federation_options fo = {.async = !strcmp(a.mode, "async"),
                                 .min_clients = (int)min_clients,
                                 .over_select = over_select,
                                 .deadline_ms = (int64_t)(deadline * 1000),
                                 .round_pause_ms = (int64_t)(pause * 1000),
                                 .rejoin_grace_ms = (int64_t)(grace * 1000),
                                 .graph_from_seed = a.graph_from_seed,
                                 .buffer = (int)buffer,
                                 .max_staleness = (int)staleness,
                                 .aggregate = aggregate,
                                 .max_update_norm = max_norm,
                                 .max_samples = (int64_t)max_samples,
                                 .cluster = cl,
                                 .poll_ms = (int64_t)(poll * 1000),
                                 .batch_rows = (int)commit_batch,
                                 .batch_wait_ms = (int64_t)(commit_wait * 1000)};
    agg_description_model dm = {.url = model_url, .sha256 = model_sha, .size = model.file.size};
    if (agg_federation_open(&fed, &task, &model.clip, sdfed_kernels_default(), &cls, st, &fo,
                            native_clock_ms(native_clock_monotonic_ns()), &err) ||
        agg_description_write(&task, &dm, agg_federation_get_global(fed).shape, agg_demo_shards(shards), &description,
                              &err)) {
        native_cli_error(CLI_FAILED, "%s", err.message);
        goto done;
    }
    int fitted = fit_descriptors(&max_connections, status_reserve + file_sends);
    if (fitted != CLI_OK) {
        rc = fitted;
        goto done;
    }
    agg_peers_limits pl = {.max_addresses = (int)max_addresses,
                           .max_connections = (int)max_connections,
                           .reserve = (int)status_reserve,
                           .max_connections_per_address = (int)per_address,
                           .max_file_sends = (int)file_sends,
                           .key_failures = (int)key_failures,
                           .key_lockout_ms = (int64_t)(key_lockout * 1000),
                           .registrations_per_minute = (int)registrations};
    if (agg_peers_open(&addresses, &pl, &err)) {
        native_cli_error(CLI_FAILED, "%s", err.message);
        goto done;
    }
    agg_handlers_options ho = {.join_key = &key,
                               .peers = addresses,
                               .registrations_per_minute = (int)registrations,
                               .description = description,
                               .max_message_bytes = (size_t)max_bytes,
                               .rate_limit = (int)rate,
                               .rate_window_ms = (int64_t)(rate_window * 1000),
                               .max_refusals = (int)refusals};
    site = (agg_http_site){.web_dir = web,
                           .wasm_dir = wasm,
                           .model_path = model_path,
                           .model_sha256 = model_sha,
                           .description = description,
                           .fed = fed,
                           .demo = shards,
                           .demo_leases_per_address = (int)demo_leases,
                           .peers = addresses,
                           .join_key = &key,
                           .metrics_token = &metrics_token,
                           .status = {.fed = fed,
                                      .peers = addresses,
                                      .join_key = &key,
                                      .metrics_token = &metrics_token,
                                      .st = st,
                                      .cl = cl,
                                      .model_sha256 = model_sha,
                                      .name = sdfed_task_name(&task),
                                      .description = sdfed_task_description(&task)}};
    agg_loop_options lo = {.host = a.host ? bind_address : NULL,
                           .port = (int)port,
                           .cert = a.cert,
                           .key = a.key,
                           .max_message_bytes = (size_t)max_bytes,
                           .max_header_bytes = (size_t)max_header,
                           .header_timeout_s = 5,
                           .keepalive = {(int64_t)(ping_after * 1000), (int64_t)(hangup_after * 1000)},
                           .hello_timeout_ms = (int64_t)(hello_timeout * 1000),
                           .origins = &pages,
                           .peers = addresses,
                           .balancers = balancers};
    if (agg_handlers_create(&h, &ho, fed, st, &err) || agg_loop_create(&server, &lo, &site, h, &err)) {
        native_cli_error(CLI_FAILED, "%s", err.message);
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
    int bound = agg_loop_port(server);
    char number[16];
    snprintf(number, sizeof number, "%d\n", bound);
    if (a.port_file && native_write_file(a.port_file, number, &err)) {
        native_cli_error(CLI_FAILED, "--port-file %s", err.message);
        goto done;
    }
    log_listening(&a, bind_address, bound, agg_store_name(st), model_sha);
    rc = agg_loop_run(server) ? CLI_FAILED : CLI_OK;
    native_log("stopping");
    if (a.port_file) remove(a.port_file);
done:
    agg_loop_destroy(server);
    agg_handlers_destroy(h);
    agg_peers_close(addresses);
    agg_status_board_free(&site.status);
    free(description);
    agg_federation_close(fed);
    agg_demo_close(shards);
    native_fed_data_free(&images);
    agg_cluster_close(cl);
    agg_store_close(st);
    sdfed_classes_free(&cls);
    native_model_close(&model);
    sdfed_task_free(&task);
    return rc;
}
