/* Federated partitioners (see partition.h for every rule they follow).
 *
 * The work is done on sample positions: owner[i] is the client that holds
 * training sample i (-1: none). The methods fill owner; shots clears some of
 * it; the output lists are then read off owner in ascending position, and
 * the test lists are taken from the pool's shuffled class lists. */
#include "data/partition.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

/* The Dirichlet shares are rounded in doubles: no FMA contraction, so they
 * are the same on every target (see base/rng.c) */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

enum { STREAM_TRAIN = 0, STREAM_SHOTS = 1, STREAM_TEST = 2 };

/* Positions grouped by key (the class, or domain * C + class), ascending
 * inside a group: group g is pos[start[g] .. start[g + 1]). */
typedef struct {
    int *start; /* (n_groups + 1) */
    int *pos;   /* (n) */
} groups;

static int sample_key(const sdfed_samples *s, int i, int n_classes, int use_domain) {
    return (use_domain ? s->domain[i] * n_classes : 0) + s->label[i];
}

static int group_samples(const sdfed_samples *s, int n_classes, int n_groups, int use_domain, groups *g) {
    g->start = calloc((size_t)n_groups + 1, sizeof *g->start);
    g->pos = malloc(sizeof *g->pos * ((size_t)s->n + 1));
    int *fill = malloc(sizeof *fill * (size_t)n_groups);
    if (!g->start || !g->pos || !fill) {
        free(fill);
        return SDFED_ERR_NOMEM;
    }
    for (int i = 0; i < s->n; i++) g->start[sample_key(s, i, n_classes, use_domain) + 1]++;
    for (int k = 0; k < n_groups; k++) g->start[k + 1] += g->start[k];
    memcpy(fill, g->start, sizeof *fill * (size_t)n_groups);
    for (int i = 0; i < s->n; i++) g->pos[fill[sample_key(s, i, n_classes, use_domain)]++] = i;
    free(fill);
    return SDFED_OK;
}

static void groups_free(groups *g) {
    free(g->start);
    free(g->pos);
    memset(g, 0, sizeof *g);
}

static int group_size(const groups *g, int k) { return g->start[k + 1] - g->start[k]; }

/* ---- rounding ----------------------------------------------------------- */

typedef struct {
    double frac; /* the fractional part of a quota (or a remainder, compared the same way) */
    int i;
} remainder;

