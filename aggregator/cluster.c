/* A node's leases and role (see cluster.h). */
#include "cluster.h"

#include <stdlib.h>
#include <unistd.h>

#include "native/log.h"

struct agg_cluster {
    agg_store *st;
    double lease_s;
    agg_store_fence fence; /* epoch 0: not the coordinator */
    int64_t next_beat_ms;
};

int agg_cluster_open(agg_cluster **out, agg_store *st, double lease_s, sdfed_error *err) {
    *out = NULL;
    agg_cluster *c = calloc(1, sizeof *c);
    if (!c) return sdfed_fail(err, SDFED_ERR_NOMEM, "cluster: out of memory");
    c->st = st;
    c->lease_s = lease_s;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    int rc = agg_store_node_join(st, host, (int)getpid(), lease_s, &c->fence.node, err);
    if (rc == SDFED_OK) rc = agg_store_listen(st, err);
    if (rc) {
        free(c);
        return rc;
    }
    native_log_line line;
    native_log_open(&line, "node");
    sdfed_jw_int(&line.w, "node", c->fence.node);
    sdfed_jw_string(&line.w, "host", host);
    sdfed_jw_int(&line.w, "pid", getpid());
    sdfed_jw_double(&line.w, "lease_s", lease_s);
    native_log_close(&line);
    *out = c;
    return SDFED_OK;
}

void agg_cluster_close(agg_cluster *c) {
    if (!c) return;
    agg_store_node_leave(c->st, c->fence.node, NULL);
    free(c);
}

/* The node taking the coordinator's role (EVENT coordinator) or losing it (coordinator_lost). */
static void log_role(const char *event, int64_t node, int64_t epoch) {
    native_log_line line;
    native_log_open(&line, event);
    sdfed_jw_int(&line.w, "node", node);
    sdfed_jw_int(&line.w, "epoch", epoch);
    native_log_close(&line);
}

void agg_cluster_step_down(agg_cluster *c) {
    if (!c->fence.epoch) return;
    log_role("coordinator_lost", c->fence.node, c->fence.epoch);
    c->fence.epoch = 0;
}

void agg_cluster_tick(agg_cluster *c, int64_t now_ms) {
    if (now_ms < c->next_beat_ms) return;
    c->next_beat_ms = now_ms + (int64_t)(c->lease_s * 1000 / 3);
    if (agg_store_node_renew(c->st, c->fence.node, c->lease_s, NULL)) return; /* the store reports its fault */
    if (c->fence.epoch) {
        int held;
        if (agg_store_coordinator_renew(c->st, &c->fence, c->lease_s, &held, NULL) == SDFED_OK && !held)
            agg_cluster_step_down(c);
        return;
    }
    int64_t epoch;
    if (agg_store_coordinator_claim(c->st, c->fence.node, c->lease_s, &epoch, NULL) == SDFED_OK && epoch > 0) {
        c->fence.epoch = epoch;
        log_role("coordinator", c->fence.node, epoch);
    }
}

int64_t agg_cluster_node(const agg_cluster *c) { return c->fence.node; }

const agg_store_fence *agg_cluster_fence(const agg_cluster *c) { return c->fence.epoch ? &c->fence : NULL; }
