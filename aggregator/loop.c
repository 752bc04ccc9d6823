/* The lws context and its callbacks (see loop.h). */
#include "loop.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libwebsockets.h>

#include "fed/protocol.h"
#include "gate.h"
#include "native/clock.h"
#include "response.h"
#include "session.h"

struct agg_loop {
    agg_loop_options opt;
    struct lws_context *context;
    struct lws_vhost *vhost;
    agg_gate *gate; /* with TLS, for balancers' connections only */
    int tls;
    agg_http_site *site;
    agg_handlers *handlers;
    agg_peer_conn *adopting; /* the connection lws is being given (adopt) */
    lws_sorted_usec_list_t tick, flush;
    int64_t flush_at_ms; /* when the flush timer is set for, -1 when it is not */
    int64_t sweep_at_ms; /* when the keepalive sweep is next due */
    volatile int stop;
};

static int64_t now_ms(void) { return native_clock_ms(native_clock_monotonic_ns()); }

/* Accepted updates wait for their batch (agg_handlers_flush_in_ms): a timer
 * writes it when it is due, so the loop never waits for a batch to fill.
 * The timer is set again only when the batch is due sooner than it is set
 * for: setting one costs lws a walk through its sorted list of every
 * connection's timers, which at 10,000 connections is not to be paid on
 * every message. */
static void schedule_flush(agg_loop *l);

static void flush(lws_sorted_usec_list_t *sul) {
    agg_loop *l = lws_container_of(sul, agg_loop, flush);
    l->flush_at_ms = -1;
    agg_handlers_flush(l->handlers, now_ms());
    schedule_flush(l);
}

static void schedule_flush(agg_loop *l) {
    int64_t now = now_ms(), in_ms = agg_handlers_flush_in_ms(l->handlers, now);
    if (in_ms < 0 || (l->flush_at_ms >= 0 && l->flush_at_ms <= now + in_ms)) return;
    l->flush_at_ms = now + in_ms;
    lws_sul_schedule(l->context, 0, &l->flush, flush, (lws_usec_t)in_ms * LWS_US_PER_MS);
}

/* ------------------------------------------------ connections by address */

/* Every connection the server holds has a record (agg_peer_conn): made when
 * the listener accepts it, counted by its address (peers.h; a balancer's
 * connection by its client's, once the gate read its PROXY header), kept by
 * the gate while it checks the request, then by lws as the connection's
 * opaque user data, and given back when lws destroys the connection. */
static agg_peer_conn *conn_of(struct lws *wsi) { return lws_get_opaque_user_data(lws_get_network_wsi(wsi)); }

static void release(agg_loop *l, agg_peer_conn *c) {
    agg_peers_files_end(l->opt.peers, c->files); /* files cut short */
    if (c->counted) agg_peers_disconnect(l->opt.peers, &c->address, now_ms());
    free(c);
}

/* The connection counted by its address: 0, or 1 when it is refused (its
 * address holds too many, or the server and its reserve are full). */
static int count(agg_loop *l, agg_peer_conn *c) {
    agg_peers_admission admission = agg_peers_connect(l->opt.peers, &c->address, now_ms());
    if (admission == PEERS_ADDRESS_FULL || admission == PEERS_SERVER_FULL) return 1;
    c->counted = 1;
    c->in_reserve = admission == PEERS_IN_RESERVE;
    return 0;
}

/* Gives lws a connection and its record. When lws cannot take it, it
 * closes fd and the record is given back here, once: whether or not lws
 * reported the connection destroyed (which is ignored while adopting). */
static void adopt(agg_loop *l, int fd, agg_peer_conn *c) {
    const lws_adopt_desc_t desc = {.vh = l->vhost,
                                   .type = LWS_ADOPT_SOCKET | LWS_ADOPT_HTTP | LWS_ADOPT_ALLOW_SSL,
                                   .fd = {.sockfd = fd},
                                   .opaque = c};
    l->adopting = c;
    struct lws *wsi = lws_adopt_descriptor_vhost_via_info(&desc);
    l->adopting = NULL;
    if (!wsi) release(l, c);
}

static void gate_passed(void *ctx, int fd, void *tag) { adopt(ctx, fd, tag); }
static void gate_closed(void *ctx, void *tag) { release(ctx, tag); }

/* A balancer's connection, its client named: counted by the client's address
 * (the balancer's own for its health checks). */
static int gate_relayed(void *ctx, void *tag, const agg_proxy_header *header) {
    agg_peer_conn *c = tag;
    if (header->relayed) c->address = agg_peers_address((const struct sockaddr *)&header->client);
    return count(ctx, c);
}

/* A connection the listener accepted: counted by its address (a balancer's
 * once the gate has read whose it relays), then the gate's (plain HTTP, and
 * a balancer's) or lws's with its record; or refused, closed at once
 * unanswered. Returns 1: lws closes its own descriptor of it. */
