// A host's own federation in the page, on another CLIP: four Fashion-MNIST
// classes written as a host's folder looks (colour JPEGs and PNGs of mixed
// sizes, tools/fmnist_to_folder.py --mixed), the folders renamed and named
// by the task with texts of their own, a template and prompt_init; the
// model is the reference mini-vit (64x64 colour input, 16x16 patches, other
// widths and depths than the default). Against a real aggregator with 2
// headless clients on loopback, in Debian's Chromium:
//   1. the page shows the task's four class names and offers a demo share
//      of the host's images; the share arrives as the folder's files, which
//      the page decodes and encodes as the native build does (features
//      within 1e-4 of `sdfed encode-image`'s), JPEGs stored turned with an
//      EXIF orientation and PNGs with transparency among them;
//   2. it trains the 3 rounds; its accuracy per round is what `sdfed sim`
//      computes for the same shard;
//   3. "try it" names one of the four classes for a JPEG of the folder; a
//      reload reads the model (30 MB, kept in parts) back from IndexedDB;
//   4. a second volunteer drops a folder: its sub-folder named as a class
//      (in another case) is matched, "pick by hand" lists the four classes,
//      and the sub-folder that is none of them is skipped by name;
//   5. the same folder seen in derived domains (another server): a demo
//      share arrives as pixels in their domains, and the page's features of
//      them equal the native build's.
//   node host_federation.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL.gguf OUT
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromiumTest, launchChromium, watchPage } from './harness.mjs';

const { root, build, emBuild, model, out, shots, h } = chromiumTest();
const { check, start, until } = h;

// the host's folder: train/ and test/, one sub-folder per class, renamed
const data = path.join(out, 'data');
const exported = spawnSync('/usr/bin/python3', [path.join(root, 'tools/fmnist_to_folder.py'), '--out', data,
  '--classes', 'Trouser,Bag,Sandal,Ankle boot', '--per-class', '30', '--mixed'], { encoding: 'utf8' });
if (exported.status !== 0) throw new Error(`fmnist_to_folder.py: ${exported.stderr}`);
const NAMES = ['Trousers', 'Handbags', 'Sandals', 'Ankle boots'];
for (const split of ['train', 'test'])
  for (const [from, to] of [['Trouser', 'Trousers'], ['Bag', 'Handbags'], ['Sandal', 'Sandals'], ['Ankle_boot', 'Ankle_boots']])
    renameSync(path.join(data, split, from), path.join(data, split, to));
// the host's images as phones and clip art have them: every JPEG stored
// turned, with the EXIF orientation that turns it back (1..8 in turn), every
// third PNG on a ground that is transparent where it is dark
const turned = spawnSync('/usr/bin/python3', ['-c', `
import os, sys
from PIL import Image
T = Image.Transpose
turn_back = {2: T.FLIP_LEFT_RIGHT, 3: T.ROTATE_180, 4: T.FLIP_TOP_BOTTOM, 5: T.TRANSPOSE, 6: T.ROTATE_90,
             7: T.TRANSVERSE, 8: T.ROTATE_270}
files = sorted(os.path.join(d, f) for d, _, names in os.walk(sys.argv[1]) for f in names)
for i, f in enumerate(f for f in files if f.endswith(".jpg")):
    o = 1 + i % 8
    image = Image.open(f)
    exif = Image.Exif()
    exif[0x0112] = o
    (image.transpose(turn_back[o]) if o > 1 else image).save(f, quality=90, exif=exif.tobytes())
for f in [f for f in files if f.endswith(".png")][::3]:
    image = Image.open(f).convert("RGB")
    image.putalpha(image.convert("L").point(lambda v: min(255, 3 * v)))
    image.save(f)
`, data], { encoding: 'utf8' });
if (turned.status !== 0) throw new Error(`turning the host's JPEGs: ${turned.stderr}`);
const task = JSON.parse(readFileSync(path.join(root, 'tasks/fmnist-pathological.json'), 'utf8'));
Object.assign(task, { model, dataset: { train: 'train', test: 'test' }, clients: 3, clients_per_round: 3, rounds: 3,
  partition: { kind: 'pathological', classes_per_client: 2 }, name: 'My four kinds',
  classes: ['Trousers', { name: 'Handbags', text: 'bag' }, { name: 'Sandals', text: 'summer sandal' }, 'Ankle boots'],
  template: 'a colour photo of a {}.', prompt_init: 'a photo of a' });
