/* The batch-independent native linear layer and general product (see
 * linear_fma.h): packed weight panels (per call, or the whole weight once),
 * one register-tile kernel per instruction set, all of them computing each
 * output as the same in-order FMA chain. */
#include "kernels/dispatch.h"
#if defined(SDFED_HAVE_NATIVE_KERNELS)
#include "kernels/linear_fma.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "base/vectors.h"
#include "base/clamp.h"

/* gemm's epilogue, alpha * acc + beta * C, is two products and a sum, each
 * rounded, never fused into an FMA (GCC in the build's ISO C mode does not
 * fuse; clang does within an expression unless told not to) */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#if defined(SDFED_X86_TILES)
#include <immintrin.h>
#endif

/* output rows of W interleaved in one packed panel: panel[c * NR + j] = W[r0 + j][c] */
#define NR 16
/* the most rows a tile has, and the most panels it spans */
#define MAX_TILE_ROWS 8
#define MAX_PANELS 3

/* A register tile: `rows` (at most the kernel's mr) rows of x (cols floats
 * each, ldx apart) times `panels` (at most the kernel's) consecutive packed
 * panels (cols * NR floats each), each sum acc written into out's rows of
 * panels * NR (ldo apart) as alpha * acc (alpha 1: acc itself), plus beta *
 * out where beta is not 0, plus bias[j] where there is a bias (each step
 * rounded, never fused). */
typedef void tile_fn(int rows, int panels, int cols, const float *x, size_t ldx, const float *panel, float *out,
                     size_t ldo, float alpha, float beta, const float *bias);

typedef struct tile_kernel {
    int mr, panels;
    tile_fn *run;
} tile_kernel;

/* The panels of a tile at output r0 of a range ending at `end`: those
 * left spread evenly over the fewest tiles that hold them (a range's last
 * tile computes no panel past it; 4 left on AVX-512 are two tiles of 2,
 * not 3 and 1, whose one panel waits on as many loads as it has FMAs: the
 * attention's 64 columns a head). */
static int panels_in_tile(const tile_kernel *tk, int r0, int end) {
    int left = (end - r0 + NR - 1) / NR, tiles = (left + tk->panels - 1) / tk->panels;
    return (left + tiles - 1) / tiles;
}

#define PORTABLE_MR 4
_Static_assert(PORTABLE_MR <= MAX_TILE_ROWS, "tiles fit the output buffer");

static void tile_portable(int rows, int panels, int cols, const float *x, size_t ldx, const float *panel, float *out,
                          size_t ldo, float alpha, float beta, const float *bias) {
    float acc[PORTABLE_MR][NR] = {{0}};
    for (int c = 0; c < cols; c++) {
        const float *p_c = panel + (size_t)c * NR;
        for (int i = 0; i < rows; i++) {
            float a = x[i * ldx + c];
            for (int j = 0; j < NR; j++) acc[i][j] = fmaf(a, p_c[j], acc[i][j]);
        }
    }
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < NR; j++) {
            float o = alpha == 1.0f ? acc[i][j] : alpha * acc[i][j];
            if (beta != 0.0f) o = o + beta * out[i * ldo + j];
            out[i * ldo + j] = bias ? o + bias[j] : o;
        }
}

#if defined(SDFED_X86_TILES)
/* AVX2 has 16 vector registers: a tile of 5 rows holds its 10 sums, the
 * panel's two vectors and a broadcast in 13. With 6 rows (15 of 16) gcc 12
 * kept one sum on the stack, and the store and reload in every step of its
 * chain halved the tile's speed (ViT-B/16 f32 on one AVX2 core, Zen 3:
 * 1.1 images/s against 2.0 with 5 rows; the same bits either way). */
#define AVX2_MR 5
/* AVX-512's tile: 8 rows of 3 panels, 24 sums, the 3 panels' vectors and a
 * broadcast in 28 of 32 registers. Each step's 24 FMAs then wait on 11
 * loads (3 panel vectors, 8 broadcasts), where 12 rows of 2 panels wait on
 * 14 for as many FMAs: the loop alone on operands in L1 ran at 110 to 144
 * GFLOP/s in 12 x 2 and 150 to 157 in 8 x 3 against a 157 to 168 peak
 * (Ice Lake, one core; 6 x 4, 5 x 5 and 4 x 6 between), ViT-B/16's four
 * linears 1.01x to 1.07x faster in the median of 200 alternating pairs
 * (1.13x to 1.17x at their best). The same bits: an output's chain does
 * not depend on its tile. */
