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
 *                            scratch; linear_int8 on Q8_0 weights, where
 *                            the base has int8_outputs, quantises x once
 *                            first (rows of x split), then splits the
 *                            outputs
 *   linear_backward          rows of x, where the base kernel is reentrant
 *   gemm                     the base kernel on the calling thread: the
 *                            core's gemms (attention per head, small heads)
 *                            are far below the work worth splitting
 *   parallel                 ranges of the caller's items (rows of the
 *                            layer norms, activations, softmax rows)
 * A thread waiting for a job, or for the end of one (its items run), polls for
 * at most SPIN_NS on the clock the host gave the pool (none: it does not
 * poll), yielding its core between polls, and then sleeps on a
 * condition variable: an image's jobs follow each other within
 * microseconds, and a sleep costs far more than its wake-up: under a
 * hypervisor a sleeping vCPU halts, and it comes back to caches that other
 * work has used (a 2-vCPU Ice Lake VM, ViT-B/16 Q8_0 on two threads: with
 * 50 us of polling the integer tile took 1.31x its one-thread CPU time,
 * two single-threaded processes at once ran at full speed; with 10 ms,
 * 1.17x and the images 1.16x faster, the median of six alternating pairs).
 * The yields leave the core to another process's threads that want it
 * (natively; in the browser a yield gives nothing away, and a worker spins
 * its poll out), and an idle pool takes no time at all once it has ended.
 * The threads take a job's items a claim at a time from a shared count
 * until none is left, not a fixed share each: on a machine whose cores
 * other work takes at times (a hypervisor's steal, another tab), a share
 * held by a slowed thread kept the others waiting (on a 2-vCPU Ice Lake
 * VM with 17% of its time stolen, ViT-B/16's Q8_0 images on two threads
 * ran at 1.3x one thread's rate, the cores idle a fifth of the time;
 * claims and x quantised once: 1.12x that, the median of five alternating
 * pairs, and steadier). A claim is a
 * quarter of a thread's share where a call costs little beyond its items
 * (ranges, quantising, int8 outputs from quantised rows, an f32 linear's
 * outputs), a whole share where each call repeats work of its own
 * (linear_int8's quantising of x where it is not done once for the
 * threads). Small claims of the f32 linear's outputs on two threads:
 * ViT-B/16's f32 images 1.10x faster (Ice Lake, the median of 15
 * alternating pairs; its padded copy of x, once made per call, now gone:
 * linear_fma.c). */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/clamp.h"
#include "base/dtype.h"
#include "kernels/kernels.h"

#define MAX_THREADS 16
/* below this many multiply-adds per thread a call is not worth splitting:
 * waking the pool costs more than it saves */
#define MIN_WORK_PER_THREAD (1 << 20)

/* how long a thread polls for the next job, or for the job's end, before
 * it sleeps: longer than the gaps between an image's jobs and between
 * images (the caller's serial parts), which 50 us and 2 ms were not */
#define SPIN_NS 10000000

/* claims a thread takes of a job whose calls cost little beyond their items */
#define CLAIMS_PER_THREAD 4
/* multiply-adds that quantising a value costs as much as, about (its
 * block's max and a scaling: a pass like a layer norm's), so that x's rows
 * are split between the threads where that is worth it (counted as 1, a
 * ViT-B/16 image's 197 rows fell below the split and the caller quantised
 * them alone while the others waited) */
#define QUANTISE_WORK_PER_VALUE 100.0
/* tokens of an int8 layer quantised at a time for the threads (the buffer
 * of their quantised rows: at most 4 MB for 3072 inputs) */
#define INT8_TOKENS 1056
/* the kernel a job runs: JOB_INT8_ROWS quantises rows of x for the
 * int8 outputs of JOB_INT8_OUTPUTS */
enum { JOB_LINEAR, JOB_LINEAR_INT8, JOB_INT8_ROWS, JOB_INT8_OUTPUTS, JOB_BACKWARD, JOB_RANGE };

