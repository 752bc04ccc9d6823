// Bad input to a secure round (docs/protocol.md, "Secure rounds"), each
// refused with its documented code while the round goes on (until a client
// refuses its unmasking request, which in a round of 3 abandons it): three clients
// of a 3-client secure task speak the stages with made-up keys and sealed
// pairs (the server cannot tell them from real ones), and at every stage
// one of them also sends what the server must refuse. Prints a line per
// failure and "secure-bad: N passed, M failed".
//   node --experimental-websocket secure_bad.mjs PORT
import { randomBytes } from 'node:crypto';
import { connect } from '../../lib/connection.mjs';
import { decodeSecure, secureFrame } from '../../lib/frame.mjs';

const port = process.argv[2];
let passed = 0, failed = 0;
const check = (ok, what) => { if (ok) passed++; else { failed++; console.log(`FAIL: ${what}`); } };

const be32 = (v) => { const b = Buffer.alloc(4); b.writeUInt32BE(v); return b; };
const send = (c, kind, body) => c.send(secureFrame(kind, round, body));
// the next message that is not a heartbeat
async function next(c) { return c.receive(); }
async function refused(c, kind, body, code, what) {
  send(c, kind, body);
  const got = await next(c);
  check(got && got.type === 'error' && got.code === code, `${what}: expected ${code}, got ${JSON.stringify(got).slice(0, 200)}`);
}
async function acked(c, kind, body, stage, what) {
  send(c, kind, body);
  const got = await next(c);
  check(got && got.type === 'secagg_ack' && got.stage === stage, `${what}: expected its ack, got ${JSON.stringify(got).slice(0, 200)}`);
}
async function request(c, kind, what) {
  const got = await next(c);
  let m = null;
  try { m = got && got.type === 'binary' ? decodeSecure(got.data) : null; } catch { m = null; }
  check(m && m.kind === kind, `${what}: expected a ${kind}, got ${JSON.stringify(got).slice(0, 200)}`);
  return m ? Buffer.from(m.body) : Buffer.alloc(0);
}

