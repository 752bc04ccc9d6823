// make bench, the browser figures: in Debian's Chromium (playwright-core,
// installed by tests/browser/run.sh), the page's worker (web/worker.js)
// loads a model (fetched once and handed over, as the page does), extracts
// the features of an image of the model's input size one at a time
// (sdfed_features.mjs, make bench's timer of them in Chromium), and trains
// SDFed rounds of one step (16 samples, batch 16, C = the task's classes)
// from a global frame; threaded and single-threaded builds, each in
// a browser of its own. Then the page itself (index.html) in a fresh
// browser, until its model is downloaded, checked, stored and loaded. The
// page comes from a real aggregator on loopback whose task names the model
// (so it serves it, cross-origin isolated). Memory is the peak resident
// memory (VmHWM in /proc) of the renderer process that holds the page:
// Chromium runs a page's dedicated workers, the wasm threads among them, in
// its renderer; idle is that process's resident memory before the model.
// The builds' lines without the image tower packed once (web/memory.js's
// MEASURED, from which the page's rule for packing starts, are these).
// Prints one line per build and one for the page:
//   chromium <build>: images_per_s=... step_ms=... peak_rss_mib=... idle_rss_mib=... (medians)
//   chromium page: ready_s=... peak_rss_mib=...     (or error="the page's message" for ready_s)
//   node browser.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL.gguf WORK_DIR [IMAGES] [STEPS]
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { frame, GLOBAL } from '../../tests/lib/frame.mjs';
import { launchChromium } from '../../tests/browser/harness.mjs';
import { listeningPort } from '../../tests/lib/port_file.mjs';
import { WARM_UP_MS } from './ort_features.mjs';
import { sdfedImageFeatures } from './sdfed_features.mjs';
import { scriptHelp } from '../help.mjs';
scriptHelp(import.meta.url);

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const [build, emBuild, model, work] = process.argv.slice(2, 6).map((p) => path.resolve(p));
const images = Number(process.argv[6] || 8), steps = Number(process.argv[7] || 5);
mkdirSync(work, { recursive: true });

const task = JSON.parse(readFileSync(path.join(root, 'tasks/fmnist-pathological.json'), 'utf8'));
Object.assign(task, { model, rounds: 1 });
writeFileSync(path.join(work, 'task.json'), JSON.stringify(task));
const portFile = path.join(work, `port-${process.pid}`);
const aggregator = spawn(path.join(build, 'sdfed-aggregator'), ['--task', path.join(work, 'task.json'), '--state',
  path.join(work, `state-${process.pid}`), '--host', '127.0.0.1', '--port', '0', '--port-file', portFile, '--web',
  path.join(root, 'web'), '--wasm', path.join(emBuild, 'wasm-client')], { stdio: 'ignore' });
process.on('exit', () => aggregator.kill('SIGKILL'));
const port = await listeningPort(portFile, aggregator, 60);
if (!port) throw new Error('the aggregator did not start');
const base = `http://127.0.0.1:${port}`;
const description = await (await fetch(`${base}/task`)).json();
const [rows, width] = description.global_shape;
const global = Array.from({ length: rows * width }, (_, i) => 0.02 * Math.sin(i + 1));
const globalFrame = Array.from(new Uint8Array(frame(GLOBAL, 0, 0, [rows, width], global)));

// Chromium's renderer processes, this process's descendants: {pid: {hwm, rss}} in KiB
function renderers() {
  const parent = new Map(), found = {};
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8'); // "pid (name) state ppid ..."
      parent.set(pid, stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      // it ended meanwhile
    }
  }
  const mine = (pid) => {
    for (let p = parent.get(pid); p && p !== '0'; p = parent.get(p)) if (p === String(process.pid)) return true;
    return false;
  };
  for (const pid of parent.keys()) {
    try {
      if (!mine(pid) || !readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--type=renderer')) continue;
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kib = (field) => Number(status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))[1]);
      found[pid] = { hwm: kib('VmHWM'), rss: kib('VmRSS') };
    } catch {
      // it ended meanwhile
    }
  }
  return found;
}