static int admit(agg_loop *l, int fd) {
    struct sockaddr_storage sa;
    socklen_t n = sizeof sa;
    if (getpeername(fd, (struct sockaddr *)&sa, &n) != 0) return 1;
    agg_peer_conn *c = malloc(sizeof *c);
    if (!c) return 1;
    *c = (agg_peer_conn){.address = agg_peers_address((const struct sockaddr *)&sa)};
    int relayed = agg_proxy_balancers_hold(&l->opt.balancers, (const struct sockaddr *)&sa);
    if (!relayed && count(l, c)) {
        free(c);
        return 1;
    }
    if (relayed || !l->tls) {
        agg_gate_take(l->gate, fd, c, relayed, now_ms());
        return 1;
    }
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0); /* TLS: lws's again at once, with the record */
    if (own < 0)
        release(l, c);
    else
        adopt(l, own, c);
    return 1;
}

/* ----------------------------------------------------------- callbacks */

static int sdfed_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    agg_session *ss = user;
    agg_loop *l = lws_context_user(lws_get_context(wsi));
    switch (reason) {
    case LWS_CALLBACK_ESTABLISHED: {
        const agg_peer_conn *c = conn_of(wsi);
        agg_session_open(ss, wsi, c ? &c->address : NULL, l->opt.max_message_bytes, now_ms());
        break;
    }
    case LWS_CALLBACK_RECEIVE:
        agg_handlers_message(l->handlers, ss, agg_session_receive(ss, in, len, now_ms()), now_ms());
        schedule_flush(l);
        break;
    case LWS_CALLBACK_RECEIVE_PONG: agg_session_heard(ss, now_ms()); break;
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE: /* lws answers it */
        agg_session_heard_close(ss, in, len, now_ms());
        break;
    case LWS_CALLBACK_USER: { /* the sweep's visit (sweep), `in` the time: the keepalive, the hello's deadline */
        int64_t now = *(const int64_t *)in;
        if (!ss->wsi) break;
        if (agg_session_sweep(ss, &l->opt.keepalive, now)) {
            lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        } else if (agg_session_hello_overdue(ss, l->opt.hello_timeout_ms, now)) {
            char why[64];
            snprintf(why, sizeof why, "no hello within %g s", (double)l->opt.hello_timeout_ms / 1000);
            agg_peers_refused(l->opt.peers, PEERS_REFUSED_NO_HELLO);
            agg_session_close_after(ss, LWS_CLOSE_STATUS_POLICY_VIOLATION, why, now);
        }
        break;
    }
    case LWS_CALLBACK_SERVER_WRITEABLE: return agg_session_writable(ss, now_ms());
    case LWS_CALLBACK_TIMER: lws_callback_on_writable(wsi); break;
    case LWS_CALLBACK_CLOSED:
        agg_handlers_gone(l->handlers, ss, now_ms());
        agg_session_free(ss);
        break;
    default: break;
    }
    return 0;
}

/* WebSocket keepalive and hello deadlines, once a second over every
 * session (agg_session_sweep, agg_session_hello_overdue).
 * Not lws's validity timers: lws keeps those in one list sorted by time,
 * so each new connection's walked the whole list, and past 9,000
 * connections the server did little else. */
static void sweep(agg_loop *l, int64_t now) {
    if (now < l->sweep_at_ms) return;
    l->sweep_at_ms = now + 1000;
    lws_callback_all_protocol_vhost_args(l->vhost, lws_vhost_name_to_protocol(l->vhost, SDFED_PROTOCOL),
                                         LWS_CALLBACK_USER, &now, 0);
}

static void tick(lws_sorted_usec_list_t *sul) {
    agg_loop *l = lws_container_of(sul, agg_loop, tick);
    sweep(l, now_ms());
    agg_gate_expire(l->gate, now_ms());
    agg_peers_expire(l->opt.peers, now_ms());
    agg_handlers_tick(l->handlers, now_ms());
    schedule_flush(l);
    lws_sul_schedule(l->context, 0, &l->tick, tick, 200 * LWS_US_PER_MS);
}

/* Whether a WebSocket upgrade offers sdfed.v1 among its subprotocols
 * (Sec-WebSocket-Protocol, a comma-separated list). */
static int offers_sdfed(struct lws *wsi) {
    char list[256];
    if (lws_hdr_copy(wsi, list, sizeof list, WSI_TOKEN_PROTOCOL) <= 0) return 0;
    for (char *name = list; *name;) {
        name += strspn(name, " \t,");
        size_t n = strcspn(name, " \t,");
        if (n == strlen(SDFED_PROTOCOL) && strncmp(name, SDFED_PROTOCOL, n) == 0) return 1;
        name += n;
    }
    return 0;
}

