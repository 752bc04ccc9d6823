// Volunteers coming and going: N scripted clients on one server for a
// bounded time. Each asks for tensors as JSON and answers every round it is
// given at once with the parameters nudged; a seeded generator decides,
// every 200-800 ms, that a connected client leaves (closing its socket) or
// that one comes (new, or back with its token). Rounds must keep closing,
// and every update the server acknowledged is written to ACKED (one
// "round client" line each) for the caller to find in the store.
//   node --experimental-websocket churn.mjs PORT SECONDS SEED ACKED
// Prints "churn: ..." lines and "churn: N passed, M failed".
import { writeFileSync } from 'node:fs';

const [port, seconds, seed, ackedFile] = process.argv.slice(2);
let passed = 0, failed = 0;
const check = (ok, what) => { if (ok) passed++; else { failed++; console.log(`FAIL: ${what}`); } };
const status = async () => (await fetch(`http://127.0.0.1:${port}/status`)).json();

// mulberry32: a small seeded generator, so a run's events are the same
let state = Number(seed) >>> 0;
const random = () => {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const acked = [];
const volunteers = Array.from({ length: 6 }, () => ({ ws: null, token: null, id: -1 }));

function join(v) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, 'sdfed.v1');
  v.ws = ws;
  ws.onopen = () => ws.send(JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', encoding: 'json', kind: 'churn',
                                              ...(v.token ? { token: v.token } : {}) }));
  ws.onmessage = (e) => {
    const m = JSON.parse(e.data);
    if (m.type === 'welcome') v.token = m.token, v.id = m.client_id;
    if (m.type === 'ack') acked.push(`${m.round} ${v.id}`);
    if (m.type === 'round_start' && m.data) {
      const data = m.data.map((x, i) => x + 1e-3 * Math.sin(i + v.id));
      ws.send(JSON.stringify({ type: 'update', round: m.round, samples: 8, shape: m.shape, data }));
    }
  };
  ws.onclose = () => { if (v.ws === ws) v.ws = null; };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
for (const v of volunteers.slice(0, 3)) join(v);
const first = (await status()).round;
const end = Date.now() + Number(seconds) * 1000;
let events = 0;
while (Date.now() < end) {
  await sleep(200 + 600 * random());
  const here = volunteers.filter((v) => v.ws), away = volunteers.filter((v) => !v.ws);
  if (here.length > 1 && (away.length === 0 || random() < 0.5)) here[Math.floor(random() * here.length)].ws.close();
  else if (away.length) join(away[Math.floor(random() * away.length)]);
  events++;
}
for (const v of volunteers) if (v.ws) v.ws.close();
await sleep(300);
const last = await status();
console.log(`churn: ${events} joins and leaves over ${seconds} s; rounds ${first} to ${last.round}, ` +
            `${last.rounds_abandoned} abandoned, ${acked.length} updates acknowledged`);
check(last.round - first >= 3, `rounds kept going: only from ${first} to ${last.round}`);
check(last.rounds_closed >= 2, `rounds kept closing: only ${last.rounds_closed} closed`);
check(acked.length > 0, 'no update was acknowledged');
writeFileSync(ackedFile, acked.map((a) => `${a}\n`).join(''));
console.log(`churn: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
