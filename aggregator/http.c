/* HTTP routes of the aggregator (see http.h). */
#include "http.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fed/protocol.h"
#include "native/svg_chart.h"
#include "server.h"

/* A plain-HTTP connection carries one request: the next comes on a new
 * connection, whose request line the gate checks before lws parses it
 * (gate.h). TLS connections, which the gate does not see, keep lws's
 * keep-alive (and HTTP/2, where a Connection header is malformed). */
static int one_request(struct lws *wsi) { return !lws_is_ssl(lws_get_network_wsi(wsi)); }

/* What the callback returns once a response is complete. */
static int completed(struct lws *wsi) { return one_request(wsi) || lws_http_transaction_completed(wsi) ? -1 : 0; }

/* Headers every response carries: cross-origin isolation (so the page can
 * use threads) and no content sniffing; and Connection: close when the
 * connection closes after it. */
static const struct {
    const char *name, *value;
} common_headers[] = {{"cross-origin-opener-policy:", "same-origin"},
                      {"cross-origin-embedder-policy:", "require-corp"},
                      {"cross-origin-resource-policy:", "same-origin"},
                      {"x-content-type-options:", "nosniff"}};

static int add_header(struct lws *wsi, const char *name, const char *value, unsigned char **p, unsigned char *end) {
    return lws_add_http_header_by_name(wsi, (const unsigned char *)name, (const unsigned char *)value,
                                       (int)strlen(value), p, end);
}

static int add_common(struct lws *wsi, unsigned char **p, unsigned char *end) {
    for (size_t i = 0; i < sizeof common_headers / sizeof common_headers[0]; i++)
        if (add_header(wsi, common_headers[i].name, common_headers[i].value, p, end)) return 1;
    return one_request(wsi) && add_header(wsi, "connection:", "close", p, end);
}

int http_text_response(char *out, size_t cap, int status, const char *text) {
    const char *reason = status == HTTP_STATUS_METHOD_NOT_ALLOWED ? "Method Not Allowed" : "Bad Request";
    size_t body = strlen(text) + 1;
    int n = snprintf(out, cap,
                     "HTTP/1.1 %d %s\r\ncontent-type: text/plain\r\ncontent-length: %zu\r\n"
                     "cache-control: no-store\r\nconnection: close\r\n",
                     status, reason, body);
    for (size_t i = 0; n >= 0 && (size_t)n < cap && i < sizeof common_headers / sizeof common_headers[0]; i++)
        n += snprintf(out + n, cap - (size_t)n, "%s %s\r\n", common_headers[i].name, common_headers[i].value);
    if (n >= 0 && (size_t)n < cap) n += snprintf(out + n, cap - (size_t)n, "\r\n%s\n", text);
    return n >= 0 && (size_t)n < cap ? n : -1;
}

