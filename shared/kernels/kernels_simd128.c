/* WebAssembly SIMD128 kernels. Same contract as the portable ones; weights
 * that are not F32 are dequantised a panel of rows at a time into scratch
 * (Q8_0 with vector int8 -> f32 conversion), then multiplied by an f32
 * micro-kernel that computes 2 tokens x 4 output rows per pass so every
 * loaded vector is used several times. linear_int8 (Q8_0 x Q8_0) widens
 * the quants to int16 and multiplies pairs of them with i32x4.dot_i16x8_s:
 * x quantised a chunk of tokens at a time, weight panels of 16 rows packed
 * with each pair of columns of 4 rows in one vector, a tile of 2 tokens
 * x 16 rows. In Emscripten builds also simd128-relaxed, the same kernels
 * with linear_int8's panels run by relaxed_tile.c's module (relaxed SIMD)
 * where the page asks for it or it is the faster (relaxed_pays), and
 * linear's by the module's FMA tile where the engine fuses relaxed_madd
 * (the native linear's chains, bit for bit). Both backends' pack packs a
 * Q8_0 matrix once for linear_int8's path in use, whose panels it then
 * reads in place. Compiled only with -msimd128. */
#include "kernels/dispatch.h"
#if defined(SDFED_KERNELS_SIMD128)
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>

#include "base/dtype.h"
#include "kernels/kernels.h"
#include "kernels/relaxed_tile.h"

/* panels of 128 KB stay in the L2 cache while every token passes over them
 * (also the threaded browser build's, which runs these kernels per thread) */
#define SDFED_SIMD128_PANEL_FLOATS 32768

extern const sdfed_kernels sdfed_kernels_simd128;

static inline float hsum(v128_t v) {
    return wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 1) + wasm_f32x4_extract_lane(v, 2) +
           wasm_f32x4_extract_lane(v, 3);
}

static inline v128_t madd(v128_t acc, v128_t a, v128_t b) { return wasm_f32x4_add(acc, wasm_f32x4_mul(a, b)); }

static void dequantise_q8_0_row(float *dst, const sdfed_block_q8_0 *blk, int cols) {
    for (int b = 0; b < cols / SDFED_Q8_0_BLOCK; b++) {
        v128_t d = wasm_f32x4_splat(sdfed_f16_to_f32(blk[b].d));
        for (int h = 0; h < 2; h++) {
            v128_t q8 = wasm_v128_load(blk[b].qs + 16 * h);
            v128_t q16[2] = {wasm_i16x8_extend_low_i8x16(q8), wasm_i16x8_extend_high_i8x16(q8)};
            for (int g = 0; g < 2; g++) {
                float *out = dst + b * SDFED_Q8_0_BLOCK + 16 * h + 8 * g;
                wasm_v128_store(out, wasm_f32x4_mul(d, wasm_f32x4_convert_i32x4(wasm_i32x4_extend_low_i16x8(q16[g]))));
                wasm_v128_store(out + 4,
                                wasm_f32x4_mul(d, wasm_f32x4_convert_i32x4(wasm_i32x4_extend_high_i16x8(q16[g]))));
            }
        }
    }
}

/* Returns rows [r0, r0 + count) of w as f32, converting into panel if needed. */
static const float *weight_panel(const sdfed_weight *w, int r0, int count, float *panel) {
    size_t row_bytes = sdfed_type_row_bytes(w->type, (uint64_t)w->cols);
    const char *src = (const char *)w->data + (size_t)r0 * row_bytes;
    if (w->type == SDFED_TYPE_F32) return (const float *)src;
    for (int r = 0; r < count; r++) {
        float *dst = panel + (size_t)r * w->cols;
        if (w->type == SDFED_TYPE_Q8_0)
            dequantise_q8_0_row(dst, (const sdfed_block_q8_0 *)(src + r * row_bytes), w->cols);
        else
            sdfed_row_to_f32(w->type, dst, src + r * row_bytes, w->cols);
    }
    return panel;
}

/* y[i][r] = dot(x_i, W_r) for 2 tokens x nr rows (4, or 1 for the panel's
 * last rows; a constant where inlined), the inner loop over cols: each
 * output one chain of 4 lanes, their sum, then the last cols % 4 products,
 * whatever rows share the tile (so an output's bits do not depend on where
 * its row falls in a panel) */
static inline void dot_2xr(int nr, const float *x0, const float *x1, const float *w, int cols, float out[2][4]) {
    v128_t acc[2][4];
    for (int t = 0; t < 2; t++)
        for (int r = 0; r < nr; r++) acc[t][r] = wasm_f32x4_splat(0.0f);
    int c = 0;
    for (; c + 4 <= cols; c += 4) {
        v128_t a0 = wasm_v128_load(x0 + c), a1 = wasm_v128_load(x1 + c);
        for (int r = 0; r < nr; r++) {
            v128_t wr = wasm_v128_load(w + (size_t)r * cols + c);
            acc[0][r] = madd(acc[0][r], a0, wr);
            acc[1][r] = madd(acc[1][r], a1, wr);
        }
    }
    for (int r = 0; r < nr; r++) {
        out[0][r] = hsum(acc[0][r]);
        out[1][r] = hsum(acc[1][r]);
        for (int cc = c; cc < cols; cc++) {
            out[0][r] += x0[cc] * w[(size_t)r * cols + cc];
            out[1][r] += x1[cc] * w[(size_t)r * cols + cc];
        }
    }
}

/* linear's outputs [first, end) of each token (linear_outputs) */
static void linear_rows(float *y, const float *x, const sdfed_weight *w, const float *bias, int n, int first, int end,
                        float *scratch) {
    // x is (n, cols), W is (rows, cols), y is (n, rows)
    int cols = w->cols, rows = w->rows;
    int panel_rows = sdfed_kernel_panel_rows(&sdfed_kernels_simd128, cols);
    for (int r0 = first; r0 < end; r0 += panel_rows) {
        int count = end - r0 < panel_rows ? end - r0 : panel_rows;
        const float *panel = weight_panel(w, r0, count, scratch);
        for (int i = 0; i < n; i += 2) {
            const float *x0 = x + (size_t)i * cols;
            const float *x1 = i + 1 < n ? x0 + cols : x0; /* odd n: the last token twice */
            for (int r = 0; r < count;) {
                int nr = r + 4 <= count ? 4 : 1;
                float out[2][4];
                if (nr == 4)
                    dot_2xr(4, x0, x1, panel + (size_t)r * cols, cols, out);
                else
                    dot_2xr(1, x0, x1, panel + (size_t)r * cols, cols, out);
                for (int k = 0; k < nr; k++) {
                    float b = bias ? bias[r0 + r + k] : 0.0f;
                    y[(size_t)i * rows + r0 + r + k] = out[0][k] + b;
                    if (i + 1 < n) y[(size_t)(i + 1) * rows + r0 + r + k] = out[1][k] + b;
                }
                r += nr;
            }
        }
    }
}

static void linear(float *y, const float *x, const sdfed_weight *w, const float *bias, int n, float *scratch) {
    linear_rows(y, x, w, bias, n, 0, w->rows, scratch);
}

/* linear_int8 (Q8_0 x Q8_0) on one of two paths that share the blocking:
 * x quantised a chunk of tokens at a time (a ViT-B/16 image's 197 at once,
 * so that its weights are packed once), weights packed a panel of rows at a
 * time (per block the quants, then the rows' f32 scales), a kernel running
 * the chunk over the panel. */
typedef struct int8_path {
    int mr;            /* tokens per register tile */
    int nr;            /* weight rows per panel */
    int block_bytes;   /* bytes of a panel's block */
    int x_block_bytes; /* bytes of a block of a quantised row of x */
    /* whether a tile's mr rows of quants are interleaved by groups of 4
     * (a group of 4 columns: each row's 4 bytes in turn), else row by row */
    int interleaved;
    /* one row of x and its block scales, by sdfed_q8_0_activations's rule
     * (its quants from q on, interleaved with its tile's other rows where
     * the path says so) */
    void (*quantise)(const float *x, int cols, unsigned char *q, float *d);
    /* rows [r0, r0 + count) of w, count <= nr, missing rows zero */
    void (*pack)(const sdfed_weight *w, int r0, int count, unsigned char *panel);
    /* y[i * stride + j] for tokens i < count (their rows padded to mr) and
     * panel rows j < nc: the definition's steps, + bias[j] if bias; sums:
     * room for a tile's f32 sums (RELAXED_SUMS floats), for the relaxed tiles,
     * which keep them in memory between blocks */
    void (*panel)(int blocks, int count, const unsigned char *xq, const float *xd, const unsigned char *panel, float *y,
                  int stride, int nc, const float *bias, float *sums);
} int8_path;

