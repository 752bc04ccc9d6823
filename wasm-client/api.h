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
 * and wc_predict at any time after wc_set_task. A secure round (the task's
 * secure_aggregation) replaces wc_round_update by the wc_secagg_ calls
 * below, which web/secagg.js makes with WebCrypto's results between them.
 * The same file builds natively (tests/browser/step_native.c) to check the
 * wasm against it. */
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
/* The image tower's Q8_0 matrices packed once for the kernels and the
 * integer products in use (sdfed_clip_pack: the same bits; packing them on
 * every call took a tenth of a ViT-B/16 image in Chromium); the bytes that
 * took, 0 where nothing was packed (f32 activations, no model, no memory).
 * Dropped with the model. */
WC_EXPORT size_t wc_pack_image_weights(void);
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
/* The factor a width x height image (both >= 1) is reduced by while it is
 * decoded, as the native decoder reduces it (1, 2, 4, ...:
 * clip/image_preprocess.h's sdfed_image_reduction_factor for
 * SDFED_IMAGE_MAX_PIXELS): the page decodes it at ceil(width / f) x
 * ceil(height / f). */
WC_EXPORT int wc_image_reduction_factor(int width, int height);

/* ---- the image tower for another device (web/gpu.js: WebGPU) ------------
 * The page's GPU runs the forward of sdfed_image_encode on f32 activations
 * (as with wc_set_int8_images(0)) from this module's pixels and weights, and
 * hands its output back here to be made into features as the wasm's are.
 * wc_image_tower: shape (8 doubles) = image_size, patch_size, width, layers,
 * heads, embed_dim, activation (SDFED_ACT_*), layer_norm_eps.
 * wc_image_tensor: tensor `index` of the tower, in this order,
 *   0 patch_embd [W, 3 P P], 1 class_embd [W], 2 pos_embd [T, W],
 *   3 ln_pre weight, 4 bias [W], then per block 12:
 *   ln1 weight, bias, attn_qkv [3W, W], its bias, attn_out [W, W], its bias,
 *   ln2 weight, bias, mlp_fc [4W, W], its bias, mlp_proj [W, 4W], its bias;
 *   then ln_post weight, bias [W], proj [E, W]
 * into desc (4 ints): type (SDFED_TYPE_*), rows, cols, its address in
 * memory (vectors: 1 row); returns 0, or an error past the last. */
WC_EXPORT int wc_image_tower(double *shape);
WC_EXPORT int wc_image_tensor(int index, int *desc);
/* An RGBA image composited as wc_encode_image does it, then preprocessed:
 * pixels (3, S, S), S = wc_image_size. */
WC_EXPORT int wc_preprocess_image(uint8_t *rgba, int width, int height, float *pixels);
/* Rows of the projected tokens (ln_post and proj applied, embed_dim floats
 * each) that the task's method reads: 1 (the class token) or every token. */
WC_EXPORT int wc_feature_tokens(void);
/* features (wc_feature_size) from those rows, as wc_encode_image makes them
 * from its own. */
WC_EXPORT int wc_features_from_tokens(const float *tokens, float *features);

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
/* The training samples the round's steps used: its update's weight. */
WC_EXPORT int wc_round_samples(void);
/* The update frame of the round (the shared parameters only, the training
 * sample count) into the output buffer; a secure round sends none. */
WC_EXPORT int wc_round_update(void);

/* The round's global parameters as wc_round_begin received them (which 0)
 * and the client's after its steps (1): wc_method_global_size floats each,
 * valid until the next call that starts a round or sets the task; NULL
 * before a round. A secure round's input is their difference. */
WC_EXPORT const float *wc_round_global(int which);

/* Share of the test samples classified right, NaN without any (no
 * accuracy: the page says so, and reports test_samples 0); negative on
 * error. */
