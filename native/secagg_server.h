/* The server's side of one secure round on the host: the core's stage
 * machine (fed/secagg_stage.h) fed with the clients' messages
 * (fed/secagg_message.h), whatever it must keep from them (public keys,
 * the sealed pairs to relay, the running sum of masked inputs, the shares
 * of the unmasking), and the messages it sends. Pure steps over bytes: the
 * aggregator calls them with the messages it stored (and calls them again
 * with the same messages after a restart), the simulator with those its
 * clients wrote. secagg_unmask.h turns the finished round into the sum.
 *
 * Receiving checks the message completely before it changes anything (a
 * refused message leaves the round as it was): its kind against the
 * round's stage (SDFED_SECAGG_WRONG_STAGE), the client (NOT_IN_ROUND,
 * MISSED_STAGE, REPEATED: the stage machine's codes), then its content,
 * SDFED_ERR_FORMAT naming what is wrong:
 *   advertise  64 bytes of keys, neither all zeros nor equal to any key
 *              already advertised in the round (either kind)
 *   shares     exactly one sealed pair for each of its holders that
 *              advertised, itself left out (a client that is none of them:
 *              NOT_NEIGHBOUR; twice: REPEATED)
 *   masked     P + 1 values packed at B bits, added to the sum at once
 *   unmask     exactly the shares the client was asked for: for each holder
 *              the request named alive the share of its seed, for each named
 *              dropped the share of its mask seed (another: INCONSISTENT,
 *              NOT_NEIGHBOUR, REPEATED), each a field element
 * The session id is computed when the advertise stage ends. The graph is
 * the plan's, shuffled by an AES-256-CTR keystream of a 32-byte key the
 * caller chooses (the aggregator from getrandom, stored with the round; the
 * simulator from the seed), so a stored key rebuilds the same round. */
#ifndef SDFED_NATIVE_SECAGG_SERVER_H
#define SDFED_NATIVE_SECAGG_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/io.h"
#include "fed/secagg_graph.h"
#include "fed/secagg_shamir.h"
#include "fed/secagg_stage.h"
#include "fed/secagg_task.h"

typedef struct native_secagg_server {
    sdfed_secagg_plan plan;
    int64_t round;
    sdfed_secagg_graph graph;
    sdfed_secagg_server stages;
    unsigned char session[32];
    unsigned char *mask_keys;  /* (n) x 32: each client's advertised keys (zeros: none yet) */
    unsigned char *share_keys; /* (n) x 32 */
    uint32_t *key_index;       /* (key_slots) the advertised keys by a hash salted from the graph key, open
                                  addressing: 2 x client + (0 mask, 1 share) + 1, 0 empty */
    size_t key_slots;          /* a power of two, at least 4 n */
    uint64_t key_salt;
    unsigned char *relay;       /* (n) x (k + 1) x 64: sealed pairs for each recipient, by the sender's slot */
    unsigned char *relayed;     /* (n) x (k + 1): which of those arrived */
    uint64_t *sum;              /* (P + 1) the masked inputs received, added in the ring */
    sdfed_shamir_share *shares; /* (n) x (k + 1): the shares received of each client's needed secret */
    int *n_shares;              /* (n) */
    sdfed_arena arena;
} native_secagg_server;

/* s = round `round` under plan, at its advertise stage; its graph from
 * graph_key. */
int native_secagg_server_start(native_secagg_server *s, const sdfed_secagg_plan *plan, int64_t round,
                               const unsigned char graph_key[32], sdfed_error *err);
void native_secagg_server_free(native_secagg_server *s);

/* Client `client`'s message (any kind): checked, then kept. */
int native_secagg_server_receive(native_secagg_server *s, int client, const unsigned char *msg, size_t len,
                                 sdfed_error *err);
/* The stage a client's message of `kind` belongs to, or -1 for a message
 * the server sends. */
int native_secagg_server_stage_of(int kind);
/* Client `client` left the round. */
int native_secagg_server_leave(native_secagg_server *s, int client, sdfed_error *err);
/* What to do now (the stage machine's verdict). */
sdfed_secagg_verdict native_secagg_server_check(const native_secagg_server *s, int deadline_passed);
/* Ends the stage (the verdict was NEXT). */
int native_secagg_server_advance(native_secagg_server *s, sdfed_error *err);
/* out = the message the current stage sends client `client`: its
 * share_request, masked_request or unmask_request. */
int native_secagg_server_request(const native_secagg_server *s, int client, sdfed_buffer *out, sdfed_error *err);

#endif