static int by_fraction_desc(const void *pa, const void *pb) {
    const remainder *a = pa, *b = pb;
    if (a->frac != b->frac) return a->frac > b->frac ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* counts (m) hold the floors of the quotas and rem their fractional parts:
 * adds the missing `deficit` units to the largest fractions, ties to the
 * lower index (largest remainder). */
static void add_largest_remainders(long long deficit, int m, int *counts, remainder *rem) {
    if (deficit <= 0) return;
    qsort(rem, (size_t)m, sizeof *rem, by_fraction_desc);
    for (long long t = 0; t < deficit; t++) counts[rem[t % m].i]++;
}

/* counts (m) = n p rounded by largest remainder, summing to n exactly. */
static void shares_from_proportions(int n, int m, const double *p, int *counts, remainder *rem) {
    long long sum = 0;
    for (int i = 0; i < m; i++) {
        double q = (double)n * p[i];
        long long f = (long long)q; /* q >= 0: truncation is the floor */
        counts[i] = (int)f;
        rem[i].frac = q - (double)f;
        rem[i].i = i;
        sum += f;
    }
    /* sum(p) is 1 within m ulp, so the floors cannot exceed n for any n
     * and m this accepts; should they, the last clients give back */
    for (int i = m - 1; sum > n && i >= 0; i--)
        while (sum > n && counts[i] > 0) {
            counts[i]--;
            sum--;
        }
    add_largest_remainders(n - sum, m, counts, rem);
}

/* counts (m) = n split into m near-equal shares, the first n % m one larger */
static void equal_shares(int n, int m, int *counts) {
    for (int i = 0; i < m; i++) counts[i] = n / m + (i < n % m);
}

/* ---- the methods -------------------------------------------------------- */

static void partition_iid(sdfed_rng *rng, int n, int K, int *owner, int *perm) {
    for (int i = 0; i < n; i++) perm[i] = i;
    sdfed_rng_shuffle(rng, perm, (size_t)n);
    int off = 0;
    for (int c = 0; c < K; c++) {
        int size = n / K + (c < n % K);
        for (int j = 0; j < size; j++) owner[perm[off++]] = c;
    }
}

static int partition_pathological(sdfed_rng *rng, const groups *g, int C, int K, int k, int *owner, sdfed_error *err) {
    /* holders of each class, ascending client: hstart (C + 1), holder (K k) */
    size_t entries = (size_t)K * (size_t)k;
    int *hstart = calloc((size_t)C + 1, sizeof *hstart), *fill = malloc(sizeof *fill * (size_t)C);
    int *holder = malloc(sizeof *holder * entries), *share = malloc(sizeof *share * (size_t)K);
    if (!hstart || !fill || !holder || !share) {
        free(hstart);
        free(fill);
        free(holder);
        free(share);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "partition: out of memory for %d clients", K);
    }
    for (int c = 0; c < K; c++)
        for (int j = 0; j < k; j++) hstart[((long long)c * k + j) % C + 1]++;
    for (int x = 0; x < C; x++) hstart[x + 1] += hstart[x];
    memcpy(fill, hstart, sizeof *fill * (size_t)C);
    for (int c = 0; c < K; c++)
        for (int j = 0; j < k; j++) holder[fill[((long long)c * k + j) % C]++] = c;

    for (int x = 0; x < C; x++) {
        int *list = g->pos + g->start[x], n_x = group_size(g, x), h = hstart[x + 1] - hstart[x];
        sdfed_rng_shuffle(rng, list, (size_t)n_x);
        if (h == 0) continue; /* nobody holds x: its samples stay unassigned */
        equal_shares(n_x, h, share);
        int off = 0;
        for (int i = 0; i < h; i++)
            for (int j = 0; j < share[i]; j++) owner[list[off++]] = holder[hstart[x] + i];
    }
    free(hstart);
    free(fill);
    free(holder);
    free(share);
    return SDFED_OK;
}

/* Scratch of the Dirichlet split, sized for C classes and m clients. */
typedef struct {
    int *counts;    /* (C, m): samples of class x for client i */
    int *totals;    /* (m) */
    double *p;      /* (m) */
    remainder *rem; /* (m) */
} dirichlet_scratch;

/* Splits the class lists g0 .. g0 + C - 1 (one domain) between clients
 * first .. first + m - 1, as DIRICHLET in partition.h says. */
