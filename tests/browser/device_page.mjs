// The page fits its local prompt to its device (docs/tasks.md, "Local
// prompts fitted to devices"), in Debian's Chromium against a real
// aggregator, on a task whose local_prompt rule is adaptive:
//   1. after a demo shard's features, the page times its steps at each
//      length and says in words what it chose and why ("This device: N ms a
//      step → a local prompt of L tokens, S steps a round (...)"), L one of
//      the task's lengths; the step times are kept in IndexedDB;
//   2. after a reload the page takes the kept step times (it says so) and
//      keeps the length and the steps.
//   node device_page.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL.gguf OUT
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromiumTest, launchChromium, watchPage } from './harness.mjs';

const { root, emBuild, model, out, shots, h } = chromiumTest();
const { check, until } = h;

const task = JSON.parse(readFileSync(path.join(root, 'tasks/fmnist-pathological.json'), 'utf8'));
delete task.local_prompt_length;
Object.assign(task, { model, clients: 3, clients_per_round: 3, rounds: 2,
  local_prompt: { lengths: [4, 8, 16], rule: 'adaptive', budget_s: 60 } });
writeFileSync(path.join(out, 'task.json'), JSON.stringify(task));
await h.startAggregator('aggregator', ['--task', path.join(out, 'task.json'), '--state', path.join(out, 'state'),
  '--web', path.join(root, 'web'), '--wasm', path.join(emBuild, 'wasm-client')]);

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
  exitCode = h.failed ? 1 : 0;
} catch (e) {
  h.check(false, `${e.message}\n${watch.tail()}`);
} finally {
  await browser.close();
  h.cleanup();
}
process.exit(h.summary('chromium device', shots) || exitCode);
