/* The federation's decisions, independent of sockets and of the wire
 * format: rounds, who takes part, what is accepted. The network layer
 * (handlers.h) calls in with events; the federation answers with messages
 * left in its outbox (what to send to whom, not how it is written), which
 * the caller takes after every call.
 *
 * It is a mode-independent core (core.h: the connected clients, the
 * outbox, validation, group commit, the store, the status) around one
 * round policy (round_policy.h), chosen by the task's secure_aggregation
 * (round_secure.c: SecAgg+ rounds, docs/protocol.md's "Secure rounds") and
 * otherwise by options.async: synchronous
 * rounds (round_sync.c: a round starts once min_clients are connected,
 * samples its clients, ends at its target, its quorum or its deadline, or
 * is abandoned; a lost connection keeps its place for rejoin_grace_ms) or
 * asynchronous ones (round_async.c: the K newest updates make a version,
 * weighted by staleness). Why no round is open (too few clients, the
 * pause, the end, a cluster's front-end) is decided there too, for the log
 * and the status.
 *
 * Every update is validated (shape, sample count, norm of its change; its
 * round, membership and duplicates by the policy) and stored before it is
 * acknowledged: accepted updates wait for their batch (group commit,
 * group_commit.h), written in one transaction when batch_rows wait
 * (metrics and presence rows count too), when the oldest has waited
 * batch_wait_ms, or at once when storing them could end the round (its
 * target or every client still in it reported; async: a version's
 * buffer), and before any other decision; each is acknowledged once the
 * batch has committed, or refused (server_error, to be resent) when it
 * has not. New clients' hellos wait the same way for the transaction that
 * registers them (agg_federation_register). The round is judged on stored
 * updates only. After a restart the open round resumes with its chosen
 * clients and stored updates, and a chosen client that comes back is sent
 * the round again. A round the store cannot start or close (a full disk)
 * is tried again on every tick; the store reports the fault itself
 * (store.h).
 *
 * Cluster mode (options.cluster, a PostgreSQL store; synchronous rounds):
 * every node runs this with its own clients, and the store is the
 * federation (store.h). A node stores its clients' presence as they join
 * and leave (presence.h: a chosen client whose connection closes leaves
 * its round, and one whose connection is lost leaves it past the grace, as
 * in a single process; the clients of a node that dies do not: they stay
 * due and may come back through another node before the round ends), and
 * stores its clients' updates, each validated against the round in the
 * store and acknowledged after its insert committed. Only the coordinator
 * (cluster.h) decides: it chooses a round's clients among every node's
 * connected ones (sorted by shard, then id, as a single process does),
 * judges the open round from the reports and departures every node
 * stored, and closes it in one fenced transaction that reads the round's
 * updates under its lock and combines them in the round's client order,
 * so the bits are a single process's. Each node follows starts and closes
 * through the store (cluster_sync.h: LISTEN/NOTIFY, or every poll_ms
 * without a notification) and announces them to its own clients; the
 * deadline a node keeps is from when it learnt of the start, and is the
 * one it judges by if it becomes the coordinator. */
#ifndef SDFED_AGGREGATOR_FEDERATION_H
#define SDFED_AGGREGATOR_FEDERATION_H

#include <stddef.h>
#include <stdint.h>

#include "devices.h"
#include "clip/clip_model.h"
#include "fed/aggregate.h"
#include "fed/errors.h"
#include "fed/task.h"
#include "prompt/prompt.h"
#include "store.h"

