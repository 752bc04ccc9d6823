// The volunteer page in Debian's Chromium (playwright-core) against a real
// aggregator on loopback, with 2 headless clients, on a task with its own
// name, description, class names and texts, template and prompt_init:
//   1. the page loads, takes a demo shard, extracts features, joins;
//   2. it trains 2 rounds and shows its accuracy; the aggregator is then
//      stopped and restarted on its state, and the page reconnects by itself
//      (waiting within web/backoff.js's windows; saying that the server
//      cannot be reached, and before that, offline, that the device is) and
//      trains the last round;
//      its accuracy per round is what `sdfed sim` computes for the same shard;
//      its round line counts rounds from 0 ("finished: 3 of 3 done"), and
//      the host's status.html fits a phone's 390 px, the volunteers listed;
//   3. a reload keeps the personal prompt (the same bytes in IndexedDB, the
//      same accuracy restored);
//   4. every WebSocket frame the page sent carries the global prompt only;
//   5. "try it" classifies an image; a model with a wrong hash is refused
//      with a clear message; "forget me" deletes the page's database;
//   6. in the page's worker, the wasm gives the native step's results
//      (parity.mjs, step_native.c) within 1e-4, with the image tower on f32
//      activations and (features only, 1 - cosine) on the integer path;
//      the worker chooses relaxed SIMD (Chromium runs it), and with it
//      turned off runs simd128, whose step equals the native one too;
//   7. a wrong join key is refused, said beside Join, and not kept, nor a
//      kept one the server refuses; a second volunteer adds a folder of
//      her own images (PNGs; classes
//      from the sub-folder names, the one that is no class named as not
//      used); the server then comes back running another federation, which
//      the page reports as such and does not join.
// The federation has a join key: the page is opened at /?key=KEY as a host
// hands it out (and later at / alone, the browser having kept it), and
// status.html at /status.html?key=KEY; the content security policy refuses
// nothing the pages and their workers (the threads' too) do.
// A screenshot of each stage goes to OUT/screenshots.
//   node run.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL.gguf OUT
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromiumTest, cspViolations, launchChromium, watchPage } from './harness.mjs';
import { png } from './image_files.mjs';
import { CLASSES, PARITY_INT8, PARITY_METHODS, compare, fmnistImages, makeInputs } from './parity.mjs';

const { root, build, emBuild, model, out, shots, h } = chromiumTest();
const { check, start, until } = h;

const task = JSON.parse(readFileSync(path.join(root, 'tasks/fmnist-pathological.json'), 'utf8'));
// the task's own text: a name and a description (shown as text, never
// markup), a renamed class, class texts for the prompts, a template and a
// prompt initialisation (the page's accuracy must still be the simulator's)
const NAMES = CLASSES.map((c) => (c === 'T-shirt/top' ? 'Tee' : c));
Object.assign(task, { model, clients: 3, clients_per_round: 3, rounds: 3, name: 'Clothes & shoes',
  description: 'Ten <kinds> of clothing, one renamed',
  classes: NAMES.map((name, i) => (i % 3 ? name : { name, text: CLASSES[i].toLowerCase() })),
  template: 'a grey photo of a {}.', prompt_init: 'a photo of a' });
writeFileSync(path.join(out, 'task.json'), JSON.stringify(task));
const state = path.join(out, 'state');
// The aggregator listens on a port the kernel chooses; a restart takes that
// port again (the page reconnects to the address it has).
h.key = 'volunteers-2026.x_y~z';
const startAggregator = (name, stateDir = state) => h.startAggregator(name, ['--task', path.join(out, 'task.json'),
  '--state', stateDir, '--min-clients', '3', '--deadline', '600', '--round-pause', '1', '--web', path.join(root, 'web'),
  '--wasm', path.join(emBuild, 'wasm-client'), '--join-key', h.key]);
const status = h.status;