#define INT8_PAIRS (SDFED_Q8_0_BLOCK / 2)
#define INT8_CHUNK 200
/* the scratch: a tile's f32 sums, one panel, then a chunk's scales and
 * quants; whether a path's fit, per block of 32 columns (the sums counted
 * in each, as if a row had one block) */
#define INT8_SCRATCH_ROWS 119
#define INT8_SCRATCH_FITS(block_bytes, x_block_bytes)                                                                  \
    (RELAXED_SUMS * 4 + (block_bytes) + INT8_CHUNK * (4 + (x_block_bytes)) <= INT8_SCRATCH_ROWS * 4 * SDFED_Q8_0_BLOCK)

/* A block of 32 values of x as 4 vectors of int16 quants; returns its scale.
 * For finite x, in instructions that V8 lowers to one each: the pseudo-max
 * (f32x4.max's NaN rules cost it several), and x / d rounded to nearest even
 * by adding 1.5 * 2^23, after which the float's low bits are the integer
 * (|x / d| <= 127 plus rounding), in place of f32x4.nearest and
 * i32x4.trunc_sat_f32x4_s (whose saturation V8 spells out). */
static float quantise_block(const float *x_b, v128_t q[4]) {
    v128_t v[8], m = wasm_f32x4_splat(0.0f);
    for (int k = 0; k < 8; k++) m = wasm_f32x4_pmax(m, wasm_f32x4_abs(v[k] = wasm_v128_load(x_b + 4 * k)));
    m = wasm_f32x4_pmax(m, wasm_i32x4_shuffle(m, m, 2, 3, 0, 1));
    m = wasm_f32x4_pmax(m, wasm_i32x4_shuffle(m, m, 1, 0, 3, 2));
    float d = wasm_f32x4_extract_lane(m, 0) / 127.0f, inverse = d != 0.0f ? 1.0f / d : 0.0f;
    v128_t id = wasm_f32x4_splat(inverse), magic = wasm_f32x4_splat(12582912.0f);
    for (int k = 0; k < 8; k += 2) {
        v128_t i0 = wasm_i32x4_sub(wasm_f32x4_add(wasm_f32x4_mul(v[k], id), magic), magic);
        v128_t i1 = wasm_i32x4_sub(wasm_f32x4_add(wasm_f32x4_mul(v[k + 1], id), magic), magic);
        q[k / 2] = wasm_i16x8_narrow_i32x4(i0, i1);
    }
    return d;
}

/* simd128: int16 quants of x; a panel of INT16_NR rows of w, per block its
 * int16 quants [PAIRS][INT16_NR][2] (each pair of columns of 4 rows in one
 * vector), then the rows' f32 scales; tiles of INT16_MR tokens x the panel
 * (16 sums of 4 lanes in flight, each step of a pair of columns from one
 * weight pointer and two of x) */
#define INT16_NR 16
#define INT16_MR 2
#define INT16_QS_BYTES (INT8_PAIRS * INT16_NR * 2 * 2)
#define INT16_BLOCK_BYTES (INT16_QS_BYTES + INT16_NR * 4)
#define INT16_X_BLOCK_BYTES (2 * SDFED_Q8_0_BLOCK)
_Static_assert(INT8_CHUNK % INT16_MR == 0 && INT8_SCRATCH_FITS(INT16_BLOCK_BYTES, INT16_X_BLOCK_BYTES),
               "SIMD128's tiles fit the chunk, its panel and chunk the scratch");

static void quantise_int16_row(const float *x, int cols, unsigned char *q, float *d) {
    for (int b = 0; b < cols / SDFED_Q8_0_BLOCK; b++) {
        v128_t q16[4];
        d[b] = quantise_block(x + (size_t)b * SDFED_Q8_0_BLOCK, q16);
        for (int k = 0; k < 4; k++) wasm_v128_store(q + (size_t)b * SDFED_Q8_0_BLOCK * 2 + 16 * k, q16[k]);
    }
}

/* out[k] = lane k of in[0..3]: a 4 x 4 of 32-bit lanes transposed */
static void transpose_4x4(const v128_t in[4], v128_t out[4]) {
    v128_t lo01 = wasm_i32x4_shuffle(in[0], in[1], 0, 4, 1, 5), hi01 = wasm_i32x4_shuffle(in[0], in[1], 2, 6, 3, 7);
    v128_t lo23 = wasm_i32x4_shuffle(in[2], in[3], 0, 4, 1, 5), hi23 = wasm_i32x4_shuffle(in[2], in[3], 2, 6, 3, 7);
    out[0] = wasm_i64x2_shuffle(lo01, lo23, 0, 2);
    out[1] = wasm_i64x2_shuffle(lo01, lo23, 1, 3);
    out[2] = wasm_i64x2_shuffle(hi01, hi23, 0, 2);
    out[3] = wasm_i64x2_shuffle(hi01, hi23, 1, 3);
}

/* Rows j0..j0+3 of a panel (a missing row: zeros) for block b: each row's
 * 32 quants widened to int16 pairs, 4 pairs a vector, then the four rows'
 * vectors transposed so that a pair's 4 rows are one 16-byte store. */
static void pack_int16_rows4(const sdfed_block_q8_0 *const rows[4], int b, unsigned char *p_b, int j0) {
    v128_t pairs[4][4]; /* [quarter][row]: pairs 4 quarter .. 4 quarter + 3 of the row */
    for (int r = 0; r < 4; r++) {
        if (!rows[r]) {
            for (int h = 0; h < 4; h++) pairs[h][r] = wasm_i32x4_splat(0);
            continue;
        }
        v128_t lo = wasm_v128_load(rows[r][b].qs), hi = wasm_v128_load(rows[r][b].qs + 16);
        pairs[0][r] = wasm_i16x8_extend_low_i8x16(lo);
        pairs[1][r] = wasm_i16x8_extend_high_i8x16(lo);
        pairs[2][r] = wasm_i16x8_extend_low_i8x16(hi);
        pairs[3][r] = wasm_i16x8_extend_high_i8x16(hi);
    }
    for (int h = 0; h < 4; h++) {
        v128_t by_pair[4];
        transpose_4x4(pairs[h], by_pair);
        for (int k = 0; k < 4; k++) wasm_v128_store(p_b + ((4 * h + k) * INT16_NR + j0) * 4, by_pair[k]);
    }
}

static void pack_int16_panel(const sdfed_weight *w, int r0, int count, unsigned char *panel) {
    int blocks = w->cols / SDFED_Q8_0_BLOCK;
    const sdfed_block_q8_0 *w_r0 = (const sdfed_block_q8_0 *)w->data + (size_t)r0 * blocks;
    for (int j0 = 0; j0 < INT16_NR; j0 += 4) {
        const sdfed_block_q8_0 *rows[4];
        for (int r = 0; r < 4; r++) rows[r] = j0 + r < count ? w_r0 + (size_t)(j0 + r) * blocks : NULL;
        for (int b = 0; b < blocks; b++) pack_int16_rows4(rows, b, panel + (size_t)b * INT16_BLOCK_BYTES, j0);
    }
    for (int b = 0; b < blocks; b++) {
        float d[INT16_NR] = {0};
        for (int j = 0; j < count; j++) d[j] = sdfed_f16_to_f32(w_r0[(size_t)j * blocks + b].d);
        memcpy(panel + (size_t)b * INT16_BLOCK_BYTES + INT16_QS_BYTES, d, sizeof d);
    }
}

/* INT16_MR tokens (xq int16 stride cols, xd stride blocks) x one panel of
 * INT16_NR rows into out (INT16_MR, INT16_NR): per block the exact int32
 * sums, then the f32 steps of the definition (kernels.h) in order. */
