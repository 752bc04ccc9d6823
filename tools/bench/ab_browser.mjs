// Two builds of the page's module against each other in Chromium: both
// loaded in one dedicated worker (the page's way: a worker, the module's
// own threads for THREADS above 1 on a cross-origin-isolated origin), the
// same model and image, then image features of IMAGES images by one build,
// then by the other, PAIRS times. On a machine others share, whose speed
// moves by a quarter and more between runs, only such alternating pairs
// tell two builds apart. Each build packs the image tower's matrices once
// where it can (wc_pack_image_weights, as the page does where its memory
// allows). Prints each build's kernels and products, whether
// their features are the same bits, each pair's rates and ratio, and
//   ab NEW/OLD THREADS threads: median R, geometric mean G, P of N pairs above 1.0
// Not part of make bench (a developer's comparison of two trees):
//   node tools/bench/ab_browser.mjs OLD_EMSCRIPTEN_BUILD NEW_EMSCRIPTEN_BUILD MODEL.gguf [THREADS [IMAGES [PAIRS [INT8]]]]
// THREADS 1 (the single-threaded module) by default, IMAGES 1, PAIRS 20,
// INT8 1 (Q8_0 in integers; 0: on f32 activations); a build is a folder
// that `make web` filled (build/targets/emscripten, or a copy of its
// wasm-client folder's parent), e.g.
//   mkdir -p /tmp/old && cp -r build/targets/emscripten/wasm-client /tmp/old/   (then change, make web)
//   node tools/bench/ab_browser.mjs /tmp/old build/targets/emscripten build/bench/vitb16.q8_0.gguf 1 1 40
import { existsSync } from 'node:fs';
import path from 'node:path';
import { launchChromium } from '../../tests/browser/harness.mjs';
import { makeModuleSource, moduleFiles, moduleName, serveWorker } from './module_worker.mjs';
import { scriptHelp } from '../help.mjs';
scriptHelp(import.meta.url);

const [oldBuild, newBuild, model] = process.argv.slice(2, 5).map((p) => p && path.resolve(p));
const [threads, images, pairs, int8] = [[5, 1], [6, 1], [7, 20], [8, 1]].map(([i, d]) => Number(process.argv[i] ?? d));
if (!model || ![threads, images, pairs].every((n) => Number.isInteger(n) && n > 0) || ![0, 1].includes(int8)) {
  console.error('usage: node tools/bench/ab_browser.mjs OLD_EMSCRIPTEN_BUILD NEW_EMSCRIPTEN_BUILD MODEL.gguf ' +
    '[THREADS [IMAGES [PAIRS [INT8]]]]   (--help: what it does)');
  process.exit(2);
}
const name = moduleName(threads);
const files = { ...moduleFiles('ab_browser', oldBuild, 'old', threads),
  ...moduleFiles('ab_browser', newBuild, 'new', threads) };
if (!existsSync(model)) {
  console.error(`ab_browser: no model file '${model}'`);
  process.exit(2);
}

// The worker: each build's module made as web/worker.js makes it, a model
// loaded into each, then the pairs; posts {labels, same, rates}.
const worker = `
importScripts('/old/${name}.js'); const createOld = createSdfed;
importScripts('/new/${name}.js'); const createNew = createSdfed;
${makeModuleSource(threads)}
async function make(create, tag, int8) {
  const { M, used, rgba, features, size, dim } = await makeModule(create, tag);
  M._wc_set_int8_images(int8);
  const packed = M._wc_pack_image_weights ? M._wc_pack_image_weights() >>> 0 : 0;
  M._wc_encode_image(rgba, size, size, features);
  const label = tag + ': ' + used + ' thread(s), kernels ' + M.UTF8ToString(M._wc_kernels()) + ', dot ' +
    M.UTF8ToString(M._wc_int8_dot()) + ', madd ' + M.UTF8ToString(M._wc_f32_madd()) + ', ' +
    (packed / 1e6).toFixed(1) + ' MB packed once';
  const bits = new Uint32Array(M.HEAPU8.buffer.slice(features, features + dim * 4));
  const rate = (n) => {
    const t = performance.now();
    for (let i = 0; i < n; i++) M._wc_encode_image(rgba, size, size, features);
    return n * 1000 / (performance.now() - t);
  };
  return { label, bits, rate };
}
onmessage = async (e) => {
  try {
    const { images, pairs, int8 } = e.data;
    const builds = [await make(createOld, 'old', int8), await make(createNew, 'new', int8)];
    const same = builds[0].bits.every((b, i) => b === builds[1].bits[i]);
    const rates = [];
    for (let k = 0; k < pairs; k++) rates.push([builds[0].rate(images), builds[1].rate(images)]);
    postMessage({ labels: builds.map((b) => b.label), same, rates });
  } catch (err) {
    postMessage({ error: String(err && err.stack || err) });
  }
};`;

const server = await serveWorker({ emBuild: newBuild, model, files, worker });
const browser = await launchChromium();
try {
  const page = await browser.newPage();
  await page.goto(`${server.url}/test/blank.html`);
  const result = await page.evaluate((args) => new Promise((resolve, reject) => {
    const w = new Worker('/bench_worker.js');
    w.onmessage = (e) => resolve(e.data);
    w.onerror = (e) => reject(new Error(e.message));
    w.postMessage(args);
  }), { images, pairs, int8 });
  if (result.error) throw new Error(result.error);
  for (const label of result.labels) console.log(label);
  console.log(`features: ${result.same ? 'the same bits' : 'NOT the same bits'}`);
  const ratios = result.rates.map(([old, now]) => now / old);
  result.rates.forEach(([old, now], k) =>
    console.log(`pair ${k + 1}: old ${old.toFixed(3)} img/s, new ${now.toFixed(3)} img/s, new/old ${ratios[k].toFixed(3)}`));
  const sorted = [...ratios].sort((a, b) => a - b);
  const median = sorted.length % 2 ? sorted[(sorted.length - 1) / 2]
    : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
  const geometric = Math.exp(ratios.reduce((s, r) => s + Math.log(r), 0) / ratios.length);
  console.log(`ab new/old ${threads} threads: median ${median.toFixed(3)}, geometric mean ${geometric.toFixed(3)}, ` +
    `${ratios.filter((r) => r > 1).length} of ${ratios.length} pairs above 1.0`);
} finally {
  await browser.close();
  server.close();
}
