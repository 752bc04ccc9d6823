// Photos from the camera on the volunteer page (web/camera.js), in Debian's
// Chromium against a real aggregator, the camera a fake device fed from a
// Y4M file this test writes (every frame one synthetic image; the file is
// written again with the other class's image before the camera starts
// again, so whatever frame the shutter takes is that image):
//   1. 3 photos of one class, the camera stopped and started on the other
//      image, 3 photos of the other class kept as photos, a 7th with "keep"
//      off, undone: the counts per class say so as they grow, the 6 photos
//      kept are the images the test wrote (each nearer its own than the
//      other), and the features the page stored for them are the native
//      features of the same pixels (`sdfed encode-image` on the kept PNGs)
//      within 1 - cosine <= 1e-5; then the volunteer joins and completes a
//      round with them;
//   2. the camera refused (no fake permission prompt; Chromium denies it):
//      the page says so, and the camera app's file input stays, refuses a
//      WebP as a folder's would be refused ("WebP: not PNG or JPEG"), and
//      takes a photo (one of the kept PNGs, features again the native
//      ones); a file chosen after it is added beside it (the photo kept),
//      the same file chosen again is not added twice and is named as such,
//      a reload keeps both, and "Remove all my images" asks (naming the
//      kept photo) before it drops them, as a demo share does before it
//      takes the place of a file chosen again; a browser without
//      getUserMedia: the page says so too.
//   node camera_page.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL.gguf OUT
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromiumTest, launchChromium, watchPage } from './harness.mjs';
import { nativeFeatures, oneMinusCosine } from './native_features.mjs';

const { root, build, emBuild, model, out, shots, h } = chromiumTest();
const { check, until } = h;

const MAX_ONE_MINUS_COSINE = 1e-5;
const W = 160, H = 120; // even: the chroma planes' 2 x 2 blocks never straddle an edge
// Two flat-coloured images, RGB: a red and a green half; a yellow square on blue.
const IMAGES = [
  (x) => (x < 80 ? [200, 40, 40] : [40, 180, 60]),
  (x, y) => (x >= 40 && x < 120 && y >= 30 && y < 90 ? [230, 210, 40] : [30, 60, 200]),
].map((colour) => {
  const rgb = new Uint8Array(W * H * 3);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) rgb.set(colour(x, y), 3 * (y * W + x));
  return rgb;
});

// rgb as a Y4M file of 5 identical frames (I420, BT.601's studio range)
function writeY4m(file, rgb) {
  const clamp = (v) => Math.max(0, Math.min(255, Math.round(v)));
  const Y = new Uint8Array(W * H), U = new Uint8Array(W * H / 4), V = new Uint8Array(W * H / 4);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) {
    const [r, g, b] = rgb.subarray(3 * (y * W + x), 3 * (y * W + x) + 3);
    Y[y * W + x] = clamp(16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255);
    if (x % 2 === 0 && y % 2 === 0) {
      U[(y / 2) * (W / 2) + x / 2] = clamp(128 + (-37.797 * r - 74.203 * g + 112 * b) / 255);
      V[(y / 2) * (W / 2) + x / 2] = clamp(128 + (112 * r - 93.786 * g - 18.214 * b) / 255);
    }
  }
  const frame = Buffer.concat([Buffer.from('FRAME\n'), Y, U, V]);
  writeFileSync(file, Buffer.concat([Buffer.from(`YUV4MPEG2 W${W} H${H} F10:1 Ip A1:1 C420jpeg\n`),
    ...Array(5).fill(frame)]));
}

const task = JSON.parse(readFileSync(path.join(root, 'tasks/fmnist-pathological.json'), 'utf8'));
Object.assign(task, { model, clients: 3, rounds: 1, min_clients: 1, clients_per_round: 1 });
writeFileSync(path.join(out, 'task.json'), JSON.stringify(task));
await h.startAggregator('aggregator', ['--task', path.join(out, 'task.json'), '--state', path.join(out, 'state'),
  '--min-clients', '1', '--deadline', '600', '--round-pause', '1', '--web', path.join(root, 'web'),
  '--wasm', path.join(emBuild, 'wasm-client')]);

