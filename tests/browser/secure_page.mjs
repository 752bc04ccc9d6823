// The volunteer page in secure rounds over the aggregator's socket (issue
// 38), in Debian's Chromium: tasks/fmnist-secure.json made small (4
// volunteers, 3 rounds, with distributed noise; four classes of
// Fashion-MNIST as a folder, 16 images a class, so that no client encodes
// the whole training set), a real aggregator on loopback (a secure
// context), 3 headless clients and the page on a demo share; the page
// joins and
//   1. the rounds close with the 4 masked inputs in each sum (/status and
//      the page's own "Round R is over (4 volunteers)"), round 2 too,
//      whose aggregator is killed (kill -9) once it asked for the page's
//      shares, and started again on its state: the page comes back to the
//      round and goes on where it was (back while it trains: its keys sent
//      again as the headless client does, the request that came on the old
//      socket answered there or not at all, never on the new one; back
//      after: its shares sent again when asked), the server's requests
//      answered;
//   2. the page says each stage in words: keys sent, shares sent, masked
//      prompt sent, unmasking; and no error;
//   3. the federation panel says "the server sees only the sum of at least
//      t volunteers' prompts", t the round_start's min_inputs, and the
//      noise each volunteer adds for differential privacy;
//   4. every binary frame the page sent is a secure (SDFS) frame, never a
//      plain update: in each round its keys (advertise; in round 2 again
//      when the server came back), and then an answer to each request the
//      server sent it (shares, masked, unmask), in the requests' order (after
//      the restart the server may ask again, as the protocol allows: a
//      request asked again is answered again, or once where the socket went
//      before the first answer); no metrics (the server knows no one's
//      update).
//   node secure_page.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL OUT
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromiumTest, launchChromium, watchPage } from './harness.mjs';

const { root, build, emBuild, model, out, shots, h } = chromiumTest();
const { check, start, until } = h;

const data = path.join(out, 'data');
const CLASSES = ['Trouser', 'Bag', 'Sandal', 'Sneaker'];
const exported = spawnSync('/usr/bin/python3', [path.join(root, 'tools/fmnist_to_folder.py'), '--out', data,
  '--classes', CLASSES.join(','), '--per-class', '16'], { encoding: 'utf8' });
if (exported.status !== 0) throw new Error(`fmnist_to_folder.py: ${exported.stderr}`);
const task = JSON.parse(readFileSync(path.join(root, 'tasks/fmnist-secure.json'), 'utf8'));
// (120 epochs: the page trains some 2 s here, longer than the aggregator's
// restart and the page's first backoff take most often)
Object.assign(task, { model, dataset: { train: 'train', test: 'test' }, classes: CLASSES, clients: 4,
  clients_per_round: 4, rounds: 3, local_epochs: 120, partition: { kind: 'pathological', classes_per_client: 2 } });
Object.assign(task.secure_aggregation, { dropout_rate: 0.4, l2_clip: 0.2, max_weight: 1,
  noise: { epsilon: 8, delta: 1e-5 } });
const taskFile = path.join(data, 'task.json');
writeFileSync(taskFile, JSON.stringify(task));

const startAggregator = (name) => h.startAggregator(name, ['--task', taskFile, '--state', path.join(out, 'state'),
  '--min-clients', '4', '--deadline', '120', '--web', path.join(root, 'web'),
  '--wasm', path.join(emBuild, 'wasm-client')]);
await startAggregator('aggregator');
for (const k of [0, 1, 2])
  start(`client${k}`, path.join(build, 'sdfed-client'), ['--server', `ws://127.0.0.1:${h.port}`, '--client-index',
    String(k), '--model', model, '--cache', path.join(out, 'cache'), '--token-file', path.join(out, `token${k}`),
    '--host-task', taskFile]);
await until('3 headless clients', async () => (await h.status()).clients === 3, 120);

