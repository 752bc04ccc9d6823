// make bench, the browser's measured peaks: peak_simd128.c (built here
// by clang for wasm32, no libc) in Debian's headless Chromium, in 1 and 2
// Web Workers at once (each with its own instance: no shared memory needed);
// the median of REPEATS runs of about 300 ms. The yardsticks for the wasm
// kernels' FLOP/s and integer operations per second (flops.py; 2 a
// multiply-add). Prints:
//   peak chromium simd128 THREADS: gflops=...
//   peak chromium relaxed-madd THREADS: gflops=...  (f32x4.relaxed_madd, fused here or not)
//   peak int8 chromium simd128 THREADS: gops=...   (i32x4.dot_i16x8_s, the SIMD128 integer tile's)
//   peak int8 chromium relaxed-dot THREADS: gops=...   (i32x4.relaxed_dot_i8x16_i7x16_add_s, the relaxed tile's)
//   node peak_browser.mjs WORK_DIR [REPEATS]
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../../tests/browser/harness.mjs';
import { scriptHelp } from '../help.mjs';
scriptHelp(import.meta.url);

const here = path.dirname(fileURLToPath(import.meta.url));
const work = path.resolve(process.argv[2]), repeats = Number(process.argv[3] || 5);
mkdirSync(work, { recursive: true });
const wasm = path.join(work, 'peak_simd128.wasm');
const object = path.join(work, 'peak_simd128.o');
execFileSync('clang-16', ['--target=wasm32', '-O2', '-msimd128', '-mrelaxed-simd', '-c', '-o', object,
  path.join(here, 'peak_simd128.c')]);
execFileSync('wasm-ld-16', ['--no-entry', '--export-dynamic', '-o', wasm, object]);
const bytes = Array.from(readFileSync(wasm));

const browser = await launchChromium();
try {
  const page = await browser.newPage();
  await page.setContent('<!doctype html><title>peak</title>');
  const results = await page.evaluate(async ({ bytes: b, repeats: r }) => {
    const source = `onmessage = async ({ data }) => {
      const { instance } = await WebAssembly.instantiate(new Uint8Array(data.bytes));
      instance.exports[data.kernel](1000); // compiled and warm
      postMessage('ready');
      onmessage = ({ data: iterations }) => {
        const started = performance.now();
        instance.exports[data.kernel](iterations);
        postMessage(performance.now() - started);
      };
    };`;
    const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
    const start = async (n, kernel) => {
      const workers = Array.from({ length: n }, () => new Worker(url));
      await Promise.all(workers.map((w) => new Promise((resolve) => {
        w.onmessage = resolve;
        w.postMessage({ bytes: b, kernel });
      })));
      return workers;
    };
    // all workers run `iterations` at once; G operations per second over the slowest
    const once = (workers, iterations, opsPerIteration) => Promise.all(workers.map((w) => new Promise((resolve) => {
      w.onmessage = ({ data }) => resolve(data);
      w.postMessage(iterations);
    }))).then((ms) => (workers.length * iterations * opsPerIteration) / (Math.max(...ms) / 1e3) / 1e9);
    // f32: 12 accumulators x 4 lanes x a multiply and an add (or a multiply-add); int16: 12 x 8 multiply-adds x 2;
    // the relaxed dot: 12 x 16 multiply-adds x 2
    const kernels = { peak: 12 * 4 * 2, peak_relaxed_madd: 12 * 4 * 2, peak_int16: 12 * 8 * 2,
      peak_relaxed_dot: 12 * 16 * 2 };
    const out = {};
    for (const [kernel, ops] of Object.entries(kernels)) {
      out[kernel] = {};
      for (const n of [1, 2]) {
        const workers = await start(n, kernel);
        const probe = 1e6;
        const rate = await once(workers, probe, ops);
        const iterations = Math.round((rate * 1e9 / n) * 0.3 / ops);
        const rates = [];
        for (let k = 0; k < r; k++) rates.push(await once(workers, iterations, ops));
        workers.forEach((w) => w.terminate());
        rates.sort((x, y) => x - y);
        out[kernel][n] = rates[Math.floor(r / 2)];
      }
    }
    return out;
  }, { bytes, repeats });
  for (const n of [1, 2]) console.log(`peak chromium simd128 ${n}: gflops=${results.peak[n].toFixed(1)}`);
  for (const n of [1, 2]) console.log(`peak chromium relaxed-madd ${n}: gflops=${results.peak_relaxed_madd[n].toFixed(1)}`);
  for (const n of [1, 2]) console.log(`peak int8 chromium simd128 ${n}: gops=${results.peak_int16[n].toFixed(1)}`);
  for (const n of [1, 2]) console.log(`peak int8 chromium relaxed-dot ${n}: gops=${results.peak_relaxed_dot[n].toFixed(1)}`);
} finally {
  await browser.close();
}
