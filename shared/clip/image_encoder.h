/* CLIP's image tower (ViT): normalised pixels to image features.
 * patches -> patch embedding (a strided convolution, as a matrix product)
 * -> [class token; patches] + positions -> ln_pre -> blocks -> ln_post of
 * the class token -> projection. */
#ifndef SDFED_IMAGE_ENCODER_H
#define SDFED_IMAGE_ENCODER_H

#include "base/arena.h"
#include "clip/clip_model.h"
#include "clip/image_preprocess.h"

/* pixels (n, 3, S, S) with S = image_size, already normalised (see
 * image_preprocess.h); features (n, embed_dim), unnormalised. */
int sdfed_image_encode(const sdfed_clip_model *m, const sdfed_kernels *k, const float *pixels, int n, float *features,
                       sdfed_arena *arena, sdfed_error *err);

/* The features every method uses: n 8-bit images preprocessed as CLIP does
 * (with the model's mean and std), encoded, and scaled to unit length;
 * features (n, embed_dim). */
int sdfed_image_features(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_image *images, int n,
                         float *features, sdfed_arena *arena, sdfed_error *err);

#endif
