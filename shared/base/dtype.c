/* Element types: f16/bf16 conversion and Q8_0 quantisation of rows. */
#include "base/dtype.h"

#include <math.h>
#include <string.h>

#include "base/names.h"

/* GGML's type numbers: not an index */
static const sdfed_name type_names[] = {
    {.name = "f32", .value = SDFED_TYPE_F32},
    {.name = "f16", .value = SDFED_TYPE_F16},
    {.name = "q8_0", .value = SDFED_TYPE_Q8_0},
};
enum { N_TYPE_NAMES = sizeof type_names / sizeof type_names[0] };

const char *sdfed_type_name(int type) { return sdfed_name_of(type_names, N_TYPE_NAMES, type); }

int sdfed_type_from_name(const char *name) { return sdfed_name_value(type_names, N_TYPE_NAMES, name); }

int sdfed_type_block_size(int type) {
    switch (type) {
    case SDFED_TYPE_F32:
    case SDFED_TYPE_F16: return 1;
    case SDFED_TYPE_Q8_0: return SDFED_Q8_0_BLOCK;
    }
    return 0;
}

size_t sdfed_type_row_bytes(int type, uint64_t n) {
    switch (type) {
    case SDFED_TYPE_F32: return (size_t)n * 4;
    case SDFED_TYPE_F16: return (size_t)n * 2;
    case SDFED_TYPE_Q8_0: return (size_t)(n / SDFED_Q8_0_BLOCK) * sizeof(sdfed_block_q8_0);
    }
    return 0;
}

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float sdfed_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (man << 13)); /* inf, nan */
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24 is exact in f32 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t sdfed_f32_to_f16(float f) {
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u) /* inf or nan (keep nan quiet and non-zero) */
        return (uint16_t)(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 | ((abs >> 13) & 0x3ff) : 0));
    if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (abs < 0x38800000u) {
        /* result is subnormal or zero: scale so that the f16 subnormal grid
         * (2^-24) becomes the integers, and let the FPU round to even */
        float v = f32_from_bits(abs) * 16777216.0f;
        return (uint16_t)(sign | (uint16_t)nearbyintf(v));
    }
    /* normal: drop 13 mantissa bits with round-to-nearest-even; a carry out
     * of the mantissa correctly bumps the exponent */
    uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
    return (uint16_t)(sign | ((rounded - 0x38000000u) >> 13));
}

float sdfed_bf16_to_f32(uint16_t b) { return f32_from_bits((uint32_t)b << 16); }

static void quantize_row_q8_0(sdfed_block_q8_0 *dst, const float *src, int n) {
    for (int b = 0; b < n / SDFED_Q8_0_BLOCK; b++) {
        const float *x = src + b * SDFED_Q8_0_BLOCK;
        float amax = 0.0f;
        for (int i = 0; i < SDFED_Q8_0_BLOCK; i++) amax = fmaxf(amax, fabsf(x[i]));
        float d = amax / 127.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        dst[b].d = sdfed_f32_to_f16(d);
        for (int i = 0; i < SDFED_Q8_0_BLOCK; i++) dst[b].qs[i] = (int8_t)roundf(x[i] * id);
    }
}

void sdfed_row_from_f32(int type, void *dst, const float *src, int n) {
    switch (type) {
    case SDFED_TYPE_F32: memcpy(dst, src, (size_t)n * 4); break;
    case SDFED_TYPE_F16: {
        uint16_t *h = dst;
        for (int i = 0; i < n; i++) h[i] = sdfed_f32_to_f16(src[i]);
        break;
    }
    case SDFED_TYPE_Q8_0: quantize_row_q8_0(dst, src, n); break;
    }
}

void sdfed_row_to_f32(int type, float *dst, const void *src, int n) {
    switch (type) {
    case SDFED_TYPE_F32: memcpy(dst, src, (size_t)n * 4); break;
    case SDFED_TYPE_F16: {
        const uint16_t *h = src;
        for (int i = 0; i < n; i++) dst[i] = sdfed_f16_to_f32(h[i]);
        break;
    }
    case SDFED_TYPE_Q8_0: {
        const sdfed_block_q8_0 *blk = src;
        for (int b = 0; b < n / SDFED_Q8_0_BLOCK; b++) {
            float d = sdfed_f16_to_f32(blk[b].d);
            for (int i = 0; i < SDFED_Q8_0_BLOCK; i++) dst[b * SDFED_Q8_0_BLOCK + i] = d * blk[b].qs[i];
        }
        break;
    }
    }
}