#define AVX512_MR 8
_Static_assert(AVX2_MR <= MAX_TILE_ROWS && AVX512_MR <= MAX_TILE_ROWS, "tiles fit the output buffer");

/* A tile of every row count up to a kernel's mr: its body inlined with the
 * count a constant, so that the loops over rows unroll and the sums stay
 * in registers (a partial tile computes its own rows, not padding); the
 * same for the panels, np */
#define TILE_ROWS_CASE(body, np, r)                                                                                    \
    case r: body(r, np, cols, x, ldx, panel, out, ldo, alpha, beta, bias); return;
/* the cases of 1 to 5 rows (AVX2's tile, the lower part of AVX-512's) */
#define TILE_ROWS_UP_TO_5(body, np)                                                                                    \
    TILE_ROWS_CASE(body, np, 5)                                                                                        \
    TILE_ROWS_CASE(body, np, 4)                                                                                        \
    TILE_ROWS_CASE(body, np, 3)                                                                                        \
    TILE_ROWS_CASE(body, np, 2)                                                                                        \
    TILE_ROWS_CASE(body, np, 1)

__attribute__((target("avx2,fma"), always_inline)) static inline void
tile_avx2_rows(const int mr, const int np, int cols, const float *x, size_t ldx, const float *panel, float *out,
               size_t ldo, float alpha, float beta, const float *bias) {
    // one panel: each row's 16 outputs in two 8-lane registers
    __m256 acc[AVX2_MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int c = 0; c < cols; c++) {
        __m256 b0 = _mm256_loadu_ps(panel + (size_t)c * NR), b1 = _mm256_loadu_ps(panel + (size_t)c * NR + 8);
#pragma GCC unroll 6
        for (int i = 0; i < mr; i++) {
            __m256 a = _mm256_broadcast_ss(x + i * ldx + c);
            acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            float *o = out + i * ldo + h * 8;
            if (alpha != 1.0f) acc[i][h] = _mm256_mul_ps(_mm256_set1_ps(alpha), acc[i][h]);
            if (beta != 0.0f)
                acc[i][h] = _mm256_add_ps(acc[i][h], _mm256_mul_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(o)));
            if (bias) acc[i][h] = _mm256_add_ps(acc[i][h], _mm256_loadu_ps(bias + h * 8));
            _mm256_storeu_ps(o, acc[i][h]);
        }
}

__attribute__((target("avx2,fma"))) static void tile_avx2(int rows, int panels, int cols, const float *x, size_t ldx,
                                                          const float *panel, float *out, size_t ldo, float alpha,
                                                          float beta, const float *bias) {
    _Static_assert(AVX2_MR == 5, "a case for every row count");
    switch (rows) { TILE_ROWS_UP_TO_5(tile_avx2_rows, 1) }
}

