// Image features on WebGPU (web/gpu.js) in Debian's Chromium, on
// SwiftShader's software Vulkan (WEBGPU_SWITCHES):
//   1. the page's worker chooses the GPU (its check image agrees with the
//      wasm) and its features of two images equal the native f32 features
//      of the same pixels (`sdfed encode-image --f32-images` on PNGs of
//      them) within 1 - cosine <= 1e-5, for the tiny model (Q8_0, the
//      default model; F32, a tiny-shaped one with random weights) and a
//      ViT-B/32-shaped one with random weights (Q8_0 and F32: every shape
//      of ViT-B/32's image tower, 224 x 224 in patches of 32, width 768, 12
//      heads, with 2 of its 12 blocks: SwiftShader takes about a minute an
//      image for all 12 on this project's 2 cores); and FedOTP's patch
//      features (every token projected on the GPU) equal the wasm's on f32
//      activations, row by row;
//   2. the volunteer page (an aggregator's, the default task) says where
//      image features run: "GPU (WebGPU)" with the switches and gpu=agrees
//      in its address (the GPU whenever its check image agrees); by its own
//      rule the GPU only where it computes an image sooner than the CPU
//      (the page says which, with both times); without the switches
//      (no adapter: the demo share's features are made there), and with a
//      gpu.js whose QuickGELU is wrong (served in its place: the check image
//      disagrees), the CPU and why;
//   3. a device lost mid-extraction (the page's lose-gpu-after=3: the worker
//      destroys it after 3 images, as a lost device would be lost) resumes
//      on the CPU: every image of the demo share has its features stored
//      (finite, unit length), and the page says they run on the CPU now.
//   node webgpu_page.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL.gguf OUT
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromiumTest, launchChromium, WEBGPU_SWITCHES, watchPage } from './harness.mjs';
import { png } from './image_files.mjs';
import { nativeFeatures, oneMinusCosine } from './native_features.mjs';
import { CLASSES } from './parity.mjs';
import { servePage } from './secagg_page.mjs';

const { root, build, emBuild, model, out, h } = chromiumTest();
const { check, until } = h;
const MAX_ONE_MINUS_COSINE = 1e-5;

