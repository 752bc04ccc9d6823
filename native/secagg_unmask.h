/* The end of a secure round on the host: from the server's finished round
 * (native/secagg_server.h, its stage done) to the new global parameters.
 * Each needed secret is reconstructed from the shares the survivors sent
 * (Shamir, fed/secagg_shamir.h): the self-mask seed b_j of every client
 * whose input is in the sum, the mask seed of every client that shared
 * and then dropped (its mask key s_d derived from it); the masks
 * (fed/secagg_stage.h's terms) are removed from a copy of the sum, each a
 * stream of native/secagg_keys.h: b_j's self key, or the pair key of s_d
 * with its surviving neighbour's public key; and the sum is decoded into g + the survivors' mean change
 * (fed/secagg_task.h). The masks are computed on the kernels' thread pool
 * (native_backend's, over the machine's cores: the project's one pool),
 * the terms cut into parts of about equal cost, never inside a dropped
 * client's pair terms (its mask key is set up once for all its surviving
 * neighbours), each part's masks summed apart and the parts then added:
 * addition in Z_{2^B} is exact, so the split changes no bit of the sum.
 * Nothing of the round changes: it can be called again, and a secret that
 * does not reconstruct (a wrong share) fails the round rather than decode
 * a wrong sum. */
#ifndef SDFED_NATIVE_SECAGG_UNMASK_H
#define SDFED_NATIVE_SECAGG_UNMASK_H

#include <stdint.h>

#include "base/status.h"
#include "native/secagg_server.h"

/* next (P) and *weight_sum (the survivors' weights summed) from the done
 * round s and the round's global g (P). */
int native_secagg_server_finish(const native_secagg_server *s, const float *g, float *next, int64_t *weight_sum,
                                sdfed_error *err);

#endif
