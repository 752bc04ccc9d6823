/* CLIP image preprocessing: what OpenAI CLIP's `_transform(n_px)` computes,
 *
 *   Resize(n_px, BICUBIC) -> CenterCrop(n_px) -> RGB -> ToTensor -> Normalize(mean, std)
 *
 * on 8-bit pixels, giving a (3, n_px, n_px) float tensor, channel-major.
 *
 * Resize is PIL's `Image.resize((w, h), Image.BICUBIC)` (what torchvision does
 * with a PIL image): the short side becomes n_px, the long side
 * int(n_px * long / short). PIL resamples separably (horizontal pass, then
 * vertical pass) with the a = -0.5 cubic kernel, widened by the scale factor
 * when shrinking (antialiasing), coefficients normalised to sum 1 and turned
 * into 22-bit fixed point, each pass rounded and clipped to 0..255. A pass is
 * skipped when its axis keeps its size. This file implements exactly that, so
 *
 *   EXACTNESS: the uint8 image from sdfed_image_resize_crop equals PIL 9.4's
 *   resize + torchvision's centre crop bit for bit (max difference 0) on every
 *   case of tests/oracle/test_preprocess.c (up- and downscaling, odd sizes, 1x1,
 *   grey/RGB/RGBA, row padding), and the floats of sdfed_image_preprocess equal
 *   torch's ToTensor + Normalize bit for bit (tested to 1e-6, measured 0);
 *   measured so natively (gcc, clang) and on wasm32 (WASI, Emscripten). The
 *   coefficients are computed in double without fused multiply-adds, as PIL's
 *   are; a build that contracted them could move a value by one.
 *
 * Only the n_px x n_px window that CenterCrop keeps is computed (every output
 * pixel depends on its own coefficients only, so this changes no value); a
 * 1 x 16384 image resized to 224 x 3670016 costs a 224 x 224 crop.
 *
 * CenterCrop offsets follow torchvision: top = int(round((h - n_px) / 2.0))
 * with Python's round-half-to-even, left likewise.
 *
 * Channels: 1 (grey, replicated to RGB: PIL's L-mode resize then convert
 * gives the same values), 3 (RGB) or 4 (RGBA, alpha ignored: the colour
 * channels are resized as they are, then alpha is dropped). The result for a
 * 4-channel image therefore equals CLIP's preprocess of `im.convert("RGB")`.
 * Transparency is not this file's job: the project's images reach it
 * already composited onto a background (clip/image_composite.h: the
 * native decoder's rows, the browser's canvas pixels in wasm-client/api.c),
 * opaque. Note that CLIP's preprocess applied directly to an RGBA PIL image
 * gives different values where alpha < 255: PIL resizes RGBA in
 * premultiplied form (RGBA -> RGBa -> resize -> RGBA) before
 * `convert("RGB")` drops alpha. The two agree for opaque images (alpha 255
 * everywhere, e.g. a canvas of a JPEG, or any image once composited).
 *
 * mean and std are parameters (the model file carries them; CLIP's are
 * SDFED_CLIP_MEAN / SDFED_CLIP_STD below). The arithmetic is float32 like
 * torch: out = ((float)v / 255 - mean[c]) / std[c].
 *
 * Temporary buffers are allocated and freed inside each call. */
#ifndef SDFED_IMAGE_PREPROCESS_H
#define SDFED_IMAGE_PREPROCESS_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Largest accepted width, height and n_px. */
#define SDFED_IMAGE_MAX_SIDE 16384
/* The most pixels an image is decoded to by default (native/image_decode.h;
 * the page's worker, web/worker.js): larger ones are reduced. */
#define SDFED_IMAGE_MAX_PIXELS ((size_t)1 << 24)

/* OpenAI CLIP's normalisation constants. */
#define SDFED_CLIP_MEAN                                                                                                \
    { 0.48145466f, 0.4578275f, 0.40821073f }
#define SDFED_CLIP_STD                                                                                                 \
    { 0.26862954f, 0.26130258f, 0.27577711f }

/* An 8-bit image the caller owns: row y starts at pixels + y * stride (bytes),
 * pixel x of that row at + x * channels. stride >= width * channels. */
typedef struct sdfed_image {
    const uint8_t *pixels;
    int width, height, channels; /* channels: 1 grey, 3 RGB, 4 RGBA */
    size_t stride;
} sdfed_image;

/* The geometry CLIP uses for an image of width x height and target size:
 * the resized image is resized_w x resized_h, the crop starts at (left, top)
 * of it. Any output pointer may be NULL. */
int sdfed_image_geometry(int width, int height, int size, int *resized_w, int *resized_h, int *left, int *top,
                         sdfed_error *err);

/* Resize + centre crop: out_rgb is (size, size, 3) uint8, row-major RGB. */
int sdfed_image_resize_crop(const sdfed_image *img, int size, uint8_t *out_rgb, sdfed_error *err);

/* ToTensor + Normalize of an RGB (size, size, 3) uint8 image:
 * out is (3, size, size) float. std must be > 0, mean and std finite. */
int sdfed_image_normalize(const uint8_t *rgb, int size, const float mean[3], const float std[3], float *out,
                          sdfed_error *err);

/* The whole transform: out has 3 * size * size floats, (3, size, size). */
int sdfed_image_preprocess(const sdfed_image *img, int size, const float mean[3], const float std[3], float *out,
                           sdfed_error *err);

/* How much a decoder reduces a width x height image (both >= 1) for at
 * most max_pixels (>= 1) pixels: the smallest power of two f with
 * ceil(w/f) * ceil(h/f) <= max_pixels and both ceil(w/f) and ceil(h/f) at
 * most SDFED_IMAGE_MAX_SIDE; the image is then decoded at ceil(w/f) x
 * ceil(h/f) (native/image_decode.h; the page's worker likewise). */
int sdfed_image_reduction_factor(uint64_t width, uint64_t height, size_t max_pixels);

#endif