// The page's renderer (the one that grew most: it holds the model) after a
// run, and its resident memory before: {peak, idle} in MiB
function pageMemory(before) {
  const after = Object.entries(renderers());
  if (!after.length) throw new Error('no Chromium renderer process found under this one');
  const [pid, { hwm }] = after.reduce((a, b) => (b[1].hwm > a[1].hwm ? b : a));
  return { peak: hwm / 1024, idle: (before[pid] ? before[pid].rss : 0) / 1024 };
}

// fn(page) in a fresh browser (so that its processes' peaks are this run's)
async function inBrowser(fn) {
  const browser = await launchChromium();
  try {
    return await fn(await browser.newPage());
  } finally {
    await browser.close();
  }
}

try {
  for (const singleThreaded of [true, false]) {
    const [r, memory] = await inBrowser(async (page) => {
      await page.goto(`${base}/task`); // any page of the origin (it is cross-origin isolated) that stays put
      const idle = renderers();
      const timed = await page.evaluate(sdfedImageFeatures, { modelUrl: description.model.url,
        single: singleThreaded, images, repeats: 1, warmUpMs: WARM_UP_MS, keep: true, pack: false });
      const stepMs = await page.evaluate(async ({ task: t, classes, steps: s, globalFrame: g, D }) => {
        const compute = globalThis.sdfedCompute;
        const call = (op, args, transfer) => compute.call(op, args, null, transfer);
        await call('setTask', { task: t, index: 0 });
        const B = 16, features = new Float32Array(B * D), labels = new Uint8Array(B);
        for (let b = 0; b < B; b++) {
          let norm = 0;
          for (let d = 0; d < D; d++) norm += (features[b * D + d] = Math.sin(7 * b + d)) ** 2;
          for (let d = 0; d < D; d++) features[b * D + d] /= Math.sqrt(norm);
          labels[b] = b % classes.length;
        }
        await call('setSamples', { which: 0, features, labels });
        const times = [];
        for (let i = 0; i <= s; i++) {
          const round = await call('round', { frame: Uint8Array.from(g).buffer });
          if (i > 0) times.push(round.stepMs); // the first round warms up
        }
        compute.stop();
        times.sort((a, b) => a - b);
        return times[Math.floor(times.length / 2)];
      }, { task: description.task, classes: description.classes, steps, globalFrame, D: timed.embedDim });
      return [{ threaded: timed.threaded, imagesPerS: timed.imagesPerS, stepMs }, pageMemory(idle)];
    });
    console.log(`chromium ${r.threaded ? 'threaded' : 'single-threaded'}: images_per_s=${r.imagesPerS.toFixed(3)} ` +
      `step_ms=${r.stepMs.toFixed(3)} peak_rss_mib=${memory.peak.toFixed(1)} idle_rss_mib=${memory.idle.toFixed(1)}`);
  }
  // the page as a volunteer opens it: it downloads the model, checks its
  // sha256, stores it (IndexedDB) and loads it into its worker; or it shows
  // an error, printed instead of the time (its memory is up to the error)
  const [ready, memory] = await inBrowser(async (page) => {
    const started = Date.now();
    await page.goto(`${base}/`);
    await page.waitForFunction(() => document.getElementById('model').textContent.includes('WebAssembly') ||
      !document.getElementById('error').hidden, null, { timeout: 600e3, polling: 100 });
    const seconds = (Date.now() - started) / 1e3;
    const error = await page.evaluate(() => !document.getElementById('error').hidden &&
      document.getElementById('error').textContent);
    return [error ? `error=${JSON.stringify(error)}` : `ready_s=${seconds.toFixed(3)}`, pageMemory({})];
  });
  console.log(`chromium page: ${ready} peak_rss_mib=${memory.peak.toFixed(1)}`);
} finally {
  aggregator.kill('SIGTERM');
}
