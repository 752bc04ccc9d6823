/* A CLIP model loaded from a GGUF file: the configuration and typed views
 * of every weight, pointing into the caller's file buffer (no copies; Q8_0
 * and F16 matrices stay quantised and are consumed in place by the kernels).
 *
 * Tensor names in the file (W = width, E = embed dim, V = vocabulary,
 * L = context length, P = patch size, G = patches per side; shapes listed
 * outermost first):
 *   logit_scale                          [1]
 *   text.token_embd.weight               [V, W]
 *   text.pos_embd                        [L, W]
 *   {text,vision}.blk.N.ln1.{weight,bias}        [W]
 *   {text,vision}.blk.N.attn_qkv.{weight,bias}   [3W, W], [3W]  (q, k, v rows)
 *   {text,vision}.blk.N.attn_out.{weight,bias}   [W, W], [W]
 *   {text,vision}.blk.N.ln2.{weight,bias}        [W]
 *   {text,vision}.blk.N.mlp_fc.{weight,bias}     [4W, W], [4W]
 *   {text,vision}.blk.N.mlp_proj.{weight,bias}   [W, 4W], [W]
 *   text.ln_final.{weight,bias}          [W]
 *   text.proj.weight                     [E, W]   (feature = proj @ x)
 *   vision.patch_embd.weight             [W, 3*P*P] (conv kernel, c-major)
 *   vision.class_embd                    [W]
 *   vision.pos_embd                      [G*G + 1, W]
 *   vision.ln_pre.{weight,bias}, vision.ln_post.{weight,bias}  [W]
 *   vision.proj.weight                   [E, W]
 * Matrices may be F32, F16 or Q8_0; vectors and embeddings added to
 * activations (biases, norms, positional and class embeddings) are F32. */
#ifndef SDFED_CLIP_MODEL_H
#define SDFED_CLIP_MODEL_H

#include "base/status.h"
#include "format/gguf.h"
#include "kernels/kernels.h"

enum { SDFED_ACT_QUICK_GELU, SDFED_ACT_GELU, SDFED_ACT_COUNT };

typedef struct sdfed_clip_config {
    int embed_dim;
    int vocab_size, context_length;
    int text_width, text_layers, text_heads;
    int vision_width, vision_layers, vision_heads;
    int patch_size, image_size;
    int activation; /* SDFED_ACT_* */
    float layer_norm_eps;
    float image_mean[3], image_std[3];
} sdfed_clip_config;

typedef struct sdfed_clip_block {
    const float *ln1_w, *ln1_b, *ln2_w, *ln2_b;
    sdfed_weight attn_qkv, attn_out, mlp_fc, mlp_proj;
    const float *attn_qkv_b, *attn_out_b, *mlp_fc_b, *mlp_proj_b;
} sdfed_clip_block;

typedef struct sdfed_clip_model {
    sdfed_clip_config cfg;
    sdfed_gguf file;
    float logit_scale;
    /* text tower */
    sdfed_weight token_embd;
    const float *text_pos;
    sdfed_clip_block *text_blocks;
    const float *ln_final_w, *ln_final_b;
    sdfed_weight text_proj;
    /* image tower */
    sdfed_weight patch_embd;
    const float *class_embd, *vision_pos;
    const float *ln_pre_w, *ln_pre_b, *ln_post_w, *ln_post_b;
    sdfed_clip_block *vision_blocks;
    sdfed_weight vision_proj;
    int weight_type; /* the type of the large matrices (for display) */
    /* The image tower's linears run the kernels' linear_int8: Q8_0 matrices
     * meet activations quantised to Q8_0 in integer products (image
     * features are never differentiated). 0 keeps them on linear (f32
     * activations, the weights dequantised), as the text tower always is.
     * sdfed_clip_load sets 1. */
    int int8_images;
} sdfed_clip_model;

/* 1 when image features come from integer products: int8_images is on and
 * a matrix of the image tower is Q8_0 (the features then differ from the
 * f32 activations' ones in their last digits; a feature cache keeps the two
 * apart). */
int sdfed_clip_int8_image_features(const sdfed_clip_model *m);

/* Loads a model from a GGUF file held in memory (the buffer must outlive the
 * model and be 4-byte aligned, which mmap and malloc give). */
int sdfed_clip_load(sdfed_clip_model *m, const void *data, size_t size, sdfed_error *err);
/* The towers of sdfed_clip_pack, or-ed together. */
enum { SDFED_CLIP_TEXT = 1, SDFED_CLIP_IMAGE = 2 };

/* Packs every matrix the forward linears of `towers` multiply by once, in
 * the layout k's backend reads (kernels.h's pack; a backend without one
 * packs nothing), for the path each takes now: the text tower's for linear,
 * the image tower's for linear_int8 when int8_images is on, else for
 * linear. A host calls it after choosing int8_images (a matrix packed for
 * the other path is packed per call again, with the same bits), for the
 * towers it runs more than once; a second call packs afresh, the other
 * tower left unpacked. The features' bits are the same packed or not.
 * Returns the bytes packed; a matrix with no memory for its packing stays
 * unpacked. Memory, with Q8_0 matrices: the text tower's 3.76x their size
 * (f32 panels), the image tower's 1.18x (integer panels) or 3.76x
 * (int8_images off). */
size_t sdfed_clip_pack(sdfed_clip_model *m, const sdfed_kernels *k, int towers);
/* Frees the model's packed matrices and its blocks. */
void sdfed_clip_free(sdfed_clip_model *m);

const char *sdfed_activation_name(int activation);
int sdfed_activation_from_name(const char *name); /* -1 if unknown */

#endif
