/* Client messages in, federation answers out (see handlers.h). */
#include "handlers.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_writer.h"
#include "fed/protocol.h"
#include "native/clock.h"
#include "native/crypto.h"
#include "native/log.h"

struct agg_handlers {
    agg_handlers_options opt;
    agg_federation *fed;
    agg_store *st;
    int async;
    agg_session **by_id; /* the live session of each client id */
    int64_t n_ids;
    /* the round_start of round_cached with deadline_cached ms left, written
     * once for every client it goes to at once: the text for binary clients
     * with its GLOBAL frame, and the text with the values for JSON clients
     * (-1: none yet) */
    sdfed_buffer round_text[2], round_frame;
    int64_t round_cached, deadline_cached;
    int64_t fault_since_ms, fault_refused; /* the store fault going on: since when, requests refused */
};

static agg_session *session_of(agg_handlers *h, int64_t client) {
    return client >= 0 && client < h->n_ids ? h->by_id[client] : NULL;
}

/* An error of the server's own (out of memory) that leaves the client without an answer. */
static void log_error(const char *message) {
    native_log_line line;
    native_log_open(&line, "error");
    sdfed_jw_string(&line.w, "message", message);
    native_log_close(&line);
}

static void send_to(agg_session *ss, const void *data, size_t len, int binary) {
    sdfed_error err = {0};
    if (agg_session_send(ss, data, len, binary, &err)) {
        native_log_line line;
        native_log_open(&line, "error");
        sdfed_jw_int(&line.w, "client", ss->client);
        sdfed_jw_string(&line.w, "message", err.message);
        native_log_close(&line);
    }
}

/* --------------------------------------------------- the federation's answers */

static void free_round_messages(agg_handlers *h) {
    for (int i = 0; i < 3; i++) sdfed_buffer_free(i < 2 ? &h->round_text[i] : &h->round_frame);
    h->round_cached = -1;
}

/* round_start's text, with the values for a JSON client, and for a client
 * of a secure round its place and the plan's settings (m, else NULL) */
static int write_round_text(agg_handlers *h, sdfed_buffer *out, int with_values, int64_t deadline_ms,
                            const agg_federation_message *m) {
    agg_federation_global g = agg_federation_get_global(h->fed);
    sdfed_json_writer w;
    sdfed_jw_begin(&w, out, "round_start");
    sdfed_jw_int(&w, "round", g.round);
    if (!h->async) sdfed_jw_int(&w, "deadline_ms", deadline_ms);
    sdfed_jw_string(&w, "global_sha256", g.sha256);
    if (m) {
        sdfed_jw_object(&w, "secure");
        sdfed_jw_int(&w, "place", m->place);
        sdfed_jw_int(&w, "n", m->n);
        sdfed_jw_int(&w, "k", m->k);
        sdfed_jw_int(&w, "t", m->t);
        sdfed_jw_int(&w, "min_inputs", m->min_inputs);
        sdfed_jw_close(&w);
    }
    if (with_values) {
        sdfed_jw_shape(&w, "shape", 2, g.shape);
        sdfed_jw_floats(&w, "data", g.values, g.n);
    }
    return sdfed_jw_end(&w, NULL);
}

static int write_round_messages(agg_handlers *h, int64_t deadline_ms) {
    free_round_messages(h);
    agg_federation_global g = agg_federation_get_global(h->fed);
    for (int with_values = 0; with_values < 2; with_values++)
        if (write_round_text(h, &h->round_text[with_values], with_values, deadline_ms, NULL)) return -1;
    if (sdfed_frame_encode(SDFED_FRAME_GLOBAL, (uint32_t)g.round, 0, 2, g.shape, g.values, &h->round_frame, NULL))
        return -1;
    h->round_cached = g.round;
    h->deadline_cached = deadline_ms;
    return 0;
}

/* Out of memory writing the round_start of ROUND: its clients wait for the next. */
static void log_round_error(int64_t round) {
    native_log_line line;
    native_log_open(&line, "error");
    sdfed_jw_stringf(&line.w, "message", "out of memory writing round %lld", (long long)round);
    native_log_close(&line);
}