__attribute__((target("avx512f"), always_inline)) static inline void
tile_avx512_rows(const int mr, const int np, int cols, const float *x, size_t ldx, const float *panel, float *out,
                 size_t ldo, float alpha, float beta, const float *bias) {
    // np panels: each row's np * 16 outputs in np 16-lane registers
    __m512 acc[AVX512_MR][MAX_PANELS];
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 3
        for (int h = 0; h < np; h++) acc[i][h] = _mm512_setzero_ps();
    const float *panel1 = panel + (size_t)cols * NR, *panel2 = panel1 + (size_t)cols * NR;
    for (int c = 0; c < cols; c++) {
        /* the panels' vectors in variables, not an array, which clang 16 kept in memory (a store each) */
        __m512 b0 = _mm512_loadu_ps(panel + (size_t)c * NR);
        __m512 b1 = np > 1 ? _mm512_loadu_ps(panel1 + (size_t)c * NR) : b0;
        __m512 b2 = np > 2 ? _mm512_loadu_ps(panel2 + (size_t)c * NR) : b0;
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            __m512 a = _mm512_set1_ps(x[i * ldx + c]);
            acc[i][0] = _mm512_fmadd_ps(a, b0, acc[i][0]);
            if (np > 1) acc[i][1] = _mm512_fmadd_ps(a, b1, acc[i][1]);
            if (np > 2) acc[i][2] = _mm512_fmadd_ps(a, b2, acc[i][2]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 3
        for (int h = 0; h < np; h++) {
            float *o = out + i * ldo + h * NR;
            if (alpha != 1.0f) acc[i][h] = _mm512_mul_ps(_mm512_set1_ps(alpha), acc[i][h]);
            if (beta != 0.0f)
                acc[i][h] = _mm512_add_ps(acc[i][h], _mm512_mul_ps(_mm512_set1_ps(beta), _mm512_loadu_ps(o)));
            if (bias) acc[i][h] = _mm512_add_ps(acc[i][h], _mm512_loadu_ps(bias + h * NR));
            _mm512_storeu_ps(o, acc[i][h]);
        }
}

/* AVX-512's cases of 1 to 8 rows of np panels */
#define TILE_AVX512_ROWS(np)                                                                                           \
    switch (rows) {                                                                                                    \
        TILE_ROWS_CASE(tile_avx512_rows, np, 8)                                                                        \
        TILE_ROWS_CASE(tile_avx512_rows, np, 7)                                                                        \
        TILE_ROWS_CASE(tile_avx512_rows, np, 6)                                                                        \
        TILE_ROWS_UP_TO_5(tile_avx512_rows, np)                                                                        \
    }

__attribute__((target("avx512f"))) static void tile_avx512(int rows, int panels, int cols, const float *x, size_t ldx,
                                                           const float *panel, float *out, size_t ldo, float alpha,
                                                           float beta, const float *bias) {
    _Static_assert(AVX512_MR == 8 && MAX_PANELS == 3, "a case for every row and panel count");
    if (panels == 3) TILE_AVX512_ROWS(3)
    if (panels == 2) TILE_AVX512_ROWS(2)
    TILE_AVX512_ROWS(1)
}
#endif

static const tile_kernel kernels[SDFED_ISA_COUNT] = {
    [SDFED_ISA_PORTABLE] = {.mr = PORTABLE_MR, .panels = 1, .run = tile_portable},
#if defined(SDFED_X86_TILES)
    [SDFED_ISA_AVX2] = {.mr = AVX2_MR, .panels = 1, .run = tile_avx2},
    [SDFED_ISA_AVX512] = {.mr = AVX512_MR, .panels = MAX_PANELS, .run = tile_avx512},
#endif
};

/* the scratch: two panels, a panel's converted weight rows */
_Static_assert(MAX_PANELS *NR + NR <= SDFED_FMA_SCRATCH_ROWS, "scratch too small for the largest tile");

/* Packs rows [r0, r0 + count) of w (count <= NR) into panel (cols, NR),
 * zero-filling the missing rows; rows (NR * cols floats of scratch) holds
 * rows converted from F16 or Q8_0. The panel is written in order, a column
 * of NR values at a time. */
static void pack_panel(const sdfed_weight *w, int r0, int count, float *panel, float *rows) {
    int cols = w->cols;
    size_t row_bytes = sdfed_type_row_bytes(w->type, (uint64_t)cols);
    const float *w_j[NR];
    for (int j = 0; j < count; j++) {
        const void *src = (const char *)w->data + (size_t)(r0 + j) * row_bytes;
        w_j[j] = src;
        if (w->type != SDFED_TYPE_F32) {
            sdfed_row_to_f32(w->type, rows + (size_t)j * cols, src, cols);
            w_j[j] = rows + (size_t)j * cols;
        }
    }
    if (count == NR) {
        for (int c = 0; c < cols; c++) {
            if (c % 16 == 0) /* the rows' next cache lines but three, read from memory meanwhile */
                for (int j = 0; j < NR; j++) __builtin_prefetch(w_j[j] + c + 64);
            for (int j = 0; j < NR; j++) panel[(size_t)c * NR + j] = w_j[j][c];
        }
        return;
    }
    for (int c = 0; c < cols; c++)
        for (int j = 0; j < NR; j++) panel[(size_t)c * NR + j] = j < count ? w_j[j][c] : 0.0f;
}

void sdfed_store_outputs(float *restrict y, const float *restrict out, const float *restrict bias, int count) {
    if (!bias) {
        memcpy(y, out, sizeof *y * (size_t)count);
        return;
    }
    int j = 0;
    for (; j + NR <= count; j += NR) /* a constant count of independent adds: vector instructions */
        for (int k = 0; k < NR; k++) y[j + k] = out[j + k] + bias[j + k];
    for (; j < count; j++) y[j] = out[j] + bias[j];
}

size_t sdfed_fma_packed_floats(const sdfed_weight *w) {
    size_t panels = (size_t)(w->rows + NR - 1) / NR;
    return panels * NR * (size_t)w->cols;
}

void sdfed_fma_pack(const sdfed_weight *w, float *packed, float *scratch) {
    size_t panels = sdfed_fma_packed_floats(w) / NR / (size_t)w->cols;
    for (size_t p = 0; p < panels; p++) {
        int r0 = (int)p * NR, count = sdfed_clamp_int(w->rows - r0, 0, NR);
        pack_panel(w, r0, count, packed + p * NR * (size_t)w->cols, scratch);
    }
}

/* The rows of x a tile takes at once: the kernel's mr, unless x's rows are
 * a multiple of 4 KB apart (cols a multiple of 1024), where all of a
 * tile's rows fall in one set of the L1 cache: then as many as leave a
 * way for each of the tile's panels (a 32 KB 8-way L1 with 12 rows of 2
 * panels: the MLP's second linear, 3072 inputs, ran 10-25% slower). On
 * Ice Lake's 12 ways the 8 x 48 tile keeps its 8 rows. The rows once
 * came from a copy whose rows were 16 floats further apart, one per call:
 * per claim of the pool's threads, that copy took 10% of a two-thread
 * image. */
static int rows_in_tile(const tile_kernel *tk, int cols) {
    if (cols % 1024) return tk->mr;
    int fit = sdfed_cpu_l1_ways() - tk->panels;
    return sdfed_clamp_int(fit, 1, tk->mr);
}

/* The tokens a linear on packed weights takes at a time: rows of x filling
 * at most 3/4 of a core's L2, each chunk run over all of the panels in
 * turn, so that it stays in L2 while they pass (a ViT-B/16 image's 197
 * tokens of 768 inputs are 605 KB: on Zen 3's 512 KB L2 they were read
 * again from L3 for each panel; ViT-B/16's f32 images 1.1x faster on two
 * threads there, the same on one). A whole number of tiles, at least one.
 * One chunk of every token where a tile's panels (panel_bytes) take more
 * than a quarter of L2: a chunk and the panel then evict each other, each
 * tile reads the panel again from L3, and every chunk streams all of the
 * weights (ViT-B/16's MLP projection, 3072 inputs, 393 KB of panels: 85 to
 * 93 GFLOP/s in chunks of 76 tokens on Ice Lake's 1.25 MB L2, 104 to 115
 * in one). Weights packed per call keep every token in one chunk, so that
 * each panel is packed once. */
static int chunk_tokens(int n, size_t ldx, int mr, int packed, size_t panel_bytes) {
    if (!packed || panel_bytes > sdfed_cpu_l2_bytes() / 4) return n;
    int tokens = (int)(sdfed_cpu_l2_bytes() / 4 * 3 / (ldx * sizeof(float))) / mr * mr;
    return tokens < mr ? mr : tokens;
}

void sdfed_linear_fma(int isa, float *y, const float *x, const sdfed_weight *w, const float *bias, int n, int first,
                      int end, float *scratch) {
    // x is (n, cols), W is (rows, cols), y is (n, rows)
    const tile_kernel *tk = &kernels[isa];
    int cols = w->cols, rows = w->rows, mr = rows_in_tile(tk, cols);
    float *panels = scratch, *rows_f32 = panels + (size_t)tk->panels * NR * cols;
    const float *packed = w->packed && !w->packed_int8 ? w->packed : NULL;
    size_t ldx = (size_t)cols;
    int chunk = chunk_tokens(n, ldx, mr, packed != NULL, sizeof(float) * (size_t)tk->panels * NR * cols);
    for (int t0 = 0; t0 < n; t0 += chunk) {
        int t_end = n - t0 < chunk ? n : t0 + chunk;
        /* packed tiles start at a whole panel, which may begin before `first` */
        for (int r0 = packed ? first - first % NR : first, width; r0 < end; r0 += width) {
            int np = panels_in_tile(tk, r0, end);
            width = np * NR;
            int nc = end - r0 < width ? end - r0 : width, skip = first - r0 > 0 ? first - r0 : 0;
            const float *tile_panels = packed ? packed + (size_t)(r0 / NR) * NR * cols : panels;
            for (int p = 0; !packed && p < np; p++) {
                int in_panel = sdfed_clamp_int(nc - p * NR, 0, NR);
                pack_panel(w, r0 + p * NR, in_panel, panels + (size_t)p * cols * NR, rows_f32);
            }
            for (int i0 = t0; i0 < t_end; i0 += mr) {
                int nr = t_end - i0 < mr ? t_end - i0 : mr;
                const float *x_tile = x + (size_t)i0 * ldx;
                if (nc == width && !skip) { /* all of the tile's outputs: it writes them itself */
                    tk->run(nr, np, cols, x_tile, ldx, tile_panels, y + (size_t)i0 * rows + r0, (size_t)rows, 1.0f,
                            0.0f, bias ? bias + r0 : NULL);
                    continue;
                }
                float out[MAX_TILE_ROWS * MAX_PANELS * NR];
                tk->run(nr, np, cols, x_tile, ldx, tile_panels, out, (size_t)width, 1.0f, 0.0f, NULL);
                for (int i = 0; i < nr; i++)
                    sdfed_store_outputs(y + (size_t)(i0 + i) * rows + r0 + skip, out + (size_t)i * width + skip,
                                        bias ? bias + r0 + skip : NULL, nc - skip);
            }
        }
    }
}

/* op(A)[i][q] and op(B)[q][j] of a gemm's operands */
static float op_a(const float *a, int lda, int trans_a, int i, int q) {
    return trans_a ? a[(size_t)q * lda + i] : a[(size_t)i * lda + q];
}
static float op_b(const float *b, int ldb, int trans_b, int q, int j) {
    return trans_b ? b[(size_t)j * ldb + q] : b[(size_t)q * ldb + j];
}

/* C's rows (ldc apart) from a tile's sums (rows x count, width apart), as
 * linear_fma.h defines them (alpha 1 skips a multiplication that would
 * change nothing) */
SDFED_WIDEST_VECTORS static void gemm_outputs(float *restrict c, int ldc, const float *restrict acc, int width,
                                              int rows, int count, float alpha, float beta) {
    for (int i = 0; i < rows; i++) {
        float *c_row = c + (size_t)i * ldc;
        const float *acc_row = acc + (size_t)i * width;
        if (beta == 0.0f && alpha == 1.0f) {
            memcpy(c_row, acc_row, sizeof *c * (size_t)count);
            continue;
        }
        for (int j = 0; j < count; j += 8) {
            int lanes = count - j < 8 ? count - j : 8;
            sdfed_f32x8 out, c_old = {0};
            sdfed_load_f32x8(&out, acc_row + j, lanes, 0.0f);
            out *= alpha;
            if (beta != 0.0f) {
                sdfed_load_f32x8(&c_old, c_row + j, lanes, 0.0f);
                out += beta * c_old;
            }
            sdfed_store_f32x8(c_row + j, &out, lanes);
        }
    }
}

/* The definition itself, in scalar fmaf: the product when there is no
 * memory for the tiles' copies. */
static void gemm_chains(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                        const float *b, int ldb, float beta, float *c, int ldc) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int q = 0; q < k; q++) acc = fmaf(op_a(a, lda, trans_a, i, q), op_b(b, ldb, trans_b, q, j), acc);
            gemm_outputs(c + (size_t)i * ldc + j, ldc, &acc, 1, 1, 1, alpha, beta);
        }
}

