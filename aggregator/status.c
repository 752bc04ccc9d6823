/* /status, /status.html and /metrics (see status.h). */
#include "status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json_writer.h"
#include "native/crypto.h"
#include "fed/protocol.h"
#include "native/clock.h"
#include "native/svg_chart.h"
#include "response.h"
#include "status_devices.h"

/* a page that cannot be built whole is not sent in part */
static int out_of_memory(struct lws *wsi) {
    static const char body[] = "out of memory; try again later\n";
    return agg_response_send(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE, "text/plain", body, sizeof body - 1, "no-store");
}

void agg_status_board_free(agg_status_board *site) {
    free(site->history.rounds);
    free(site->history.clients);
    free(site->history.accuracy);
    memset(&site->history, 0, sizeof site->history);
}

static void update_history(agg_status_board *site, const agg_federation_status *st) {
    int64_t now = native_clock_ms(native_clock_monotonic_ns());
    /* a cluster's metrics come in through every node: read at most once a second */
    if (site->history.valid &&
        ((!site->cl && st->metrics_stored == site->history.metrics_seen) || now - site->history.read_at_ms < 1000))
        return;
    int64_t *rounds, *clients;
    double *accuracy;
    int n;
    if (agg_store_accuracy_history(site->st, &rounds, &accuracy, &clients, &n, NULL)) return; /* keep the last one */
    agg_status_board_free(site);
    site->history.rounds = rounds;
    site->history.clients = clients;
    site->history.accuracy = accuracy;
    site->history.n = n;
    site->history.valid = 1;
    site->history.metrics_seen = st->metrics_stored;
    site->history.read_at_ms = now;
}

/* The devices' summary as the store holds it (every node's clients): read
 * again when metrics were stored since, or a second after the last read
 * (a node's own, and other nodes' figures), not for every request (the
 * balancer's health checks ask every second); when the store cannot say,
 * the last one read stays. NULL before the first read. */
static const agg_devices_summary *read_devices(agg_status_board *site, const agg_federation_status *st) {
    int64_t now = native_clock_ms(native_clock_monotonic_ns());
    if (!site->devices.valid || st->metrics_stored != site->devices.metrics_seen ||
        now - site->devices.read_at_ms >= 1000) {
        agg_devices_summary s;
        if (agg_federation_get_devices(site->fed, &s) == SDFED_OK) {
            site->devices.summary = s;
            site->devices.valid = 1;
            site->devices.metrics_seen = st->metrics_stored;
            site->devices.read_at_ms = now;
        }
    }
    return site->devices.valid ? &site->devices.summary : NULL;
}

/* The federation's counts as the store holds them (since it began, every
 * node's), read for every answer; when the store cannot say, the last ones
 * read stay. */
static void read_counts(agg_status_board *site) {
    agg_store_counts c;
    if (agg_store_federation_counts(site->st, &c, NULL) == SDFED_OK) site->counts = c;
}

/* Cluster mode: the clients connected to any node, in place of this
 * node's; 0 when not in a cluster or the store cannot say (then the
 * node's own). */
static int cluster_clients(agg_status_board *site, agg_federation_status *st, agg_store_cluster *c) {
    if (!site->cl || agg_store_cluster_status(site->st, c, NULL) != SDFED_OK) return 0;
    st->connected = c->clients_present;
    st->waiting.connected = c->clients_present;
    return 1;
}

/* "waiting": why no round is open (federation.h), or null while one is. */
static void waiting_json(sdfed_json_writer *w, const agg_federation_waiting *waiting) {
    const char *reason = agg_federation_wait_reason_name(waiting->reason);
    if (!reason) {
        sdfed_jw_null(w, "waiting");
        return;
    }
    sdfed_jw_object(w, "waiting");
    sdfed_jw_string(w, "reason", reason);
    sdfed_jw_int(w, "needed", waiting->needed);
    sdfed_jw_int(w, "connected", waiting->connected);
    sdfed_jw_close(w);
}