/* A complete response from memory. */
static int respond(struct lws *wsi, int status, const char *type, const char *body, size_t len, const char *cache) {
    unsigned char head[LWS_PRE + 1024], *start = head + LWS_PRE, *p = start, *end = head + sizeof head - 1;
    if (lws_add_http_common_headers(wsi, (unsigned)status, type, len, &p, end) || add_common(wsi, &p, end) ||
        (cache && add_header(wsi, "cache-control:", cache, &p, end)) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
        return 1;
    if (len) {
        unsigned char *out = malloc(LWS_PRE + len);
        if (!out) return 1;
        memcpy(out + LWS_PRE, body, len);
        int written = lws_write(wsi, out + LWS_PRE, len, LWS_WRITE_HTTP_FINAL);
        free(out);
        if (written < 0) return 1;
    }
    return completed(wsi);
}

static int not_found(struct lws *wsi) {
    static const char body[] = "not found\n";
    return respond(wsi, HTTP_STATUS_NOT_FOUND, "text/plain", body, sizeof body - 1, "no-store");
}

static const char *mime_of(const char *path) {
    static const struct {
        const char *ext, *mime;
    } types[] = {{".html", "text/html; charset=utf-8"},
                 {".js", "text/javascript"},
                 {".mjs", "text/javascript"},
                 {".wasm", "application/wasm"},
                 {".css", "text/css"},
                 {".json", "application/json"},
                 {".svg", "image/svg+xml"},
                 {".png", "image/png"},
                 {".gguf", "application/octet-stream"},
                 {".ico", "image/x-icon"}};
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (strcmp(dot, types[i].ext) == 0) return types[i].mime;
    return "application/octet-stream";
}

/* A URL path that names a file below a folder: no "..", no hidden files,
 * no backslashes, nothing but a plain relative path. */
static int safe_path(const char *path) {
    if (!*path || strlen(path) > 512) return 0;
    for (const char *p = path; *p; p++)
        if (*p == '\\' || (unsigned char)*p < 0x20 || (*p == '.' && (p == path || p[-1] == '/'))) return 0;
    return 1;
}

/* Serves a file with the common headers and, when etag is set, caching for
 * a year (the content is named by its hash). */
static int serve_file(struct lws *wsi, const char *file, const char *etag) {
    struct stat st;
    if (stat(file, &st) != 0 || !S_ISREG(st.st_mode)) return not_found(wsi);
    unsigned char extra[512], *p = extra, *end = extra + sizeof extra;
    if (add_common(wsi, &p, end)) return 1;
    const char *cache = etag ? "public, max-age=31536000, immutable" : "no-cache";
    if (add_header(wsi, "cache-control:", cache, &p, end)) return 1;
    if (etag) {
        char quoted[80], match[96] = "";
        snprintf(quoted, sizeof quoted, "\"%s\"", etag);
        if (lws_hdr_copy(wsi, match, sizeof match, WSI_TOKEN_HTTP_IF_NONE_MATCH) > 0 && strstr(match, etag))
            return respond(wsi, HTTP_STATUS_NOT_MODIFIED, NULL, NULL, 0, cache);
        if (add_header(wsi, "etag:", quoted, &p, end)) return 1;
    }
    /* 0: the file goes out as the socket takes it, then comes
     * LWS_CALLBACK_HTTP_FILE_COMPLETION */
    int n = lws_serve_http_file(wsi, file, mime_of(file), (const char *)extra, (int)(p - extra));
    return n < 0 ? -1 : n > 0 ? completed(wsi) : 0;
}

void http_site_free(http_site *site) {
    free(site->history.rounds), free(site->history.clients), free(site->history.accuracy);
    memset(&site->history, 0, sizeof site->history);
}

static void update_history(http_site *site, const federation_status *st) {
    int64_t now = server_now_ms();
    if (site->history.valid &&
        (st->metrics_stored == site->history.metrics_seen || now - site->history.read_at_ms < 1000))
        return;
    int64_t *rounds, *clients;
    double *accuracy;
    int n;
    if (store_accuracy_history(site->st, &rounds, &accuracy, &clients, &n, NULL)) return; /* keep the last one */
    http_site_free(site);
    site->history.rounds = rounds, site->history.clients = clients, site->history.accuracy = accuracy;
    site->history.n = n, site->history.valid = 1;
    site->history.metrics_seen = st->metrics_stored, site->history.read_at_ms = now;
}

static int status_json(struct lws *wsi, http_site *site) {
    federation_status st;
    federation_get_status(site->fed, &st);
    int64_t registered = 0;
    store_count_clients(site->st, &registered, NULL);
    update_history(site, &st);
    const int64_t *rounds = site->history.rounds, *clients = site->history.clients;
    const double *accuracy = site->history.accuracy;
    int n = site->history.n;
    sdfed_buffer b = {0}, history = {0};
    sdfed_sink sink = sdfed_buffer_sink(&history);
    sink.write(sink.ctx, "[", 1);
    for (int i = 0; i < n; i++) {
        char item[128];
        int len = snprintf(item, sizeof item, "%s{\"round\": %lld, \"accuracy\": %.6f, \"clients\": %lld}",
                           i ? ", " : "", (long long)rounds[i], accuracy[i], (long long)clients[i]);
        sink.write(sink.ctx, item, (size_t)len);
    }
    sink.write(sink.ctx, "]", 1);
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &b, NULL);
    sdfed_jw_int(&w, "round", st.round);
    sdfed_jw_int(&w, "rounds", st.rounds);
    sdfed_jw_string(&w, "mode", st.async ? "async" : "sync");
    sdfed_jw_int(&w, "clients", st.connected);
    sdfed_jw_int(&w, "clients_registered", registered);
    sdfed_jw_int(&w, "round_open", st.open);
    sdfed_jw_int(&w, "participants", st.participants);
    sdfed_jw_int(&w, "reported", st.reported);
    sdfed_jw_int(&w, "done", st.done);
    sdfed_jw_string(&w, "global_prompt_sha256", st.global_sha256);
    sdfed_jw_int(&w, "updates_accepted", st.updates_accepted);
    sdfed_jw_int(&w, "rounds_closed", st.rounds_closed);
    sdfed_jw_string(&w, "model_sha256", site->model_sha256);
    sdfed_jw_raw(&w, "accuracy", (const char *)history.data, history.size);
    int rc = sdfed_jw_end(&w, NULL)
                 ? 1
                 : respond(wsi, HTTP_STATUS_OK, "application/json", (const char *)b.data, b.size, "no-store");
    sdfed_buffer_free(&b);
    sdfed_buffer_free(&history);
    return rc;
}

