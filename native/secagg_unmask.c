/* The end of a secure round on the host (see secagg_unmask.h). */
#include "native/secagg_unmask.h"

#include <stdlib.h>
#include <string.h>

#include "native/secagg_keys.h"

/* secrets (n x 32) = every needed secret, reconstructed */
static int reconstruct(const secagg_server *s, unsigned char *secrets, sdfed_error *err) {
    const int n = s->plan.params.n, h = s->plan.params.k + 1, t = s->plan.params.t;
    uint64_t *scratch = malloc(sizeof *scratch * 3 * (size_t)t);
    int rc = scratch ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "secagg: out of memory");
    for (int j = 0; j < n && rc == SDFED_OK; j++) {
        int need = sdfed_secagg_server_needs(&s->stages, j);
        if (!need) continue;
        rc = sdfed_shamir_combine(s->shares + (size_t)j * (size_t)h, s->n_shares[j], t, h, scratch,
                                  secrets + 32 * (size_t)j, err);
        if (rc)
            sdfed_fail_context(err, rc, "secagg round %lld: client %d's %s from %d shares", (long long)s->round, j,
                               need == SDFED_SECAGG_SELF_SEED ? "seed" : "mask key", s->n_shares[j]);
    }
    free(scratch);
    return rc;
}

int secagg_server_finish(const secagg_server *s, const float *g, float *next, int64_t *weight_sum, sdfed_error *err) {
    if (s->stages.stage != SDFED_SECAGG_DONE)
        return sdfed_fail(err, SDFED_SECAGG_WRONG_STAGE, "secagg round %lld is %s, not done", (long long)s->round,
                          sdfed_secagg_stage_name(s->stages.stage));
    const int n = s->plan.params.n, bits = s->plan.ring.ring_bits;
    const size_t values = s->plan.dims + 1;
    /* at most one self term for each client and a pair term for each edge */
    int capacity = n + n * s->plan.params.k, count = 0;
    unsigned char *secrets = calloc((size_t)n, 32);
    uint64_t *sum = malloc(sizeof *sum * values);
    sdfed_secagg_term *terms = malloc(sizeof *terms * (size_t)capacity);
    int rc = secrets && sum && terms ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "secagg: out of memory");
    if (rc == SDFED_OK) rc = reconstruct(s, secrets, err);
    if (rc == SDFED_OK) rc = sdfed_secagg_server_terms(&s->stages, terms, capacity, &count, err);
    if (rc == SDFED_OK) memcpy(sum, s->sum, sizeof *sum * values);
    for (int i = 0; i < count && rc == SDFED_OK; i++) {
        const sdfed_secagg_term *m = &terms[i];
        unsigned char key[32];
        if (m->kind == SDFED_SECAGG_SELF_SEED)
            rc = sdfed_secagg_self_key(secrets + 32 * (size_t)m->a, s->session, s->round, (uint32_t)m->a, key, err);
        else /* the dropped client's mask key with its surviving neighbour's public key */
            rc = sdfed_secagg_pair_key(secrets + 32 * (size_t)m->b, s->mask_keys + 32 * (size_t)m->a, s->session,
                                       s->round, (uint32_t)m->b, (uint32_t)m->a, key, err);
        if (rc == SDFED_OK) rc = sdfed_secagg_add_mask(key, bits, sum, values, m->sign, err);
        memset(key, 0, sizeof key);
    }
    if (rc == SDFED_OK) rc = sdfed_secagg_global(&s->plan, sum, g, next, weight_sum, err);
    if (secrets) memset(secrets, 0, 32 * (size_t)n);
    free(secrets), free(sum), free(terms);
    return rc;
}
