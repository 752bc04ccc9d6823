/* Secure aggregation's stages for one round, as pure functions in the
 * manner of fed/round.h: the server's bookkeeping of who completed which
 * stage, when a stage ends or the round is abandoned, what each survivor is
 * asked in the unmasking, which masks the sum must lose; and the honest
 * client's check of an unmasking request. No sockets, store, clock or
 * cryptography: callers pass events in, act on verdicts, and compute the
 * PRG streams themselves (native/crypto.h, WebCrypto).
 *
 * Stages (SecAgg+, Bell et al. 2020; Bonawitz et al. 2017 for k = n - 1),
 * each with the set of clients that completed it:
 *   advertise  U1: sent their two public keys
 *   share      U2 (within U1): sent their encrypted share pairs, which the
 *              server relays to their neighbours in U1; a client masks with
 *              exactly the neighbours whose shares it received (its
 *              neighbours in U2)
 *   masked     U3 (within U2): sent their masked input
 *   unmask     U4 (within U3): answered the unmasking request: for each of
 *              its neighbours named alive (in U3) the share of that
 *              neighbour's self-mask seed b, for each named dropped (in
 *              D = U2 \ U3) the share of its mask secret key s
 *   done       the server reconstructs b_j of every j in U3 and s_j of
 *              every j in D with a neighbour in U3, and removes the masks
 *              (sdfed_secagg_server_terms)
 *   abandoned  never unmasked partially
 * A stage ends when every client expected in it has answered or left, or at
 * its deadline; the round is abandoned as soon as the clients that
 * completed the stage plus those still due fall below min_inputs (advertise,
 * share, masked), or, in the unmasking, as soon as some secret to
 * reconstruct has fewer than t of its k + 1 holders among the answers plus
 * those still due. U3 and D are frozen when the unmasking starts and are
 * disjoint: no client is ever asked for both shares of one client.
 *
 * Every refusal is a sdfed_secagg_code (below), its message in err; the
 * wire names (sdfed_secagg_code_name) are what the protocol will carry. */
#ifndef SDFED_SECAGG_STAGE_H
#define SDFED_SECAGG_STAGE_H

#include <stdint.h>

#include "base/arena.h"
#include "base/status.h"
#include "fed/secagg_graph.h"
#include "fed/secagg_params.h"

typedef enum sdfed_secagg_stage {
    SDFED_SECAGG_ADVERTISE,
    SDFED_SECAGG_SHARE,
    SDFED_SECAGG_MASKED,
    SDFED_SECAGG_UNMASK,
    SDFED_SECAGG_DONE,
    SDFED_SECAGG_ABANDONED,
    SDFED_SECAGG_STAGE_COUNT
} sdfed_secagg_stage;

/* What the stage functions return: 0 or one of these, each documented. */
typedef enum sdfed_secagg_code {
    SDFED_SECAGG_OK = 0,
    SDFED_SECAGG_WRONG_STAGE = 100, /* a message or request for another stage than the round's */
    SDFED_SECAGG_NOT_IN_ROUND,      /* a client that is not one of the round's, or left it */
    SDFED_SECAGG_REPEATED,          /* a client's second message in one stage, or a client named twice */
    SDFED_SECAGG_MISSED_STAGE,      /* a client that did not complete the stage before */
    SDFED_SECAGG_BOTH_SETS,         /* an unmasking request names a client both alive and dropped */
    SDFED_SECAGG_NOT_NEIGHBOUR,     /* an unmasking request names a client that is not a neighbour */
    SDFED_SECAGG_INCONSISTENT,      /* an unmasking request disagrees with the shares the client received */
    SDFED_SECAGG_SELF_NOT_ALIVE,    /* an unmasking request does not name its own client alive */
    SDFED_SECAGG_TOO_FEW,           /* an unmasking request for fewer inputs than the round accepts */
    SDFED_SECAGG_CODE_END
} sdfed_secagg_code;

/* "secagg_wrong_stage", ...; NULL for an unknown code. */
const char *sdfed_secagg_code_name(int code);
const char *sdfed_secagg_stage_name(sdfed_secagg_stage stage);

/* ---- the server --------------------------------------------------------- */

typedef struct sdfed_secagg_server {
    int64_t round;
    sdfed_secagg_params params;
    const sdfed_secagg_graph *graph;
    sdfed_secagg_stage stage;
    unsigned char *flags; /* (n) per client: the stages it completed, whether it left */
    int *answered;        /* (n) unmasking: holders of j's shares that answered */
    int *reachable;       /* (n) unmasking: those plus the ones still due */
    int completed;        /* clients that completed the current stage */
    int due;              /* clients expected in it that have not answered nor left */
    int short_of_t;       /* unmasking: secrets needed with answered < t */
    int lost;             /* unmasking: secrets needed with reachable < t */
    char why[200];        /* why the round was abandoned */
} sdfed_secagg_server;