/* round_start with the current global parameters and the time left, as the
 * client asked to get them (a secure round's text is the client's own) */
static void send_round(agg_handlers *h, agg_session *ss, const agg_federation_message *m) {
    if ((h->round_cached != m->round || h->deadline_cached != m->deadline_ms) &&
        write_round_messages(h, m->deadline_ms)) {
        free_round_messages(h);
        log_round_error(m->round);
        return;
    }
    sdfed_buffer own = {0};
    if (m->secure && write_round_text(h, &own, !ss->binary, m->deadline_ms, m)) {
        sdfed_buffer_free(&own);
        log_round_error(m->round);
        return;
    }
    const sdfed_buffer *text = m->secure ? &own : &h->round_text[!ss->binary];
    send_to(ss, text->data, text->size, 0);
    if (ss->binary) send_to(ss, h->round_frame.data, h->round_frame.size, 1);
    sdfed_buffer_free(&own);
}

/* a secure round's request in its frame */
static void send_request(agg_session *ss, const agg_federation_message *m) {
    sdfed_buffer b = {0};
    if (sdfed_secure_frame_encode(m->bytes, m->n_bytes, &b, NULL))
        log_error("out of memory writing a secure round's request");
    else
        send_to(ss, b.data, b.size, 1);
    sdfed_buffer_free(&b);
}

/* The JSON of a message that is the same for every client it goes to. */
static int write_message(agg_handlers *h, const agg_federation_message *m, const agg_session *ss, sdfed_buffer *b) {
    static const char *const names[] = {
        [FEDERATION_WELCOME] = "welcome",     [FEDERATION_WAIT] = "wait", [FEDERATION_ACK] = "ack",
        [FEDERATION_ROUND_END] = "round_end", [FEDERATION_DONE] = "done", [FEDERATION_SECAGG_ACK] = "secagg_ack",
    };
    sdfed_json_writer w;
    sdfed_jw_begin(&w, b, names[m->type]);
    switch (m->type) {
    case FEDERATION_WELCOME:
        sdfed_jw_string(&w, "protocol", SDFED_PROTOCOL);
        sdfed_jw_int(&w, "client_id", m->client);
        sdfed_jw_string(&w, "token", ss->token);
        sdfed_jw_string(&w, "mode", h->async ? "async" : "sync");
        sdfed_jw_int(&w, "round", m->round);
        sdfed_jw_raw(&w, NULL, h->opt.description, strlen(h->opt.description));
        break;
    case FEDERATION_WAIT:
        sdfed_jw_int(&w, "round", m->round);
        sdfed_jw_string(&w, "reason", m->reason);
        if (m->retry_after_ms > 0) sdfed_jw_int(&w, "retry_after", m->retry_after_ms);
        break;
    case FEDERATION_ACK: sdfed_jw_int(&w, "round", m->round); break;
    case FEDERATION_ROUND_END:
        sdfed_jw_int(&w, "round", m->round);
        sdfed_jw_int(&w, "next_round", m->next_round);
        sdfed_jw_int(&w, "participants", m->participants);
        sdfed_jw_string(&w, "global_sha256", m->global_sha256);
        if (m->abandoned) sdfed_jw_raw(&w, "abandoned", "true", 4);
        break;
    case FEDERATION_DONE: sdfed_jw_int(&w, "rounds", m->rounds); break;
    case FEDERATION_SECAGG_ACK:
        sdfed_jw_int(&w, "round", m->round);
        sdfed_jw_string(&w, "stage", m->reason);
        break;
    case FEDERATION_SECAGG_REQUEST: /* send_request */
    case FEDERATION_ROUND_START:    /* send_round */
    case FEDERATION_REFUSAL: break; /* refuse */
    }
    return sdfed_jw_end(&w, NULL);
}

