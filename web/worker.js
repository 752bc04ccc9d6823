// The volunteer's compute, off the page's thread: the core in WebAssembly
// (wasm-client/api.c through sdfed-api.js), image features on the GPU where
// WebGPU computes them as the wasm does (gpu.js). The page sends requests
//   {id, op, ...arguments}
// and gets back {id, result} or {id, error}; long operations also post
//   {id, progress: {done, total}}
// Ops: init, setTask, classify, encode, setSamples, measure, device, round,
// accuracy, memory, predict, saveParams, loadParams, stop, and a secure round's steps
// (secagg.js): secaggPlan, secaggAdvertise, secaggShare, secaggMask,
// secaggUnmask, secaggInput, and its frames: secureFrame, secureMessage.
// An error is {id, error, code} (code: a refusal's name, as
// 'secagg_both_sets', when it has one).
'use strict';

let api = null;
let threaded = false;
let secure = null; // the secure round in progress (secagg.js)
let threads = 1;
const PROBE_STEPS = 4; // WC_PROBE_STEPS (wasm-client/api.h)
// The image tower on WebGPU (gpu.js) once its features of a check image
// agreed with the wasm's, else null; where image features run, for the page
// ('GPU (WebGPU)' or 'CPU, 2 threads'), and why not on the GPU.
let gpu = null;
const placement = { on: '', why: '' };
const MAX_ONE_MINUS_COSINE = 1e-5; // the GPU's check image against the wasm's features
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]; // a JPEG starts ff d8 ff
let loseGpuAfter = Infinity; // tests: the GPU device destroyed after this many images on it
let imagesOnGpu = 0;

// The threaded build needs SharedArrayBuffer, which browsers give only to
// cross-origin isolated pages (the aggregator sends COOP/COEP headers).
// relaxedSimd (shared/kernels/relaxed_simd.js.in): unset, relaxed SIMD's
// integer kernels where the browser runs them and they are the faster here
// (and its fused multiply-add for the f32 products wherever it is fused);
// true, its integer kernels wherever the browser runs them; false, SIMD128's
// alone (tests, benchmarks). dot, where relaxedSimd is unset: 'relaxed' or
// 'simd128', that integer dot wherever relaxed SIMD runs (its multiply-add
// as unset; tests, benchmarks), unset the faster. progress(done, total): the
// bytes of the module's .wasm read (total 0 when the server does not say).
async function loadModule(singleThreaded, relaxedSimd, dot, progress) {
  threaded = !singleThreaded && self.crossOriginIsolated === true && typeof SharedArrayBuffer === 'function';
  let name = threaded ? 'sdfed-wasm-threads' : 'sdfed-wasm';
  try {
    importScripts(`/wasm/${name}.js`);
  } catch (e) {
    if (!threaded) throw e;
    threaded = false; // no threaded build served: the single-threaded one
    name = 'sdfed-wasm';
    importScripts(`/wasm/${name}.js`);
  }
  importScripts('/sdfed-api.js', '/secagg.js', '/gpu.js');
  // the module's .wasm read here, its threads' worker script found under /wasm/;
  // the threaded one gets its shared memory from here (see sdfed-api.js),
  // with the limits it was linked with (32 MiB, growing to 2 GiB)
  const memory = threaded ? new WebAssembly.Memory({ initial: 512, maximum: 32768, shared: true }) : null;
  const module = await createSdfed({
    locateFile: (file) => `/wasm/${file}`,
    wasmBinary: await download(`/wasm/${name}.wasm`, progress),
    relaxedSimd,
    relaxedDot: dot,
    ...(threaded ? { wasmMemory: memory, mainScriptUrlOrBlob: `/wasm/${name}.js` } : {}),
  });
  threads = threaded ? Math.max(1, Math.min(navigator.hardwareConcurrency || 2, 4)) : 1;
  if (threaded) module._wc_set_threads(threads);
  return sdfedApi(module, memory);
}

