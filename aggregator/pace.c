/* Pace steering's bookkeeping (pace.h). */
#include "pace.h"

#include <stdlib.h>

#include "base/grow.h"
#include "base/status.h"

static agg_pace_client *find(const agg_pace_board *b, int64_t client) {
    for (int i = 0; i < b->n; i++)
        if (b->clients[i].client == client) return &b->clients[i];
    return NULL;
}

int agg_pace_missed(agg_pace_board *b, int64_t client, int64_t round) {
    agg_pace_client *c = find(b, client);
    if (!c) {
        agg_pace_client *grown = sdfed_grow(b->clients, &b->cap, b->n, sizeof *grown);
        if (!grown) return SDFED_ERR_NOMEM;
        b->clients = grown;
        c = &b->clients[b->n++];
        *c = (agg_pace_client){.client = client};
    }
    sdfed_pace_missed(&c->pace, round);
    return SDFED_OK;
}

void agg_pace_reported(agg_pace_board *b, int64_t client) {
    agg_pace_client *c = find(b, client);
    if (c) *c = b->clients[--b->n]; /* forgotten: the last takes its place */
}

sdfed_pace agg_pace_state(const agg_pace_board *b, int64_t client) {
    const agg_pace_client *c = find(b, client);
    return c ? c->pace : (sdfed_pace){0};
}

int64_t agg_pace_rounds_out(const agg_pace_board *b, int64_t client, int64_t round) {
    const agg_pace_client *c = find(b, client);
    return c ? sdfed_pace_rounds_out(&c->pace, round) : 0;
}

void agg_pace_free(agg_pace_board *b) {
    free(b->clients);
    *b = (agg_pace_board){0};
}