static int dirichlet_split(sdfed_rng *rng, const groups *g, int g0, int C, int first, int m,
                           const sdfed_partition_config *cfg, const char *where, dirichlet_scratch *s, int *owner,
                           int *redraws, sdfed_error *err) {
    long long total = 0;
    for (int x = 0; x < C; x++) {
        sdfed_rng_shuffle(rng, g->pos + g->start[g0 + x], (size_t)group_size(g, g0 + x));
        total += group_size(g, g0 + x);
    }
    if ((long long)cfg->min_train * m > total)
        return sdfed_fail(err, SDFED_ERR_ARG, "partition: min_train %d for %d clients needs %lld samples, %s has %lld",
                          cfg->min_train, m, (long long)cfg->min_train * m, where, total);
    for (int redraw = 0;; redraw++) {
        memset(s->totals, 0, sizeof *s->totals * (size_t)m);
        for (int x = 0; x < C; x++) {
            int *counts_x = s->counts + (size_t)x * m;
            int rc = sdfed_rng_dirichlet(rng, cfg->alpha, m, s->p, err);
            if (rc) return rc;
            shares_from_proportions(group_size(g, g0 + x), m, s->p, counts_x, s->rem);
            for (int i = 0; i < m; i++) s->totals[i] += counts_x[i];
        }
        int short_client = -1;
        for (int i = 0; i < m && short_client < 0; i++)
            if (s->totals[i] < cfg->min_train) short_client = i;
        if (short_client < 0) break;
        if (redraw == SDFED_PARTITION_MAX_REDRAWS)
            return sdfed_fail(err, SDFED_ERR_ARG,
                              "partition: %s: after %d Dirichlet redraws (alpha %g) client %d still has %d samples, "
                              "fewer than min_train %d; lower min_train or raise alpha",
                              where, redraw, cfg->alpha, first + short_client, s->totals[short_client], cfg->min_train);
        (*redraws)++;
    }
    for (int x = 0; x < C; x++) {
        const int *list = g->pos + g->start[g0 + x], *counts_x = s->counts + (size_t)x * m;
        int off = 0;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < counts_x[i]; j++) owner[list[off++]] = first + i;
    }
    return SDFED_OK;
}

/* shots: each client's positions (ascending) shuffled, at most `shots` kept
 * per label; the others leave the client (owner -1). */
static int apply_shots(sdfed_rng *rng, const sdfed_samples *train, int C, int K, int shots, int *owner,
                       sdfed_error *err) {
    int n = train->n;
    int *start = calloc((size_t)K + 1, sizeof *start), *fill = malloc(sizeof *fill * (size_t)K);
    int *pos = malloc(sizeof *pos * ((size_t)n + 1)), *kept = malloc(sizeof *kept * (size_t)C);
    if (!start || !fill || !pos || !kept) {
        free(start);
        free(fill);
        free(pos);
        free(kept);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "partition: out of memory for shots");
    }
    for (int i = 0; i < n; i++)
        if (owner[i] >= 0) start[owner[i] + 1]++;
    for (int c = 0; c < K; c++) start[c + 1] += start[c];
    memcpy(fill, start, sizeof *fill * (size_t)K);
    for (int i = 0; i < n; i++)
        if (owner[i] >= 0) pos[fill[owner[i]]++] = i;
    for (int c = 0; c < K; c++) {
        int *list = pos + start[c], size = start[c + 1] - start[c];
        sdfed_rng_shuffle(rng, list, (size_t)size);
        memset(kept, 0, sizeof *kept * (size_t)C);
        for (int j = 0; j < size; j++) {
            int x = train->label[list[j]];
            if (kept[x] < shots)
                kept[x]++;
            else
                owner[list[j]] = -1;
        }
    }
    free(start);
    free(fill);
    free(pos);
    free(kept);
    return SDFED_OK;
}

/* ---- checks ------------------------------------------------------------- */

