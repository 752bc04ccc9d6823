// The page fits its local prompt to its device (docs/tasks.md, "Local
// prompts fitted to devices"), in Debian's Chromium against a real
// aggregator, on a task whose local_prompt rule is adaptive:
//   1. after a demo shard's features, the page times its steps at each
//      length and says in words what it chose and why ("This device: N ms a
//      step → a local prompt of L tokens, S steps a round (...)"), L one of
//      the task's lengths; the step times are kept in IndexedDB;
//   2. after a reload the page takes the kept step times (it says so) and
//      keeps the length and the steps;
//   3. joined, a device that slows down is measured again: after a round,
//      the worker's clock is made to run fast, ever faster (its steps seem
//      20 times slower, and slower each round: Chromium's CPU throttling
//      does not reach workers); the rounds' steps drift past 1.5 times the
//      reference round's, the page times its steps again, and the round
//      after reports them: /status's step time at the chosen length rises
//      with them.
//   node device_page.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL.gguf OUT
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromiumTest, launchChromium, watchPage } from './harness.mjs';

const { root, emBuild, model, out, shots, h } = chromiumTest();
const { check, until } = h;

const task = JSON.parse(readFileSync(path.join(root, 'tasks/fmnist-pathological.json'), 'utf8'));
delete task.local_prompt_length;
Object.assign(task, { model, clients: 3, clients_per_round: 1, min_clients: 1, rounds: 8,
  local_prompt: { lengths: [4, 8, 16], rule: 'adaptive', budget_s: 60 } });
writeFileSync(path.join(out, 'task.json'), JSON.stringify(task));
await h.startAggregator('aggregator', ['--task', path.join(out, 'task.json'), '--state', path.join(out, 'state'),
  '--web', path.join(root, 'web'), '--wasm', path.join(emBuild, 'wasm-client'), '--round-pause', '2']);

const browser = await launchChromium();
let exitCode = 1;
let watch = { tail: () => '' };
try {
  const page = await (await browser.newContext()).newPage();
  watch = watchPage(page);
  const { stage, text } = watch;
  const waitStage = (what, ok, seconds) => until(`stage ${what}`, async () => ok(await stage()), seconds);
  const sentence = /^This device: (\d+) ms a step → a local prompt of (\d+) tokens, (\d+) steps a round \((.*)\)\.$/;

  // 1. the demo shard, the device timed, the choice said
  await page.goto(h.base);
  await waitStage('empty', (s) => s === 'empty', 60);
  await page.click('#demo');
  await waitStage('ready', (s) => s === 'ready', 120);
  const first = (await text('device')).match(sentence);
  check(first && [4, 8, 16].includes(Number(first[2])) && Number(first[3]) > 0 && !/first visit/.test(first[4]),
    `the page says what it chose and why: ${await text('device')}`);
  const kept = await page.evaluate(() => new Promise((resolve) => {
    const r = indexedDB.open('sdfed');
    r.onsuccess = () => {
      const all = r.result.transaction('state').objectStore('state').getAll();
      all.onsuccess = () => resolve(all.result.map((s) => s.device));
    };
  }));
  check(kept.length === 1 && kept[0] && kept[0].stepMs.length === 3 && kept[0].stepMs.every((ms) => ms > 0),
    `the step times at the 3 lengths are kept in IndexedDB: ${JSON.stringify(kept)}`);
  await page.screenshot({ path: path.join(shots, '01-device.png'), fullPage: true });

  // 2. a reload keeps the length
  await page.reload();
  await waitStage('ready again', (s) => s === 'ready', 120);
  const again = (await text('device')).match(sentence);
  check(again && first && again[1] === first[1] && again[2] === first[2] && again[3] === first[3] &&
    /measured on your first visit/.test(again[4]), `a reload keeps the length: ${await text('device')}`);

  // 3. a device that slows down, measured again
  const length = again ? Number(again[2]) : 0;
  const reported = async () => {
    const s = await h.status();
    const at = ((s.devices || {}).step_ms || []).find((x) => x.length === length);
    return { rounds: s.round, ms: at ? at.p50 : 0 };
  };
  await page.click('#join');
  await until('the first round reported', async () => {
    const r = await reported();
    return r.rounds >= 1 && r.ms > 0;
  }, 300);
  const before = await reported();
  const worker = page.workers().find((w) => /\/worker\.js$/.test(w.url()));
  check(worker, `the page's compute worker: ${page.workers().map((w) => w.url()).join(', ')}`);
  // a device that keeps slowing down: what takes d ms at t ms after this seems to take d * 20 * 2^(t / 2000)
  // (20 times, doubling every 2 s: every round's steps drift from the reference round's, whichever round
  // that is, as the rule re-measures and takes the next round as its reference)
  await worker.evaluate(() => {
    const real = performance.now.bind(performance), from = real(), doubling = 2000;
    performance.now = () => from + 20 * doubling / Math.LN2 * (2 ** ((real() - from) / doubling) - 1);
  });
  const after = await until('the figures measured again', async () => {
    const r = await reported();
    return r.ms >= 5 * before.ms && r;
  }, 300);
  check(after && before.rounds >= 1, `measured again and reported: ${before.ms} ms a step at ${length} tokens ` +
    `after round 0, ${after.ms} ms after round ${after.rounds - 1}`);
  exitCode = h.failed ? 1 : 0;
} catch (e) {
  h.check(false, `${e.message}\n${watch.tail()}`);
} finally {
  await browser.close();
  h.cleanup();
}
process.exit(h.summary('chromium device', shots) || exitCode);
