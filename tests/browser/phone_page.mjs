// The volunteer page on a phone, in Debian's Chromium emulating one
// (viewport, touch, device scale factor, a phone's user agent) against a
// real aggregator, by taps alone:
//   1. join, a demo share, a round, "Try it" (the file picker opened by a
//      tap), "Forget me"; at each step, at 360x740 and at 390x844, no
//      element reaches past the viewport's sides and every button, file
//      picker, class picker and check box is at least 40 px high and wide;
//      the page says its device has memory enough for the threaded build,
//      and runs it; on a slow network (the WebAssembly build and the demo
//      share held back until the page says it is loading them) it says
//      what it is loading; once connected it counts itself among the
//      volunteers at once (the page's clock paused: no later poll);
//      "Try it" refuses an empty file and a WebP, saying why, without the
//      last result under it; the page names its icon (no /favicon.ico
//      asked for, answered 404) and no request is answered 404;
//   2. a device whose memory (navigator.deviceMemory) holds only the
//      single-threaded build's peak for the model: the page says so and
//      runs it on one thread;
//   3. one whose memory holds neither: the model is refused before its
//      download (no request for it), with the reason, and nothing can start.
//   node phone_page.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL.gguf OUT
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromiumTest, launchChromium, watchPage } from './harness.mjs';
import { png } from './image_files.mjs';
import { fmnistImages } from './parity.mjs';
import { peakMiB } from '../../web/memory.js';

const { root, model, emBuild, out, shots, h } = chromiumTest();
const { check, until } = h;

const task = JSON.parse(readFileSync(path.join(root, 'tasks/fmnist-pathological.json'), 'utf8'));
Object.assign(task, { model, clients: 3, rounds: 1, min_clients: 1, clients_per_round: 1 });
writeFileSync(path.join(out, 'task.json'), JSON.stringify(task));
await h.startAggregator('aggregator', ['--task', path.join(out, 'task.json'), '--state', path.join(out, 'state'),
  '--min-clients', '1', '--deadline', '600', '--round-pause', '1', '--web', path.join(root, 'web'),
  '--wasm', path.join(emBuild, 'wasm-client')]);
const shoe = fmnistImages(0, 1);
const tryFile = path.join(out, 'try.png');
writeFileSync(tryFile, png(shoe.rgba, 28, 28));

const SIZES = [[360, 740], [390, 844]];
const phone = {
  viewport: { width: 390, height: 844 }, deviceScaleFactor: 2.75, isMobile: true, hasTouch: true,
  userAgent: 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) ' +
    'Chrome/156.0.0.0 Mobile Safari/537.36',
};
// Requests for the URLs of pattern held back until released, as a slow
// network would (without the timing): { release() }.
async function holdBack(context, pattern) {
  let release = null;
  const released = new Promise((resolve) => { release = resolve; });
  await context.route(pattern, async (route) => {
    await released;
    await route.continue();
  });
  return { release };
}

// navigator.deviceMemory as a device of gib GiB would give it (in the page; the worker is told by the page)
const withMemory = (gib) => Object.defineProperty(Navigator.prototype, 'deviceMemory', { get: () => gib });

const browser = await launchChromium();
// Each part on a page of its own: one that fails does not keep the others from running.
async function part(name, options, memoryGiB, fn) {
  const context = await browser.newContext(options);
  if (memoryGiB) await context.addInitScript(withMemory, memoryGiB);
  const page = await context.newPage();
  const watch = watchPage(page);
  try {
    await fn(page, watch);
  } catch (e) {
    check(false, `${name}: ${e.message}\n${watch.tail()}`);
  } finally {
    writeFileSync(path.join(out, `${name.replace(/\W+/g, '-')}.console.log`), watch.lines.join('\n'));
    await context.close();
  }
}