WC_EXPORT double wc_accuracy(void);
/* The device's rounds watched for drift (fed/local_prompt.h's
 * sdfed_step_watch, the headless client's too; since the task was set):
 * after a round of round_ms a step, 1 when the device is to be measured
 * again; then its ms a step at the plan's length as measured before and
 * now. */
WC_EXPORT int wc_step_watch_round(double round_ms);
WC_EXPORT void wc_step_watch_measured(double before_ms, double now_ms);
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
 * warm-up) on throwaway parameters (also after a round's steps, to measure
 * again: never while steps are left), then wc_choose with the step times (ms,
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

/* ---- a secure round (shared/fed/secagg_client.h), one at a time ----------
 * The client's steps over the core, the cryptography left to the caller
 * (web/secagg.js: X25519, HKDF-SHA256, AES-256-GCM and AES-256-CTR with
 * WebCrypto, by the layouts of shared/fed/secagg_layout.h). Rounds and
 * client numbers are doubles holding integers (below 2^53). Messages are
 * the bytes of shared/fed/secagg_message.h; lists for the caller's
 * cryptography are bytes too, integers big-endian:
 *   share jobs   count (4) || per recipient, in slot order: client (4) ||
 *                its share public key (32) || the share key's info (64,
 *                also the GCM additional data) || the pair to seal (48)
 *   pair jobs    count (4) || per relayed pair: slot (4) || sender (4) ||
 *                its share public key (32) || the share key's info (64) ||
 *                the sealed pair (64)
 *   mask jobs    stream bytes (4) || count (4) || per mask: slot (4) ||
 *                client (4) || its mask public key (32; zeros for the
 *                client's own slot, whose key comes from its seed) || the
 *                pair or self key's info (64)
 * Each returns 0 or a status (a refused request: its fed/secagg_stage.h
 * code, 100 and up, named by wc_secagg_code_name), the reason in
 * wc_error(); a refusal leaves the client abandoned for the round. */

/* The task's plan for a round of n clients (wc_set_task first) into
 * wc_secagg_plan_values. */
WC_EXPORT int wc_secagg_plan(int n);
/* The last plan: n, k, t, min_inputs, complete (0/1), ring_bits,
 * quant_bits, clip, max_weight, l2_clip (0: none), sigma2 (0: no noise),
 * dims P, stream bytes (a mask's), the random bytes wc_secagg_share takes,
 * the noise bytes wc_secagg_input takes (0 without noise): 15 doubles. */
WC_EXPORT const double *wc_secagg_plan_values(void);
/* A new client of round `round` among n: its mask seed (16 random bytes),
 * the public key of the mask key derived from it (32), its share public
 * key (32) and its self-mask seed (16 random bytes); out = its advertise
 * message. */
WC_EXPORT int wc_secagg_start(int n, double round, const uint8_t *mask_seed, const uint8_t *mask_pk,
                              const uint8_t *share_pk, const uint8_t *seed);
/* The share_request read and checked, the secrets Shamir-shared with
 * coefficients from `random` (the plan's bytes, crypto.getRandomValues);
 * out = the share jobs. */
WC_EXPORT int wc_secagg_share(const uint8_t *request, size_t len, const uint8_t *random, size_t random_len);
/* sealed: the share jobs' pairs sealed (64 bytes each, in their order);
 * out = the shares message. */
WC_EXPORT int wc_secagg_shares(const uint8_t *sealed, size_t len);
/* The masked_request read and its senders checked; out = the pair jobs. */
WC_EXPORT int wc_secagg_relayed(const uint8_t *request, size_t len);
/* The 48-byte pair opened from slot's sender. */
WC_EXPORT int wc_secagg_keep_pair(int slot, const uint8_t *pair);
/* Its input from x and g (P floats each), its sample count, the rounding
 * of (the task's seed, the round, client `client`) and its own noise
 * (noise_len bytes of crypto.getRandomValues, the plan's; a shortfall is
 * refused, never drawn again); out = the mask jobs. */
WC_EXPORT int wc_secagg_input(const float *x, const float *g, double sample_count, double client, const uint8_t *noise,
                              size_t noise_len);
/* The stream (a mask job's stream bytes) of slot's mask added. */
WC_EXPORT int wc_secagg_add_mask(int slot, const uint8_t *stream, size_t len);
/* out = the masked message, once every mask job's stream is in. */
WC_EXPORT int wc_secagg_masked(void);
/* The unmask_request checked as an honest client does and answered: out =
 * the unmask message; a refusal returns its code. */
WC_EXPORT int wc_secagg_unmask(const uint8_t *request, size_t len);
/* The client leaves the round (its caller's cryptography failed: a pair
 * that does not authenticate, a key refused). */
WC_EXPORT void wc_secagg_abandon(void);
/* out = the client's input before its masks, (P + 1) u64 little-endian
 * (the parity checks). */
WC_EXPORT int wc_secagg_input_values(void);
/* "secagg_both_sets", ... for a code; NULL for another. */
WC_EXPORT const char *wc_secagg_code_name(int code);
/* A secure round's frames on the wire (fed/protocol.h, docs/protocol.md
 * "Secure rounds"): out = the SDFS frame around a secagg message; out = the
 * message inside a frame, after its magic, version, size and CRC-32 are
 * checked (a bad one: SDFED_ERR_FORMAT, the reason in wc_error()). */
WC_EXPORT int wc_secure_frame_encode(const uint8_t *msg, size_t len);
WC_EXPORT int wc_secure_frame_decode(const uint8_t *frame, size_t len);
/* "advertise", "share_request", ... for a secagg message's kind; NULL for another. */
WC_EXPORT const char *wc_secagg_msg_name(int kind);
/* Layouts alone: out = the 64-byte info of purpose (2 share, 3 pair, 4
 * self, 5 mask key: the page's own, and tests/vectors/secagg-v2.txt's
 * checks) and clients a, b; the
 * bytes whose SHA-256 (the page's WebCrypto) is the session id of n
 * clients' keys (n x 32 each, all advertised); v
 * (count u64, in Z_2^ring_bits) += sign (+1, -1) times a stream's
 * elements. */
WC_EXPORT int wc_secagg_info(int purpose, const uint8_t *session, double round, double a, double b);
WC_EXPORT int wc_secagg_session_input(double round, int n, const uint8_t *mask_keys, const uint8_t *share_keys);
WC_EXPORT int wc_secagg_ring_add(int ring_bits, uint64_t *v, size_t count, const uint8_t *stream, size_t len, int sign);

WC_EXPORT const uint8_t *wc_out_data(void);
WC_EXPORT size_t wc_out_size(void);
WC_EXPORT const char *wc_error(void);
/* The kernels' name (kernels/kernels.h): "simd128-relaxed" where the engine
 * runs relaxed SIMD and the page did not turn it off, else "simd128". */
WC_EXPORT const char *wc_kernels(void);
/* Which products those kernels run, each asked once: linear_int8's 8-bit
 * dot, "relaxed" (relaxed SIMD's i32x4.relaxed_dot_i8x16_i7x16_add_s) or
 * "simd128" (i32x4.dot_i16x8_s); the f32 products' multiply-add, "fused"
 * (relaxed SIMD's f32x4.relaxed_madd where the engine fuses it: the FMA
 * chains) or "unfused" (a multiply, then an add). */
WC_EXPORT const char *wc_int8_dot(void);
WC_EXPORT const char *wc_f32_madd(void);
/* Where the relaxed dot runs, its form (kernels.h's
 * sdfed_kernels_relaxed_dot_form: "split", "unsigned" or "signed", the
 * last two followed by ", exact in SIMD128" where the page asked for a
 * kind the engine's dot is not), else "". */
WC_EXPORT const char *wc_int8_dot_form(void);

#endif
