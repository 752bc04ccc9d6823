/* HTTP routes of the aggregator (see http.h). */
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/json_writer.h"
#include "native/clock.h"
#include "native/log.h"
#include "response.h"

/* A URL path that names a file below a folder: no "..", no hidden files,
 * no backslashes, nothing but a plain relative path. */
static int safe_path(const char *path) {
    if (!*path || strlen(path) > 512) return 0;
    for (const char *p = path; *p; p++)
        if (*p == '\\' || (unsigned char)*p < 0x20 || (*p == '.' && (p == path || p[-1] == '/'))) return 0;
    return 1;
}

/* A file of the browser build that the page loads (its modules: .js and
 * .wasm directly in the folder), not the build system's files beside them
 * (Makefile, cmake_install.cmake with the host's paths, libraries). */
static int wasm_module(const char *name) {
    size_t n = strlen(name);
    return !strchr(name, '/') &&
           ((n > 3 && strcmp(name + n - 3, ".js") == 0) || (n > 5 && strcmp(name + n - 5, ".wasm") == 0));
}

/* What a page needs before joining: the welcome's description. */
static int task_description(struct lws *wsi, agg_http_site *site) {
    agg_federation_status st;
    agg_federation_get_status(site->fed, &st);
    const char *d = site->description;
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &b, NULL);
    sdfed_jw_string(&w, "mode", st.async ? "async" : "sync");
    sdfed_jw_raw(&w, NULL, d, strlen(d));
    int rc = sdfed_jw_end(&w, NULL)
                 ? 1
                 : agg_response_send(wsi, HTTP_STATUS_OK, "application/json", (const char *)b.data, b.size, "no-store");
    sdfed_buffer_free(&b);
    return rc;
}

static int shard_connected(void *fed, int shard) { return agg_federation_shard_connected(fed, shard); }

/* A demo shard not sent: {"error": WHY} with STATUS, not to be cached. */
static int refuse_demo(struct lws *wsi, int status, const char *why) {
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &b, NULL);
    sdfed_jw_string(&w, "error", why);
    int rc = sdfed_jw_end(&w, NULL)
                 ? 1
                 : agg_response_send(wsi, status, "application/json", (const char *)b.data, b.size, "no-store");
    sdfed_buffer_free(&b);
    return rc;
}

/* A demo shard: the one asked for (?k=K) or a free one, leased to the
 * address that asks (at most demo_leases_per_address of them). */
static int demo_shard(struct lws *wsi, agg_http_site *site, const agg_peer_conn *from) {
    char arg[32];
    const char *k = lws_get_urlarg_by_name(wsi, "k=", arg, sizeof arg);
    const agg_peer_address nowhere = {.bytes = {0}};
    int64_t free_in_ms = 0;
    int shard;
    if (!site->demo) return refuse_demo(wsi, HTTP_STATUS_NOT_FOUND, "this federation has no demo data");
    if (k) {
        char *end;
        long v = strtol(k, &end, 10);
        if (!*k || *end || v < 0 || v >= agg_demo_shards(site->demo))
            return refuse_demo(wsi, HTTP_STATUS_NOT_FOUND, "no such demo shard");
        shard = (int)v;
    } else if ((shard = agg_demo_lease(site->demo, from ? &from->address : &nowhere, site->demo_leases_per_address,
                                       native_clock_ms(native_clock_monotonic_ns()), shard_connected, site->fed,
                                       &free_in_ms)) == DEMO_HOLDER_FULL) {
        char why[160], seconds[32];
        snprintf(seconds, sizeof seconds, "%lld", (long long)(free_in_ms + 999) / 1000);
        snprintf(why, sizeof why,
                 "your address holds %d demo shards already; try again in %s s, or add your own images",
                 site->demo_leases_per_address, seconds);
        agg_peers_refused(site->peers, PEERS_REFUSED_DEMO_LEASES);
        return agg_response_refuse(wsi, RESPONSE_TOO_MANY_REQUESTS, why, "retry-after", seconds);
    } else if (shard == DEMO_NONE_FREE) {
        return refuse_demo(wsi, HTTP_STATUS_CONFLICT,
                           "every demo shard is taken; try again later or add your own images");
    }
    sdfed_buffer b = {0};
    sdfed_error err = {0};
    /* a shard is sent whole or not at all: out of memory or an unreadable
     * file is 503, named in the host's log (not to visitors: it has paths),
     * and the shard's lease, if this leased it, ends (it was not sent) */
    int rc;
    int failed = agg_demo_shard_json(site->demo, shard, &b, &err);
    if (failed) {
        native_log_line line;
        native_log_open(&line, "warning");
        sdfed_jw_string(&line.w, "message", err.message);
        native_log_close(&line);
        char why[128];
        snprintf(why, sizeof why, "demo shard %d cannot be sent now (%s); try again later", shard,
                 failed == SDFED_ERR_NOMEM ? "out of memory" : "one of its images cannot be read");
        rc = refuse_demo(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE, why);
        if (!k) agg_demo_release(site->demo, shard); /* leased above */
    } else {
        rc = agg_response_send(wsi, HTTP_STATUS_OK, "application/json", (const char *)b.data, b.size, "no-store");
    }
    sdfed_buffer_free(&b);
    return rc;
}