const KINDS = ['', 'advertise', 'share_request', 'shares', 'masked_request', 'masked', 'unmask_request', 'unmask'];
const browser = await launchChromium();
let watch = { lines: [], tail: () => '' };
try {
  const page = await (await browser.newContext()).newPage();
  watch = watchPage(page);
  const { stage, text } = watch;
  // what the page sends and the round_starts it gets, through a proxy of its
  // socket (each message forwarded as it comes). The aggregator is killed
  // right after its first share_request of round 2 reached the page, which
  // trains then and answers once done; the page's socket is closed once the
  // aggregator is back, so that the page comes back while it trains (most
  // often: the training outlasts the backoff) and answers that request after
  // its new socket got the same request again, a race of CI's that showed
  // the server's refusal of a duplicate answer as the page's error
  const sent = { binary: [], text: [] }, starts = [], requests = [];
  const secureKind = (b) => (b.subarray(0, 4).toString() === 'SDFS' ?
    `${KINDS[b[5]]} ${b.readBigInt64BE(6)}` : `a plain ${b.subarray(0, 4).toString('hex')} frame`);
  let killed = null; // the page's side of the socket whose server was killed
  await page.routeWebSocket(/\/ws$/, (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((m) => {
      (typeof m === 'string' ? sent.text : sent.binary).push(m);
      server.send(m);
    });
    server.onClose(() => { if (ws !== killed) ws.close(); });
    server.onMessage((m) => {
      if (typeof m === 'string' && m.includes('"round_start"')) starts.push(JSON.parse(m));
      if (typeof m !== 'string') requests.push(secureKind(m));
      ws.send(m);
      if (killed || typeof m === 'string' || requests.at(-1) !== 'share_request 2') return;
      killed = ws;
      h.aggregator.kill('SIGKILL');
    });
  });
  const waitStage = (what, ok, seconds) => until(`stage ${what}`, async () => ok(await stage()), seconds);
  // every line the training status shows, kept as it changes
  const lines = [];
  await page.exposeFunction('statusSaid', (line) => lines.push(line));
  await page.goto(`${h.base}/`);
  await waitStage('empty', (s) => s === 'empty', 60);
  await page.evaluate(() => {
    const box = document.getElementById('training-status');
    new MutationObserver(() => window.statusSaid(box.textContent)).observe(box, { childList: true, subtree: true,
      characterData: true });
  });
  await page.click('#demo');
  await waitStage('ready', (s) => s === 'ready', 120);
  await page.click('#join');
  await until('round 2\'s first share_request, and the aggregator killed', async () => killed &&
    (h.aggregator.exitCode !== null || h.aggregator.signalCode), 120);
  await startAggregator('aggregator-restarted');
  const trainingAtRestart = await stage() === 'training';
  killed.close();
  await until('the federation to finish', async () => (await h.status()).done === 1, 180);
  await waitStage('done', (s) => s === 'done', 30);
  await page.screenshot({ path: path.join(shots, '01-done.png'), fullPage: true });

  // 1. the rounds closed, each with 4 masked inputs in its sum, the one killed too
  const s = await h.status();
  check(s.rounds_closed === 3 && s.rounds_abandoned === 0,
    `the aggregator closed the 3 secure rounds, through its restart: ${s.rounds_closed} closed, ` +
    `${s.rounds_abandoned} abandoned`);
  check([0, 1, 2].every((r) => lines.includes(`Round ${r} is over (4 volunteers). Waiting for the next…`)),
    `the page saw the rounds close with 4 volunteers: ${lines.filter((l) => / is over /.test(l)).join(' | ')}`);
  // (the page back while it trained: its keys were its last message; back after: its shares, sent once on the
  // old socket or, done after it closed, kept for the server's asking again)
  const keysAgain = lines.includes('Secure round 2: keys sent again (the server came back).');
  check(keysAgain || lines.some((l) => /^Secure round 2: shares sent( again)? \(the server asked again\)\.$/.test(l)),
    `after the restart the page went on with round 2, ${keysAgain ? 'back while it trained (training at the ' +
    `restart: ${trainingAtRestart}): its keys sent again` : 'back after its training: its shares sent when asked again'}: ` +
    lines.filter((l) => /round 2/i.test(l)).join(' | '));

  // 2. the stages in words
  const words = ['keys sent', 'shares sent', 'masked prompt sent', 'unmasking'];
  const missing = [0, 1, 2].flatMap((r) => words.filter((w) =>
    !lines.some((l) => l.startsWith(`Secure round ${r}: ${w}`))).map((w) => `round ${r}: ${w}`));
  check(!missing.length, `the page said each stage of the rounds in words${missing.length ? `; missing ${missing}` :
    ''}: ${lines.filter((l) => l.startsWith('Secure round 1')).join(' | ')}`);

  // 3. the panel's promise, with t from round_start, and the noise
  const panel = await text('secure');
  const t = starts.length ? starts[0].secure.min_inputs : -1;
  check(starts.length >= 3 && starts.every((m) => m.secure && m.secure.n === 4 && m.secure.min_inputs === t) &&
    panel.includes(`the server sees only the sum of at least ${t} volunteers' prompts`) &&
    panel.includes('(ε = 8, δ = 0.00001)-differentially private over the 3 rounds'),
    `the federation panel says what the server sees (t = ${t}) and the noise: ${panel}`);

  // 4. only secure frames: each round's keys (round 2's twice if sent again when the server came back),
  // then an answer to each request, in order; no update in the clear and no metrics
  const kinds = sent.binary.map(secureKind);
  const ANSWER = { share_request: 'shares', masked_request: 'masked', unmask_request: 'unmask' };
  const answers = requests.map((q) => q.split(' ')).filter(([k]) => ANSWER[k]).map(([k, r]) => `${ANSWER[k]} ${r}`);
  const keys = [0, 1, 2].map((r) => kinds.filter((k) => k === `advertise ${r}`).length);
  // a request asked again is answered again, or once where the socket went before the first answer
  const once = (xs) => xs.filter((x, i) => x !== xs[i - 1]);
  const given = kinds.filter((k) => !k.startsWith('advertise '));
  check(JSON.stringify(once(given)) === JSON.stringify(once(answers)) && given.length <= answers.length &&
    JSON.stringify(keys) === `[1,1,${keysAgain ? 2 : 1}]` && once(given).filter((a) => a.startsWith('unmask ')).length === 3,
  `the page's binary frames are its secure messages alone: its keys, then an answer to each request in order: ` +
    `${kinds.join(', ')} (the requests: ${requests.join(', ')})`);
  const types = sent.text.map((m) => JSON.parse(m).type);
  check(!types.includes('metrics') && !types.includes('update') && !types.includes('secagg_refusal'),
    `the page sent no update, metrics or refusal as text: ${types.join(', ')}`);
  check(!(await text('error')).trim(), `the page shows no error: ${await text('error')}`);
  writeFileSync(path.join(out, 'console.log'), watch.lines.join('\n'));
} catch (e) {
  check(false, e.message);
  console.log(watch.tail());
} finally {
  await browser.close();
  h.cleanup();
}
process.exit(h.summary('chromium, secure rounds on the page', shots));
