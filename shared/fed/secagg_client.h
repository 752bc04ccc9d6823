/* Secure aggregation: a client's side of one round without its
 * cryptography. The state a client keeps across the four stages, the
 * server's requests read and checked (fed/secagg_message.h), its secrets
 * Shamir-shared, its input made and the masks added in the ring, the
 * unmasking answered; the caller does the cryptography between these steps
 * by the layouts of fed/secagg_layout.h: natively OpenSSL
 * (native/secagg_client.h), in the page WebCrypto (web/secagg.js through
 * wasm-client/api.h). Both clients therefore check the same things and
 * write the same bytes.
 *
 *   advertise  sdfed_secagg_client_start: the caller's 16-byte mask seed
 *              (shared below) and the public half of the mask key derived
 *              from it (fed/secagg_layout.h, purpose 0x05), its share
 *              public key (the private half stays with the caller's
 *              cryptography) and a 16-byte self-mask seed b, all new each
 *              round; writes `advertise`
 *   share      sdfed_secagg_client_share: the share_request checked (n, k,
 *              t and min_inputs the plan's, no client in two slots, its own
 *              keys in its own slot), b and the mask seed Shamir-shared
 *              with threshold t among the k + 1 holders (coefficients
 *              from `random`): pairs (k + 1 x 48) = the share
 *              pair for each slot, its own kept. The caller seals the pair
 *              of every slot sdfed_secagg_client_recipient names (the
 *              neighbours that advertised) with the share key of (self,
 *              that holder), and sdfed_secagg_client_write_shares writes
 *              them, in slot order, as `shares`
 *   masked     sdfed_secagg_client_relayed: the masked_request's senders
 *              checked (an advertised neighbour, NOT_NEIGHBOUR; once,
 *              REPEATED); the caller opens each pair with the share key of
 *              (sender, self) and hands it to sdfed_secagg_client_keep_pair
 *              (one that does not authenticate: the caller abandons);
 *              sdfed_secagg_client_input makes its input (fed/
 *              secagg_task.h); the caller adds the mask stream of every
 *              slot sdfed_secagg_client_masks_with names through
 *              sdfed_secagg_client_add_mask: its own slot its self mask
 *              (self key from b, sign +1), a neighbour's their pair mask
 *              (pair key, sign fed/secagg_ring.h's pair_sign); then
 *              sdfed_secagg_client_write_masked writes `masked` (refused
 *              unless every one of those masks was added, once)
 *   unmask     sdfed_secagg_client_unmask: the request checked as an honest
 *              client does (sdfed_secagg_client_check_request: a refusal is
 *              its code, nothing written) and answered with the shares it
 *              names
 * c->stage is the next step's stage; a step out of order is
 * SDFED_SECAGG_WRONG_STAGE, and a refused step leaves the client
 * SDFED_SECAGG_ABANDONED (it sends nothing more in the round: an honest
 * client answers at most one unmasking request). */
#ifndef SDFED_SECAGG_CLIENT_H
#define SDFED_SECAGG_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "base/io.h"
#include "base/status.h"
#include "fed/secagg_layout.h"
#include "fed/secagg_message.h"
#include "fed/secagg_random.h"
#include "fed/secagg_stage.h"
#include "fed/secagg_task.h"

typedef struct sdfed_secagg_client {
    sdfed_secagg_plan plan;
    int64_t round;
    sdfed_secagg_stage stage; /* the next step: advertise, share, masked, unmask, then done */
    unsigned char mask_seed[SDFED_SHAMIR_SECRET_BYTES], seed[SDFED_SHAMIR_SECRET_BYTES]; /* its two secrets */
    unsigned char mask_pk[32], share_pk[32], session[32];
    int self, holders;
    int *holder;                /* (holders) the client in each slot */
    unsigned char *keys;        /* (holders) x 64: each holder's mask key || share key (zeros: not advertised) */
    unsigned char *pairs;       /* (holders) x 48: the share pair each holder sent it (its own in its slot) */
    unsigned char *masked_with; /* (holders) 1 for each neighbour whose pair it opened */
    unsigned char *added;       /* (holders) 1 for each slot whose mask is in `masked` */
    int have_input;
    uint64_t *input;  /* (P + 1) its input before masking (for the parity checks) */
    uint64_t *masked; /* (P + 1) the input plus the masks added so far */
} sdfed_secagg_client;

