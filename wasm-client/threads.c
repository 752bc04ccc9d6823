/* The threaded browser build's kernels: the SIMD128 kernels with their work
 * split across a pool of pthreads (Web Workers sharing the module's memory,
 * which needs a cross-origin isolated page). The core itself has no threads
 * (DESIGN.md); this file only wraps its kernel interface:
 *   linear, linear_backward  rows of x (tokens) split between the threads,
 *                            each converting its own weight panels
 *   gemm                     the single-threaded kernel: the core's gemms
 *                            (attention per head, small heads) are far below
 *                            the work worth splitting
 * Each thread computes exactly what the single-threaded kernel computes for
 * its rows, so the results do not depend on the thread count. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "api.h"
#include "kernels.h"

#define MAX_THREADS 16
/* below this many multiply-adds per thread a call is not worth splitting:
 * waking the pool costs more than it saves */
#define MIN_WORK_PER_THREAD (1 << 20)

typedef struct job {
    int backward; /* linear_backward, else linear */
    float *y;
    const float *x;
    const sdfed_weight *w;
    const float *bias;
    int rows;            /* rows to split: tokens */
    double work_per_row; /* multiply-adds a row costs */
} job;

static struct {
    int threads; /* 1 + workers */
    pthread_t workers[MAX_THREADS];
    pthread_mutex_t lock;
    pthread_cond_t start, finished;
    unsigned generation;
    int pending;
    job current;
    float *scratch[MAX_THREADS];
    size_t scratch_floats[MAX_THREADS];
} P = {.threads = 1,
       .lock = PTHREAD_MUTEX_INITIALIZER,
       .start = PTHREAD_COND_INITIALIZER,
       .finished = PTHREAD_COND_INITIALIZER};

static const sdfed_kernels *simd(void) { return &sdfed_kernels_simd128; }

/* Share t of `parts` of the job's rows. */
static void run_share(const job *j, int t, int parts, float *scratch) {
    int per = (j->rows + parts - 1) / parts, r0 = t * per, r1 = r0 + per < j->rows ? r0 + per : j->rows;
    if (r0 >= r1) return;
    int cols = j->w->cols, rows = j->w->rows;
    if (j->backward)
        simd()->linear_backward(j->y + (size_t)r0 * cols, j->x + (size_t)r0 * rows, j->w, r1 - r0, scratch);
    else
        simd()->linear(j->y + (size_t)r0 * rows, j->x + (size_t)r0 * cols, j->w, j->bias, r1 - r0, scratch);
}

/* A worker's scratch, big enough for the job's weight panels. */
static float *scratch_for(int t, const job *j) {
    size_t need = sdfed_kernel_scratch_floats(simd(), j->w->cols);
    if (need > P.scratch_floats[t]) {
        free(P.scratch[t]);
        P.scratch[t] = malloc(sizeof(float) * need);
        P.scratch_floats[t] = P.scratch[t] ? need : 0;
    }
    return P.scratch[t];
}

static void *worker(void *arg) {
    int t = (int)(intptr_t)arg;
    unsigned seen = 0;
    for (;;) {
        pthread_mutex_lock(&P.lock);
        while (P.generation == seen) pthread_cond_wait(&P.start, &P.lock);
        seen = P.generation;
        job j = P.current;
        pthread_mutex_unlock(&P.lock);
        run_share(&j, t, P.threads, scratch_for(t, &j));
        pthread_mutex_lock(&P.lock);
        if (--P.pending == 0) pthread_cond_signal(&P.finished);
        pthread_mutex_unlock(&P.lock);
    }
    return NULL;
}

/* Runs a job on every thread (the caller's is thread 0), or alone when it
 * is too small to share. */
static void run(const job *j, float *scratch) {
    if (P.threads == 1 || j->rows < P.threads || j->rows * j->work_per_row < (double)MIN_WORK_PER_THREAD * P.threads) {
        run_share(j, 0, 1, scratch);
        return;
    }
    pthread_mutex_lock(&P.lock);
    P.current = *j;
    P.pending = P.threads - 1;
    P.generation++;
    pthread_cond_broadcast(&P.start);
    pthread_mutex_unlock(&P.lock);
    run_share(j, 0, P.threads, scratch);
    pthread_mutex_lock(&P.lock);
    while (P.pending > 0) pthread_cond_wait(&P.finished, &P.lock);
    pthread_mutex_unlock(&P.lock);
}

static void linear(float *y, const float *x, const sdfed_weight *w, const float *bias, int n, float *scratch) {
    job j = {.y = y, .x = x, .w = w, .bias = bias, .rows = n, .work_per_row = (double)w->rows * w->cols};
    run(&j, scratch);
}

static void linear_backward(float *dx, const float *dy, const sdfed_weight *w, int n, float *scratch) {
    job j = {.backward = 1, .y = dx, .x = dy, .w = w, .rows = n, .work_per_row = (double)w->rows * w->cols};
    run(&j, scratch);
}

static void gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda, const float *b,
                 int ldb, float beta, float *c, int ldc) {
    simd()->gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static const sdfed_kernels threaded = {"simd128-threads", SDFED_SIMD128_PANEL_FLOATS, linear, linear_backward, gemm};

int wc_set_threads(int n) {
    if (n < 1 || n > MAX_THREADS) n = n < 1 ? 1 : MAX_THREADS;
    while (P.threads < n) {
        if (pthread_create(&P.workers[P.threads], NULL, worker, (void *)(intptr_t)P.threads) != 0) break;
        P.threads++;
    }
    wc_use_kernels(P.threads > 1 ? &threaded : simd());
    return P.threads;
}