// The bytes at url, read with their progress (on a slow network the module's
// .wasm is most of the wait before the page can do anything).
async function download(url, progress) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  const total = Number(r.headers.get('content-length')) || 0, reader = r.body.getReader(), chunks = [];
  for (let got = 0; ;) {
    const { done, value } = await reader.read();
    if (done) return new Blob(chunks).arrayBuffer();
    chunks.push(value);
    got += value.length;
    progress(got, total);
  }
}

// A file refused before its decoding, why said as the volunteer reads it.
const refusal = (why) => Object.assign(new Error(why), { why });

// Pixels of one image: {rgba, width, height} as they came, or {blob} (a
// file the volunteer added, or a demo shard's file; name: the file's name,
// for a file chosen alone) decoded here as the native decoder does
// (native/image_decode.h), as far as the browser can:
//   - a name the folder rule (shared/data/folder_rule.h) gives no image, and
//     bytes that are no PNG or JPEG, are refused as there;
//   - no colour management, a JPEG's EXIF orientation applied, colours not
//     premultiplied by alpha (the wasm composites them onto the task's
//     background: clip/image_composite.h);
//   - an image of more than 2^24 pixels brought to the size the native
//     decoder reduces it to (ceil(w/f) x ceil(h/f), f a power of two:
//     api.reductionFactor) by halvings, each bilinear at half the size,
//     which is the mean of each 2 x 2 block where the side is even, as the
//     native box mean is (a JPEG's differ: libjpeg reduces it in its DCT
//     there, docs/volunteer.md); the wasm never holds it whole.
// Camera frames and a shard's pixels come as RGBA, below that size.
async function pixelsOf(image) {
  if (image.rgba) return image;
  const entry = image.name ? api.classifyPath(image.name) : null;
  if (entry && entry.kind !== 'image' && entry.kind !== 'loose') throw refusal(entry.why);
  const head = new Uint8Array(await image.blob.slice(0, PNG_SIGNATURE.length).arrayBuffer());
  const png = PNG_SIGNATURE.every((b, i) => head[i] === b), jpeg = head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff;
  if (!png && !jpeg) throw refusal('not a PNG or JPEG image');
  let bitmap = await createImageBitmap(image.blob,
    { colorSpaceConversion: 'none', imageOrientation: 'from-image', premultiplyAlpha: 'none' });
  try {
    for (let f = api.reductionFactor(bitmap.width, bitmap.height); f > 1; f /= 2) {
      const half = await createImageBitmap(bitmap, { resizeWidth: Math.ceil(bitmap.width / 2),
        resizeHeight: Math.ceil(bitmap.height / 2), resizeQuality: 'low', premultiplyAlpha: 'none' });
      bitmap.close();
      bitmap = half;
    }
    const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
    const context = canvas.getContext('2d');
    context.drawImage(bitmap, 0, 0);
    const data = context.getImageData(0, 0, canvas.width, canvas.height);
    return { rgba: data.data, width: data.width, height: data.height };
  } finally {
    bitmap.close();
  }
}

// Why an image did not encode, for the volunteer: "the file is empty", a
// refusal's why ("WebP: not PNG or JPEG"), or the browser's or the core's
// message ("the source image could not be decoded").
function whyNotEncoded(image, e) {
  if (image.blob && image.blob.size === 0) return 'the file is empty';
  if (e && e.why) return e.why;
  const message = e && e.message ? e.message : String(e);
  return message.charAt(0).toLowerCase() + message.slice(1).replace(/\.$/, '');
}

const cpuLabel = () => `CPU, ${threads} thread${threads > 1 ? 's' : ''}`;

// A check image at the model's input size: a fixed pattern in every colour.
function checkImage(S) {
  const rgba = new Uint8ClampedArray(S * S * 4);
  for (let p = 0; p < S * S; p++) rgba.set([(p * 7) & 255, (p * 13 + 64) & 255, (p * 29 + 128) & 255, 255], 4 * p);
  return { rgba, width: S, height: S };
}

const oneMinusCosine = (a, b) => {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) { ab += a[i] * b[i]; aa += a[i] * a[i]; bb += b[i] * b[i]; }
  return 1 - ab / Math.sqrt(aa * bb);
};

