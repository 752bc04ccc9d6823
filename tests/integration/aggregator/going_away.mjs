// How a chosen client's close frame leaves its round (docs/protocol.md,
// "Rounds"), run against `sdfed-aggregator --min-clients 1 --rejoin-grace
// 600` with no other client: a close with status 1001 (going away: what a
// browser sends for a page's sockets when it reloads, leaves or closes the
// page) keeps the client's place in its round, as a lost connection does,
// and the client back with its token gets the same round again; a close of
// its own (1000) leaves the round at once, and so does a close without a
// status: the round, which needed it, is abandoned.
//   node going_away.mjs PORT
import { CLOSE, clientFrame, rawConnect } from '../../lib/raw_websocket.mjs';

const port = Number(process.argv[2]);
let passed = 0, failed = 0;
const check = (ok, what) => { if (ok) passed++; else { failed++; console.log(`FAIL: ${what}`); } };
const status = async () => (await fetch(`http://127.0.0.1:${port}/status`)).json();
const settle = () => new Promise((resolve) => setTimeout(resolve, 500));

// A volunteer that says hello (with token, when given) and waits for a round; null if none came in 60 s.
async function volunteer(token) {
  const c = rawConnect(port);
  await c.until((x) => x.status, 10);
  c.sendText(JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', encoding: 'json', ...(token ? { token } : {}) }));
  const started = await c.until((x) => x.messages.some((m) => m.type === 'round_start'), 60);
  if (!started) c.close();
  return started ? c : null;
}
const round = (c) => c.messages.find((m) => m.type === 'round_start').round;
const token = (c) => c.messages.find((m) => m.type === 'welcome').token;
// Sends a close frame (a status, or none) and waits for the server to end the connection.
async function closeWith(c, code) {
  const payload = code ? Buffer.from([code >> 8, code & 0xff]) : Buffer.alloc(0);
  c.send(clientFrame(CLOSE, payload));
  await c.until((x) => x.ended, 10);
  c.close();
  await settle();
}

const a = await volunteer();
if (!a) {
  check(false, 'no round started for the only volunteer');
} else {
  const r = round(a);
  await closeWith(a, 1001);
  let s = await status();
  check(s.round === r && s.round_open === 1 && s.participants === 1 && s.rounds_abandoned === 0,
    `closed going away (1001), its round ${r} waits for it: ${JSON.stringify(s)}`);
  const back = await volunteer(token(a));
  check(back && round(back) === r, `back with its token, it is given round ${r} again: ${back && round(back)}`);
  if (back) {
    await closeWith(back, 1000);
    s = await status();
    check(s.rounds_abandoned === 1, `closed on purpose (1000), it left: its round abandoned: ${JSON.stringify(s)}`);
    const c = await volunteer(token(back));
    check(c && round(c) > r, `a later round for it: ${c && round(c)}`);
    if (c) {
      await closeWith(c, 0);
      s = await status();
      check(s.rounds_abandoned === 2, `closed without a status, it left too: ${JSON.stringify(s)}`);
    }
  }
}
console.log(`going_away: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