await startAggregator('aggregator');
for (const k of [0, 1])
  start(`client${k}`, path.join(build, 'sdfed-client'), ['--server', `ws://127.0.0.1:${h.port}`, '--client-index',
    String(k), '--model', model, '--cache', path.join(out, 'cache'), '--token-file', path.join(out, `token${k}`),
    '--join-key', h.key]);
await until('2 headless clients', async () => (await status()).clients === 2, 120);

const browser = await launchChromium();
let exitCode = 1;
let watch = { lines: [], tail: () => '' };
try {
  const context = await browser.newContext();
  const refusedByPolicy = cspViolations(context);
  const page = await context.newPage();
  watch = watchPage(page);
  const { stage, text } = watch;
  const sent = [];
  page.on('websocket', (ws) => ws.on('framesent', (f) => sent.push(f.payload)));
  let modelDownloads = 0;
  page.on('request', (r) => { if (r.url().includes('/model/')) modelDownloads++; });
  const waitStage = (what, ok, seconds) => until(`stage ${what}`, async () => ok(await stage()), seconds);
  const shot = (name) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
  const storedState = () => page.evaluate(() => new Promise((resolve, reject) => {
    const r = indexedDB.open('sdfed');
    r.onerror = () => reject(r.error);
    r.onsuccess = () => {
      const d = r.result;
      if (!d.objectStoreNames.contains('state')) return resolve([]);
      const all = d.transaction('state').objectStore('state').getAll();
      all.onsuccess = () => resolve(all.result.map((s) => ({ ...s, params: s.params ? Array.from(s.params) : null })));
    };
  }));

  // 1. load, demo shard, features, join
  const unkeyed = await (await fetch(`${h.base}/task`)).text();
  check(unkeyed.startsWith('this federation needs its join key'), `without its key the federation is closed: ${unkeyed}`);
  await page.goto(`${h.base}/?key=${h.key}`);
  await waitStage('empty', (s) => s === 'empty', 60);
  const shown = await text('classes');
  check(shown.includes('Ankle boot') && shown.includes('Tee') && !shown.includes('T-shirt'),
    `the page shows the task's class names: ${shown}`);
  check(await page.title() === 'Clothes & shoes · sdfed' && await text('federation-name') === 'Clothes & shoes' &&
    await text('federation-description') === 'Ten <kinds> of clothing, one renamed' &&
    await page.evaluate(() => !document.querySelector('kinds')),
    `the page shows the task's name and description as text: ${await page.title()}`);
  check(await page.evaluate(() => crossOriginIsolated), 'the page is cross-origin isolated (COOP/COEP)');
  await shot('01-loaded');
  await page.click('#demo');
  await waitStage('ready', (s) => s === 'ready', 120);
  const summary = await text('data-summary');
  check(/\d+ images ready .*demo share 2/.test(summary), `the demo shard's features are extracted: ${summary}`);
  await shot('02-features');
  await page.click('#join');

  // 2. two rounds, a server restart, the last round
  await waitStage('2 trained rounds', (s) => /^trained-[2-9]/.test(s), 300);
  const progressText = await text('round-progress');
  check(/your accuracy \d+\.\d%/.test(progressText), `the page shows its accuracy: ${progressText}`);
  // round ids count from 0 in every line of the page too: its second round is round 1
  check(progressText.startsWith('round 1: '), `the page's round-progress line names round 1: ${progressText}`);
  check((await page.locator('#chart circle').count()) >= 2, 'the chart has a point per trained round');
  await shot('03-trained');
  // the device offline (its network gone, the socket still open): the page says so at once, and that it
  // waits, and is back when the network is
  await context.setOffline(true);
  const offline = await until('the page to say it is offline', async () =>
    (await page.locator('#connection').getAttribute('data-state')) === 'offline' && text('connection'), 10)
    .catch(() => text('connection'));
  const offlineStatus = await text('training-status');
  check(/offline/.test(offline) && /This device is offline/.test(offlineStatus),
    `offline, the page says so: "${offline}", "${offlineStatus}"`);
  await context.setOffline(false);
  await until('the page back online', async () =>
    (await page.locator('#connection').getAttribute('data-state')) === 'online', 60);
  const roundNow = /^(\d+) · \1 of 3 done/;
  const during = await until('the round line', async () => roundNow.test(await text('round')) && text('round'), 15)
    .catch(() => text('round'));
  check(roundNow.test(during), `the page's round line during the federation: ${during}`);
  await h.stopAggregator();
  await until('the page to notice', async () => (await text('connection')).includes('retrying'), 30);
  const unreachable = await text('training-status');
  check(/^The server cannot be reached/.test(unreachable), `the server gone, the page says so: ${unreachable}`);
  // it waits as web/backoff.js says: within its try's window, 1 s for the first after a welcome
  const waitMs = Number(await page.locator('#connection').getAttribute('data-retry-ms'));
  const tries = Number(await page.locator('#connection').getAttribute('data-tries'));
  check(tries >= 1 && waitMs >= 0 && waitMs < Math.min(30000, 1000 * 2 ** (tries - 1)),
    `the page waits ${waitMs} ms before try ${tries}, within the backoff window`);
  await shot('04-server-gone');
  await startAggregator('aggregator-restarted');
  await until('the federation to finish', async () => (await status()).done === 1, 300);
  await waitStage('3 trained rounds', (s) => /^trained-3/.test(s) || s === 'done', 60);
  const history = (await storedState())[0].history;
  check(history.length === 3, 'after the restart the page trained the last round');
  // the page is shard 2 of the task: it trains as `sdfed sim`'s client 2 does
  const sim = spawnSync(path.join(build, 'sdfed'), ['sim', '--task', path.join(out, 'task.json'), '--out',
    path.join(out, 'sim'), '--cache', path.join(out, 'cache')]);
  const simRounds = sim.status === 0 ? JSON.parse(readFileSync(path.join(out, 'sim/results.json'))).rounds : [];
  const pairs = history.map((h) => [h.accuracy, simRounds[h.round] ? simRounds[h.round].client_accuracy[2] : NaN]);
  check(pairs.length === 3 && pairs.every(([a, b]) => Math.abs(a - b) <= 0.01),
    `the page's accuracy per round equals sdfed sim's client 2 (within 1 point): ` +
    pairs.map(([a, b]) => `${(100 * a).toFixed(2)}% / ${(100 * b).toFixed(2)}%`).join(', '));
  await shot('05-finished');
  // the page counts rounds from 0 and says how many are done (docs/protocol.md)
  const roundLine = await until('the page to see the end', async () => {
    const t = await text('round');
    return t.startsWith('finished') && t;
  }, 30).catch(() => text('round'));
  check(roundLine === 'finished: 3 of 3 done', `the page's round line at the end: ${roundLine}`);
  // status.html for a host on a phone's 390 px: nothing wider than the screen but the volunteers' table, which
  // scrolls in its own box; the chart scaled down; the 3 volunteers listed, anonymous
  const phone = await context.newPage();
  await phone.setViewportSize({ width: 390, height: 844 });
  await phone.goto(`${h.base}/status.html?key=${h.key}`);
  const layout = await phone.evaluate(() => ({
    page: document.documentElement.scrollWidth,
    chart: document.querySelector('svg').getBoundingClientRect().width,
    box: document.querySelector('.scroll').getBoundingClientRect().width,
    rows: document.querySelectorAll('.volunteers tr').length - 1,
    round: document.querySelector('.round').textContent,
    status: document.querySelector('a[href^="/status?"]').getAttribute('href'),
  }));
  check(layout.page <= 390 && layout.chart <= 390 && layout.box <= 390 && layout.rows === 3 &&
    layout.round === '3 of 3 done' && layout.status === `/status?key=${h.key}`,
  `status.html at 390 px, its links keyed: ${JSON.stringify(layout)}`);
  check((await page.locator('#status-link').getAttribute('href')).endsWith(`/status.html?key=${h.key}`),
    'the page links status.html with its key');
  await phone.screenshot({ path: path.join(shots, '05-status-390px.png'), fullPage: true });
  await phone.close();

  // 3. a reload keeps the personal prompt
  const before = (await storedState())[0];
  await page.reload();
  await waitStage('the resumed page', (s) => ['joined', 'done'].includes(s) || s.startsWith('trained'), 60);
  const restored = await until('the restored prompt', async () => /restored/.test(await text('resume-status')) &&
    (await text('resume-status')), 30);
  const after = (await storedState())[0];
  check(before.params && JSON.stringify(after.params) === JSON.stringify(before.params),
    'the saved prompts are the same bytes after a reload');
  check((await text('data-summary')) === summary && await page.locator('#encode-progress').isHidden(),
    'after a reload the image features come from storage, not extracted again');
  check(modelDownloads === 1, `the model was downloaded once for a load and a reload (${modelDownloads})`);
  const last = before.history[before.history.length - 1].accuracy;
  check(restored.includes(`${(100 * last).toFixed(1)}%`), `the restored prompt gives the last accuracy: ${restored}`);
  await shot('06-reloaded');

  // 4. what the page sent: hello, metrics, and update frames of the global shape only
  const binary = sent.filter((p) => typeof p !== 'string');
  const texts = sent.filter((p) => typeof p === 'string').map((p) => JSON.parse(p));
  const [rows, width] = (await (await h.get('/task')).json()).global_shape;
  const frameBytes = 16 + 8 + 4 * rows * width + 4;
  check(binary.length >= 3 && binary.every((b) => b.length === frameBytes && b.toString('latin1', 0, 4) === 'SDFT' &&
    b[5] === 2 && b.readUInt32LE(16) === rows && b.readUInt32LE(20) === width),
    `the ${binary.length} binary frames are update frames of the global prompt (${rows} x ${width}) only`);
  check(texts.every((m) => ['hello', 'metrics', 'heartbeat', 'leave'].includes(m.type) &&
    !JSON.stringify(m).includes('local') && !Object.values(m).some(Array.isArray)),
    `the ${texts.length} text frames are hello/metrics only, with no arrays`);
  check(texts.filter((m) => m.type === 'hello').every((m) => m.join_key === h.key), 'every hello carries the join key');

  // 5. try it; a wrong model; forget me
  const img = fmnistImages(7, 1); // a test image the shard may not hold
  await page.setInputFiles('#try-file', { name: 'item.png', mimeType: 'image/png', buffer: png(img.rgba, 28, 28) });
  const guess = await until('a prediction', async () => (await text('try-result')).trim(), 30);
  check(NAMES.some((c) => guess.includes(c)), `"try it" names a class of the task: ${guess.split('\n')[0]}`);
  await shot('07-try-it');

  const other = await context.newPage();
  await other.route('**/model/*.gguf', async (route) => {
    const r = await route.fetch();
    const body = Buffer.from(await r.body());
    body[body.length - 1] ^= 0xff;
    await route.fulfill({ response: r, body });
  });
  await other.goto(`${h.base}/`); // no key in its address: the browser kept it
  // the first page stored a good copy: drop it so this page must download
  await other.evaluate(() => new Promise((resolve) => {
    const r = indexedDB.open('sdfed');
    r.onsuccess = () => { const t = r.result.transaction('models', 'readwrite'); t.objectStore('models').clear(); t.oncomplete = () => { r.result.close(); resolve(); }; };
  }));
  await other.reload();
  const wrong = await until('the wrong-model message', async () => {
    const t = await other.locator('#error').innerText();
    return /does not match/.test(t) && t;
  }, 60);
  check(true, `a model with a wrong hash is refused: ${wrong}`);
  await other.screenshot({ path: path.join(shots, '08-wrong-model.png'), fullPage: true });
  await other.close();

  await page.click('#forget');
  await waitStage('the page after forgetting', (s) => s === 'forgotten', 60);
  const databases = await page.evaluate(async () => (await indexedDB.databases()).map((d) => d.name));
  check(!databases.includes('sdfed'), `after "forget me" the page's database is gone: ${JSON.stringify(databases)}`);
  await shot('09-forgotten');

  // 6. parity: the page's worker (threaded, then single-threaded) against the native build, relaxed
  // SIMD's integer dot asked for
  const modelUrl = (await (await h.get('/task')).json()).model.url;
  const stepNative = path.join(build, 'tests/step_native');
  // the worker's step on method's parity inputs (int8: the integer image tower), init's options as given
  const pageStep = async (method, int8, options) => {
    const parityDir = path.join(out, 'parity', method);
    const inputs = makeInputs(parityDir, model, stepNative, method, int8);
    const wasm = await page.evaluate(wasmStep, { inputs: { task: inputs.task, index: inputs.index, n: inputs.images.n,
      width: 28, height: 28, rgba: Array.from(inputs.images.rgba), labels: Array.from(inputs.images.labels),
      frame: Array.from(inputs.frame), int8Images: int8 }, modelUrl, key: h.key, ...options });
    return { wasm, parityDir };
  };
  // checks that a step of the page equals the native one
  const checkNative = (parityDir, wasm, what) => {
    try {
      const report = compare(parityDir, stepNative,
        { features: Float32Array.from(wasm.features), params: Uint8Array.from(wasm.params) });
      check(true, `${what}: the wasm step equals the native one:\n${report.trim()}`);
    } catch (e) {
      check(false, `${what}: the wasm step differs from the native one:\n${e.stdout || e.message}`);
    }
  };
  const relaxedSteps = {}; // the integer tower's first method's step on the relaxed dot, by singleThreaded (6c)
  for (const method of PARITY_METHODS) for (const int8 of PARITY_INT8) for (const singleThreaded of [false, true]) {
    // the image tower packed once, as the page packs it where memory allows (6b and 6c pack per call: the same
    // bits)
    const { wasm, parityDir } = await pageStep(method, int8, { singleThreaded, relaxedSimd: true, packWeights: true });
    const variant = `${wasm.threaded ? 'threaded' : 'single-threaded'}, ${int8 ? 'integer' : 'f32'} image tower`;
    check(int8 ? wasm.packedBytes > 0 : wasm.packedBytes === 0,
      `the ${variant} worker packed ${wasm.packedBytes} bytes of the image tower's matrices once`);
    check(wasm.threaded === !singleThreaded, `the worker runs the ${singleThreaded ? 'single-threaded' : 'threaded'} build`);
    check(wasm.kernels === 'simd128-relaxed', `Chromium runs relaxed SIMD: the ${variant} worker chose ${wasm.kernels}`);
    check(wasm.dot === 'relaxed' && ['split', 'unsigned', 'signed'].includes(wasm.dotForm) &&
      ['fused', 'unfused'].includes(wasm.madd),
      `relaxed SIMD asked for, the ${variant} worker says dot=${wasm.dot} (${wasm.dotForm}) madd=${wasm.madd}`);
    if (method === PARITY_METHODS[0] && int8) relaxedSteps[singleThreaded] = wasm;
    checkNative(parityDir, wasm, `in Chromium (${variant} wasm, ${method})`);
  }
  // 6b. the fallback where relaxed SIMD is off: simd128, whose integer
  // products have the relaxed path's bits (test_kernels in Chromium checks
  // both against the portable definition) and whose f32 linears are not the
  // FMA chains; its step too equals the native one
  for (const singleThreaded of [false, true]) {
    const { wasm, parityDir } = await pageStep(PARITY_METHODS[0], true, { singleThreaded, relaxedSimd: false });
    const variant = singleThreaded ? 'single-threaded' : 'threaded';
    check(wasm.kernels === 'simd128', `relaxed SIMD turned off, the ${variant} worker runs ${wasm.kernels}`);
    check(wasm.dot === 'simd128' && wasm.dotForm === '' && wasm.madd === 'unfused',
      `relaxed SIMD turned off, the ${variant} worker says dot=${wasm.dot} madd=${wasm.madd}`);
    checkNative(parityDir, wasm, `relaxed SIMD turned off, ${variant}`);
  }
  // 6c. the integer dot: SIMD128's asked for, and the page's own choice (the faster here, not asserted: it
  // depends on the CPU); each says the dot it was given (the page's, one of the two) and relaxed SIMD's
  // multiply-add as the run with the relaxed dot did, and since every dot's sums are exact the step has
  // that run's bits, features and prompts (and so equals the native one as it did)
  const same = (a, b) => a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
  for (const singleThreaded of [false, true]) for (const dot of ['simd128', undefined]) {
    const { wasm } = await pageStep(PARITY_METHODS[0], true, { singleThreaded, dot });
    const asked = dot ? `dot ${dot} asked for` : 'the page\'s dot';
    const variant = `${singleThreaded ? 'single-threaded' : 'threaded'}, ${asked}`;
    const relaxed = relaxedSteps[singleThreaded];
    const dotSaid = dot ? wasm.dot === dot : ['relaxed', 'simd128'].includes(wasm.dot);
    check(wasm.kernels === 'simd128-relaxed' && dotSaid && relaxed && wasm.madd === relaxed.madd,
      `${variant}: the worker says dot=${wasm.dot} madd=${wasm.madd} (relaxed asked for: madd=${relaxed?.madd})`);
    check(relaxed && same(wasm.features, relaxed.features) && same(wasm.params, relaxed.params),
      `${variant}: the step's features and prompts have the relaxed dot's bits`);
  }
  // 7a. a wrong join key in the address: refused, said beside Join, never kept in this browser; a key kept
  // from an earlier visit that the server refuses is no longer kept
  const guessing = await browser.newContext();
  const keyPage = await guessing.newPage();
  const keyRefusal = async () => {
    const said = await until('the key refused', async () => {
      const t = await keyPage.locator('#error').innerText();
      return t && t;
    }, 30);
    return { said, hint: await keyPage.locator('#join-hint').innerText(),
      kept: await keyPage.evaluate(() => localStorage.getItem('sdfed-join-key')) };
  };
  await keyPage.goto(`${h.base}/?key=not-${h.key}`);
  const wrongKey = await keyRefusal();
  check(/not this federation's join key/.test(wrongKey.said) && /join key was refused/.test(wrongKey.hint) &&
    wrongKey.kept === null, `a wrong join key is refused, said beside Join ("${wrongKey.hint}") and not kept ` +
    `(${wrongKey.kept})`);
  await keyPage.evaluate(() => localStorage.setItem('sdfed-join-key', 'an-earlier-key'));
  await keyPage.goto(`${h.base}/`);
  const oldKey = await keyRefusal();
  check(oldKey.kept === null && /join key was refused/.test(oldKey.hint),
    `a kept join key the server refuses is no longer kept (${oldKey.kept}): ${oldKey.said}`);
  await guessing.close();

  // 7. the server comes back running another federation (another model): a clear message
  const second = await browser.newContext();
  const refusedThere = cspViolations(second);
  const again = await second.newPage();
  const againStage = () => again.evaluate(() => document.body.dataset.stage);
  await again.goto(`${h.base}/?key=${h.key}`);
  await until('the second page', async () => (await againStage()) === 'empty', 60);
  // its own images: a folder with a sub-folder per class, named as the classes
  const folder = path.join(out, 'my-images');
  const pool = fmnistImages(0, 400);
  // folder names need not match the case; "kangaroo" is none of the task's classes
  for (const name of ['Sneaker', 'bag', 'kangaroo']) {
    const c = Math.max(0, CLASSES.findIndex((k) => k.toLowerCase() === name.toLowerCase()));
    mkdirSync(path.join(folder, name), { recursive: true });
    for (let i = 0, written = 0; i < pool.n && written < 12; i++)
      if (pool.labels[i] === c)
        writeFileSync(path.join(folder, name, `${written++}.png`), png(pool.rgba.subarray(i * 3136, (i + 1) * 3136), 28, 28));
  }
  await again.setInputFiles('#folder', folder);
  const groups = await until('the class pickers', async () => (await again.locator('#groups select').count()) === 3 &&
    again.locator('#groups select').evaluateAll((all) => all.map((s) => s.selectedOptions[0].text)), 30);
  check(groups.includes('Sneaker') && groups.includes('Bag') && groups.includes('choose the class…'),
    `a dropped folder's sub-folders are matched to the task's classes: ${groups.join(', ')}`);
  const skippedNote = await again.locator('#groups .skipped').innerText();
  check(/"kangaroo" is none of this federation's classes/.test(skippedNote),
    `a sub-folder that is none of the classes is named as skipped: ${skippedNote}`);
  await again.screenshot({ path: path.join(shots, '10-own-images.png'), fullPage: true });
  await again.click('#groups button');
  await until('the second page\'s features', async () => (await againStage()) === 'ready', 120);
  const own = await again.locator('#data-summary').innerText();
  const notUsed = await again.locator('#data-skipped').textContent();
  check(/images ready .*Sneaker \d+.*Bag \d+/.test(own) && /kangaroo\/: 12 images; none of this federation's classes/
    .test(notUsed), `the volunteer's own images are ready, the other folder named as not used: ${own} ${notUsed}`);
  await again.click('#join');
  await h.stopAggregator();
  const otherTask = { ...task, model: path.join(build, 'test-models/mini-vit.openai.f32.gguf') };
  writeFileSync(path.join(out, 'task.json'), JSON.stringify(otherTask));
  await startAggregator('aggregator-other-task', path.join(out, 'state-other'));
  const refused = await until('the incompatible-federation message', async () => {
    const t = await again.locator('#error').innerText();
    return /another federation/.test(t) && t;
  }, 60);
  check(true, `a server now running another federation is named as such: ${refused}`);
  await again.screenshot({ path: path.join(shots, '11-other-federation.png'), fullPage: true });
  await second.close();

  const violations = [...refusedByPolicy, ...refusedThere];
  check(violations.length === 0, `the content security policy refused nothing: ${violations.slice(0, 3).join(' | ')}`);
  writeFileSync(path.join(out, 'console.log'), watch.lines.join('\n'));
  exitCode = h.failed ? 1 : 0;
} catch (e) {
  check(false, e.message);
  console.log(watch.tail());
} finally {
  await browser.close();
  h.cleanup();
}
process.exit(h.summary('chromium', shots) || exitCode);

