/* The kernels split across a pool of pthreads: the project's one thread
 * pool, natively and in the threaded browser build (there the threads are
 * Web Workers sharing the module's memory). The core never starts a thread
 * by itself: a host asks for the pool with sdfed_kernels_threaded, and only
 * builds that have pthreads compile this file.
 *   linear, linear_int8      the weight's rows (outputs) split between the
 *                            threads in groups of 32, where the base has
 *                            linear_outputs (each thread then reads and
 *                            packs only its share of the weights), else
 *                            rows of x (tokens); each thread with its own
 *                            scratch
 *   linear_backward          rows of x, where the base kernel is reentrant
 *   gemm                     the base kernel on the calling thread: the
 *                            core's gemms (attention per head, small heads)
 *                            are far below the work worth splitting
 *   parallel                 ranges of the caller's items (rows of the
 *                            layer norms, activations, softmax rows)
 * A thread waiting for a job, or for the workers' end of one, polls for
 * at most SPIN_NS on the clock the host gave the pool (none: it does not
 * poll), yielding its core between polls, and then sleeps on a
 * condition variable: an image's jobs follow each other within
 * microseconds (waking a sleeping thread costs tens of them: 2-6% of an
 * image on two threads), while the yields leave the core to another
 * process's threads that want it and an idle pool takes no time at all. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

#include "kernels/kernels.h"

#define MAX_THREADS 16
/* below this many multiply-adds per thread a call is not worth splitting:
 * waking the pool costs more than it saves */
#define MIN_WORK_PER_THREAD (1 << 20)

/* how long a thread polls for the next job, or for the workers' end, before
 * it sleeps: waking from the condition variable costs tens of
 * microseconds, more than the gaps between an image's jobs */
#define SPIN_NS 50000

/* the kernel a job runs */
enum { JOB_LINEAR, JOB_LINEAR_INT8, JOB_BACKWARD, JOB_RANGE };

/* outputs in a linear job's item when it splits the weight's rows: whole
 * register tiles (32 outputs wide with AVX-512, 16 with AVX2) */
#define OUTPUT_GROUP 32

typedef struct job {
    int kind; /* JOB_* */
    float *y;
    const float *x;
    const sdfed_weight *w;
    const float *bias;
    int n;              /* tokens (rows of x) */
    int by_outputs;     /* linear jobs: items are groups of outputs, not tokens */
    sdfed_range_fn *fn; /* JOB_RANGE's */
    void *ctx;
    int items;            /* what is split: tokens, groups of outputs, or JOB_RANGE's items */
    double work_per_item; /* multiply-adds an item costs */
} job;

static struct {
    const sdfed_kernels *base;
    /* the host's clock, for the polls (NULL: none) */
    sdfed_clock_fn *clock;
    int threads; /* 1 + workers */
    pthread_t workers[MAX_THREADS];
    pthread_mutex_t lock;
    pthread_cond_t start, finished;
    unsigned generation;
    unsigned pending;
    unsigned skipped; /* workers that had no scratch for the current job */
    job current;
    float *scratch[MAX_THREADS];
    size_t scratch_floats[MAX_THREADS];
} pool = {.threads = 1,
          .lock = PTHREAD_MUTEX_INITIALIZER,
          .start = PTHREAD_COND_INITIALIZER,
          .finished = PTHREAD_COND_INITIALIZER};

/* Share t of `parts` of the job's items. Every base kernel computes a row
 * the same way whatever rows surround it, and linear_outputs an output
 * the same way whatever outputs it computes with it (both tested), so the
 * split does not change the forward pass's bits. */
static void run_share(const job *j, int t, int parts, float *scratch) {
    int per = (j->items + parts - 1) / parts, r0 = t * per, r1 = r0 + per < j->items ? r0 + per : j->items;
    if (r0 >= r1) return;
    if (j->kind == JOB_RANGE) {
        j->fn(j->ctx, r0, r1);
        return;
    }
    int cols = j->w->cols, rows = j->w->rows;
    if (j->by_outputs) {
        int end = r1 * OUTPUT_GROUP < rows ? r1 * OUTPUT_GROUP : rows;
        pool.base->linear_outputs(j->kind == JOB_LINEAR_INT8, j->y, j->x, j->w, j->bias, j->n, r0 * OUTPUT_GROUP, end,
                                  scratch);
        return;
    }
    switch (j->kind) {
    case JOB_LINEAR:
        pool.base->linear(j->y + (size_t)r0 * rows, j->x + (size_t)r0 * cols, j->w, j->bias, r1 - r0, scratch);
        break;
    case JOB_LINEAR_INT8:
        pool.base->linear_int8(j->y + (size_t)r0 * rows, j->x + (size_t)r0 * cols, j->w, j->bias, r1 - r0, scratch);
        break;
    case JOB_BACKWARD:
        pool.base->linear_backward(j->y + (size_t)r0 * cols, j->x + (size_t)r0 * rows, j->w, r1 - r0, scratch);
        break;
    }
}

/* Polls *value (written under the lock) for up to SPIN_NS until it equals
 * `target` (or, with `until_equal` 0, differs from it); without the host's
 * clock, not at all. */
static void spin_for(const unsigned *value, unsigned target, int until_equal) {
    if (!pool.clock) return;
    int64_t until = pool.clock() + SPIN_NS;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if ((__atomic_load_n(value, __ATOMIC_ACQUIRE) == target) == until_equal) return;
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
        if (pool.clock() > until) return;
        sched_yield(); /* a thread of another process waiting for this core gets it */
    }
}

