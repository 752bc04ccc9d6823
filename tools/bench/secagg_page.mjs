// make bench, a secure round's client steps in the page: in Debian's
// Chromium (playwright-core, installed by tests/browser/run.sh), two page
// clients (web/worker.js: secagg.js's WebCrypto and the core's wasm, one on
// the threaded build, one single-threaded) take places 0 and 1 of a round
// of N clients whose other clients and server are native
// (tests/browser/secagg_native.c, OpenSSL), on tasks/fmnist-secure.json (k
// and t from the rule) in a 42-bit ring (its 32 bits could wrap past 16
// clients of weight 4,096, 42 hold 10,000 of them; the masked input packed
// at 42 bits an element) and the model's P coordinates. For each step, the
// page client's time in its worker (from the step's first call to its
// message: WebCrypto's work on Chromium's threads included, so wall time)
// and a native client's CPU and wall time (the mean over the N - 2), each
// the mean of the round; the page's extra time is its total against the
// native one's. Timings, never asserted. One line per N and build:
//   secagg n=100 k=28 t=6 P=1024 build=threads page_ms advertise=... share=... masked=... unmask=... total=...
//     native_cpu_ms ... total=... native_wall_ms total=... page/native=...
//   node secagg_page.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL WORK_DIR [N ...]   (default 100 1000 10000)
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../../tests/browser/harness.mjs';
import { CLASSES } from '../../tests/browser/parity.mjs';
import { runRound, servePage, setPageTask, startPageClients } from '../../tests/browser/secagg_page.mjs';
import { scriptHelp } from '../help.mjs';
scriptHelp(import.meta.url);

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const [build, emBuild, model, work] = process.argv.slice(2, 6).map((p) => path.resolve(p));
const sizes = process.argv.slice(6).map(Number);
mkdirSync(work, { recursive: true });
const task = JSON.parse(readFileSync(path.join(root, 'tasks/fmnist-secure.json'), 'utf8'));
// with Fashion-MNIST's classes written in, as the aggregator writes them in the task it sends (the core knows no data
// set's classes)
Object.assign(task, { model, classes: CLASSES });
task.secure_aggregation.ring_bits = 42;
const noised = structuredClone(task);
Object.assign(noised.secure_aggregation, { l2_clip: 0.2, max_weight: 1, noise: { epsilon: 8, delta: 1e-5 } });
const file = (name, t) => {
  const f = path.join(work, name);
  writeFileSync(f, JSON.stringify(t));
  return f;
};

const STEPS = ['advertise', 'share', 'masked', 'unmask'];
const fmt = (v) => v.toFixed(2);
const server = await servePage({ root, emBuild, model });
const browser = await launchChromium();
try {
  const page = await browser.newPage();
  await page.goto(`${server.url}/test/blank.html`);
  const info = await startPageClients(page, 2, task, (i) => i === 1);
  const P = info[0].globalSize;
  const plain = file('secagg-task.json', task), noisy = file('secagg-noise.json', noised);
  const runs = (sizes.length ? sizes : [100, 1000, 10000]).map((n) => ({ n, taskFile: plain, label: '' }));
  runs.push({ n: runs[0].n, taskFile: noisy, label: ' noise=epsilon8', task: noised });
  for (const { n, taskFile, label, task: other } of runs) {
    if (other) {
      await setPageTask(page, other);
      const ms = await page.evaluate(async (count) => {
        const started = performance.now();
        await window.secure[0].call('secaggPlan', { n: count });
        return performance.now() - started;
      }, n);
      console.log(`secagg n=${n}${label}: the page's plan took ${fmt(ms)} ms`);
    }
    const r = await runRound({ page, exe: path.join(build, 'tests/secagg_native'), taskFile, P, n, round: 1,
      places: new Map([[0, 0], [1, 1]]), sendInputs: !!other });
    if (!r.parity || !r.parity.same) console.log(`secagg n=${n}: the round did not unmask as it should: ` +
      `${JSON.stringify({ parity: r.parity, abandoned: r.abandoned, refused: r.refused, refusals: r.refusals })}`);
    const native = (kind) => STEPS.map((s) => (r.nativeMs[s] ? r.nativeMs[s][kind] : 0));
    const cpu = native('cpu'), wall = native('wall');
    const sum = (a) => a.reduce((x, y) => x + y, 0);
    for (const [i, name] of [[0, info[0].threaded ? 'threads' : 'single'], [1, 'single']]) {
      const times = STEPS.map((s) => (r.pageMs[s] ? r.pageMs[s][i] : NaN));
      console.log(`secagg n=${n} k=${r.plan.k} t=${r.plan.t} P=${P}${label} build=${name} page_ms ` +
        `${STEPS.map((s, j) => `${s}=${fmt(times[j])}`).join(' ')} total=${fmt(sum(times))} native_cpu_ms ` +
        `${STEPS.map((s, j) => `${s}=${fmt(cpu[j])}`).join(' ')} total=${fmt(sum(cpu))} native_wall_ms ` +
        `total=${fmt(sum(wall))} page/native=${(sum(times) / sum(cpu)).toFixed(1)}x`);
    }
  }
} finally {
  await browser.close();
  server.close();
}
