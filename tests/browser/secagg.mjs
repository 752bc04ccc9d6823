// The page's side of a secure round in Debian's Chromium (issue 38), with
// WebCrypto (BoringSSL) and the core's wasm, against the native side
// (OpenSSL; tests/browser/secagg_native.c):
//   a. the project's test vector (tests/vectors/secagg-v2.txt) recomputed
//      in a worker of the page's origin with the page worker's scripts (the
//      wasm, sdfed-api.js, secagg.js): every value byte for byte (the
//      mask keys from their seeds through HKDF and PKCS#8, the session id,
//      the infos, the share, pair and self keys from either
//      side, the sealed pair and its opening, a tampered pair refused, the
//      first mask bytes, a masked input);
//   b. whole rounds of 5 clients whose places 1 and 3 (or 0 and 2) are the
//      page's clients (web/worker.js: one on the threaded build, one
//      single-threaded) and the rest, and the server, native; a native
//      client leaves after sharing. The sum unmasked natively equals the
//      plain weighted mean of the same quantised inputs
//      (sdfed_secagg_plain_mean) bit for bit: on the task's Harary graph
//      without noise, the page's inputs recomputed natively from its x, g,
//      samples and rounding; on a complete graph with the distributed
//      noise (from crypto.getRandomValues), the page's inputs as it made
//      them, which differ from the noise-free ones; every page message is
//      accepted, and the page answers with the mask seed's share of the
//      dropped neighbour;
//   c. an unmasking request that names an alive neighbour as dropped too is
//      refused by the page's client with code secagg_both_sets (104), and
//      nothing is sent;
//   d. where the page is no secure context (a host name that is not
//      localhost, mapped to 127.0.0.1 by --host-resolver-rules: no
//      crypto.subtle), the volunteer page of a federation with secure
//      aggregation says "secure rounds need HTTPS or localhost; this page
//      cannot join", keeps its join button disabled, opens no WebSocket,
//      and the worker refuses a secure round with the same sentence; what
//      Chromium makes of http://127.0.0.2 is printed.
//   node secagg.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL OUT
// Prints "chromium-secagg: N passed, M failed".
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromiumTest, launchChromium, watchPage } from './harness.mjs';
import { CLASSES } from './parity.mjs';
import { runRound, servePage, setPageTask, startPageClients } from './secagg_page.mjs';

const { root, build, emBuild, model, out, h } = chromiumTest();
const { check } = h;
const SENTENCE = 'secure rounds need HTTPS or localhost; this page cannot join';
const exe = path.join(build, 'tests/secagg_native');

// the tasks: tasks/fmnist-secure.json (k = 2 at n = 5), and the same on a
// complete graph with distributed noise
// (with Fashion-MNIST's classes written in, as the aggregator writes them in the task it sends: the core knows
// no data set's classes, the host does)
const harary = JSON.parse(readFileSync(path.join(root, 'tasks/fmnist-secure.json'), 'utf8'));
Object.assign(harary, { model, classes: CLASSES });
const noised = structuredClone(harary);
Object.assign(noised.secure_aggregation, { dropout_rate: 0.4, l2_clip: 0.2, max_weight: 1,
  noise: { epsilon: 8, delta: 1e-5 } });
const taskFile = (name, task) => {
  const file = path.join(out, `${name}.json`);
  writeFileSync(file, JSON.stringify(task));
  return file;
};
const modelBytes = readFileSync(model);
// what /task says of the federation (federation.js's describe reads it)
const description = { task: harary, classes: CLASSES, demo_shards: 0, mode: 'sync', global_shape: [8, 128],
  model: { url: '/test/model.gguf', size: modelBytes.length,
           sha256: createHash('sha256').update(modelBytes).digest('hex') } };