/* A worker's scratch, big enough for the job's weight. */
static float *scratch_for(int t, const job *j) {
    size_t need = sdfed_kernel_scratch_floats(pool.base, j->w->cols);
    if (need > pool.scratch_floats[t]) {
        free(pool.scratch[t]);
        pool.scratch[t] = malloc(sizeof(float) * need);
        pool.scratch_floats[t] = pool.scratch[t] ? need : 0;
    }
    return pool.scratch[t];
}

static void *worker(void *arg) {
    int t = (int)(intptr_t)arg;
    unsigned seen = 0;
    for (;;) {
        spin_for(&pool.generation, seen, 0);
        pthread_mutex_lock(&pool.lock);
        while (pool.generation == seen) pthread_cond_wait(&pool.start, &pool.lock);
        seen = pool.generation;
        job j = pool.current;
        pthread_mutex_unlock(&pool.lock);
        int needs_scratch = j.kind != JOB_RANGE;
        float *scratch = needs_scratch ? scratch_for(t, &j) : NULL;
        /* without scratch this worker's share runs on the caller's thread */
        int runs = scratch || !needs_scratch;
        if (runs) run_share(&j, t, pool.threads, scratch);
        pthread_mutex_lock(&pool.lock);
        if (!runs) pool.skipped |= 1u << t;
        if (__atomic_sub_fetch(&pool.pending, 1, __ATOMIC_RELEASE) == 0) pthread_cond_signal(&pool.finished);
        pthread_mutex_unlock(&pool.lock);
    }
    return NULL;
}

/* Runs a job on every thread (the caller's is thread 0), or alone when it
 * is too small to share. */
static void run(const job *j, float *scratch) {
    if (pool.threads == 1 || j->items < pool.threads ||
        j->items * j->work_per_item < (double)MIN_WORK_PER_THREAD * pool.threads) {
        run_share(j, 0, 1, scratch);
        return;
    }
    pthread_mutex_lock(&pool.lock);
    pool.current = *j;
    __atomic_store_n(&pool.pending, (unsigned)pool.threads - 1, __ATOMIC_RELAXED);
    pool.skipped = 0;
    __atomic_add_fetch(&pool.generation, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&pool.start);
    pthread_mutex_unlock(&pool.lock);
    run_share(j, 0, pool.threads, scratch);
    spin_for(&pool.pending, 0, 1);
    pthread_mutex_lock(&pool.lock);
    while (pool.pending > 0) pthread_cond_wait(&pool.finished, &pool.lock);
    unsigned skipped = pool.skipped;
    pthread_mutex_unlock(&pool.lock);
    for (int t = 1; t < pool.threads; t++)
        if (skipped & 1u << t) run_share(j, t, pool.threads, scratch);
}

/* A forward linear job of `kind`, split by outputs where the base can. */
static void run_linear(int kind, float *y, const float *x, const sdfed_weight *w, const float *bias, int n,
                       float *scratch) {
    job j = {
        .kind = kind, .y = y, .x = x, .w = w, .bias = bias, .n = n, .by_outputs = pool.base->linear_outputs != NULL};
    j.items = j.by_outputs ? (w->rows + OUTPUT_GROUP - 1) / OUTPUT_GROUP : n;
    j.work_per_item = (double)w->cols * (j.by_outputs ? (double)n * OUTPUT_GROUP : w->rows);
    run(&j, scratch);
}

static void linear(float *y, const float *x, const sdfed_weight *w, const float *bias, int n, float *scratch) {
    run_linear(JOB_LINEAR, y, x, w, bias, n, scratch);
}

static void linear_int8(float *y, const float *x, const sdfed_weight *w, const float *bias, int n, float *scratch) {
    run_linear(JOB_LINEAR_INT8, y, x, w, bias, n, scratch);
}

static void linear_backward(float *dx, const float *dy, const sdfed_weight *w, int n, float *scratch) {
    if (!pool.base->reentrant_backward) {
        pool.base->linear_backward(dx, dy, w, n, scratch);
        return;
    }
    job j = {
        .kind = JOB_BACKWARD, .y = dx, .x = dy, .w = w, .n = n, .items = n, .work_per_item = (double)w->rows * w->cols};
    run(&j, scratch);
}

static void gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda, const float *b,
                 int ldb, float beta, float *c, int ldc) {
    pool.base->gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void parallel(int count, double work_per_item, sdfed_range_fn *fn, void *ctx) {
    job j = {.kind = JOB_RANGE, .fn = fn, .ctx = ctx, .items = count, .work_per_item = work_per_item};
    run(&j, NULL);
}

/* base's kernels, those the pool splits in its place */
static sdfed_kernels threaded;

const sdfed_kernels *sdfed_kernels_threaded(const sdfed_kernels *base, int threads, sdfed_clock_fn *clock) {
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if (pool.base && pool.base != base) return base; /* one pool, for one base */
    pool.base = base;
    if (pool.threads == 1) pool.clock = clock; /* the pool's, before its first worker reads it */
    while (pool.threads < threads) {
        if (pthread_create(&pool.workers[pool.threads], NULL, worker, (void *)(intptr_t)pool.threads) != 0) break;
        pool.threads++;
    }
    if (pool.threads == 1) return base;
    threaded = *base; /* the same kernels (every field base has), only split */
    threaded.linear = linear;
    threaded.linear_int8 = linear_int8;
    threaded.linear_backward = linear_backward;
    threaded.gemm = gemm;
    threaded.parallel = parallel;
    return &threaded;
}

int sdfed_kernels_thread_count(void) { return pool.threads; }
