/* A client's side of one secure round on the host: its state across the
 * four stages, each a step that reads the server's message and writes its
 * own (shared/fed/secagg_message.h): the core's client
 * (fed/secagg_client.h: its state, checks and arithmetic) with
 * native/secagg_keys.h's cryptography between its steps. The headless
 * client sends what it writes over its socket; the simulator hands it to
 * the server in the same process.
 *
 *   advertise  a new X25519 share key pair, a 16-byte mask seed (the mask
 *              key pair derived from it) and a 16-byte self-mask seed b,
 *              all from `secret` (the OS's randomness)
 *   share      from the share_request: the session id, its k + 1 holders
 *              and their keys (k, t and min_inputs must be the plan's, its
 *              own keys in its own slot); b and its mask seed
 *              Shamir-shared with threshold t (coefficients from
 *              `secret`), each advertised neighbour's pair sealed, its own
 *              pair kept
 *   masked     from the masked_request: every pair relayed to it opened
 *              (a sender that is not a neighbour, twice, or that does not
 *              authenticate refuses the request); its input (fed/
 *              secagg_task.h: the change, the seed's rounding, its own
 *              noise) plus its self mask plus a pairwise mask with each
 *              neighbour whose pair it opened
 *   unmask     the request checked as an honest client does
 *              (sdfed_secagg_client_check_request: a refusal is its code
 *              and nothing is written); for each holder named, the share
 *              of b (alive) or of the mask seed (dropped) it holds
 * A step out of order is refused (SDFED_SECAGG_WRONG_STAGE). */
#ifndef SDFED_NATIVE_SECAGG_CLIENT_H
#define SDFED_NATIVE_SECAGG_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "base/io.h"
#include "fed/secagg_client.h"
#include "fed/secagg_random.h"
#include "fed/secagg_stage.h"
#include "fed/secagg_task.h"

typedef struct native_secagg_client {
    sdfed_secagg_client core; /* the protocol's state and checks (fed/secagg_client.h) */
    sdfed_secagg_bytes secret;
    unsigned char share_sk[32]; /* the share key's private half */
    unsigned char mask_sk[32];  /* the mask key's, derived from core.mask_seed */
    /* from the share stage to the masked one: X25519(share_sk, each
     * holder's share key) by slot (agreed_slots of them), 32 bytes each,
     * and which slots have one */
    unsigned char *agreed;
    unsigned char *has_agreed;
    int agreed_slots;
} native_secagg_client;

/* c = a client of round `round` under plan (the round's), with its
 * secrets from `secret`; out = its advertise message. */
int native_secagg_client_advertise(native_secagg_client *c, const sdfed_secagg_plan *plan, int64_t round,
                                   const sdfed_secagg_bytes *secret, sdfed_buffer *out, sdfed_error *err);
int native_secagg_client_share(native_secagg_client *c, const unsigned char *request, size_t len, sdfed_buffer *out,
                               sdfed_error *err);
/* x: its copy of the global parameters after training, g the round's; noise
 * its own randomness (NULL without noise). */
int native_secagg_client_mask(native_secagg_client *c, const unsigned char *request, size_t len, const float *x,
                              const float *g, int64_t samples, const sdfed_secagg_bytes *rounding,
                              const sdfed_secagg_bytes *noise, sdfed_buffer *out, sdfed_error *err);
int native_secagg_client_unmask(native_secagg_client *c, const unsigned char *request, size_t len, sdfed_buffer *out,
                                sdfed_error *err);
void native_secagg_client_free(native_secagg_client *c);

#endif
