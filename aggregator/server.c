/* Sessions of the sdfed.v1 WebSocket protocol and the lws event loop (see
 * server.h). A session assembles fragments into messages, checks the limits,
 * parses with the shared codec, and hands events to the federation; what
 * the federation sends is queued per session and written when lws says the
 * socket is writable. */
#include "server.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libwebsockets.h>

#include "fed/protocol.h"
#include "gate.h"
#include "http.h"
#include "native/clock.h"

typedef struct queued {
    struct queued *next;
    size_t len;
    int binary;
    unsigned char *data; /* LWS_PRE bytes of headroom, then the message */
} queued;

typedef struct session {
    struct lws *wsi;
    server *srv;
    int64_t client; /* -1 until hello */
    unsigned char *rx;
    size_t rx_len, rx_cap;
    int rx_binary, rx_overflow;
    queued *head, *tail;
    int64_t window_start;
    int window_count, refusals;
    int closing;                    /* 0, or the WebSocket close status to leave with once the queue is written */
    int64_t closing_since, last_rx; /* ms, for the lingering close */
} session;

struct server {
    server_options opt;
    store *st;
    federation *fed;
    struct lws_context *context;
    struct lws_vhost *vhost;
    gate *gate; /* NULL with TLS */
    http_site site;
    session **by_id; /* live session of each client id */
    int64_t n_ids;
    lws_sorted_usec_list_t tick;
    int64_t fault_since_ms, fault_refused; /* the store fault going on: since when, requests refused */
    volatile int stop;
};

int64_t server_now_ms(void) { return native_clock_ms(native_clock_monotonic_ns()); }

void server_log(const char *event, const char *fields) {
    int64_t ms = native_clock_ms(native_clock_wall_ns());
    fprintf(stderr, "{\"ts\": %lld.%03d, \"event\": \"%s\"%s%s}\n", (long long)(ms / 1000), (int)(ms % 1000), event,
            fields && fields[0] ? ", " : "", fields ? fields : "");
    fflush(stderr);
}

/* --------------------------------------------------------------- sending */

static void enqueue(session *ss, const void *data, size_t len, int binary) {
    queued *q = malloc(sizeof *q);
    unsigned char *buf = q ? malloc(LWS_PRE + len) : NULL;
    if (!q || !buf) {
        free(q);
        server_log("error", "\"message\": \"out of memory queueing a message\"");
        return;
    }
    memcpy(buf + LWS_PRE, data, len);
    *q = (queued){NULL, len, binary, buf};
    if (ss->tail)
        ss->tail->next = q;
    else
        ss->head = q;
    ss->tail = q;
    lws_callback_on_writable(ss->wsi);
}

static session *session_of(server *s, int64_t client) {
    return client >= 0 && client < s->n_ids ? s->by_id[client] : NULL;
}

static void net_send_text(void *ctx, int64_t client, const char *text, size_t len) {
    session *ss = session_of(ctx, client);
    if (ss) enqueue(ss, text, len, 0);
}

static void net_send_binary(void *ctx, int64_t client, const void *data, size_t len) {
    session *ss = session_of(ctx, client);
    if (ss) enqueue(ss, data, len, 1);
}

static void net_log(void *ctx, const char *event, const char *fields) { server_log(event, fields); }

federation_net server_net(server *s) {
    federation_net n = {net_send_text, net_send_binary, net_log, s};
    return n;
}

/* Leaves with a close status once what is queued has been written. */
static void start_closing(session *ss, int status) {
    if (ss->closing) return;
    ss->closing = status;
    ss->closing_since = server_now_ms();
    lws_callback_on_writable(ss->wsi);
}

/* A store fault is logged when it begins, with its error, and when it is
 * over, with the requests refused meanwhile (not logged one by one). */
static void on_store_fault(void *ctx, const char *message) {
    server *s = ctx;
    char fields[SDFED_ERROR_MESSAGE_MAX + 64];
    if (message) {
        s->fault_since_ms = server_now_ms();
        s->fault_refused = 0;
        snprintf(fields, sizeof fields, "\"message\": \"%s\"", message);
        server_log("store_fault", fields);
    } else {
        snprintf(fields, sizeof fields, "\"refused\": %lld, \"seconds\": %.1f", (long long)s->fault_refused,
                 (server_now_ms() - s->fault_since_ms) / 1e3);
        server_log("store_fault_cleared", fields);
    }
}