static void tile_int16(int blocks, const int16_t *xq, const float *xd, const unsigned char *panel, float *out) {
    int cols = blocks * SDFED_Q8_0_BLOCK;
    v128_t acc[INT16_MR][4];
    for (int i = 0; i < INT16_MR; i++)
        for (int v = 0; v < 4; v++) acc[i][v] = wasm_f32x4_splat(0.0f);
    for (int b = 0; b < blocks; b++) {
        const unsigned char *p_b = panel + (size_t)b * INT16_BLOCK_BYTES;
        const int16_t *x0 = xq + b * SDFED_Q8_0_BLOCK, *x1 = x0 + cols;
        v128_t sum[INT16_MR][4];
        /* the first pair's dots start the sums, no zeros and no adds (Q8_0
         * images 1.03x in Chromium on Zen 4, where the adds share the
         * vector pipes with the dots) */
        v128_t a0 = wasm_v128_load32_splat(x0), a1 = wasm_v128_load32_splat(x1);
        for (int v = 0; v < 4; v++) {
            v128_t wv = wasm_v128_load(p_b + 16 * v);
            sum[0][v] = wasm_i32x4_dot_i16x8(a0, wv);
            sum[1][v] = wasm_i32x4_dot_i16x8(a1, wv);
        }
        const unsigned char *w_p = p_b + INT16_NR * 4, *w_end = p_b + INT16_QS_BYTES;
        for (x0 += 2, x1 += 2; w_p < w_end; w_p += INT16_NR * 4, x0 += 2, x1 += 2) {
            a0 = wasm_v128_load32_splat(x0);
            a1 = wasm_v128_load32_splat(x1);
            for (int v = 0; v < 4; v++) {
                v128_t wv = wasm_v128_load(w_p + 16 * v);
                sum[0][v] = wasm_i32x4_add(sum[0][v], wasm_i32x4_dot_i16x8(a0, wv));
                sum[1][v] = wasm_i32x4_add(sum[1][v], wasm_i32x4_dot_i16x8(a1, wv));
            }
        }
        v128_t dw[4];
        for (int v = 0; v < 4; v++) dw[v] = wasm_v128_load(p_b + INT16_QS_BYTES + 16 * v);
        for (int i = 0; i < INT16_MR; i++) {
            v128_t dx = wasm_f32x4_splat(xd[(size_t)i * blocks + b]);
            for (int v = 0; v < 4; v++)
                acc[i][v] = wasm_f32x4_add(
                    acc[i][v], wasm_f32x4_mul(wasm_f32x4_convert_i32x4(sum[i][v]), wasm_f32x4_mul(dx, dw[v])));
        }
    }
    for (int i = 0; i < INT16_MR; i++)
        for (int v = 0; v < 4; v++) wasm_v128_store(out + i * INT16_NR + 4 * v, acc[i][v]);
}

static void panel_int16(int blocks, int count, const unsigned char *xq, const float *xd, const unsigned char *panel,
                        float *y, int stride, int nc, const float *bias, float *sums) {
    int cols = blocks * SDFED_Q8_0_BLOCK;
    for (int i0 = 0; i0 < count; i0 += INT16_MR) {
        float out[INT16_MR * INT16_NR];
        tile_int16(blocks, (const int16_t *)xq + (size_t)i0 * cols, xd + (size_t)i0 * blocks, panel, out);
        int nr = count - i0 < INT16_MR ? count - i0 : INT16_MR;
        for (int i = 0; i < nr; i++)
            for (int j = 0; j < nc; j++)
                y[(size_t)(i0 + i) * stride + j] = bias ? out[i * INT16_NR + j] + bias[j] : out[i * INT16_NR + j];
    }
}

static const int8_path int16_path = {.mr = INT16_MR,
                                     .nr = INT16_NR,
                                     .block_bytes = INT16_BLOCK_BYTES,
                                     .x_block_bytes = INT16_X_BLOCK_BYTES,
                                     .quantise = quantise_int16_row,
                                     .pack = pack_int16_panel,
                                     .panel = panel_int16};

/* Quantised rows of x for path's tiles: n rows padded with zeros to a
 * whole tile, their scales (blocks floats a row), then their quants
 * (blocks * x_block_bytes a row). */
static int path_padded_rows(const int8_path *path, int n) { return (n + path->mr - 1) / path->mr * path->mr; }

static size_t path_rows_bytes(const int8_path *path, int n, int cols) {
    size_t blocks = (size_t)(cols / SDFED_Q8_0_BLOCK);
    return (size_t)path_padded_rows(path, n) * blocks * (sizeof(float) + (size_t)path->x_block_bytes);
}

/* Where row i's quants start (row_bytes a row): its own bytes, or its
 * first group in its tile's interleaved rows. */
static unsigned char *path_row_quants(const int8_path *path, unsigned char *xq, size_t row_bytes, int i) {
    if (!path->interleaved) return xq + (size_t)i * row_bytes;
    return xq + (size_t)(i / path->mr) * path->mr * row_bytes + (size_t)(i % path->mr) * 4;
}

/* rows [begin, end) of x (n rows) quantised into rows; the part that ends at
 * n writes the padding too (in an interleaved tile, the padding rows' groups
 * alone: other threads may be writing the tile's rows) */
static void path_quantise_rows(const int8_path *path, void *rows, const float *x, int n, int cols, int begin, int end) {
    int blocks = cols / SDFED_Q8_0_BLOCK, padded = path_padded_rows(path, n);
    size_t row_bytes = (size_t)blocks * path->x_block_bytes;
    float *xd = rows;
    unsigned char *xq = (unsigned char *)(xd + (size_t)padded * blocks);
    for (int i = begin; i < end; i++)
        path->quantise(x + (size_t)i * cols, cols, path_row_quants(path, xq, row_bytes, i), xd + (size_t)i * blocks);
    if (end < n) return;
    for (int i = n; i < padded; i++) {
        unsigned char *q = path_row_quants(path, xq, row_bytes, i);
        if (!path->interleaved) memset(q, 0, row_bytes);
        for (size_t g = 0; path->interleaved && g < row_bytes / 4; g++) memset(q + g * 4 * path->mr, 0, 4);
    }
    memset(xd + (size_t)n * blocks, 0, sizeof *xd * (size_t)(padded - n) * blocks);
}

/* A weight packed once for linear_int8 (pack_on): a header naming the path
 * whose panels follow (the page may change paths after packing: a weight
 * packed for another is packed per call), then every panel of path->nr
 * rows in turn, the last one's missing rows zero. */
#define PACKED_HEADER_BYTES 16

static size_t path_panel_bytes(const int8_path *path, const sdfed_weight *w) {
    return (size_t)(w->cols / SDFED_Q8_0_BLOCK) * path->block_bytes;
}

/* w's panels packed once for path, or NULL (not packed, or for another path) */
static const unsigned char *packed_panels(const int8_path *path, const sdfed_weight *w) {
    const int8_path *packed_for;
    if (!w->packed || !w->packed_int8) return NULL;
    memcpy(&packed_for, w->packed, sizeof packed_for);
    return packed_for == path ? (const unsigned char *)w->packed + PACKED_HEADER_BYTES : NULL;
}

/* Packs Q8_0 weight w whole for linear_int8 on path (kernels.h's pack): the
 * f32 linears here have no layout of their own to pack (0). */
static size_t pack_on(const int8_path *path, sdfed_weight *w, int int8) {
    if (!int8 || w->type != SDFED_TYPE_Q8_0) return 0;
    _Static_assert(PACKED_HEADER_BYTES >= sizeof path, "the header holds the path");
    size_t panel_bytes = path_panel_bytes(path, w), panels = (size_t)(w->rows + path->nr - 1) / path->nr;
    size_t bytes = PACKED_HEADER_BYTES + panels * panel_bytes;
    unsigned char *packed = malloc(bytes);
    if (!packed) return 0;
    memcpy(packed, &path, sizeof path);
    for (size_t p = 0; p < panels; p++) {
        int r0 = (int)p * path->nr, count = w->rows - r0 < path->nr ? w->rows - r0 : path->nr;
        path->pack(w, r0, count, packed + PACKED_HEADER_BYTES + p * panel_bytes);
    }
    w->packed = packed;
    w->packed_int8 = 1;
    return bytes;
}

/* the scratch's panel, after a tile's f32 sums (INT8_SCRATCH_FITS) */
static unsigned char *scratch_panel(float *scratch) { return (unsigned char *)(scratch + RELAXED_SUMS); }

/* outputs [first, end) of n quantised rows: a panel of path->nr weight rows
 * at a time (packed into the scratch's panel, blocks * block_bytes, unless
 * w is packed once for path and the range starts at a panel) over
 * INT8_CHUNK tokens at a time */
static void path_outputs(const int8_path *path, float *y, const void *rows, const sdfed_weight *w, const float *bias,
                         int n, int first, int end, float *scratch) {
    int cols = w->cols, blocks = cols / SDFED_Q8_0_BLOCK;
    float *sums = scratch;
    unsigned char *panel = scratch_panel(scratch);
    size_t row_bytes = (size_t)blocks * path->x_block_bytes, panel_bytes = path_panel_bytes(path, w);
    const float *xd = rows;
    const unsigned char *xq = (const unsigned char *)(xd + (size_t)path_padded_rows(path, n) * blocks);
    const unsigned char *packed = first % path->nr == 0 ? packed_panels(path, w) : NULL;
    for (int t0 = 0; t0 < n; t0 += INT8_CHUNK) {
        int count = n - t0 < INT8_CHUNK ? n - t0 : INT8_CHUNK;
        for (int r0 = first; r0 < end; r0 += path->nr) {
            int nc = end - r0 < path->nr ? end - r0 : path->nr;
            const unsigned char *p = packed ? packed + (size_t)(r0 / path->nr) * panel_bytes : panel;
            if (!packed) path->pack(w, r0, nc, panel);
            path->panel(blocks, count, xq + (size_t)t0 * row_bytes, xd + (size_t)t0 * blocks, p,
                        y + (size_t)t0 * w->rows + r0, w->rows, nc, bias ? bias + r0 : NULL, sums);
        }
    }
}

