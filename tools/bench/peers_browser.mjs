// make bench, the browser peer: image features in Debian's headless Chromium
// (tests/browser/harness.mjs launches it), sdfed's wasm (the page's worker,
// web/worker.js: the single-threaded build for 1 thread, the threaded one
// for 2) next to onnxruntime-web's wasm backend (SIMD, ort.env.wasm.numThreads
// 1 or 2) on the same model, exported by clip_onnx.py from the same weights.
// One fresh browser per timed run. The pages come from a
// real aggregator on loopback (cross-origin isolated: COOP/COEP, which the
// wasm threads of both need) whose web folder holds the page's files and a
// link to the project, for the models and onnxruntime-web's files.
// Each first encodes the check images (WORK/onnx/MODEL/check.rgb, and
// check.pixels for ONNX Runtime) and compares their features with REFERENCE
// (native sdfed's f32 features, one line per image), then times
// one image at a time (ort_features.mjs for ONNX Runtime, sdfed_features.mjs
// for sdfed: the worker's encode op, which includes sdfed's preprocessing of
// the RGBA image; ONNX Runtime's also by its minimal harness). sdfed's Q8_0
// runs five ways: in integer products (q8_0, on the kernels and the dot the
// page chooses), with each integer dot asked for (q8_0-dot-relaxed, relaxed
// SIMD's; q8_0-dot-simd128, SIMD128's; both with relaxed SIMD's f32
// multiply-add as the page's own), on SIMD128's kernels alone (q8_0-simd128,
// relaxed SIMD off) and on f32 activations (q8_0-f32-act,
// wc_set_int8_images(0)). The runs of one weights and thread count (sdfed's
// and ONNX Runtime's) go in turn, a timed run of each per round (each round
// starting one run further on), their rates the medians of REPEATS rounds
// (they are set against each other: a shared machine's load must fall on
// all of them alike).
// Prints one line per run (WEIGHTS: f32, q8_0, q8_0-dot-relaxed,
// q8_0-dot-simd128, q8_0-simd128, q8_0-f32-act for sdfed, which also names
// its kernels and their products, the worker's init's; f32, int8 for
// onnxruntime-web, with its minimal harness's figure):
//   chromium RUNTIME WEIGHTS THREADS: images_per_s=... max_abs=... one_minus_cos=... threads_used=...
//     [kernels=... dot=relaxed|simd128 dot_form=split|unsigned|signed|none madd=fused|unfused packed_mb=MB]
//     [minimal_images_per_s=...] rounds=RATE,... [round_dots=DOT,...]
//   (packed_mb: the image tower's matrices packed once, as the page packs them on this device, web/memory.js;
//   rounds: the rates of the run's rounds, in order; images_per_s their median, minimal_images_per_s
//   the median of its rounds' too; round_dots, sdfed's: the integer dot each round's page ran, the page's
//   choice made anew in each fresh Chromium)
// With `webgpu` for the threads, Chromium has WebGPU (on SwiftShader's
// software Vulkan where it has no other GPU: WEBGPU_SWITCHES) and the runs
// are sdfed's image features on it (web/gpu.js; f32 and q8_0, the worker's
// own choice of the GPU required) and onnxruntime-web's WebGPU backend
// (ort.webgpu.min.mjs; f32), on the same adapter, then sdfed's wasm on 2
// threads (f32, and q8_0 in integers) in the same browser:
//   chromium RUNTIME WEIGHTS webgpu: images_per_s=... max_abs=... one_minus_cos=... on=gpu|cpu adapter=VENDOR/ARCH
// (on: where sdfed's worker computed them; ONNX Runtime's say gpu)
//   node peers_browser.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR WORK_DIR ONNX_DIR REFERENCE F32.gguf Q8_0.gguf
//                          IMAGES REPEATS [THREADS... | webgpu]
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { harness, launchChromium, WEBGPU_SWITCHES } from '../../tests/browser/harness.mjs';
import { compareFeatures, median, WARM_UP_MS } from './ort_features.mjs';
import { sdfedImageFeatures } from './sdfed_features.mjs';
import { scriptHelp } from '../help.mjs';
scriptHelp(import.meta.url);

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const [build, emBuild, work, onnxDir, reference, f32Model, q8Model] = process.argv.slice(2, 9).map((p) => path.resolve(p));
const images = Number(process.argv[9] || 8), repeats = Number(process.argv[10] || 3);
const threadCounts = process.argv.slice(11).map((t) => (t === 'webgpu' ? t : Number(t)));
if (!threadCounts.length) threadCounts.push(1, 2);
const url = (file) => `/project/${path.relative(root, file)}`;
const expected = readFileSync(reference, 'utf8').trim().split('\n').map((l) => l.trim().split(/\s+/).map(Number));