/* outputs in a linear job's item when it splits the weight's rows: whole
 * panels of 16 (the integer tile is 32 outputs wide with AVX-512; the f32
 * tile 48, of which a range's last tile spans the panels left) */
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
    void *rows;           /* JOB_INT8_*'s quantised rows of x */
    int items;            /* what is split: tokens, groups of outputs, or JOB_RANGE's items */
    int claim;            /* items a thread takes at a time (0: items / threads) */
    double work_per_item; /* multiply-adds an item costs */
    size_t scratch;       /* floats of scratch a worker needs for it (0: none), set by run */
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
    job current;
    /* the current job's generation (high 32 bits) and its first item not
     * yet claimed: a claim is taken against its job's generation, so that a
     * worker late to a job that has ended claims nothing of the next */
    uint64_t cursor;
    unsigned done;   /* the current job's items run */
    void *int8_rows; /* linear_int8's quantised rows, for the threads */
    size_t int8_rows_bytes;
    float *scratch[MAX_THREADS];
    size_t scratch_floats[MAX_THREADS];
} pool = {.threads = 1,
          .lock = PTHREAD_MUTEX_INITIALIZER,
          .start = PTHREAD_COND_INITIALIZER,
          .finished = PTHREAD_COND_INITIALIZER};

/* The job's items [r0, r1). Every base kernel computes a row the same way
 * whatever rows surround it, and linear_outputs an output the same way
 * whatever outputs it computes with it (both tested), so the split does
 * not change the forward pass's bits. */
