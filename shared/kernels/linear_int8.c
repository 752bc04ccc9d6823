/* The native Q8_0 x Q8_0 linear layer (see linear_int8.h): activations
 * quantised a chunk of tokens at a time, weights packed a panel at a time
 * (per call, or the whole weight once),
 * one register-tile kernel per instruction set, all of them computing each
 * output as the portable definition does. */
#include "kernels/dispatch.h"
#if defined(SDFED_HAVE_NATIVE_KERNELS)
#include "kernels/linear_int8.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "base/dtype.h"
#include "kernels/linear_fma.h"
#include "base/clamp.h"

#if defined(SDFED_X86_TILES)
#include <immintrin.h>
#endif

/* weight rows in one packed panel */
#define NR 16
/* 4-byte groups in a block of 32 */
#define GROUPS (SDFED_Q8_0_BLOCK / 4)
/* a packed block of a panel: quants [GROUPS][NR][4], then NR f32 scales,
 * then NR int32 corrections -128 sum(w) */
#define QS_BYTES (GROUPS * NR * 4)
#define PANEL_BLOCK_BYTES (QS_BYTES + NR * 4 + NR * 4)
/* the most panels a tile spans, the most tokens it has */
#define MAX_PANELS 2
#define MAX_TILE_ROWS 6
/* tokens quantised at once, a multiple of every tile's rows: a ViT-B/16
 * image's 197 tokens in one chunk, so its weights are packed once */
#define CHUNK 264

/* the scratch: MAX_PANELS panels, then a chunk's scales and quants */
_Static_assert(CHUNK * 4 / SDFED_Q8_0_BLOCK + MAX_PANELS * PANEL_BLOCK_BYTES / SDFED_Q8_0_BLOCK + CHUNK <=
                   SDFED_INT8_SCRATCH_ROWS * 4,
               "scratch too small for a chunk and the panels");

/* A register tile: MR rows of quantised x (xq stride blocks * 32 bytes, xd
 * stride blocks scales) times `panels` consecutive packed panels into out's
 * MR rows of panels * NR (ldo apart), plus bias[j] where there is a bias
 * (one more rounding). */
typedef void tile_fn(int blocks, const unsigned char *xq, const float *xd, const unsigned char *panel, float *out,
                     size_t ldo, const float *bias);
/* One row of x as quants (+ 128 where the tile wants them unsigned) and
 * block scales, by sdfed_q8_0_activations's rule. */
typedef void quantise_fn(const float *x, int cols, unsigned char *q, float *d);

typedef struct tile_kernel {
    int mr, panels;
    tile_fn *run;
    quantise_fn *quantise;
} tile_kernel;

static void quantise_portable(const float *x, int cols, unsigned char *q, float *d) {
    sdfed_q8_0_activations(x, cols, (signed char *)q, d);
}

#define PORTABLE_MR 4
_Static_assert(PORTABLE_MR <= MAX_TILE_ROWS && CHUNK % PORTABLE_MR == 0, "tiles fit the chunk and the output");

static void tile_portable(int blocks, const unsigned char *xq, const float *xd, const unsigned char *panel, float *out,
                          size_t ldo, const float *bias) {
    int cols = blocks * SDFED_Q8_0_BLOCK;
    float acc[PORTABLE_MR][NR] = {{0}};
    for (int b = 0; b < blocks; b++) {
        const unsigned char *p_b = panel + (size_t)b * PANEL_BLOCK_BYTES;
        float d_w[NR];
        memcpy(d_w, p_b + QS_BYTES, sizeof d_w);
        for (int i = 0; i < PORTABLE_MR; i++) {
            const signed char *x_ib = (const signed char *)xq + (size_t)i * cols + b * SDFED_Q8_0_BLOCK;
            for (int j = 0; j < NR; j++) {
                int32_t dot = 0;
                for (int g = 0; g < GROUPS; g++)
                    for (int t = 0; t < 4; t++) dot += x_ib[g * 4 + t] * (signed char)p_b[(g * NR + j) * 4 + t];
                acc[i][j] = acc[i][j] + (float)dot * (xd[(size_t)i * blocks + b] * d_w[j]);
            }
        }
    }
    for (int i = 0; i < PORTABLE_MR; i++)
        for (int j = 0; j < NR; j++) out[i * ldo + j] = bias ? acc[i][j] + bias[j] : acc[i][j];
}