// The page's stored images (IndexedDB): features per image (arrays), labels,
// and each photo kept as its bytes (or null), with its mean distance to
// each of the test's images (per channel value).
const storedImages = (page) => page.evaluate(async (images) => {
  const d = await new Promise((resolve, reject) => {
    const r = indexedDB.open('sdfed');
    r.onerror = () => reject(r.error);
    r.onsuccess = () => {
      const all = r.result.transaction('datasets').objectStore('datasets').getAll();
      all.onsuccess = () => resolve(all.result[0]);
    };
  });
  const D = d.features.length / d.labels.length;
  const distances = async (blob) => {
    const bitmap = await createImageBitmap(blob, { colorSpaceConversion: 'none', premultiplyAlpha: 'none' });
    const c = new OffscreenCanvas(bitmap.width, bitmap.height).getContext('2d');
    c.drawImage(bitmap, 0, 0);
    const px = c.getImageData(0, 0, bitmap.width, bitmap.height).data;
    return images.map((rgb) => {
      if (rgb.length / 3 !== px.length / 4) return Infinity;
      let sum = 0;
      for (let p = 0; p < rgb.length / 3; p++) for (let k = 0; k < 3; k++) sum += Math.abs(px[4 * p + k] - rgb[3 * p + k]);
      return sum / rgb.length;
    });
  };
  const photos = [];
  for (const p of d.photos || [])
    photos.push(p.photo ? { label: p.label, bytes: Array.from(new Uint8Array(await p.photo.arrayBuffer())),
      distances: await distances(p.photo) } : { label: p.label, bytes: null });
  return { labels: Array.from(d.labels), photos,
    features: Array.from(d.labels, (_, i) => Array.from(d.features.subarray(i * D, (i + 1) * D))) };
}, IMAGES.map((rgb) => Array.from(rgb)));

// the features of photos (stored, with their PNGs) against the native ones of the same PNGs
function sameAsNative(stored, what) {
  const files = stored.photos.map((p, i) => {
    const file = path.join(out, `${what}-${i}.png`);
    writeFileSync(file, Buffer.from(p.bytes));
    return file;
  });
  const native = nativeFeatures(build, ['--model', model], files), first = stored.features.length - files.length;
  const worst = Math.max(...native.map((f, i) => oneMinusCosine(stored.features[first + i], f)));
  check(worst <= MAX_ONE_MINUS_COSINE && native[0].length === stored.features[0].length,
    `${what}: the page's features of the ${files.length} photos are the native ones of the same pixels ` +
    `(1 - cosine at most ${worst.toExponential(2)}, bound ${MAX_ONE_MINUS_COSINE})`);
  return files;
}

const video = path.join(out, 'camera.y4m');
writeY4m(video, IMAGES[0]);
let photoFiles = [];
let browser = await launchChromium(['--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream',
  `--use-file-for-fake-video-capture=${video}`]);