const clients = [];
for (let i = 0; i < 3; i++) {
  const c = await connect(`ws://127.0.0.1:${port}/ws`);
  c.send(JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', encoding: 'json', kind: 'test' }));
  clients.push(c);
}
const starts = [];
for (const c of clients) {
  let m;
  do m = await next(c); while (m && m.type !== 'round_start');
  starts.push(m);
}
check(starts.every((m) => m && m.secure && m.secure.n === 3), `round_start of a secure round to each: ${JSON.stringify(starts.map((m) => m && m.secure))}`);
const round = starts[0].round, P = starts[0].shape[0] * starts[0].shape[1];
const [A, B, C] = [0, 1, 2].map((p) => clients[starts.findIndex((m) => m.secure.place === p)]);
// a fourth client, not chosen
const D = await connect(`ws://127.0.0.1:${port}/ws`);
D.send(JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', encoding: 'json', kind: 'test' }));
const waiting = [await next(D), await next(D)];
check(waiting[1] && waiting[1].type === 'wait' && waiting[1].reason === 'round_in_progress', `a fourth client waits: ${JSON.stringify(waiting[1])}`);

// advertise
await refused(A, 'shares', be32(0), 'secagg_wrong_stage', 'shares at the advertise stage');
await refused(A, 'advertise', randomBytes(40), 'secagg_bad_keys', 'keys of the wrong length');
await refused(A, 'advertise', Buffer.alloc(64), 'secagg_bad_keys', 'keys all zeros');
const keys = [randomBytes(64), randomBytes(64), randomBytes(64)];
await acked(A, 'advertise', keys[0], 'advertise', 'A advertises');
await refused(B, 'advertise', Buffer.concat([keys[0].subarray(0, 32), randomBytes(32)]), 'secagg_bad_keys', 'a key already advertised');
await refused(A, 'advertise', randomBytes(64), 'secagg_repeated', 'a second advertise');
await refused(D, 'advertise', randomBytes(64), 'secagg_not_in_round', 'keys from a client not in the round');
await acked(B, 'advertise', keys[1], 'advertise', 'B advertises');
await acked(C, 'advertise', keys[2], 'advertise', 'C advertises: the stage ends');

// shares: each to its holders but itself, a sealed pair each (64 bytes, made up)
const holdersOf = (req) => { // share_request body: n, i, k, t, min_inputs, session, (k + 1) x (client, keys)
  const k = req.readUInt32BE(8);
  return Array.from({ length: k + 1 }, (_, s) => req.readUInt32BE(52 + 68 * s));
};
const shares = (self, holders) => Buffer.concat([be32(holders.length - 1),
  ...holders.filter((h) => h !== self).map((h) => Buffer.concat([be32(h), randomBytes(64)]))]);
const reqs = [];
for (const [p, c] of [A, B, C].entries()) reqs.push(await request(c, 'share_request', `share_request to ${p}`));
const holders = reqs.map(holdersOf);
await refused(A, 'masked', be32(0), 'secagg_wrong_stage', 'a masked input at the share stage');
const stranger = holders[0].filter((h) => h !== 0).map(() => 7); // no client 7 in a round of 3
await refused(A, 'shares', shares(0, [0, ...stranger]), 'secagg_not_neighbour', 'shares to a client that is no neighbour');
await refused(A, 'shares', be32(0), 'secagg_bad_shares', 'shares that miss its neighbours');
await acked(A, 'shares', shares(0, holders[0]), 'shares', 'A shares');
await refused(A, 'shares', shares(0, holders[0]), 'secagg_repeated', 'a second shares');
await acked(B, 'shares', shares(1, holders[1]), 'shares', 'B shares');
await acked(C, 'shares', shares(2, holders[2]), 'shares', 'C shares: the stage ends');

// masked inputs: P + 1 ring elements packed at the task's 32 bits (4 bytes little-endian each)
const masked = (n) => Buffer.concat([be32(n), randomBytes(4 * n)]);
for (const [p, c] of [A, B, C].entries()) await request(c, 'masked_request', `masked_request to ${p}`);
await refused(A, 'masked', masked(P), 'secagg_bad_masked', 'a masked input one value short');
await refused(A, 'masked', masked(P + 2), 'secagg_bad_masked', 'a masked input one value long');
await acked(A, 'masked', masked(P + 1), 'masked', 'A sends its masked input');
await refused(D, 'masked', masked(P + 1), 'secagg_not_in_round', 'a masked input from a client not in the round');
await acked(B, 'masked', masked(P + 1), 'masked', 'B sends its masked input');
await acked(C, 'masked', masked(P + 1), 'masked', 'C sends its masked input: the stage ends');

// unmasking: each is asked for the shares of its neighbours (an answer: owner (4), which (1), a share of 24 bytes)
const unmaskReqs = [];
for (const [p, c] of [A, B, C].entries()) unmaskReqs.push(await request(c, 'unmask_request', `unmask_request to ${p}`));
await refused(A, 'unmask', Buffer.concat([be32(1), be32(9), Buffer.from([1]), Buffer.alloc(24)]), 'secagg_not_neighbour',
  'an unmask answer for an unknown client');
const alive = (req) => { const n = req.readUInt32BE(4); return Array.from({ length: n }, (_, i) => req.readUInt32BE(8 + 4 * i)); };
const wrongKind = alive(unmaskReqs[0]).map((o) => Buffer.concat([be32(o), Buffer.from([2]), Buffer.alloc(24)]));
await refused(A, 'unmask', Buffer.concat([be32(wrongKind.length), ...wrongKind]), 'secagg_inconsistent',
  'mask-seed shares of clients named alive');
await refused(A, 'shares', shares(0, holders[0]), 'secagg_wrong_stage', 'shares at the unmasking');
await refused(D, 'unmask', be32(0), 'secagg_not_in_round', 'an unmask answer from a client not in the round');
// an honest client that refuses its request is out of the round (no answer); in a round of 3 some secret then
// lacks t holders: the round is abandoned, never unmasked
C.send(JSON.stringify({ type: 'secagg_refusal', round, code: 'secagg_both_sets', message: 'client 0 named alive and dropped' }));
const end = await next(A);
check(end && end.type === 'round_end' && end.abandoned === true, `a round that cannot be unmasked is abandoned: ${JSON.stringify(end)}`);

for (const c of [...clients, D]) c.close();
console.log(`secure-bad: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