#if defined(SDFED_X86_TILES)
/* AVX2's tile has 3 rows: at 4, gcc 12 kept two of the 8 integer sums on
 * the stack (a store and a reload in each group's chain; ViT-B/16's Q8_0
 * images 8% slower on Zen 3), and 2 rows amortise the weights' |w| less */
#define AVX2_MR 3
#define VNNI_MR 6
_Static_assert(AVX2_MR <= MAX_TILE_ROWS && VNNI_MR <= MAX_TILE_ROWS && CHUNK % AVX2_MR == 0 && CHUNK % VNNI_MR == 0,
               "tiles fit the chunk and the output");

static inline int32_t load_group(const unsigned char *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* a block's scale by the rule (kernels_portable.c), from its max |x| */
static inline float block_scale(float amax, float *inverse) {
    float d = amax / 127.0f;
    *inverse = d != 0.0f ? 1.0f / d : 0.0f;
    return d;
}

__attribute__((target("avx2"))) static void quantise_avx2(const float *x, int cols, unsigned char *q, float *d) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int b = 0; b < cols / SDFED_Q8_0_BLOCK; b++) {
        const float *x_b = x + (size_t)b * SDFED_Q8_0_BLOCK;
        __m256 v[4], m = _mm256_setzero_ps();
        for (int k = 0; k < 4; k++) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[k] = _mm256_loadu_ps(x_b + 8 * k)));
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        float inverse;
        d[b] = block_scale(_mm_cvtss_f32(h), &inverse);
        __m256 id = _mm256_set1_ps(inverse);
        __m256i i[4];
        for (int k = 0; k < 4; k++) i[k] = _mm256_cvtps_epi32(_mm256_mul_ps(v[k], id)); /* to nearest even */
        __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
        _mm256_storeu_si256((__m256i *)(q + (size_t)b * SDFED_Q8_0_BLOCK), _mm256_permutevar8x32_epi32(bytes, order));
    }
}

__attribute__((target("avx512f"))) static void quantise_avx512(const float *x, int cols, unsigned char *q, float *d) {
    const __m128i offset = _mm_set1_epi8((char)0x80);
    for (int b = 0; b < cols / SDFED_Q8_0_BLOCK; b++) {
        const float *x_b = x + (size_t)b * SDFED_Q8_0_BLOCK;
        __m512 v0 = _mm512_loadu_ps(x_b), v1 = _mm512_loadu_ps(x_b + 16);
        float inverse;
        d[b] = block_scale(_mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1))), &inverse);
        __m512 id = _mm512_set1_ps(inverse);
        /* to nearest even, then + 128 for vpdpbusd's unsigned operand */
        __m128i q0 = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, id)));
        __m128i q1 = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, id)));
        _mm_storeu_si128((__m128i *)(q + (size_t)b * SDFED_Q8_0_BLOCK), _mm_xor_si128(q0, offset));
        _mm_storeu_si128((__m128i *)(q + (size_t)b * SDFED_Q8_0_BLOCK + 16), _mm_xor_si128(q1, offset));
    }
}

