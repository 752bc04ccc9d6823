/* sdfed-load: many WebSocket clients in one process, for `make bench`.
 *   sdfed-load --server ws://127.0.0.1:P --clients N [--rounds R] [--ramp K] [--timeout S]
 * Opens N sdfed.v1 connections (at most K handshakes in flight), says hello
 * on each, and answers every round's parameters at once with a slightly
 * changed copy, as a client that trains in no time would. It measures the
 * server, not training:
 *   connect  time until all N were welcomed;
 *   per round: broadcast (first to last client holding the parameters),
 *   collection (from the last client holding them to the first round_end:
 *   the server receiving, checking and storing N updates and aggregating),
 *   and the whole round;
 *   held     connections still open at the end;
 * and each round's times as the monotonic clock read them (first_params_s,
 * last_params_s, first_end_s), so that several sdfed-load processes, one
 * per front-end of a cluster, can be combined.
 * Everything stops by itself after --timeout seconds. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fed/protocol.h"
#include "native/args.h"
#include "native/clock.h"
#include "native/ws_client.h"

#define MAX_ROUNDS 64
/* the longest message the server sends that a client reads */
#define MAX_MESSAGE_BYTES ((size_t)1 << 24)

typedef struct conn {
    native_ws_conn ws;
    int index, welcomed;
} conn;

typedef struct round_times {
    double first_params, last_params, first_end;
    int n_params, n_end;
} round_times;

static struct {
    int n, ramp, rounds;
    native_ws_client ws;
    conn *conns;
    int started, established, welcomed, failed, closed;
    double t_start, t_welcomed, t_held, timeout;
    int finished;
    lws_sorted_usec_list_t check;
    round_times round[MAX_ROUNDS];
    int rounds_seen;
} load_run;

static void send_message(conn *c, const void *data, size_t len, int binary) {
    sdfed_error err = {0};
    if (native_ws_conn_send(&c->ws, data, len, binary, &err))
        fprintf(stderr, "load: client %d cannot send: %s\n", c->index, err.message);
}

static void start_next(void) {
    while (load_run.started < load_run.n && load_run.started - load_run.established < load_run.ramp) {
        conn *c = &load_run.conns[load_run.started];
        c->index = load_run.started++;
        native_ws_conn_init(&c->ws, &load_run.ws, c);
        native_ws_conn_connect(&c->ws, 0);
    }
}

/* The parameters of a round: answer with params + a small change. */
static void on_params(conn *c, const sdfed_frame *f) {
    if (f->round >= MAX_ROUNDS) return;
    round_times *r = &load_run.round[f->round];
    double t = native_clock_seconds(native_clock_monotonic_ns());
    if (r->n_params++ == 0) r->first_params = t;
    r->last_params = t;
    if ((int)f->round + 1 > load_run.rounds_seen) load_run.rounds_seen = (int)f->round + 1;
    float *values = malloc(sizeof *values * f->n_values);
    if (!values) return;
    sdfed_frame_values(f, values);
    for (size_t i = 0; i < f->n_values; i++) values[i] += 1e-4f * (float)((c->index + (int)i) % 13 - 6);
    sdfed_buffer frame = {0};
    if (sdfed_frame_encode(SDFED_FRAME_UPDATE, f->round, 1 + (uint32_t)(c->index % 16), f->n_dims, f->shape, values,
                           &frame, NULL) == SDFED_OK)
        send_message(c, frame.data, frame.size, 1);
    sdfed_buffer_free(&frame);
    free(values);
}

static int on_message(native_ws_conn *ws, native_ws_rx rx) {
    conn *c = ws->user;
    if (rx != WS_RX_MESSAGE) return -1;
    if (ws->in.binary) {
        sdfed_frame f;
        sdfed_code code;
        if (sdfed_frame_decode(ws->in.data, ws->in.len, MAX_MESSAGE_BYTES, &f, &code, NULL) == SDFED_OK &&
            f.kind == SDFED_FRAME_GLOBAL)
            on_params(c, &f);
        return 0;
    }
    sdfed_message m;
    sdfed_code code;
    if (sdfed_message_parse((const char *)ws->in.data, ws->in.len, SDFED_SENT_BY_SERVER, MAX_MESSAGE_BYTES, &m, &code,
                            NULL))
        return 0;
    if (m.type == SDFED_MSG_WELCOME && !c->welcomed) {
        c->welcomed = 1;
        if (++load_run.welcomed == load_run.n) load_run.t_welcomed = native_clock_seconds(native_clock_monotonic_ns());
    } else if (m.type == SDFED_MSG_ROUND_END && m.round >= 0 && m.round < MAX_ROUNDS) {
        round_times *r = &load_run.round[m.round];
        if (r->n_end++ == 0) r->first_end = native_clock_seconds(native_clock_monotonic_ns());
    } else if (m.type == SDFED_MSG_ERROR) {
        fprintf(stderr, "load: client %d refused: %s (%s)\n", c->index, m.code, m.message);
    }
    sdfed_message_free(&m);
    return 0;
}

static void on_connected(native_ws_conn *ws) {
    load_run.established++;
    static const char hello[] = "{\"type\": \"hello\", \"protocol\": \"sdfed.v1\", \"kind\": \"load\"}";
    send_message(ws->user, hello, sizeof hello - 1, 0);
    start_next();
}