/* Sends an error; counts the refusal (the one place that does) and closes
 * after too many. */
static void refuse(session *ss, sdfed_code code, const char *message) {
    server *s = ss->srv;
    federation_count_refusal(s->fed, code);
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &b, "error");
    sdfed_jw_string(&w, "code", sdfed_code_name(code));
    sdfed_jw_string(&w, "message", message);
    if (code == SDFED_CODE_WRONG_ROUND) {
        federation_status st;
        federation_get_status(s->fed, &st);
        sdfed_jw_int(&w, "next_round", st.round);
    }
    if (sdfed_jw_end(&w, NULL) == SDFED_OK) enqueue(ss, b.data, b.size, 0);
    sdfed_buffer_free(&b);
    char fields[320];
    snprintf(fields, sizeof fields, "\"client\": %lld, \"code\": \"%s\", \"refusals\": %d", (long long)ss->client,
             sdfed_code_name(code), ss->refusals + 1);
    if (code == SDFED_CODE_SERVER_ERROR && store_failing(s->st))
        s->fault_refused++;
    else
        server_log("refused", fields);
    if (++ss->refusals >= s->opt.max_refusals && !ss->closing) {
        start_closing(ss, LWS_CLOSE_STATUS_POLICY_VIOLATION);
        server_log("closed_for_abuse", fields);
    }
}

/* ------------------------------------------------------------- messages */

static void random_token(char hex[33]) {
    unsigned char bytes[16];
    int fd = open("/dev/urandom", O_RDONLY);
    size_t got = 0;
    while (fd >= 0 && got < sizeof bytes) {
        ssize_t n = read(fd, bytes + got, sizeof bytes - got);
        if (n <= 0) break;
        got += (size_t)n;
    }
    if (fd >= 0) close(fd);
    for (size_t i = got; i < sizeof bytes; i++) bytes[i] = (unsigned char)rand(); /* never reached on Linux */
    for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
}

/* Equal strings, in time independent of where they differ. */
static int same_secret(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    unsigned diff = (unsigned)(na ^ nb);
    for (size_t i = 0; i < na && i < nb; i++) diff |= (unsigned)(a[i] ^ b[i]);
    return diff == 0;
}

static void handle_hello(session *ss, const sdfed_message *m) {
    server *s = ss->srv;
    if (ss->client >= 0) {
        refuse(ss, SDFED_CODE_BAD_MESSAGE, "hello was already said");
        return;
    }
    if (s->opt.join_key && !same_secret(m->join_key, s->opt.join_key)) {
        refuse(ss, SDFED_CODE_BAD_JOIN_KEY, "this federation needs its join key");
        return;
    }
    sdfed_error err = {0};
    int64_t id = -1;
    int shard = m->shard;
    char token[SDFED_MSG_TEXT];
    if (m->token[0]) {
        int stored_shard;
        if (store_find_client(s->st, m->token, &id, &stored_shard, &err) || id < 0) {
            refuse(ss, SDFED_CODE_BAD_TOKEN, err.message[0] ? err.message : "this server never issued that token");
            return;
        }
        snprintf(token, sizeof token, "%s", m->token);
        if (shard < 0) shard = stored_shard;
    } else {
        random_token(token);
        if (store_add_client(s->st, token, shard, m->kind[0] ? m->kind : "browser", &id, &err)) {
            refuse(ss, SDFED_CODE_SERVER_ERROR, err.message);
            return;
        }
    }
    if (id >= s->n_ids) {
        int64_t cap = s->n_ids ? s->n_ids : 1024;
        while (cap <= id) cap *= 2;
        session **grown = realloc(s->by_id, sizeof *grown * (size_t)cap);
        if (!grown) {
            refuse(ss, SDFED_CODE_SERVER_ERROR, "out of memory");
            return;
        }
        memset(grown + s->n_ids, 0, sizeof *grown * (size_t)(cap - s->n_ids));
        s->by_id = grown, s->n_ids = cap;
    }
    session *old = s->by_id[id];
    if (old && old != ss) {
        /* the same client from a new connection: the old one goes */
        federation_leave(s->fed, id, server_now_ms());
        old->client = -1;
        start_closing(old, LWS_CLOSE_STATUS_GOINGAWAY);
    }
    s->by_id[id] = ss;
    ss->client = id;
    federation_join(s->fed, id, token, shard, m->binary, server_now_ms());
}

