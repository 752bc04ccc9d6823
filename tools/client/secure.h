/* The headless client's secure rounds (docs/protocol.md, "Secure rounds"):
 * native/secagg_client.h's four steps driven by the server's round_start
 * and request frames, each answer sent as a secure frame, its randomness
 * from the OS (getrandom). An honest client's refusal (a request that
 * names a neighbour both alive and dropped, a pair that does not
 * authenticate, a request it cannot read) is sent as secagg_refusal with
 * its code, and the client takes no further part in that round. The masked
 * input waits for the round's training; a masked_request that comes first
 * is kept until then. It leaves a round as the task's model of dropouts
 * says (sdfed_secagg_drops_out: before its keys, its shares, its masked
 * input or its unmasking answer, as the simulator's clients): vanish is
 * then set, for the caller to close its connection. Its last message is kept too, and sent again when
 * the server asks again for what it answered already (a server that came
 * back after kill -9 without having stored it; one it had stored is
 * refused, harmlessly). */
#ifndef SDFED_CLIENT_SECURE_H
#define SDFED_CLIENT_SECURE_H

#include <stddef.h>
#include <stdint.h>

#include "fed/protocol.h"
#include "fed/task.h"
#include "native/crypto.h"
#include "native/secagg_client.h"

/* How the client's messages go out (its socket). */
typedef void (*client_send_fn)(void *ctx, const void *data, size_t len, int binary);

typedef struct client_secure {
    int64_t round; /* the secure round it takes part in (-1: none) */
    int64_t index; /* the client as the task's rounding names it (its shard) */
    native_secagg_client sa;
    native_crypto_stream own; /* its randomness: a keystream under a key from getrandom */
    float *global;            /* (dims) the round's parameters */
    size_t dims;
    float *trained;                /* (dims) its parameters after training, once trained */
    int64_t samples;               /* its training-sample count */
    int vanish;                    /* it leaves the round (the task's dropouts): the caller closes its connection */
    sdfed_buffer last;             /* its last message (a secagg message), sent again when asked again */
    unsigned char *masked_request; /* a masked_request that came before the training ended */
    size_t masked_request_len;
    const sdfed_task *task;
    client_send_fn send;
    void *ctx;
    char log[SDFED_ERROR_MESSAGE_MAX + 96]; /* what it did last, for the client's log */
} client_secure;

void client_secure_init(client_secure *s, const sdfed_task *task, int64_t index, client_send_fn send, void *ctx);
/* round_start m of a secure round with its parameters (dims): joins the
 * round and advertises its keys; the same round again (the server came
 * back) goes on where it was. Non-zero when it cannot take part (refused
 * to the server, said in s->log). */
int client_secure_start(client_secure *s, const sdfed_message *m, const float *global, size_t dims);
/* A secure frame from the server (its request): the step it asks for. */
void client_secure_request(client_secure *s, const unsigned char *frame, size_t len);
/* The round's training ended with x (dims) on `samples` examples: its
 * masked input goes when the request for it is there. */
void client_secure_trained(client_secure *s, int64_t round, const float *x, int64_t samples);
/* The round it is in ended (or it leaves it): its secrets forgotten. */
void client_secure_end(client_secure *s);

#endif