__attribute__((target("avx2"))) static void tile_avx2(int blocks, const unsigned char *xq, const float *xd,
                                                      const unsigned char *panel, float *out, size_t ldo,
                                                      const float *bias) {
    // one panel: each token's 16 outputs in two 8-lane registers
    int cols = blocks * SDFED_Q8_0_BLOCK;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[AVX2_MR][2];
    for (int i = 0; i < AVX2_MR; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int b = 0; b < blocks; b++) {
        const unsigned char *p_b = panel + (size_t)b * PANEL_BLOCK_BYTES;
        __m256i sum[AVX2_MR][2];
        for (int i = 0; i < AVX2_MR; i++) sum[i][0] = sum[i][1] = _mm256_setzero_si256();
        for (int g = 0; g < GROUPS; g++) {
            __m256i w0 = _mm256_loadu_si256((const __m256i *)(p_b + g * NR * 4));
            __m256i w1 = _mm256_loadu_si256((const __m256i *)(p_b + g * NR * 4 + 32));
            __m256i a0 = _mm256_abs_epi8(w0), a1 = _mm256_abs_epi8(w1);
#pragma GCC unroll 4
            for (int i = 0; i < AVX2_MR; i++) {
                __m256i xb = _mm256_set1_epi32(load_group(xq + (size_t)i * cols + b * SDFED_Q8_0_BLOCK + g * 4));
                /* |w| (unsigned) times x with w's sign: pairs of at most 2 * 128 * 127, no saturation */
                __m256i p0 = _mm256_maddubs_epi16(a0, _mm256_sign_epi8(xb, w0));
                __m256i p1 = _mm256_maddubs_epi16(a1, _mm256_sign_epi8(xb, w1));
                sum[i][0] = _mm256_add_epi32(sum[i][0], _mm256_madd_epi16(p0, ones));
                sum[i][1] = _mm256_add_epi32(sum[i][1], _mm256_madd_epi16(p1, ones));
            }
        }
        __m256 d0 = _mm256_loadu_ps((const float *)(p_b + QS_BYTES));
        __m256 d1 = _mm256_loadu_ps((const float *)(p_b + QS_BYTES + 32));
        for (int i = 0; i < AVX2_MR; i++) {
            __m256 d_x = _mm256_set1_ps(xd[(size_t)i * blocks + b]);
            acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_mul_ps(_mm256_cvtepi32_ps(sum[i][0]), _mm256_mul_ps(d_x, d0)));
            acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_mul_ps(_mm256_cvtepi32_ps(sum[i][1]), _mm256_mul_ps(d_x, d1)));
        }
    }
    for (int i = 0; i < AVX2_MR; i++)
        for (int h = 0; h < 2; h++) {
            if (bias) acc[i][h] = _mm256_add_ps(acc[i][h], _mm256_loadu_ps(bias + h * 8));
            _mm256_storeu_ps(out + i * ldo + h * 8, acc[i][h]);
        }
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void tile_vnni(int blocks, const unsigned char *xq,
                                                                             const float *xd,
                                                                             const unsigned char *panel, float *out,
                                                                             size_t ldo, const float *bias) {
    // two panels: each token's 32 outputs in two 16-lane registers; every loop over them unrolled, or GCC keeps
    // the sums and accumulators on the stack and copies them on every group (the tile then ran 1.3x slower)
    int cols = blocks * SDFED_Q8_0_BLOCK;
    const unsigned char *panel1 = panel + (size_t)blocks * PANEL_BLOCK_BYTES;
    __m512 acc[VNNI_MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < VNNI_MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (int b = 0; b < blocks; b++) {
        const unsigned char *p0 = panel + (size_t)b * PANEL_BLOCK_BYTES, *p1 = panel1 + (size_t)b * PANEL_BLOCK_BYTES;
        /* sum (x + 128) w starts at -128 sum(w): the exact sum x w */
        __m512i c0 = _mm512_loadu_si512(p0 + QS_BYTES + NR * 4), c1 = _mm512_loadu_si512(p1 + QS_BYTES + NR * 4);
        __m512i sum[VNNI_MR][2];
#pragma GCC unroll 6
        for (int i = 0; i < VNNI_MR; i++) {
            sum[i][0] = c0;
            sum[i][1] = c1;
        }
#pragma GCC unroll 8
        for (int g = 0; g < GROUPS; g++) {
            __m512i w0 = _mm512_loadu_si512(p0 + g * NR * 4), w1 = _mm512_loadu_si512(p1 + g * NR * 4);
#pragma GCC unroll 6
            for (int i = 0; i < VNNI_MR; i++) {
                __m512i xb = _mm512_set1_epi32(load_group(xq + (size_t)i * cols + b * SDFED_Q8_0_BLOCK + g * 4));
                sum[i][0] = _mm512_dpbusd_epi32(sum[i][0], xb, w0);
                sum[i][1] = _mm512_dpbusd_epi32(sum[i][1], xb, w1);
            }
        }
        __m512 d0 = _mm512_loadu_ps(p0 + QS_BYTES), d1 = _mm512_loadu_ps(p1 + QS_BYTES);
#pragma GCC unroll 6
        for (int i = 0; i < VNNI_MR; i++) {
            __m512 d_x = _mm512_set1_ps(xd[(size_t)i * blocks + b]);
            acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_mul_ps(_mm512_cvtepi32_ps(sum[i][0]), _mm512_mul_ps(d_x, d0)));
            acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_mul_ps(_mm512_cvtepi32_ps(sum[i][1]), _mm512_mul_ps(d_x, d1)));
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < VNNI_MR; i++)
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            if (bias) acc[i][h] = _mm512_add_ps(acc[i][h], _mm512_loadu_ps(bias + h * NR));
            _mm512_storeu_ps(out + i * ldo + h * NR, acc[i][h]);
        }
}
#endif

