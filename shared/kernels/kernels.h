/* The compute kernels behind one interface, with several backends:
 *   portable  plain C loops; the reference every other backend is tested against
 *             (linear_int8's definition included)
 *   simd128   WebAssembly SIMD128 (compiled only for wasm32 with -msimd128)
 *   simd128-relaxed  the browser's: simd128 with linear_int8's products in
 *             relaxed SIMD (relaxed_tile.c) where the page asks for it or
 *             it is the faster, and linear's in its fused multiply-add
 *             where the engine fuses it (the native chains)
 *   native    x86-64 and any other host: the batch-independent FMA linear
 *             layer (linear_fma.h) forward and the same tiles for the backward pass and gemm
 *             (every output an in-order FMA chain: the same bits on any
 *             CPU), F16/Q8_0 rows dequantised a panel at a time into caller
 *             scratch (never the whole matrix); Q8_0 x Q8_0 products in
 *             integers (linear_int8.h)
 * Callers pick a backend once (sdfed_kernels_default) and pass it down; the
 * layers above never know which one runs. A backend is its file, compiled
 * under its macro of kernels/dispatch.h, and its entry in kernels.c's list. */
#ifndef SDFED_KERNELS_H
#define SDFED_KERNELS_H

#include <stddef.h>

#include "base/clock.h"
#include "kernels/dispatch.h"

/* A weight matrix as stored in the model: `rows` output rows of `cols`
 * inputs each, row-major, in any SDFED_TYPE_* (Q8_0 rows are cut into
 * 32-value blocks along cols). packed is NULL, or the same matrix packed
 * once by a backend's pack in the layout its forward linear reads
 * (linear_outputs with int8 = packed_int8), owned by the weight's holder
 * and freed with sdfed_weight_unpack; without it that linear packs the
 * rows it reads on every call. */
typedef struct sdfed_weight {
    int type;
    int rows, cols;
    const void *data;
    void *packed;
    int packed_int8;
} sdfed_weight;

/* Items [begin, end) of a job split over threads (sdfed_kernels_parallel). */
typedef void sdfed_range_fn(void *ctx, int begin, int end);

typedef struct sdfed_kernels {
    const char *name;
    /* NULL, or whether the backend runs here and is wanted (asked once) */
    int (*available)(void);
    /* NULL, or whether linear's and gemm's every output is here the
     * in-order FMA chain (linear_fma.h: acc = fma(x_k, w_k, acc) over k
     * from 0, then acc + bias, or alpha * acc (+ beta * C)), and
     * linear_backward's dx + the chain over all rows (F32 weights) or over
     * each panel of sdfed_fma_backward_panel_rows in turn: the native
     * products' bits */
    int (*fma_chains)(void);
    /* NULL, or whether linear_int8's Q8_0 products run here on relaxed
     * SIMD's 8-bit dot (i32x4.relaxed_dot_i8x16_i7x16_add_s) rather than
     * SIMD128's i32x4.dot_i16x8_s (asked once; the same bits either way) */
    int (*relaxed_dot)(void);
    /* How many floats of F16/Q8_0 rows the backend converts at once (a
     * panel), and the fewest rows its scratch holds (at least one). */
    size_t panel_floats;
    int min_panel_rows;
    /* scratch rows of `cols` floats that linear_int8 needs */
    int int8_scratch_rows;
    /* non-zero when the thread pool should split linear_backward by rows
     * (it runs on several threads at once, and each thread's share pays for
     * itself; the native one converts its whole weight for any share of the
     * rows: split, sim took 4% more time and 11% more CPU time) */
    int reentrant_backward;
    /* y (n, w.rows) = x (n, w.cols) @ W^T + bias; bias may be NULL. */
    void (*linear)(float *y, const float *x, const sdfed_weight *w, const float *bias, int n, float *scratch);
    /* The linear layer of a pass no gradient goes through (frozen features),
     * y (n, w.rows) = x (n, w.cols) @ W^T + bias, where for Q8_0 weights x
     * is quantised too and the products are integers (ggml's Q8_0 x Q8_0):
     * each row of x is cut into blocks of 32 with a scale d = max|x| / 127
     * (f32) and quants q = x / d rounded to nearest even
     * (sdfed_q8_0_activations); each block pair's integer dot product is
     * exact in int32; and each output is, blocks b in order,
     *     acc = 0; acc = acc + (float)dot_b * (d_x,b * d_w,b); y = acc + bias
     * in f32 (no fused multiply-add): the same bits on every backend and
     * instruction set. Other weight types: as linear. */
    void (*linear_int8)(float *y, const float *x, const sdfed_weight *w, const float *bias, int n, float *scratch);
    /* linear (int8 0) or linear_int8 (int8 1) computing only outputs
     * [first, end) of each row of y, each with the bits the whole call gives
     * it; NULL where the backend has none. The pool splits a layer by its
     * weight rows with it, so that each thread reads and packs only its
     * share of the weights. */
    void (*linear_outputs)(int int8, float *y, const float *x, const sdfed_weight *w, const float *bias, int n,
                           int first, int end, float *scratch);
    /* NULL where the backend has none; else linear_int8 for Q8_0 weights in
     * two steps, which the pool takes when it splits a layer by outputs, so
     * that the threads quantise x once between them (each some of its rows)
     * instead of each thread all of it: the bytes of n rows of `cols` inputs
     * quantised for the backend's tiles; rows [begin, end) of x (n rows)
     * quantised into them (distinct parts from any threads at once; the
     * part that ends at n pads them); and linear_outputs(1, ...)'s outputs
     * [first, end) from all n rows quantised: the same bits. */
    size_t (*int8_rows_bytes)(int n, int cols);
    void (*int8_quantise_rows)(void *rows, const float *x, int n, int cols, int begin, int end);
    void (*int8_outputs)(float *y, const void *rows, const sdfed_weight *w, const float *bias, int n, int first,
                         int end, float *scratch);
    /* NULL where the backend has no packed layout; else packs the whole of
     * w once for linear (int8 0) or linear_int8 (int8 1) into memory it
     * allocates (w->packed, w->packed_int8) and returns its bytes, or 0
     * when it has no layout of its own for that linear (SIMD128's f32
     * linears) or no memory for it (w is left unpacked: its linears then
     * pack per call, with the same bits). w must not be packed already. */
    size_t (*pack)(sdfed_weight *w, int int8);
    /* dx (n, w.cols) += dy (n, w.rows) @ W */
    void (*linear_backward)(float *dx, const float *dy, const sdfed_weight *w, int n, float *scratch);
    /* C (m, n) = alpha * op(A) @ op(B) + beta * C, BLAS conventions, row-major:
     * op(A) is (m, k), op(B) is (k, n); trans_a/trans_b non-zero to transpose.
     * Every backend's runs on several threads at once (the attention's
     * blocks call it from the pool's range jobs). */
    void (*gemm)(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda, const float *b,
                 int ldb, float beta, float *c, int ldc);
    /* fn over items [0, count), split between threads where the set has
     * them (NULL: one call on the caller's thread); see
     * sdfed_kernels_parallel. */
    void (*parallel)(int count, double work_per_item, sdfed_range_fn *fn, void *ctx);
} sdfed_kernels;