typedef struct agg_federation_options {
    int async;
    int min_clients;        /* sync: clients needed to start, and reports a round needs (its quorum) */
    double over_select;     /* sync: choose ceil(over_select x clients_per_round), close when that many reported */
    int64_t deadline_ms;    /* sync: a round's deadline */
    int64_t round_pause_ms; /* sync: the least time from one round's end to the next's start */
    int buffer;             /* async: updates per new version */
    int max_staleness;      /* async: oldest accepted base version, in versions */
    sdfed_aggregate_config aggregate;
    double max_update_norm;      /* 0: no bound on an update's change */
    int64_t max_samples;         /* largest accepted sample count */
    struct agg_cluster *cluster; /* cluster mode: this node (cluster.h); NULL in a single process */
    int64_t poll_ms;             /* cluster: how often the store is read without a notification */
    int batch_rows;        /* group commit: updates and metrics written in one transaction at most (0, 1: each alone) */
    int64_t batch_wait_ms; /* group commit: the longest an accepted update or metrics row waits for its batch */
    int64_t rejoin_grace_ms; /* sync: how long a chosen client whose connection was lost keeps its place (0: none) */
    int graph_from_seed;     /* secure: each round's graph key from the task's seed (as sdfed sim's), not the OS */
} agg_federation_options;

/* A message for the network layer to write (docs/protocol.md). */
typedef enum agg_federation_message_type {
    FEDERATION_WELCOME, /* round: the current round; hello: the new client's hello it answers (agg_federation_register),
                           NULL when the caller knew the client (agg_federation_join) */
    FEDERATION_ROUND_START,    /* round: the round (version) with the current global parameters; deadline_ms (sync):
                                  the time left until its deadline */
    FEDERATION_WAIT,           /* round, reason, retry_after_ms (0: none) */
    FEDERATION_ACK,            /* round: the update's */
    FEDERATION_ROUND_END,      /* round: ended, next_round, participants (its reports), global_sha256 of the
                                  parameters now, abandoned */
    FEDERATION_DONE,           /* rounds */
    FEDERATION_REFUSAL,        /* code, text: an update or metrics accepted but then not stored (its batch); or, with
                                  hello, a new client's hello that could not be registered */
    FEDERATION_SECAGG_ACK,     /* round, reason: the kind of the secure round's message stored */
    FEDERATION_SECAGG_REQUEST, /* round, bytes (n_bytes): a secure round's request (fed/secagg_message.h) */
} agg_federation_message_type;

#define FEDERATION_EVERYONE (-1) /* the client of a message for every connected client */
#define FEDERATION_NOBODY (-2)   /* the client of a refused hello's refusal (its hello says whose) */

typedef struct agg_federation_message {
    agg_federation_message_type type;
    int64_t client; /* or FEDERATION_EVERYONE */
    int64_t round, next_round, participants, rounds, deadline_ms, retry_after_ms;
    int abandoned;      /* round_end: the round was abandoned, the parameters stayed */
    const char *reason; /* wait: a constant string */
    char global_sha256[65];
    sdfed_code code;                    /* refusal */
    char text[SDFED_ERROR_MESSAGE_MAX]; /* refusal: why */
    void *hello;                        /* welcome, refusal: the caller's handle of a new client's hello */
    /* round_start of a secure round (secure set): the client's place and the plan's settings */
    int secure, place, n, k, t, min_inputs;
    unsigned char *bytes; /* secagg request: the message, owned by the outbox until it is cleared */
    size_t n_bytes;
} agg_federation_message;

typedef struct agg_federation agg_federation;

int agg_federation_open(agg_federation **out, const sdfed_task *task, const sdfed_clip_model *m, const sdfed_kernels *k,
                        const sdfed_classes *cls, agg_store *st, const agg_federation_options *opt, int64_t now_ms,
                        sdfed_error *err);
void agg_federation_close(agg_federation *f);

/* Events. A client said hello (its identity checked by the caller): it is
 * welcomed and, when the time comes, given rounds. A client already
 * connected (the caller replaced its connection) or whose place is kept
 * (its connection was lost within the grace) is the same client going on:
 * due in the open round if it has not reported. */