// At both sizes: nothing past the viewport's sides, and the touch targets finger-sized.
async function fits(page, step) {
  for (const [width, height] of SIZES) {
    await page.setViewportSize({ width, height });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const m = await page.evaluate(() => {
      const shown = [...document.body.querySelectorAll('*')].filter((el) => el.getClientRects().length > 0);
      const name = (el) => el.id || `${el.tagName.toLowerCase()}.${el.className || ''} "${el.textContent.trim().slice(0, 20)}"`;
      const past = shown.filter((el) => {
        const r = el.getBoundingClientRect();
        return r.width > 0 && (r.left < -0.5 || r.right > innerWidth + 0.5);
      }).map(name);
      const small = [...document.querySelectorAll('button, label.button, label.check, select')]
        .filter((el) => el.getClientRects().length > 0).map((el) => ({ el, r: el.getBoundingClientRect() }))
        .filter(({ r }) => r.height < 40 || r.width < 40).map(({ el, r }) => `${name(el)} ${r.width}x${r.height}`);
      return { past, small, scroll: document.documentElement.scrollWidth - innerWidth, elements: shown.length };
    });
    check(m.past.length === 0 && m.scroll <= 0, `${step}, ${width}x${height}: none of the ${m.elements} elements ` +
      `shown reaches past the viewport${m.past.length ? `: ${m.past.slice(0, 8).join('; ')}` : ''}`);
    check(m.small.length === 0, `${step}, ${width}x${height}: the touch targets are at least 40 px` +
      `${m.small.length ? `; smaller: ${m.small.join('; ')}` : ''}`);
    await page.screenshot({ path: path.join(shots, `${step.replace(/\W+/g, '-')}-${width}x${height}.png`), fullPage: true });
  }
}