// One image's features on the GPU, made as the wasm makes its own.
async function gpuFeatures(p) {
  const tokens = await gpu.forward(api.preprocessImage(p.rgba, p.width, p.height));
  const features = api.featuresFromTokens(tokens.subarray(0, api.featureTokens() * api.embedDim()));
  if (++imagesOnGpu >= loseGpuAfter) gpu.device.destroy();
  return features;
}

// Image features on the CPU from now on, and why.
function leaveGpu(why) {
  if (gpu) gpu.device.destroy();
  gpu = null;
  Object.assign(placement, { on: cpuLabel(), why });
}

// The milliseconds compute takes.
async function timed(compute) {
  const started = performance.now();
  await compute();
  return performance.now() - started;
}

// The GPU for image features where WebGPU gives an adapter, its features of
// the check image agree with the wasm's on f32 activations, and (gpu
// 'faster') it computes them sooner than the wasm would on the CPU
// (a software adapter does not: SwiftShader takes 30 to 70 times as long);
// gpu 'agrees' (tests, benchmarks): whenever they agree. The wasm then
// computes on f32 activations too (a lost GPU's images go on with the same
// features), else as int8Images asks.
async function chooseFeatures(int8Images, rule) {
  const refuse = (why) => {
    api.setInt8Images(int8Images);
    leaveGpu(why);
  };
  refuse('');
  if (!self.navigator || !navigator.gpu) return refuse('this browser has no WebGPU');
  try {
    gpu = await sdfedGpu.open(api.imageTower());
    if (!gpu) return refuse('WebGPU gives no adapter here');
    api.setInt8Images(false);
    const image = checkImage(api.imageSize());
    const cpu = api.encodeImage(image.rgba, image.width, image.height);
    const distance = oneMinusCosine(await gpuFeatures(image), cpu);
    if (!(distance <= MAX_ONE_MINUS_COSINE)) {
      return refuse(`the GPU's features of a check image differ from the CPU's ` +
        `(1 - cosine ${distance.toExponential(2)})`);
    }
    if (rule === 'faster') {
      // each on its second run: the check built the GPU's pipelines; the wasm's first run on the page's own
      // arithmetic is untimed (one more GPU run would cost a software adapter seconds an image)
      const gpuMs = await timed(() => gpuFeatures(image));
      api.setInt8Images(int8Images);
      api.encodeImage(image.rgba, image.width, image.height);
      const cpuMs = await timed(() => api.encodeImage(image.rgba, image.width, image.height));
      api.setInt8Images(false);
      if (!(gpuMs < cpuMs)) {
        return refuse(`the CPU computes them sooner here (an image: ${gpuMs.toFixed(1)} ms on the GPU, ` +
          `${cpuMs.toFixed(1)} ms on the CPU)`);
      }
    }
  } catch (e) {
    return refuse(`WebGPU failed: ${e.message}`);
  }
  imagesOnGpu = 0; // the check image is not one of the volunteer's
  const { device } = gpu;
  device.lost.then((info) => { if (gpu && gpu.device === device) leaveGpu(`the GPU was lost (${info.message})`); });
  Object.assign(placement, { on: 'GPU (WebGPU)', why: '' });
}

// One image's features: on the GPU while it lasts (a failure leaves it for
// the CPU, which computes this image again), else in the wasm.
async function imageFeatures(p) {
  if (gpu) {
    try {
      return await gpuFeatures(p);
    } catch (e) {
      leaveGpu(`the GPU failed (${e.message})`);
    }
  }
  return api.encodeImage(p.rgba, p.width, p.height);
}