/* "async", "secure" (synchronous rounds whose sum alone is unmasked) or "sync" */
static const char *mode_name(const agg_federation_status *st) {
    if (st->async) return "async";
    return st->secure ? "secure" : "sync";
}

/* "privacy": what a secure federation's noise has spent (federation.h), or
 * null without noise or while the store cannot say. */
static void privacy_json(sdfed_json_writer *w, const agg_status_board *site) {
    agg_federation_privacy_spent p;
    if (agg_federation_privacy(site->fed, &p, NULL) != SDFED_OK || !p.noise) {
        sdfed_jw_null(w, "privacy");
        return;
    }
    sdfed_jw_object(w, "privacy");
    sdfed_jw_int(w, "rounds_unmasked", p.rounds_unmasked);
    sdfed_jw_double(w, "epsilon_spent", p.epsilon_spent);
    sdfed_jw_double(w, "epsilon_budget", p.epsilon_budget);
    sdfed_jw_double(w, "delta", p.delta);
    sdfed_jw_close(w);
}

/* "node": this node of a cluster, its role and its own counts */
static void node_json(sdfed_json_writer *w, const agg_status_board *site, const agg_federation_status *node) {
    const agg_store_fence *fence = agg_cluster_fence(site->cl);
    sdfed_jw_object(w, "node");
    sdfed_jw_int(w, "id", agg_cluster_node(site->cl));
    sdfed_jw_string(w, "role", fence ? "coordinator" : "front-end");
    sdfed_jw_int(w, "epoch", fence ? fence->epoch : 0);
    sdfed_jw_int(w, "clients", node->connected);
    sdfed_jw_int(w, "updates_accepted", node->updates_accepted);
    sdfed_jw_int(w, "rounds_closed", node->rounds_closed);
    sdfed_jw_int(w, "store_failing", agg_store_failing(site->st));
    sdfed_jw_close(w);
}

/* "accuracy": [{"round", "accuracy", "clients"}, ...] as the clients reported them */
static void accuracy_json(sdfed_json_writer *w, const agg_status_board *site) {
    sdfed_jw_array(w, "accuracy");
    for (int i = 0; i < site->history.n; i++) {
        sdfed_jw_object(w, NULL);
        sdfed_jw_int(w, "round", site->history.rounds[i]);
        sdfed_jw_fixed(w, "accuracy", site->history.accuracy[i], 6);
        sdfed_jw_int(w, "clients", site->history.clients[i]);
        sdfed_jw_close(w);
    }
    sdfed_jw_close(w);
}

static int status_json(struct lws *wsi, agg_status_board *site) {
    agg_federation_status st, node;
    agg_federation_get_status(site->fed, &st);
    node = st;
    agg_store_cluster c;
    int in_cluster = cluster_clients(site, &st, &c);
    read_counts(site);
    update_history(site, &st);
    const agg_devices_summary *dev = read_devices(site, &st);
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &b, NULL);
    sdfed_jw_string(&w, "name", site->name ? site->name : "");
    sdfed_jw_string(&w, "description", site->description ? site->description : "");
    sdfed_jw_int(&w, "round", st.round);
    sdfed_jw_int(&w, "rounds", st.rounds);
    sdfed_jw_string(&w, "mode", mode_name(&st));
    sdfed_jw_int(&w, "clients", st.connected);
    sdfed_jw_int(&w, "clients_registered", site->counts.clients);
    sdfed_jw_int(&w, "round_open", st.open);
    sdfed_jw_int(&w, "participants", st.participants);
    sdfed_jw_int(&w, "reported", st.reported);
    sdfed_jw_int(&w, "done", st.done);
    waiting_json(&w, &st.waiting);
    privacy_json(&w, site);
    sdfed_jw_string(&w, "global_prompt_sha256", st.global_sha256);
    sdfed_jw_int(&w, "updates_accepted", site->counts.updates);
    sdfed_jw_int(&w, "rounds_closed", site->counts.rounds_closed);
    sdfed_jw_int(&w, "rounds_abandoned", site->counts.rounds_abandoned);
    sdfed_jw_string(&w, "model_sha256", site->model_sha256);
    if (in_cluster) {
        sdfed_jw_int(&w, "nodes", c.nodes_live);
        sdfed_jw_int(&w, "coordinator_node", c.coordinator_node);
        sdfed_jw_int(&w, "coordinator_epoch", c.coordinator_epoch);
    }
    if (site->cl) node_json(&w, site, &node);
    accuracy_json(&w, site);
    if (dev) agg_status_devices_json(&w, "devices", dev);
    int rc = sdfed_jw_end(&w, NULL)
                 ? out_of_memory(wsi)
                 : agg_response_send(wsi, HTTP_STATUS_OK, "application/json", (const char *)b.data, b.size, "no-store");
    sdfed_buffer_free(&b);
    return rc;
}

