/* The core's API for JavaScript: one federation client per module instance
 * (the browser runs one in a Web Worker, worker.js). It wraps shared/ and
 * adds nothing of its own to the maths, so the browser trains exactly as
 * the simulator and the headless client do (method/local_training.h).
 *
 * Calls return 0 or a status code (base/status.h) with the reason in
 * wc_error(). Buffers passed in are the caller's (JavaScript allocates them
 * in the module's memory with _malloc); results that are bytes (an update
 * frame, saved parameters) land in one output buffer, wc_out_data /
 * wc_out_size, valid until the next call that writes it.
 *
 * The order of use: wc_load_model, wc_set_task (then wc_params_load to
 * restore a saved private prompt), wc_encode_image for each image,
 * wc_set_samples, then per round wc_round_begin with the server's global
 * frame, wc_round_step until wc_round_done, wc_round_update; wc_accuracy
 * and wc_predict at any time after wc_set_task. The same file builds
 * natively (tests/browser/step_native.c) to check the wasm against it. */
#ifndef SDFED_WASM_CLIENT_API_H
#define SDFED_WASM_CLIENT_API_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

#ifdef __EMSCRIPTEN__
#include <emscripten/emscripten.h>
#define WC_EXPORT EMSCRIPTEN_KEEPALIVE
#else
#define WC_EXPORT
#endif

/* The model: a GGUF file in a buffer from malloc, which the module now owns
 * (it is freed when another model is loaded). */
WC_EXPORT int wc_load_model(uint8_t *bytes, size_t size);
/* on = 0: the image tower on f32 activations (the weights dequantised);
 * 1 (the default): Q8_0 matrices in integer products with activations
 * quantised to Q8_0 (clip_model.h's int8_images). For this and later
 * models. */
WC_EXPORT void wc_set_int8_images(int on);
WC_EXPORT int wc_image_size(void);
WC_EXPORT int wc_embed_dim(void);

/* The federation's task (the welcome's task object as JSON: its classes,
 * template and prompt_init are the prompts' text) and this client's index
 * (its shard, or any number that picks its local prompt length and random
 * stream). Fresh parameters are drawn as the simulator draws client
 * `index`'s. */
WC_EXPORT int wc_set_task(const char *task_json, int index);
WC_EXPORT int wc_method_global_size(void); /* floats uploaded each round */

/* Floats per image the task's method reads (method/methods.h): embed_dim
 * (CLIP's pooled feature; also before a task is set), or fedotp's patch
 * features. */
WC_EXPORT int wc_feature_size(void);
/* The features (wc_feature_size floats) of an RGBA image (not
 * premultiplied), composited onto the task's background (white before
 * wc_set_task: clip/image_composite.h) in place: rgba then holds the
 * packed RGB pixels. */
WC_EXPORT int wc_encode_image(uint8_t *rgba, int width, int height, float *features);

/* The client's samples: which 0 training, 1 held-out test; features
 * (n, wc_feature_size) and labels (n, class indices) are copied. */
WC_EXPORT int wc_set_samples(int which, const float *features, const uint8_t *labels, int n);

/* A round: the server's global frame (binary sdfed.v1 frame) starts it. */
WC_EXPORT int wc_round_begin(const uint8_t *frame, size_t size);
WC_EXPORT int wc_round_step(void);
WC_EXPORT int wc_round_done(void);
WC_EXPORT int wc_round_steps_total(void);
WC_EXPORT int wc_round_steps_taken(void);
/* The last step's losses: ce_local, ce_global, stretch, separation, total. */
WC_EXPORT const double *wc_round_losses(void);
/* The update frame of the round (the shared parameters only, the training
 * sample count) into the output buffer. */
WC_EXPORT int wc_round_update(void);

/* Share of the test samples classified right; negative on error. */
WC_EXPORT double wc_accuracy(void);
/* The class of one image's features with the client's own parameters, and
 * the probabilities of every class (softmax of the scaled logits); negative
 * on error. */
WC_EXPORT int wc_predict(const float *features, float *probabilities);
WC_EXPORT int wc_class_count(void);

/* The folder rule (data/folder_rule.h) on a file the volunteer chose, its
 * path relative to the chosen folder: returns its kind (SDFED_FOLDER_*);
 * for an image in a class folder, *class_length is the class folder's
 * length in bytes (of the UTF-8 path) and *class_index the task's class it
 * means (-1 for none, and before wc_set_task). */
WC_EXPORT int wc_folder_classify(const char *path, int *class_length, int *class_index);
/* Why the file at path is not used ("hidden", "SVG: not PNG or JPEG", ...),
 * or "" for an image; valid until the next call. */
WC_EXPORT const char *wc_folder_why(const char *path);

/* The device (fed/local_prompt.h): with a task's local_prompt, the page
 * times WC_PROBE_STEPS steps at each of its lengths (wc_probe_begin, then
 * wc_probe_step, timed by the caller: the core has no clock; the first is a
 * warm-up) on throwaway parameters, then wc_choose with the step times (ms,
 * one a length) chooses the length and the steps a round for the training
 * samples set, and starts the client's parameters at that length (then
 * wc_params_load restores saved ones). New training samples need another
 * wc_choose; the adaptive rule's rounds need one. wc_plan: the length, the
 * steps a round, the steps of the whole epochs, the samples they use. */
#define WC_PROBE_STEPS 4
WC_EXPORT int wc_probe_begin(int length);
WC_EXPORT int wc_probe_step(void);
WC_EXPORT void wc_probe_end(void);
WC_EXPORT int wc_choose(const double *step_ms);
WC_EXPORT const int *wc_plan(void);

/* The client's parameters (shared and private) as bytes to keep
 * (method/methods_io.h), and back. */
WC_EXPORT int wc_params_save(void);
WC_EXPORT int wc_params_load(const uint8_t *bytes, size_t size);

/* The threaded build only: the kernels split over n threads in all (the
 * caller's included, at most 16; kernels/kernels_threads.c); returns how many run.
 * Threads are never taken back. */
WC_EXPORT int wc_set_threads(int n);

WC_EXPORT const uint8_t *wc_out_data(void);
WC_EXPORT size_t wc_out_size(void);
WC_EXPORT const char *wc_error(void);
/* The kernels' name (kernels/kernels.h): "simd128-relaxed" where the engine
 * runs relaxed SIMD and the page did not turn it off, else "simd128". */
WC_EXPORT const char *wc_kernels(void);

#endif