void agg_federation_join(agg_federation *f, int64_t client, int shard, int64_t now_ms);
/* A new client's hello, its token made by the caller: it waits for the
 * transaction that registers it (a clients row) with the other hellos that
 * come within the batch's wait (group commit, as updates: batch_rows,
 * batch_wait_ms). Once that transaction is written, the client has its id
 * and joins (agg_federation_join), its welcome carrying `hello`, the caller's
 * handle for it (its connection; never read here), so that the caller knows
 * whose id it is; when it did not commit, a refusal (server_error) with
 * `hello` is in the outbox instead. SDFED_ERR_NOMEM when it cannot wait.
 * The token is the caller's and stays valid while the hello waits. */
int agg_federation_register(agg_federation *f, void *hello, const char *token, int shard, const char *kind,
                            int64_t now_ms);
/* The hello's connection is gone: it is not registered. */
void agg_federation_register_cancel(agg_federation *f, const void *hello);
/* Registers the waiting hellos now (a waiting client sent another message:
 * its hello is answered first). */
void agg_federation_register_now(agg_federation *f, int64_t now_ms);
/* How a client's connection ended: closed on purpose (a close frame from
 * either side, leave), or lost (it ended without a close). */
typedef enum agg_federation_departure { FEDERATION_LEFT, FEDERATION_LOST } agg_federation_departure;
void agg_federation_leave(agg_federation *f, int64_t client, agg_federation_departure how, int64_t now_ms);
/* An update; SDFED_CODE_NONE when accepted, else the protocol error code,
 * with the reason in message. Once the federation is done, a well-formed
 * update (and metrics of a round past the last) is answered `done` in the
 * outbox, and SDFED_CODE_NONE returned. An accepted update waits for its batch: its
 * ack, or its refusal when the batch could not be stored, is in the
 * outbox once the batch is written (by this call when it made the batch
 * due, else by agg_federation_flush). */
sdfed_code agg_federation_update(agg_federation *f, int64_t client, int64_t round, int64_t samples, int n_dims,
                                 const uint32_t *shape, const float *values, int64_t now_ms, char *message, size_t cap);
/* A client's metrics; SDFED_CODE_NONE when accepted, else the protocol
 * error code, with the reason in message. Metrics count only from a client
 * whose update for that round was accepted: a round ahead is wrong_round,
 * the open round without its update (stored or waiting) not_in_round, and
 * test_samples past max_samples bad_message. Accepted metrics wait for the
 * same batch as updates; once it is written they are refused (in the
 * outbox) with server_error if it could not be stored, and with
 * not_in_round if the store holds no update of theirs for the round (an
 * earlier round's, which only the store knows). device (NULL: none sent):
 * the client's device figures (devices.h), which must hold a step time for
 * each of the task's local prompt lengths (else bad_message naming
 * step_ms); accepted metrics' figures replace the client's earlier ones. */
sdfed_code agg_federation_metrics(agg_federation *f, int64_t client, int64_t round, double accuracy, double loss,
                                  int64_t test_samples, const agg_device_figures *device, int64_t now_ms, char *message,
                                  size_t cap);
/* A secure round's message (fed/secagg_message.h, its frame unwrapped by
 * the caller); SDFED_CODE_NONE when accepted, else the code (secagg_off
 * when the task's rounds are not secure), with the reason in message. An
 * accepted message is stored before its acknowledgement (secagg_ack) is in
 * the outbox. */
sdfed_code agg_federation_secagg(agg_federation *f, int64_t client, const unsigned char *msg, size_t len,
                                 int64_t now_ms, char *message, size_t cap);
/* A client refuses its secure round's request (`code`, a secagg_ code it
 * reports, and its reason): it takes no further part in that round. */
sdfed_code agg_federation_secagg_refusal(agg_federation *f, int64_t client, int64_t round, sdfed_code code,
                                         const char *why, int64_t now_ms, char *message, size_t cap);
/* Deadlines, pauses, places kept past their grace, and store retries (the
 * waiting updates are written first). */
