// make bench, the browser peer: image features in Debian's headless Chromium
// (tests/browser/harness.mjs launches it), sdfed's wasm (the page's worker,
// web/worker.js: the single-threaded build for 1 thread, the threaded one
// for 2) next to onnxruntime-web's wasm backend (SIMD, ort.env.wasm.numThreads
// 1 or 2) on the same model, exported by clip_onnx.py from the same weights.
// One fresh browser per runtime, weights and threads. The pages come from a
// real aggregator on loopback (cross-origin isolated: COOP/COEP, which the
// wasm threads of both need) whose web folder holds the page's files and a
// link to the project, for the models and onnxruntime-web's files.
// Each first encodes the check images (WORK/onnx/MODEL/check.rgb, and
// check.pixels for ONNX Runtime) and compares their features with REFERENCE
// (native sdfed's f32 features, one line per image), then times
// one image at a time (ort_features.mjs for ONNX Runtime, the worker's encode
// op for sdfed, which includes sdfed's preprocessing of the RGBA image).
// Prints one line per run:
//   chromium RUNTIME WEIGHTS THREADS: images_per_s=... max_abs=... one_minus_cos=... threads_used=...
//   node peers_browser.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR WORK_DIR ONNX_DIR REFERENCE F32.gguf Q8_0.gguf
//                          IMAGES REPEATS [THREADS...]
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { harness, launchChromium } from '../../tests/browser/harness.mjs';
import { compareFeatures } from './ort_features.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const [build, emBuild, work, onnxDir, reference, f32Model, q8Model] = process.argv.slice(2, 9).map((p) => path.resolve(p));
const images = Number(process.argv[9] || 8), repeats = Number(process.argv[10] || 3);
const threadCounts = process.argv.slice(11).map(Number);
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

// sdfed in the page's worker: {features, imagesPerS, threadsUsed}
async function sdfedRun(page, model, threads) {
  return page.evaluate(async ({ modelUrl, rgbUrl, count, single, n, r }) => {
    const compute = (await import('/compute.js')).startCompute();
    const call = (op, args, transfer) => compute.call(op, args, null, transfer);
    const model = await (await fetch(modelUrl)).arrayBuffer();
    const info = await call('init', { model, singleThreaded: single }, [model]);
    const S = info.imageSize, rgb = new Uint8Array(await (await fetch(rgbUrl)).arrayBuffer());
    const rgba = (i) => {
      const out = new Uint8ClampedArray(S * S * 4);
      for (let p = 0; p < S * S; p++) {
        for (let c = 0; c < 3; c++) out[p * 4 + c] = rgb[(i * S * S + p) * 3 + c];
        out[p * 4 + 3] = 255;
      }
      return { rgba: out, width: S, height: S };
    };
    const check = Array.from({ length: count }, (_, i) => rgba(i));
    const { features } = await call('encode', { images: check });
    const D = features.length / count;
    await call('encode', { images: [check[0]] }); // warm-up
    const rates = [];
    for (let k = 0; k < r; k++) {
      const { seconds } = await call('encode', { images: Array.from({ length: n }, () => check[0]) });
      rates.push(n / seconds);
    }
    compute.stop();
    rates.sort((a, b) => a - b);
    return { features: Array.from({ length: count }, (_, i) => Array.from(features.slice(i * D, (i + 1) * D))),
      imagesPerS: rates[Math.floor(r / 2)], threadsUsed: info.threaded ? navigator.hardwareConcurrency : 1 };
  }, { modelUrl: url(model), rgbUrl: url(path.join(onnxDir, 'check.rgb')), count: expected.length,
    single: threads === 1, n: images, r: repeats });
}

// onnxruntime-web in the page: {features, imagesPerS, threadsUsed}
async function ortRun(page, weights, threads) {
  return page.evaluate(async ({ ortUrl, codeUrl, dir, weights: w, threads: t, count, n, r }) => {
    const ort = await import(ortUrl);
    const { ortImageFeatures } = await import(codeUrl);
    ort.env.wasm.numThreads = t;
    ort.env.wasm.simd = true;
    ort.env.wasm.wasmPaths = ortUrl.slice(0, ortUrl.lastIndexOf('/') + 1);
    const config = await (await fetch(`${dir}/config.json`)).json();
    const pixels = new Float32Array(await (await fetch(`${dir}/check.pixels`)).arrayBuffer());
    const model = new Uint8Array(await (await fetch(`${dir}/image.${w}.onnx`)).arrayBuffer());
    const result = await ortImageFeatures(ort, model, { threads: t, size: config.image_size, pixels, count, images: n,
      repeats: r });
    return { ...result, threadsUsed: ort.env.wasm.numThreads };
  }, { ortUrl: url(path.join(here, 'node_modules/onnxruntime-web/dist/ort.wasm.min.mjs')),
    codeUrl: url(path.join(here, 'ort_features.mjs')), dir: url(onnxDir), weights, threads, count: expected.length,
    n: images, r: repeats });
}

try {
  for (const threads of threadCounts) {
    for (const [weights, ortWeights, model] of [['f32', 'f32', f32Model], ['q8_0', 'int8', q8Model]]) {
      for (const runtime of ['sdfed', 'onnxruntime-web']) {
        const browser = await launchChromium();
        try {
          const page = await browser.newPage();
          const lines = [];
          page.on('console', (m) => lines.push(m.text()));
          page.on('pageerror', (e) => lines.push(e.message));
          await page.goto(`${h.base}/task`); // a page of the origin (cross-origin isolated) that stays put
          const crossOriginIsolated = await page.evaluate(() => self.crossOriginIsolated);
          if (!crossOriginIsolated) throw new Error('the page is not cross-origin isolated: no wasm threads');
          const r = runtime === 'sdfed' ? await sdfedRun(page, model, threads) : await ortRun(page, ortWeights, threads);
          const { maxAbs, oneMinusCos } = compareFeatures(r.features, expected);
          console.log(`chromium ${runtime} ${runtime === 'sdfed' ? weights : ortWeights} ${threads}: ` +
            `images_per_s=${r.imagesPerS.toFixed(4)} max_abs=${maxAbs.toExponential(2)} ` +
            `one_minus_cos=${oneMinusCos.toExponential(2)} threads_used=${r.threadsUsed}`);
        } catch (e) {
          console.log(`chromium ${runtime} ${weights} ${threads}: error=${JSON.stringify(e.message.split('\n')[0])}`);
        } finally {
          await browser.close();
        }
      }
    }
  }
} finally {
  await h.stopAggregator();
  rmSync(state, { recursive: true, force: true }); // the federation's store: nothing in it is needed
}
