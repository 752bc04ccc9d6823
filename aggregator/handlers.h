/* What connected clients say and what they are told: a decoded sdfed.v1
 * message or frame becomes a federation call, and the federation's answer
 * (its outbox, federation.h) and the refusals become messages, written
 * with the protocol codec (fed/protocol.h) into the sessions' queues. The
 * one place where clients are identified (tokens, the join key, new
 * clients per address), where refusals are counted and abusive connections
 * closed, and where a store
 * fault is logged: once when it begins, with its error, and once when it
 * is over, with the requests refused meanwhile. */
#ifndef SDFED_AGGREGATOR_HANDLERS_H
#define SDFED_AGGREGATOR_HANDLERS_H

#include <stddef.h>
#include <stdint.h>

#include "federation.h"
#include "join_key.h"
#include "peers.h"
#include "session.h"
#include "store.h"

typedef struct handlers_options {
    const join_key *join_key;     /* hello's (join_key.h; one not set: none needed) */
    peers *peers;                 /* the addresses' lock-outs and registrations */
    int registrations_per_minute; /* new clients one address registers in a minute (peers.h), for the refusal */
    const char *description;      /* the welcome's description (description.h) */
    size_t max_message_bytes;
    int rate_limit;         /* messages in each window of rate_window_ms */
    int64_t rate_window_ms; /* (> 0) */
    int max_refusals;       /* before the connection is closed */
} handlers_options;

typedef struct handlers handlers;

int handlers_create(handlers **out, const handlers_options *opt, federation *f, store *st, sdfed_error *err);
void handlers_destroy(handlers *h);

/* What session_receive said: a whole message in ss->in, or one that could
 * not be kept (refused as too large, and the connection closed). */
void handlers_message(handlers *h, session *ss, native_ws_rx rx, int64_t now_ms);
/* A session's connection is gone (before session_free). */
void handlers_gone(handlers *h, session *ss, int64_t now_ms);
/* Deadlines; called every 200 ms. */
void handlers_tick(handlers *h, int64_t now_ms);
/* New clients' hellos wait for the transaction that registers them, and
 * accepted updates and metrics for theirs (federation.h): each batch is
 * written when handlers_flush is called at or after the time
 * handlers_flush_in_ms says (-1: nothing waits). */
void handlers_flush(handlers *h, int64_t now_ms);
int64_t handlers_flush_in_ms(const handlers *h, int64_t now_ms);
/* From now on, connections that close are not departures (shutting down). */
void handlers_detach(handlers *h);

#endif
