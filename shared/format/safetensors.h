/* safetensors files (the format PyTorch checkpoints are shared in): an
 * 8-byte little-endian header length, a JSON header mapping tensor names to
 * {dtype, shape, data_offsets}, then the raw tensor bytes. Read from a
 * caller-owned buffer without copying tensor data. */
#ifndef SDFED_SAFETENSORS_H
#define SDFED_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "base/json.h"
#include "base/status.h"

enum { SDFED_ST_F32, SDFED_ST_F16, SDFED_ST_BF16, SDFED_ST_I32, SDFED_ST_I64, SDFED_ST_OTHER };

#define SDFED_ST_MAX_DIMS 8

typedef struct sdfed_st_tensor {
    char *name;
    int dtype; /* SDFED_ST_* */
    char dtype_name[16];
    int n_dims;
    int64_t shape[SDFED_ST_MAX_DIMS];
    int64_t n_elements;
    const void *data;
    size_t nbytes;
} sdfed_st_tensor;

typedef struct sdfed_safetensors {
    sdfed_json header;
    int metadata; /* node of "__metadata__", or -1 */
    sdfed_st_tensor *tensors;
    int n_tensors;
} sdfed_safetensors;

int sdfed_safetensors_open(sdfed_safetensors *st, const void *data, size_t size, sdfed_error *err);
void sdfed_safetensors_close(sdfed_safetensors *st);

const sdfed_st_tensor *sdfed_safetensors_find(const sdfed_safetensors *st, const char *name);
/* Value of a __metadata__ string entry in a new heap buffer, or NULL. */
char *sdfed_safetensors_metadata(const sdfed_safetensors *st, const char *key);

/* Converts a floating tensor (F32, F16, BF16) to f32 values. */
int sdfed_st_to_f32(const sdfed_st_tensor *t, float *out, sdfed_error *err);
/* Converts an integer tensor (I32, I64) to int32 values. */
int sdfed_st_to_i32(const sdfed_st_tensor *t, int32_t *out, sdfed_error *err);

#endif