/* linear_int8's outputs [first, end) of each token on path (where w is
 * Q8_0; else as linear_rows): INT8_CHUNK tokens quantised at a time into
 * the scratch, after the room of the sums and a panel */
static void linear_int8_on(const int8_path *path, float *y, const float *x, const sdfed_weight *w, const float *bias,
                           int n, int first, int end, float *scratch) {
    if (w->type != SDFED_TYPE_Q8_0) {
        linear_rows(y, x, w, bias, n, first, end, scratch);
        return;
    }
    // x is (n, cols), W is (rows, cols) in Q8_0 blocks, y is (n, rows)
    int cols = w->cols;
    void *rows = scratch_panel(scratch) + path_panel_bytes(path, w);
    for (int t0 = 0; t0 < n; t0 += INT8_CHUNK) {
        int count = n - t0 < INT8_CHUNK ? n - t0 : INT8_CHUNK;
        path_quantise_rows(path, rows, x + (size_t)t0 * cols, count, cols, 0, count);
        path_outputs(path, y + (size_t)t0 * w->rows, rows, w, bias, count, first, end, scratch);
    }
}

static void linear_int8(float *y, const float *x, const sdfed_weight *w, const float *bias, int n, float *scratch) {
    linear_int8_on(&int16_path, y, x, w, bias, n, 0, w->rows, scratch);
}

static void linear_outputs(int int8, float *y, const float *x, const sdfed_weight *w, const float *bias, int n,
                           int first, int end, float *scratch) {
    if (int8)
        linear_int8_on(&int16_path, y, x, w, bias, n, first, end, scratch);
    else
        linear_rows(y, x, w, bias, n, first, end, scratch);
}

/* linear_int8 in the pool's two steps (kernels.h): x quantised once between
 * the threads, then their outputs */
static size_t int8_rows_bytes(int n, int cols) { return path_rows_bytes(&int16_path, n, cols); }

static void int8_quantise_rows(void *rows, const float *x, int n, int cols, int begin, int end) {
    path_quantise_rows(&int16_path, rows, x, n, cols, begin, end);
}

static void int8_outputs(float *y, const void *rows, const sdfed_weight *w, const float *bias, int n, int first,
                         int end, float *scratch) {
    path_outputs(&int16_path, y, rows, w, bias, n, first, end, scratch);
}

static size_t pack(sdfed_weight *w, int int8) { return pack_on(&int16_path, w, int8); }

/* dx += dy W on SIMD128: every output the portable definition's chain over
 * W's rows in order (dx + g_0 w_0, then + g_1 w_1, ...: a product, then a
 * sum, each rounded), so the portable bits; blocks of up to 4 tokens x 8
 * columns keep their sums in registers over a whole panel of rows. */

/* dx's mr rows (cols apart) in columns [c, c + 4 nv) += the panel's count
 * rows (cols apart) times g (their dy, ld_g apart a token); mr and nv
 * constants where inlined */
__attribute__((always_inline)) static inline void backward_block(const int mr, const int nv, int count, const float *g,
                                                                 int ld_g, const float *panel, int cols, float *dx,
                                                                 int c) {
    v128_t acc[4][2];
    for (int i = 0; i < mr; i++)
        for (int v = 0; v < nv; v++) acc[i][v] = wasm_v128_load(dx + (size_t)i * cols + c + 4 * v);
    for (int r = 0; r < count; r++) {
        const float *w_r = panel + (size_t)r * cols + c;
        v128_t w[2];
        for (int v = 0; v < nv; v++) w[v] = wasm_v128_load(w_r + 4 * v);
        for (int i = 0; i < mr; i++) {
            v128_t s = wasm_v128_load32_splat(g + (size_t)i * ld_g + r);
            for (int v = 0; v < nv; v++) acc[i][v] = madd(acc[i][v], s, w[v]);
        }
    }
    for (int i = 0; i < mr; i++)
        for (int v = 0; v < nv; v++) wasm_v128_store(dx + (size_t)i * cols + c + 4 * v, acc[i][v]);
}

/* mr tokens' dx (all their columns) += the panel's rows times their g */
__attribute__((always_inline)) static inline void backward_tokens(const int mr, int count, const float *g, int ld_g,
                                                                  const float *panel, int cols, float *dx) {
    int c = 0;
    for (; c + 8 <= cols; c += 8) backward_block(mr, 2, count, g, ld_g, panel, cols, dx, c);
    for (; c + 4 <= cols; c += 4) backward_block(mr, 1, count, g, ld_g, panel, cols, dx, c);
    for (; c < cols; c++)
        for (int i = 0; i < mr; i++)
            for (int r = 0; r < count; r++)
                dx[(size_t)i * cols + c] += g[(size_t)i * ld_g + r] * panel[(size_t)r * cols + c];
}

static void linear_backward(float *dx, const float *dy, const sdfed_weight *w, int n, float *scratch) {
    // dy is (n, rows), W is (rows, cols), dx is (n, cols)
    int cols = w->cols, rows = w->rows;
    int panel_rows = sdfed_kernel_panel_rows(&sdfed_kernels_simd128, cols);
    for (int r0 = 0; r0 < rows; r0 += panel_rows) {
        int count = rows - r0 < panel_rows ? rows - r0 : panel_rows;
        const float *panel = weight_panel(w, r0, count, scratch);
        int i = 0;
        for (; i + 4 <= n; i += 4)
            backward_tokens(4, count, dy + (size_t)i * rows + r0, rows, panel, cols, dx + (size_t)i * cols);
        const float *g = dy + (size_t)i * rows + r0;
        float *dx_i = dx + (size_t)i * cols;
        switch (n - i) {
        case 3: backward_tokens(3, count, g, rows, panel, cols, dx_i); break;
        case 2: backward_tokens(2, count, g, rows, panel, cols, dx_i); break;
        case 1: backward_tokens(1, count, g, rows, panel, cols, dx_i); break;
        default: break;
        }
    }
}

/* nc rows of src (ld floats apart, cols each) as a panel of nr columns (a
 * multiple of 4: the FMA tile's RELAXED_F32_NR, gemm's tile's RELAXED_NR):
 * for each column the nr rows' values, zeros past nc; 4 rows x 4 columns
 * transposed in registers at a time */
static void transpose_to_panel(const float *src, size_t ld, int nc, int nr, int cols, float *panel) {
    int c = 0;
    if (nc == nr)
        for (; c + 4 <= cols; c += 4)
            for (int h = 0; h < nr; h += 4) {
                const float *s = src + (size_t)h * ld + c;
                v128_t rows[4], columns[4];
                for (int r = 0; r < 4; r++) rows[r] = wasm_v128_load(s + r * ld);
                transpose_4x4(rows, columns);
                for (int k = 0; k < 4; k++) wasm_v128_store(panel + (size_t)(c + k) * nr + h, columns[k]);
            }
    for (; c < cols; c++)
        for (int j = 0; j < nr; j++) panel[(size_t)c * nr + j] = j < nc ? src[(size_t)j * ld + c] : 0.0f;
}

/* op(B)'s columns [j0, j0 + nc) (nc <= nr) as a panel of nr floats a row
 * of k (nr a multiple of 4), zeros past nc: B's rows copied, or its
 * columns transposed (gemm's tile, at RELAXED_NR, and gemm_fma's, at
 * RELAXED_F32_NR) */
static void pack_b_panel(const float *b, int ldb, int trans_b, int j0, int nc, int nr, int k, float *panel) {
    if (trans_b)
        transpose_to_panel(b + (size_t)j0 * ldb, (size_t)ldb, nc, nr, k, panel);
    else if (nc == nr) /* whole rows: a vector move each 4 */
        for (int q = 0; q < k; q++)
            for (int j = 0; j < nr; j += 4)
                wasm_v128_store(panel + (size_t)q * nr + j, wasm_v128_load(b + (size_t)q * ldb + j0 + j));
    else
        for (int q = 0; q < k; q++)
            for (int j = 0; j < nr; j++) panel[(size_t)q * nr + j] = j < nc ? b[(size_t)q * ldb + j0 + j] : 0.0f;
}

/* gemm: every output the portable definition's chain (kernels_portable.c):
 * with op(B) as stored, C's row scaled by beta first (0: zeros), then
 * c = c + (alpha * a_ip) * b_pj for p in order; with op(B) transposed, the
 * sum of a_ip * b_jp for p in order, then c = (beta-scaled c) + alpha *
 * sum; each product and each sum rounded. A register tile of up to GEMM_MR
 * rows x RELAXED_NR columns runs those chains a lane each, over op(B)'s
 * columns copied into a panel (zeros past the last; a partial tile's C
 * through a copy): read in place, the attention's V (rows 9 KB apart, in
 * a quarter of the L1 cache's sets) left the cache between tiles, and its
 * product ran at 0.93x; both operands transposed go to the portable gemm
 * itself. The portable bits, whatever the shape. */
