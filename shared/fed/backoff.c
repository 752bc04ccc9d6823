/* Reconnection delays: exponential backoff, full jitter, a server's floor. */
#include "fed/backoff.h"

#include <math.h>

int64_t sdfed_backoff_window_ms(int attempt) {
    int64_t window = SDFED_BACKOFF_BASE_MS;
    for (int i = 0; i < attempt && window < SDFED_BACKOFF_CAP_MS; i++) window *= 2;
    return window < SDFED_BACKOFF_CAP_MS ? window : SDFED_BACKOFF_CAP_MS;
}

int64_t sdfed_backoff_delay_ms(int attempt, double u, int64_t retry_after_ms) {
    return (retry_after_ms > 0 ? retry_after_ms : 0) + (int64_t)floor(u * (double)sdfed_backoff_window_ms(attempt));
}

void sdfed_backoff_init(sdfed_backoff *b, uint64_t seed) {
    b->attempt = 0;
    b->retry_after_ms = 0;
    sdfed_rng_seed(&b->jitter, seed);
}

void sdfed_backoff_server_asked(sdfed_backoff *b, int64_t retry_after_ms) {
    if (retry_after_ms > b->retry_after_ms) b->retry_after_ms = retry_after_ms;
}

int64_t sdfed_backoff_next_ms(sdfed_backoff *b) {
    int64_t delay = sdfed_backoff_delay_ms(b->attempt, sdfed_rng_uniform(&b->jitter), b->retry_after_ms);
    b->retry_after_ms = 0;
    if (b->attempt < 64) b->attempt++;
    return delay;
}

void sdfed_backoff_reset(sdfed_backoff *b) { b->attempt = 0; }