static void handle_update(session *ss, int64_t round, int64_t samples, int n_dims, const uint32_t *shape,
                          const float *values) {
    char message[256];
    sdfed_code code = federation_update(ss->srv->fed, ss->client, round, samples, n_dims, shape, values,
                                        server_now_ms(), message, sizeof message);
    if (code != SDFED_CODE_NONE) refuse(ss, code, message);
}

static void handle_text(session *ss, const char *text, size_t len) {
    server *s = ss->srv;
    sdfed_message m;
    sdfed_code code = SDFED_CODE_BAD_MESSAGE;
    sdfed_error err = {0};
    if (sdfed_message_parse(text, len, s->opt.max_message_bytes / 4, &m, &code, &err)) {
        refuse(ss, code, err.message);
        return;
    }
    if (ss->client < 0 && m.type != SDFED_MSG_HELLO) {
        refuse(ss, SDFED_CODE_BAD_MESSAGE, "say hello first");
    } else {
        char message[256];
        switch (m.type) {
        case SDFED_MSG_HELLO: handle_hello(ss, &m); break;
        case SDFED_MSG_UPDATE: handle_update(ss, m.round, m.samples, m.n_dims, m.shape, m.values); break;
        case SDFED_MSG_METRICS:
            if ((code = federation_metrics(s->fed, ss->client, m.round, m.accuracy, m.loss, m.test_samples, message,
                                           sizeof message)) != SDFED_CODE_NONE)
                refuse(ss, code, message);
            break;
        case SDFED_MSG_HEARTBEAT: enqueue(ss, "{\"type\": \"heartbeat\"}", 21, 0); break;
        case SDFED_MSG_LEAVE: start_closing(ss, LWS_CLOSE_STATUS_NORMAL); break;
        default: refuse(ss, SDFED_CODE_BAD_MESSAGE, "clients do not send that message"); break;
        }
    }
    sdfed_message_free(&m);
}

static void handle_binary(session *ss, const unsigned char *data, size_t len) {
    server *s = ss->srv;
    sdfed_frame f;
    sdfed_code code = SDFED_CODE_BAD_FRAME;
    sdfed_error err = {0};
    if (ss->client < 0) {
        refuse(ss, SDFED_CODE_BAD_MESSAGE, "say hello first");
        return;
    }
    if (sdfed_frame_decode(data, len, s->opt.max_message_bytes / 4, &f, &code, &err)) {
        refuse(ss, code, err.message);
        return;
    }
    if (f.kind != SDFED_FRAME_UPDATE) {
        refuse(ss, SDFED_CODE_BAD_FRAME, "clients send update frames");
        return;
    }
    float *values = malloc(sizeof *values * f.n_values);
    if (!values) {
        refuse(ss, SDFED_CODE_SERVER_ERROR, "out of memory");
        return;
    }
    sdfed_frame_values(&f, values);
    handle_update(ss, f.round, f.samples, f.n_dims, f.shape, values);
    free(values);
}

/* Collects a message's fragments; returns 1 when one is complete. */
static int receive(session *ss, const void *in, size_t len) {
    server *s = ss->srv;
    if (lws_is_first_fragment(ss->wsi)) {
        ss->rx_len = 0;
        ss->rx_overflow = 0;
        ss->rx_binary = lws_frame_is_binary(ss->wsi);
    }
    if (ss->rx_overflow || ss->rx_len + len > s->opt.max_message_bytes) {
        ss->rx_overflow = 1;
    } else {
        if (ss->rx_len + len > ss->rx_cap) {
            size_t cap = ss->rx_cap ? ss->rx_cap : 4096;
            while (cap < ss->rx_len + len) cap *= 2;
            unsigned char *grown = realloc(ss->rx, cap);
            if (!grown) {
                ss->rx_overflow = 1;
                return lws_is_final_fragment(ss->wsi);
            }
            ss->rx = grown, ss->rx_cap = cap;
        }
        memcpy(ss->rx + ss->rx_len, in, len);
        ss->rx_len += len;
    }
    return lws_is_final_fragment(ss->wsi) && !lws_remaining_packet_payload(ss->wsi);
}