static void append(sdfed_buffer *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void append(sdfed_buffer *b, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    sdfed_sink sink = sdfed_buffer_sink(b);
    if (n > 0) sink.write(sink.ctx, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static int metrics_text(struct lws *wsi, http_site *site) {
    federation_status st;
    federation_get_status(site->fed, &st);
    sdfed_buffer b = {0};
    append(&b, "# HELP sdfed_clients Clients connected now.\n# TYPE sdfed_clients gauge\nsdfed_clients %lld\n",
           (long long)st.connected);
    append(&b,
           "# HELP sdfed_round The current round (sync) or version (async).\n# TYPE sdfed_round gauge\n"
           "sdfed_round %lld\n",
           (long long)st.round);
    append(&b,
           "# HELP sdfed_rounds_closed_total Rounds aggregated by this process.\n"
           "# TYPE sdfed_rounds_closed_total counter\nsdfed_rounds_closed_total %lld\n",
           (long long)st.rounds_closed);
    append(&b,
           "# HELP sdfed_updates_accepted_total Updates stored and acknowledged.\n"
           "# TYPE sdfed_updates_accepted_total counter\nsdfed_updates_accepted_total %lld\n",
           (long long)st.updates_accepted);
    append(&b, "# HELP sdfed_updates_refused_total Messages refused, by reason.\n"
               "# TYPE sdfed_updates_refused_total counter\n");
    for (int i = 0; i < SDFED_CODE_COUNT; i++)
        append(&b, "sdfed_updates_refused_total{reason=\"%s\"} %lld\n", sdfed_code_name(i), (long long)st.refused[i]);
    append(&b,
           "# HELP sdfed_store_failing 1 while the store fails (a full disk): from a failed operation to the next "
           "write that commits.\n# TYPE sdfed_store_failing gauge\nsdfed_store_failing %d\n"
           "# HELP sdfed_store_failures_total Store operations that failed.\n"
           "# TYPE sdfed_store_failures_total counter\nsdfed_store_failures_total %lld\n",
           store_failing(site->st), (long long)store_failures(site->st));
    append(&b,
           "# HELP sdfed_aggregation_seconds Time spent aggregating.\n# TYPE sdfed_aggregation_seconds summary\n"
           "sdfed_aggregation_seconds_sum %.6f\nsdfed_aggregation_seconds_count %lld\n"
           "# HELP sdfed_aggregation_last_seconds The last aggregation's time.\n"
           "# TYPE sdfed_aggregation_last_seconds gauge\nsdfed_aggregation_last_seconds %.6f\n",
           st.total_aggregation_ms / 1e3, (long long)st.rounds_closed, st.last_aggregation_ms / 1e3);
    int rc = respond(wsi, HTTP_STATUS_OK, "text/plain; version=0.0.4", (const char *)b.data, b.size, "no-store");
    sdfed_buffer_free(&b);
    return rc;
}

/* The status page: the round, the clients and the accuracy they report per
 * round as an SVG chart; it reloads every 5 s. */
static int status_page(struct lws *wsi, http_site *site) {
    federation_status st;
    federation_get_status(site->fed, &st);
    update_history(site, &st);
    const double *accuracy = site->history.accuracy;
    int n = site->history.n;
    sdfed_buffer b = {0};
    append(&b, "<!doctype html><html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"5\">"
               "<title>sdfed aggregator</title><style>body{font-family:sans-serif;margin:2em;color:#222}"
               "td{padding:2px 12px}</style></head><body><h1>sdfed aggregator</h1><table>");
    append(&b, "<tr><td>round</td><td>%lld of %lld%s</td></tr>", (long long)st.round, (long long)st.rounds,
           st.done   ? " (done)"
           : st.open ? " (open)"
                     : "");
    append(&b, "<tr><td>mode</td><td>%s</td></tr><tr><td>clients connected</td><td>%lld</td></tr>",
           st.async ? "asynchronous" : "synchronous", (long long)st.connected);
    append(&b, "<tr><td>this round</td><td>%lld of %lld chosen clients reported</td></tr>", (long long)st.reported,
           (long long)st.participants);
    append(&b,
           "<tr><td>updates accepted</td><td>%lld</td></tr><tr><td>global prompt sha256</td><td><code>%s</code>"
           "</td></tr></table>",
           (long long)st.updates_accepted, st.global_sha256);
    char x_label[64];
    snprintf(x_label, sizeof x_label, "round (%d reported)", n);
    svg_chart chart = {.width = 640, .height = 300, .left = 50, .right = 20, .top = 20, .bottom = 30,
                       .font_size = 11, .standalone = 0, .x_label = x_label, .n = n, .line = accuracy};
    append(&b, "<h2>Accuracy the clients report</h2>");
    sdfed_error chart_err;
    int failed = svg_chart_write(&b, &chart, &chart_err);
    append(&b, "<p><a href=\"/status\">/status</a> &middot; <a href=\"/metrics\">/metrics</a> &middot; "
               "<a href=\"/\">volunteer page</a></p></body></html>");
    int rc = failed ? respond(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE, "text/plain", chart_err.message,
                                     strlen(chart_err.message), "no-store")
                    : respond(wsi, HTTP_STATUS_OK, "text/html; charset=utf-8", (const char *)b.data, b.size,
                              "no-store");
    sdfed_buffer_free(&b);
    return rc;
}

/* What a page needs before joining: the welcome's description. */
static int task_description(struct lws *wsi, http_site *site) {
    federation_status st;
    federation_get_status(site->fed, &st);
    const char *d = federation_description(site->fed);
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &b, NULL);
    sdfed_jw_string(&w, "mode", st.async ? "async" : "sync");
    sdfed_jw_raw(&w, NULL, d, strlen(d));
    int rc = sdfed_jw_end(&w, NULL)
                 ? 1
                 : respond(wsi, HTTP_STATUS_OK, "application/json", (const char *)b.data, b.size, "no-store");
    sdfed_buffer_free(&b);
    return rc;
}

static int shard_connected(void *fed, int shard) { return federation_shard_connected(fed, shard); }

/* A demo shard: the one asked for (?k=K) or a free one. */
static int demo_shard(struct lws *wsi, http_site *site) {
    char arg[32];
    const char *k = lws_get_urlarg_by_name(wsi, "k=", arg, sizeof arg);
    int shard;
    if (!site->demo) {
        static const char body[] = "{\"error\": \"this federation has no demo data\"}";
        return respond(wsi, HTTP_STATUS_NOT_FOUND, "application/json", body, sizeof body - 1, "no-store");
    }
    if (k) {
        char *end;
        long v = strtol(k, &end, 10);
        if (!*k || *end || v < 0 || v >= demo_shards(site->demo)) {
            static const char body[] = "{\"error\": \"no such demo shard\"}";
            return respond(wsi, HTTP_STATUS_NOT_FOUND, "application/json", body, sizeof body - 1, "no-store");
        }
        shard = (int)v;
    } else if ((shard = demo_lease(site->demo, server_now_ms(), shard_connected, site->fed)) < 0) {
        static const char body[] = "{\"error\": \"every demo shard is taken; try again later or add your own images\"}";
        return respond(wsi, HTTP_STATUS_CONFLICT, "application/json", body, sizeof body - 1, "no-store");
    }
    sdfed_buffer b = {0};
    sdfed_error err = {0};
    /* a shard is sent whole or not at all: out of memory is 503, try later */
    int rc =
        demo_shard_json(site->demo, shard, &b, &err)
            ? respond(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE, "text/plain", err.message, strlen(err.message), "no-store")
            : respond(wsi, HTTP_STATUS_OK, "application/json", (const char *)b.data, b.size, "no-store");
    sdfed_buffer_free(&b);
    return rc;
}

int http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    if (reason == LWS_CALLBACK_HTTP_FILE_COMPLETION && one_request(wsi)) return -1;
    if (reason != LWS_CALLBACK_HTTP) return lws_callback_http_dummy(wsi, reason, user, in, len);
    http_site *site = server_site(lws_context_user(lws_get_context(wsi)));
    const char *path = in;
    char file[1024], model_url[128];
    if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) == 0) { /* HEAD, POST...: over TLS (the gate answers plain HTTP) */
        static const char body[] = "only GET is served\n";
        return respond(wsi, HTTP_STATUS_METHOD_NOT_ALLOWED, "text/plain", body, sizeof body - 1, "no-store");
    }
    snprintf(model_url, sizeof model_url, "/model/%s.gguf", site->model_sha256);
    if (strcmp(path, "/status") == 0) return status_json(wsi, site);
    if (strcmp(path, "/metrics") == 0) return metrics_text(wsi, site);
    if (strcmp(path, "/status.html") == 0) return status_page(wsi, site);
    if (strcmp(path, "/demo/shard") == 0) return demo_shard(wsi, site);
    if (strcmp(path, "/task") == 0) return task_description(wsi, site);
    if (strcmp(path, model_url) == 0) return serve_file(wsi, site->model_path, site->model_sha256);
    if (strncmp(path, "/wasm/", 6) == 0) {
        if (!site->wasm_dir || !safe_path(path + 6)) return not_found(wsi);
        snprintf(file, sizeof file, "%s/%s", site->wasm_dir, path + 6);
        return serve_file(wsi, file, NULL);
    }
    if (!site->web_dir) return not_found(wsi);
    if (strcmp(path, "/") == 0)
        snprintf(file, sizeof file, "%s/index.html", site->web_dir);
    else if (safe_path(path + 1))
        snprintf(file, sizeof file, "%s/%s", site->web_dir, path + 1);
    else
        return not_found(wsi);
    return serve_file(wsi, file, NULL);
}