const ops = {
  // singleThreaded: the one-thread build even where threads are possible;
  // int8Images false: the image tower on f32 activations (tests,
  // benchmarks); gpu: when image features run on the GPU ('faster', the
  // page's; 'agrees', tests' and benchmarks': chooseFeatures), or 'off';
  // loseGpuAfter (tests): the GPU device destroyed after that many images on
  // it, as a lost device would be; relaxedSimd, dot: loadModule's;
  // packWeights: the image tower's matrices packed once where its features
  // run on the CPU (memory.js's pack; the bytes it took: packedBytes). Says
  // which kernels run, and which of their products: the 8-bit dot (dot:
  // 'relaxed' or 'simd128'; dotForm: the relaxed one's form, 'split',
  // 'unsigned' or 'signed', else '') and the f32 multiply-add (madd: 'fused'
  // or 'unfused').
  async init({ model, singleThreaded = false, int8Images = true, relaxedSimd, dot, gpu: rule = 'faster',
    loseGpuAfter: lose, packWeights = false }, progress) {
    api = await loadModule(singleThreaded, relaxedSimd, dot, progress);
    api.loadModel(new Uint8Array(model));
    loseGpuAfter = lose || Infinity;
    if (rule !== 'off') {
      await chooseFeatures(int8Images, rule);
    } else {
      leaveGpu('not asked for');
      api.setInt8Images(int8Images);
    }
    const packedBytes = packWeights && !gpu ? api.packImageWeights() : 0;
    return { threaded, threads, kernels: api.kernels(), dot: api.int8Dot(), dotForm: api.int8DotForm(),
             madd: api.f32Madd(), imageSize: api.imageSize(), embedDim: api.embedDim(),
             featuresOn: placement.on, featuresWhy: placement.why, packedBytes };
  },
  setTask({ task, index }) {
    api.setTask(task, index);
    return { globalSize: api.globalSize(), classCount: api.classCount() };
  },
  // The folder rule (shared/data/folder_rule.h) on the paths below a chosen
  // folder (root: its name, '' for a drop of several things): each path's
  // verdict (sdfed-api.js classifyPath), for a file below a hidden folder
  // that folder (hiddenFolder), and the class the root's name means
  // (rootLabel, for the images in no class folder; -1 for none).
  classify({ paths, root }) {
    // a folder is hidden, or means a class, when a PNG in it is, or does:
    // the rule's own answer, not a second copy of it
    const inFolder = (folder) => api.classifyPath(`${folder}/x.png`);
    const entries = paths.map((path) => {
      const entry = api.classifyPath(path);
      if (entry.kind === 'hidden') {
        const parts = path.split('/');
        for (let i = 1; i < parts.length && !entry.hiddenFolder; i++)
          if (inFolder(parts.slice(0, i).join('/')).kind === 'hidden') entry.hiddenFolder = parts.slice(0, i).join('/');
      }
      return entry;
    });
    return { entries, rootLabel: root ? inFolder(root).label : -1 };
  },
  // images: [{rgba, width, height} | {blob, name}] -> {features, failed, seconds,
  // on, why}: the features of the images that encoded, in their order
  // (Float32Array, n encoded * featureSize), the others as [{index,
  // reason}], and where image features run now (a lost GPU: the CPU) and why
  async encode({ images }, progress) {
    const D = api.featureSize(), all = new Float32Array(images.length * D), failed = [];
    const started = performance.now();
    let encoded = 0;
    for (let i = 0; i < images.length; i++) {
      try {
        const p = await pixelsOf(images[i]);
        all.set(await imageFeatures(p), encoded * D);
        encoded++;
      } catch (e) {
        failed.push({ index: i, reason: whyNotEncoded(images[i], e) });
      }
      progress(i + 1, images.length);
    }
    return { features: failed.length ? all.slice(0, encoded * D) : all, failed,
             seconds: (performance.now() - started) / 1e3, on: placement.on, why: placement.why };
  },
  setSamples({ which, features, labels }) {
    api.setSamples(which, features, labels);
  },
  // This device's step times at each of lengths (ms: the median of the
  // probe's steps after its first; also between rounds, to measure again).
  measure({ lengths }) {
    const stepMs = lengths.map((length) => {
      api.probeBegin(length);
      try {
        api.probeStep(); // a warm-up
        const timed = [];
        for (let s = 1; s < PROBE_STEPS; s++) {
          const started = performance.now();
          api.probeStep();
          timed.push(performance.now() - started);
        }
        return timed.sort((a, b) => a - b)[timed.length >> 1];
      } finally { api.probeEnd(); }
    });
    return { stepMs };
  },
  // The device and the local prompt it can carry (wasm-client/api.h): the
  // step times (measured unless given) and the plan chosen with them for
  // the training samples set.
  device({ lengths, stepMs }) {
    if (!stepMs) ({ stepMs } = ops.measure({ lengths }));
    return { stepMs, plan: api.choose(stepMs) };
  },
  // One round from the server's global frame: steps with progress, then the
  // update frame to upload (none in a secure round: its masked input goes
  // instead), the samples it weighs and the accuracy on the held-out images.
  round({ frame, secure = false }, progress) {
    api.roundBegin(new Uint8Array(frame));
    const started = performance.now();
    let losses = null;
    while (!api.roundDone()) {
      losses = api.roundStep();
      const p = api.roundProgress();
      progress(p.taken, p.total);
    }
    const steps = api.roundProgress().taken;
    const update = secure ? null : api.roundUpdate();
    return { update, samples: api.roundSamples(), losses, steps,
             stepMs: (performance.now() - started) / Math.max(1, steps), accuracy: api.accuracy() };
  },
  accuracy: () => api.accuracy(),
  // the bytes of the module's memory now (tests: what images left in it, since it never shrinks)
  memory: () => api.memoryBytes(),
  watchRound: ({ roundMs }) => api.watchRound(roundMs),
  watchMeasured: ({ beforeMs, nowMs }) => api.watchMeasured(beforeMs, nowMs),
  // image as encode's; one that does not decode is refused with why
  // ("the file is empty", "WebP: not PNG or JPEG")
  async predict({ image }) {
    const p = await pixelsOf(image).catch((e) => { throw new Error(whyNotEncoded(image, e)); });
    return api.predict(await imageFeatures(p));
  },
  // the worker ends, its GPU memory given back
  stop() {
    leaveGpu('');
    self.close();
  },
  saveParams: () => api.saveParams(),
  loadParams({ bytes }) { api.loadParams(new Uint8Array(bytes)); },

  // A secure round (docs/secure-aggregation.md), each step on the server's
  // message (bytes) to {message: the bytes to send, ms: the step's time
  // here}: the task's plan for n clients; a new client of the round among n
  // (client: the number its rounding is drawn for); its shares; its masked
  // input, from x and g (the round's global after and before its steps:
  // Float32Array) or, without them, from the round this worker trained,
  // and its sample count; its unmasking answer (a refusal throws with its
  // code). Refused where the page is no secure context.
  secaggPlan: ({ n }) => api.secaggPlan(n),
  secaggAdvertise({ n, round, client }) {
    const problem = sdfedSecagg.secureContextProblem();
    if (problem) throw new Error(problem);
    secure = sdfedSecagg.client(api, { n, round, client });
    return secure.advertise();
  },
  secaggShare: ({ request }) => secureRound().share(request),
  secaggMask({ request, x, g, samples }) {
    const trained = x && g ? { x, g } : api.roundGlobals();
    return secureRound().mask(request, { x: trained.x, g: trained.g, samples });
  },
  secaggUnmask: ({ request }) => secureRound().unmask(request),
  // the wire's secure frames (sdfed-api.js): a message's frame, a frame's message
  secureFrame: ({ message }) => api.secureFrame(new Uint8Array(message)),
  secureMessage: ({ frame }) => api.secureMessage(new Uint8Array(frame)),
  // the input before its masks (the parity tests)
  secaggInput: () => secureRound().inputValues(),
};

function secureRound() {
  if (!secure) throw new Error('no secure round in progress');
  return secure;
}

self.onmessage = async (event) => {
  const { id, op, ...args } = event.data;
  const progress = (done, total) => self.postMessage({ id, progress: { done, total } });
  try {
    if (!ops[op]) throw new Error(`unknown operation ${op}`);
    if (!api && op !== 'init' && op !== 'stop') throw new Error('the model is not loaded yet');
    const result = await ops[op](args, progress);
    self.postMessage({ id, result });
  } catch (e) {
    self.postMessage({ id, error: e && e.message ? e.message : String(e), ...(e && e.code ? { code: e.code } : {}) });
  }
};