static int check_config(const sdfed_partition_config *cfg, int *n_clients, sdfed_error *err) {
    if (cfg->n_classes < 1 || cfg->n_classes > 256)
        return sdfed_fail(err, SDFED_ERR_ARG, "partition: n_classes must be in 1..256, got %d", cfg->n_classes);
    if (cfg->shots < 0) return sdfed_fail(err, SDFED_ERR_ARG, "partition: negative shots %d", cfg->shots);
    if (cfg->test_per_client < 0)
        return sdfed_fail(err, SDFED_ERR_ARG, "partition: negative test_per_client %d", cfg->test_per_client);
    int K = cfg->n_clients;
    if (cfg->method == SDFED_PARTITION_DOMAINS) {
        if (cfg->n_domains < 1 || cfg->n_domains > 256)
            return sdfed_fail(err, SDFED_ERR_ARG, "partition: n_domains must be in 1..256, got %d", cfg->n_domains);
        if (cfg->clients_per_domain < 1 || cfg->clients_per_domain > SDFED_PARTITION_MAX_CLIENTS)
            return sdfed_fail(err, SDFED_ERR_ARG, "partition: clients_per_domain must be in 1..%d, got %d",
                              SDFED_PARTITION_MAX_CLIENTS, cfg->clients_per_domain);
        long long product = (long long)cfg->n_domains * cfg->clients_per_domain;
        if (K != 0 && K != product)
            return sdfed_fail(err, SDFED_ERR_ARG,
                              "partition: n_clients %d is not n_domains %d x clients_per_domain %d (or 0)", K,
                              cfg->n_domains, cfg->clients_per_domain);
        if (product > SDFED_PARTITION_MAX_CLIENTS)
            return sdfed_fail(err, SDFED_ERR_ARG, "partition: %lld clients exceed the limit of %d", product,
                              SDFED_PARTITION_MAX_CLIENTS);
        K = (int)product;
    } else if (cfg->method < SDFED_PARTITION_IID || cfg->method > SDFED_PARTITION_DOMAINS) {
        return sdfed_fail(err, SDFED_ERR_ARG, "partition: unknown method %d", cfg->method);
    }
    if (K < 1 || K > SDFED_PARTITION_MAX_CLIENTS)
        return sdfed_fail(err, SDFED_ERR_ARG, "partition: n_clients must be in 1..%d, got %d",
                          SDFED_PARTITION_MAX_CLIENTS, K);
    if (cfg->method == SDFED_PARTITION_PATHOLOGICAL &&
        (cfg->classes_per_client < 1 || cfg->classes_per_client > cfg->n_classes))
        return sdfed_fail(err, SDFED_ERR_ARG, "partition: classes_per_client must be in 1..%d, got %d", cfg->n_classes,
                          cfg->classes_per_client);
    if (cfg->method == SDFED_PARTITION_DIRICHLET || cfg->method == SDFED_PARTITION_DOMAINS) {
        if (!(cfg->alpha > 0.0 && cfg->alpha <= 1e300))
            return sdfed_fail(err, SDFED_ERR_ARG, "partition: alpha must be a finite number > 0, got %g", cfg->alpha);
        if (cfg->min_train < 0)
            return sdfed_fail(err, SDFED_ERR_ARG, "partition: negative min_train %d", cfg->min_train);
    }
    *n_clients = K;
    return SDFED_OK;
}

static int check_samples(const char *what, const sdfed_samples *s, const sdfed_partition_config *cfg, int use_domain,
                         sdfed_error *err) {
    if (s->n < 0) return sdfed_fail(err, SDFED_ERR_ARG, "partition: %s has a negative count %d", what, s->n);
    if (s->n > 0 && !s->label) return sdfed_fail(err, SDFED_ERR_ARG, "partition: %s has no labels", what);
    if (use_domain && s->n > 0 && !s->domain)
        return sdfed_fail(err, SDFED_ERR_ARG, "partition: %s has no domain ids (see sdfed_domain_assign)", what);
    for (int i = 0; i < s->n; i++) {
        if (s->label[i] >= cfg->n_classes)
            return sdfed_fail(err, SDFED_ERR_ARG, "partition: %s sample %d has label %d, outside 0..%d", what, i,
                              s->label[i], cfg->n_classes - 1);
        if (use_domain && s->domain[i] >= cfg->n_domains)
            return sdfed_fail(err, SDFED_ERR_ARG, "partition: %s sample %d has domain %d, outside 0..%d", what, i,
                              s->domain[i], cfg->n_domains - 1);
    }
    return SDFED_OK;
}

static int by_int(const void *pa, const void *pb) {
    int a = *(const int *)pa, b = *(const int *)pb;
    return (a > b) - (a < b);
}

/* ---- test splits -------------------------------------------------------- */

/* want (K, C): the test count of each class for each client, from the
 * train histograms hist (K, C) (see partition.h); returns the total. The
 * clients of a domain (without domains: all K) are c = d m .. d m + m - 1. */
