/* CLIP's image tower (ViT): normalised pixels to image features.
 * patches -> patch embedding (a strided convolution, as a matrix product)
 * -> [class token; patches] + positions -> ln_pre -> blocks -> ln_post ->
 * projection, of the class token (CLIP's pooled feature) or of every token
 * (the patch features FedOTP transports prompts onto). */
#ifndef SDFED_IMAGE_ENCODER_H
#define SDFED_IMAGE_ENCODER_H

#include "base/arena.h"
#include "clip/clip_model.h"
#include "clip/image_preprocess.h"

/* Tokens per image: (image_size / patch_size)^2 patches + the class token. */
int sdfed_image_token_count(const sdfed_clip_config *c);

/* pixels (n, 3, S, S) with S = image_size, already normalised (see
 * image_preprocess.h); features (n, embed_dim), unnormalised. */
int sdfed_image_encode(const sdfed_clip_model *m, const sdfed_kernels *k, const float *pixels, int n, float *features,
                       sdfed_arena *arena, sdfed_error *err);

/* Every output token, as FedOTP's vision tower returns them (ln_post and
 * the projection applied to each token, not only the class token):
 * pixels as above; tokens (n, T, embed_dim) with T = sdfed_image_token_count,
 * unnormalised. Row 0 of each image is its class token, the same bits as
 * sdfed_image_encode's feature; rows 1..T-1 are its patches in raster order
 * (row by row of the patch grid). */
int sdfed_image_encode_tokens(const sdfed_clip_model *m, const sdfed_kernels *k, const float *pixels, int n,
                              float *tokens, sdfed_arena *arena, sdfed_error *err);

/* The features every method uses: n 8-bit images preprocessed as CLIP does
 * (with the model's mean and std), encoded, and scaled to unit length;
 * features (n, embed_dim). */
int sdfed_image_features(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_image *images, int n,
                         float *features, sdfed_arena *arena, sdfed_error *err);

/* The patch features FedOTP uses (GLP_OT.py, CustomCLIP.forward:
 * image_features[1:], F.normalize over the feature axis): n 8-bit images
 * preprocessed as above, encoded to tokens, the class token dropped and
 * every patch row scaled to unit length; patches (n, T - 1, embed_dim). */
int sdfed_image_patch_features(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_image *images, int n,
                               float *patches, sdfed_arena *arena, sdfed_error *err);

/* The patch features from tokens (n, T, embed_dim) as sdfed_image_encode_tokens
 * gives them (or a GPU's forward, web/gpu.js): the class token dropped and
 * every patch row scaled to unit length; patches (n, T - 1, embed_dim), norms
 * room for T - 1 floats. */
void sdfed_image_patches_from_tokens(const sdfed_clip_config *c, const float *tokens, int n, float *patches,
                                     float *norms);

#endif
