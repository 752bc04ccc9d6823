/* Pace steering's bookkeeping (pace.h). */
#include "pace.h"

#include <stdlib.h>

#include "base/grow.h"
#include "base/status.h"

static pace_client *find(const pace_board *b, int64_t client) {
    for (int i = 0; i < b->n; i++)
        if (b->clients[i].client == client) return &b->clients[i];
    return NULL;
}

int pace_missed(pace_board *b, int64_t client, int64_t round) {
    pace_client *c = find(b, client);
    if (!c) {
        pace_client *grown = sdfed_grow(b->clients, &b->cap, b->n, sizeof *grown);
        if (!grown) return SDFED_ERR_NOMEM;
        b->clients = grown;
        c = &b->clients[b->n++];
        *c = (pace_client){.client = client};
    }
    sdfed_pace_missed(&c->pace, round);
    return SDFED_OK;
}

void pace_reported(pace_board *b, int64_t client) {
    pace_client *c = find(b, client);
    if (c) *c = b->clients[--b->n]; /* forgotten: the last takes its place */
}

int64_t pace_rounds_out(const pace_board *b, int64_t client, int64_t round) {
    const pace_client *c = find(b, client);
    return c ? sdfed_pace_rounds_out(&c->pace, round) : 0;
}

void pace_free(pace_board *b) {
    free(b->clients);
    *b = (pace_board){0};
}
