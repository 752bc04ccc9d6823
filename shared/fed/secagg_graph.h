/* Secure aggregation: who holds whose shares. The sampled clients 0..n-1
 * (their places in the round) sit on a ring in a shuffled order; each is the
 * neighbour of the k/2 clients on either side of it (the Harary graph H(k,
 * n), Bell et al. 2020), or of everybody in the complete graph (k = n - 1).
 * Pairwise masks join neighbours; a client's secrets are shared among its
 * k + 1 holders: itself and its neighbours.
 *
 *   shuffle   the ring is the identity permuted by Fisher-Yates from the
 *             last place down, client_at[p] <-> client_at[below(p + 1)],
 *             below() drawn from the byte source (fed/secagg_random.h:
 *             rejection-sampled little-endian u64s). The server passes a
 *             keystream (AES-256-CTR, key = 32 bytes from getrandom, IV 0,
 *             native/crypto.h): the shuffle is as unpredictable as the key,
 *             and a key stored with the round rebuilds the same graph after
 *             a restart. The complete graph draws nothing.
 *   holders   client i's holder in slot s (0 <= s <= k): in a Harary graph
 *             the client at ring place position[i] - k/2 + s (mod n), so i
 *             itself is slot k/2; in the complete graph client s, so i is
 *             slot i. A share's Shamir x coordinate is its slot + 1.
 * j is a neighbour of i exactly when i is one of j's: the graph is
 * symmetric by construction. */
#ifndef SDFED_SECAGG_GRAPH_H
#define SDFED_SECAGG_GRAPH_H

#include "base/arena.h"
#include "base/status.h"
#include "fed/secagg_params.h"
#include "fed/secagg_random.h"

typedef struct sdfed_secagg_graph {
    int n, k, complete;
    int *client_at; /* (n) the client at each ring place */
    int *position;  /* (n) each client's ring place */
} sdfed_secagg_graph;

/* g = the graph of p's n clients and k neighbours, its two arrays (2n ints)
 * from the arena; shuffle is read only for a Harary graph. */
int sdfed_secagg_graph_make(sdfed_secagg_graph *g, const sdfed_secagg_params *p, const sdfed_secagg_bytes *shuffle,
                            sdfed_arena *arena, sdfed_error *err);
/* k + 1: the holders of each client's shares, itself included */
int sdfed_secagg_graph_holders(const sdfed_secagg_graph *g);
/* The client in slot `slot` (0..k) of client i's holders. */
int sdfed_secagg_graph_holder(const sdfed_secagg_graph *g, int i, int slot);
/* j's slot among i's holders, -1 when j is neither i nor a neighbour. */
int sdfed_secagg_graph_slot(const sdfed_secagg_graph *g, int i, int j);
/* Whether i and j (i != j) are neighbours. */
int sdfed_secagg_graph_adjacent(const sdfed_secagg_graph *g, int i, int j);

#endif