static void refuse(agg_handlers *h, agg_session *ss, sdfed_code code, const char *message, int64_t now_ms);
static int attach(agg_handlers *h, agg_session *ss, int64_t id, int64_t now_ms);

/* Writes what the federation's last calls left in its outbox. A
 * connection's first message is its welcome: nothing is written to it
 * before (what came before was for the connection it replaced, or is said
 * by the welcome itself), but the refusal of its hello. A new client's
 * welcome makes its session the client's first. */
static void deliver(agg_handlers *h, int64_t now_ms) {
    int n;
    const agg_federation_message *out = agg_federation_outbox(h->fed, &n);
    for (int i = 0; i < n; i++) {
        const agg_federation_message *m = &out[i];
        agg_session *one = m->hello ? m->hello : session_of(h, m->client);
        if (m->client != FEDERATION_EVERYONE && !one) continue; /* gone meanwhile */
        if (m->hello && m->type == FEDERATION_WELCOME && attach(h, one, m->client, now_ms)) {
            agg_federation_leave(h->fed, m->client, FEDERATION_LEFT, now_ms);
            out = agg_federation_outbox(h->fed, &n); /* what its leaving says follows */
            continue;
        }
        if (one && !one->welcomed && m->type != FEDERATION_WELCOME && !m->hello) continue;
        if (m->type == FEDERATION_ROUND_START) {
            send_round(h, one, m);
            continue;
        }
        if (m->type == FEDERATION_SECAGG_REQUEST) {
            send_request(one, m);
            continue;
        }
        if (m->type == FEDERATION_REFUSAL) {
            if (m->hello) one->token[0] = '\0'; /* not registered: it may say hello again */
            refuse(h, one, m->code, m->text, now_ms);
            continue;
        }
        sdfed_buffer b = {0};
        if (write_message(h, m, one, &b)) {
            log_error("out of memory writing a message");
        } else if (one) {
            send_to(one, b.data, b.size, 0);
            one->welcomed |= m->type == FEDERATION_WELCOME;
        } else {
            for (int64_t id = 0; id < h->n_ids; id++)
                if (h->by_id[id] && h->by_id[id]->welcomed) send_to(h->by_id[id], b.data, b.size, 0);
        }
        sdfed_buffer_free(&b);
    }
    agg_federation_outbox_clear(h->fed);
}

/* ------------------------------------------------------------ refusals */

/* A store fault is logged when it begins, with its error, and when it is
 * over, with the requests refused meanwhile (not logged one by one). */
static void on_store_fault(void *ctx, const char *message) {
    agg_handlers *h = ctx;
    int64_t now = native_clock_ms(native_clock_monotonic_ns());
    native_log_line line;
    if (message) {
        h->fault_since_ms = now;
        h->fault_refused = 0;
        native_log_open(&line, "store_fault");
        sdfed_jw_string(&line.w, "message", message);
    } else {
        native_log_open(&line, "store_fault_cleared");
        sdfed_jw_int(&line.w, "refused", h->fault_refused);
        sdfed_jw_fixed(&line.w, "seconds", (now - h->fault_since_ms) / 1e3, 1);
    }
    native_log_close(&line);
}

/* How long a refused client should wait before trying again (ms; 0: no
 * need): a store fault a second, a rate limit until its window ends, a
 * connection closed for its refusals five seconds (docs/protocol.md). */
static int64_t retry_after_ms(const agg_handlers *h, const agg_session *ss, sdfed_code code, int64_t now_ms) {
    int64_t window = h->opt.rate_window_ms, elapsed = now_ms - ss->window_start;
    switch (code) {
    case SDFED_CODE_SERVER_ERROR: return 1000;
    case SDFED_CODE_RATE_LIMITED: return elapsed < window ? window - elapsed : 1;
    case SDFED_CODE_TOO_MANY_REFUSALS: return 5000;
    default: return 0;
    }
}

/* An error message: its code, what went wrong, for wrong_round the round the
 * server takes updates for next, and when to try again (retry_ms) if it
 * matters. */