// Random-weight models of the tiny shape (F32) and of ViT-B/32's (F32 and
// Q8_0; two blocks, one text layer), made once into BUILD_DIR/test-models.
function randomModel(name, shape, type, extra = []) {
  const dir = path.join(build, 'test-models'), file = path.join(dir, `random-${name}.${type}.gguf`);
  if (existsSync(file)) return file;
  mkdirSync(dir, { recursive: true });
  const weights = path.join(dir, `random-${name}.safetensors`);
  const run = (cmd, args) => {
    const r = spawnSync(cmd, args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`);
  };
  if (!existsSync(weights))
    run('/usr/bin/python3', [path.join(root, 'tools/make_random_clip.py'), '--shape', shape, ...extra, weights]);
  run(path.join(build, 'sdfed'), ['convert', '--in', weights, '--out', file, '--type', type]);
  return file;
}
const MODELS = [
  ['the tiny model, Q8_0', model],
  ['a tiny-shaped model, F32', randomModel('tiny', 'tiny', 'f32')],
  ...['q8_0', 'f32'].map((type) => [`a ViT-B/32-shaped model, ${type === 'f32' ? 'F32' : 'Q8_0'}`,
    randomModel('vit-b-32-2-blocks', 'vit-b-32', type, ['--vision-layers', '2', '--text-layers', '1'])]),
];

// Test images, RGBA: colour gradients with a square, of several sizes (the
// preprocessing resizes them).
const IMAGES = [[48, 40, 0], [35, 60, 1], [64, 64, 2], [30, 30, 3], [50, 45, 4]].map(([w, hgt, seed]) => {
  const rgba = new Uint8Array(w * hgt * 4);
  for (let y = 0; y < hgt; y++) for (let x = 0; x < w; x++) {
    const inSquare = x > w / 4 && x < w / 2 && y > hgt / 3 && y < (2 * hgt) / 3;
    rgba.set([(x * 5 + seed * 40) & 255, (y * 7 + seed * 20) & 255, inSquare ? 240 : (x + y + seed * 60) & 255, 255],
      4 * (y * w + x));
  }
  return { rgba: Array.from(rgba), width: w, height: hgt };
});
const files = IMAGES.map((im, i) => {
  const file = path.join(out, `image-${i}.png`);
  writeFileSync(file, png(Uint8Array.from(im.rgba), im.width, im.height));
  return file;
});


// Runs in the page: a worker (compute.js) with the model at modelUrl and
// init's options (and the task, when given), the first `count` images
// encoded; returns init's and encode's answers (features as arrays, one per
// image).
async function encodeInWorker({ modelUrl, images, count, options, task }) {
  const compute = (await import('/compute.js')).startCompute();
  const model = await (await fetch(modelUrl)).arrayBuffer();
  const info = await compute.call('init', { model, singleThreaded: true, ...options }, null, [model]);
  if (task) await compute.call('setTask', { task, index: 0 });
  const batch = images.slice(0, count).map((im) => ({ ...im, rgba: Uint8ClampedArray.from(im.rgba) }));
  const r = await compute.call('encode', { images: batch });
  compute.stop();
  const D = r.features.length / count;
  return { info, on: r.on, why: r.why, failed: r.failed,
    features: Array.from({ length: count }, (_, i) => Array.from(r.features.subarray(i * D, (i + 1) * D))) };
}

// the page's features against the native ones: the worst 1 - cosine
function worstAgainstNative(modelFile, features) {
  const native = nativeFeatures(build, ['--f32-images', '--normalize', '--model', modelFile],
    files.slice(0, features.length));
  return Math.max(...native.map((f, i) => (f.length === features[i].length ? oneMinusCosine(features[i], f) : 1)));
}

const extra = Object.fromEntries(MODELS.map(([, file], i) => [`/test/model-${i}.gguf`, file]));
const server = await servePage({ root, emBuild, model, extra });
const run = async (browser, modelIndex, count, options = { gpu: 'agrees' }, task = null) => {
  const page = await browser.newPage();
  try {
    await page.goto(`${server.url}/test/blank.html`);
    return await page.evaluate(encodeInWorker, { modelUrl: `/test/model-${modelIndex}.gguf`, images: IMAGES, count,
      options, task });
  } finally {
    await page.close();
  }
};

// The page's stored demo share (IndexedDB): its image count, and how many
// of its features are finite and of unit length.
const storedShare = (page) => page.evaluate(async () => {
  const d = await new Promise((resolve, reject) => {
    const r = indexedDB.open('sdfed');
    r.onerror = () => reject(r.error);
    r.onsuccess = () => {
      const all = r.result.transaction('datasets').objectStore('datasets').getAll();
      all.onsuccess = () => resolve(all.result[0]);
    };
  });
  const n = d.labels.length, D = d.features.length / n;
  let unit = 0;
  for (let i = 0; i < n; i++) {
    const norm = Math.hypot(...d.features.subarray(i * D, (i + 1) * D));
    if (Math.abs(norm - 1) < 1e-5) unit++;
  }
  return { n, unit };
});

// The page at address (under the aggregator), a demo share taken (unless
// not take): what it said about image features before and after, and the
// share stored.
async function demoShare(browser, address, { route = null, take = true } = {}) {
  const context = await browser.newContext();
  if (route) await context.route(...route);
  const page = await context.newPage(), watch = watchPage(page);
  try {
    await page.goto(`${h.base}${address}`);
    await until('the page', async () => (await watch.stage()) === 'empty', 120);
    const before = await watch.text('features-on');
    if (!take) return { before };
    await page.click('#demo');
    await until('the demo share', async () => (await watch.stage()) === 'ready', 300);
    return { before, after: await watch.text('features-on'), stored: await storedShare(page) };
  } catch (e) {
    console.log(watch.tail());
    throw e;
  } finally {
    await context.close();
  }
}
const CPU = /^CPU, \d+ threads?/;

const task = JSON.parse(readFileSync(path.join(root, 'tasks/fmnist-pathological.json'), 'utf8'));
const fedotp = { ...task, classes: CLASSES, method: 'fedotp' };
Object.assign(task, { model, clients: 3, rounds: 1, min_clients: 1, clients_per_round: 1 });
writeFileSync(path.join(out, 'task.json'), JSON.stringify(task));
await h.startAggregator('aggregator', ['--task', path.join(out, 'task.json'), '--state', path.join(out, 'state'),
  '--web', path.join(root, 'web'), '--wasm', path.join(emBuild, 'wasm-client')]);

try {
  // 1. each model's features on the GPU
  const gpuBrowser = await launchChromium(WEBGPU_SWITCHES);
  try {
    for (const [i, [name, file]] of MODELS.entries()) {
      const r = await run(gpuBrowser, i, 2);
      check(r.info.featuresOn === 'GPU (WebGPU)', `${name}: the worker chose the GPU (${r.info.featuresOn}` +
        `${r.info.featuresWhy ? `: ${r.info.featuresWhy}` : ''})`);
      const worst = worstAgainstNative(file, r.features);
      check(worst <= MAX_ONE_MINUS_COSINE, `${name}: the GPU's features of 2 images are the native f32 ones ` +
        `(worst 1 - cosine ${worst.toExponential(2)})`);
    }
    // FedOTP's patch features, the GPU's against the wasm's on f32 activations, row by row
    const [onGpu, onCpu] = await Promise.all([{ gpu: 'agrees' }, { gpu: 'off', int8Images: false }].map((options) =>
      run(gpuBrowser, 0, 1, options, fedotp)));
    const E = 64, rows = onGpu.features[0].length / E; // the tiny model's embed_dim
    const worstRow = Math.max(...Array.from({ length: rows }, (_, r) =>
      oneMinusCosine(onGpu.features[0].slice(r * E, (r + 1) * E), onCpu.features[0].slice(r * E, (r + 1) * E))));
    check(onGpu.info.featuresOn === 'GPU (WebGPU)' && rows === 16 && worstRow <= MAX_ONE_MINUS_COSINE,
      `FedOTP's ${rows} patch features of an image on the GPU are the wasm's (worst row's 1 - cosine ` +
      `${worstRow.toExponential(2)})`);

    // 2. the page says where features run: the GPU; 3. a device lost after 3 images
    const lost = await demoShare(gpuBrowser, '/?gpu=agrees&lose-gpu-after=3');
    check(lost.before === 'GPU (WebGPU)', `the page says image features run on the GPU: "${lost.before}"`);
    check(lost.stored.n > 3 && lost.stored.unit === lost.stored.n, `a device lost after 3 images: all ` +
      `${lost.stored.n} images of the demo share have their features stored (${lost.stored.unit} of unit length)`);
    check(CPU.test(lost.after) && /lost|destroyed/i.test(lost.after), `and the page says they run on the CPU now, ` +
      `and why: "${lost.after}"`);
    // 2. a GPU whose features disagree with the wasm's: QuickGELU's constant changed in the gpu.js served
    const wrong = readFileSync(path.join(root, 'web/gpu.js'), 'utf8').replace('x * -1.702', 'x * -1.5');
    const faulty = await demoShare(gpuBrowser, '/?gpu=agrees', { take: false, route: ['**/gpu.js', (r) => r.fulfill({ body: wrong,
      contentType: 'text/javascript' })] });
    check(CPU.test(faulty.before) && /differ from the CPU/.test(faulty.before),
      `a GPU that fails the check image: the page says the CPU computes, and why: "${faulty.before}"`);
    // 2. the page's own rule: the GPU only where it computes the check image sooner than the CPU (SwiftShader
    // does not, by far: whichever way it went, the page says so with both times)
    const own = await demoShare(gpuBrowser, '/', { take: false });
    check(own.before === 'GPU (WebGPU)' ||
      (CPU.test(own.before) && /sooner here \(an image: [0-9.]+ ms on the GPU, [0-9.]+ ms on the CPU\)/.test(own.before)),
      `the page takes the GPU only where it is faster, and says so: "${own.before}"`);
  } finally {
    await gpuBrowser.close();
  }
  // 2. no WebGPU adapter
  const cpuBrowser = await launchChromium();
  try {
    const none = await demoShare(cpuBrowser, '/');
    check(CPU.test(none.before) && /WebGPU/.test(none.before) && none.stored.n > 0 && none.stored.unit === none.stored.n,
      `without WebGPU the page says the CPU computes, and why ("${none.before}"), and the demo share's features are ` +
      `made there (${none.stored.n})`);
  } finally {
    await cpuBrowser.close();
  }
} finally {
  server.close();
  h.cleanup();
}
process.exit(h.summary('chromium-webgpu'));