try {
  // 1. the whole visit by taps
  await part('a phone', phone, 0, async (page, watch) => {
    let modelRequests = 0;
    const missing = [];
    page.on('request', (r) => { if (r.url().includes('/model/')) modelRequests++; });
    page.on('response', (r) => { if (r.status() === 404) missing.push(r.url()); });
    await page.clock.install();
    const wasm = await holdBack(page.context(), '**/wasm/*.wasm');
    await page.goto(h.base);
    const loading = await until('the WebAssembly build\'s progress', async () => {
      const said = await watch.text('model-progress');
      return /WebAssembly/.test(said) && said;
    }, 60).catch((e) => e.message).finally(wasm.release);
    check(/^loading the WebAssembly build/.test(loading), `while its WebAssembly build loads the page says so: ${loading}`);
    await until('the page', async () => (await watch.stage()) === 'empty', 60);
    const memory = await watch.text('memory'), said = await watch.text('model');
    check(/enough for the threaded build/.test(memory) && /running in WebAssembly with \d+ threads/.test(said),
      `the page says its device holds the threaded build, and runs it: ${memory}; ${said}`);
    await fits(page, '1 loaded');
    const shard = await holdBack(page.context(), '**/demo/shard*');
    await page.tap('#demo');
    const downloading = await until('the demo share\'s progress', async () => {
      const said = await watch.text('encode-progress');
      return /demo share/.test(said) && said;
    }, 60).catch((e) => e.message).finally(shard.release);
    check(/^downloading the demo share/.test(downloading), `while the demo share downloads the page says so: ${downloading}`);
    await until('the demo share', async () => (await watch.stage()) === 'ready', 120);
    await fits(page, '2 demo share');
    await page.clock.pauseAt(Date.now() + 1000);
    await page.tap('#join');
    await until('the welcome', async () => /connected as volunteer/.test(await watch.text('connection')), 60);
    const counted = await until('the count', async () => (await watch.text('volunteers')) === '1', 10)
      .then(() => '1', async () => watch.text('volunteers'));
    check(counted === '1', `once connected the page counts its volunteer at once (no later poll): ${counted}`);
    await page.clock.resume();
    // the federation's one round, then its end: the page says it is done after the round's figures
    await until('a round', async () => (await h.status()).done === 1 && (await watch.stage()) === 'done', 300);
    const progress = await watch.text('round-progress');
    check(/your accuracy \d+\.\d%/.test(progress), `a round on the phone, then the federation's end: ${progress}`);
    await fits(page, '3 a round');
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.tap('label:has(#try-file)')]);
    await chooser.setFiles(tryFile);
    await until('"Try it"', async () => (await page.locator('#try-result .bars .best').count()) === 1, 60);
    check(true, `"Try it" classifies the image: ${(await watch.text('try-result')).split('\n')[0]}`);
    await fits(page, '4 try it');
    const webp = Buffer.from(await page.evaluate(async () => {
      const canvas = new OffscreenCanvas(28, 28), g = canvas.getContext('2d');
      g.fillStyle = '#c04040';
      g.fillRect(4, 4, 20, 20);
      return Array.from(new Uint8Array(await (await canvas.convertToBlob({ type: 'image/webp' })).arrayBuffer()));
    }));
    for (const [file, why] of [[{ name: 'empty.png', mimeType: 'image/png', buffer: Buffer.alloc(0) }, /^empty\.png: the file is empty$/],
      [{ name: 'shoe.webp', mimeType: 'image/webp', buffer: webp }, /^shoe\.webp: WebP: not PNG or JPEG$/]]) {
      await page.setInputFiles('#try-file', file);
      const said = await until(`"Try it" on ${file.name}`, async () => (await page.locator('#try-error').isVisible()) &&
        (await watch.text('try-error')) !== '' && watch.text('try-error'), 30).catch((e) => e.message);
      const stale = (await watch.text('try-result')).trim();
      check(why.test(said) && stale === '', `"Try it" refuses ${file.name}, saying why, with no result under it: ` +
        `${said}${stale ? ` (shown: ${stale.split('\n')[0]})` : ''}`);
      await page.setInputFiles('#try-file', tryFile); // the error goes, a result comes
      await until('"Try it" again', async () => (await page.locator('#try-result .bars .best').count()) === 1 &&
        await page.locator('#try-error').isHidden(), 60);
    }
    // a browser with a window asks for /favicon.ico where the page names no icon (headless Chromium does not)
    const icon = await page.evaluate(async () => {
      const link = document.querySelector('link[rel="icon"]');
      const r = link ? await fetch(link.href) : null;
      return r ? `${new URL(link.href).pathname} ${r.status} ${r.headers.get('content-type')}` : 'none';
    });
    check(/ 200 image\//.test(icon) && missing.length === 0, `the page names an icon the server serves (${icon}), and ` +
      `no request of the visit was answered 404${missing.length ? `: ${missing.join(', ')}` : ''}`);
    await page.tap('#forget');
    await until('the page after forgetting', async () => (await watch.stage()) === 'forgotten', 60);
    const left = await page.evaluate(async () => (await indexedDB.databases()).map((d) => d.name));
    check(!left.includes('sdfed') && modelRequests === 1, `"Forget me" deleted the page's database (left: ${left})`);
    await fits(page, '5 forgotten');
  });

  // 2. memory for the single-threaded build only (its peak fits half of it, the threaded one's does not)
  const peak = peakMiB(readFileSync(model).length);
  const between = (peak.single + peak.threaded) / 2 / 1024 / 0.5;
  await part('a phone with little memory', phone, between, async (page, watch) => {
    await page.goto(h.base);
    await until('the page', async () => (await watch.stage()) === 'empty', 60);
    const memory = await watch.text('memory'), said = await watch.text('model');
    check(/too little for the threaded build.*the single-threaded one runs/.test(memory) &&
      /running in WebAssembly on one thread/.test(said), `the page says which build, and runs it: ${memory}; ${said}`);
    await fits(page, '6 single-threaded');
  });

  // 3. too little memory for the model: refused before its download
  await part('a phone with too little memory', phone, 0.25, async (page, watch) => {
    let modelRequests = 0;
    page.on('request', (r) => { if (r.url().includes('/model/')) modelRequests++; });
    await page.goto(h.base);
    await until('the refusal', async () => (await watch.stage()) === 'refused', 60);
    const error = await watch.text('error');
    check(/needs about \d+ MiB of memory while it runs, and this device has about 0\.25 GiB .*not downloaded/.test(error) &&
      modelRequests === 0 && await page.locator('#demo').isDisabled() && await page.locator('#join').isDisabled(),
      `the model is refused before its download, with the reason (${modelRequests} model requests): ${error}`);
    await fits(page, '7 refused');
  });
} finally {
  await browser.close();
  h.cleanup();
}
process.exit(h.summary('chromium phone', shots));