static const tile_kernel kernels[SDFED_ISA_COUNT] = {
    [SDFED_ISA_PORTABLE] = {.mr = PORTABLE_MR, .panels = 1, .run = tile_portable, .quantise = quantise_portable},
#if defined(SDFED_X86_TILES)
    [SDFED_ISA_AVX2] = {.mr = AVX2_MR, .panels = 1, .run = tile_avx2, .quantise = quantise_avx2},
    [SDFED_ISA_AVX512] = {.mr = VNNI_MR, .panels = MAX_PANELS, .run = tile_vnni, .quantise = quantise_avx512},
#endif
};

/* Packs rows [r0, r0 + count) of w (count <= NR) into panel, zero-filling
 * the missing rows; block by block, so that the writes stay in one packed
 * block while the rows are read. */
static void pack_panel(const sdfed_weight *w, int r0, int count, unsigned char *panel) {
    int blocks = w->cols / SDFED_Q8_0_BLOCK;
    const sdfed_block_q8_0 *w_r0 = (const sdfed_block_q8_0 *)w->data + (size_t)r0 * blocks;
    for (int b = 0; b < blocks; b++) {
        unsigned char *p_b = panel + (size_t)b * PANEL_BLOCK_BYTES;
        float d[NR] = {0};
        int32_t correction[NR] = {0};
        if (count < NR) memset(p_b, 0, QS_BYTES);
        for (int j = 0; j < count; j++) {
            const sdfed_block_q8_0 *w_jb = w_r0 + (size_t)j * blocks + b;
            __builtin_prefetch(w_jb + 8); /* the row's block 8 ahead, read from memory meanwhile */
            int32_t sum = 0;
            for (int g = 0; g < GROUPS; g++) memcpy(p_b + (g * NR + j) * 4, w_jb->qs + g * 4, 4);
            for (int c = 0; c < SDFED_Q8_0_BLOCK; c++) sum += w_jb->qs[c];
            d[j] = sdfed_f16_to_f32(w_jb->d);
            correction[j] = -128 * sum;
        }
        memcpy(p_b + QS_BYTES, d, sizeof d);
        memcpy(p_b + QS_BYTES + NR * 4, correction, sizeof correction);
    }
}

/* x's rows quantised, as the tiles read them: `capacity` rows (a whole
 * number of tiles) of block scales, then as many rows of quants (+ 128
 * where the tile wants them unsigned) */
typedef struct quantised_rows {
    float *d;
    unsigned char *q;
} quantised_rows;

static quantised_rows rows_in(void *buffer, int capacity, int cols) {
    float *d = buffer;
    return (quantised_rows){.d = d, .q = (unsigned char *)(d + (size_t)capacity * (cols / SDFED_Q8_0_BLOCK))};
}

static size_t rows_bytes(int capacity, int cols) {
    return (size_t)capacity * (cols / SDFED_Q8_0_BLOCK) * sizeof(float) + (size_t)capacity * cols;
}

/* n rows rounded up to whole tiles of isa's */
static int padded_rows(const tile_kernel *tk, int n) { return (n + tk->mr - 1) / tk->mr * tk->mr; }