static int metrics_text(struct lws *wsi, agg_status_board *site) {
    agg_federation_status st;
    agg_federation_get_status(site->fed, &st);
    sdfed_buffer b = {0};
    sdfed_sink sink = sdfed_buffer_sink(&b);
    int failed = 0;
    if (site->cl) {
        const agg_store_fence *fence = agg_cluster_fence(site->cl);
        failed |= sdfed_sink_printf(
            sink,
            "# HELP sdfed_node_coordinator 1 while this node is the cluster's coordinator, 0 as a front-end.\n"
            "# TYPE sdfed_node_coordinator gauge\nsdfed_node_coordinator{node=\"%lld\"} %d\n"
            "# HELP sdfed_node_epoch The coordinator epoch this node holds (0: none).\n"
            "# TYPE sdfed_node_epoch gauge\nsdfed_node_epoch{node=\"%lld\"} %lld\n"
            "# HELP sdfed_node_clients Clients connected to this node.\n"
            "# TYPE sdfed_node_clients gauge\nsdfed_node_clients{node=\"%lld\"} %lld\n",
            (long long)agg_cluster_node(site->cl), fence != NULL, (long long)agg_cluster_node(site->cl),
            (long long)(fence ? fence->epoch : 0), (long long)agg_cluster_node(site->cl), (long long)st.connected);
        agg_store_cluster c;
        if (agg_store_cluster_status(site->st, &c, NULL) == SDFED_OK)
            failed |= sdfed_sink_printf(
                sink,
                "# HELP sdfed_cluster_nodes Nodes whose lease holds.\n# TYPE sdfed_cluster_nodes gauge\n"
                "sdfed_cluster_nodes %lld\n"
                "# HELP sdfed_cluster_clients Clients connected to any node.\n# TYPE sdfed_cluster_clients gauge\n"
                "sdfed_cluster_clients %lld\n"
                "# HELP sdfed_cluster_epoch The coordinator's epoch.\n# TYPE sdfed_cluster_epoch gauge\n"
                "sdfed_cluster_epoch %lld\n",
                (long long)c.nodes_live, (long long)c.clients_present, (long long)c.coordinator_epoch);
        read_counts(site);
        failed |= sdfed_sink_printf(sink,
                                    "# HELP sdfed_cluster_rounds_closed Rounds the federation closed (aggregated).\n"
                                    "# TYPE sdfed_cluster_rounds_closed gauge\nsdfed_cluster_rounds_closed %lld\n"
                                    "# HELP sdfed_cluster_rounds_abandoned Rounds the federation abandoned.\n"
                                    "# TYPE sdfed_cluster_rounds_abandoned gauge\nsdfed_cluster_rounds_abandoned %lld\n"
                                    "# HELP sdfed_cluster_updates Updates the federation stored.\n"
                                    "# TYPE sdfed_cluster_updates gauge\nsdfed_cluster_updates %lld\n",
                                    (long long)site->counts.rounds_closed, (long long)site->counts.rounds_abandoned,
                                    (long long)site->counts.updates);
    }
    failed |= sdfed_sink_printf(
        sink, "# HELP sdfed_clients Clients connected now.\n# TYPE sdfed_clients gauge\nsdfed_clients %lld\n",
        (long long)st.connected);
    failed |=
        sdfed_sink_printf(sink,
                          "# HELP sdfed_round The current round (sync) or version (async).\n# TYPE sdfed_round gauge\n"
                          "sdfed_round %lld\n",
                          (long long)st.round);
    failed |= sdfed_sink_printf(sink,
                                "# HELP sdfed_rounds_closed_total Rounds aggregated by this process.\n"
                                "# TYPE sdfed_rounds_closed_total counter\nsdfed_rounds_closed_total %lld\n",
                                (long long)st.rounds_closed);
    failed |= sdfed_sink_printf(sink,
                                "# HELP sdfed_rounds_abandoned_total Rounds this process abandoned (too few reports).\n"
                                "# TYPE sdfed_rounds_abandoned_total counter\nsdfed_rounds_abandoned_total %lld\n",
                                (long long)st.rounds_abandoned);
    failed |= sdfed_sink_printf(sink,
                                "# HELP sdfed_updates_accepted_total Updates stored and acknowledged.\n"
                                "# TYPE sdfed_updates_accepted_total counter\nsdfed_updates_accepted_total %lld\n",
                                (long long)st.updates_accepted);
    failed |= sdfed_sink_printf(sink, "# HELP sdfed_updates_refused_total Messages refused, by reason.\n"
                                      "# TYPE sdfed_updates_refused_total counter\n");
    for (int i = 0; i < SDFED_CODE_COUNT; i++)
        sdfed_sink_printf(sink, "sdfed_updates_refused_total{reason=\"%s\"} %lld\n", sdfed_code_name(i),
                          (long long)st.refused[i]);
    failed |= sdfed_sink_printf(
        sink,
        "# HELP sdfed_store_failing 1 while the store fails (a full disk): from a failed operation to the next "
        "write that commits.\n# TYPE sdfed_store_failing gauge\nsdfed_store_failing %d\n"
        "# HELP sdfed_store_failures_total Store operations that failed.\n"
        "# TYPE sdfed_store_failures_total counter\nsdfed_store_failures_total %lld\n",
        agg_store_failing(site->st), (long long)agg_store_failures(site->st));
    failed |= sdfed_sink_printf(
        sink,
        "# HELP sdfed_aggregation_seconds Time spent aggregating.\n# TYPE sdfed_aggregation_seconds summary\n"
        "sdfed_aggregation_seconds_sum %.6f\nsdfed_aggregation_seconds_count %lld\n"
        "# HELP sdfed_aggregation_last_seconds The last aggregation's time.\n"
        "# TYPE sdfed_aggregation_last_seconds gauge\nsdfed_aggregation_last_seconds %.6f\n",
        st.total_aggregation_ms / 1e3, (long long)st.rounds_closed, st.last_aggregation_ms / 1e3);
    agg_peers_stats edge;
    agg_peers_get_stats(site->peers, native_clock_ms(native_clock_monotonic_ns()), &edge);
    failed |= sdfed_sink_printf(
        sink,
        "# HELP sdfed_connections Connections this process holds (HTTP and WebSocket).\n"
        "# TYPE sdfed_connections gauge\nsdfed_connections %lld\n"
        "# HELP sdfed_file_sends Files this process is sending (the page's, the model).\n"
        "# TYPE sdfed_file_sends gauge\nsdfed_file_sends %lld\n"
        "# HELP sdfed_addresses Client addresses remembered for the limits (an IPv6 address by its /64).\n"
        "# TYPE sdfed_addresses gauge\nsdfed_addresses %lld\n"
        "# HELP sdfed_addresses_locked Addresses locked out for wrong join keys.\n"
        "# TYPE sdfed_addresses_locked gauge\nsdfed_addresses_locked %lld\n"
        "# HELP sdfed_edge_refused_total What the edge's limits refused, by limit.\n"
        "# TYPE sdfed_edge_refused_total counter\n",
        (long long)edge.connections, (long long)edge.file_sends, (long long)edge.addresses, (long long)edge.locked);
    for (int i = 0; i < PEERS_REFUSAL_COUNT; i++)
        failed |= sdfed_sink_printf(sink, "sdfed_edge_refused_total{limit=\"%s\"} %lld\n", agg_peers_refusal_name(i),
                                    (long long)edge.refused[i]);
    const agg_devices_summary *dev = read_devices(site, &st);
    if (dev) failed |= agg_status_devices_metrics(sink, dev);
    agg_federation_privacy_spent privacy;
    if (agg_federation_privacy(site->fed, &privacy, NULL) == SDFED_OK && privacy.noise)
        failed |= sdfed_sink_printf(sink,
                                    "# HELP sdfed_privacy_epsilon_spent Distributed DP: epsilon spent by the rounds "
                                    "unmasked, at delta sdfed_privacy_delta.\n"
                                    "# TYPE sdfed_privacy_epsilon_spent gauge\nsdfed_privacy_epsilon_spent %.6f\n"
                                    "# HELP sdfed_privacy_epsilon_budget The task's epsilon over its whole run.\n"
                                    "# TYPE sdfed_privacy_epsilon_budget gauge\nsdfed_privacy_epsilon_budget %g\n"
                                    "# HELP sdfed_privacy_delta The accountant's delta.\n"
                                    "# TYPE sdfed_privacy_delta gauge\nsdfed_privacy_delta %g\n",
                                    privacy.epsilon_spent, privacy.epsilon_budget, privacy.delta);
    int rc = failed ? out_of_memory(wsi)
                    : agg_response_send(wsi, HTTP_STATUS_OK, "text/plain; version=0.0.4", (const char *)b.data, b.size,
                                        "no-store");
    sdfed_buffer_free(&b);
    return rc;
}