#define GEMM_MR 4

/* C's mr x RELAXED_NR block at c (ldc apart) from op(A)'s rows at a (its
 * columns when transposed) and op(B)'s columns in a panel (row p of them
 * at panel + p * RELAXED_NR); inlined where trans_a, trans_b and mr are
 * constants, so that its loop has no branch on them */
__attribute__((always_inline)) static inline void gemm_tile(const int trans_a, const int trans_b, const int mr, int k,
                                                            float alpha, const float *a, int lda, const float *panel,
                                                            float beta, float *c, int ldc) {
    const v128_t alphas = wasm_f32x4_splat(alpha), betas = wasm_f32x4_splat(beta);
    v128_t acc[GEMM_MR][2];
    for (int i = 0; i < mr; i++)
        for (int h = 0; h < 2; h++) {
            acc[i][h] = wasm_f32x4_splat(0.0f);
            if (!trans_b && beta == 1.0f) acc[i][h] = wasm_v128_load(c + (size_t)i * ldc + 4 * h);
            if (!trans_b && beta != 0.0f && beta != 1.0f)
                acc[i][h] = wasm_f32x4_mul(wasm_v128_load(c + (size_t)i * ldc + 4 * h), betas);
        }
    for (int p = 0; p < k; p++) {
        const float *b_p = panel + (size_t)p * RELAXED_NR;
        v128_t b0 = wasm_v128_load(b_p), b1 = wasm_v128_load(b_p + 4);
        for (int i = 0; i < mr; i++) {
            float a_ip = trans_a ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p];
            v128_t s = wasm_f32x4_splat(trans_b ? a_ip : alpha * a_ip);
            acc[i][0] = wasm_f32x4_add(acc[i][0], wasm_f32x4_mul(s, b0));
            acc[i][1] = wasm_f32x4_add(acc[i][1], wasm_f32x4_mul(s, b1));
        }
    }
    for (int i = 0; i < mr; i++)
        for (int h = 0; h < 2; h++) {
            float *c_ih = c + (size_t)i * ldc + 4 * h;
            v128_t out = acc[i][h];
            if (trans_b) {
                v128_t scaled = wasm_f32x4_splat(0.0f);
                if (beta == 1.0f) scaled = wasm_v128_load(c_ih);
                if (beta != 0.0f && beta != 1.0f) scaled = wasm_f32x4_mul(wasm_v128_load(c_ih), betas);
                out = wasm_f32x4_add(scaled, wasm_f32x4_mul(alphas, out));
            }
            wasm_v128_store(c_ih, out);
        }
}

/* the tile for mr rows (1 to GEMM_MR), its operands' form constants */
#define GEMM_TILE_ROWS(ta, tb)                                                                                         \
    switch (mr) {                                                                                                      \
    case 4: gemm_tile(ta, tb, 4, k, alpha, a, lda, panel, beta, c, ldc); break;                                        \
    case 3: gemm_tile(ta, tb, 3, k, alpha, a, lda, panel, beta, c, ldc); break;                                        \
    case 2: gemm_tile(ta, tb, 2, k, alpha, a, lda, panel, beta, c, ldc); break;                                        \
    default: gemm_tile(ta, tb, 1, k, alpha, a, lda, panel, beta, c, ldc); break;                                       \
    }

/* C's block of mr rows x RELAXED_NR columns (gemm_tile's arguments) */
static void gemm_block(int trans_a, int trans_b, int mr, int k, float alpha, const float *a, int lda,
                       const float *panel, float beta, float *c, int ldc) {
    _Static_assert(GEMM_MR == 4, "a case for every row count");
    if (trans_b)
        GEMM_TILE_ROWS(0, 1)
    else if (trans_a)
        GEMM_TILE_ROWS(1, 0)
    else
        GEMM_TILE_ROWS(0, 0)
}

static void gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda, const float *b,
                 int ldb, float beta, float *c, int ldc) {
    /* both operands transposed, or no memory for the panel: the portable gemm itself (the same chains) */
    float *panel = !(trans_a && trans_b) ? malloc(sizeof *panel * (size_t)k * RELAXED_NR + 1) : NULL;
    if (!panel) {
        sdfed_kernels_portable.gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    for (int j0 = 0; j0 < n; j0 += RELAXED_NR) {
        int nc = n - j0 < RELAXED_NR ? n - j0 : RELAXED_NR;
        pack_b_panel(b, ldb, trans_b, j0, nc, RELAXED_NR, k, panel);
        for (int i0 = 0; i0 < m; i0 += GEMM_MR) {
            int mr = m - i0 < GEMM_MR ? m - i0 : GEMM_MR;
            const float *a_i0 = trans_a ? a + i0 : a + (size_t)i0 * lda;
            float *c_tile = c + (size_t)i0 * ldc + j0;
            if (nc == RELAXED_NR) {
                gemm_block(trans_a, trans_b, mr, k, alpha, a_i0, lda, panel, beta, c_tile, ldc);
                continue;
            }
            float block[GEMM_MR * RELAXED_NR] = {0}; /* the last columns: C through a copy */
            for (int i = 0; i < mr; i++) memcpy(block + i * RELAXED_NR, c_tile + (size_t)i * ldc, sizeof *c * nc);
            gemm_block(trans_a, trans_b, mr, k, alpha, a_i0, lda, panel, beta, block, RELAXED_NR);
            for (int i = 0; i < mr; i++) memcpy(c_tile + (size_t)i * ldc, block + i * RELAXED_NR, sizeof *c * nc);
        }
    }
    free(panel);
}

const sdfed_kernels sdfed_kernels_simd128 = {.name = "simd128",
                                             .panel_floats = SDFED_SIMD128_PANEL_FLOATS,
                                             .int8_scratch_rows = INT8_SCRATCH_ROWS,
                                             .linear = linear,
                                             .linear_int8 = linear_int8,
                                             .linear_outputs = linear_outputs,
                                             .int8_rows_bytes = int8_rows_bytes,
                                             .int8_quantise_rows = int8_quantise_rows,
                                             .int8_outputs = int8_outputs,
                                             .pack = pack,
                                             .reentrant_backward = 1,
                                             .linear_backward = linear_backward,
                                             .gemm = gemm};

#if defined(SDFED_KERNELS_SIMD128_RELAXED)
/* simd128-relaxed: x as x+ and x- and the sums of x-, w as w and ~w (the
 * sign split), or x (+ 128) and w (one dot per 16 products) (relaxed_tile.h),
 * the panel run by relaxed_tile.c's module through relaxed_simd.js: what
 * this engine runs and the page asks for (below), and the calls */
enum {
    RELAXED_OFF,         /* the engine lacks relaxed SIMD, or the page turned it off */
    RELAXED_CHOOSE,      /* it runs; linear_int8's dot is the faster of the two (relaxed_pays) */
    RELAXED_DOT_ASKED,   /* it runs; the page asked for relaxed SIMD's dot */
    RELAXED_SIMD128_DOT, /* it runs; the page asked for SIMD128's dot (and relaxed SIMD's f32 products) */
};
extern int sdfed_relaxed_simd(void);
extern void sdfed_relaxed_panel(int blocks, int count, const unsigned char *xq, const float *xd,
                                const unsigned char *panel, float *y, int stride, int nc, const float *bias,
                                float *sums);
extern int sdfed_relaxed_dot_kind(void);
extern int sdfed_relaxed_dot_form(void);
extern void sdfed_relaxed_one_panel(int blocks, int count, const unsigned char *xq, const float *xd,
                                    const unsigned char *panel, float *y, int stride, int nc, const float *bias,
                                    float *sums, int how);
extern int sdfed_relaxed_fused(void);
extern void sdfed_relaxed_f32_panel(int cols, int count, const float *xg, const float *panel, float *y, int stride,
                                    int nc, const float *bias);
_Static_assert(INT8_CHUNK % RELAXED_MR == 0 && INT8_CHUNK % RELAXED_ONE_MR == 0 && RELAXED_BLOCK == SDFED_Q8_0_BLOCK &&
                   INT8_SCRATCH_FITS(RELAXED_BLOCK_BYTES, RELAXED_X_BLOCK_BYTES) &&
                   INT8_SCRATCH_FITS(RELAXED_ONE_BLOCK_BYTES, RELAXED_ONE_X_BLOCK_BYTES),
               "the relaxed paths' tiles fit the chunk, their panels and chunks the scratch");
/* The tokens linear_fma groups at a time, whole groups: ViT-B/16's 197 at
 * once (each chunk packs every weight panel again: 93 tokens at a time
 * cost an f32 image 6%); the relaxed backend's scratch holds the FMA
 * tile's weight rows, its panel and a chunk of grouped tokens. */
#define F32_CHUNK 198
#define F32_SCRATCH_ROWS (2 * RELAXED_F32_NR + F32_CHUNK)
_Static_assert(F32_CHUNK % RELAXED_F32_MR == 0, "whole groups a chunk");

static void quantise_sign_split_row(const float *x, int cols, unsigned char *q, float *d) {
    int blocks = cols / SDFED_Q8_0_BLOCK;
    for (int b = 0; b < blocks; b++) {
        v128_t q16[4], minus_sum = wasm_i32x4_splat(0);
        d[b] = quantise_block(x + (size_t)b * SDFED_Q8_0_BLOCK, q16);
        for (int h = 0; h < 2; h++) {
            v128_t q8 = wasm_i8x16_narrow_i16x8(q16[2 * h], q16[2 * h + 1]), zero = wasm_i32x4_splat(0);
            v128_t plus = wasm_i8x16_max(q8, zero), minus = wasm_i8x16_max(wasm_i8x16_neg(q8), zero);
            wasm_v128_store(q + (size_t)b * SDFED_Q8_0_BLOCK + 16 * h, plus);
            wasm_v128_store(q + cols + (size_t)b * SDFED_Q8_0_BLOCK + 16 * h, minus);
            minus_sum =
                wasm_i32x4_add(minus_sum, wasm_i32x4_extadd_pairwise_i16x8(wasm_u16x8_extadd_pairwise_u8x16(minus)));
        }
        int32_t sum = wasm_i32x4_extract_lane(minus_sum, 0) + wasm_i32x4_extract_lane(minus_sum, 1) +
                      wasm_i32x4_extract_lane(minus_sum, 2) + wasm_i32x4_extract_lane(minus_sum, 3);
        memcpy(q + 2 * (size_t)cols + 4 * (size_t)b, &sum, 4);
    }
}

/* Rows [r0, r0 + count) of w as the relaxed tile's panel (relaxed_tile.h),
 * missing rows zero: per block, for each group of 4 columns the 4-byte
 * groups of the 8 rows (4 rows' groups of 4 columns transposed in
 * registers at a time), then (split) those of ~w; the 8 scales; then (one
 * dot) the 8 starts -offset sum(w), x's quants being + offset. */
static void pack_relaxed_panel(const sdfed_weight *w, int r0, int count, unsigned char *panel, int split, int offset) {
    const int block_bytes = split ? RELAXED_BLOCK_BYTES : RELAXED_ONE_BLOCK_BYTES;
    const int group_bytes = split ? RELAXED_GROUP_BYTES : RELAXED_ONE_GROUP_BYTES;
    const int qs_bytes = split ? RELAXED_QS_BYTES : RELAXED_ONE_QS_BYTES;
    int blocks = w->cols / SDFED_Q8_0_BLOCK;
    const sdfed_block_q8_0 *w_r0 = (const sdfed_block_q8_0 *)w->data + (size_t)r0 * blocks;
    _Static_assert(RELAXED_NR == 8 && RELAXED_GROUPS == 8, "two halves of 4 rows, two of 4 groups");
    for (int j0 = 0; j0 < RELAXED_NR; j0 += 4)
        for (int b = 0; b < blocks; b++) {
            unsigned char *p_b = panel + (size_t)b * block_bytes;
            v128_t groups[2][4]; /* [half][row]: groups 4 half .. 4 half + 3 of the row */
            float d[4] = {0};
            for (int r = 0; r < 4; r++) {
                groups[0][r] = groups[1][r] = wasm_i32x4_splat(0);
                if (j0 + r >= count) continue;
                const sdfed_block_q8_0 *block = w_r0 + (size_t)(j0 + r) * blocks + b;
                groups[0][r] = wasm_v128_load(block->qs);
                groups[1][r] = wasm_v128_load(block->qs + 16);
                d[r] = sdfed_f16_to_f32(block->d);
            }
            v128_t sums = wasm_i32x4_splat(0); /* the 4 rows' sums of w (one dot) */
            for (int h = 0; h < 2; h++) {
                v128_t by_group[4];
                transpose_4x4(groups[h], by_group);
                for (int k = 0; k < 4; k++) {
                    unsigned char *p_g = p_b + (4 * h + k) * group_bytes + j0 * 4;
                    wasm_v128_store(p_g, by_group[k]);
                    if (split)
                        wasm_v128_store(p_g + RELAXED_NR * 4, wasm_v128_not(by_group[k]));
                    else
                        sums = wasm_i32x4_add(
                            sums, wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_extadd_pairwise_i8x16(by_group[k])));
                }
            }
            memcpy(p_b + qs_bytes + j0 * 4, d, sizeof d);
            if (!split)
                wasm_v128_store(p_b + qs_bytes + (RELAXED_NR + j0) * 4,
                                wasm_i32x4_mul(sums, wasm_i32x4_splat(-offset)));
        }
}