/* Rows [begin, end) of x (cols each) into rows; where end is n, the rows
 * from n to a whole tile too, as zero rows (in the tile's representation). */
static void quantise_rows(const tile_kernel *tk, quantised_rows rows, const float *x, int n, int cols, int begin,
                          int end) {
    int blocks = cols / SDFED_Q8_0_BLOCK;
    for (int i = begin; i < end; i++)
        tk->quantise(x + (size_t)i * cols, cols, rows.q + (size_t)i * cols, rows.d + (size_t)i * blocks);
    if (end < n) return;
    int padded = padded_rows(tk, n);
    unsigned char zero[SDFED_Q8_0_BLOCK];
    float zero_row[SDFED_Q8_0_BLOCK] = {0}, d;
    tk->quantise(zero_row, SDFED_Q8_0_BLOCK, zero, &d);
    memset(rows.q + (size_t)n * cols, zero[0], (size_t)(padded - n) * cols);
    memset(rows.d + (size_t)n * blocks, 0, sizeof *rows.d * (size_t)(padded - n) * blocks);
}

/* One tile's outputs: rows [i0, i0 + mr) of the quantised rows (count of
 * them real) times the panels at tile_panels, outputs [r0 + skip, r0 + nc)
 * of y's rows. */
static void run_tile(const tile_kernel *tk, float *y, const float *xd, const unsigned char *xq, int count,
                     const sdfed_weight *w, const float *bias, int i0, int r0, int nc, int skip,
                     const unsigned char *tile_panels) {
    int cols = w->cols, rows = w->rows, blocks = cols / SDFED_Q8_0_BLOCK, mr = tk->mr, width = tk->panels * NR;
    int nr = count - i0 < mr ? count - i0 : mr;
    const unsigned char *xq_tile = xq + (size_t)i0 * cols;
    const float *xd_tile = xd + (size_t)i0 * blocks;
    if (nr == mr && nc == width && !skip) { /* all of the tile's outputs: it writes them itself */
        tk->run(blocks, xq_tile, xd_tile, tile_panels, y + (size_t)i0 * rows + r0, (size_t)rows,
                bias ? bias + r0 : NULL);
        return;
    }
    float out[MAX_TILE_ROWS * MAX_PANELS * NR];
    tk->run(blocks, xq_tile, xd_tile, tile_panels, out, (size_t)width, NULL);
    for (int i = 0; i < nr; i++)
        sdfed_store_outputs(y + (size_t)(i0 + i) * rows + r0 + skip, out + (size_t)i * width + skip,
                            bias ? bias + r0 + skip : NULL, nc - skip);
}

/* Outputs [first, end) of `count` tokens (y's rows, `rows` floats apart)
 * from their quantised rows (padded to whole tiles), on the packed weight
 * or on panels packed here into `panels`. A packed weight is taken a group
 * of tiles' panels at a time, up to a quarter of L2, each token tile over
 * the group's panels in turn: its rows of x stay in L1 while they pass, and
 * y is written a run of the group's outputs a row. */
static void tiles_over(const tile_kernel *tk, float *y, const float *xd, const unsigned char *xq, int count,
                       const sdfed_weight *w, const float *bias, int first, int end, unsigned char *panels) {
    int blocks = w->cols / SDFED_Q8_0_BLOCK, mr = tk->mr, width = tk->panels * NR;
    size_t panel_bytes = (size_t)blocks * PANEL_BLOCK_BYTES;
    const unsigned char *packed = w->packed && w->packed_int8 ? w->packed : NULL;
    int group = packed ? sdfed_clamp_int((int)(sdfed_cpu_l2_bytes() / 4 / (tk->panels * panel_bytes)), 1, 64) : 1;
    /* packed tiles start at a whole panel, which may begin before `first` */
    for (int g0 = packed ? first - first % NR : first; g0 < end; g0 += group * width) {
        int g_end = g0 + group * width < end ? g0 + group * width : end;
        for (int p = 0; !packed && p < tk->panels; p++)
            pack_panel(w, g0 + p * NR, sdfed_clamp_int(g_end - g0 - p * NR, 0, NR), panels + p * panel_bytes);
        for (int i0 = 0; i0 < count; i0 += mr)
            for (int r0 = g0; r0 < g_end; r0 += width) {
                int nc = g_end - r0 < width ? g_end - r0 : width, skip = first - r0 > 0 ? first - r0 : 0;
                run_tile(tk, y, xd, xq, count, w, bias, i0, r0, nc, skip,
                         packed ? packed + (size_t)(r0 / NR) * panel_bytes : panels);
            }
    }
}