const taskFile = path.join(data, 'task.json');
writeFileSync(taskFile, JSON.stringify(task));

await h.startAggregator('aggregator', ['--task', taskFile, '--state', path.join(out, 'state'), '--min-clients', '3',
  '--deadline', '600', '--round-pause', '1', '--web', path.join(root, 'web'), '--wasm', path.join(emBuild, 'wasm-client')]);
for (const k of [0, 1])
  start(`client${k}`, path.join(build, 'sdfed-client'), ['--server', `ws://127.0.0.1:${h.port}`, '--client-index',
    String(k), '--model', model, '--cache', path.join(out, 'cache'), '--token-file', path.join(out, `token${k}`),
    '--host-task', taskFile]);
await until('2 headless clients', async () => (await h.status()).clients === 2, 120);

// The largest difference between the features a page keeps of its images
// and `sdfed encode-image`'s of the same images as files (Infinity when
// their counts differ).
async function largestDifference(page, files) {
  const encoded = spawnSync(path.join(build, 'sdfed'), ['encode-image', '--model', model, '--normalize', ...files],
    { encoding: 'utf8', maxBuffer: 1 << 26 });
  const native = encoded.stdout.trim().split('\n').map((line) => line.trim().split(/\s+/).map(Number));
  const stored = await page.evaluate(() => new Promise((resolve, reject) => {
    const r = indexedDB.open('sdfed');
    r.onerror = () => reject(r.error);
    r.onsuccess = () => {
      const all = r.result.transaction('datasets').objectStore('datasets').getAll();
      all.onsuccess = () => {
        const d = all.result[0];
        resolve({ features: Array.from(d.features), dim: d.features.length / d.labels.length });
      };
    };
  }));
  if (native.length !== files.length || stored.features.length !== files.length * stored.dim) return Infinity;
  let worst = 0;
  native.forEach((row, i) => row.forEach((v, j) => {
    worst = Math.max(worst, Math.abs(v - stored.features[i * stored.dim + j]));
  }));
  return worst;
}