/* At most max_messages_per_second per connection. */
static int rate_ok(session *ss) {
    int64_t now = server_now_ms();
    if (now - ss->window_start >= 1000) ss->window_start = now, ss->window_count = 0;
    return ++ss->window_count <= ss->srv->opt.max_messages_per_second;
}

/* A closing session waits for QUIET_MS without input, LINGER_MS at most. */
#define QUIET_MS 200
#define LINGER_MS 2000

static int sdfed_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    session *ss = user;
    server *s = lws_context_user(lws_get_context(wsi));
    switch (reason) {
    case LWS_CALLBACK_ESTABLISHED:
        memset(ss, 0, sizeof *ss);
        ss->wsi = wsi, ss->srv = s, ss->client = -1;
        break;
    case LWS_CALLBACK_RECEIVE:
        ss->last_rx = server_now_ms();
        if (ss->closing) break; /* a session on its way out reads nothing more */
        if (!receive(ss, in, len)) break;
        if (ss->rx_overflow) {
            char message[96];
            snprintf(message, sizeof message, "messages are limited to %zu bytes", s->opt.max_message_bytes);
            refuse(ss, SDFED_CODE_TOO_LARGE, message);
            start_closing(ss, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE);
        } else if (!rate_ok(ss)) {
            refuse(ss, SDFED_CODE_RATE_LIMITED, "too many messages per second");
        } else if (ss->rx_binary) {
            handle_binary(ss, ss->rx, ss->rx_len);
        } else {
            handle_text(ss, (const char *)ss->rx, ss->rx_len);
        }
        break;
    case LWS_CALLBACK_SERVER_WRITEABLE: {
        queued *q = ss->head;
        if (!q && ss->closing) {
            /* Linger while the peer is still sending (up to LINGER_MS): a
             * socket closed with unread input is reset, and a reset makes
             * the peer drop what we sent it last, the error included. */
            int64_t now = server_now_ms();
            if (now - ss->last_rx < QUIET_MS && now - ss->closing_since < LINGER_MS) {
                lws_set_timer_usecs(wsi, QUIET_MS * LWS_US_PER_MS);
                break;
            }
            lws_close_reason(wsi, (enum lws_close_status)ss->closing, NULL, 0);
            return -1;
        }
        if (!q) break;
        if (lws_write(wsi, q->data + LWS_PRE, q->len, q->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT) < (int)q->len)
            return -1;
        ss->head = q->next;
        if (!ss->head) ss->tail = NULL;
        free(q->data);
        free(q);
        if (ss->head || ss->closing) lws_callback_on_writable(wsi);
        break;
    }
    case LWS_CALLBACK_TIMER: lws_callback_on_writable(wsi); break;
    case LWS_CALLBACK_CLOSED:
        if (ss->client >= 0 && session_of(s, ss->client) == ss) {
            s->by_id[ss->client] = NULL;
            if (s->fed) federation_leave(s->fed, ss->client, server_now_ms());
        }
        while (ss->head) {
            queued *q = ss->head;
            ss->head = q->next;
            free(q->data);
            free(q);
        }
        free(ss->rx);
        break;
    default: break;
    }
    return 0;
}

/* ---------------------------------------------------------------- loop */

static void tick(lws_sorted_usec_list_t *sul) {
    server *s = lws_container_of(sul, server, tick);
    if (s->gate) gate_expire(s->gate, server_now_ms());
    if (s->fed) federation_tick(s->fed, server_now_ms());
    lws_sul_schedule(s->context, 0, &s->tick, tick, 200 * LWS_US_PER_MS);
}