const char agg_http_reserve_refusal[] = "the server is full; try again in a few seconds",
           agg_http_reserve_retry_s[] = "5";

/* The secret a path needs: the metrics token for /metrics when there is
 * one, else the join key for every route but the page's own files; NULL
 * for those (and for paths that are not found). */
static const agg_join_key *secret_for(const agg_http_site *site, const char *path) {
    static const char *const routes[] = {"/status", "/status.html", "/metrics", "/task", "/demo/shard"};
    if (strcmp(path, "/metrics") == 0 && site->metrics_token->set) return site->metrics_token;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strcmp(path, routes[i]) == 0) return site->join_key;
    return strncmp(path, "/model/", 7) == 0 ? site->join_key : NULL;
}

/* The secret a request presents, into out: Authorization: Bearer SECRET,
 * else the query argument key=SECRET; its length, or -1 when it presents
 * none. */
static long presented_secret(struct lws *wsi, char *out, int cap) {
    int n = lws_hdr_copy(wsi, out, cap, WSI_TOKEN_HTTP_AUTHORIZATION);
    if (n > 7 && strncasecmp(out, "Bearer ", 7) == 0) {
        size_t skip = 7 + strspn(out + 7, " ");
        memmove(out, out + skip, (size_t)n - skip + 1);
        return (long)((size_t)n - skip);
    }
    const char *value = lws_get_urlarg_by_name(wsi, "key=", out, cap);
    if (!value) return -1;
    size_t len = strlen(value);
    memmove(out, value, len + 1);
    return (long)len;
}

/* 1 (with the answer's rc) when the request lacks the secret its path
 * needs: 401 without it or with another, 429 while its address is locked
 * out; 0 when it may go on. */
static int refused_for_secret(agg_http_site *site, struct lws *wsi, const agg_peer_conn *from, const char *path,
                              int *rc) {
    const agg_join_key *needed = secret_for(site, path);
    if (!needed || !needed->set) return 0;
    char presented[4096], why[256], seconds[32];
    long len = presented_secret(wsi, presented, sizeof presented);
    int64_t locked_ms;
    const agg_peer_address nowhere = {.bytes = {0}};
    agg_join_key_verdict verdict =
        agg_join_key_check(needed, site->peers, from ? &from->address : &nowhere, len >= 0 ? presented : NULL,
                           len >= 0 ? (size_t)len : 0, native_clock_ms(native_clock_monotonic_ns()), &locked_ms);
    const char *what = needed == site->metrics_token ? "metrics token" : "join key";
    if (verdict == JOIN_KEY_OK) return 0;
    if (locked_ms > 0) {
        snprintf(seconds, sizeof seconds, "%lld", (long long)(locked_ms + 999) / 1000);
        snprintf(why, sizeof why, "too many wrong keys from your address; try again in %s s", seconds);
        *rc = agg_response_refuse(wsi, RESPONSE_TOO_MANY_REQUESTS, why, "retry-after", seconds);
        return 1;
    }
    if (verdict == JOIN_KEY_WRONG)
        snprintf(why, sizeof why, "that is not this federation's %s", what);
    else if (needed == site->metrics_token)
        snprintf(why, sizeof why, "%s needs the metrics token (Authorization: Bearer TOKEN)", path);
    else
        snprintf(why, sizeof why,
                 "this federation needs its join key: open the address its host gave you (it ends in ?key=...), or "
                 "send Authorization: Bearer KEY");
    *rc = agg_response_refuse(wsi, HTTP_STATUS_UNAUTHORIZED, why, "www-authenticate", "Bearer realm=\"sdfed\"");
    return 1;
}