/* A header's value into out (cap bytes); NULL when the request has none,
 * "" when it does not fit. */
static const char *header(struct lws *wsi, enum lws_token_indexes token, char *out, int cap) {
    if (lws_hdr_total_length(wsi, token) <= 0) return NULL;
    if (lws_hdr_copy(wsi, out, cap, token) < 0) out[0] = '\0';
    return out;
}

/* Refuses an upgrade before lws answers it: status with a line (and one
 * header more when header is set), then the hang-up. */
static int refuse_upgrade(struct lws *wsi, int status, const char *why, const char *header, const char *value) {
    char response[LWS_PRE + RESPONSE_HEAD_MAX];
    int n = agg_response_text_bytes(response + LWS_PRE, sizeof response - LWS_PRE, status, why, header, value);
    if (n > 0) lws_write(wsi, (unsigned char *)response + LWS_PRE, (size_t)n, LWS_WRITE_HTTP_HEADERS);
    return -1;
}

/* An upgrade without sdfed.v1 is answered 400 with a line saying so (lws
 * would bind it to the first protocol, or drop it silently); one from a
 * page of another origin 403; one that came in the reserve (the server is
 * full) 503. */
static int confirm_upgrade(agg_loop *l, struct lws *wsi) {
    char path[256] = "";
    if (lws_hdr_copy(wsi, path, sizeof path, WSI_TOKEN_GET_URI) <= 0 || strcmp(path, SDFED_WEBSOCKET_PATH))
        return refuse_upgrade(wsi, HTTP_STATUS_BAD_REQUEST,
                              "the sdfed.v1 WebSocket is at " SDFED_WEBSOCKET_PATH
                              " (ws://HOST:PORT" SDFED_WEBSOCKET_PATH ", or wss://)",
                              NULL, NULL);
    if (!offers_sdfed(wsi))
        return refuse_upgrade(wsi, HTTP_STATUS_BAD_REQUEST,
                              "this WebSocket speaks only the " SDFED_PROTOCOL
                              " subprotocol (Sec-WebSocket-Protocol: " SDFED_PROTOCOL ")",
                              NULL, NULL);
    const agg_peer_conn *c = conn_of(wsi);
    if (c && c->in_reserve) {
        agg_peers_refused(l->opt.peers, PEERS_REFUSED_RESERVE);
        return refuse_upgrade(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE, agg_http_reserve_refusal, "retry-after",
                              agg_http_reserve_retry_s);
    }
    char origin_text[ORIGIN_MAX], host_text[ORIGIN_MAX], why[ORIGIN_MAX + 160];
    const char *origin = header(wsi, WSI_TOKEN_ORIGIN, origin_text, sizeof origin_text);
    if (agg_origins_let_in(l->opt.origins, origin, header(wsi, WSI_TOKEN_HOST, host_text, sizeof host_text))) return 0;
    agg_peers_refused(l->opt.peers, PEERS_REFUSED_ORIGIN);
    snprintf(why, sizeof why,
             "this WebSocket is for the pages of this server: a page of %.*s may not open it (its host allows others "
             "with --allow-origin)",
             ORIGIN_MAX, origin);
    return refuse_upgrade(wsi, HTTP_STATUS_FORBIDDEN, why, NULL, NULL);
}

/* The first protocol also hears lws's listener and the gate's descriptor:
 * a new connection is counted (admit) and goes to the gate (TLS ones
 * excepted), which hands it to lws once its request is checked; the end of
 * every connection; and WebSocket upgrades, refused unless they offer
 * sdfed.v1 from a page that may. */
static int front_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    agg_loop *l = lws_context_user(lws_get_context(wsi));
    switch (reason) {
    case LWS_CALLBACK_FILTER_NETWORK_CONNECTION: return admit(l, (int)(intptr_t)in);
    case LWS_CALLBACK_WSI_DESTROY: { /* every connection's end, WebSockets' too */
        agg_peer_conn *c = lws_get_opaque_user_data(wsi);
        if (c && c != l->adopting) release(l, c);
        return 0;
    }
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: return confirm_upgrade(l, wsi);
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: return -1; /* a client that listed "http" before sdfed.v1 */
    case LWS_CALLBACK_RAW_RX_FILE: agg_gate_service(l->gate); return 0;
    default: return agg_http_serve(l->site, wsi, conn_of(wsi), reason, user, in, len);
    }
}

static const struct lws_protocols protocols[] = {
    {.name = "http", .callback = front_callback},
    {.name = SDFED_PROTOCOL,
     .callback = sdfed_callback,
     .per_session_data_size = sizeof(agg_session),
     .rx_buffer_size = 65536},
    {NULL, NULL, 0, 0, 0, NULL, 0}, /* end of the list */
};

/* No validity timers from lws (a hang-up time of 0 turns them off): the
 * keepalive is the sweep's. */
