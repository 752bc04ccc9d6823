/* Why no round is open: decided by the round policy (or the federation's
 * end), kept for /status, and logged when it changes (see core.h). */
#include <assert.h>

#include "core.h"
#include "base/names.h"
#include "native/log.h"

static const sdfed_name wait_reason_names[] = {
    [FEDERATION_NOT_WAITING] = {.name = NULL, .value = FEDERATION_NOT_WAITING},
    [FEDERATION_TOO_FEW_CLIENTS] = {.name = "too_few_clients", .value = FEDERATION_TOO_FEW_CLIENTS},
    [FEDERATION_ROUND_PAUSE] = {.name = "round_pause", .value = FEDERATION_ROUND_PAUSE},
    [FEDERATION_FINISHED] = {.name = "finished", .value = FEDERATION_FINISHED},
    [FEDERATION_NOT_COORDINATOR] = {.name = "not_coordinator", .value = FEDERATION_NOT_COORDINATOR},
    [FEDERATION_STARTING] = {.name = "starting", .value = FEDERATION_STARTING},
};
static_assert(sizeof wait_reason_names / sizeof wait_reason_names[0] == FEDERATION_WAIT_REASON_COUNT,
              "a name per wait reason");

const char *agg_federation_wait_reason_name(agg_federation_wait_reason reason) {
    return sdfed_name_of(wait_reason_names, FEDERATION_WAIT_REASON_COUNT, (int)reason);
}

agg_federation_wait_reason agg_core_round_wait_reason(const agg_federation *f, const agg_federation_waiting *w,
                                                      int open, int64_t next_start_ms, int64_t now_ms) {
    if (open) return FEDERATION_NOT_WAITING;
    if (!agg_core_deciding(f)) return FEDERATION_NOT_COORDINATOR;
    if (now_ms < next_start_ms) return FEDERATION_ROUND_PAUSE;
    if (w->connected < w->needed) return FEDERATION_TOO_FEW_CLIENTS;
    return FEDERATION_STARTING;
}

/* Why no round is open now, from the state alone: the clients a round
 * needs connected to start, and those connected here (the policy may count
 * otherwise), with the policy's reason. */
static agg_federation_waiting waiting_now(const agg_federation *f, int64_t now_ms) {
    agg_federation_waiting w = {.needed = f->opt.min_clients > 1 ? f->opt.min_clients : 1, .connected = f->clients.n};
    f->policy->waiting(f, now_ms, &w);
    if (f->done) w.reason = FEDERATION_FINISHED;
    return w;
}

/* A round that starts says so itself; "starting" lasts a tick unless the
 * store refuses the start, which the store logs. */
void agg_core_note_waiting(agg_federation *f, int64_t now_ms) {
    agg_federation_waiting w = waiting_now(f, now_ms);
    if (w.reason != f->waiting.reason && w.reason != FEDERATION_NOT_WAITING && w.reason != FEDERATION_STARTING) {
        native_log_line line;
        native_log_open(&line, "waiting");
        sdfed_jw_string(&line.w, "reason", agg_federation_wait_reason_name(w.reason));
        sdfed_jw_int(&line.w, "round", f->round);
        sdfed_jw_int(&line.w, "needed", w.needed);
        sdfed_jw_int(&line.w, "connected", w.connected);
        native_log_close(&line);
    }
    f->waiting = w;
}
