// Photos larger than the native decoder keeps (2^24 pixels, 16.7 million:
// native/image_decode.h reduces them by a power of two while decoding), as
// a phone's camera modes take them (50 to 108 megapixels), added to the
// volunteer page in Debian's Chromium as a folder of three class folders:
//   Bag/    a 6000 x 4000 PNG (reduced by 2),
//   Coat/   a 12000 x 9000 PNG (108 megapixels, reduced by 4),
//   Dress/  a 6000 x 4000 JPEG (reduced by 2),
// each a scene the test draws in the page (gradients, discs, a patch of
// fine noise; the PNGs and the JPEG made by the browser's encoders):
//   - the features the page stored for each are `sdfed encode-image`'s of
//     the same file within 1 - cosine: the 6000 x 4000 PNG's within 1e-5
//     (the browser's halving is the native box mean, bit for bit; decoded
//     at full size they differ by 5e-5), the 108 MP PNG's within 1e-4 (two
//     halvings, each rounded, are within one level of the native mean of
//     4 x 4), the JPEG's within 2e-4 (natively libjpeg decodes it reduced
//     in its DCT, which the browser cannot: docs/volunteer.md);
//   - the worker's WebAssembly memory (its buffer, which never shrinks)
//     grows by at most 80 MiB over the three, one image of 2^24 pixels as
//     RGBA being 64 MiB (at full size the 108 MP one alone is 412 MiB).
//   node large_images.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL.gguf OUT
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromiumTest, launchChromium, watchPage } from './harness.mjs';
import { nativeFeatures, oneMinusCosine } from './native_features.mjs';

const { root, build, emBuild, model, out, shots, h } = chromiumTest();
const { check, until } = h;

const MAX_MEMORY_GROWTH = 80 * 2 ** 20;
const PHOTOS = [ // bound: of 1 - cosine against the native features
  { folder: 'Bag', file: 'bag.png', width: 6000, height: 4000, type: 'image/png', bound: 1e-5 },
  { folder: 'Coat', file: 'coat.png', width: 12000, height: 9000, type: 'image/png', bound: 1e-4 },
  { folder: 'Dress', file: 'dress.jpg', width: 6000, height: 4000, type: 'image/jpeg', bound: 2e-4 },
];

await h.startAggregator('aggregator', ['--task', path.join(root, 'tasks/fmnist-pathological.json'),
  '--state', path.join(out, 'state'), '--web', path.join(root, 'web'), '--wasm', path.join(emBuild, 'wasm-client')]);

const browser = await launchChromium();
let watch = { tail: () => '' };
try {
  const page = await (await browser.newContext()).newPage();
  watch = watchPage(page);
  await page.goto(h.base);
  await until('the page', async () => (await watch.stage()) === 'empty', 60);

  // the photos, drawn and encoded in the page (seeded: the same every run), written as the folder
  const photos = path.join(out, 'photos');
  for (const [i, p] of PHOTOS.entries()) {
    const base64 = await page.evaluate(async ({ width, height, type, seed }) => {
      const canvas = new OffscreenCanvas(width, height), g = canvas.getContext('2d');
      let s = seed;
      const random = () => (s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32;
      const sky = g.createLinearGradient(0, 0, width, height);
      sky.addColorStop(0, '#204080');
      sky.addColorStop(1, '#e0c040');
      g.fillStyle = sky;
      g.fillRect(0, 0, width, height);
      for (let d = 0; d < 200; d++) {
        g.fillStyle = `hsl(${random() * 360}, 70%, ${30 + random() * 40}%)`;
        g.beginPath();
        g.arc(random() * width, random() * height, 20 + (random() * width) / 10, 0, 2 * Math.PI);
        g.fill();
      }
      const patch = g.getImageData(0, 0, width >> 1, height >> 2);
      for (let k = 0; k < patch.data.length; k += 4) {
        const n = (random() - 0.5) * 60;
        patch.data[k] += n;
        patch.data[k + 1] += n;
        patch.data[k + 2] -= n;
      }
      g.putImageData(patch, width >> 2, height >> 1);
      const bytes = new Uint8Array(await (await canvas.convertToBlob({ type, quality: 0.9 })).arrayBuffer());
      let text = '';
      for (let k = 0; k < bytes.length; k += 0x8000) text += String.fromCharCode(...bytes.subarray(k, k + 0x8000));
      return btoa(text);
    }, { ...p, seed: i + 1 });
    mkdirSync(path.join(photos, p.folder), { recursive: true });
    writeFileSync(path.join(photos, p.folder, p.file), Buffer.from(base64, 'base64'));
  }

  // the page's own worker (page.js's module, the one the page uses)
  const memory = () => page.evaluate(async () => (await import('/page.js')).page.compute.call('memory'));
  await page.evaluate(async () => (await import('/page.js')).page.ready());
  const before = await memory();
  await page.setInputFiles('#folder', photos);
  await until('the photos encoded', async () => (await watch.stage()) === 'ready', 300);
  const grown = (await memory()) - before;
  check(grown <= MAX_MEMORY_GROWTH, `the worker's memory grew by ${(grown / 2 ** 20).toFixed(1)} MiB over the ` +
    `three photos (bound ${MAX_MEMORY_GROWTH / 2 ** 20} MiB): ${await watch.text('data-summary')}`);
  await page.screenshot({ path: path.join(shots, '01-photos.png'), fullPage: true });

  // the features stored per class (one photo each), against the native ones of the same files
  const stored = await page.evaluate(() => new Promise((resolve, reject) => {
    const r = indexedDB.open('sdfed');
    r.onerror = () => reject(r.error);
    r.onsuccess = () => {
      const all = r.result.transaction('datasets').objectStore('datasets').getAll();
      all.onsuccess = () => {
        const d = all.result[0], D = d.features.length / d.labels.length, classes = {};
        d.labels.forEach((label, i) => { classes[label] = Array.from(d.features.subarray(i * D, (i + 1) * D)); });
        resolve(classes);
      };
    };
  }));
  const classes = JSON.parse(await (await h.get('/task')).text()).classes;
  const files = PHOTOS.map((p) => path.join(photos, p.folder, p.file));
  const native = nativeFeatures(build, ['--model', model], files);
  PHOTOS.forEach((p, i) => {
    const mine = stored[classes.indexOf(p.folder)];
    const distance = mine ? oneMinusCosine(Float32Array.from(mine), native[i]) : 1;
    check(distance <= p.bound, `${p.folder}/${p.file} (${p.width} x ${p.height}): the page's features are the ` +
      `native ones within 1 - cosine ${distance.toExponential(2)} (bound ${p.bound})`);
  });
} catch (e) {
  check(false, `${e.message}\n${watch.tail()}`);
} finally {
  await browser.close();
  h.cleanup();
}
process.exit(h.summary('chromium large images', shots));