/* s = round `round` at its advertise stage over p's clients and graph g
 * (which s keeps a pointer to), its arrays from the arena. */
int sdfed_secagg_server_start(sdfed_secagg_server *s, int64_t round, const sdfed_secagg_params *p,
                              const sdfed_secagg_graph *g, sdfed_arena *arena, sdfed_error *err);
/* Client `client` completed stage `stage` (its message arrived). */
int sdfed_secagg_server_receive(sdfed_secagg_server *s, int client, sdfed_secagg_stage stage, sdfed_error *err);
/* Client `client` left (disconnected): it is out of the round for good.
 * Leaving twice, or after the round ended, changes nothing. */
int sdfed_secagg_server_leave(sdfed_secagg_server *s, int client, sdfed_error *err);

typedef enum sdfed_secagg_verdict {
    SDFED_SECAGG_WAIT,    /* answers are still due */
    SDFED_SECAGG_NEXT,    /* end this stage: sdfed_secagg_server_advance */
    SDFED_SECAGG_ABANDON, /* the round cannot succeed: sdfed_secagg_server_abandon */
} sdfed_secagg_verdict;

sdfed_secagg_verdict sdfed_secagg_server_check(const sdfed_secagg_server *s, int deadline_passed);
/* Ends the current stage (the verdict was NEXT): the next stage's expected
 * clients are those that completed this one. From the unmasking, to done. */
int sdfed_secagg_server_advance(sdfed_secagg_server *s, sdfed_error *err);
/* The round is abandoned; why (a sentence) is kept in s->why. */
void sdfed_secagg_server_abandon(sdfed_secagg_server *s, const char *why);

/* Whether client i completed stage `stage`, and whether it left. */
int sdfed_secagg_server_completed(const sdfed_secagg_server *s, int client, sdfed_secagg_stage stage);
int sdfed_secagg_server_gone(const sdfed_secagg_server *s, int client);

enum { SDFED_SECAGG_NONE, SDFED_SECAGG_SELF_SEED, SDFED_SECAGG_MASK_KEY };

/* From the unmasking on: which secret of client j the server reconstructs
 * (SDFED_SECAGG_SELF_SEED for j in U3, SDFED_SECAGG_MASK_KEY for j in D with
 * a neighbour in U3, else NONE). Never both. */
int sdfed_secagg_server_needs(const sdfed_secagg_server *s, int j);
/* The unmasking request to client i (in U3): alive (k + 1 ints) receives
 * its holders in U3, itself included, and dropped (k) its neighbours in D,
 * each in increasing order. */
int sdfed_secagg_server_request(const sdfed_secagg_server *s, int client, int *alive, int *n_alive, int *dropped,
                                int *n_dropped, sdfed_error *err);

typedef struct sdfed_secagg_term {
    int kind; /* SDFED_SECAGG_SELF_SEED: client a's self mask; SDFED_SECAGG_MASK_KEY: the pair (a, b) */
    int a, b; /* a in U3; b in D for a pair term (b = a for a self term) */
    int sign; /* +1 or -1: add this PRG stream to the sum, times sign, to remove the mask */
} sdfed_secagg_term;

/* terms (room for capacity) = every mask to remove from the sum of U3's
 * inputs once the round is done: each j in U3's self mask (sign -1), and
 * for each d in D and each neighbour a of d in U3, their pair's mask that a
 * added with sign pair_sign(a, d) (so the term's sign is its opposite). */
int sdfed_secagg_server_terms(const sdfed_secagg_server *s, sdfed_secagg_term *terms, int capacity, int *count,
                              sdfed_error *err);

/* ---- the client --------------------------------------------------------- */

typedef struct sdfed_secagg_client_view {
    int self;                         /* the client's place in the round */
    int holders;                      /* k + 1 */
    const int *holder;                /* (holders) the client in each slot, as the share stage named them */
    const unsigned char *masked_with; /* (holders) 1 for each neighbour whose shares it received and masked with */
    int min_inputs;                   /* the fewest inputs the round accepts */
} sdfed_secagg_client_view;

/* The honest client's check of an unmasking request naming alive and
 * dropped clients and the number of masked inputs the server says it holds.
 * Refuses (returning the code, no reply to send): a client named twice
 * (REPEATED), in both sets (BOTH_SETS), not a holder (NOT_NEIGHBOUR), itself
 * dropped or not named alive (SELF_NOT_ALIVE), a neighbour named that it did
 * not mask with or one it masked with left unnamed (INCONSISTENT), fewer
 * inputs than min_inputs (TOO_FEW). On success reply (holders) says, per
 * slot, which share to return: SDFED_SECAGG_SELF_SEED, SDFED_SECAGG_MASK_KEY
 * or SDFED_SECAGG_NONE. */
int sdfed_secagg_client_check_request(const sdfed_secagg_client_view *v, const int *alive, int n_alive,
                                      const int *dropped, int n_dropped, int inputs, unsigned char *reply,
                                      sdfed_error *err);

#endif