let watch = { tail: () => '' };
try {
  // 1. photos of two classes, undo, features, a round
  const page = await (await browser.newContext()).newPage();
  watch = watchPage(page);
  await page.goto(h.base);
  await until('the page', async () => (await watch.stage()) === 'empty', 60);
  const classes = await page.locator('#camera-class option').allTextContents();
  const counts = () => watch.text('camera-counts');
  const shoot = async (expected) => {
    await until('the shutter', () => page.locator('#shutter').isEnabled(), 30);
    await page.click('#shutter');
    await until(`"${expected}"`, async () => (await counts()) === expected, 60);
  };
  await page.selectOption('#camera-class', '0');
  await page.check('#keep-photos');
  check(/the photo itself is kept in this browser too/.test(await watch.text('camera-kept')),
    `the page says the photos are kept when asked: ${await watch.text('camera-kept')}`);
  await page.click('#camera-start');
  for (let n = 1; n <= 3; n++) await shoot(`Photos: ${classes[0]} ${n} (${n} of them kept as photos).`);
  check(true, `3 photos of ${classes[0]}, counted as they came`);
  await page.screenshot({ path: path.join(shots, '01-camera.png'), fullPage: true });
  await page.click('#camera-stop');
  writeY4m(video, IMAGES[1]);
  await page.selectOption('#camera-class', '1');
  await page.click('#camera-start');
  for (let n = 1; n <= 3; n++) await shoot(`Photos: ${classes[0]} 3, ${classes[1]} ${n} (${3 + n} of them kept as photos).`);
  await page.uncheck('#keep-photos');
  check(/only the features are kept in this browser, the photo itself is not/.test(await watch.text('camera-kept')),
    `the page says only features are kept otherwise: ${await watch.text('camera-kept')}`);
  await shoot(`Photos: ${classes[0]} 3, ${classes[1]} 4 (6 of them kept as photos).`);
  const seven = await storedImages(page);
  check(seven.labels.length === 7 && seven.photos[6].bytes === null,
    `a 7th photo with "keep" off: its features stored (${seven.labels.length} images), the photo not`);
  check(/Undo the last photo \(/.test(await watch.text('undo')), `undo names the last photo's class: ${await watch.text('undo')}`);
  await page.click('#undo');
  await until('the undo', async () => (await counts()) === `Photos: ${classes[0]} 3, ${classes[1]} 3 (6 of them kept as photos).`, 30);
  const stored = await storedImages(page);
  check(stored.labels.join() === '0,0,0,1,1,1' && /^6 images ready/.test(await watch.text('data-summary')),
    `undo leaves the 6 photos (labels ${stored.labels.join()}): ${await watch.text('data-summary')}`);
  const near = stored.photos.every((p) => p.distances[p.label] < 8 && p.distances[p.label] * 4 < p.distances[1 - p.label]);
  check(near, `each kept photo is the image the camera was fed for its class (mean distances ${
    stored.photos.map((p) => p.distances.map((x) => x.toFixed(1)).join('/')).join(', ')})`);
  photoFiles = sameAsNative(stored, 'camera');
  await page.screenshot({ path: path.join(shots, '02-photos.png'), fullPage: true });
  await page.click('#join');
  await until('the round', async () => (await h.status()).done === 1 && (await watch.stage()) === 'done', 300);
  check(true, `the volunteer joined and completed a round on the photos: ${await watch.text('round-progress')}`);
} catch (e) {
  check(false, `${e.message}\n${watch.tail()}`);
} finally {
  await browser.close();
}

// 2. the camera refused: the page says so, the camera app's input stays and works
browser = await launchChromium(['--use-fake-device-for-media-stream', '--deny-permission-prompts']);
try {
  const page = await (await browser.newContext()).newPage();
  watch = watchPage(page);
  await page.goto(h.base);
  await until('the page', async () => (await watch.stage()) === 'empty', 60);
  await page.click('#camera-start');
  const said = await until('the refusal', async () => (await page.locator('#camera-error').isVisible()) &&
    watch.text('camera-error'), 30);
  check(/camera was refused/.test(said) && await page.locator('label:has(#camera-file)').isVisible() &&
    await page.locator('#camera-preview').isHidden(), `the page says the camera was refused, the file input stays: ${said}`);
  await page.screenshot({ path: path.join(shots, '03-refused.png'), fullPage: true });
  const webp = Buffer.from(await page.evaluate(async ({ width, height }) => {
    const canvas = new OffscreenCanvas(width, height), g = canvas.getContext('2d');
    g.fillStyle = '#c04040';
    g.fillRect(0, 0, width, height);
    return Array.from(new Uint8Array(await (await canvas.convertToBlob({ type: 'image/webp' })).arrayBuffer()));
  }, { width: W, height: H }));
  await page.setInputFiles('#camera-file', { name: 'photo.webp', mimeType: 'image/webp', buffer: webp });
  const refused = await until('the WebP\'s refusal', async () => (await page.locator('#camera-error').isVisible()) &&
    watch.text('camera-error'), 30).catch((e) => e.message);
  check(/^the photo could not be used: WebP: not PNG or JPEG$/.test(refused) &&
    (await watch.text('camera-counts')) === 'No photos yet.', `the camera app's WebP is refused: ${refused}; ` +
    `${await watch.text('camera-counts')}`);
  if (photoFiles.length) {
    await page.selectOption('#camera-class', '1');
    await page.check('#keep-photos');
    await page.setInputFiles('#camera-file', photoFiles[5]);
    await until('the camera app\'s photo', async () => /^Photos: \S+ 1 \(1 of them/.test(await watch.text('camera-counts')), 60);
    sameAsNative(await storedImages(page), 'camera-app');
    // the photo is the volunteer's: a file chosen after it is added beside it, the same file again is not added
    // twice, a reload keeps both, and only "Remove all my images", asked first, drops them
    const asked = [];
    page.on('dialog', (d) => asked.push(d.message()));
    const photoCount = `Photos: ${await page.locator('#camera-class option').nth(1).textContent()} 1 (1 of them kept as photos).`;
    const choose = async (file, what) => {
      await page.setInputFiles('#files', file);
      await until('the class step', async () => (await watch.stage()) === 'classes', 30);
      await page.locator('#groups .group select').first().selectOption('0');
      await page.click('#groups button');
      await until(what, async () => (await watch.stage()) === 'ready', 60);
      return { summary: await watch.text('data-summary'), photos: await watch.text('camera-counts') };
    };
    const added = await choose(photoFiles[0], 'a file chosen after the photo');
    const afterFile = await storedImages(page);
    check(/^2 images ready/.test(added.summary) && added.photos === photoCount && afterFile.labels.join() === '0,1' &&
      afterFile.photos.length === 1 && afterFile.photos[0].bytes !== null,
    `a file chosen after a kept photo is added beside it (labels ${afterFile.labels.join()}): ${added.summary} ` +
      `${added.photos}`);
    const again = await choose(photoFiles[0], 'the same file chosen again');
    const notUsed = await page.locator('#data-skipped').textContent();
    check(/^2 images ready/.test(again.summary) && again.photos === photoCount &&
      /camera-0\.png: already among your images/.test(notUsed),
    `the same file chosen again is not added twice, and is named as such: ${again.summary} ${notUsed}`);
    await page.reload();
    await until('the reloaded page', async () => (await watch.stage()) === 'ready', 60);
    check(/^2 images ready/.test(await watch.text('data-summary')) && await watch.text('camera-counts') === photoCount,
      `a reload keeps the file and the photo: ${await watch.text('data-summary')}`);
    await page.click('#remove-images');
    await until('the images removed', async () => (await watch.stage()) === 'empty', 30);
    check(asked.some((q) => /Remove your 2 images \(one of them a photo kept only in this browser\)/.test(q)) &&
      await watch.text('data-summary') === 'No images yet.' && await watch.text('camera-counts') === 'No photos yet.' &&
      (await storedImages(page)).labels.length === 0,
    `"Remove all my images" asks first (${asked.join(' | ')}), then drops the file and the photo`);
    await page.screenshot({ path: path.join(shots, '04-removed.png'), fullPage: true });
    await choose(photoFiles[0], 'a file chosen again');
    await page.click('#demo');
    await until('the demo share', async () => /demo share/.test(await watch.text('data-summary')), 120);
    check(asked.some((q) => /^A demo share takes the place of your 1 image, deleting what you added/.test(q)),
      `a demo share asks before it takes the place of the volunteer's images: ${asked[asked.length - 1]}`);
  }
  const context = await browser.newContext();
  await context.addInitScript(() => { delete Navigator.prototype.mediaDevices; });
  const bare = await context.newPage();
  watch = watchPage(bare);
  await bare.goto(h.base);
  await until('the page without getUserMedia', async () => (await watch.stage()) === 'empty', 60);
  await bare.click('#camera-start');
  const none = await until('the page to say it has no camera', async () =>
    (await bare.locator('#camera-error').isVisible()) && watch.text('camera-error'), 30);
  check(/gives the page no camera/.test(none) && await bare.locator('label:has(#camera-file)').isVisible(),
    `without getUserMedia the page says so, the file input stays: ${none}`);
} catch (e) {
  check(false, `${e.message}\n${watch.tail()}`);
} finally {
  await browser.close();
  h.cleanup();
}
process.exit(h.summary('chromium camera', shots));