void agg_federation_tick(agg_federation *f, int64_t now_ms);
/* Writes the waiting hellos, and the waiting updates and metrics, when
 * their batch is due (group_commit.h); agg_federation_flush_in_ms says when
 * the first is: -1 when nothing waits. */
void agg_federation_flush(agg_federation *f, int64_t now_ms);
int64_t agg_federation_flush_in_ms(const agg_federation *f, int64_t now_ms);

/* The messages the calls so far produced, in order; valid until the next
 * call. agg_federation_outbox_clear empties it. */
const agg_federation_message *agg_federation_outbox(const agg_federation *f, int *n);
void agg_federation_outbox_clear(agg_federation *f);

/* The current global parameters (a row-major shape[0] x shape[1] matrix)
 * and their SHA-256 (of the raw little-endian floats). */
typedef struct agg_federation_global {
    const float *values;
    size_t n;
    uint32_t shape[2];
    const char *sha256;
    int64_t round;
} agg_federation_global;

agg_federation_global agg_federation_get_global(const agg_federation *f);

/* Whether a connected client holds shard k. */
int agg_federation_shard_connected(const agg_federation *f, int shard);

/* Why no round is open: decided here alone, for the log (a "waiting" line
 * each time the reason changes) and /status. */
typedef enum agg_federation_wait_reason {
    FEDERATION_NOT_WAITING,     /* a round is open (async: until the federation finishes) */
    FEDERATION_TOO_FEW_CLIENTS, /* fewer than `needed` clients are connected */
    FEDERATION_ROUND_PAUSE,     /* the pause after a round (round_pause_ms) */
    FEDERATION_FINISHED,        /* every round of the task is done */
    FEDERATION_NOT_COORDINATOR, /* cluster: this node does not decide rounds; the coordinator does */
    FEDERATION_STARTING,        /* nothing holds the next round back: it starts on the next tick (if this lasts,
                                   the store refuses to record it and logs its fault) */
    FEDERATION_WAIT_REASON_COUNT
} agg_federation_wait_reason;

typedef struct agg_federation_waiting {
    agg_federation_wait_reason reason;
    int64_t needed;    /* clients a round needs connected to start (min_clients, at least 1) */
    int64_t connected; /* clients connected (a cluster's coordinator: every node's, as it last read them) */
} agg_federation_waiting;

/* The reason's name ("too_few_clients", "round_pause", "finished",
 * "not_coordinator", "starting"; NULL for FEDERATION_NOT_WAITING). */
const char *agg_federation_wait_reason_name(agg_federation_wait_reason reason);

typedef struct agg_federation_status {
    int64_t round, rounds, connected, participants, reported;
    agg_federation_waiting waiting;
    int open, done, async, secure;
    char global_sha256[65];
    int64_t updates_accepted, rounds_closed, rounds_abandoned, metrics_stored;
    double last_aggregation_ms, total_aggregation_ms;
    int64_t refused[SDFED_CODE_COUNT]; /* by protocol error code (fed/errors.h) */
} agg_federation_status;

void agg_federation_get_status(const agg_federation *f, agg_federation_status *s);
/* The devices whose figures the federation heard, by any node, since it began (devices.h, read from the store). */
int agg_federation_get_devices(const agg_federation *f, agg_devices_summary *s);
/* A secure federation's distributed DP (the task's "noise"): the privacy
 * its unmasked rounds spent, from the store (privacy.c). */
typedef struct agg_federation_privacy_spent {
    int noise; /* 0: no noise, the rest is zero */
    int64_t rounds_unmasked;
    double epsilon_spent, epsilon_budget, delta;
} agg_federation_privacy_spent;
int agg_federation_privacy(const agg_federation *f, agg_federation_privacy_spent *out, sdfed_error *err);
/* Counts a refusal under its code (the network layer counts every one it sends). */
void agg_federation_count_refusal(agg_federation *f, sdfed_code code);

#endif
