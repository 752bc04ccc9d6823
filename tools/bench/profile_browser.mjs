// tools/bench/profile.sh --browser's run: the page's module encoding images
// in a dedicated worker of Debian's Chromium (the page's way: the module's
// own threads for THREADS above 1, cross-origin isolated), V8 naming its
// compiled functions for perf (--perf-basic-prof: /tmp/perf-PID.map), and
// `perf record -a` sampling the machine while IMAGES images are encoded,
// after untimed images for ort_features.mjs's WARM_UP_MS (every function
// at its last tier), the image
// tower's matrices packed once first, as the page packs them where its
// memory allows (wc_pack_image_weights). BUILD: an
// Emscripten build whose module keeps its functions' names (profile.sh
// makes one with --profiling-funcs). Prints the rate and the products the
// module ran:
//   profile-browser THREADS threads: images_per_s=... kernels=... dot=... madd=...
// With `jit` last, V8 writes its compiled code into jit-PID.dump files in
// the working directory instead of naming it in V8_LOG's maps (--perf-prof,
// the renderers started as they are, not forked; perf on that code's clock),
// for perf inject --jit and perf annotate (profile.sh --annotate).
//   node tools/bench/profile_browser.mjs BUILD MODEL.gguf THREADS IMAGES PERF_DATA V8_LOG [jit]
import { spawn } from 'node:child_process';
import path from 'node:path';
import { launchChromium } from '../../tests/browser/harness.mjs';
import { WARM_UP_MS } from './ort_features.mjs';
import { makeModuleSource, moduleFiles, moduleName, serveWorker } from './module_worker.mjs';
import { scriptHelp } from '../help.mjs';
scriptHelp(import.meta.url);

const [build, model] = process.argv.slice(2, 4).map((p) => p && path.resolve(p));
const [threads, images] = [4, 5].map((i) => Number(process.argv[i]));
const [perfData, v8Log] = process.argv.slice(6, 8).map((p) => p && path.resolve(p));
const jit = process.argv[8] === 'jit';
if (!build || !model || !perfData || !v8Log || ![threads, images].every((n) => Number.isInteger(n) && n > 0) ||
    (process.argv[8] && !jit)) {
  console.error('usage: node tools/bench/profile_browser.mjs BUILD MODEL.gguf THREADS IMAGES PERF_DATA V8_LOG [jit] ' +
    '(--help: what it does)');
  process.exit(2);
}
const files = moduleFiles('profile_browser', build, 'profiled', threads);

// The worker: the module made as web/worker.js makes it, the model loaded,
// 3 images, then 'ready'; on 'go', IMAGES images timed, then the result.
const worker = `
importScripts('/profiled/${moduleName(threads)}.js');
${makeModuleSource(threads)}
let M, rgba, features, size;
onmessage = async (e) => {
  try {
    if (e.data === 'load') {
      ({ M, rgba, features, size } = await makeModule(createSdfed, 'profiled'));
      M._wc_pack_image_weights();
      const warming = performance.now();
      do M._wc_encode_image(rgba, size, size, features); while (performance.now() - warming < ${WARM_UP_MS});
      postMessage('ready');
      return;
    }
    const t = performance.now();
    for (let i = 0; i < ${images}; i++) M._wc_encode_image(rgba, size, size, features);
    postMessage({ rate: ${images} * 1000 / (performance.now() - t), kernels: M.UTF8ToString(M._wc_kernels()),
      dot: M.UTF8ToString(M._wc_int8_dot()), madd: M.UTF8ToString(M._wc_f32_madd()) });
  } catch (err) {
    postMessage({ error: String(err && err.stack || err) });
  }
};`;

const server = await serveWorker({ emBuild: build, model, files, worker });
const browser = await launchChromium(jit
  ? ['--js-flags=--perf-prof --perf-prof-annotate-wasm --no-write-protect-code-memory', '--no-zygote']
  : [`--js-flags=--perf-basic-prof --logfile=${v8Log} --no-logfile-per-isolate`]);
let perf = null;
try {
  const page = await browser.newPage();
  await page.goto(`${server.url}/test/blank.html`);
  // perf starts once the worker is ready (loading and the warm-up unsampled) and stops after the images
  await page.exposeFunction('sampleNow', () => new Promise((resolve, reject) => {
    perf = spawn('perf', ['record', '-q', ...(jit ? ['-k', '1'] : []), '-a', '-F', '999', '-o', perfData],
      { stdio: ['ignore', 'inherit', 'inherit'] });
    perf.on('error', reject);
    setTimeout(resolve, 500); // perf's own start
  }));
  const result = await page.evaluate(() => new Promise((resolve, reject) => {
    const w = new Worker('/bench_worker.js');
    w.onmessage = async (e) => {
      if (e.data === 'ready') {
        await window.sampleNow();
        w.postMessage('go');
      } else {
        resolve(e.data);
      }
    };
    w.onerror = (e) => reject(new Error(e.message));
    w.postMessage('load');
  }));
  if (result.error) throw new Error(result.error);
  console.log(`profile-browser ${threads} threads: images_per_s=${result.rate.toFixed(4)} kernels=${result.kernels} ` +
    `dot=${result.dot} madd=${result.madd}`);
} finally {
  if (perf) {
    const stopped = new Promise((resolve) => perf.on('exit', resolve));
    perf.kill('SIGINT');
    await stopped;
  }
  await browser.close();
  server.close();
}