static void pack_complement_panel(const sdfed_weight *w, int r0, int count, unsigned char *panel) {
    pack_relaxed_panel(w, r0, count, panel, 1, 0);
}

static const int8_path split_path = {.mr = RELAXED_MR,
                                     .nr = RELAXED_NR,
                                     .block_bytes = RELAXED_BLOCK_BYTES,
                                     .x_block_bytes = RELAXED_X_BLOCK_BYTES,
                                     .quantise = quantise_sign_split_row,
                                     .pack = pack_complement_panel,
                                     .panel = sdfed_relaxed_panel};

/* One dot per 16 products (relaxed_tile.h): a row of x as int8 quants, each
 * XORed with offset (0, or 0x80: + 128 as an unsigned byte), its groups of
 * 4 interleaved with the tile's other rows' (4 * RELAXED_ONE_MR bytes apart) */
static void quantise_one_dot_row(const float *x, int cols, unsigned char *q, float *d, v128_t offset) {
    for (int b = 0; b < cols / SDFED_Q8_0_BLOCK; b++) {
        v128_t q16[4];
        d[b] = quantise_block(x + (size_t)b * SDFED_Q8_0_BLOCK, q16);
        unsigned char *q_b = q + (size_t)b * RELAXED_GROUPS * 4 * RELAXED_ONE_MR;
        for (int h = 0; h < 2; h++) {
            v128_t groups = wasm_v128_xor(wasm_i8x16_narrow_i16x8(q16[2 * h], q16[2 * h + 1]), offset);
            unsigned char *q_h = q_b + 4 * 4 * RELAXED_ONE_MR * h;
            wasm_v128_store32_lane(q_h, groups, 0);
            wasm_v128_store32_lane(q_h + 4 * RELAXED_ONE_MR, groups, 1);
            wasm_v128_store32_lane(q_h + 8 * RELAXED_ONE_MR, groups, 2);
            wasm_v128_store32_lane(q_h + 12 * RELAXED_ONE_MR, groups, 3);
        }
    }
}

static void quantise_unsigned_row(const float *x, int cols, unsigned char *q, float *d) {
    quantise_one_dot_row(x, cols, q, d, wasm_i8x16_splat(-128));
}

static void quantise_signed_row(const float *x, int cols, unsigned char *q, float *d) {
    quantise_one_dot_row(x, cols, q, d, wasm_i8x16_splat(0));
}

static void pack_unsigned_panel(const sdfed_weight *w, int r0, int count, unsigned char *panel) {
    pack_relaxed_panel(w, r0, count, panel, 0, 128);
}

static void pack_signed_panel(const sdfed_weight *w, int r0, int count, unsigned char *panel) {
    pack_relaxed_panel(w, r0, count, panel, 0, 0);
}

/* how the one-dot panels multiply: the engine's dot, or (a form asked for
 * that the engine's dot is not) the exact sums of its kind in SIMD128 */
static int one_dot_how = RELAXED_ONE_ENGINE;

static void one_dot_panel(int blocks, int count, const unsigned char *xq, const float *xd, const unsigned char *panel,
                          float *y, int stride, int nc, const float *bias, float *sums) {
    sdfed_relaxed_one_panel(blocks, count, xq, xd, panel, y, stride, nc, bias, sums, one_dot_how);
}

static const int8_path unsigned_path = {.mr = RELAXED_ONE_MR,
                                        .nr = RELAXED_NR,
                                        .block_bytes = RELAXED_ONE_BLOCK_BYTES,
                                        .x_block_bytes = RELAXED_ONE_X_BLOCK_BYTES,
                                        .interleaved = 1,
                                        .quantise = quantise_unsigned_row,
                                        .pack = pack_unsigned_panel,
                                        .panel = one_dot_panel};

static const int8_path signed_path = {.mr = RELAXED_ONE_MR,
                                      .nr = RELAXED_NR,
                                      .block_bytes = RELAXED_ONE_BLOCK_BYTES,
                                      .x_block_bytes = RELAXED_ONE_X_BLOCK_BYTES,
                                      .interleaved = 1,
                                      .quantise = quantise_signed_row,
                                      .pack = pack_signed_panel,
                                      .panel = one_dot_panel};

