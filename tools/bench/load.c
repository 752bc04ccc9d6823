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
 *   held     connections still open at the end.
 * Everything stops by itself after --timeout seconds. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libwebsockets.h>

#include "fed/protocol.h"
#include "native/clock.h"

#define MAX_ROUNDS 64

typedef struct conn {
    struct lws *wsi;
    int index, welcomed, closed;
    unsigned char *rx;
    size_t rx_len, rx_cap;
    int rx_binary;
    unsigned char *out; /* LWS_PRE headroom, then one message */
    size_t out_len;
    int out_binary;
} conn;

typedef struct round_times {
    double first_params, last_params, first_end;
    int n_params, n_end;
} round_times;

static struct {
    char address[256], path[256];
    int port, n, ramp, rounds;
    struct lws_context *context;
    conn *conns;
    int started, established, welcomed, failed, closed;
    double t_start, t_welcomed, t_held, timeout;
    int finished;
    lws_sorted_usec_list_t check;
    round_times round[MAX_ROUNDS];
    int rounds_seen;
} L;

static void queue_out(conn *c, const void *data, size_t len, int binary) {
    free(c->out);
    c->out = malloc(LWS_PRE + len);
    if (!c->out) return;
    memcpy(c->out + LWS_PRE, data, len);
    c->out_len = len, c->out_binary = binary;
    lws_callback_on_writable(c->wsi);
}

static void start_next(void) {
    while (L.started < L.n && L.started - L.established - L.failed < L.ramp) {
        conn *c = &L.conns[L.started];
        c->index = L.started++;
        struct lws_client_connect_info ci;
        memset(&ci, 0, sizeof ci);
        ci.context = L.context;
        ci.address = L.address;
        ci.port = L.port;
        ci.path = L.path;
        ci.host = L.address;
        ci.origin = L.address;
        ci.protocol = SDFED_PROTOCOL;
        ci.userdata = c;
        ci.pwsi = &c->wsi;
        if (!lws_client_connect_via_info(&ci)) L.failed++;
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
        queue_out(c, frame.data, frame.size, 1);
    sdfed_buffer_free(&frame);
    free(values);
}

static void on_message(conn *c) {
    if (c->rx_binary) {
        sdfed_frame f;
        sdfed_code code;
        if (sdfed_frame_decode(c->rx, c->rx_len, (size_t)1 << 24, &f, &code, NULL) == SDFED_OK &&
            f.kind == SDFED_FRAME_GLOBAL)
            on_params(c, &f);
        return;
    }
    sdfed_message m;
    sdfed_code code;
    if (sdfed_message_parse((const char *)c->rx, c->rx_len, (size_t)1 << 24, &m, &code, NULL)) return;
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
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    conn *c = user;
    switch (reason) {
    case LWS_CALLBACK_CLIENT_ESTABLISHED: {
        L.established++;
        static const char hello[] = "{\"type\": \"hello\", \"protocol\": \"sdfed.v1\", \"kind\": \"load\"}";
        queue_out(c, hello, sizeof hello - 1, 0);
        start_next();
        break;
    }
    case LWS_CALLBACK_CLIENT_RECEIVE:
        if (lws_is_first_fragment(wsi)) c->rx_len = 0, c->rx_binary = lws_frame_is_binary(wsi);
        if (c->rx_len + len > c->rx_cap) {
            size_t cap = c->rx_cap ? c->rx_cap : 8192;
            while (cap < c->rx_len + len) cap *= 2;
            unsigned char *grown = realloc(c->rx, cap);
            if (!grown) return -1;
            c->rx = grown, c->rx_cap = cap;
        }
        memcpy(c->rx + c->rx_len, in, len);
        c->rx_len += len;
        if (lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi)) on_message(c);
        break;
    case LWS_CALLBACK_CLIENT_WRITEABLE:
        if (!c->out) break;
        if (lws_write(wsi, c->out + LWS_PRE, c->out_len, c->out_binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT) <
            (int)c->out_len)
            return -1;
        free(c->out);
        c->out = NULL;
        break;
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
        L.failed++;
        if (L.failed <= 5) fprintf(stderr, "load: a connection failed: %s\n", in ? (const char *)in : "?");
        start_next();
        break;
    case LWS_CALLBACK_CLIENT_CLOSED:
        if (c && !c->closed) c->closed = 1, L.closed++;
        break;
    default: break;
    }
    return 0;
}

