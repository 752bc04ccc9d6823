/* The clients connected to this process (see roster.h). */
#include "roster.h"

#include <stdlib.h>
#include <string.h>

#include "base/grow.h"

roster_client *roster_find(roster *r, int64_t id) {
    for (int i = 0; i < r->n; i++)
        if (r->clients[i].id == id) return &r->clients[i];
    return NULL;
}

roster_client *roster_join(roster *r, int64_t id, int shard, int *again) {
    roster_client *c = roster_find(r, id);
    *again = c != NULL;
    if (!c) {
        roster_client *grown = sdfed_grow(r->clients, &r->cap, r->n, sizeof *grown);
        if (!grown) return NULL;
        r->clients = grown;
        c = &r->clients[r->n++];
    }
    *c = (roster_client){.id = id, .shard = shard, .assigned = -1, .present = 0};
    return c;
}

void roster_remove(roster *r, int64_t id) {
    roster_client *c = roster_find(r, id);
    if (c) *c = r->clients[--r->n];
}

int roster_holds_shard(const roster *r, int shard) {
    for (int i = 0; i < r->n; i++)
        if (r->clients[i].shard == shard) return 1;
    return 0;
}

void roster_free(roster *r) {
    free(r->clients);
    memset(r, 0, sizeof *r);
}
