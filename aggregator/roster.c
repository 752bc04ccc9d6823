/* The clients connected to this process (see roster.h). */
#include "roster.h"

#include <stdlib.h>
#include <string.h>

#include "base/grow.h"

agg_roster_client *agg_roster_find(agg_roster *r, int64_t id) {
    for (int i = 0; i < r->n; i++)
        if (r->clients[i].id == id) return &r->clients[i];
    return NULL;
}

agg_roster_client *agg_roster_join(agg_roster *r, int64_t id, int shard, int *again) {
    agg_roster_client *c = agg_roster_find(r, id);
    *again = c != NULL;
    if (!c) {
        agg_roster_client *grown = sdfed_grow(r->clients, &r->cap, r->n, sizeof *grown);
        if (!grown) return NULL;
        r->clients = grown;
        c = &r->clients[r->n++];
    }
    *c = (agg_roster_client){.id = id, .shard = shard, .assigned = -1, .present = 0};
    return c;
}

void agg_roster_remove(agg_roster *r, int64_t id) {
    agg_roster_client *c = agg_roster_find(r, id);
    if (c) *c = r->clients[--r->n];
}

int agg_roster_holds_shard(const agg_roster *r, int shard) {
    for (int i = 0; i < r->n; i++)
        if (r->clients[i].shard == shard) return 1;
    return 0;
}

void agg_roster_free(agg_roster *r) {
    free(r->clients);
    memset(r, 0, sizeof *r);
}
