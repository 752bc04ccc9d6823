// Updates that cannot be combined, against a running aggregator (docs/aggregator.md: a round never stalls):
// the task's 10 clients each upload every value FLT_MAX with 1 sample, each finite and accepted, and their mean
// overflows (ten weights 1/10 rounded to float sum past 1, in any order). The round is abandoned at once, never
// tried again: every client is acknowledged, then gets round_end with "abandoned": true, its 10 reports set aside
// and the parameters unchanged, and round 1 starts from them. The server must run with --min-clients 10 and be
// given nothing else. Prints a line per failure and "uncombinable: N passed, M failed".
//   node --experimental-websocket uncombinable.mjs PORT
import { connect } from '../../lib/connection.mjs';
import { decode, frame, UPDATE } from '../../lib/frame.mjs';

const [port] = process.argv.slice(2);
const FLT_MAX = 3.4028234663852886e38;
let passed = 0, failed = 0;
const check = (ok, what) => { if (ok) passed++; else { failed++; console.log(`FAIL: ${what}`); } };

// the next message other than a wait
async function next(c) {
  for (;;) {
    const m = await c.receive(30);
    if (!m || m.type !== 'wait') return m;
  }
}

const clients = [];
for (let k = 0; k < 10; k++) {
  const c = await connect(`ws://127.0.0.1:${port}/ws`);
  c.send(JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', shard: k }));
  const welcome = await next(c);
  check(welcome && welcome.type === 'welcome', `client ${k} is welcome: ${JSON.stringify(welcome)}`);
  clients.push(c);
}
// round 0 starts once the tenth is in: round_start, then the global parameters as a frame
const starts = [];
for (const c of clients) {
  const start = await next(c), global = await next(c);
  check(start && start.type === 'round_start' && start.round === 0 && global && global.type === 'binary',
    `round 0 is sent to every client: ${JSON.stringify(start)}`);
  starts.push(start);
  const { shape, values } = decode(global.data);
  c.send(frame(UPDATE, 0, 1, shape, new Array(values.length).fill(FLT_MAX)));
}
const sha0 = starts[0] && starts[0].global_sha256;
for (const [k, c] of clients.entries()) {
  const ack = await next(c), end = await next(c), start = await next(c);
  check(ack && ack.type === 'ack' && ack.round === 0, `client ${k}'s update of FLT_MAX is acknowledged: ${JSON.stringify(ack)}`);
  check(end && end.type === 'round_end' && end.round === 0 && end.next_round === 1 && end.abandoned === true &&
    end.participants === 10 && end.global_sha256 === sha0,
  `round 0 is abandoned, its 10 reports set aside, the parameters unchanged: ${JSON.stringify(end)}`);
  check(start && start.type === 'round_start' && start.round === 1 && start.global_sha256 === sha0,
    `round 1 starts from round 0's parameters: ${JSON.stringify(start)}`);
  c.close();
}
console.log(`uncombinable: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