static long long test_targets(const sdfed_partition_config *cfg, const groups *pg, int pool_n, int K, int m,
                              const int *n_train, const int *hist, int *want, remainder *rem, sdfed_partition *out) {
    int C = cfg->n_classes, use_domain = cfg->method == SDFED_PARTITION_DOMAINS;
    long long total = 0, missing = 0;
    int holders = 0, rank = 0; /* the domain's clients with train samples; this one's place among them */
    for (int c = 0; c < K; c++) {
        int d = use_domain ? c / m : 0, g0 = d * C;
        if (c % m == 0) {
            holders = rank = 0;
            for (int i = c; i < c + m; i++) holders += n_train[i] > 0;
        }
        int N = n_train[c], *want_c = want + (size_t)c * C, T = 0;
        const int *hist_c = hist + (size_t)c * C;
        if (N > 0) { /* the pool shared out: pool / holders each, one more for the first pool % holders */
            int pool = use_domain ? pg->start[g0 + C] - pg->start[g0] : pool_n;
            T = cfg->test_per_client > 0 ? cfg->test_per_client : pool / holders + (rank < pool % holders);
            rank++;
        }
        long long sum = 0;
        for (int x = 0; x < C; x++) {
            long long num = (long long)T * hist_c[x];
            want_c[x] = N ? (int)(num / N) : 0;
            rem[x].frac = N ? (double)(num % N) : 0.0; /* < 2^31: exact */
            rem[x].i = x;
            sum += want_c[x];
        }
        add_largest_remainders(T - sum, C, want_c, rem);
        for (int x = 0; x < C; x++) {
            int available = group_size(pg, g0 + x);
            if (want_c[x] > available) {
                missing += want_c[x] - available;
                want_c[x] = available;
            }
            total += want_c[x];
        }
    }
    out->test_short = missing > INT_MAX ? INT_MAX : (int)missing;
    return total;
}

/* Takes each client's want from the shuffled pool lists (see partition.h). */
static int fill_tests(const sdfed_partition_config *cfg, const groups *pg, int n_groups, int K, int m, const int *want,
                      sdfed_partition *out, sdfed_error *err) {
    int C = cfg->n_classes, use_domain = cfg->method == SDFED_PARTITION_DOMAINS;
    int *cursor = calloc((size_t)n_groups, sizeof *cursor);
    long long *used = calloc((size_t)n_groups, sizeof *used);
    if (!cursor || !used) {
        free(cursor);
        free(used);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "partition: out of memory for the test splits");
    }
    for (int c = 0; c < K; c++) {
        sdfed_client_split *cl = &out->clients[c];
        int g0 = (use_domain ? c / m : 0) * C, n = 0;
        for (int x = 0; x < C; x++) {
            int g = g0 + x, size = group_size(pg, g), want_x = want[(size_t)c * C + x];
            const int *list = pg->pos + pg->start[g];
            for (int j = 0; j < want_x; j++) {
                cl->test[n++] = list[cursor[g]];
                cursor[g] = cursor[g] + 1 == size ? 0 : cursor[g] + 1;
            }
            used[g] += want_x;
        }
        qsort(cl->test, (size_t)n, sizeof *cl->test, by_int);
    }
    for (int g = 0; g < n_groups; g++)
        if (used[g] > group_size(pg, g)) out->test_reused += (int)(used[g] - group_size(pg, g));
    free(cursor);
    free(used);
    return SDFED_OK;
}

/* ---- the whole partition ------------------------------------------------ */