static void run_items(const job *j, int r0, int r1, float *scratch) {
    if (j->kind == JOB_RANGE) {
        j->fn(j->ctx, r0, r1);
        return;
    }
    int cols = j->w->cols, rows = j->w->rows;
    if (j->kind == JOB_INT8_ROWS) {
        pool.base->int8_quantise_rows(j->rows, j->x, j->n, cols, r0, r1);
        return;
    }
    if (j->by_outputs) {
        int first = r0 * OUTPUT_GROUP, end = r1 * OUTPUT_GROUP < rows ? r1 * OUTPUT_GROUP : rows;
        if (j->kind == JOB_INT8_OUTPUTS)
            pool.base->int8_outputs(j->y, j->rows, j->w, j->bias, j->n, first, end, scratch);
        else
            pool.base->linear_outputs(j->kind == JOB_LINEAR_INT8, j->y, j->x, j->w, j->bias, j->n, first, end, scratch);
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

/* The current job's items, a claim at a time, until none is left. A job of
 * small claims takes smaller ones as its end nears (half of what is left,
 * split between the threads, when that is less than a claim), so that the
 * thread that takes the last items does not keep the others waiting for a
 * whole claim (ViT-B/16's Q8_0 images on two threads: the calling thread
 * polled for the other 1.9% to 2.7% of its time, not 4.8%, the worker
 * 4.5% to 4.7%, not 6.3%; 1.03x the images/s, the median of 16 alternating
 * pairs). */
static void run_claims(const job *j, unsigned generation, float *scratch) {
    int share = (j->items + pool.threads - 1) / pool.threads;
    for (;;) {
        uint64_t cursor = __atomic_load_n(&pool.cursor, __ATOMIC_RELAXED);
        int r0 = (int)(uint32_t)cursor;
        if ((unsigned)(cursor >> 32) != generation || r0 >= j->items) return;
        int claim = share;
        if (j->claim > 0) claim = sdfed_clamp_int((j->items - r0) / (2 * pool.threads), 1, j->claim);
        if (!__atomic_compare_exchange_n(&pool.cursor, &cursor, cursor + (uint64_t)claim, 0, __ATOMIC_RELAXED,
                                         __ATOMIC_RELAXED))
            continue;
        int r1 = r0 + claim < j->items ? r0 + claim : j->items;
        run_items(j, r0, r1, scratch);
        /* the last items run: the caller, if it sleeps, is woken */
        if (__atomic_add_fetch(&pool.done, (unsigned)(r1 - r0), __ATOMIC_RELEASE) == (unsigned)j->items) {
            pthread_mutex_lock(&pool.lock);
            pthread_cond_signal(&pool.finished);
            pthread_mutex_unlock(&pool.lock);
        }
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

/* A worker's scratch, `need` floats at least. */
static float *scratch_for(int t, size_t need) {
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
        /* (the job may have ended already: then its claims are gone, and
         * nothing it points to is read) */
        float *scratch = j.scratch ? scratch_for(t, j.scratch) : NULL;
        /* without scratch this worker claims nothing: the others take its part */
        if (scratch || !j.scratch) run_claims(&j, seen, scratch);
    }
    return NULL;
}

/* Runs a job on every thread (the caller's is thread 0), or alone when it
 * is too small to share. It ends when its items are run, whichever threads
 * ran them: the caller does not wait for a worker that claimed none (one
 * that another process keeps off its core, or that is still waking). With
 * a busy loop beside it on a 2-core Zen 4, ViT-B/16's Q8_0 images on two
 * threads took 0.86x the time of a pool whose every job waited for each
 * worker (the median of 7 alternating pairs), and the simulator's test
 * 0.85x; alone, the same (1.01x). */
static void run(const job *j, float *scratch) {
    if (pool.threads == 1 || j->items < pool.threads ||
        j->items * j->work_per_item < (double)MIN_WORK_PER_THREAD * pool.threads) {
        run_items(j, 0, j->items, scratch);
        return;
    }
    pthread_mutex_lock(&pool.lock);
    pool.current = *j;
    pool.current.scratch =
        j->kind == JOB_RANGE || j->kind == JOB_INT8_ROWS ? 0 : sdfed_kernel_scratch_floats(pool.base, j->w->cols);
    unsigned generation = pool.generation + 1;
    __atomic_store_n(&pool.done, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pool.cursor, (uint64_t)generation << 32, __ATOMIC_RELAXED);
    __atomic_store_n(&pool.generation, generation, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&pool.start);
    pthread_mutex_unlock(&pool.lock);
    run_claims(j, generation, scratch);
    spin_for(&pool.done, (unsigned)j->items, 1);
    pthread_mutex_lock(&pool.lock);
    while (__atomic_load_n(&pool.done, __ATOMIC_ACQUIRE) < (unsigned)j->items)
        pthread_cond_wait(&pool.finished, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
}

/* items of a job that cost little beyond them, in a claim: a quarter of a
 * thread's share */
static int small_claims(int items) {
    int claim = items / (pool.threads * CLAIMS_PER_THREAD);
    return claim > 0 ? claim : 1;
}

/* A forward linear job of `kind`, split by outputs where the base can. */
static void run_linear(int kind, float *y, const float *x, const sdfed_weight *w, const float *bias, int n,
                       float *scratch) {
    job j = {
        .kind = kind, .y = y, .x = x, .w = w, .bias = bias, .n = n, .by_outputs = pool.base->linear_outputs != NULL};
    j.items = j.by_outputs ? (w->rows + OUTPUT_GROUP - 1) / OUTPUT_GROUP : n;
    if (j.by_outputs && kind == JOB_LINEAR) j.claim = small_claims(j.items);
    j.work_per_item = (double)w->cols * (j.by_outputs ? (double)n * OUTPUT_GROUP : w->rows);
    run(&j, scratch);
}

static void linear(float *y, const float *x, const sdfed_weight *w, const float *bias, int n, float *scratch) {
    run_linear(JOB_LINEAR, y, x, w, bias, n, scratch);
}

/* The pool's buffer of quantised rows, at least `bytes` (NULL: no memory). */
static void *int8_rows(size_t bytes) {
    if (bytes > pool.int8_rows_bytes) {
        free(pool.int8_rows);
        pool.int8_rows = malloc(bytes);
        pool.int8_rows_bytes = pool.int8_rows ? bytes : 0;
    }
    return pool.int8_rows;
}

static void linear_int8(float *y, const float *x, const sdfed_weight *w, const float *bias, int n, float *scratch) {
    const sdfed_kernels *base = pool.base;
    int cols = w->cols, groups = (w->rows + OUTPUT_GROUP - 1) / OUTPUT_GROUP,
        tokens = n < INT8_TOKENS ? n : INT8_TOKENS;
    void *rows = NULL;
    if (base->int8_outputs && w->type == SDFED_TYPE_Q8_0) rows = int8_rows(base->int8_rows_bytes(tokens, cols));
    if (!rows) {
        run_linear(JOB_LINEAR_INT8, y, x, w, bias, n, scratch);
        return;
    }
    for (int t0 = 0; t0 < n; t0 += INT8_TOKENS) {
        int count = n - t0 < INT8_TOKENS ? n - t0 : INT8_TOKENS;
        const float *x_part = x + (size_t)t0 * cols;
        job quantise = {.kind = JOB_INT8_ROWS,
                        .x = x_part,
                        .w = w,
                        .n = count,
                        .rows = rows,
                        .items = count,
                        .claim = small_claims(count),
                        .work_per_item = cols * QUANTISE_WORK_PER_VALUE};
        run(&quantise, scratch);
        job outputs = {.kind = JOB_INT8_OUTPUTS,
                       .y = y + (size_t)t0 * w->rows,
                       .w = w,
                       .bias = bias,
                       .n = count,
                       .by_outputs = 1,
                       .rows = rows,
                       .items = groups,
                       .claim = small_claims(groups),
                       .work_per_item = (double)cols * count * OUTPUT_GROUP};
        run(&outputs, scratch);
    }
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
    job j = {.kind = JOB_RANGE,
             .fn = fn,
             .ctx = ctx,
             .items = count,
             .claim = small_claims(count),
             .work_per_item = work_per_item};
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