static void send_error(agg_handlers *h, agg_session *ss, sdfed_code code, const char *message, int64_t retry_ms) {
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &b, "error");
    sdfed_jw_string(&w, "code", sdfed_code_name(code));
    sdfed_jw_string(&w, "message", message);
    if (code == SDFED_CODE_WRONG_ROUND) sdfed_jw_int(&w, "next_round", agg_federation_get_global(h->fed).round);
    if (retry_ms > 0) sdfed_jw_int(&w, "retry_after", retry_ms);
    if (sdfed_jw_end(&w, NULL) == SDFED_OK) send_to(ss, b.data, b.size, 0);
    sdfed_buffer_free(&b);
}

/* A refusal (EVENT refused) or the connection closed after too many
 * (closed_for_abuse): the client, the code, the client's refusals so far. */
static void log_refusal(const char *event, const agg_session *ss, sdfed_code code, int refusals) {
    native_log_line line;
    native_log_open(&line, event);
    sdfed_jw_int(&line.w, "client", ss->client);
    sdfed_jw_string(&line.w, "code", sdfed_code_name(code));
    sdfed_jw_int(&line.w, "refusals", refusals);
    native_log_close(&line);
}

/* Sends an error with retry_after retry_ms (0: none); counts the refusal
 * (the one place that does) and, after too many of the client's own
 * making, says so in a last error and closes (server_error is the server's
 * fault: the client is asked to resend). */
static void refuse_after(agg_handlers *h, agg_session *ss, sdfed_code code, const char *message, int64_t retry_ms,
                         int64_t now_ms) {
    agg_federation_count_refusal(h->fed, code);
    send_error(h, ss, code, message, retry_ms);
    int own = code != SDFED_CODE_SERVER_ERROR;
    if (code == SDFED_CODE_SERVER_ERROR && agg_store_failing(h->st))
        h->fault_refused++;
    else
        log_refusal("refused", ss, code, ss->refusals + own);
    if (own && ++ss->refusals >= h->opt.max_refusals && !ss->closing) {
        char last[96];
        snprintf(last, sizeof last, "too many refusals (%d); this connection is closed", ss->refusals);
        int64_t closed_ms = retry_after_ms(h, ss, SDFED_CODE_TOO_MANY_REFUSALS, now_ms);
        send_error(h, ss, SDFED_CODE_TOO_MANY_REFUSALS, last, retry_ms > closed_ms ? retry_ms : closed_ms);
        agg_session_close_after(ss, LWS_CLOSE_STATUS_POLICY_VIOLATION, last, now_ms);
        log_refusal("closed_for_abuse", ss, code, ss->refusals);
    }
}

/* A refusal with the retry_after its code asks for (retry_after_ms). */
static void refuse(agg_handlers *h, agg_session *ss, sdfed_code code, const char *message, int64_t now_ms) {
    refuse_after(h, ss, code, message, retry_after_ms(h, ss, code, now_ms), now_ms);
}

/* ------------------------------------------------------------- messages */

/* A new client's token: 16 bytes from getrandom(2) in hex; SDFED_ERR_IO
 * (no token) when the OS gives no randomness. */