/* The entity that stands for c in HTML text, NULL when c stands for itself. */
static const char *html_entity(char c) {
    switch (c) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '"': return "&quot;";
    default: return NULL;
    }
}

/* Text as HTML (&, <, >, " escaped); non-zero when a write failed. */
static int html_text(sdfed_sink sink, const char *text) {
    int failed = 0;
    for (const char *p = text; *p && !failed; p++) {
        const char *entity = html_entity(*p);
        failed = entity ? sdfed_sink_printf(sink, "%s", entity) : sink.write(sink.ctx, p, 1);
    }
    return failed;
}

/* What the federation does now: the open round's reports, or why no round
 * is open, in words; non-zero when a write failed. */
static int now_words(sdfed_sink sink, const agg_federation_status *st) {
    long long needed = (long long)st->waiting.needed, connected = (long long)st->waiting.connected;
    switch (st->waiting.reason) {
    case FEDERATION_NOT_WAITING:
        return st->async ? sdfed_sink_printf(sink, "training: a new version every few updates")
                         : sdfed_sink_printf(sink, "round open: %lld of the %lld chosen volunteers still in reported",
                                             (long long)st->reported, (long long)st->participants);
    case FEDERATION_TOO_FEW_CLIENTS:
        return sdfed_sink_printf(sink, "waiting for %lld volunteer%s, %lld connected", needed, needed == 1 ? "" : "s",
                                 connected);
    case FEDERATION_ROUND_PAUSE: return sdfed_sink_printf(sink, "the pause between rounds, %lld connected", connected);
    case FEDERATION_FINISHED: return sdfed_sink_printf(sink, "finished: all %lld rounds done", (long long)st->rounds);
    case FEDERATION_NOT_COORDINATOR:
        return sdfed_sink_printf(sink, "this node does not start rounds; the cluster's coordinator does");
    case FEDERATION_STARTING: return sdfed_sink_printf(sink, "a round is starting, %lld connected", connected);
    case FEDERATION_WAIT_REASON_COUNT: break;
    }
    return 0;
}