// Runs in the page: a fresh worker (worker.js) encodes the parity images and
// trains one round from the frame; returns the features and saved prompts.
async function wasmStep({ inputs: inp, modelUrl, key, singleThreaded, relaxedSimd, dot, packWeights }) {
  const compute = (await import('/compute.js')).startCompute();
  const call = (op, args) => compute.call(op, args);
  const model = await (await fetch(modelUrl, { headers: { authorization: `Bearer ${key}` } })).arrayBuffer();
  const info = await call('init', { model, singleThreaded, int8Images: inp.int8Images, relaxedSimd, dot,
    packWeights });
  await call('setTask', { task: inp.task, index: inp.index });
  const per = inp.width * inp.height * 4, rgba = Uint8ClampedArray.from(inp.rgba), images = [];
  for (let i = 0; i < inp.n; i++)
    images.push({ rgba: rgba.slice(i * per, (i + 1) * per), width: inp.width, height: inp.height });
  const { features } = await call('encode', { images });
  await call('setSamples', { which: 0, features, labels: Uint8Array.from(inp.labels) });
  await call('round', { frame: Uint8Array.from(inp.frame).buffer });
  const params = await call('saveParams', {});
  compute.stop();
  return { threaded: info.threaded, kernels: info.kernels, dot: info.dot, dotForm: info.dotForm, madd: info.madd,
    packedBytes: info.packedBytes, features: Array.from(features), params: Array.from(params) };
}
