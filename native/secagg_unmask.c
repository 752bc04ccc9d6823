/* The end of a secure round on the host (see secagg_unmask.h). */
#include "native/secagg_unmask.h"

#include <stdlib.h>
#include <string.h>

#include "fed/secagg_ring.h"
#include "kernels/kernels.h"
#include "native/model.h"
#include "native/secagg_keys.h"

/* An X25519 agreement costs about as much as this many bytes of mask stream
 * (AES-CTR and the ring addition): 50 to 60 µs against about 1 GB/s. The
 * parts are balanced by this weight; it changes no bit of the sum. */
#define AGREEMENT_STREAM_BYTES (64 * 1024)
/* the pool's measure of work (kernels.h: multiply-adds of a linear layer)
 * that a byte of mask stream costs about as much as */
#define WORK_PER_STREAM_BYTE 8.0

/* secrets (n x 16) = every needed secret, reconstructed */
static int reconstruct(const native_secagg_server *s, unsigned char *secrets, sdfed_error *err) {
    const int n = s->plan.params.n, h = s->plan.params.k + 1, t = s->plan.params.t;
    uint64_t *scratch = malloc(sizeof *scratch * 3 * (size_t)t);
    int rc = scratch ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "secagg: out of memory");
    for (int j = 0; j < n && rc == SDFED_OK; j++) {
        int need = sdfed_secagg_server_needs(&s->stages, j);
        if (!need) continue;
        rc = sdfed_shamir_combine(s->shares + (size_t)j * (size_t)h, s->n_shares[j], t, h, scratch,
                                  secrets + SDFED_SECAGG_SEED_BYTES * (size_t)j, err);
        if (rc)
            sdfed_fail_context(err, rc, "secagg round %lld: client %d's %s from %d shares", (long long)s->round, j,
                               need == SDFED_SECAGG_SELF_SEED ? "seed" : "mask seed", s->n_shares[j]);
    }
    free(scratch);
    return rc;
}

/* A run of the terms whose masks one thread sums apart. */
typedef struct unmask_part {
    int first, end;  /* its terms [first, end) */
    uint64_t *masks; /* (values) their streams, each times its sign, summed in the ring */
    int rc;
    sdfed_error err;
} unmask_part;

typedef struct unmasking {
    const native_secagg_server *s;
    const unsigned char *secrets; /* (n x 16) */
    const sdfed_secagg_term *terms;
    unmask_part *parts;
    size_t values;
} unmasking;

/* The part's masks: a self term's from its seed; a dropped client's pair
 * terms (consecutive in the terms) with its mask key, derived from its mask
 * seed, set up once for all its surviving neighbours' public keys. */
static void sum_part(const unmasking *u, unmask_part *part) {
    const native_secagg_server *s = u->s;
    native_x25519_key dropped = {0};
    int owner = -1; /* whose mask key `dropped` holds */
    int rc = SDFED_OK;
    for (int i = part->first; i < part->end && rc == SDFED_OK; i++) {
        const sdfed_secagg_term *m = &u->terms[i];
        unsigned char key[32];
        if (m->kind == SDFED_SECAGG_SELF_SEED) {
            rc = native_secagg_self_key(u->secrets + SDFED_SECAGG_SEED_BYTES * (size_t)m->a, s->session, s->round,
                                        (uint32_t)m->a, key, &part->err);
        } else {
            if (m->b != owner) {
                native_x25519_key_close(&dropped);
                owner = m->b;
                unsigned char mask_sk[32];
                rc = native_secagg_mask_private(u->secrets + SDFED_SECAGG_SEED_BYTES * (size_t)m->b, s->round, mask_sk,
                                                &part->err);
                if (rc == SDFED_OK) rc = native_x25519_key_open(&dropped, mask_sk, &part->err);
                memset(mask_sk, 0, sizeof mask_sk);
            }
            if (rc == SDFED_OK)
                rc = native_secagg_pair_key_from(&dropped, s->mask_keys + 32 * (size_t)m->a, s->session, s->round,
                                                 (uint32_t)m->b, (uint32_t)m->a, key, &part->err);
        }
        if (rc == SDFED_OK)
            rc = native_secagg_add_mask(key, s->plan.ring.ring_bits, part->masks, u->values, m->sign, &part->err);
        memset(key, 0, sizeof key);
    }
    native_x25519_key_close(&dropped);
    part->rc = rc;
}

static void sum_parts(void *ctx, int begin, int end) {
    const unmasking *u = ctx;
    for (int p = begin; p < end; p++) sum_part(u, &u->parts[p]);
}