/* A connection that was open counts as closed (and is not made again);
 * one that never opened (a server too busy to finish its handshake in
 * time) is tried again a second later, as a volunteer's client would. */
static void on_closed(native_ws_conn *ws, int was_open, const char *why) {
    if (was_open) {
        load_run.closed++;
        return;
    }
    if (load_run.failed++ < 5) fprintf(stderr, "load: a connection failed (tried again in 1 s): %s\n", why);
    native_ws_conn_connect(ws, LWS_US_PER_SEC);
}

static int all_rounds_ended(void) {
    for (int r = 0; r < load_run.rounds; r++)
        if (load_run.round[r].n_end < load_run.welcomed) return 0;
    return 1;
}

/* Every 100 ms (also what wakes lws_service): done after holding every
 * connection for a second past the last round, or at the timeout. */
static void check(lws_sorted_usec_list_t *sul) {
    double t = native_clock_seconds(native_clock_monotonic_ns());
    if (!load_run.t_held && load_run.welcomed == load_run.n && all_rounds_ended()) load_run.t_held = t;
    if ((load_run.t_held && t - load_run.t_held > 1.0) || t - load_run.t_start > load_run.timeout)
        load_run.finished = 1;
    lws_sul_schedule(load_run.ws.context, 0, sul, check, 100 * LWS_US_PER_MS);
}

static const char usage_line[] =
    "usage: sdfed-load --server ws://HOST:PORT --clients N [--rounds R (3)] [--ramp K (256)] [--timeout S (300)]\n";

int main(int argc, char **argv) {
    const char *server = NULL, *clients = NULL, *rounds = "3", *ramp = "256", *timeout = "300";
    int help = 0;
    const native_cli_option options[] = {
        {.name = "--server", .value = &server},   {.name = "--clients", .value = &clients},
        {.name = "--rounds", .value = &rounds},   {.name = "--ramp", .value = &ramp},
        {.name = "--timeout", .value = &timeout}, {.name = "--help", .flag = &help}};
    native_cli_set_program("sdfed-load");
    if (native_cli_parse(argc - 1, argv + 1, options, sizeof options / sizeof options[0], NULL, NULL)) return CLI_USAGE;
    if (help) {
        fputs(usage_line, stdout);
        return CLI_OK;
    }
    long long n, round_count, ramp_size;
    if (!server || !clients) return native_cli_error(CLI_USAGE, "--server and --clients are required (see --help)");
    if (native_cli_integer(clients, "--clients", 1, 1000000, &n) ||
        native_cli_integer(rounds, "--rounds", 1, MAX_ROUNDS, &round_count) ||
        native_cli_integer(ramp, "--ramp", 1, 1000000, &ramp_size) ||
        native_cli_number(timeout, "--timeout", 0.001, 86400, &load_run.timeout))
        return CLI_USAGE;
    load_run.n = (int)n;
    load_run.rounds = (int)round_count;
    load_run.ramp = (int)ramp_size;
    native_ws_url url;
    if (native_ws_url_parse(&url, server, NULL))
        return native_cli_error(CLI_USAGE, "--server must be ws://HOST:PORT or wss://...");
    load_run.conns = calloc((size_t)load_run.n, sizeof *load_run.conns);
    if (!load_run.conns) return 1;
    signal(SIGPIPE, SIG_IGN);

    const native_ws_client_handlers on = {.connected = on_connected, .message = on_message, .closed = on_closed};
    if (native_ws_client_start(&load_run.ws, &url, load_run.n, MAX_MESSAGE_BYTES, &on, NULL)) {
        fprintf(stderr, "load: cannot create the lws context (file descriptor limit?)\n");
        free(load_run.conns);
        return 1;
    }
    load_run.t_start = native_clock_seconds(native_clock_monotonic_ns());
    start_next();
    lws_sul_schedule(load_run.ws.context, 0, &load_run.check, check, 100 * LWS_US_PER_MS);
    while (!load_run.finished && native_ws_client_service(&load_run.ws) >= 0)
        ;
    int timed_out = !load_run.t_held;

    printf("clients %d: welcomed %d in %.2f s, handshakes failed and tried again %d\n", load_run.n, load_run.welcomed,
           load_run.t_welcomed ? load_run.t_welcomed - load_run.t_start : -1.0, load_run.failed);
    for (int r = 0; r < load_run.rounds_seen && r < load_run.rounds; r++) {
        round_times *t = &load_run.round[r];
        printf("round %d: params to %d clients, broadcast_ms=%.1f collection_ms=%.1f round_ms=%.1f first_params_s=%.6f "
               "last_params_s=%.6f first_end_s=%.6f\n",
               r, t->n_params, 1e3 * (t->last_params - t->first_params),
               t->n_end ? 1e3 * (t->first_end - t->last_params) : -1.0,
               t->n_end ? 1e3 * (t->first_end - t->first_params) : -1.0, t->first_params, t->last_params, t->first_end);
    }
    printf("held=%d of %d%s\n", load_run.established - load_run.closed, load_run.n, timed_out ? " (timed out)" : "");
    native_ws_client_stop(&load_run.ws);
    for (int i = 0; i < load_run.started; i++) native_ws_conn_free(&load_run.conns[i].ws);
    free(load_run.conns);
    return timed_out || load_run.welcomed < load_run.n ? 1 : 0;
}