static const struct lws_protocols protocols[] = {
    {.name = SDFED_PROTOCOL, .callback = callback, .rx_buffer_size = 65536},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static int all_rounds_ended(void) {
    for (int r = 0; r < L.rounds; r++)
        if (L.round[r].n_end < L.welcomed) return 0;
    return 1;
}

/* Every 100 ms (also what wakes lws_service): done after holding every
 * connection for a second past the last round, or at the timeout. */
static void check(lws_sorted_usec_list_t *sul) {
    double t = native_clock_seconds(native_clock_monotonic_ns());
    if (!L.t_held && L.welcomed > 0 && L.welcomed + L.failed >= L.n && all_rounds_ended()) L.t_held = t;
    if ((L.t_held && t - L.t_held > 1.0) || t - L.t_start > L.timeout) L.finished = 1;
    lws_sul_schedule(L.context, 0, sul, check, 100 * LWS_US_PER_MS);
}

static int usage(void) {
    fprintf(stderr, "usage: sdfed-load --server ws://HOST:PORT --clients N [--rounds R] [--ramp K] [--timeout S]\n");
    return 2;
}

int main(int argc, char **argv) {
    const char *server = NULL;
    L.timeout = 300;
    L.n = 0, L.ramp = 256, L.rounds = 3;
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
    char url[512];
    const char *scheme, *address, *path;
    snprintf(url, sizeof url, "%s", server);
    if (lws_parse_uri(url, &scheme, &address, &L.port, &path) || strcmp(scheme, "ws")) return usage();
    snprintf(L.address, sizeof L.address, "%s", address);
    snprintf(L.path, sizeof L.path, "/%s", path[0] ? path : "ws");
    L.conns = calloc((size_t)L.n, sizeof *L.conns);
    if (!L.conns) return 1;
    signal(SIGPIPE, SIG_IGN);

    lws_set_log_level(LLL_ERR, NULL);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = protocols;
    info.fd_limit_per_thread = (unsigned)L.n + 64;
    L.context = lws_create_context(&info);
    if (!L.context) {
        fprintf(stderr, "load: cannot create the lws context (file descriptor limit?)\n");
        return 1;
    }
    L.t_start = native_clock_seconds(native_clock_monotonic_ns());
    start_next();
    lws_sul_schedule(L.context, 0, &L.check, check, 100 * LWS_US_PER_MS);
    while (!L.finished && lws_service(L.context, 0) >= 0)
        ;
    int timed_out = !L.t_held;

    printf("clients %d: welcomed %d in %.2f s, failed %d\n", L.n, L.welcomed,
           L.t_welcomed ? L.t_welcomed - L.t_start : -1.0, L.failed);
    for (int r = 0; r < L.rounds_seen && r < L.rounds; r++) {
        round_times *t = &L.round[r];
        printf("round %d: params to %d clients, broadcast_ms=%.1f collection_ms=%.1f round_ms=%.1f\n", r, t->n_params,
               1e3 * (t->last_params - t->first_params), t->n_end ? 1e3 * (t->first_end - t->last_params) : -1.0,
               t->n_end ? 1e3 * (t->first_end - t->first_params) : -1.0);
    }
    printf("held=%d of %d%s\n", L.established - L.closed, L.n, timed_out ? " (timed out)" : "");
    lws_context_destroy(L.context);
    for (int i = 0; i < L.n; i++) free(L.conns[i].rx), free(L.conns[i].out);
    free(L.conns);
    return timed_out || L.welcomed < L.n ? 1 : 0;
}