#if defined(SDFED_X86_TILES)
/* r's 16 x 16 floats transposed in registers: unpacking pairs of rows,
 * then pairs of pairs, within each 128-bit lane (a lane of rows 4g to 4g +
 * 3 then holds a column's 4 values), then the 4 x 4 lanes across vectors */
__attribute__((target("avx512f"), always_inline)) static inline void transpose_16x16(__m512 r[16]) {
    __m512 t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 4; g++) { /* u[4g + c] lane L: rows 4g..4g+3 of column 4L + c */
        u[4 * g] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
        u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
    }
    for (int c = 0; c < 4; c++) {
        __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44), v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xee);
        __m512 v2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44),
               v3 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xee);
        r[c] = _mm512_shuffle_f32x4(v0, v2, 0x88);
        r[4 + c] = _mm512_shuffle_f32x4(v0, v2, 0xdd);
        r[8 + c] = _mm512_shuffle_f32x4(v1, v3, 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(v1, v3, 0xdd);
    }
}

/* panel[q][jj] = column[jj * ldb + q], q < k, for NR columns of which the
 * first `count` are B's (the rest 0): 16 values of each at a time,
 * transposed in registers (the attention's K^T, whose packing a value at a
 * time took a fifth of QK^T's time on Ice Lake) */
__attribute__((target("avx512f"))) static void pack_transposed_avx512(const float *column, int ldb, int count, int k,
                                                                      float *panel) {
    _Static_assert(NR == 16, "a panel row is one 16-lane vector");
    for (int q = 0; q < k; q += 16) {
        int values = k - q < 16 ? k - q : 16;
        __mmask16 real = (__mmask16)((1u << values) - 1u);
        __m512 r[16];
#pragma GCC unroll 16
        for (int jj = 0; jj < 16; jj++)
            r[jj] = jj < count ? _mm512_maskz_loadu_ps(real, column + (size_t)jj * ldb + q) : _mm512_setzero_ps();
        transpose_16x16(r);
        for (int t = 0; t < values; t++) _mm512_storeu_ps(panel + (size_t)(q + t) * NR, r[t]);
    }
}
#endif