size_t sdfed_int8_packed_bytes(const sdfed_weight *w) {
    size_t panels = (size_t)(w->rows + NR - 1) / NR + MAX_PANELS - 1;
    return panels * (size_t)(w->cols / SDFED_Q8_0_BLOCK) * PANEL_BLOCK_BYTES;
}

void sdfed_int8_pack(const sdfed_weight *w, unsigned char *packed) {
    assert(w->type == SDFED_TYPE_Q8_0);
    size_t panel_bytes = (size_t)(w->cols / SDFED_Q8_0_BLOCK) * PANEL_BLOCK_BYTES;
    size_t panels = sdfed_int8_packed_bytes(w) / panel_bytes;
    for (size_t p = 0; p < panels; p++) {
        int r0 = (int)p * NR, count = sdfed_clamp_int(w->rows - r0, 0, NR);
        pack_panel(w, r0, count, packed + p * panel_bytes);
    }
}

/* the scratch: MAX_PANELS panels, then a chunk's quantised rows */
static unsigned char *scratch_panels(float *scratch) { return (unsigned char *)scratch; }
static void *scratch_rows(float *scratch, int cols) {
    return scratch_panels(scratch) + MAX_PANELS * (size_t)(cols / SDFED_Q8_0_BLOCK) * PANEL_BLOCK_BYTES;
}

void sdfed_linear_int8(int isa, float *y, const float *x, const sdfed_weight *w, const float *bias, int n, int first,
                       int end, float *scratch) {
    // x is (n, cols), W is (rows, cols) in Q8_0 blocks, y is (n, rows)
    assert(w->type == SDFED_TYPE_Q8_0);
    const tile_kernel *tk = &kernels[isa];
    int cols = w->cols;
    quantised_rows chunk = rows_in(scratch_rows(scratch, cols), CHUNK, cols);
    for (int t0 = 0; t0 < n; t0 += CHUNK) {
        int count = n - t0 < CHUNK ? n - t0 : CHUNK;
        quantise_rows(tk, chunk, x + (size_t)t0 * cols, count, cols, 0, count);
        tiles_over(tk, y + (size_t)t0 * w->rows, chunk.d, chunk.q, count, w, bias, first, end, scratch_panels(scratch));
    }
}

size_t sdfed_int8_rows_bytes(int isa, int n, int cols) { return rows_bytes(padded_rows(&kernels[isa], n), cols); }

void sdfed_int8_quantise_rows(int isa, void *buffer, const float *x, int n, int cols, int begin, int end) {
    const tile_kernel *tk = &kernels[isa];
    quantise_rows(tk, rows_in(buffer, padded_rows(tk, n), cols), x, n, cols, begin, end);
}

void sdfed_linear_int8_rows(int isa, float *y, const void *buffer, const sdfed_weight *w, const float *bias, int n,
                            int first, int end, float *scratch) {
    assert(w->type == SDFED_TYPE_Q8_0);
    const tile_kernel *tk = &kernels[isa];
    int cols = w->cols, blocks = cols / SDFED_Q8_0_BLOCK;
    quantised_rows all = rows_in((void *)buffer, padded_rows(tk, n), cols);
    /* a chunk of tokens at a time, each over every panel, as sdfed_linear_int8 takes them */
    for (int t0 = 0; t0 < n; t0 += CHUNK) {
        int count = n - t0 < CHUNK ? n - t0 : CHUNK;
        tiles_over(tk, y + (size_t)t0 * w->rows, all.d + (size_t)t0 * blocks, all.q + (size_t)t0 * cols, count, w, bias,
                   first, end, scratch_panels(scratch));
    }
}
#endif
