/* The typed messages left for the network layer (see outbox.h). */
#include "outbox.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "native/log.h"

void agg_outbox_put(agg_outbox *o, agg_federation_message m) {
    agg_federation_message *grown = sdfed_grow(o->messages, &o->cap, o->n, sizeof *grown);
    if (!grown) {
        free(m.bytes);
        native_log_line line;
        native_log_open(&line, "error");
        sdfed_jw_stringf(&line.w, "message", "out of memory queueing a message for client %lld", (long long)m.client);
        native_log_close(&line);
        return;
    }
    o->messages = grown;
    o->messages[o->n++] = m;
}

void agg_outbox_clear(agg_outbox *o) {
    for (int i = 0; i < o->n; i++) free(o->messages[i].bytes);
    o->n = 0;
}

void agg_outbox_free(agg_outbox *o) {
    agg_outbox_clear(o);
    free(o->messages);
    memset(o, 0, sizeof *o);
}

void agg_outbox_round_start(agg_outbox *o, int64_t client, int64_t round, int64_t deadline_ms) {
    agg_outbox_put(o,
                   (agg_federation_message){
                       .type = FEDERATION_ROUND_START, .client = client, .round = round, .deadline_ms = deadline_ms});
}

void agg_outbox_wait(agg_outbox *o, int64_t client, int64_t round, const char *reason) {
    agg_outbox_put(
        o, (agg_federation_message){.type = FEDERATION_WAIT, .client = client, .round = round, .reason = reason});
}

void agg_outbox_wait_paced(agg_outbox *o, int64_t client, int64_t round, int64_t retry_after_ms) {
    agg_outbox_put(o, (agg_federation_message){.type = FEDERATION_WAIT,
                                               .client = client,
                                               .round = round,
                                               .reason = "paced",
                                               .retry_after_ms = retry_after_ms});
}

void agg_outbox_done(agg_outbox *o, int64_t client, int64_t rounds) {
    agg_outbox_put(o, (agg_federation_message){.type = FEDERATION_DONE, .client = client, .rounds = rounds});
}

void agg_outbox_refusal(agg_outbox *o, int64_t client, int64_t round, sdfed_code code, const char *format, ...) {
    agg_federation_message m = {.type = FEDERATION_REFUSAL, .client = client, .round = round, .code = code};
    char why[256];
    static_assert(sizeof m.text >= sizeof why, "a refusal's text holds its reason");
    va_list args;
    va_start(args, format);
    vsnprintf(why, sizeof why, format, args);
    va_end(args);
    memcpy(m.text, why, sizeof why);
    agg_outbox_put(o, m);
}