/* c = a client of round `round` under plan (the round's) with its mask
 * seed (16), public keys (32 each) and self-mask seed (16); out = its
 * advertise message. */
int sdfed_secagg_client_start(sdfed_secagg_client *c, const sdfed_secagg_plan *plan, int64_t round,
                              const unsigned char mask_seed[SDFED_SHAMIR_SECRET_BYTES], const unsigned char mask_pk[32],
                              const unsigned char share_pk[32], const unsigned char seed[SDFED_SHAMIR_SECRET_BYTES],
                              sdfed_buffer *out, sdfed_error *err);
/* The share_request read and checked; pairs (k + 1) x 48 = the share pair
 * for each slot (coefficients drawn from random). */
int sdfed_secagg_client_share(sdfed_secagg_client *c, const unsigned char *request, size_t len,
                              const sdfed_secagg_bytes *random, unsigned char *pairs, sdfed_error *err);
/* Whether the client seals its pair for slot's holder: a neighbour that
 * advertised (not itself). */
int sdfed_secagg_client_recipient(const sdfed_secagg_client *c, int slot);
/* out = `shares` from sealed (64 bytes for each recipient, in slot order). */
int sdfed_secagg_client_write_shares(sdfed_secagg_client *c, const unsigned char *sealed, sdfed_buffer *out,
                                     sdfed_error *err);
/* The masked_request read, its senders checked: relayed = its entries
 * (sender (4) || sealed pair (64) each), slots (room for k) = each
 * sender's slot. */
int sdfed_secagg_client_relayed(sdfed_secagg_client *c, const unsigned char *request, size_t len,
                                sdfed_secagg_list *relayed, int *slots, sdfed_error *err);
/* The pair (48) opened from slot's holder. */
int sdfed_secagg_client_keep_pair(sdfed_secagg_client *c, int slot, const unsigned char pair[SDFED_SECAGG_PAIR_BYTES],
                                  sdfed_error *err);
/* Its input (sdfed_secagg_input: x, g (P each), its sample count, the
 * rounding, its own noise or NULL), the start of `masked`. */
int sdfed_secagg_client_input(sdfed_secagg_client *c, const float *x, const float *g, int64_t samples,
                              const sdfed_secagg_bytes *rounding, const sdfed_secagg_bytes *noise, sdfed_error *err);
/* Whether slot's mask goes into the input: its own slot, and each
 * neighbour whose pair it kept. */
int sdfed_secagg_client_masks_with(const sdfed_secagg_client *c, int slot);
/* The mask stream (stream_bytes = sdfed_secagg_stream_bytes(B, P + 1)) of
 * slot (its own: the self key's; a neighbour's: their pair key's) added to
 * the input with the slot's sign. */
int sdfed_secagg_client_add_mask(sdfed_secagg_client *c, int slot, const unsigned char *stream, size_t stream_bytes,
                                 sdfed_error *err);
/* out = `masked`, once every mask is in. */
int sdfed_secagg_client_write_masked(sdfed_secagg_client *c, sdfed_buffer *out, sdfed_error *err);
/* The unmask_request checked and answered (out = `unmask`); a refusal
 * returns its sdfed_secagg_code. */
int sdfed_secagg_client_unmask(sdfed_secagg_client *c, const unsigned char *request, size_t len, sdfed_buffer *out,
                               sdfed_error *err);
/* The client leaves the round (its caller's step failed). */
void sdfed_secagg_client_abandon(sdfed_secagg_client *c);
/* Its secrets wiped, its memory freed. */
void sdfed_secagg_client_free(sdfed_secagg_client *c);

#endif