static int random_token(char hex[33], sdfed_error *err) {
    unsigned char bytes[16];
    int rc = native_crypto_random(bytes, sizeof bytes, err);
    for (int i = 0; rc == SDFED_OK && i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
    return rc;
}

/* A client identified: its session is the client's. A connection it had
 * before goes (1001), and its going is no departure: the client goes on
 * here, in the round it was in. Refused when memory ran out (-1). */
static int attach(agg_handlers *h, agg_session *ss, int64_t id, int64_t now_ms) {
    if (id >= h->n_ids) {
        int64_t cap = h->n_ids ? h->n_ids : 1024;
        while (cap <= id) cap *= 2;
        agg_session **grown = realloc(h->by_id, sizeof *grown * (size_t)cap);
        if (!grown) {
            refuse(h, ss, SDFED_CODE_SERVER_ERROR, "out of memory", now_ms);
            return -1;
        }
        memset(grown + h->n_ids, 0, sizeof *grown * (size_t)(cap - h->n_ids));
        h->by_id = grown;
        h->n_ids = cap;
    }
    agg_session *old = h->by_id[id];
    if (old && old != ss) {
        old->client = -1;
        agg_session_close_after(old, LWS_CLOSE_STATUS_GOINGAWAY, "this client connected again", now_ms);
    }
    h->by_id[id] = ss;
    ss->client = id;
    return 0;
}

static void hello(agg_handlers *h, agg_session *ss, const sdfed_message *m, int64_t now_ms) {
    if (agg_session_said_hello(ss)) {
        refuse(h, ss, SDFED_CODE_BAD_MESSAGE, "hello was already said", now_ms);
        return;
    }
    int64_t locked_ms;
    if (agg_join_key_check(h->opt.join_key, h->opt.peers, &ss->address, m->join_key_len >= 0 ? m->join_key : NULL,
                           m->join_key_len >= 0 ? (size_t)m->join_key_len : 0, now_ms, &locked_ms) != JOIN_KEY_OK) {
        char message[128] = "this federation needs its join key";
        if (locked_ms > 0)
            snprintf(message, sizeof message, "too many wrong join keys from this address; try again in %lld s",
                     (long long)(locked_ms + 999) / 1000);
        refuse_after(h, ss, SDFED_CODE_BAD_JOIN_KEY, message, locked_ms, now_ms);
        return;
    }
    ss->binary = m->binary;
    int shard = m->shard;
    if (m->token[0]) {
        sdfed_error err = {0};
        int64_t id = -1;
        int stored_shard;
        if (agg_store_find_client(h->st, m->token, &id, &stored_shard, &err) || id < 0) {
            refuse(h, ss, SDFED_CODE_BAD_TOKEN, err.message[0] ? err.message : "this server never issued that token",
                   now_ms);
            return;
        }
        snprintf(ss->token, sizeof ss->token, "%s", m->token);
        if (attach(h, ss, id, now_ms) == 0) agg_federation_join(h->fed, id, shard < 0 ? stored_shard : shard, now_ms);
        return;
    }
    /* a new client: at most registrations_per_minute from one address, then
     * registered with the others that come within the batch's wait */
    int64_t wait_ms = agg_peers_register(h->opt.peers, &ss->address, now_ms);
    if (wait_ms > 0) {
        char message[192];
        snprintf(message, sizeof message,
                 "more than %d new clients from this address in a minute; try again in %lld s (a client that has a "
                 "token says hello with it)",
                 h->opt.registrations_per_minute, (long long)(wait_ms + 999) / 1000);
        refuse_after(h, ss, SDFED_CODE_RATE_LIMITED, message, wait_ms, now_ms);
        return;
    }
    sdfed_error token_err = {0};
    if (random_token(ss->token, &token_err)) {
        ss->token[0] = '\0';
        refuse(h, ss, SDFED_CODE_SERVER_ERROR, token_err.message, now_ms);
        return;
    }
    if (agg_federation_register(h->fed, ss, ss->token, shard, m->kind[0] ? m->kind : "browser", now_ms)) {
        ss->token[0] = '\0';
        refuse(h, ss, SDFED_CODE_SERVER_ERROR, "out of memory", now_ms);
    }
}

static void update(agg_handlers *h, agg_session *ss, int64_t round, int64_t samples, int n_dims, const uint32_t *shape,
                   const float *values, int64_t now_ms) {
    char message[256];
    sdfed_code code = agg_federation_update(h->fed, ss->client, round, samples, n_dims, shape, values, now_ms, message,
                                            sizeof message);
    if (code != SDFED_CODE_NONE) refuse(h, ss, code, message, now_ms);
}

static void text_message(agg_handlers *h, agg_session *ss, const char *text, size_t len, int64_t now_ms) {
    sdfed_message m;
    sdfed_code code = SDFED_CODE_BAD_MESSAGE;
    sdfed_error err = {0};
    if (sdfed_message_parse(text, len, SDFED_SENT_BY_CLIENT, h->opt.max_message_bytes / 4, &m, &code, &err)) {
        refuse(h, ss, code, err.message, now_ms);
        return;
    }
    if (ss->client < 0 && m.type != SDFED_MSG_HELLO) {
        refuse(h, ss, SDFED_CODE_BAD_MESSAGE, "say hello first", now_ms);
    } else {
        char message[256];
        switch (m.type) {
        case SDFED_MSG_HELLO: hello(h, ss, &m, now_ms); break;
        case SDFED_MSG_UPDATE: update(h, ss, m.round, m.samples, m.n_dims, m.shape, m.values, now_ms); break;
        case SDFED_MSG_METRICS: {
            agg_device_figures device = {.client = ss->client, .n_step_ms = m.n_step_ms, .threads = (int)m.threads};
            memcpy(device.step_ms, m.step_ms, sizeof device.step_ms);
            memcpy(device.kernels, m.kernels, sizeof device.kernels);
            if ((code = agg_federation_metrics(h->fed, ss->client, m.round, m.accuracy, m.loss, m.test_samples,
                                               m.n_step_ms ? &device : NULL, now_ms, message, sizeof message)) !=
                SDFED_CODE_NONE)
                refuse(h, ss, code, message, now_ms);
            break;
        }
        case SDFED_MSG_SECAGG_REFUSAL:
            if ((code = agg_federation_secagg_refusal(h->fed, ss->client, m.round, sdfed_code_from_name(m.code),
                                                      m.message, now_ms, message, sizeof message)) != SDFED_CODE_NONE)
                refuse(h, ss, code, message, now_ms);
            break;
        case SDFED_MSG_HEARTBEAT: send_to(ss, "{\"type\": \"heartbeat\"}", 21, 0); break;
        case SDFED_MSG_LEAVE: agg_session_close_after(ss, LWS_CLOSE_STATUS_NORMAL, "goodbye", now_ms); break;
        default: assert(0 && "the parser refuses a server's message from a client"); break;
        }
    }
    sdfed_message_free(&m);
}

/* A secure round's frame: its message to the federation, or its refusal. */
static void secure_frame(agg_handlers *h, agg_session *ss, const unsigned char *data, size_t len, int64_t now_ms) {
    const unsigned char *msg;
    size_t msg_len;
    sdfed_code code = SDFED_CODE_BAD_FRAME;
    sdfed_error err = {0};
    char message[256];
    if (sdfed_secure_frame_decode(data, len, &msg, &msg_len, &code, &err))
        refuse(h, ss, code, err.message, now_ms);
    else if ((code = agg_federation_secagg(h->fed, ss->client, msg, msg_len, now_ms, message, sizeof message)) !=
             SDFED_CODE_NONE)
        refuse(h, ss, code, message, now_ms);
}

static void binary_message(agg_handlers *h, agg_session *ss, const unsigned char *data, size_t len, int64_t now_ms) {
    sdfed_frame f;
    sdfed_code code = SDFED_CODE_BAD_FRAME;
    sdfed_error err = {0};
    if (ss->client < 0) {
        refuse(h, ss, SDFED_CODE_BAD_MESSAGE, "say hello first", now_ms);
        return;
    }
    if (sdfed_secure_frame_is(data, len)) {
        secure_frame(h, ss, data, len, now_ms);
        return;
    }
    if (sdfed_frame_decode(data, len, h->opt.max_message_bytes / 4, &f, &code, &err)) {
        refuse(h, ss, code, err.message, now_ms);
        return;
    }
    if (f.kind != SDFED_FRAME_UPDATE) {
        refuse(h, ss, SDFED_CODE_BAD_FRAME, "clients send update frames", now_ms);
        return;
    }
    float *values = malloc(sizeof *values * f.n_values);
    if (!values) {
        refuse(h, ss, SDFED_CODE_SERVER_ERROR, "out of memory", now_ms);
        return;
    }
    sdfed_frame_values(&f, values);
    update(h, ss, f.round, f.samples, f.n_dims, f.shape, values, now_ms);
    free(values);
}

/* ----------------------------------------------------------- public api */

void agg_handlers_message(agg_handlers *h, agg_session *ss, native_ws_rx rx, int64_t now_ms) {
    if (rx == WS_RX_MORE) return;
    if (ss->client < 0 && ss->token[0]) { /* its hello waits for its registration: answered first */
        agg_federation_register_now(h->fed, now_ms);
        deliver(h, now_ms);
    }
    if (rx != WS_RX_MESSAGE) {
        char message[96];
        snprintf(message, sizeof message, "%smessages are limited to %zu bytes",
                 ss->in.limit < h->opt.max_message_bytes ? "before hello, " : "", ss->in.limit);
        refuse(h, ss, SDFED_CODE_TOO_LARGE, message, now_ms);
        agg_session_close_after(ss, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, message, now_ms);
    } else if (!agg_session_rate_ok(ss, h->opt.rate_limit, h->opt.rate_window_ms, now_ms)) {
        char message[96];
        snprintf(message, sizeof message, "more than %d messages in %g s", h->opt.rate_limit,
                 (double)h->opt.rate_window_ms / 1000);
        refuse(h, ss, SDFED_CODE_RATE_LIMITED, message, now_ms);
    } else if (ss->in.binary) {
        binary_message(h, ss, ss->in.data, ss->in.len, now_ms);
    } else {
        text_message(h, ss, (const char *)ss->in.data, ss->in.len, now_ms);
    }
    agg_session_message_read(ss);
    deliver(h, now_ms);
}

void agg_handlers_gone(agg_handlers *h, agg_session *ss, int64_t now_ms) {
    if (h->fed) agg_federation_register_cancel(h->fed, ss);
    if (session_of(h, ss->client) != ss) return;
    h->by_id[ss->client] = NULL;
    if (!h->fed) return; /* shutting down: not a departure */
    /* a close frame from either side is a leaving; a connection that ended without one was lost, and so was a
     * page's whose browser closed it going away (1001: a reload, a tab closed), which may well come back */
    int left = ss->closing || (ss->peer_closed && !ss->going_away);
    agg_federation_leave(h->fed, ss->client, left ? FEDERATION_LEFT : FEDERATION_LOST, now_ms);
    deliver(h, now_ms);
}

void agg_handlers_tick(agg_handlers *h, int64_t now_ms) {
    if (!h->fed) return;
    agg_federation_tick(h->fed, now_ms);
    deliver(h, now_ms);
}

void agg_handlers_flush(agg_handlers *h, int64_t now_ms) {
    if (!h->fed) return;
    agg_federation_flush(h->fed, now_ms);
    deliver(h, now_ms);
}

int64_t agg_handlers_flush_in_ms(const agg_handlers *h, int64_t now_ms) {
    return h->fed ? agg_federation_flush_in_ms(h->fed, now_ms) : -1;
}

void agg_handlers_detach(agg_handlers *h) { h->fed = NULL; }

int agg_handlers_create(agg_handlers **out, const agg_handlers_options *opt, agg_federation *f, agg_store *st,
                        sdfed_error *err) {
    *out = NULL;
    agg_handlers *h = calloc(1, sizeof *h);
    if (!h) return sdfed_fail(err, SDFED_ERR_NOMEM, "handlers: out of memory");
    agg_federation_status s;
    agg_federation_get_status(f, &s);
    *h = (agg_handlers){.opt = *opt, .fed = f, .st = st, .async = s.async, .round_cached = -1};
    agg_store_watch_faults(st, on_store_fault, h);
    *out = h;
    return SDFED_OK;
}

void agg_handlers_destroy(agg_handlers *h) {
    if (!h) return;
    agg_store_watch_faults(h->st, NULL, NULL);
    free_round_messages(h);
    free(h->by_id);
    free(h);
}