/* The mode in words, for status.html. */
static const char *mode_words(const agg_federation_status *st) {
    if (st->async) return "asynchronous";
    return st->secure ? "synchronous, secure aggregation: the server sees only the sum of each round's prompts"
                      : "synchronous";
}

/* The privacy row of a secure federation with noise, nothing otherwise;
 * non-zero when a write failed. */
static int privacy_row(sdfed_sink sink, const agg_status_board *site) {
    agg_federation_privacy_spent p;
    if (agg_federation_privacy(site->fed, &p, NULL) != SDFED_OK || !p.noise) return 0;
    return sdfed_sink_printf(sink,
                             "<tr><td>privacy spent</td><td>epsilon %.3f of %g at delta %g, over %lld rounds "
                             "unmasked</td></tr>",
                             p.epsilon_spent, p.epsilon_budget, p.delta, (long long)p.rounds_unmasked);
}

/* Unix seconds as "2026-11-28 14:03" (UTC). */
static void utc_minute(double seconds, char *out, size_t cap) {
    time_t t = (time_t)seconds;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(out, cap, "%Y-%m-%d %H:%M", &tm)) snprintf(out, cap, "?");
}

/* A volunteer as the page names it: never its token, nor its number, but
 * the first 8 hex digits of the SHA-256 of "client <number>" (stable
 * across restarts). */