const server = await servePage({ root, emBuild, model, description });
const browser = await launchChromium();
let watch = { tail: () => '' };
try {
  const page = await browser.newPage();
  watch = watchPage(page);
  await page.goto(`${server.url}/test/blank.html`);
  const context = await page.evaluate(() => ({ secure: isSecureContext, isolated: crossOriginIsolated }));
  check(context.secure && context.isolated, `the test page at ${server.url} is a secure context, cross-origin ` +
    `isolated as the aggregator's: ${JSON.stringify(context)}`);

  // a. the test vector
  const vectorText = readFileSync(path.join(root, 'tests/vectors/secagg-v2.txt'), 'utf8');
  const want = new Map(vectorText.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.split(' ')));
  const vector = await page.evaluate((text) => new Promise((resolve) => {
    const worker = new Worker('/test/secagg_vector_worker.js');
    worker.onmessage = (e) => { resolve(e.data); worker.terminate(); };
    worker.onerror = (e) => resolve({ error: e.message });
    worker.postMessage(text);
  }), vectorText);
  check(!vector.error, `the vector's worker ran${vector.error ? `: ${vector.error}` : ''}`);
  const got = new Map(vector.values || []);
  // every value but the fixed inputs (the seeds and share keys; a mask key is derived from its seed)
  const derived = [...want.keys()].filter((k) => !/share_private|seed$/.test(k));
  const wrong = derived.filter((k) => got.get(k) !== want.get(k));
  check(derived.length === 22 && wrong.length === 0, `the test vector in Chromium's worker, WebCrypto and the wasm: ` +
    `${derived.length - wrong.length} of ${derived.length} values byte for byte` +
    `${wrong.length ? `; differ: ${wrong.map((k) => `${k} ${got.get(k)}`).join(', ')}` : ''}`);
  check(got.get('key.share.0.1.sender') === want.get('key.share.0.1') &&
        got.get('key.pair.1.2.other') === want.get('key.pair.1.2'),
  'the share key and the pair key are the same from either side of the agreement');
  check(got.get('tampered.0.1') === '00', 'a sealed pair with one bit changed does not open');

  // b. whole rounds with page clients
  const info = await startPageClients(page, 2, harary, (i) => i === 1);
  const P = info[0].globalSize;
  check(info[0].threaded && !info[1].threaded && P > 0,
    `two page clients: one on the threaded build, one single-threaded (${P} coordinates)`);
  const rounds = [
    { name: 'the task\'s Harary graph', task: harary, places: new Map([[1, 0], [3, 1]]), drop: 4 },
    { name: 'a complete graph with noise', task: noised, places: new Map([[0, 0], [2, 1]]), drop: 4, noise: true },
  ];
  for (const [i, spec] of rounds.entries()) {
    await setPageTask(page, spec.task);
    const r = await runRound({ page, exe, taskFile: taskFile(`task-${i}`, spec.task), P, n: 5, round: 3 + i,
      places: spec.places, drop: spec.drop, sendInputs: !!spec.noise });
    const plans = r.pagePlans.map((p) => `${p.k}/${p.t}/${p.minInputs}`);
    check(plans.every((p) => p === `${r.plan.k}/${r.plan.t}/${r.plan.minInputs}`),
      `${spec.name}: the page's plan is the native one (k/t/min_inputs ${plans.join(', ')} and ` +
      `${r.plan.k}/${r.plan.t}/${r.plan.minInputs})`);
    check(r.refused.length === 0 && r.refusals.length === 0 && !r.abandoned,
      `${spec.name}: every page message accepted, no refusal${r.refused.length || r.refusals.length || r.abandoned ?
        `: ${JSON.stringify([r.refused, r.refusals, r.abandoned])}` : ''}`);
    check(r.stages.join(',') === 'share,masked,unmask,done', `${spec.name}: the stages ${r.stages.join(', ')}`);
    const shares = 13 + 68 * r.plan.k; // a recipient (4) and a sealed pair (64) each
    const masked = 13 + Math.ceil((spec.task.secure_aggregation.ring_bits * (P + 1)) / 8); // packed at B bits
    check((r.sizes.share || []).every((s) => s === shares) &&
          (r.sizes.masked || []).every((s) => s === masked),
      `${spec.name}: the page's shares (${r.sizes.share}) and masked inputs (${r.sizes.masked}) have their sizes`);
    // weights: min(samples, max_weight) of the 4 clients left (16 + 997 p samples at place p)
    const most = spec.task.secure_aggregation.max_weight;
    const weight = [0, 1, 2, 3].reduce((a, p) => a + Math.min(16 + 997 * p, most), 0);
    check(r.parity && r.parity.same && r.parity.weight === weight,
      `${spec.name}: the sum unmasked natively is the plain weighted mean of the same inputs bit for bit ` +
      `(${r.parity ? `${r.parity.same ? 'same' : 'DIFFERS'}, weight ${r.parity.weight} of ${weight}, global sha256 ` +
      `${r.parity.sha.slice(0, 16)}…` : 'no result'})`);
    if (spec.noise)
      check(r.noised.length === spec.places.size && r.noised.every((x) => x.moved > P / 2 && x.sameWeight),
        `${spec.name}: the page's noise moved its coordinates, not its weight (${r.noised.map((x) =>
          `place ${x.place}: ${x.moved} of ${P + 1} values`).join(', ')})`);
    if (r.plan.k === 4)
      check(r.maskKeyShares === spec.places.size, `${spec.name}: each page client gave its share of the dropped ` +
        `client's mask key (${r.maskKeyShares})`);
    console.log(`${spec.name}: the page's clients answered ${r.maskKeyShares} share(s) of the dropped client's mask ` +
      `key; page step times (ms) ${JSON.stringify(r.pageMs)}; a native client's ${JSON.stringify(r.nativeMs)}`);
  }

  // c. an unmasking request naming a neighbour both alive and dropped
  await setPageTask(page, harary);
  const c = await runRound({ page, exe, taskFile: taskFile('task-bad', harary), P, n: 5, round: 9,
    places: new Map([[1, 0], [3, 1]]), drop: 4, bad: 1 });
  const refusal = c.refusals.find((x) => x.place === 1) || {};
  check(refusal.stage === 'unmask' && refusal.code === 'secagg_both_sets' &&
        /both alive and dropped/.test(refusal.error),
    `the page's client refuses an unmasking request naming a neighbour both alive and dropped: ${refusal.code} ` +
    `(${refusal.error})`);
  const parity = c.parity && c.parity.same ? 'same' : 'not same';
  const then = c.abandoned ? 'is abandoned' : `unmasks without it (parity ${parity})`;
  check(c.refusals.length === 1 && c.refused.length === 0, `only that request is refused; the round then ${then}`);
  await page.close();
} catch (e) {
  check(false, `${e.message}\n${watch.tail()}`);
} finally {
  await browser.close();
}

