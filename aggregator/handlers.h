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

typedef struct agg_handlers_options {
    const agg_join_key *join_key; /* hello's (join_key.h; one not set: none needed) */
    agg_peers *peers;             /* the addresses' lock-outs and registrations */
    int registrations_per_minute; /* new clients one address registers in a minute (peers.h), for the refusal */
    const char *description;      /* the welcome's description (description.h) */
    size_t max_message_bytes;
    int rate_limit;         /* messages in each window of rate_window_ms */
    int64_t rate_window_ms; /* (> 0) */
    int max_refusals;       /* before the connection is closed */
} agg_handlers_options;

typedef struct agg_handlers agg_handlers;

int agg_handlers_create(agg_handlers **out, const agg_handlers_options *opt, agg_federation *f, agg_store *st,
                        sdfed_error *err);
void agg_handlers_destroy(agg_handlers *h);

/* What agg_session_receive said: a whole message in ss->in, or one that could
 * not be kept (refused as too large, and the connection closed). */
void agg_handlers_message(agg_handlers *h, agg_session *ss, native_ws_rx rx, int64_t now_ms);
/* A session's connection is gone (before agg_session_free). */
void agg_handlers_gone(agg_handlers *h, agg_session *ss, int64_t now_ms);
/* Deadlines; called every 200 ms. */
void agg_handlers_tick(agg_handlers *h, int64_t now_ms);
/* New clients' hellos wait for the transaction that registers them, and
 * accepted updates and metrics for theirs (federation.h): each batch is
 * written when agg_handlers_flush is called at or after the time
 * agg_handlers_flush_in_ms says (-1: nothing waits). */
void agg_handlers_flush(agg_handlers *h, int64_t now_ms);
int64_t agg_handlers_flush_in_ms(const agg_handlers *h, int64_t now_ms);
/* From now on, connections that close are not departures (shutting down). */
void agg_handlers_detach(agg_handlers *h);

#endif