static void volunteer_name(int64_t client, char name[9]) {
    char text[32], hex[65];
    int n = snprintf(text, sizeof text, "client %lld", (long long)client);
    if (native_sha256_hex(text, (size_t)n, hex, NULL)) {
        snprintf(name, 9, "?"); /* no digest (no memory): no name */
        return;
    }
    memcpy(name, hex, 8);
    name[8] = '\0';
}

/* The volunteers last heard from, at most STATUS_VOLUNTEERS of the
 * `registered`, as a table that scrolls sideways on a narrow screen;
 * non-zero when a write failed. */
static int volunteers_table(sdfed_sink sink, agg_status_board *site, int64_t registered) {
    agg_store_volunteer *v;
    int n;
    if (agg_store_recent_volunteers(site->st, STATUS_VOLUNTEERS, &v, &n, NULL) != SDFED_OK)
        return sdfed_sink_printf(sink, "<p>The store cannot list them now.</p>");
    int failed = registered > n
                     ? sdfed_sink_printf(sink, "<p>The %d heard from last, of %lld.</p>", n, (long long)registered)
                     : 0;
    failed |= sdfed_sink_printf(sink, "<div class=\"scroll\"><table class=\"volunteers\"><tr><th>volunteer</th>"
                                      "<th>first seen (UTC)</th><th>last seen</th><th>rounds taken part in</th>"
                                      "<th>last accuracy</th></tr>");
    for (int i = 0; i < n && !failed; i++) {
        char name[9], first[32], last[32], accuracy[16];
        volunteer_name(v[i].client, name);
        utc_minute(v[i].first_seen, first, sizeof first);
        utc_minute(v[i].last_seen, last, sizeof last);
        if (isnan(v[i].accuracy))
            snprintf(accuracy, sizeof accuracy, "&ndash;");
        else
            snprintf(accuracy, sizeof accuracy, "%.2f%%", 100 * v[i].accuracy);
        failed |=
            sdfed_sink_printf(sink, "<tr><td><code>%s</code></td><td>%s</td><td>%s</td><td>%lld</td><td>%s</td></tr>",
                              name, first, last, (long long)v[i].rounds, accuracy);
    }
    free(v);
    return failed | sdfed_sink_printf(sink, "</table></div>");
}

/* The round and how far the federation is: "round 39 &middot; 39 of 50
 * done" (rounds count from 0, docs/protocol.md); non-zero when a write
 * failed. */
static int round_words(sdfed_sink sink, const agg_federation_status *st) {
    if (st->done) return sdfed_sink_printf(sink, "%lld of %lld done", (long long)st->rounds, (long long)st->rounds);
    return sdfed_sink_printf(sink, "%s %lld &middot; %lld of %lld done", st->async ? "version" : "round",
                             (long long)st->round, (long long)st->round, (long long)st->rounds);
}

