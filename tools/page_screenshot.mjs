// The README's picture of the page (docs/page.png): the default task served
// by a local aggregator (as `make run` serves it, with 2 headless clients),
// the page in Debian's Chromium taking a demo share and training 3 rounds,
// the top of the page (the federation, the images, the training and its
// chart) shot at 900 px wide. Needs the native build, the browser build and
// tests/browser/node_modules (tests/browser/run.sh installs it).
//   node tools/page_screenshot.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR OUT.png
import { mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { harness, launchChromium, watchPage } from '../tests/browser/harness.mjs';
import { scriptHelp } from './help.mjs';
scriptHelp(import.meta.url);

const [build, emBuild, png] = process.argv.slice(2).map((p) => path.resolve(p));
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = mkdtempSync(path.join(os.tmpdir(), 'sdfed-screenshot-'));
mkdirSync(path.join(out, 'state'));
const h = harness(out, root, build);
await h.startAggregator('aggregator', ['--task', path.join(root, 'tasks/fmnist-pathological.json'),
  '--state', path.join(out, 'state'), '--min-clients', '3', '--web', path.join(root, 'web'),
  '--wasm', path.join(emBuild, 'wasm-client')]);
for (const k of [0, 1])
  h.start(`client${k}`, path.join(build, 'sdfed-client'), ['--server', `ws://127.0.0.1:${h.port}`, '--client-index',
    String(k), '--cache', path.join(out, 'cache')]);
const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: 900, height: 900 } });
  const { stage, text } = watchPage(page);
  await page.goto(`${h.base}/`);
  await h.until('the page', async () => (await stage()) === 'empty', 60);
  await page.click('#demo');
  await h.until('the demo share', async () => (await stage()) === 'ready', 120);
  await page.click('#join');
  await h.until('3 closed rounds', async () => Number((await text('round')).split(' ')[0]) >= 3 &&
    (await page.locator('#chart circle').count()) >= 3, 300);
  const bottom = await page.evaluate(() => document.querySelector('#training').getBoundingClientRect().bottom + scrollY);
  await page.screenshot({ path: png, fullPage: true, clip: { x: 0, y: 0, width: 900, height: Math.ceil(bottom) + 16 } });
  console.log(`page_screenshot: ${png}`);
} finally {
  await browser.close();
  h.cleanup();
}