static const lws_retry_bo_t no_validity_timers = {.secs_since_valid_hangup = 0};

static int is_ipv4(const char *host) {
    unsigned char address[sizeof(struct in_addr)];
    return host && inet_pton(AF_INET, host, address) == 1;
}

int agg_loop_resolve_host(const char *host, char *address, size_t cap, sdfed_error *err) {
    unsigned char bytes[sizeof(struct in6_addr)];
    if (!host) return snprintf(address, cap, "*") < (int)cap ? SDFED_OK : SDFED_ERR_ARG;
    if (is_ipv4(host) || inet_pton(AF_INET6, host, bytes) == 1 || if_nametoindex(host) > 0)
        return snprintf(address, cap, "%s", host) < (int)cap ? SDFED_OK
                                                             : sdfed_fail(err, SDFED_ERR_ARG, "--host: too long");
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *found = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &found);
    if (rc)
        return sdfed_fail(err, SDFED_ERR_ARG, "--host %s is not an address, an interface or a name that resolves (%s)",
                          host, gai_strerror(rc));
    rc = getnameinfo(found->ai_addr, found->ai_addrlen, address, (socklen_t)cap, NULL, 0, NI_NUMERICHOST);
    freeaddrinfo(found);
    return rc ? sdfed_fail(err, SDFED_ERR_ARG, "--host %s: %s", host, gai_strerror(rc)) : SDFED_OK;
}

int agg_loop_create(agg_loop **out, const agg_loop_options *opt, agg_http_site *site, agg_handlers *h,
                    sdfed_error *err) {
    *out = NULL;
    int rc;
    agg_loop *l = calloc(1, sizeof *l);
    if (!l) return sdfed_fail(err, SDFED_ERR_NOMEM, "server: out of memory");
    l->opt = *opt;
    l->tls = opt->cert && opt->key;
    l->site = site;
    l->handlers = h;
    l->flush_at_ms = -1;
    lws_set_log_level(LLL_ERR, NULL);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = opt->port;
    info.iface = opt->host;
    info.protocols = protocols;
    info.user = l;
    info.vhost_name = "sdfed";
    info.timeout_secs_ah_idle = (unsigned)opt->header_timeout_s;
    info.timeout_secs = (unsigned)opt->header_timeout_s;
    /* room for every request the gate lets through: lws keeps each of its
     * (at most 64) headers with at most 8 bytes of its own and a NUL (over
     * TLS, where the gate is not, a request that does not fit is dropped) */
    info.max_http_header_data = (unsigned short)(opt->max_header_bytes + 1024);
    info.retry_and_idle_policy = &no_validity_timers;
    /* text frames that are not UTF-8 fail the connection with 1007 before a
     * callback sees them (RFC 6455 8.1) */
    info.options = LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND | LWS_SERVER_OPTION_VALIDATE_UTF8 |
                   (is_ipv4(opt->host) ? LWS_SERVER_OPTION_DISABLE_IPV6 : 0);
    if (opt->cert && opt->key) {
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
        info.ssl_cert_filepath = opt->cert;
        info.ssl_private_key_filepath = opt->key;
    }
    l->context = lws_create_context(&info);
    if (!l->context) {
        free(l);
        return sdfed_fail(err, SDFED_ERR_IO, "server: cannot listen on %s:%d (in use, or a bad certificate?)",
                          opt->host ? opt->host : "*", opt->port);
    }
    l->vhost = lws_get_vhost_by_name(l->context, info.vhost_name);
    rc = l->vhost ? SDFED_OK : sdfed_fail(err, SDFED_ERR_IO, "server: lws made no vhost");
    const agg_gate_owner owner = {.ctx = l, .pass = gate_passed, .closed = gate_closed, .relayed = gate_relayed};
    if (rc == SDFED_OK)
        rc = agg_gate_open(&l->gate, l->vhost, &owner, opt->header_timeout_s, opt->max_header_bytes, l->tls, err);
    if (rc) {
        agg_loop_destroy(l);
        return rc;
    }
    lws_sul_schedule(l->context, 0, &l->tick, tick, 200 * LWS_US_PER_MS);
    *out = l;
    return SDFED_OK;
}

int agg_loop_port(const agg_loop *l) { return lws_get_vhost_listen_port(l->vhost); }

int agg_loop_run(agg_loop *l) {
    while (!l->stop)
        if (lws_service(l->context, 0) < 0) return SDFED_ERR_IO;
    return SDFED_OK;
}

void agg_loop_stop(agg_loop *l) {
    l->stop = 1;
    if (l->context) lws_cancel_service(l->context);
}

void agg_loop_destroy(agg_loop *l) {
    if (!l) return;
    agg_handlers_detach(l->handlers); /* connections closed by the shutdown are not departures */
    lws_context_destroy(l->context);
    agg_gate_close(l->gate);
    free(l);
}
