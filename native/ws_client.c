/* sdfed.v1 client connections on libwebsockets (see ws_client.h). */
#include "native/ws_client.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "fed/protocol.h"

int native_ws_url_parse(native_ws_url *u, const char *url, sdfed_error *err) {
    char buf[512];
    const char *scheme, *address, *path;
    int port;
    if (strlen(url) >= sizeof buf) return sdfed_fail(err, SDFED_ERR_ARG, "the URL %.40s... is too long", url);
    snprintf(buf, sizeof buf, "%s", url);
    if (lws_parse_uri(buf, &scheme, &address, &port, &path) || (strcmp(scheme, "ws") && strcmp(scheme, "wss")))
        return sdfed_fail(err, SDFED_ERR_ARG, "%s is not a ws:// or wss:// URL", url);
    u->tls = strcmp(scheme, "wss") == 0;
    u->port = port;
    snprintf(u->address, sizeof u->address, "%s", address);
    path += strspn(path, "/"); /* lws gives "/" for a URL without a path, else the path without its '/' */
    if (path[0])
        snprintf(u->path, sizeof u->path, "/%s", path);
    else
        snprintf(u->path, sizeof u->path, "%s", SDFED_WEBSOCKET_PATH);
    return SDFED_OK;
}

/* The connection is over (closed, or never made): tell the program. */
static void ended(native_ws_conn *conn, const char *why) {
    int was_open = conn->state == WS_CONN_OPEN;
    conn->state = WS_CONN_IDLE;
    conn->closing = 0;
    conn->wsi = NULL;
    if (!conn->client->stopping) conn->client->on.closed(conn, was_open, why);
}

/* Ends the connection from a callback with a close frame (1000 normal: it
 * leaves on purpose; 1001, going away, is a browser's close of a page that
 * may come back, and keeps its place in a round); lws sends one only as a
 * callback's -1 closes it. */
static int close_from_callback(struct lws *wsi) {
    lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
    return -1;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    native_ws_conn *conn = user;
    switch (reason) {
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        conn->state = WS_CONN_OPEN;
        conn->wsi = wsi;
        conn->client->on.connected(conn);
        if (conn->out.count) lws_callback_on_writable(wsi);
        break;
    case LWS_CALLBACK_CLIENT_RECEIVE: {
        native_ws_rx rx = native_ws_reassembly_add(&conn->in, native_ws_fragment_of(wsi, in, len));
        /* a connection that is closing delivers nothing more: what comes was for it */
        if (rx != WS_RX_MORE && !conn->closing && conn->client->on.message(conn, rx)) return close_from_callback(wsi);
        break;
    }
    case LWS_CALLBACK_CLIENT_WRITEABLE:
        if (!conn->out.count && conn->closing) return close_from_callback(wsi);
        if (native_ws_send_queue_write_next(&conn->out, wsi)) return -1;
        if (conn->out.count || conn->closing) lws_callback_on_writable(wsi);
        break;
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
    case LWS_CALLBACK_CLIENT_CLOSED:
        /* lws may report the end of a connection more than once */
        if (conn && conn->state != WS_CONN_IDLE) {
            const char *why = reason == LWS_CALLBACK_CLIENT_CLOSED ? "closed" : "connection error";
            ended(conn, in ? (const char *)in : why);
        }
        break;
    default: break;
    }
    return 0;
}

static const struct lws_protocols protocols[] = {
    {.name = SDFED_PROTOCOL, .callback = callback, .rx_buffer_size = 65536},
    {NULL, NULL, 0, 0, 0, NULL, 0}, /* end of the list */
};

int native_ws_client_start(native_ws_client *c, const native_ws_url *server, int max_connections,
                           size_t max_message_bytes, const native_ws_client_handlers *on, sdfed_error *err) {
    *c = (native_ws_client){.server = *server, .on = *on, .max_message_bytes = max_message_bytes};
    lws_set_log_level(LLL_ERR, NULL);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = protocols;
    info.fd_limit_per_thread = (unsigned)max_connections + 64;
    if (server->tls) info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
    c->context = lws_create_context(&info);
    if (!c->context) return sdfed_fail(err, SDFED_ERR_IO, "cannot create the libwebsockets context");
    return SDFED_OK;
}

int native_ws_client_service(native_ws_client *c) { return lws_service(c->context, 0); }

void native_ws_client_stop(native_ws_client *c) {
    c->stopping = 1;
    if (c->context) lws_context_destroy(c->context);
    c->context = NULL;
}

void native_ws_conn_init(native_ws_conn *conn, native_ws_client *client, void *user) {
    *conn = (native_ws_conn){.client = client, .user = user};
    native_ws_reassembly_init(&conn->in, client->max_message_bytes);
}

static void connect_now(lws_sorted_usec_list_t *sul) {
    native_ws_conn *conn = lws_container_of(sul, native_ws_conn, connect_timer);
    const native_ws_url *u = &conn->client->server;
    struct lws_client_connect_info ci;
    memset(&ci, 0, sizeof ci);
    ci.context = conn->client->context;
    ci.address = u->address;
    ci.port = u->port;
    ci.path = u->path;
    ci.host = u->address;
    ci.origin = u->address;
    ci.protocol = SDFED_PROTOCOL;
    ci.ssl_connection = u->tls ? LCCSCF_USE_SSL | LCCSCF_ALLOW_SELFSIGNED | LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK : 0;
    ci.userdata = conn;
    ci.pwsi = &conn->wsi;
    conn->state = WS_CONN_CONNECTING;
    /* a connection lws gives up on at once may or may not have said so
     * through CONNECTION_ERROR already */
    if (!lws_client_connect_via_info(&ci) && conn->state == WS_CONN_CONNECTING)
        ended(conn, "the connection could not be started");
}

void native_ws_conn_connect(native_ws_conn *conn, int64_t delay_us) {
    assert(conn->state == WS_CONN_IDLE);
    lws_sul_schedule(conn->client->context, 0, &conn->connect_timer, connect_now, (lws_usec_t)delay_us);
}

int native_ws_conn_send(native_ws_conn *conn, const void *data, size_t len, int binary, sdfed_error *err) {
    int status = native_ws_send_queue_push(&conn->out, data, len, binary, err);
    if (status == SDFED_OK && conn->state == WS_CONN_OPEN) lws_callback_on_writable(conn->wsi);
    return status;
}

void native_ws_conn_close(native_ws_conn *conn) {
    if (conn->state != WS_CONN_OPEN) return;
    conn->closing = 1; /* the close frame goes from the writable callback: it leaves on purpose */
    lws_callback_on_writable(conn->wsi);
}

void native_ws_conn_leave(native_ws_conn *conn, int timeout_ms) {
    native_ws_conn_close(conn);
    lws_usec_t end = lws_now_usecs() + (lws_usec_t)timeout_ms * 1000;
    while (conn->state == WS_CONN_OPEN && lws_now_usecs() < end && native_ws_client_service(conn->client) >= 0) {
    }
}

void native_ws_conn_free(native_ws_conn *conn) {
    native_ws_send_queue_clear(&conn->out);
    native_ws_reassembly_free(&conn->in);
}