/* the reference the other backends are tested against */
extern const sdfed_kernels sdfed_kernels_portable;
#if defined(SDFED_KERNELS_SIMD128_RELAXED)
/* The host's clock (base/clock.h) for simd128-relaxed's choice where the
 * page leaves it to the module (Module.relaxedSimd unset): linear_int8 on
 * the relaxed dot when it times faster than SIMD128's. Given before the
 * backends are first listed (sdfed_kernels_all, _default, _by_name);
 * without it SIMD128's products are kept (the same bits either way).
 * kernels_simd128.c */
void sdfed_kernels_relaxed_clock(sdfed_clock_fn *clock);
/* The form of linear_int8's relaxed dot where it runs (relaxed_tile.h):
 * "split" (two dots per 16 products), "unsigned" or "signed" (one; the
 * engine's dot exact as that kind), or either kind ", exact in SIMD128"
 * (asked for by the page, Module.relaxedDotForm, where the engine's dot is
 * not that kind: tests). kernels_simd128.c */
const char *sdfed_kernels_relaxed_dot_form(void);
#endif

/* Where the backward pass's products are FMA chains (native, and
 * simd128-relaxed where fused), F16 and Q8_0 weights are turned into f32
 * this many rows of `cols` at a time (SDFED_FMA_PANEL_FLOATS' worth, at
 * least SDFED_FMA_PANEL_MIN_ROWS) and each panel's chains added to dx in
 * turn: the chains restart at the same rows on every backend. kernels.c */
#define SDFED_FMA_PANEL_FLOATS ((size_t)1 << 20)
#define SDFED_FMA_PANEL_MIN_ROWS 64
int sdfed_fma_backward_panel_rows(int cols);
/* Frees w->packed (none: nothing) and leaves w unpacked. kernels.c */
void sdfed_weight_unpack(sdfed_weight *w);

/* Row `x` of `cols` activations (a multiple of 32) as Q8_0 blocks for
 * linear_int8: q (cols quants) and d (cols / 32 scales), by the rule above.
 * kernels_portable.c */
void sdfed_q8_0_activations(const float *x, int cols, signed char *q, float *d);

/* Rows of a weight with `cols` inputs that k converts at once, and the
 * scratch floats its linear kernels (linear_int8 included) need for weights
 * of up to `cols` inputs. */
int sdfed_kernel_panel_rows(const sdfed_kernels *k, int cols);
size_t sdfed_kernel_scratch_floats(const sdfed_kernels *k, int cols);

/* The fastest backend compiled into this build that this engine runs. */
const sdfed_kernels *sdfed_kernels_default(void);
/* Backend by name, or NULL if not compiled in or not runnable here. */
const sdfed_kernels *sdfed_kernels_by_name(const char *name);
/* All compiled-in backends this engine runs, NULL-terminated; the portable
 * one is first. */
const sdfed_kernels *const *sdfed_kernels_all(void);

/* Runs fn(ctx, begin, end) over items [0, count): on k's thread pool in
 * ranges of items when k has one and the work is worth it (work_per_item:
 * about the multiply-adds of a linear layer that an item costs as much as),
 * else once on the caller's thread. fn must compute each item the same way
 * whatever range holds it, so that the split never changes a bit, and must
 * not call kernels itself. kernels.c */
void sdfed_kernels_parallel(const sdfed_kernels *k, int count, double work_per_item, sdfed_range_fn *fn, void *ctx);

/* Builds with pthreads (native, the threaded browser build): base's kernels
 * with linear (and linear_backward where base is reentrant there) split by
 * rows, and parallel's items, over one pool of `threads`
 * threads in all (the caller's included; started on the first call, kept
 * for the process). clock is the host's (base/clock.h), kept from the call
 * that starts the pool: a thread waiting for work polls on it for some
 * microseconds before it sleeps (NULL: it sleeps at once, slower between
 * jobs, the same bits). Returns base itself when no thread could be started
 * or when the pool already serves another base. kernels_threads.c */
const sdfed_kernels *sdfed_kernels_threaded(const sdfed_kernels *base, int threads, sdfed_clock_fn *clock);
/* Threads of the pool (1 before it starts). */
int sdfed_kernels_thread_count(void);

#endif