const browser = await launchChromium();
let watch = { lines: [], tail: () => '' };
try {
  const page = await (await browser.newContext()).newPage();
  watch = watchPage(page);
  const { stage, text } = watch;
  let modelDownloads = 0;
  page.on('request', (r) => { if (r.url().includes('/model/')) modelDownloads++; });
  const waitStage = (what, ok, seconds) => until(`stage ${what}`, async () => ok(await stage()), seconds);
  const shot = (p, name) => p.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });

  // 1. the task's classes, a demo share of the host's files
  await page.goto(`${h.base}/`);
  await waitStage('empty', (s) => s === 'empty', 60);
  const shown = await text('classes');
  check(shown === NAMES.join(', '), `the page shows the task's four classes: ${shown}`);
  const offer = await page.locator('#demo').innerText();
  check(await page.locator('#demo').isVisible() && /demo share of the federation's images/.test(offer),
    `the page offers a demo share of the host's images: ${offer}`);
  await shot(page, '01-loaded');
  await page.click('#demo');
  await waitStage('ready', (s) => s === 'ready', 180);
  const summary = await text('data-summary');
  check(/\d+ images ready .*demo share 2/.test(summary) && NAMES.some((n) => summary.includes(n)),
    `the demo share's files are decoded and encoded: ${summary}`);
  // the page decoded and encoded the share's files as the native build does
  const shard = await (await fetch(`${h.base}/demo/shard?k=2`)).json();
  const files = [...shard.train.files, ...shard.test.files].map((b64, i) => {
    const file = path.join(out, 'shard-2', `${String(i).padStart(4, '0')}`);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, Buffer.from(b64, 'base64'));
    return file;
  });
  const worst = await largestDifference(page, files);
  const kinds = spawnSync('/usr/bin/python3', ['-c', `
import sys
from PIL import Image
images = [Image.open(f) for f in sys.argv[1:]]
print(sum(i.format == "JPEG" and i.getexif().get(0x0112, 1) > 1 for i in images),
      sum(i.format == "PNG" and i.mode == "RGBA" for i in images))
`, ...files], { encoding: 'utf8' }).stdout.trim().split(' ').map(Number);
  check(worst <= 1e-4 && kinds[0] > 0 && kinds[1] > 0, `the page's features of the ${files.length} files (${kinds[0]} ` +
    `JPEGs turned by their EXIF orientation, ${kinds[1]} PNGs with transparency) equal the native ones (largest ` +
    `difference ${worst.toExponential(2)}, at most 1e-4)`);
  await shot(page, '02-features');

  // 2. three rounds, the simulator's accuracy for the same shard
  await page.click('#join');
  await until('the federation to finish', async () => (await h.status()).done === 1, 600);
  await waitStage('3 trained rounds', (s) => /^trained-3/.test(s) || s === 'done', 60);
  const history = await page.evaluate(() => new Promise((resolve, reject) => {
    const r = indexedDB.open('sdfed');
    r.onerror = () => reject(r.error);
    r.onsuccess = () => {
      const all = r.result.transaction('state').objectStore('state').getAll();
      all.onsuccess = () => resolve(all.result[0].history);
    };
  }));
  const sim = spawnSync(path.join(build, 'sdfed'), ['sim', '--task', taskFile, '--out', path.join(out, 'sim'),
    '--cache', path.join(out, 'cache')]);
  const simRounds = sim.status === 0 ? JSON.parse(readFileSync(path.join(out, 'sim/results.json'))).rounds : [];
  const pairs = history.map((r) => [r.accuracy, simRounds[r.round] ? simRounds[r.round].client_accuracy[2] : NaN]);
  check(pairs.length === 3 && pairs.every(([a, b]) => Math.abs(a - b) <= 0.01),
    `the page's accuracy per round equals sdfed sim's client 2 (within 1 point): ` +
    pairs.map(([a, b]) => `${(100 * a).toFixed(2)}% / ${(100 * b).toFixed(2)}%`).join(', '));
  await shot(page, '03-trained');

  // 3. try it on one of the host's JPEGs
  const bags = path.join(data, 'test/Handbags');
  const jpeg = readdirSync(bags).find((f) => f.endsWith('.jpg'));
  await page.setInputFiles('#try-file', path.join(bags, jpeg));
  const guess = await until('a prediction', async () => (await text('try-result')).trim(), 30);
  check(NAMES.some((c) => guess.includes(c)), `"try it" names one of the four classes: ${guess.split('\n')[0]}`);
  await shot(page, '04-try-it');
  // a reload reads the model (30 MB: stored in parts) back from IndexedDB
  await page.reload();
  await waitStage('the resumed page', (s) => ['joined', 'done'].includes(s) || s.startsWith('trained'), 60);
  const again1 = await page.locator('#try-file').isEnabled();
  check(modelDownloads === 1 && again1 && !(await page.locator('#error').innerText()).trim(),
    `after a reload the model comes from IndexedDB, in parts (downloads: ${modelDownloads})`);

  // 4. a second volunteer's folder: "handbags" is a class, "kangaroo" is not
  const again = await (await browser.newContext()).newPage();
  await again.goto(`${h.base}/`);
  await until('the second page', async () => (await again.evaluate(() => document.body.dataset.stage)) === 'empty', 60);
  const own = path.join(out, 'my-images');
  cpSync(path.join(data, 'train/Handbags'), path.join(own, 'handbags'), { recursive: true });
  cpSync(path.join(data, 'train/Sandals'), path.join(own, 'kangaroo'), { recursive: true });
  await again.setInputFiles('#folder', own);
  const pickers = again.locator('#groups select');
  const chosen = await until('the class pickers', async () => (await pickers.count()) === 2 &&
    pickers.evaluateAll((all) => all.map((s) => s.selectedOptions[0].text)), 30);
  check(chosen.includes('Handbags') && chosen.includes('choose the class…'),
    `the dropped sub-folders are matched to the task's classes: ${chosen.join(', ')}`);
  const choices = await pickers.first().evaluate((s) => [...s.options].map((o) => o.text));
  check(JSON.stringify(choices.slice(1)) === JSON.stringify(NAMES), `"pick by hand" lists the four classes: ${choices}`);
  const note = await again.locator('#groups .skipped').innerText();
  check(/"kangaroo" is none of this federation's classes/.test(note), `the other sub-folder is skipped by name: ${note}`);
  await shot(again, '05-own-folder');

  // 5. a federation that sees its images in derived domains: a demo share arrives as pixels in their
  // domains (shares 0 and 1 taken first, so the page's is share 2, its images rotated), which the page
  // encodes as the native build encodes the same pixels written as PNGs
  await h.stopAggregator();
  const domainsTask = path.join(data, 'domains.json');
  writeFileSync(domainsTask, JSON.stringify({ ...task, clients: 4, clients_per_round: 4,
    partition: { kind: 'domains', clients_per_domain: 1 } }));
  h.port = 0; // a server of its own: another origin, another IndexedDB
  await h.startAggregator('aggregator-domains', ['--task', domainsTask, '--state', path.join(out, 'state-domains'),
    '--web', path.join(root, 'web'), '--wasm', path.join(emBuild, 'wasm-client')]);
  for (const k of [0, 1]) check((await (await fetch(`${h.base}/demo/shard`)).json()).shard === k, `demo share ${k} taken`);
  const third = await (await browser.newContext()).newPage();
  await third.goto(`${h.base}/`);
  await until('the domains page', async () => (await third.evaluate(() => document.body.dataset.stage)) === 'empty', 60);
  await third.click('#demo');
  await until('the domains share', async () => (await third.evaluate(() => document.body.dataset.stage)) === 'ready', 180);
  const rotated = await (await fetch(`${h.base}/demo/shard?k=2`)).json();
  const images = [...rotated.train.images, ...rotated.test.images];
  const pngs = path.join(out, 'domains-shard-2');
  mkdirSync(pngs, { recursive: true });
  const written = spawnSync('/usr/bin/python3', ['-c', `
import base64, json, os, sys
import numpy as np
from PIL import Image
for i, im in enumerate(json.load(sys.stdin)):
    shape = (im["height"], im["width"]) + ((im["channels"],) if im["channels"] > 1 else ())
    pixels = np.frombuffer(base64.b64decode(im["pixels"]), np.uint8).reshape(shape)
    Image.fromarray(pixels).save(os.path.join(sys.argv[1], "%04d.png" % i))
`, pngs], { input: JSON.stringify(images), encoding: 'utf8' });
  const pngFiles = readdirSync(pngs).sort().map((f) => path.join(pngs, f));
  const summary3 = await third.locator('#data-summary').innerText();
  check(written.status === 0 && rotated.train.domains.every((d) => d === 2) && /demo share 2/.test(summary3),
    `the page took share 2, its images rotated: ${summary3} ${written.stderr || ''}`);
  const worstRotated = await largestDifference(third, pngFiles);
  check(worstRotated <= 1e-4, `the page's features of the share's ${images.length} rotated images equal the native ` +
    `ones (largest difference ${worstRotated.toExponential(2)}, at most 1e-4)`);
  await shot(third, '06-domains');
  writeFileSync(path.join(out, 'console.log'), watch.lines.join('\n'));
} catch (e) {
  check(false, e.message);
  console.log(watch.tail());
} finally {
  await browser.close();
  h.cleanup();
}
process.exit(h.summary('chromium, a host\'s federation', shots));
