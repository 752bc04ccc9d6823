/* The Origin of WebSocket upgrades (see origin.h). */
#include "origin.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An authority "host[:port]" (an IPv6 host in brackets): the host in lower
 * case into host, the port (default_port when none); 0, or -1 when it is
 * not one. */
static int authority(const char *text, size_t len, int default_port, char *host, size_t cap, int *port) {
    const char *end = text + len, *colon;
    if (len && text[0] == '[') {
        const char *close = memchr(text, ']', len);
        if (!close) return -1;
        colon = close + 1 < end ? close + 1 : NULL;
        if (colon && *colon != ':') return -1;
    } else {
        colon = memchr(text, ':', len);
    }
    size_t host_len = (size_t)((colon ? colon : end) - text);
    if (!host_len || host_len >= cap) return -1;
    for (size_t i = 0; i < host_len; i++) {
        int c = (unsigned char)text[i];
        if (c <= 0x20 || c >= 0x7f || c == '/' || c == '@') return -1;
        host[i] = (char)tolower(c);
    }
    host[host_len] = '\0';
    *port = default_port;
    if (!colon) return 0;
    char digits[8];
    size_t n = (size_t)(end - colon - 1);
    if (!n || n >= sizeof digits || strspn(colon + 1, "0123456789") < n) return -1;
    memcpy(digits, colon + 1, n);
    digits[n] = '\0';
    *port = (int)strtol(digits, NULL, 10); /* digits alone, at most 7 */
    return *port > 0 && *port <= 65535 ? 0 : -1;
}

/* "scheme://host[:port]" as RFC 6454 writes it (out), its host and port;
 * 0, or -1 when it is not an origin of http or https. */
static int parse_origin(const char *origin, char *out, size_t cap, char *host, size_t host_cap, int *port) {
    int default_port = 0;
    if (strncmp(origin, "http://", 7) == 0) default_port = 80;
    if (strncmp(origin, "https://", 8) == 0) default_port = 443;
    if (!default_port) return -1;
    const char *rest = strstr(origin, "://") + 3;
    if (authority(rest, strlen(rest), default_port, host, host_cap, port)) return -1;
    const char *scheme = default_port == 80 ? "http" : "https";
    int n = *port == default_port ? snprintf(out, cap, "%s://%s", scheme, host)
                                  : snprintf(out, cap, "%s://%s:%d", scheme, host, *port);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

int agg_origins_allow(agg_origins *o, const char *origin, sdfed_error *err) {
    char host[ORIGIN_MAX];
    int port;
    if (strcmp(origin, "*") == 0) {
        o->any = 1;
        return SDFED_OK;
    }
    if (o->n == ORIGINS_ALLOWED_MAX)
        return sdfed_fail(err, SDFED_ERR_ARG, "--allow-origin: at most %d origins", ORIGINS_ALLOWED_MAX);
    if (parse_origin(origin, o->allowed[o->n], ORIGIN_MAX, host, sizeof host, &port))
        return sdfed_fail(err, SDFED_ERR_ARG,
                          "--allow-origin '%s' is not an origin (http://HOST or https://HOST, with :PORT when it is "
                          "not the scheme's default; no path) or '*'",
                          origin);
    o->n++;
    return SDFED_OK;
}

int agg_origins_let_in(const agg_origins *o, const char *origin, const char *host) {
    if (!origin || o->any) return 1;
    char written[ORIGIN_MAX], origin_host[ORIGIN_MAX], own_host[ORIGIN_MAX];
    int origin_port, own_port;
    if (parse_origin(origin, written, sizeof written, origin_host, sizeof origin_host, &origin_port)) return 0;
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->allowed[i], written) == 0) return 1;
    /* the Host's port, when it has none, is the default of the Origin's scheme */
    int default_port = strncmp(written, "https:", 6) == 0 ? 443 : 80;
    return host && authority(host, strlen(host), default_port, own_host, sizeof own_host, &own_port) == 0 &&
           strcmp(own_host, origin_host) == 0 && own_port == origin_port;
}