// d. no secure context
const loopback2 = await servePage({ root, emBuild, model, description, host: '127.0.0.2' }).catch(() => null);
const insecure = await launchChromium([`--host-resolver-rules=MAP sdfed-insecure.test 127.0.0.1`]);
try {
  if (loopback2) {
    const p2 = await insecure.newPage();
    await p2.goto(`${loopback2.url}/test/blank.html`);
    const s = await p2.evaluate(() => ({ secure: isSecureContext, subtle: !!(self.crypto && crypto.subtle) }));
    console.log(`Chromium at ${loopback2.url}: isSecureContext ${s.secure}, ` +
      `crypto.subtle ${s.subtle ? 'present' : 'absent'}`);
    await p2.close();
    loopback2.close();
  }
  const page = await insecure.newPage();
  const w = watchPage(page);
  const sockets = [];
  page.on('websocket', (ws) => sockets.push(ws.url()));
  const origin = `http://sdfed-insecure.test:${server.port}`;
  await page.goto(`${origin}/`);
  await h.until('the page to give up', async () => (await w.stage()) === 'error', 30).catch(() => null);
  const shown = await page.evaluate(() => ({ secure: isSecureContext, subtle: typeof (self.crypto && crypto.subtle),
    error: document.getElementById('error').textContent, hint: document.getElementById('join-hint').textContent,
    joinDisabled: document.getElementById('join').disabled, stage: document.body.dataset.stage }));
  check(!shown.secure && shown.subtle === 'undefined', `${origin} is no secure context: no crypto.subtle ` +
    `(${JSON.stringify({ secure: shown.secure, subtle: shown.subtle })})`);
  check(shown.error === SENTENCE && shown.hint === SENTENCE && shown.joinDisabled && shown.stage === 'error',
    `there, the page of a federation with secure aggregation says "${shown.error}" and cannot join ` +
    `(join disabled ${shown.joinDisabled}, stage ${shown.stage})`);
  await page.waitForTimeout(1000);
  check(sockets.length === 0, `and opens no WebSocket (${sockets.length})`);
  await page.screenshot({ path: path.join(out, 'screenshots', 'insecure.png'), fullPage: true });
  const worker = await page.evaluate(async (task) => {
    const { startCompute } = await import('/compute.js');
    const compute = startCompute();
    const model = await (await fetch('/test/model.gguf')).arrayBuffer();
    await compute.call('init', { model, singleThreaded: true }, null, [model]);
    await compute.call('setTask', { task, index: 0 });
    return compute.call('secaggAdvertise', { n: 5, round: 0, client: 0 }).then(() => 'joined', (e) => e.message);
  }, harary);
  check(worker === SENTENCE, `the worker refuses a secure round there too: "${worker}"`);
} catch (e) {
  check(false, e.message);
} finally {
  await insecure.close();
  server.close();
}
process.exit(h.summary('chromium-secagg'));
