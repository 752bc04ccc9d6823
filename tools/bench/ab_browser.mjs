// Two builds of the page's module against each other in Chromium: both
// loaded in one dedicated worker (the page's way: a worker, the module's
// own threads for THREADS above 1 on a cross-origin-isolated origin), the
// same model and image, then image features of IMAGES images by one build,
// then by the other, PAIRS times. On a machine others share, whose speed
// moves by a quarter and more between runs, only such alternating pairs
// tell two builds apart. Prints each build's kernels and products, whether
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
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../../tests/browser/harness.mjs';
import { servePage } from '../../tests/browser/secagg_page.mjs';
import { scriptHelp } from '../help.mjs';
scriptHelp(import.meta.url);

const [oldBuild, newBuild, model] = process.argv.slice(2, 5).map((p) => p && path.resolve(p));
const [threads, images, pairs, int8] = [[5, 1], [6, 1], [7, 20], [8, 1]].map(([i, d]) => Number(process.argv[i] ?? d));
if (!model || ![threads, images, pairs].every((n) => Number.isInteger(n) && n > 0) || ![0, 1].includes(int8)) {
  console.error('usage: node tools/bench/ab_browser.mjs OLD_EMSCRIPTEN_BUILD NEW_EMSCRIPTEN_BUILD MODEL.gguf ' +
    '[THREADS [IMAGES [PAIRS [INT8]]]]   (--help: what it does)');
  process.exit(2);
}
const name = threads > 1 ? 'sdfed-wasm-threads' : 'sdfed-wasm';
const files = {};
for (const [tag, build] of [['old', oldBuild], ['new', newBuild]])
  for (const ext of threads > 1 ? ['js', 'wasm', 'worker.js'] : ['js', 'wasm']) {
    const file = path.join(build, 'wasm-client', `${name}.${ext}`);
    if (!existsSync(file)) {
      console.error(`ab_browser: no ${file} (make web builds it)`);
      process.exit(2);
    }
    files[`/${tag}/${name}.${ext}`] = file;
  }
if (!existsSync(model)) {
  console.error(`ab_browser: no model file '${model}'`);
  process.exit(2);
}

// The worker: each build's module made as web/worker.js makes it, a model
// loaded into each, then the pairs; posts {labels, same, rates}.
const worker = `
importScripts('/old/${name}.js'); const createOld = createSdfed;
importScripts('/new/${name}.js'); const createNew = createSdfed;
async function make(create, tag, threads, int8) {
  const threaded = threads > 1;
  const memory = threaded ? new WebAssembly.Memory({ initial: 512, maximum: 32768, shared: true }) : null;
  const M = await create({ locateFile: (file) => '/' + tag + '/' + file,
    ...(threaded ? { wasmMemory: memory, mainScriptUrlOrBlob: '/' + tag + '/${name}.js' } : {}) });
  const used = threaded ? M._wc_set_threads(threads) : 1;
  const bytes = new Uint8Array(await (await fetch('/test/model.gguf')).arrayBuffer());
  const p = M._malloc(bytes.length);
  M.HEAPU8.set(bytes, p);
  if (M._wc_load_model(p, bytes.length)) throw new Error(tag + ': the module refused the model');
  M._wc_set_int8_images(int8);
  const size = M._wc_image_size(), dim = M._wc_embed_dim();
  const rgba = M._malloc(size * size * 4), features = M._malloc(dim * 4);
  for (let i = 0; i < size * size * 4; i++) M.HEAPU8[rgba + i] = (i * 31 + (i >> 12)) & 255;
  M._wc_encode_image(rgba, size, size, features);
  const label = tag + ': ' + used + ' thread(s), kernels ' + M.UTF8ToString(M._wc_kernels()) + ', dot ' +
    M.UTF8ToString(M._wc_int8_dot()) + ', madd ' + M.UTF8ToString(M._wc_f32_madd());
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
    const { threads, images, pairs, int8 } = e.data;
    const builds = [await make(createOld, 'old', threads, int8), await make(createNew, 'new', threads, int8)];
    const same = builds[0].bits.every((b, i) => b === builds[1].bits[i]);
    const rates = [];
    for (let k = 0; k < pairs; k++) rates.push([builds[0].rate(images), builds[1].rate(images)]);
    postMessage({ labels: builds.map((b) => b.label), same, rates });
  } catch (err) {
    postMessage({ error: String(err && err.stack || err) });
  }
};`;

// served cross-origin isolated as the aggregator serves the page (tests/browser/secagg_page.mjs)
const work = mkdtempSync(path.join(os.tmpdir(), 'ab-browser-'));
writeFileSync(path.join(work, 'ab_worker.js'), worker);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const server = await servePage({ root, emBuild: newBuild, model,
  extra: { ...files, '/ab_worker.js': path.join(work, 'ab_worker.js') } });
const browser = await launchChromium();
try {
  const page = await browser.newPage();
  await page.goto(`${server.url}/test/blank.html`);
  const result = await page.evaluate((args) => new Promise((resolve, reject) => {
    const w = new Worker('/ab_worker.js');
    w.onmessage = (e) => resolve(e.data);
    w.onerror = (e) => reject(new Error(e.message));
    w.postMessage(args);
  }), { threads, images, pairs, int8 });
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
  rmSync(work, { recursive: true, force: true });
}
