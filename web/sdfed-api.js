// The wasm client's API (wasm-client/api.h) for JavaScript: copies in and
// out of the module's memory, and C errors turned into exceptions. Loaded
// by worker.js (importScripts) and by the Node tests (require).
'use strict';

// memory: the module's WebAssembly.Memory when the caller made it (the
// threaded build, where another thread may grow it and leave the module's
// own views stale); views are then made from it on every use.
function sdfedApi(M, memory = null) {
  const u8 = () => (memory ? new Uint8Array(memory.buffer) : M.HEAPU8);
  const f32 = () => (memory ? new Float32Array(memory.buffer) : M.HEAPF32);
  const f64 = () => (memory ? new Float64Array(memory.buffer) : M.HEAPF64);
  const i32 = () => (memory ? new Int32Array(memory.buffer) : M.HEAP32);
  // a refusal of a secure round's step (a code of shared/fed/secagg_stage.h,
  // 100 and up) carries its name and number: e.code 'secagg_both_sets'
  const fail = (what, rc = 0) => {
    const e = new Error(`${what}: ${M.UTF8ToString(M._wc_error())}`);
    const name = rc >= 100 ? M._wc_secagg_code_name(rc) : 0;
    if (name) Object.assign(e, { code: M.UTF8ToString(name), number: rc });
    throw e;
  };
  const check = (rc, what) => { if (rc !== 0) fail(what, rc); };
  // a copy of bytes in the module's memory; the caller frees it (or hands it over)
  const copyIn = (bytes) => {
    const p = M._malloc(Math.max(1, bytes.byteLength));
    if (!p) throw new Error('out of wasm memory');
    u8().set(new Uint8Array(bytes.buffer || bytes, bytes.byteOffset || 0, bytes.byteLength), p);
    return p;
  };
  const withBytes = (bytes, fn) => { const p = copyIn(bytes); try { return fn(p); } finally { M._free(p); } };
  const withString = (s, fn) => {
    const n = M.lengthBytesUTF8(s) + 1, p = M._malloc(n);
    M.stringToUTF8(s, p, n);
    try { return fn(p); } finally { M._free(p); }
  };
  const withFloats = (count, fn) => {
    const p = M._malloc(4 * Math.max(1, count));
    try { return fn(p, () => f32().slice(p / 4, p / 4 + count)); } finally { M._free(p); }
  };
  const output = () => u8().slice(M._wc_out_data(), M._wc_out_data() + M._wc_out_size());
  // the output's lists (api.h: share, pair and mask jobs): big-endian integers, byte runs copied
  const reader = (bytes) => {
    let at = 0;
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return {
      u32() { at += 4; return view.getUint32(at - 4); },
      bytes(n) { at += n; return bytes.slice(at - n, at); },
    };
  };
  const list = (bytes, entry) => {
    const r = reader(bytes), count = r.u32();
    return Array.from({ length: count }, () => entry(r));
  };
  const concat = (parts) => {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((at, p) => { out.set(p, at); return at + p.length; }, 0);
    return out;
  };
  const PLAN = ['n', 'k', 't', 'minInputs', 'complete', 'ringBits', 'quantBits', 'clip', 'maxWeight', 'l2Clip',
    'sigma2', 'dims', 'streamBytes', 'shareRandomBytes', 'noiseBytes'];
  // a share pair and a sealed one (shared/fed/secagg_layout.h; the wasm checks every length)
  const SECAGG_PAIR_BYTES = 48, SECAGG_SEALED_BYTES = 64;

  return {
    // the model file's bytes; the module keeps its own copy
    loadModel(bytes) { check(M._wc_load_model(copyIn(bytes), bytes.byteLength), 'the model'); },
    // false: the image tower on f32 activations; true (the default): Q8_0 in integers
    setInt8Images(on) { M._wc_set_int8_images(on ? 1 : 0); },
    // the image tower's Q8_0 matrices packed once for these kernels (the same bits, more memory); its bytes
    packImageWeights: () => M._wc_pack_image_weights() >>> 0,
    kernels: () => M.UTF8ToString(M._wc_kernels()),
    // linear_int8's 8-bit dot ('relaxed' or 'simd128') and the f32 multiply-add ('fused' or 'unfused')
    int8Dot: () => M.UTF8ToString(M._wc_int8_dot()),
    // the relaxed dot's form where it runs ('split', 'unsigned' or 'signed'; wc_int8_dot_form), else ''
    int8DotForm: () => M.UTF8ToString(M._wc_int8_dot_form()),
    f32Madd: () => M.UTF8ToString(M._wc_f32_madd()),
    imageSize: () => M._wc_image_size(),
    embedDim: () => M._wc_embed_dim(),
    // the welcome's task (its classes, template and prompt_init included)
    setTask(task, index) {
      withString(JSON.stringify(task), (t) => check(M._wc_set_task(t, index), 'the task'));
    },
    globalSize: () => M._wc_method_global_size(),
    classCount: () => M._wc_class_count(),
    // floats per image the task's method reads (embedDim, or fedotp's patch features)
    featureSize: () => M._wc_feature_size(),
    // the factor a width x height image is reduced by while decoded, as the native decoder reduces it
    reductionFactor: (width, height) => M._wc_image_reduction_factor(width, height),
    // the bytes of the module's memory (which never shrinks)
    memoryBytes: () => u8().buffer.byteLength,
    // RGBA pixels (Uint8ClampedArray of ImageData) -> Float32Array of featureSize
    encodeImage(rgba, width, height) {
      const D = M._wc_feature_size();
      return withBytes(rgba, (p) => withFloats(D, (f, read) => {
        check(M._wc_encode_image(p, width, height, f), 'encoding an image');
        return read();
      }));
    },
    // The image tower for the GPU (gpu.js; api.h's wc_image_tower): its
    // shape, and its tensors {type: 'f32' | 'q8_0' | another, rows, cols,
    // bytes: a view of the module's memory, valid until the module next runs}
    imageTower() {
      const shape = withFloats(16, (p) => { // 8 doubles
        check(M._wc_image_tower(p), 'the image tower');
        return f64().slice(p / 8, p / 8 + 8);
      });
      const [imageSize, patchSize, width, layers, heads, embedDim, activation, eps] = shape;
      // SDFED_TYPE_* (base/dtype.h): name, bytes of `values` values
      const types = { 0: ['f32', (values) => 4 * values], 1: ['f16', (values) => 2 * values],
        8: ['q8_0', (values) => (values / 32) * 34] };
      const count = 5 + 12 * layers + 3, tensors = [];
      const desc = M._malloc(16);
      try {
        for (let i = 0; i < count; i++) {
          check(M._wc_image_tensor(i, desc), 'a tensor of the image tower');
          const [type, rows, cols, at] = i32().slice(desc / 4, desc / 4 + 4);
          const [name, size] = types[type] || [`type ${type}`, () => 0];
          tensors.push({ type: name, rows, cols, at, size: size(rows * cols) });
        }
      } finally { M._free(desc); }
      return { imageSize, patchSize, width, layers, heads, embedDim, eps, tensors,
               activation: activation === 0 ? 'quick_gelu' : 'gelu',
               bytesOf: (t) => u8().subarray(t.at, t.at + t.size) };
    },
    // RGBA pixels -> the preprocessed image, Float32Array (3, S, S)
    preprocessImage(rgba, width, height) {
      const S = M._wc_image_size();
      return withBytes(rgba, (p) => withFloats(3 * S * S, (f, read) => {
        check(M._wc_preprocess_image(p, width, height, f), 'preprocessing an image');
        return read();
      }));
    },
    // rows of projected tokens the method's features read (1: the class token, or every token)
    featureTokens: () => M._wc_feature_tokens(),
    // those rows (Float32Array) -> the features, as encodeImage makes them
    featuresFromTokens(tokens) {
      return withBytes(tokens, (t) => withFloats(M._wc_feature_size(), (f, read) => {
        check(M._wc_features_from_tokens(t, f), 'the features');
        return read();
      }));
    },
    // which: 0 training, 1 test; features (n * featureSize) Float32Array, labels Uint8Array
    setSamples(which, features, labels) {
      withBytes(features, (f) => withBytes(labels, (l) =>
        check(M._wc_set_samples(which, f, l, labels.length), 'the samples')));
    },
    roundBegin(frame) { withBytes(frame, (p) => check(M._wc_round_begin(p, frame.byteLength), 'the round')); },
    roundStep() {
      check(M._wc_round_step(), 'a training step');
      const l = f64().subarray(M._wc_round_losses() / 8, M._wc_round_losses() / 8 + 5);
      return { ceLocal: l[0], ceGlobal: l[1], stretch: l[2], separation: l[3], total: l[4] };
    },
    roundDone: () => M._wc_round_done() !== 0,
    roundProgress: () => ({ taken: M._wc_round_steps_taken(), total: M._wc_round_steps_total() }),
    // the training samples the round's steps used (its update's weight)
    roundSamples: () => M._wc_round_samples(),
    // the update frame to upload (shared parameters only)
    roundUpdate() { check(M._wc_round_update(), 'the update'); return output(); },
    // the device's rounds watched for drift (fed/local_prompt.h): after a round, whether to measure again; then
    // the ms a step at the plan's length measured before and now
    watchRound: (roundMs) => M._wc_step_watch_round(roundMs) === 1,
    watchMeasured: (beforeMs, nowMs) => M._wc_step_watch_measured(beforeMs, nowMs),
    // the share of the held-out images classified right; NaN without any
    accuracy() {
      const a = M._wc_accuracy();
      if (a < 0) fail('the accuracy');
      return a;
    },
    predict(features) {
      const C = M._wc_class_count();
      return withBytes(features, (f) => withFloats(C, (p, read) => {
        const best = M._wc_predict(f, p);
        if (best < 0) fail('a prediction');
        return { best, probabilities: read() };
      }));
    },
    // the folder rule (shared/data/folder_rule.h) on a path below the chosen
    // folder: {kind: 'image' | 'loose' | 'hidden' | 'unsupported' | 'not-image',
    // folder (the class folder's name, for an image), label (the task's class
    // it means, or -1), why (for the others)}
    classifyPath(path) {
      return withString(path, (p) => {
        const out = M._malloc(8);
        try {
          const kind = M._wc_folder_classify(p, out, out + 4);
          const [length, label] = i32().subarray(out / 4, out / 4 + 2);
          const bytes = new TextEncoder().encode(path);
          return {
            kind: ['image', 'loose', 'hidden', 'unsupported', 'not-image'][kind],
            folder: kind === 0 ? new TextDecoder().decode(bytes.subarray(0, length)) : '',
            label,
            why: M.UTF8ToString(M._wc_folder_why(p)),
          };
        } finally { M._free(out); }
      });
    },
    // the round's global as received (g) and the client's after its steps (x)
    roundGlobals() {
      const n = M._wc_method_global_size(), g = M._wc_round_global(0), x = M._wc_round_global(1);
      if (!g) throw new Error('no round in progress');
      return { g: f32().slice(g / 4, g / 4 + n), x: f32().slice(x / 4, x / 4 + n) };
    },

    // ---- a secure round (api.h's wc_secagg_*; the cryptography is secagg.js's) ----
    // the task's plan for n clients: {n, k, t, minInputs, complete, ringBits, ...}
    secaggPlan(n) {
      check(M._wc_secagg_plan(n), 'the secure round\'s plan');
      const v = f64().slice(M._wc_secagg_plan_values() / 8, M._wc_secagg_plan_values() / 8 + PLAN.length);
      return Object.fromEntries(PLAN.map((name, i) => [name, name === 'complete' ? v[i] !== 0 : v[i]]));
    },
    // a new client (maskSeed and seed: 16 bytes each; the public keys 32): its advertise message
    secaggStart(n, round, { maskSeed, maskPublic, sharePublic, seed }) {
      return withBytes(concat([maskSeed, maskPublic, sharePublic, seed]), (p) => {
        try {
          check(M._wc_secagg_start(n, round, p, p + 16, p + 48, p + 80), 'the secure round\'s keys');
        } finally { u8().fill(0, p, p + 96); }
        return output();
      });
    },
    // the share_request -> [{client, sharePublic, info, pair}] to seal
    secaggShare(request, random) {
      return withBytes(request, (q) => withBytes(random, (r) => {
        check(M._wc_secagg_share(q, request.byteLength, r, random.byteLength), 'the share request');
        return list(output(), (e) => ({ client: e.u32(), sharePublic: e.bytes(32), info: e.bytes(64),
                                        pair: e.bytes(SECAGG_PAIR_BYTES) }));
      }));
    },
    // the sealed pairs (SECAGG_SEALED_BYTES each, in the jobs' order) -> the shares message
    secaggShares(sealed) {
      const bytes = concat(sealed);
      withBytes(bytes, (p) => check(M._wc_secagg_shares(p, bytes.byteLength), 'the shares'));
      return output();
    },
    // the masked_request -> [{slot, sender, sharePublic, info, sealed}] to open
    secaggRelayed(request) {
      return withBytes(request, (q) => {
        check(M._wc_secagg_relayed(q, request.byteLength), 'the masked request');
        return list(output(), (e) => ({ slot: e.u32(), sender: e.u32(), sharePublic: e.bytes(32), info: e.bytes(64),
                                        sealed: e.bytes(SECAGG_SEALED_BYTES) }));
      });
    },
    secaggKeepPair(slot, pair) {
      withBytes(pair, (p) => { try { check(M._wc_secagg_keep_pair(slot, p), 'an opened pair'); } finally {
        u8().fill(0, p, p + SECAGG_PAIR_BYTES);
      } });
    },
    // its input (x, g Float32Array; noise: its own random bytes, or empty)
    // -> {streamBytes, masks: [{slot, client, maskPublic, info}]} to add
    secaggInput(x, g, samples, client, noise) {
      return withBytes(x, (px) => withBytes(g, (pg) => withBytes(noise, (pn) => {
        try {
          check(M._wc_secagg_input(px, pg, samples, client, pn, noise.byteLength), 'the secure round\'s input');
        } finally { u8().fill(0, pn, pn + noise.byteLength); }
        const r = reader(output()), streamBytes = r.u32(), count = r.u32();
        const masks = Array.from({ length: count }, () => ({ slot: r.u32(), client: r.u32(), maskPublic: r.bytes(32),
                                                             info: r.bytes(64) }));
        return { streamBytes, masks };
      })));
    },
    secaggAddMask(slot, stream) {
      withBytes(stream, (p) => check(M._wc_secagg_add_mask(slot, p, stream.byteLength), 'a mask'));
    },
    secaggMasked() { check(M._wc_secagg_masked(), 'the masked input'); return output(); },
    // the unmask_request -> the unmask message; a refusal throws with e.code
    secaggUnmask(request) {
      withBytes(request, (q) => check(M._wc_secagg_unmask(q, request.byteLength), 'the unmasking request'));
      return output();
    },
    secaggAbandon() { M._wc_secagg_abandon(); },
    // a secure round's frames on the wire: the SDFS frame around a secagg
    // message, and a frame's message checked ({kind: 'share_request', ...,
    // round, message}; a bad frame throws)
    secureFrame(message) {
      withBytes(message, (p) => check(M._wc_secure_frame_encode(p, message.byteLength), 'a secure frame'));
      return output();
    },
    secureMessage(frame) {
      withBytes(frame, (p) => check(M._wc_secure_frame_decode(p, frame.byteLength), 'the server\'s secure frame'));
      const message = output(), view = new DataView(message.buffer);
      return { kind: M.UTF8ToString(M._wc_secagg_msg_name(message[0])), round: Number(view.getBigInt64(1)), message };
    },
    // its input before the masks, (P + 1) u64 little-endian bytes
    secaggInputValues() { check(M._wc_secagg_input_values(), 'the input'); return output(); },
    // the layouts alone (the test vector)
    secaggInfo(purpose, session, round, a, b) {
      withBytes(session, (p) => check(M._wc_secagg_info(purpose, p, round, a, b), 'an info'));
      return output();
    },
    // the bytes whose SHA-256 is the session id
    secaggSessionInput(round, maskKeys, shareKeys) {
      withBytes(concat(maskKeys), (m) => withBytes(concat(shareKeys), (s) =>
        check(M._wc_secagg_session_input(round, maskKeys.length, m, s), 'the session id\'s input')));
      return output();
    },
    // values (BigUint64Array) + sign * the stream's elements in Z_2^ringBits
    secaggRingAdd(ringBits, values, stream, sign) {
      return withBytes(values, (v) => withBytes(stream, (s) => {
        check(M._wc_secagg_ring_add(ringBits, v, values.length, s, stream.byteLength, sign), 'a mask');
        return new BigUint64Array(u8().slice(v, v + 8 * values.length).buffer);
      }));
    },
    // the device (wasm-client/api.h): a probe of a few steps at one local prompt length, each step timed by the
    // caller; then the plan for step times (ms, one per length of the task's local_prompt)
    probeBegin(length) { check(M._wc_probe_begin(length), 'timing a step'); },
    probeStep() { check(M._wc_probe_step(), 'timing a step'); },
    probeEnd() { M._wc_probe_end(); },
    choose(stepMs) {
      const p = M._malloc(8 * Math.max(1, stepMs.length));
      try {
        f64().set(stepMs, p / 8);
        check(M._wc_choose(p), 'choosing the local prompt');
      } finally { M._free(p); }
      const [length, steps, epochSteps, samples] = i32().subarray(M._wc_plan() / 4, M._wc_plan() / 4 + 4);
      return { length, steps, epochSteps, samples };
    },
    saveParams() { check(M._wc_params_save(), 'saving the prompts'); return output(); },
    loadParams(bytes) { withBytes(bytes, (p) => check(M._wc_params_load(p, bytes.byteLength), 'the saved prompts')); },
  };
}

if (typeof module !== 'undefined') module.exports = { sdfedApi };