/* op(B)'s columns [j0, j0 + width) as the tiles' panels, zero past n:
 * panels[(p * k + q) * NR + jj] = op(B)[q][j0 + p * NR + jj] */
static void pack_b(int isa, const float *b, int ldb, int trans_b, int n, int k, int j0, int width, float *panels) {
    for (int p0 = 0; p0 < width; p0 += NR) {
        float *panel = panels + (size_t)p0 * k;
        int count = sdfed_clamp_int(n - j0 - p0, 0, NR);
#if defined(SDFED_X86_TILES)
        if (trans_b && isa == SDFED_ISA_AVX512) {
            pack_transposed_avx512(b + (size_t)(j0 + p0) * ldb, ldb, count, k, panel);
            continue;
        }
#endif
        if (count < NR) memset(panel, 0, sizeof *panel * (size_t)k * NR);
        if (trans_b)
            for (int jj = 0; jj < count; jj++) {
                const float *column = b + (size_t)(j0 + p0 + jj) * ldb;
                for (int q = 0; q < k; q++) panel[(size_t)q * NR + jj] = column[q];
            }
        else if (count == NR) /* a constant size: vector moves */
            for (int q = 0; q < k; q++) memcpy(panel + (size_t)q * NR, b + (size_t)q * ldb + j0 + p0, sizeof *b * NR);
        else
            for (int q = 0; q < k; q++)
                memcpy(panel + (size_t)q * NR, b + (size_t)q * ldb + j0 + p0, sizeof *b * count);
    }
}