/* The devices' step time against local prompt length (the median, and the
 * 10th to 90th percentile as a band), when any device reported; non-zero
 * when a write failed. */
static int devices_chart(sdfed_buffer *b, const agg_devices_summary *d) {
    if (!d || d->count == 0 || d->n_lengths == 0) return 0;
    double top = 0, scale = 1;
    for (int l = 0; l < d->n_lengths; l++) top = d->p90[l] > top ? d->p90[l] : top;
    while (scale * 10 < top) scale *= 10; /* the grid's top: 1, 2 or 5 x 10^k ms above the slowest */
    static const double grid_tops[] = {5, 2, 1};
    double y_max = 10 * scale; /* the least of 1, 2, 5 or 10 x scale at or above top */
    for (int i = 0; i < 3; i++)
        if (top <= grid_tops[i] * scale) y_max = grid_tops[i] * scale;
    char x_label[160];
    int used = snprintf(x_label, sizeof x_label, "local prompt length (tokens:");
    for (int l = 0; l < d->n_lengths && used < (int)sizeof x_label; l++)
        used += snprintf(x_label + used, sizeof x_label - (size_t)used, " %d", d->lengths[l]);
    if (used < (int)sizeof x_label) snprintf(x_label + used, sizeof x_label - (size_t)used, ")");
    char legend[96];
    snprintf(legend, sizeof legend, "ms a step: median of %d devices, 10th to 90th percentile", d->count);
    native_svg_chart chart = {.width = 640,
                              .height = 240,
                              .left = 50,
                              .right = 20,
                              .top = 20,
                              .bottom = 30,
                              .font_size = 11,
                              .x_label = x_label,
                              .legend = legend,
                              .n = d->n_lengths,
                              .line = d->p50,
                              .band_low = d->p10,
                              .band_high = d->p90,
                              .y_max = y_max};
    sdfed_error err;
    return sdfed_sink_printf(sdfed_buffer_sink(b), "<h2>The volunteers' devices</h2>") ||
           native_svg_chart_write(b, &chart, &err) != SDFED_OK;
}

/* The status page, for a host (also on a phone): the round, what happens
 * now, the federation's counts, the accuracy the clients report per round
 * as an SVG chart, the devices' step times as another and the volunteers
 * last heard from; it reloads every 5 s. */