/* a term's cost in bytes of mask stream */
static double term_cost(const sdfed_secagg_term *m, size_t stream_bytes) {
    return (double)stream_bytes + (m->kind == SDFED_SECAGG_MASK_KEY ? AGREEMENT_STREAM_BYTES : 0);
}

/* whether term i continues the dropped client's pair terms before it */
static int continues_pairs(const sdfed_secagg_term *terms, int i) {
    return i > 0 && terms[i].kind == SDFED_SECAGG_MASK_KEY && terms[i - 1].kind == SDFED_SECAGG_MASK_KEY &&
           terms[i].b == terms[i - 1].b;
}

/* parts (count) = the terms cut into runs of about equal cost, never
 * inside a dropped client's pair terms; returns the terms' total work */
static double cut(const sdfed_secagg_term *terms, int n_terms, size_t stream_bytes, unmask_part *parts, int count) {
    double total = 0, done = 0;
    for (int i = 0; i < n_terms; i++) total += term_cost(&terms[i], stream_bytes);
    int i = 0;
    for (int p = 0; p < count; p++) {
        parts[p].first = i;
        const double until = total * (p + 1) / count;
        for (; i < n_terms && (done < until || continues_pairs(terms, i)); i++)
            done += term_cost(&terms[i], stream_bytes);
        parts[p].end = p == count - 1 ? n_terms : i;
    }
    return total * WORK_PER_STREAM_BYTE;
}

/* sum (values) -= every term's mask: the parts on the kernels' thread pool
 * (the project's one, over the machine's cores), each part's masks summed
 * apart and then added to the sum; addition in Z_{2^B} is exact, so how the
 * terms are split changes no bit */
static int remove_masks(const native_secagg_server *s, const unsigned char *secrets, const sdfed_secagg_term *terms,
                        int n_terms, uint64_t *sum, size_t values, sdfed_error *err) {
    const sdfed_kernels *pool = native_backend(NULL);
    int count = sdfed_kernels_thread_count();
    if (count > n_terms) count = n_terms > 0 ? n_terms : 1;
    unmask_part *parts = calloc((size_t)count, sizeof *parts);
    int rc = parts ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "secagg: out of memory");
    for (int p = 0; p < count && rc == SDFED_OK; p++) {
        parts[p].masks = calloc(values, sizeof *parts[p].masks);
        if (!parts[p].masks) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "secagg: out of memory");
    }
    if (rc == SDFED_OK) {
        const int bits = s->plan.ring.ring_bits;
        const double work = cut(terms, n_terms, sdfed_secagg_stream_bytes(bits, values), parts, count);
        unmasking u = {.s = s, .secrets = secrets, .terms = terms, .parts = parts, .values = values};
        sdfed_kernels_parallel(pool, count, work / count, sum_parts, &u);
        for (int p = 0; p < count && rc == SDFED_OK; p++) {
            rc = parts[p].rc;
            if (rc == SDFED_OK)
                sdfed_secagg_ring_add(bits, sum, parts[p].masks, values);
            else
                *err = parts[p].err;
        }
    }
    for (int p = 0; parts && p < count; p++) free(parts[p].masks);
    free(parts);
    return rc;
}

int native_secagg_server_finish(const native_secagg_server *s, const float *g, float *next, int64_t *weight_sum,
                                sdfed_error *err) {
    if (s->stages.stage != SDFED_SECAGG_DONE)
        return sdfed_fail(err, SDFED_SECAGG_WRONG_STAGE, "secagg round %lld is %s, not done", (long long)s->round,
                          sdfed_secagg_stage_name(s->stages.stage));
    const int n = s->plan.params.n;
    const size_t values = s->plan.dims + 1;
    /* at most one self term for each client and a pair term for each edge */
    int capacity = n + n * s->plan.params.k, count = 0;
    unsigned char *secrets = calloc((size_t)n, SDFED_SECAGG_SEED_BYTES);
    uint64_t *sum = malloc(sizeof *sum * values);
    sdfed_secagg_term *terms = malloc(sizeof *terms * (size_t)capacity);
    int rc = secrets && sum && terms ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "secagg: out of memory");
    if (rc == SDFED_OK) rc = reconstruct(s, secrets, err);
    if (rc == SDFED_OK) rc = sdfed_secagg_server_terms(&s->stages, terms, capacity, &count, err);
    if (rc == SDFED_OK) memcpy(sum, s->sum, sizeof *sum * values);
    if (rc == SDFED_OK) rc = remove_masks(s, secrets, terms, count, sum, values, err);
    if (rc == SDFED_OK) rc = sdfed_secagg_global(&s->plan, sum, g, next, weight_sum, err);
    if (secrets) memset(secrets, 0, SDFED_SECAGG_SEED_BYTES * (size_t)n);
    free(secrets);
    free(sum);
    free(terms);
    return rc;
}
