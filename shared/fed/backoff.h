/* When a client tries again: exponential backoff with full jitter, capped,
 * over the tries since its last successful session, with a server's
 * retry_after (docs/protocol.md) as a floor under it:
 *     window(attempt) = min(SDFED_BACKOFF_CAP_MS, SDFED_BACKOFF_BASE_MS * 2^attempt)
 *     delay           = retry_after_ms + floor(u * window(attempt)),  u uniform in [0, 1)
 * so that clients who lost the same server at the same moment come back
 * spread over the window instead of in the same second, and a floor the
 * server asks for is kept without lining them all up at it. The headless
 * client draws u from a seeded stream (reproducible); the page has the same
 * schedule in web/backoff.js with the browser's own randomness. */
#ifndef SDFED_BACKOFF_H
#define SDFED_BACKOFF_H

#include <stdint.h>

#include "base/rng.h"

enum { SDFED_BACKOFF_BASE_MS = 1000, SDFED_BACKOFF_CAP_MS = 30000 };

/* The window of try `attempt` (0 for the first after a success). */
int64_t sdfed_backoff_window_ms(int attempt);
/* The delay before try `attempt` for a draw u in [0, 1) and a server's floor (0: none). */
int64_t sdfed_backoff_delay_ms(int attempt, double u, int64_t retry_after_ms);

/* A client's schedule: its tries since the last success, the floor the
 * server last asked for (kept until used), its jitter stream. */
typedef struct sdfed_backoff {
    int attempt;
    int64_t retry_after_ms;
    sdfed_rng jitter;
} sdfed_backoff;

void sdfed_backoff_init(sdfed_backoff *b, uint64_t seed);
/* The server asked not to come back before ms (the largest request is kept). */
void sdfed_backoff_server_asked(sdfed_backoff *b, int64_t retry_after_ms);
/* The delay before the next try: one draw, the floor used up, one more attempt. */
int64_t sdfed_backoff_next_ms(sdfed_backoff *b);
/* A session succeeded: the next try starts from the first window again. */
void sdfed_backoff_reset(sdfed_backoff *b);

#endif
