/* The rounds of a federation, independent of sockets (Redis-style: the
 * network layer calls in with events and the federation answers through
 * the send functions it was given).
 *
 * Synchronous rounds (docs/protocol.md): round r starts when at least
 * min_clients are connected; clients_per_round of them (all when 0) are
 * chosen by a seeded partial shuffle of the connected clients sorted by
 * shard then id, and get round_start with the global parameters. A round
 * closes when every chosen client still in it has reported, or at its
 * deadline when at least min_clients reported (otherwise the deadline is
 * pushed back); the reports, in the chosen order, are aggregated
 * (fed/aggregate.h) into round r + 1's parameters, stored, and announced; the
 * next round starts after an optional pause (time for volunteers to join).
 * Asynchronous mode: every idle client gets the current version; updates
 * are buffered and every `buffer` of them are averaged with weights
 * samples * (1 + staleness)^-0.5 into the next version.
 *
 * Every update is validated (round, membership, duplicates, shape, sample
 * count, norm of its change) and stored before it is acknowledged; after a
 * restart the open round resumes with its chosen clients and stored
 * updates, and a chosen client that comes back is sent the round again.
 * A round the store cannot start or close (a full disk) is tried again on
 * every tick; the store reports the fault itself (store.h). */
#ifndef SDFED_AGGREGATOR_FEDERATION_H
#define SDFED_AGGREGATOR_FEDERATION_H

#include <stddef.h>
#include <stdint.h>

#include "clip/clip_model.h"
#include "fed/aggregate.h"
#include "fed/errors.h"
#include "fed/task.h"
#include "prompt/prompt.h"
#include "store.h"

typedef struct federation_options {
    int async;
    int min_clients;        /* sync: clients needed to start, and reports needed at the deadline */
    int64_t deadline_ms;    /* sync: a round's deadline */
    int64_t round_pause_ms; /* sync: the least time from one round's end to the next's start */
    int buffer;             /* async: updates per new version */
    int max_staleness;      /* async: oldest accepted base version, in versions */
    sdfed_aggregate_config aggregate;
    double max_update_norm; /* 0: no bound on an update's change */
    int64_t max_samples;    /* largest accepted sample count */
} federation_options;

/* What the federation needs from the network layer. */
typedef struct federation_net {
    void (*send_text)(void *ctx, int64_t client, const char *text, size_t len);
    void (*send_binary)(void *ctx, int64_t client, const void *data, size_t len);
    /* one structured log line: an event name and JSON fields (no braces) */
    void (*log)(void *ctx, const char *event, const char *fields);
    void *ctx;
} federation_net;

/* The model's description for clients (the welcome's task.model). */
typedef struct federation_model {
    const char *url, *sha256;
    size_t size;
} federation_model;

typedef struct federation federation;

int federation_open(federation **out, const sdfed_task *task, const federation_model *model, const sdfed_clip_model *m,
                    const sdfed_kernels *k, const sdfed_classes *cls, const char *const *class_names, store *st,
                    const federation_options *opt, const federation_net *net, int64_t now_ms, sdfed_error *err);
void federation_close(federation *f);

/* A client said hello (its identity checked by the caller): it gets the
 * welcome (with token) and, when the time comes, rounds. */
void federation_join(federation *f, int64_t client, const char *token, int shard, int binary, int64_t now_ms);
void federation_leave(federation *f, int64_t client, int64_t now_ms);

/* An update; SDFED_CODE_NONE when accepted (acknowledged), else the
 * protocol error code, with the reason in message. */
sdfed_code federation_update(federation *f, int64_t client, int64_t round, int64_t samples, int n_dims,
                             const uint32_t *shape, const float *values, int64_t now_ms, char *message, size_t cap);
sdfed_code federation_metrics(federation *f, int64_t client, int64_t round, double accuracy, double loss,
                              int64_t test_samples, char *message, size_t cap);

/* The federation's description as the welcome gives it: JSON members
 * (no braces) "task", "model", "classes", "global_shape". */
const char *federation_description(const federation *f);

/* Whether a connected client holds shard k. */
int federation_shard_connected(const federation *f, int shard);

/* Deadlines. */
void federation_tick(federation *f, int64_t now_ms);

typedef struct federation_status {
    int64_t round, rounds, connected, participants, reported;
    int open, done, async;
    char global_sha256[65];
    int64_t updates_accepted, rounds_closed, metrics_stored;
    double last_aggregation_ms, total_aggregation_ms;
    int64_t refused[SDFED_CODE_COUNT]; /* by protocol error code (fed/errors.h) */
} federation_status;

void federation_get_status(const federation *f, federation_status *s);
/* Counts a refusal under its code (the server counts every one it sends). */
void federation_count_refusal(federation *f, sdfed_code code);

#endif