// the web folder: the page's files, and the project under /project/
const web = path.join(work, 'peers-web');
rmSync(web, { recursive: true, force: true });
mkdirSync(web, { recursive: true });
for (const name of readdirSync(path.join(root, 'web'))) symlinkSync(path.join(root, 'web', name), path.join(web, name));
symlinkSync(root, path.join(web, 'project'));
const task = JSON.parse(readFileSync(path.join(root, 'tasks/fmnist-pathological.json'), 'utf8'));
Object.assign(task, { model: path.join(root, 'models/fmnist-tiny-clip.q8_0.gguf'), rounds: 1 });
writeFileSync(path.join(work, 'peers-task.json'), JSON.stringify(task));
const h = harness(work, root, build), state = path.join(work, `peers-state-${process.pid}`);
await h.startAggregator('peers-aggregator', ['--task', path.join(work, 'peers-task.json'), '--state', state, '--web',
  web, '--wasm', path.join(emBuild, 'wasm-client')]);

// sdfed in the page's worker (sdfed_features.mjs): {features, imagesPerS, kernels, dot, madd, threadsUsed,
// featuresOn}; relaxed: {relaxedSimd, dot} as the worker's init takes them; reps: the timed runs
async function sdfedRun(page, model, threads, int8, relaxed = {}, gpu = false, reps = repeats) {
  const r = await page.evaluate(sdfedImageFeatures, { modelUrl: url(model),
    rgbUrl: url(path.join(onnxDir, 'check.rgb')), count: expected.length, single: threads === 1, int8, ...relaxed,
    images, repeats: reps, warmUpMs: WARM_UP_MS, gpu });
  return { ...r, threadsUsed: r.threaded ? await page.evaluate(() => navigator.hardwareConcurrency) : 1 };
}

// onnxruntime-web in the page (its WebGPU backend with provider 'webgpu'), reps timed runs: {features,
// imagesPerS, minimalImagesPerS, threadsUsed}; its threads as it documents them, ort.env.wasm.numThreads
async function ortRun(page, weights, threads, { provider, reps = repeats } = {}) {
  return page.evaluate(async ({ ortUrl, codeUrl, dir, weights: w, threads: t, count, n, r, provider: p }) => {
    const ort = await import(ortUrl);
    const { ortImageFeatures } = await import(codeUrl);
    ort.env.wasm.numThreads = t;
    ort.env.wasm.wasmPaths = ortUrl.slice(0, ortUrl.lastIndexOf('/') + 1);
    const config = await (await fetch(`${dir}/config.json`)).json();
    const pixels = new Float32Array(await (await fetch(`${dir}/check.pixels`)).arrayBuffer());
    const model = new Uint8Array(await (await fetch(`${dir}/image.${w}.onnx`)).arrayBuffer());
    const result = await ortImageFeatures(ort, model, { size: config.image_size, pixels, count, images: n,
      repeats: r, provider: p });
    return { ...result, threadsUsed: ort.env.wasm.numThreads };
  }, { ortUrl: url(path.join(here, `node_modules/onnxruntime-web/dist/ort.${provider || 'wasm'}.min.mjs`)),
    codeUrl: url(path.join(here, 'ort_features.mjs')), dir: url(onnxDir), weights, threads, count: expected.length,
    n: images, r: reps, provider });
}

// A run's line: its rate and its features against the reference
const line = (name, r, extra = '') => {
  const { maxAbs, oneMinusCos } = compareFeatures(r.features, expected);
  return `chromium ${name}: images_per_s=${r.imagesPerS.toFixed(4)} max_abs=${maxAbs.toExponential(2)} ` +
    `one_minus_cos=${oneMinusCos.toExponential(2)}${extra}`;
};

// A run's line (RUNTIME: sdfed, which names its kernels and their products, or onnxruntime-web, with its
// minimal harness's figure; then more), or its error's.
function report(runtime, name, r, error, more = '') {
  if (error) {
    console.log(`chromium ${runtime} ${name}: error=${JSON.stringify(error.message.split('\n')[0])}`);
    return;
  }
  const extra = runtime === 'sdfed'
    ? ` kernels=${r.kernels} dot=${r.dot} dot_form=${r.dotForm || 'none'} madd=${r.madd} packed_mb=` +
      (r.packedBytes / 1e6).toFixed(1)
    : ` minimal_images_per_s=${r.minimalImagesPerS.toFixed(4)}`;
  console.log(line(`${runtime} ${name}`, r, ` threads_used=${r.threadsUsed}${extra}${more}`));
}