int sdfed_partition_make(const sdfed_partition_config *cfg, const sdfed_samples *train, const sdfed_samples *test_pool,
                         sdfed_partition *out, sdfed_error *err) {
    memset(out, 0, sizeof *out);
    int K = 0, rc = check_config(cfg, &K, err);
    if (rc) return rc;
    int use_domain = cfg->method == SDFED_PARTITION_DOMAINS;
    rc = check_samples("train set", train, cfg, use_domain, err);
    if (!rc && test_pool) rc = check_samples("test pool", test_pool, cfg, use_domain, err);
    if (rc) return rc;

    int C = cfg->n_classes, n = train->n;
    int D = use_domain ? cfg->n_domains : 1, m = use_domain ? cfg->clients_per_domain : K;
    int n_groups = D * C;
    groups tg = {0}, pg = {0};
    dirichlet_scratch ds = {0};
    int *owner = malloc(sizeof *owner * ((size_t)n + 1));
    int *n_train = calloc((size_t)K, sizeof *n_train);
    int *hist = calloc((size_t)K * C, sizeof *hist), *want = NULL;
    remainder *rem = malloc(sizeof *rem * (size_t)(C > K ? C : K));
    if (!owner || !n_train || !hist || !rem) goto nomem;
    for (int i = 0; i < n; i++) owner[i] = -1;

    sdfed_rng rng;
    sdfed_rng_seed_stream(&rng, cfg->seed, STREAM_TRAIN);
    switch (cfg->method) {
    case SDFED_PARTITION_IID: {
        int *perm = malloc(sizeof *perm * ((size_t)n + 1));
        if (!perm) goto nomem;
        partition_iid(&rng, n, K, owner, perm);
        free(perm);
        break;
    }
    case SDFED_PARTITION_PATHOLOGICAL:
        if (group_samples(train, C, C, 0, &tg)) goto nomem;
        rc = partition_pathological(&rng, &tg, C, K, cfg->classes_per_client, owner, err);
        break;
    default: /* DIRICHLET, DOMAINS */
        if (group_samples(train, C, n_groups, use_domain, &tg)) goto nomem;
        ds.counts = malloc(sizeof *ds.counts * (size_t)C * m);
        ds.totals = malloc(sizeof *ds.totals * (size_t)m);
        ds.p = malloc(sizeof *ds.p * (size_t)m);
        if (!ds.counts || !ds.totals || !ds.p) goto nomem;
        ds.rem = rem;
        for (int d = 0; d < D && !rc; d++) {
            char where[48];
            if (use_domain)
                snprintf(where, sizeof where, "domain %d", d);
            else
                snprintf(where, sizeof where, "the train set");
            rc = dirichlet_split(&rng, &tg, d * C, C, d * m, m, cfg, where, &ds, owner, &out->redraws, err);
        }
        break;
    }
    if (rc) goto done;
    if (cfg->shots > 0) {
        sdfed_rng_seed_stream(&rng, cfg->seed, STREAM_SHOTS);
        rc = apply_shots(&rng, train, C, K, cfg->shots, owner, err);
        if (rc) goto done;
    }

    /* sizes, histograms, then one block for every list */
    long long total_train = 0, total_test = 0;
    for (int i = 0; i < n; i++)
        if (owner[i] >= 0) {
            n_train[owner[i]]++;
            hist[(size_t)owner[i] * C + train->label[i]]++;
            total_train++;
        }
    out->unassigned = (int)(n - total_train);
    if (test_pool) {
        want = malloc(sizeof *want * (size_t)K * C);
        if (!want || group_samples(test_pool, C, n_groups, use_domain, &pg)) goto nomem;
        sdfed_rng_seed_stream(&rng, cfg->seed, STREAM_TEST);
        for (int g = 0; g < n_groups; g++) sdfed_rng_shuffle(&rng, pg.pos + pg.start[g], (size_t)group_size(&pg, g));
        total_test = test_targets(cfg, &pg, test_pool->n, K, m, n_train, hist, want, rem, out);
        if (total_test > INT_MAX - total_train) {
            rc = sdfed_fail(err, SDFED_ERR_ARG, "partition: the test splits would hold %lld ids; ask for fewer",
                            total_test);
            goto done;
        }
    }
    out->n_clients = K;
    out->clients = calloc((size_t)K, sizeof *out->clients);
    out->ids = malloc(sizeof *out->ids * (size_t)(total_train + total_test + 1));
    if (!out->clients || !out->ids) goto nomem;
    int *next = out->ids;
    for (int c = 0; c < K; c++) {
        sdfed_client_split *cl = &out->clients[c];
        cl->domain = use_domain ? c / m : -1;
        cl->train = next;
        next += n_train[c];
    }
    for (int i = 0; i < n; i++)
        if (owner[i] >= 0) {
            sdfed_client_split *cl = &out->clients[owner[i]];
            cl->train[cl->n_train++] = train->id ? train->id[i] : i;
        }
    if (test_pool) {
        for (int c = 0; c < K; c++) {
            sdfed_client_split *cl = &out->clients[c];
            cl->test = next;
            for (int x = 0; x < C; x++) cl->n_test += want[(size_t)c * C + x];
            next += cl->n_test;
        }
        rc = fill_tests(cfg, &pg, n_groups, K, m, want, out, err);
        if (rc) goto done;
        if (test_pool->id)
            for (long long j = 0; j < total_test; j++)
                out->ids[total_train + j] = test_pool->id[out->ids[total_train + j]];
    }
    goto done;

nomem:
    rc = sdfed_fail(err, SDFED_ERR_NOMEM, "partition: out of memory (%d samples, %d clients)", n, K);
done:
    groups_free(&tg);
    groups_free(&pg);
    free(ds.counts);
    free(ds.totals);
    free(ds.p);
    free(owner);
    free(n_train);
    free(hist);
    free(want);
    free(rem);
    if (rc) sdfed_partition_free(out);
    return rc;
}