/* sdfed_relaxed_dot_form's answers */
enum { FORM_MODULES_CHOICE, FORM_SPLIT, FORM_UNSIGNED, FORM_SIGNED };

/* The relaxed dot's path, chosen once: the form the page asks for
 * (sdfed_relaxed_dot_form), else one dot per 16 products of the kind the
 * engine's dot is exact as, else the sign split. */
static const int8_path *relaxed_path(void) {
    static const int8_path *path;
    if (path) return path;
    int kind = sdfed_relaxed_dot_kind(), form = sdfed_relaxed_dot_form();
    if (form == FORM_MODULES_CHOICE && kind == RELAXED_DOT_UNSIGNED) form = FORM_UNSIGNED;
    if (form == FORM_MODULES_CHOICE && kind == RELAXED_DOT_SIGNED) form = FORM_SIGNED;
    if (form == FORM_UNSIGNED) {
        one_dot_how = kind == RELAXED_DOT_UNSIGNED ? RELAXED_ONE_ENGINE : RELAXED_DOT_UNSIGNED;
        path = &unsigned_path;
    } else if (form == FORM_SIGNED) {
        one_dot_how = kind == RELAXED_DOT_SIGNED ? RELAXED_ONE_ENGINE : RELAXED_DOT_SIGNED;
        path = &signed_path;
    } else {
        path = &split_path;
    }
    return path;
}

const char *sdfed_kernels_relaxed_dot_form(void) {
    const int8_path *path = relaxed_path();
    if (path == &split_path) return "split";
    if (one_dot_how == RELAXED_ONE_ENGINE) return path == &unsigned_path ? "unsigned" : "signed";
    return path == &unsigned_path ? "unsigned, exact in SIMD128" : "signed, exact in SIMD128";
}

/* the host's clock for relaxed_pays (sdfed_kernels_relaxed_clock) */
static sdfed_clock_fn *host_clock;

void sdfed_kernels_relaxed_clock(sdfed_clock_fn *clock) { host_clock = clock; }

/* One run of path on the host's clock: 2 products of 64 tokens by w. */
static int64_t time_path(const int8_path *path, const sdfed_weight *w, const float *x, float *y, float *scratch) {
    int64_t t = host_clock();
    for (int k = 0; k < 2; k++) linear_int8_on(path, y, x, w, NULL, 64, 0, w->rows, scratch);
    return host_clock() - t;
}

/* Whether the relaxed tile is faster than SIMD128's on this machine, on a
 * ViT-B-wide product (256 rows of 768 columns): the fastest of 11 runs of
 * each, the two paths in turn, timed on the host's clock (without one,
 * SIMD128's path is kept). Runs of a millisecond or two, many of them: on a
 * machine whose cores other programs share, most runs are interrupted, and
 * the fastest of many short ones is a run that was not (some 40 ms in all;
 * 5 runs of 4 products each picked the slower dot under a load of 9 on 2
 * cores). Engines lower the relaxed dot to one
 * instruction where the CPU has an 8-bit dot product (x86's AVX-VNNI, Arm's
 * dot product) and to three elsewhere (x86's pmaddubsw, pmaddwd, paddd),
 * where the exact split's two of them cost more than i32x4.dot_i16x8_s; the
 * answer changes only the speed, both paths give the definition's bits. */
static int relaxed_pays(void) {
    enum { N = 64, ROWS = 256, COLS = 768, BLOCKS = COLS / SDFED_Q8_0_BLOCK, RUNS = 11 };
    sdfed_block_q8_0 *blocks = malloc(sizeof *blocks * ROWS * BLOCKS);
    float *x = malloc(sizeof *x * N * COLS), *y = malloc(sizeof *y * N * ROWS);
    float *scratch = malloc(sizeof *scratch * INT8_SCRATCH_ROWS * COLS);
    int pays = 0;
    if (host_clock && blocks && x && y && scratch) {
        for (int b = 0; b < ROWS * BLOCKS; b++) {
            blocks[b].d = sdfed_f32_to_f16(0.01f);
            for (int c = 0; c < SDFED_Q8_0_BLOCK; c++) blocks[b].qs[c] = (signed char)((b * 37 + c * 11) % 255 - 127);
        }
        for (int i = 0; i < N * COLS; i++) x[i] = (float)(i % 97) - 48.0f;
        sdfed_weight w = {.type = SDFED_TYPE_Q8_0, .rows = ROWS, .cols = COLS, .data = blocks};
        time_path(relaxed_path(), &w, x, y, scratch); /* the module's first call instantiates it */
        int64_t relaxed = INT64_MAX, int16 = INT64_MAX;
        for (int r = 0; r < RUNS; r++) {
            int64_t t = time_path(relaxed_path(), &w, x, y, scratch);
            relaxed = t < relaxed ? t : relaxed;
            t = time_path(&int16_path, &w, x, y, scratch);
            int16 = t < int16 ? t : int16;
        }
        pays = relaxed < int16;
    }
    free(blocks);
    free(x);
    free(y);
    free(scratch);
    return pays;
}

/* What the engine runs, asked once. */
static int relaxed_engine(void) {
    static int engine = -1;
    if (engine < 0) engine = sdfed_relaxed_simd();
    return engine;
}

/* linear_int8 on the relaxed dot: it runs here and is asked for, or it
 * runs here and pays (asked once). */
static int relaxed_dot_chosen(void) {
    static int chosen = -1;
    if (chosen < 0) {
        if (relaxed_engine() != RELAXED_OFF) relaxed_path(); /* chosen here, before any thread runs it */
        chosen = relaxed_engine() == RELAXED_DOT_ASKED || (relaxed_engine() == RELAXED_CHOOSE && relaxed_pays());
    }
    return chosen;
}

/* linear on the FMA tile: it runs here and its multiply-add is fused. */
static int relaxed_fma_chain(void) {
    static int fused = -1;
    if (fused < 0) fused = relaxed_engine() != RELAXED_OFF && sdfed_relaxed_fused();
    return fused;
}

static int relaxed_chosen(void) { return relaxed_dot_chosen() || relaxed_fma_chain(); }

/* Rows [r0, r0 + nc) of w as the FMA tile's panel (f32 rows converted
 * into rows first). */
static void pack_fma_panel(const sdfed_weight *w, int r0, int nc, float *rows, float *panel) {
    transpose_to_panel(weight_panel(w, r0, nc, rows), (size_t)w->cols, nc, RELAXED_F32_NR, w->cols, panel);
}

/* Floats of n tokens of cols inputs in the FMA tile's groups: whole
 * groups (relaxed_tile.h). */
static size_t f32_groups_floats(int n, int cols) {
    return (size_t)(n + RELAXED_F32_MR - 1) / RELAXED_F32_MR * RELAXED_F32_MR * (size_t)cols;
}

/* Rows [0, n) of op(x) (x's rows ldx apart, or with trans its columns)
 * as the FMA tile reads them, in groups of RELAXED_F32_MR tokens, into xg
 * (f32_groups_floats(n, cols)): a whole group's 3 rows 4 columns at a
 * time, interleaved in registers */
static void group_f32_rows(const float *x, size_t ldx, int trans, int n, int cols, float *xg) {
    _Static_assert(RELAXED_F32_MR == 3, "three rows' columns interleaved below");
    int t0 = 0;
    for (; !trans && t0 + RELAXED_F32_MR <= n; t0 += RELAXED_F32_MR) {
        const float *a = x + (size_t)t0 * ldx, *b = a + ldx, *c = b + ldx;
        float *group = xg + (size_t)t0 * cols;
        int k = 0;
        for (; k + 4 <= cols; k += 4, group += 4 * RELAXED_F32_MR) {
            v128_t ra = wasm_v128_load(a + k), rb = wasm_v128_load(b + k), rc = wasm_v128_load(c + k);
            v128_t ab = wasm_i32x4_shuffle(ra, rb, 0, 4, 1, 5), bc = wasm_i32x4_shuffle(rb, rc, 1, 5, 2, 6);
            v128_t ab3 = wasm_i32x4_shuffle(ra, rb, 3, 7, 3, 7);
            wasm_v128_store(group, wasm_i32x4_shuffle(ab, rc, 0, 1, 4, 2));      /* a0 b0 c0 a1 */
            wasm_v128_store(group + 4, wasm_i32x4_shuffle(bc, ra, 0, 1, 6, 2));  /* b1 c1 a2 b2 */
            wasm_v128_store(group + 8, wasm_i32x4_shuffle(rc, ab3, 2, 4, 5, 3)); /* c2 a3 b3 c3 */
        }
        for (; k < cols; k++, group += RELAXED_F32_MR) {
            group[0] = a[k];
            group[1] = b[k];
            group[2] = c[k];
        }
    }
    for (int t = t0; t < n; t++) {
        float *column0 = xg + (size_t)(t / RELAXED_F32_MR) * cols * RELAXED_F32_MR + t % RELAXED_F32_MR;
        for (int k = 0; k < cols; k++)
            column0[(size_t)k * RELAXED_F32_MR] = trans ? x[(size_t)k * ldx + t] : x[(size_t)t * ldx + k];
    }
}

