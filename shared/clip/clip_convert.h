/* Converting CLIP checkpoints (safetensors) into this project's GGUF files.
 *
 * Accepts OpenAI / OpenCLIP state-dict names (`visual.*`, `transformer.*`)
 * and Hugging Face `transformers` CLIPModel names (`vision_model.*`,
 * `text_model.*`, q/k/v split, projections transposed); both produce the
 * same tensors. The architecture is read off the tensor shapes as OpenAI's
 * build_model does (heads = width / 64); the BPE vocabulary comes from the
 * CLIP merges text. Any tensor missing, mis-shaped or left over is an error
 * naming it. */
#ifndef SDFED_CLIP_CONVERT_H
#define SDFED_CLIP_CONVERT_H

#include <stddef.h>

#include "base/io.h"
#include "base/status.h"
#include "format/safetensors.h"

typedef struct sdfed_convert_options {
    int weight_type;        /* SDFED_TYPE_F32, F16 or Q8_0, for the large matrices */
    int activation;         /* SDFED_ACT_*: checkpoints do not record it; OpenAI's use quick_gelu */
    const char *vocab_text; /* uncompressed bpe_simple_vocab_16e6.txt */
    size_t vocab_len;
} sdfed_convert_options;

/* Summary of what was converted, for the CLI to print. */
typedef struct sdfed_convert_report {
    const char *naming; /* "openai" or "hf" */
    int n_tensors;
    int n_fallback; /* matrices whose rows do not fit Q8_0 blocks, stored F16 */
} sdfed_convert_report;

int sdfed_clip_convert(const sdfed_safetensors *st, const sdfed_convert_options *opt, sdfed_sink *sink,
                       sdfed_convert_report *report, sdfed_error *err);

#endif