void sdfed_partition_free(sdfed_partition *p) {
    if (!p) return;
    free(p->clients);
    free(p->ids);
    memset(p, 0, sizeof *p);
}

int sdfed_partition_hold_out(sdfed_partition *p, const sdfed_samples *train, int every, uint64_t seed,
                             sdfed_error *err) {
    if (every < 2) return sdfed_fail(err, SDFED_ERR_ARG, "hold out: one in %d is not a split", every);
    if (train->id) return sdfed_fail(err, SDFED_ERR_ARG, "hold out: the samples must be positions, not ids");
    int longest = 0;
    for (int c = 0; c < p->n_clients; c++) longest = p->clients[c].n_train > longest ? p->clients[c].n_train : longest;
    int *of_class = malloc(sizeof *of_class * (size_t)(longest + 1)),
        *held = malloc(sizeof *held * (size_t)(longest + 1));
    char *out = malloc((size_t)longest + 1);
    if (!of_class || !held || !out) {
        free(of_class);
        free(held);
        free(out);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "hold out: out of memory");
    }
    sdfed_rng rng;
    sdfed_rng_seed_stream(&rng, seed, 3);
    for (int c = 0; c < p->n_clients; c++) {
        sdfed_client_split *s = &p->clients[c];
        memset(out, 0, (size_t)s->n_train);
        for (int label = 0; label < 256; label++) {
            int n = 0;
            for (int i = 0; i < s->n_train; i++)
                if (train->label[s->train[i]] == label) of_class[n++] = i;
            if (n < every) continue;
            sdfed_rng_shuffle(&rng, of_class, (size_t)n);
            for (int i = 0; i < n / every; i++) out[of_class[i]] = 1;
        }
        /* the kept ids first, then the held-out ones, both ascending */
        int kept = 0, n_held = 0;
        for (int i = 0; i < s->n_train; i++) {
            if (out[i])
                held[n_held++] = s->train[i];
            else
                s->train[kept++] = s->train[i];
        }
        memcpy(s->train + kept, held, sizeof *held * (size_t)n_held);
        s->n_train = kept;
        s->test = s->train + kept;
        s->n_test = n_held;
    }
    free(of_class);
    free(held);
    free(out);
    return SDFED_OK;
}