static int status_page(struct lws *wsi, agg_status_board *site) {
    agg_federation_status st;
    agg_federation_get_status(site->fed, &st);
    agg_store_cluster c;
    cluster_clients(site, &st, &c);
    read_counts(site);
    update_history(site, &st);
    const double *accuracy = site->history.accuracy;
    int n = site->history.n;
    sdfed_buffer b = {0};
    sdfed_sink sink = sdfed_buffer_sink(&b);
    int failed = 0;
    /* the task's name as the title (else "sdfed aggregator"), its description under it */
    const char *name = site->name && site->name[0] ? site->name : "sdfed aggregator";
    failed |= sdfed_sink_printf(sink, "<!doctype html><html><head><meta charset=\"utf-8\">"
                                      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                                      "<meta http-equiv=\"refresh\" content=\"5\"><title>");
    failed |= html_text(sink, name);
    failed |= sdfed_sink_printf(sink, "</title><link rel=\"stylesheet\" href=\"/status.css\"></head><body><h1>");
    failed |= html_text(sink, name);
    failed |= sdfed_sink_printf(sink, "</h1>");
    if (site->description && site->description[0]) {
        failed |= sdfed_sink_printf(sink, "<p class=\"description\">");
        failed |= html_text(sink, site->description);
        failed |= sdfed_sink_printf(sink, "</p>");
    }
    failed |= sdfed_sink_printf(sink, "<table class=\"facts\"><tr><td>round</td><td class=\"round\">");
    failed |= round_words(sink, &st);
    failed |= sdfed_sink_printf(sink, "</td></tr><tr><td>now</td><td class=\"now\">");
    failed |= now_words(sink, &st);
    const agg_store_counts *k = &site->counts;
    failed |= sdfed_sink_printf(sink,
                                "</td></tr><tr><td>volunteers</td><td>%lld connected, %lld registered</td></tr>"
                                "<tr><td>rounds</td><td>%lld closed, %lld abandoned</td></tr>"
                                "<tr><td>updates accepted</td><td>%lld</td></tr><tr><td>mode</td><td>%s</td></tr>",
                                (long long)st.connected, (long long)k->clients, (long long)k->rounds_closed,
                                (long long)k->rounds_abandoned, (long long)k->updates, mode_words(&st));
    failed |= privacy_row(sink, site);
    failed |= sdfed_sink_printf(sink, "<tr><td>global prompt sha256</td><td><code>%s</code></td></tr></table>",
                                st.global_sha256);
    char x_label[64];
    snprintf(x_label, sizeof x_label, "round (%d reported)", n);
    native_svg_chart chart = {.width = 640,
                              .height = 300,
                              .left = 50,
                              .right = 20,
                              .top = 20,
                              .bottom = 30,
                              .font_size = 11,
                              .standalone = 0,
                              .x_label = x_label,
                              .n = n,
                              .line = accuracy};
    failed |= sdfed_sink_printf(sink, "<h2>Accuracy the clients report</h2>");
    sdfed_error chart_err;
    failed |= native_svg_chart_write(&b, &chart, &chart_err) != SDFED_OK;
    failed |= devices_chart(&b, read_devices(site, &st));
    failed |= sdfed_sink_printf(sink, "<h2>Volunteers</h2>");
    failed |= volunteers_table(sink, site, k->clients);
    /* the links carry the join key where it is needed (its characters need no escaping) */
    const char *key = site->join_key->set ? site->join_key->text : NULL;
    const char *metrics_key = site->metrics_token->set ? NULL : key;
    failed |= sdfed_sink_printf(sink,
                                "<p><a href=\"/status%s%s\">/status</a> &middot; <a href=\"/metrics%s%s\">/metrics</a> "
                                "&middot; <a href=\"/%s%s\">volunteer page</a></p></body></html>",
                                key ? "?key=" : "", key ? key : "", metrics_key ? "?key=" : "",
                                metrics_key ? metrics_key : "", key ? "?key=" : "", key ? key : "");
    int rc = failed ? out_of_memory(wsi)
                    : agg_response_send(wsi, HTTP_STATUS_OK, "text/html; charset=utf-8", (const char *)b.data, b.size,
                                        "no-store");
    sdfed_buffer_free(&b);
    return rc;
}

/* status.html's style, a file of its own (the content security policy
 * allows no inline style) */
static int status_css(struct lws *wsi) {
    static const char css[] = "body{font-family:sans-serif;margin:1em auto;padding:0 1em;max-width:50em;color:#222}\n"
                              "td,th{padding:2px 12px 2px 0;text-align:left;vertical-align:top}\n"
                              ".facts td:first-child{color:#555;white-space:nowrap}code{word-break:break-all}\n"
                              ".scroll{overflow-x:auto}.volunteers{border-collapse:collapse}\n"
                              ".volunteers td,.volunteers th{border-bottom:1px solid #ddd;white-space:nowrap}\n"
                              "svg{max-width:100%;height:auto}\n";
    return agg_response_send(wsi, HTTP_STATUS_OK, "text/css", css, sizeof css - 1, "no-cache");
}

int agg_status_serve(agg_status_board *b, struct lws *wsi, const char *path, int *answered) {
    *answered = 1;
    if (strcmp(path, "/status.css") == 0) return status_css(wsi);
    if (strcmp(path, "/status") == 0) return status_json(wsi, b);
    if (strcmp(path, "/metrics") == 0) return metrics_text(wsi, b);
    if (strcmp(path, "/status.html") == 0) return status_page(wsi, b);
    *answered = 0;
    return 0;
}
