// The public accuracy is the reporters' alone. Two volunteers, A and B,
// report round 0 (its own global parameters back) with accuracy 0.5 each;
// then ten volunteers that were in no round send metrics of accuracy 0 for
// rounds 0, 1 and 2. Each of theirs is refused (not_in_round for round 0,
// which they took no part in, and for round 1, open without them;
// wrong_round for round 2, ahead), and /status keeps showing round 0 at 0.5
// from 2 clients and no other round. Then metrics of no test image
// (test_samples 0, or none given) carry no accuracy: A reports round 1 at
// 0.75 on 20 images and B at 0 on none, both rounds 2 on none, and /status
// shows round 1 at 0.75 from A alone and no round 2; /status.html charts 2
// rounds and shows no last accuracy of 0.00%. Prints a line per failed check
// and "metrics-poison: N passed, M failed".
//   node --experimental-websocket metrics_poison.mjs PORT
// The server runs a task of 2 clients a round with --min-clients 2.
import { connect } from '../../lib/connection.mjs';

const [port] = process.argv.slice(2);
let passed = 0, failed = 0;
const check = (ok, what) => { if (ok) passed++; else { failed++; console.log(`FAIL: ${what}`); } };
const status = async () => (await fetch(`http://127.0.0.1:${port}/status`)).json();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function joined() {
  const c = await connect(`ws://127.0.0.1:${port}/ws`);
  c.send(JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', encoding: 'json', kind: 'test' }));
  const m = await c.next();
  check(m && m.type === 'welcome', `a hello is welcome: ${JSON.stringify(m)}`);
  return c;
}
async function until(what, fn, seconds) {
  for (const end = Date.now() + seconds * 1000; Date.now() < end; await sleep(50)) if (await fn()) return true;
  check(false, `timed out after ${seconds} s waiting for ${what}`);
  return false;
}
const roundStart = (c, round) => c.all.find((m) => m.type === 'round_start' && m.round === round);
const shown = async () => JSON.stringify((await status()).accuracy);
const honest = JSON.stringify([{ round: 0, accuracy: 0.5, clients: 2 }]);

const a = await joined(), b = await joined();
if (await until('round 0 to start with A and B', () => roundStart(a, 0) && roundStart(b, 0), 30)) {
  for (const c of [a, b]) {
    const r = roundStart(c, 0);
    c.send(JSON.stringify({ type: 'update', round: 0, samples: 8, shape: r.shape, data: r.data }));
    const m = await c.next();
    check(m && m.type === 'ack' && m.round === 0, `the update of round 0 is acknowledged: ${JSON.stringify(m)}`);
    c.send(JSON.stringify({ type: 'metrics', round: 0, accuracy: 0.5, loss: 1.25, test_samples: 20 }));
  }
  // the server reads the history again at most once a second
  await until('/status to show round 0 at 0.5 from A and B', async () => (await shown()) === honest, 10);
  await until('round 1 to start with A and B', () => roundStart(a, 1) && roundStart(b, 1), 30);
  const poisoners = [];
  for (let i = 0; i < 10; i++) poisoners.push(await joined());
  const want = { 0: 'not_in_round', 1: 'not_in_round', 2: 'wrong_round' };
  for (const p of poisoners)
    for (const round of [0, 1, 2]) p.send(JSON.stringify({ type: 'metrics', round, accuracy: 0, loss: 0, test_samples: 1000 }));
  for (const [i, p] of poisoners.entries()) {
    const got = [await p.next(), await p.next(), await p.next()];
    const codes = got.map((m) => m && m.type === 'error' && m.code).sort().join(' ');
    check(codes === 'not_in_round not_in_round wrong_round',
      `volunteer ${i}'s metrics of rounds it did not report in are refused (${Object.values(want).join(', ')}): ${JSON.stringify(got)}`);
  }
  await sleep(1500);
  const after = await shown();
  check(after === honest, `/status's accuracy is still the reporters' alone: ${after}`);
  for (const p of poisoners) p.close();
  // no test image: no accuracy, not 0
  const reports = { 1: [{ accuracy: 0.75, test_samples: 20 }, { accuracy: 0, test_samples: 0 }],
    2: [{ accuracy: 0, test_samples: 0 }, { accuracy: 0 }] };
  for (const round of [1, 2]) {
    if (!await until(`round ${round} to start with A and B`, () => roundStart(a, round) && roundStart(b, round), 30))
      break;
    for (const [i, c] of [a, b].entries()) {
      const r = roundStart(c, round);
      c.send(JSON.stringify({ type: 'update', round, samples: 8, shape: r.shape, data: r.data }));
      await until(`the update of round ${round} to be acknowledged`,
        () => c.all.some((m) => m.type === 'ack' && m.round === round), 10);
      c.send(JSON.stringify({ type: 'metrics', round, loss: 1, ...reports[round][i] }));
    }
  }
  const tested = JSON.stringify([{ round: 0, accuracy: 0.5, clients: 2 }, { round: 1, accuracy: 0.75, clients: 1 }]);
  await until('/status to show round 1 at 0.75 from A alone, and no round 2', async () => {
    const s = await status();
    return s.done === 1 && JSON.stringify(s.accuracy) === tested;
  }, 10);
  const final = await shown();
  check(final === tested, `metrics of no test image count in no round's accuracy: ${final}`);
  const page = await (await fetch(`http://127.0.0.1:${port}/status.html`)).text();
  check(page.includes('round (2 reported)') && !page.includes('0.00%'),
    `/status.html charts the 2 rounds with an accuracy and shows no last accuracy of 0.00%: ` +
    page.slice(page.indexOf('<table class="volunteers"'), page.indexOf('<table class="volunteers"') + 400));
}
a.close();
b.close();
console.log(`metrics-poison: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
