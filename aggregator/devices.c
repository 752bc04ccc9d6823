/* The federation's devices (devices.h): their summary. */
#include "devices.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"

void agg_devices_free(agg_device_board *d) {
    free(d->figures);
    *d = (agg_device_board){0};
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int compare_kinds(const void *a, const void *b) {
    const agg_devices_kind *x = a, *y = b;
    if (x->devices != y->devices) return x->devices > y->devices ? -1 : 1;
    if (x->threads != y->threads) return x->threads < y->threads ? -1 : 1;
    return strcmp(x->kernels, y->kernels);
}

/* The nearest-rank percentile q (0..100) of n sorted values. */
static double percentile(const double *sorted, int n, int q) {
    int rank = (q * n + 99) / 100;
    return sorted[rank < 1 ? 0 : rank - 1];
}

/* kinds (n of them, one a device) counted by value, the most common first,
 * kept in out (at most DEVICES_KINDS); how many are left out. */
static int count_kinds(agg_devices_kind *kinds, int n, agg_devices_kind *out, int *n_out) {
    int distinct = 0;
    for (int i = 0; i < n; i++) { /* the distinct ones gathered at the front (distinct <= i) */
        agg_devices_kind k = kinds[i];
        int j = 0;
        while (j < distinct && (kinds[j].threads != k.threads || strcmp(kinds[j].kernels, k.kernels))) j++;
        if (j == distinct) {
            kinds[distinct++] = k;
            kinds[j].devices = 0;
        }
        kinds[j].devices++;
    }
    qsort(kinds, (size_t)distinct, sizeof *kinds, compare_kinds);
    *n_out = distinct < DEVICES_KINDS ? distinct : DEVICES_KINDS;
    memcpy(out, kinds, sizeof *out * (size_t)*n_out);
    int others = 0;
    for (int i = *n_out; i < distinct; i++) others += kinds[i].devices;
    return others;
}

int agg_devices_summarise(const agg_device_board *d, const sdfed_local_prompt *lp, agg_devices_summary *s) {
    *s = (agg_devices_summary){.count = d->n, .n_lengths = lp->n_lengths};
    memcpy(s->lengths, lp->lengths, sizeof s->lengths);
    if (d->n == 0) return SDFED_OK;
    double *times = malloc(sizeof *times * (size_t)d->n);
    agg_devices_kind *kinds = malloc(sizeof *kinds * (size_t)d->n);
    if (!times || !kinds) {
        free(times);
        free(kinds);
        return SDFED_ERR_NOMEM;
    }
    for (int l = 0; l < lp->n_lengths; l++) {
        for (int i = 0; i < d->n; i++) times[i] = d->figures[i].step_ms[l];
        qsort(times, (size_t)d->n, sizeof *times, compare_doubles);
        s->p10[l] = percentile(times, d->n, 10);
        s->p50[l] = percentile(times, d->n, 50);
        s->p90[l] = percentile(times, d->n, 90);
    }
    for (int i = 0; i < d->n; i++) kinds[i] = (agg_devices_kind){.threads = d->figures[i].threads};
    s->other_threads = count_kinds(kinds, d->n, s->threads, &s->n_threads);
    for (int i = 0; i < d->n; i++) {
        kinds[i] = (agg_devices_kind){0};
        memcpy(kinds[i].kernels, d->figures[i].kernels, sizeof kinds[i].kernels);
    }
    s->other_kernels = count_kinds(kinds, d->n, s->kernels, &s->n_kernels);
    free(times);
    free(kinds);
    return SDFED_OK;
}