/* The first protocol also hears lws's listener and the gate's descriptor:
 * a new connection goes to the gate (TLS ones excepted), which hands it
 * back to lws once its request line is checked. */
static int front_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    server *s = lws_context_user(lws_get_context(wsi));
    switch (reason) {
    case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
        return s->gate ? gate_take(s->gate, (int)(intptr_t)in, server_now_ms()) : 0;
    case LWS_CALLBACK_RAW_RX_FILE: gate_service(s->gate); return 0;
    default: return http_callback(wsi, reason, user, in, len);
    }
}

static const struct lws_protocols protocols[] = {
    {.name = "http", .callback = front_callback},
    {.name = SDFED_PROTOCOL,
     .callback = sdfed_callback,
     .per_session_data_size = sizeof(session),
     .rx_buffer_size = 65536},
    {NULL, NULL, 0, 0, 0, NULL, 0}, /* end of the list */
};

/* WebSocket keepalive: a PING after 30 s of silence, hang up after 60 s. */
static const lws_retry_bo_t keepalive = {.secs_since_valid_ping = 30, .secs_since_valid_hangup = 60};

int server_create(server **out, const server_options *opt, store *st, sdfed_error *err) {
    *out = NULL;
    server *s = calloc(1, sizeof *s);
    if (!s) return sdfed_fail(err, SDFED_ERR_NOMEM, "server: out of memory");
    s->opt = *opt;
    s->st = st;
    s->site = (http_site){.web_dir = opt->web_dir,
                          .wasm_dir = opt->wasm_dir,
                          .model_path = opt->model_path,
                          .model_sha256 = opt->model_sha256,
                          .model_size = opt->model_size,
                          .st = st,
                          .demo = opt->demo};
    lws_set_log_level(LLL_ERR, NULL);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = opt->port;
    info.iface = opt->host;
    info.protocols = protocols;
    info.user = s;
    info.vhost_name = "sdfed";
    info.timeout_secs_ah_idle = (unsigned)opt->header_timeout_s;
    info.timeout_secs = (unsigned)opt->header_timeout_s;
    info.retry_and_idle_policy = &keepalive;
    info.options = LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
    if (opt->cert && opt->key) {
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
        info.ssl_cert_filepath = opt->cert;
        info.ssl_private_key_filepath = opt->key;
    }
    s->context = lws_create_context(&info);
    if (!s->context) {
        free(s);
        return sdfed_fail(err, SDFED_ERR_IO, "server: cannot listen on %s:%d (in use, or a bad certificate?)",
                          opt->host ? opt->host : "*", opt->port);
    }
    s->vhost = lws_get_vhost_by_name(s->context, info.vhost_name);
    int rc = s->vhost ? SDFED_OK : sdfed_fail(err, SDFED_ERR_IO, "server: lws made no vhost");
    if (rc == SDFED_OK && !(opt->cert && opt->key)) rc = gate_open(&s->gate, s->vhost, opt->header_timeout_s, err);
    if (rc) {
        server_destroy(s);
        return rc;
    }
    store_watch_faults(st, on_store_fault, s);
    *out = s;
    return SDFED_OK;
}

int server_port(const server *s) { return lws_get_vhost_listen_port(s->vhost); }

void server_attach(server *s, federation *f) {
    s->fed = f;
    s->site.fed = f;
    lws_sul_schedule(s->context, 0, &s->tick, tick, 200 * LWS_US_PER_MS);
}

http_site *server_site(server *s) { return &s->site; }

int server_run(server *s) {
    while (!s->stop)
        if (lws_service(s->context, 0) < 0) return SDFED_ERR_IO;
    return SDFED_OK;
}

void server_stop(server *s) {
    s->stop = 1;
    if (s->context) lws_cancel_service(s->context);
}

void server_destroy(server *s) {
    if (!s) return;
    s->fed = NULL; /* connections closed by the shutdown are not departures */
    store_watch_faults(s->st, NULL, NULL);
    lws_context_destroy(s->context);
    gate_close(s->gate);
    http_site_free(&s->site);
    free(s->by_id);
    free(s);
}
