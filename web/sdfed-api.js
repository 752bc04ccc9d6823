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
  const fail = (what) => { throw new Error(`${what}: ${M.UTF8ToString(M._wc_error())}`); };
  const check = (rc, what) => { if (rc !== 0) fail(what); };
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

  return {
    // the model file's bytes; the module keeps its own copy
    loadModel(bytes) { check(M._wc_load_model(copyIn(bytes), bytes.byteLength), 'the model'); },
    // false: the image tower on f32 activations; true (the default): Q8_0 in integers
    setInt8Images(on) { M._wc_set_int8_images(on ? 1 : 0); },
    kernels: () => M.UTF8ToString(M._wc_kernels()),
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
    // RGBA pixels (Uint8ClampedArray of ImageData) -> Float32Array of featureSize
    encodeImage(rgba, width, height) {
      const D = M._wc_feature_size();
      return withBytes(rgba, (p) => withFloats(D, (f, read) => {
        check(M._wc_encode_image(p, width, height, f), 'encoding an image');
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
    // the update frame to upload (shared parameters only)
    roundUpdate() { check(M._wc_round_update(), 'the update'); return output(); },
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
