/* The secrets clients present: the join key (--join-key), which lets a
 * client in (its hello, and every HTTP path but the page's own files), and
 * the metrics token (--metrics-token), which lets Prometheus read /metrics.
 * A secret is 1 to JOIN_KEY_MAX characters from A-Z a-z 0-9 - . _ ~ (it
 * goes into an address as it is), checked at start. It is kept as its
 * SHA-256, and one presented is compared by its SHA-256, every byte of both
 * digests, so that the time a comparison takes says nothing of the secret
 * or its length; a presented one may hold any bytes (a NUL among them). An
 * address that presents wrong secrets is locked out (peers.h): while it
 * is, what it presents is not compared at all. */
#ifndef SDFED_AGGREGATOR_JOIN_KEY_H
#define SDFED_AGGREGATOR_JOIN_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "peers.h"

enum { JOIN_KEY_MAX = 127 };

typedef struct agg_join_key {
    int set;
    unsigned char digest[32];
    char text[JOIN_KEY_MAX + 1]; /* for the links of status.html, which only holders of the key see */
} agg_join_key;

typedef enum agg_join_key_verdict {
    JOIN_KEY_OK,      /* the secret, or none is needed */
    JOIN_KEY_MISSING, /* none presented */
    JOIN_KEY_WRONG,   /* another one */
    JOIN_KEY_LOCKED,  /* not compared: the address is locked out */
} agg_join_key_verdict;

/* key: the flag's value, NULL when the flag is not given (no secret); an
 * error naming flag when it is not a secret. */
int agg_join_key_set(agg_join_key *k, const char *flag, const char *key, sdfed_error *err);
/* Whether len bytes presented are the secret, in a time that depends on
 * len alone. */
int agg_join_key_matches(const agg_join_key *k, const void *presented, size_t len);
/* The verdict on what an address presented (presented NULL: nothing), and
 * its bookkeeping: a wrong one counts toward the address's lock-out, the
 * right one forgives its wrong ones; every refusal counted (agg_peers_refused).
 * *locked_ms: how long the address is locked out for from now (0: it is
 * not; a wrong one may have just locked it). */
agg_join_key_verdict agg_join_key_check(const agg_join_key *k, agg_peers *p, const agg_peer_address *from,
                                        const void *presented, size_t len, int64_t now_ms, int64_t *locked_ms);

#endif
