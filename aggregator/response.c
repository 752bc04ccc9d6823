/* HTTP responses with the headers every one carries (see response.h). */
#include "response.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A plain-HTTP connection carries one request: the next comes on a new
 * connection, whose request line the gate checks before lws parses it
 * (gate.h). TLS connections, which the gate does not see, keep lws's
 * keep-alive (and HTTP/2, where a Connection header is malformed). */
int agg_response_closes(struct lws *wsi) { return !lws_is_ssl(lws_get_network_wsi(wsi)); }

/* What the callback returns once a response is complete. */
static int completed(struct lws *wsi) {
    return agg_response_closes(wsi) || lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* Headers every response carries: cross-origin isolation (so the page can
 * use threads), no content sniffing, the content security policy (scripts,
 * styles, workers and connections of this origin only, WebAssembly
 * compiled from them, images also from the page's own blobs, nothing
 * inline, no frames around it) and no Referer (a join key may be in the
 * address); and Connection: close when the connection closes after it. */
static const struct {
    const char *name, *value;
} common_headers[] = {{"cross-origin-opener-policy:", "same-origin"},
                      {"cross-origin-embedder-policy:", "require-corp"},
                      {"cross-origin-resource-policy:", "same-origin"},
                      {"x-content-type-options:", "nosniff"},
                      {"content-security-policy:",
                       "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; "
                       "img-src 'self' blob:; connect-src 'self'; worker-src 'self'; object-src 'none'; "
                       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
                      {"referrer-policy:", "no-referrer"}};

static int add_header(struct lws *wsi, const char *name, const char *value, unsigned char **p, unsigned char *end) {
    return lws_add_http_header_by_name(wsi, (const unsigned char *)name, (const unsigned char *)value,
                                       (int)strlen(value), p, end);
}

static int add_common(struct lws *wsi, unsigned char **p, unsigned char *end) {
    for (size_t i = 0; i < sizeof common_headers / sizeof common_headers[0]; i++)
        if (add_header(wsi, common_headers[i].name, common_headers[i].value, p, end)) return 1;
    return agg_response_closes(wsi) && add_header(wsi, "connection:", "close", p, end);
}

/* The reason phrase of the statuses this server refuses with. */
static const char *reason_phrase(int status) {
    static const struct {
        int status;
        const char *phrase;
    } phrases[] = {{400, "Bad Request"},        {401, "Unauthorized"},      {403, "Forbidden"},
                   {405, "Method Not Allowed"}, {429, "Too Many Requests"}, {431, "Request Header Fields Too Large"},
                   {503, "Service Unavailable"}};
    for (size_t i = 0; i < sizeof phrases / sizeof phrases[0]; i++)
        if (phrases[i].status == status) return phrases[i].phrase;
    return "";
}

int agg_response_text_bytes(char *out, size_t cap, int status, const char *text, const char *header,
                            const char *value) {
    size_t body = strlen(text) + 1;
    int n = snprintf(out, cap,
                     "HTTP/1.1 %d %s\r\ncontent-type: text/plain\r\ncontent-length: %zu\r\n"
                     "cache-control: no-store\r\nconnection: close\r\n",
                     status, reason_phrase(status), body);
    for (size_t i = 0; n >= 0 && (size_t)n < cap && i < sizeof common_headers / sizeof common_headers[0]; i++)
        n += snprintf(out + n, cap - (size_t)n, "%s %s\r\n", common_headers[i].name, common_headers[i].value);
    if (header && n >= 0 && (size_t)n < cap) n += snprintf(out + n, cap - (size_t)n, "%s: %s\r\n", header, value);
    if (n >= 0 && (size_t)n < cap) n += snprintf(out + n, cap - (size_t)n, "\r\n%s\n", text);
    return n >= 0 && (size_t)n < cap ? n : -1;
}

/* A whole response from memory, with one header more when header is set. */
static int send_whole(struct lws *wsi, int status, const char *type, const char *body, size_t len, const char *cache,
                      const char *header, const char *value) {
    unsigned char head[LWS_PRE + RESPONSE_HEAD_MAX], *start = head + LWS_PRE, *p = start, *end = head + sizeof head - 1;
    char name[64];
    snprintf(name, sizeof name, "%s:", header ? header : "");
    if (lws_add_http_common_headers(wsi, (unsigned)status, type, len, &p, end) || add_common(wsi, &p, end) ||
        (cache && add_header(wsi, "cache-control:", cache, &p, end)) ||
        (header && add_header(wsi, name, value, &p, end)) || lws_finalize_write_http_header(wsi, start, &p, end))
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

int agg_response_send(struct lws *wsi, int status, const char *type, const char *body, size_t len, const char *cache) {
    return send_whole(wsi, status, type, body, len, cache, NULL, NULL);
}

int agg_response_refuse(struct lws *wsi, int status, const char *text, const char *header, const char *value) {
    char body[512];
    int len = snprintf(body, sizeof body, "%s\n", text);
    return send_whole(wsi, status, "text/plain", body, len < (int)sizeof body ? (size_t)len : sizeof body - 1,
                      "no-store", header, value);
}

int agg_response_not_found(struct lws *wsi) {
    static const char body[] = "not found\n";
    return agg_response_send(wsi, HTTP_STATUS_NOT_FOUND, "text/plain", body, sizeof body - 1, "no-store");
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

/* Whether an If-None-Match value is "*" or a list of entity tags with
 * etag's among them (RFC 9110 13.1.2: weak comparison, a W/ ignored; empty
 * list elements allowed). A value that is neither matches nothing. */
static int lists_etag(const char *value, const char *etag) {
    const char *p = value + strspn(value, " \t");
    if (*p == '*') return p[1 + strspn(p + 1, " \t")] == '\0';
    size_t n = strlen(etag);
    int listed = 0;
    while (*p) {
        if (*p == ',') {
            p += 1 + strspn(p + 1, " \t");
            continue;
        }
        if (strncmp(p, "W/", 2) == 0) p += 2;
        const char *close = *p == '"' ? strchr(p + 1, '"') : NULL;
        if (!close) return 0;
        if ((size_t)(close - p - 1) == n && memcmp(p + 1, etag, n) == 0) listed = 1;
        p = close + 1 + strspn(close + 1, " \t");
        if (*p && *p != ',') return 0;
    }
    return listed;
}

int agg_response_file(struct lws *wsi, const char *file, const char *etag, int *sending) {
    *sending = 0;
    struct stat st;
    if (stat(file, &st) != 0 || !S_ISREG(st.st_mode)) return agg_response_not_found(wsi);
    unsigned char extra[RESPONSE_HEAD_MAX], *p = extra, *end = extra + sizeof extra;
    if (add_common(wsi, &p, end)) return 1;
    const char *cache = etag ? "public, max-age=31536000, immutable" : "no-cache";
    if (add_header(wsi, "cache-control:", cache, &p, end)) return 1;
    if (etag) {
        char quoted[80], match[1024] = "";
        snprintf(quoted, sizeof quoted, "\"%s\"", etag);
        if (lws_hdr_copy(wsi, match, sizeof match, WSI_TOKEN_HTTP_IF_NONE_MATCH) > 0 && lists_etag(match, etag))
            return send_whole(wsi, HTTP_STATUS_NOT_MODIFIED, NULL, NULL, 0, cache, "etag", quoted);
        if (add_header(wsi, "etag:", quoted, &p, end)) return 1;
    }
    /* 0: the file goes out as the socket takes it, then comes
     * LWS_CALLBACK_HTTP_FILE_COMPLETION */
    int n = lws_serve_http_file(wsi, file, mime_of(file), (const char *)extra, (int)(p - extra));
    *sending = n == 0;
    if (n < 0) return -1;
    return n > 0 ? completed(wsi) : 0;
}
