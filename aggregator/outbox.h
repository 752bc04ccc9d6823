/* The federation's outbox: the typed messages (agg_federation_message,
 * federation.h) that its calls leave for the network layer, in the order
 * they were decided. What a message says, never how it is written. */
#ifndef SDFED_AGGREGATOR_OUTBOX_H
#define SDFED_AGGREGATOR_OUTBOX_H

#include <stdint.h>

#include "federation.h"

typedef struct agg_outbox {
    agg_federation_message *messages;
    int n, cap;
} agg_outbox;

/* Appends m (its bytes then the outbox's); one that finds no memory is
 * logged and dropped. */
void agg_outbox_put(agg_outbox *o, agg_federation_message m);
void agg_outbox_clear(agg_outbox *o);
void agg_outbox_free(agg_outbox *o);

/* round_start of `round`, with deadline_ms left until its deadline (0: none) */
void agg_outbox_round_start(agg_outbox *o, int64_t client, int64_t round, int64_t deadline_ms);
void agg_outbox_wait(agg_outbox *o, int64_t client, int64_t round, const char *reason);
/* wait "paced": the client sits out round `round`, back in retry_after_ms at the soonest */
void agg_outbox_wait_paced(agg_outbox *o, int64_t client, int64_t round, int64_t retry_after_ms);
void agg_outbox_done(agg_outbox *o, int64_t client, int64_t rounds);
/* Something accepted but then not stored, refused with code; why, cut at
 * 255 bytes. */
void agg_outbox_refusal(agg_outbox *o, int64_t client, int64_t round, sdfed_code code, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

#endif