/* A file, counted while it is sent (a descriptor, as a connection is):
 * past max_file_sends, 503 with Retry-After. */
static int send_file(agg_http_site *site, struct lws *wsi, agg_peer_conn *from, const char *file, const char *etag) {
    if (!agg_peers_file_begin(site->peers))
        return agg_response_refuse(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE,
                                   "the server is sending as many files as it may; try again in a few seconds",
                                   "retry-after", agg_http_reserve_retry_s);
    int sending, rc = agg_response_file(wsi, file, etag, &sending);
    if (sending && from)
        from->files++;
    else
        agg_peers_files_end(site->peers, 1);
    return rc;
}

int agg_http_serve(agg_http_site *site, struct lws *wsi, agg_peer_conn *from, enum lws_callback_reasons reason,
                   void *user, void *in, size_t len) {
    if (reason == LWS_CALLBACK_HTTP_FILE_COMPLETION && from && from->files > 0) {
        from->files--;
        agg_peers_files_end(site->peers, 1);
    }
    if (reason == LWS_CALLBACK_HTTP_FILE_COMPLETION && agg_response_closes(wsi)) return -1;
    if (reason != LWS_CALLBACK_HTTP) return lws_callback_http_dummy(wsi, reason, user, in, len);
    const char *path = in;
    int answered, rc;
    char file[1024], model_url[128];
    if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) == 0) /* HEAD, POST...: over TLS (the gate answers plain HTTP) */
        return agg_response_refuse(wsi, HTTP_STATUS_METHOD_NOT_ALLOWED, "only GET is served", "allow", "GET");
    snprintf(model_url, sizeof model_url, "/model/%s.gguf", site->model_sha256);
    if (refused_for_secret(site, wsi, from, path, &rc)) return rc;
    if ((rc = agg_status_serve(&site->status, wsi, path, &answered)) || answered) return rc;
    if (from && from->in_reserve) {
        agg_peers_refused(site->peers, PEERS_REFUSED_RESERVE);
        return agg_response_refuse(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE, agg_http_reserve_refusal, "retry-after",
                                   agg_http_reserve_retry_s);
    }
    if (strcmp(path, "/demo/shard") == 0) return demo_shard(wsi, site, from);
    if (strcmp(path, "/task") == 0) return task_description(wsi, site);
    if (strcmp(path, model_url) == 0) return send_file(site, wsi, from, site->model_path, site->model_sha256);
    if (strncmp(path, "/wasm/", 6) == 0) {
        if (!site->wasm_dir || !safe_path(path + 6) || !wasm_module(path + 6)) return agg_response_not_found(wsi);
        snprintf(file, sizeof file, "%s/%s", site->wasm_dir, path + 6);
        return send_file(site, wsi, from, file, NULL);
    }
    if (!site->web_dir) return agg_response_not_found(wsi);
    if (strcmp(path, "/") == 0)
        snprintf(file, sizeof file, "%s/index.html", site->web_dir);
    else if (safe_path(path + 1))
        snprintf(file, sizeof file, "%s/%s", site->web_dir, path + 1);
    else
        return agg_response_not_found(wsi);
    return send_file(site, wsi, from, file, NULL);
}