// run(page) in a fresh Chromium, on a page of the aggregator's origin (cross-origin isolated) that stays put.
async function inChromium(run) {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.goto(`${h.base}/task`);
    if (!(await page.evaluate(() => self.crossOriginIsolated)))
      throw new Error('the page is not cross-origin isolated: no wasm threads');
    return await run(page);
  } finally {
    await browser.close();
  }
}

// The WebGPU runs (see the top), in one browser with WebGPU.
async function webgpuRuns(page) {
  const adapter = await page.evaluate(async () => {
    const a = navigator.gpu && await navigator.gpu.requestAdapter();
    return a ? `${a.info.vendor || 'unknown'}/${a.info.architecture || 'unknown'}` : 'none';
  });
  const runs = [
    ['sdfed-webgpu f32 webgpu', () => sdfedRun(page, f32Model, 2, false, {}, true)],
    ['sdfed-webgpu q8_0 webgpu', () => sdfedRun(page, q8Model, 2, true, {}, true)],
    ['onnxruntime-web-webgpu f32 webgpu', () => ortRun(page, 'f32', 1, { provider: 'webgpu' })],
    ['sdfed f32 2', () => sdfedRun(page, f32Model, 2, true)],
    ['sdfed q8_0 2', () => sdfedRun(page, q8Model, 2, true)],
  ];
  for (const [name, run] of runs) {
    try {
      const r = await run();
      const on = r.featuresOn === undefined || r.featuresOn.startsWith('GPU') ? 'gpu' : 'cpu';
      console.log(line(name, r, ` on=${on} adapter=${adapter}`));
    } catch (e) {
      console.log(`chromium ${name}: error=${JSON.stringify(e.message.split('\n')[0])}`);
    }
  }
}

try {
  if (threadCounts[0] === 'webgpu') {
    const browser = await launchChromium(WEBGPU_SWITCHES);
    try {
      const page = await browser.newPage();
      await page.goto(`${h.base}/task`);
      await webgpuRuns(page);
    } finally {
      await browser.close();
    }
  }
  for (const threads of threadCounts.filter((t) => t !== 'webgpu')) {
    for (const [weights, ortWeights, model] of [['f32', 'f32', f32Model], ['q8_0', 'int8', q8Model]]) {
      const sdfed = (int8, relaxed = {}) => () => inChromium((page) => sdfedRun(page, model, threads, int8, relaxed,
        false, 1));
      // [the line's name, its run]: f32 against f32; Q8_0 in integers on the page's choice of kernels and dot,
      // with each dot asked for, on SIMD128's kernels alone, on f32 activations, then ONNX Runtime's int8
      const runs = weights === 'f32' ? [['sdfed f32', sdfed(true)]]
        : [['sdfed q8_0', sdfed(true)], ['sdfed q8_0-dot-relaxed', sdfed(true, { dot: 'relaxed' })],
          ['sdfed q8_0-dot-simd128', sdfed(true, { dot: 'simd128' })],
          ['sdfed q8_0-simd128', sdfed(true, { relaxedSimd: false })], ['sdfed q8_0-f32-act', sdfed(false)]];
      runs.push([`onnxruntime-web ${ortWeights}`, () => inChromium((page) => ortRun(page, ortWeights, threads, { reps: 1 }))]);
      // `repeats` rounds of one timed run of each in turn, each in a fresh Chromium, so that the load of a shared
      // machine falls on them alike, each round starting one run further on, so that no run always comes first
      // (after the previous Chromium's exit); each line's rates the medians of its rounds (listed in round order)
      const rounds = runs.map(() => []);
      const failed = runs.map(() => null);
      for (let round = 0; round < repeats; round++) {
        for (let turn = 0; turn < runs.length; turn++) {
          const i = (round + turn) % runs.length, [, run] = runs[i];
          if (failed[i]) continue;
          try {
            rounds[i].push(await run());
          } catch (e) {
            failed[i] = e;
          }
        }
      }
      for (const [i, [name]] of runs.entries()) {
        const [runtime, weightsName] = name.split(' ');
        const rates = rounds[i].map((x) => x.imagesPerS);
        const r = failed[i] ? null : { ...rounds[i][0], imagesPerS: median(rates) };
        if (r && runtime !== 'sdfed') r.minimalImagesPerS = median(rounds[i].map((x) => x.minimalImagesPerS));
        const dots = runtime === 'sdfed' ? ` round_dots=${rounds[i].map((x) => x.dot).join(',')}` : '';
        report(runtime, `${weightsName} ${threads}`, r, failed[i],
          ` rounds=${rates.map((x) => x.toFixed(4)).join(',')}${dots}`);
      }
    }
  }
} finally {
  await h.stopAggregator();
  rmSync(state, { recursive: true, force: true }); // the federation's store: nothing in it is needed
}
