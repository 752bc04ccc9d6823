/* What the kernels have outside any backend: the registry (the one list of
 * the kernel sets a build has, and which is default), the parallel loop
 * over a set's threads, the release of a packed weight. */
#include "kernels/kernels.h"

#include <stdlib.h>
#include <string.h>

/* The backends, each defined by its file under its macro of dispatch.h;
 * the most specialised last (the default where it runs). */
#if defined(SDFED_KERNELS_SIMD128)
extern const sdfed_kernels sdfed_kernels_simd128; /* kernels_simd128.c */
#endif
#if defined(SDFED_KERNELS_SIMD128_RELAXED)
extern const sdfed_kernels sdfed_kernels_simd128_relaxed; /* kernels_simd128.c */
#endif
#if defined(SDFED_HAVE_NATIVE_KERNELS)
extern const sdfed_kernels sdfed_kernels_native; /* kernels_native.c */
#endif

static const sdfed_kernels *const all_backends[] = {
    &sdfed_kernels_portable,
#if defined(SDFED_KERNELS_SIMD128)
    &sdfed_kernels_simd128,
#endif
#if defined(SDFED_KERNELS_SIMD128_RELAXED)
    &sdfed_kernels_simd128_relaxed,
#endif
#if defined(SDFED_HAVE_NATIVE_KERNELS)
    &sdfed_kernels_native,
#endif
    NULL,
};
#define BACKENDS (sizeof all_backends / sizeof all_backends[0] - 1)

static int runs_here(const sdfed_kernels *k) { return !k->available || k->available(); }

const sdfed_kernels *const *sdfed_kernels_all(void) {
    static const sdfed_kernels *runnable[BACKENDS + 1];
    if (!runnable[0]) {
        size_t n = 0;
        for (size_t i = 0; i < BACKENDS; i++)
            if (runs_here(all_backends[i])) runnable[n++] = all_backends[i];
    }
    return runnable;
}

int sdfed_kernel_panel_rows(const sdfed_kernels *k, int cols) {
    size_t rows = k->panel_floats / (size_t)cols, least = k->min_panel_rows > 1 ? (size_t)k->min_panel_rows : 1;
    if (rows < least) return (int)least;
    return rows > (size_t)1 << 30 ? 1 << 30 : (int)rows;
}

int sdfed_fma_backward_panel_rows(int cols) {
    const sdfed_kernels panels = {.panel_floats = SDFED_FMA_PANEL_FLOATS, .min_panel_rows = SDFED_FMA_PANEL_MIN_ROWS};
    return sdfed_kernel_panel_rows(&panels, cols);
}

size_t sdfed_kernel_scratch_floats(const sdfed_kernels *k, int cols) {
    int panel_rows = sdfed_kernel_panel_rows(k, cols),
        rows = panel_rows > k->int8_scratch_rows ? panel_rows : k->int8_scratch_rows;
    return (size_t)rows * (size_t)cols;
}

void sdfed_weight_unpack(sdfed_weight *w) {
    free(w->packed);
    w->packed = NULL;
    w->packed_int8 = 0;
}

void sdfed_kernels_parallel(const sdfed_kernels *k, int count, double work_per_item, sdfed_range_fn *fn, void *ctx) {
    if (count < 1) return;
    if (k->parallel)
        k->parallel(count, work_per_item, fn, ctx);
    else
        fn(ctx, 0, count);
}

const sdfed_kernels *sdfed_kernels_default(void) {
    /* the last one listed is the most specialised */
    const sdfed_kernels *const *k = sdfed_kernels_all();
    while (k[1]) k++;
    return *k;
}

const sdfed_kernels *sdfed_kernels_by_name(const char *name) {
    for (const sdfed_kernels *const *k = sdfed_kernels_all(); *k; k++)
        if (strcmp((*k)->name, name) == 0) return *k;
    return NULL;
}