/* op(A)'s rows into x (m, k) when A is transposed. */
static void copy_a_transposed(const float *a, int lda, int m, int k, float *x) {
    for (int q = 0; q < k; q++)
        for (int i = 0; i < m; i++) x[(size_t)i * k + q] = a[(size_t)q * lda + i];
}

void sdfed_gemm_fma(int isa, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                    const float *b, int ldb, float beta, float *c, int ldc) {
    if (m <= 0 || n <= 0) return;
    const tile_kernel *tk = &kernels[isa];
    int mr = tk->mr;
    /* op(A)'s rows are read in place, unless it is transposed (then copied whole, as the tiles' rows) */
    size_t panel_floats = (size_t)tk->panels * NR * k, a_floats = trans_a ? (size_t)m * k : 0;
    float *panels = malloc(sizeof(float) * (panel_floats + a_floats) + 1);
    if (!panels) {
        gemm_chains(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    float *x_copy = panels + panel_floats;
    if (trans_a) copy_a_transposed(a, lda, m, k, x_copy);
    for (int j0 = 0, width; j0 < n; j0 += width) {
        int np = panels_in_tile(tk, j0, n);
        width = np * NR;
        int nc = n - j0 < width ? n - j0 : width;
        pack_b(isa, b, ldb, trans_b, n, k, j0, width, panels);
        for (int i0 = 0; i0 < m; i0 += mr) {
            int nr = m - i0 < mr ? m - i0 : mr;
            const float *x = trans_a ? x_copy + (size_t)i0 * k : a + (size_t)i0 * lda;
            size_t ldx = trans_a ? (size_t)k : (size_t)lda;
            float *c_tile = c + (size_t)i0 * ldc + j0;
            if (nc == width) { /* all of the tile's columns: it writes C itself */
                tk->run(nr, np, k, x, ldx, panels, c_tile, (size_t)ldc, alpha, beta, NULL);
                continue;
            }
            float out[MAX_TILE_ROWS * MAX_PANELS * NR];
            tk->run(nr, np, k, x, ldx, panels, out, (size_t)width, 1.0f, 0.0f, NULL);
            gemm_outputs(c_tile, ldc, out, width, nr, nc, alpha, beta);
        }
    }
    free(panels);
}
#endif
