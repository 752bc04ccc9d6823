/* The gate's check of a plain-HTTP request (see request_check.h). */
#include "request_check.h"

#include <assert.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libwebsockets.h>

#include "response.h"

#define MAX_LINE 2048 /* the longest request line, without its line break */
/* lws keeps each header it knows and each query argument in one of
 * WSI_TOKEN_COUNT fragments, and drops a request that needs more: the gate
 * lets through fewer (the request line takes a few more) */
#define MAX_HEADER_LINES 64
#define MAX_QUERY_ARGUMENTS 16
static_assert(MAX_HEADER_LINES + MAX_QUERY_ARGUMENTS + 8 <= WSI_TOKEN_COUNT, "lws cannot keep such a request");

static int is_token_char(int c) { return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c)); }

static int say(char *why, size_t cap, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int say(char *why, size_t cap, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return status;
}

/* The request target: a path from '/', then an optional query. Its
 * escapes are decoded as lws will decode them, and the decoded path's
 * segments checked, since lws would resolve "." and "..". */
static int check_target(const char *t, size_t len, char *why, size_t cap) {
    if (!len || t[0] != '/') return say(why, cap, 400, "the request target is not a path starting with '/'");
    char path[MAX_LINE + 1];
    size_t n = 0;
    int in_query = 0, arguments = 1;
    for (size_t i = 0; i < len; i++) {
        int c = (unsigned char)t[i];
        const char *part = in_query ? "query" : "path";
        if (c <= 0x20 || c >= 0x7f)
            return say(why, cap, 400, "the request target has a byte that is not printable ASCII (0x%02x)", c);
        if (c == '#') return say(why, cap, 400, "the request target has a fragment ('#')");
        if (c == '?' && !in_query) {
            in_query = 1;
            continue;
        }
        if (in_query && (c == '&' || c == ';') && ++arguments > MAX_QUERY_ARGUMENTS)
            return say(why, cap, 400, "the query has more than %d arguments", MAX_QUERY_ARGUMENTS);
        if (c == '%') {
            if (i + 2 >= len || !isxdigit((unsigned char)t[i + 1]) || !isxdigit((unsigned char)t[i + 2]))
                return say(why, cap, 400, "the %s has a '%%' that is not followed by two hex digits", part);
            char hex[3] = {t[i + 1], t[i + 2], '\0'};
            c = (int)strtol(hex, NULL, 16);
            i += 2;
            if (c < 0x20 || c == 0x7f)
                return say(why, cap, 400, "the %s has a percent-encoded control character (%%%02X)", part, c);
        }
        if (!in_query) path[n++] = (char)c;
    }
    for (size_t start = 1, end; start <= n; start = end + 1) {
        const char *slash = memchr(path + start, '/', n - start);
        end = slash ? (size_t)(slash - path) : n;
        const char *seg = path + start;
        if ((end - start == 1 && seg[0] == '.') || (end - start == 2 && seg[0] == '.' && seg[1] == '.'))
            return say(why, cap, 400, "the path has a '%.*s' segment", (int)(end - start), seg);
    }
    return 0;
}

/* 0 when line (without its line break) is a request lws may have; else
 * the status to answer with, and why in words. */
static int check_line(const char *line, size_t len, char *why, size_t cap) {
    if (len && line[len - 1] == '\r') len--;
    if (len > MAX_LINE) return say(why, cap, 400, "the request line is longer than %d bytes", MAX_LINE);
    const char *end = line + len, *sp1 = memchr(line, ' ', len);
    if (!sp1 || sp1 == line) return say(why, cap, 400, "the request line does not start with a method and a space");
    for (const char *p = line; p < sp1; p++)
        if (!is_token_char((unsigned char)*p)) return say(why, cap, 400, "the method is not an HTTP token");
    const char *target = sp1 + 1, *sp2 = memchr(target, ' ', (size_t)(end - target));
    if (!sp2) return say(why, cap, 400, "the request line has no HTTP version");
    const char *version = sp2 + 1;
    if (end - version != 8 || (memcmp(version, "HTTP/1.1", 8) && memcmp(version, "HTTP/1.0", 8)))
        return say(why, cap, 400, "the HTTP version is not HTTP/1.0 or HTTP/1.1");
    int status = check_target(target, (size_t)(sp2 - target), why, cap);
    if (status) return status;
    if (sp1 - line != 3 || memcmp(line, "GET", 3)) return say(why, cap, 405, "only GET is served");
    return 0;
}

/* Where the request's headers end: the length of the request line and its
 * headers up to and with the empty line after them, or 0 when that line is
 * not in the n bytes yet; *lines counts the header lines before it. */
static size_t headers_end(const char *request, size_t n, int *lines) {
    *lines = 0;
    for (const char *nl = memchr(request, '\n', n); nl; nl = memchr(nl + 1, '\n', n - (size_t)(nl + 1 - request))) {
        size_t after = (size_t)(nl + 1 - request);
        if (after < n && request[after] == '\n') return after + 1;
        if (after + 1 < n && request[after] == '\r' && request[after + 1] == '\n') return after + 2;
        ++*lines;
    }
    return 0;
}

int agg_request_check(const char *request, size_t n, size_t max_header_bytes, int ended, char *why, size_t cap) {
    const char *eol = memchr(request, '\n', n);
    if (!eol && n > MAX_LINE + 1) return say(why, cap, 400, "the request line is longer than %d bytes", MAX_LINE);
    if (eol) {
        int status = check_line(request, (size_t)(eol - request), why, cap);
        if (status) return status;
        int lines;
        size_t end = headers_end(request, n, &lines);
        if (lines > MAX_HEADER_LINES)
            return say(why, cap, RESPONSE_HEADERS_TOO_LARGE, "the request has more than %d headers", MAX_HEADER_LINES);
        if (end && end <= max_header_bytes) return 0;
        if (end || n > max_header_bytes)
            return say(why, cap, RESPONSE_HEADERS_TOO_LARGE, "the request's line and headers are longer than %zu bytes",
                       max_header_bytes);
    }
    if (ended)
        return eol ? say(why, cap, 400, "the request ends before its headers do")
                   : say(why, cap, 400, "the request line ends without a line break");
    return REQUEST_INCOMPLETE;
}
