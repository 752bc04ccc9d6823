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
#include "native/clock.h"
#include "native/ws_client.h"

#define MAX_ROUNDS 64
/* the longest message the server sends that a client reads */
#define MAX_MESSAGE_BYTES ((size_t)1 << 24)

typedef struct conn {
    ws_conn ws;
    int index, welcomed;
} conn;

typedef struct round_times {
    double first_params, last_params, first_end;
    int n_params, n_end;
} round_times;

static struct {
    int n, ramp, rounds;
    ws_client ws;
    conn *conns;
    int started, established, welcomed, failed, closed;
    double t_start, t_welcomed, t_held, timeout;
    int finished;
    lws_sorted_usec_list_t check;
    round_times round[MAX_ROUNDS];
    int rounds_seen;
} L;

static void send_message(conn *c, const void *data, size_t len, int binary) {
    sdfed_error err = {0};
    if (ws_conn_send(&c->ws, data, len, binary, &err))
        fprintf(stderr, "load: client %d cannot send: %s\n", c->index, err.message);
}

static void start_next(void) {
    while (L.started < L.n && L.started - L.established < L.ramp) {
        conn *c = &L.conns[L.started];
        c->index = L.started++;
        ws_conn_init(&c->ws, &L.ws, c);
        ws_conn_connect(&c->ws, 0);
    }
}

/* The parameters of a round: answer with params + a small change. */
static void on_params(conn *c, const sdfed_frame *f) {
    if (f->round >= MAX_ROUNDS) return;
    round_times *r = &L.round[f->round];
    double t = native_clock_seconds(native_clock_monotonic_ns());
    if (r->n_params++ == 0) r->first_params = t;
    r->last_params = t;
    if ((int)f->round + 1 > L.rounds_seen) L.rounds_seen = (int)f->round + 1;
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

static int on_message(ws_conn *ws, ws_rx rx) {
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
    if (sdfed_message_parse((const char *)ws->in.data, ws->in.len, MAX_MESSAGE_BYTES, &m, &code, NULL)) return 0;
    if (m.type == SDFED_MSG_WELCOME && !c->welcomed) {
        c->welcomed = 1;
        if (++L.welcomed == L.n) L.t_welcomed = native_clock_seconds(native_clock_monotonic_ns());
    } else if (m.type == SDFED_MSG_ROUND_END && m.round >= 0 && m.round < MAX_ROUNDS) {
        round_times *r = &L.round[m.round];
        if (r->n_end++ == 0) r->first_end = native_clock_seconds(native_clock_monotonic_ns());
    } else if (m.type == SDFED_MSG_ERROR) {
        fprintf(stderr, "load: client %d refused: %s (%s)\n", c->index, m.code, m.message);
    }
    sdfed_message_free(&m);
    return 0;
}

static void on_connected(ws_conn *ws) {
    L.established++;
    static const char hello[] = "{\"type\": \"hello\", \"protocol\": \"sdfed.v1\", \"kind\": \"load\"}";
    send_message(ws->user, hello, sizeof hello - 1, 0);
    start_next();
}

/* A connection that was open counts as closed (and is not made again);
 * one that never opened (a server too busy to finish its handshake in
 * time) is tried again a second later, as a volunteer's client would. */
static void on_closed(ws_conn *ws, int was_open, const char *why) {
    if (was_open) {
        L.closed++;
        return;
    }
    if (L.failed++ < 5) fprintf(stderr, "load: a connection failed (tried again in 1 s): %s\n", why);
    ws_conn_connect(ws, LWS_US_PER_SEC);
}

static int all_rounds_ended(void) {
    for (int r = 0; r < L.rounds; r++)
        if (L.round[r].n_end < L.welcomed) return 0;
    return 1;
}

/* Every 100 ms (also what wakes lws_service): done after holding every
 * connection for a second past the last round, or at the timeout. */
static void check(lws_sorted_usec_list_t *sul) {
    double t = native_clock_seconds(native_clock_monotonic_ns());
    if (!L.t_held && L.welcomed == L.n && all_rounds_ended()) L.t_held = t;
    if ((L.t_held && t - L.t_held > 1.0) || t - L.t_start > L.timeout) L.finished = 1;
    lws_sul_schedule(L.ws.context, 0, sul, check, 100 * LWS_US_PER_MS);
}

static const char usage_line[] =
    "usage: sdfed-load --server ws://HOST:PORT --clients N [--rounds R (3)] [--ramp K (256)] [--timeout S (300)]\n";

static int usage(void) {
    fputs(usage_line, stderr);
    return 2;
}

int main(int argc, char **argv) {
    const char *server = NULL;
    L.timeout = 300;
    L.n = 0, L.ramp = 256, L.rounds = 3;
    if (argc == 2 && !strcmp(argv[1], "--help")) {
        fputs(usage_line, stdout);
        return 0;
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--server"))
            server = argv[i + 1];
        else if (!strcmp(argv[i], "--clients"))
            L.n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds"))
            L.rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--ramp"))
            L.ramp = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--timeout"))
            L.timeout = atof(argv[i + 1]);
        else
            return usage();
    }
    if (argc % 2 == 0 || !server || L.n <= 0 || L.ramp <= 0 || L.rounds <= 0 || L.rounds > MAX_ROUNDS || L.timeout <= 0)
        return usage();
    ws_url url;
    if (ws_url_parse(&url, server, NULL)) return usage();
    L.conns = calloc((size_t)L.n, sizeof *L.conns);
    if (!L.conns) return 1;
    signal(SIGPIPE, SIG_IGN);

    const ws_client_handlers on = {.connected = on_connected, .message = on_message, .closed = on_closed};
    if (ws_client_start(&L.ws, &url, L.n, MAX_MESSAGE_BYTES, &on, NULL)) {
        fprintf(stderr, "load: cannot create the lws context (file descriptor limit?)\n");
        free(L.conns);
        return 1;
    }
    L.t_start = native_clock_seconds(native_clock_monotonic_ns());
    start_next();
    lws_sul_schedule(L.ws.context, 0, &L.check, check, 100 * LWS_US_PER_MS);
    while (!L.finished && ws_client_service(&L.ws) >= 0)
        ;
    int timed_out = !L.t_held;

    printf("clients %d: welcomed %d in %.2f s, handshakes failed and tried again %d\n", L.n, L.welcomed,
           L.t_welcomed ? L.t_welcomed - L.t_start : -1.0, L.failed);
    for (int r = 0; r < L.rounds_seen && r < L.rounds; r++) {
        round_times *t = &L.round[r];
        printf("round %d: params to %d clients, broadcast_ms=%.1f collection_ms=%.1f round_ms=%.1f first_params_s=%.6f "
               "last_params_s=%.6f first_end_s=%.6f\n",
               r, t->n_params, 1e3 * (t->last_params - t->first_params),
               t->n_end ? 1e3 * (t->first_end - t->last_params) : -1.0,
               t->n_end ? 1e3 * (t->first_end - t->first_params) : -1.0, t->first_params, t->last_params, t->first_end);
    }
    printf("held=%d of %d%s\n", L.established - L.closed, L.n, timed_out ? " (timed out)" : "");
    ws_client_stop(&L.ws);
    for (int i = 0; i < L.started; i++) ws_conn_free(&L.conns[i].ws);
    free(L.conns);
    return timed_out || L.welcomed < L.n ? 1 : 0;
}
