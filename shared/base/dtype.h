/* Tensor element types as GGUF stores them (the numbers are ggml's type ids),
 * IEEE half-precision conversion and the Q8_0 block format.
 *
 * Q8_0 is ggml's layout: a row is cut into blocks of 32 values, each stored
 * as one f16 scale d and 32 int8 quants q, value = d * q. */
#ifndef SDFED_DTYPE_H
#define SDFED_DTYPE_H

#include <stddef.h>
#include <stdint.h>

enum {
    SDFED_TYPE_F32 = 0,
    SDFED_TYPE_F16 = 1,
    SDFED_TYPE_Q8_0 = 8,
};

#define SDFED_Q8_0_BLOCK 32

typedef struct {
    uint16_t d; /* f16 scale */
    int8_t qs[SDFED_Q8_0_BLOCK];
} sdfed_block_q8_0;

/* Name ("f32", "f16", "q8_0") of a type, or NULL if the type is unknown. */
const char *sdfed_type_name(int type);
/* Parses a type name; returns the type id or -1. */
int sdfed_type_from_name(const char *name);
/* Bytes taken by n elements of type (n must be a multiple of the block size
 * for block types); 0 for an unknown type. */
size_t sdfed_type_row_bytes(int type, uint64_t n);
/* Elements per block: 1 for F32/F16, 32 for Q8_0, 0 for unknown types. */
int sdfed_type_block_size(int type);

float sdfed_f16_to_f32(uint16_t h);
uint16_t sdfed_f32_to_f16(float f); /* round to nearest even, saturating to inf */
float sdfed_bf16_to_f32(uint16_t b);

/* Converts one row of n values between f32 and the storage type. For Q8_0 n
 * must be a multiple of 32. */
void sdfed_row_from_f32(int type, void *dst, const float *src, int n);
void sdfed_row_to_f32(int type, float *dst, const void *src, int n);

#endif