/* linear's outputs [first, end) with every one the in-order FMA chain
 * (where fused): F32_CHUNK tokens grouped at a time, then a panel of
 * RELAXED_F32_NR weight rows at a time, the chunk's tokens over it */
static void linear_fma(float *y, const float *x, const sdfed_weight *w, const float *bias, int n, int first, int end,
                       float *scratch) {
    int cols = w->cols, rows = w->rows;
    float *panel = scratch + (size_t)RELAXED_F32_NR * cols, *xg = panel + (size_t)RELAXED_F32_NR * cols;
    for (int t0 = 0; t0 < n; t0 += F32_CHUNK) {
        int count = n - t0 < F32_CHUNK ? n - t0 : F32_CHUNK;
        group_f32_rows(x + (size_t)t0 * cols, (size_t)cols, 0, count, cols, xg);
        for (int r0 = first; r0 < end; r0 += RELAXED_F32_NR) {
            int nc = end - r0 < RELAXED_F32_NR ? end - r0 : RELAXED_F32_NR;
            pack_fma_panel(w, r0, nc, scratch, panel);
            sdfed_relaxed_f32_panel(cols, count, xg, panel, y + (size_t)t0 * rows + r0, rows, nc,
                                    bias ? bias + r0 : NULL);
        }
    }
}

/* linear_int8's path here: the relaxed dot's where it was chosen, else SIMD128's */
static const int8_path *int8_path_relaxed(void) { return relaxed_dot_chosen() ? relaxed_path() : &int16_path; }

static void linear_outputs_relaxed(int int8, float *y, const float *x, const sdfed_weight *w, const float *bias, int n,
                                   int first, int end, float *scratch) {
    if (int8 && w->type == SDFED_TYPE_Q8_0)
        linear_int8_on(int8_path_relaxed(), y, x, w, bias, n, first, end, scratch);
    else if (relaxed_fma_chain())
        linear_fma(y, x, w, bias, n, first, end, scratch);
    else
        linear_rows(y, x, w, bias, n, first, end, scratch);
}

/* gemm with every output the FMA chain, then alpha * acc (+ beta * C) as
 * natively (linear_fma.c): op(B)'s columns packed RELAXED_F32_NR at a time,
 * op(A)'s rows grouped once for the tile; without memory for the panel and
 * the groups, SIMD128's gemm. */
static void gemm_fma(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                     const float *b, int ldb, float beta, float *c, int ldc) {
    if (m <= 0 || n <= 0) return;
    size_t panel_floats = (size_t)k * RELAXED_F32_NR, sums_floats = (size_t)m * RELAXED_F32_NR;
    float *panel = malloc(sizeof(float) * (panel_floats + sums_floats + f32_groups_floats(m, k)) + 1);
    if (!panel) {
        gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    float *sums = panel + panel_floats, *xg = sums + sums_floats;
    group_f32_rows(a, (size_t)lda, trans_a, m, k, xg);
    int whole = alpha == 1.0f && beta == 0.0f;
    for (int j0 = 0; j0 < n; j0 += RELAXED_F32_NR) {
        int nc = n - j0 < RELAXED_F32_NR ? n - j0 : RELAXED_F32_NR;
        pack_b_panel(b, ldb, trans_b, j0, nc, RELAXED_F32_NR, k, panel);
        if (whole) {
            sdfed_relaxed_f32_panel(k, m, xg, panel, c + j0, ldc, nc, NULL);
            continue;
        }
        sdfed_relaxed_f32_panel(k, m, xg, panel, sums, RELAXED_F32_NR, nc, NULL);
        v128_t alphas = wasm_f32x4_splat(alpha), betas = wasm_f32x4_splat(beta);
        for (int i = 0; i < m; i++) {
            float *c_i = c + (size_t)i * ldc + j0;
            const float *s_i = sums + (size_t)i * RELAXED_F32_NR;
            int j = 0;
            for (; nc == RELAXED_F32_NR && j < RELAXED_F32_NR; j += 4) { /* the same two steps per lane as below */
                v128_t out = wasm_f32x4_mul(alphas, wasm_v128_load(s_i + j));
                if (beta != 0.0f) out = wasm_f32x4_add(out, wasm_f32x4_mul(betas, wasm_v128_load(c_i + j)));
                wasm_v128_store(c_i + j, out);
            }
            for (; j < nc; j++) {
                float out = alpha * s_i[j];
                if (beta != 0.0f) out += beta * c_i[j];
                c_i[j] = out;
            }
        }
    }
    free(panel);
}

static void gemm_relaxed(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                         const float *b, int ldb, float beta, float *c, int ldc) {
    if (relaxed_fma_chain())
        gemm_fma(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    else
        gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* dx += dy W as gemm_fma (where fused), as natively: F32 weights whole,
 * F16 and Q8_0 rows turned into f32 sdfed_fma_backward_panel_rows at a
 * time (in memory of its own: more than the scratch holds), each panel's
 * chains added to dx in turn; without that memory, SIMD128's */
static void linear_backward_relaxed(float *dx, const float *dy, const sdfed_weight *w, int n, float *scratch) {
    int cols = w->cols, rows = w->rows;
    if (w->type == SDFED_TYPE_F32 && relaxed_fma_chain()) {
        gemm_fma(0, 0, n, cols, rows, 1.0f, dy, rows, w->data, cols, 1.0f, dx, cols);
        return;
    }
    int panel_rows = sdfed_fma_backward_panel_rows(cols);
    panel_rows = panel_rows < rows ? panel_rows : rows;
    float *panel = relaxed_fma_chain() ? malloc(sizeof *panel * (size_t)panel_rows * cols) : NULL;
    if (!panel) {
        linear_backward(dx, dy, w, n, scratch);
        return;
    }
    for (int r0 = 0; r0 < rows; r0 += panel_rows) {
        int count = rows - r0 < panel_rows ? rows - r0 : panel_rows;
        gemm_fma(0, 0, n, cols, count, 1.0f, dy + r0, rows, weight_panel(w, r0, count, panel), cols, 1.0f, dx, cols);
    }
    free(panel);
}

static size_t int8_rows_bytes_relaxed(int n, int cols) { return path_rows_bytes(int8_path_relaxed(), n, cols); }

static void int8_quantise_rows_relaxed(void *rows, const float *x, int n, int cols, int begin, int end) {
    path_quantise_rows(int8_path_relaxed(), rows, x, n, cols, begin, end);
}

static void int8_outputs_relaxed(float *y, const void *rows, const sdfed_weight *w, const float *bias, int n, int first,
                                 int end, float *scratch) {
    path_outputs(int8_path_relaxed(), y, rows, w, bias, n, first, end, scratch);
}

static size_t pack_relaxed(sdfed_weight *w, int int8) { return pack_on(int8_path_relaxed(), w, int8); }

static void linear_relaxed(float *y, const float *x, const sdfed_weight *w, const float *bias, int n, float *scratch) {
    linear_outputs_relaxed(0, y, x, w, bias, n, 0, w->rows, scratch);
}

static void linear_int8_relaxed(float *y, const float *x, const sdfed_weight *w, const float *bias, int n,
                                float *scratch) {
    linear_outputs_relaxed(1, y, x, w, bias, n, 0, w->rows, scratch);
}

const sdfed_kernels sdfed_kernels_simd128_relaxed = {.name = "simd128-relaxed",
                                                     .available = relaxed_chosen,
                                                     .fma_chains = relaxed_fma_chain,
                                                     .relaxed_dot = relaxed_dot_chosen,
                                                     .panel_floats = SDFED_SIMD128_PANEL_FLOATS,
                                                     .min_panel_rows = F32_SCRATCH_ROWS, /* linear_fma's */
                                                     .int8_scratch_rows = INT8_SCRATCH_ROWS,
                                                     .linear = linear_relaxed,
                                                     .linear_int8 = linear_int8_relaxed,
                                                     .linear_outputs = linear_outputs_relaxed,
                                                     .int8_rows_bytes = int8_rows_bytes_relaxed,
                                                     .int8_quantise_rows = int8_quantise_rows_relaxed,
                                                     .int8_outputs = int8_outputs_relaxed,
                                                     .pack = pack_relaxed,
                                                     .reentrant_backward = 1,
                                                     .linear_backward = linear_backward_relaxed,
                                                     .gemm = gemm_relaxed};
#endif
#endif
