// The aggregator's store on a full disk, and the disk freed again. A file
// size limit on the running server (prlimit) at the end of its SQLite
// write-ahead log makes every write fail, as on a full filesystem (there
// the error is ENOSPC and SQLite says "database or disk is full"; past a
// size limit EFBIG, "disk I/O error": the same store fault to the server);
// restoring the limit frees the disk. Client 0 alone does round 0; round 1 has both
// clients and client 0's update is stored; then the disk fills: client 1's
// updates and a new client's hello are refused with server_error, the
// server still answers, and
// when client 1 leaves the round cannot close, however often the server
// tries; the disk is freed: round 1 closes, round 2 starts and the new
// client's hello said again is welcome. Prints one
// line per failed check and "store-fault: N passed, M failed"; the caller
// checks what the server logged.
//   node --experimental-websocket store_fault.mjs PORT SERVER_PID STATE_DIR REFUSALS
// The server runs with --min-clients 1 a task of 3 rounds and 2 clients per round.
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { connect } from '../../lib/connection.mjs';

const [port, pid, state, refusals] = process.argv.slice(2);
let passed = 0, failed = 0;
const check = (ok, what) => { if (ok) passed++; else { failed++; console.log(`FAIL: ${what}`); } };
const base = `http://127.0.0.1:${port}`;
const status = async () => (await fetch(`${base}/status`)).json();
const metric = async (name) => Number((await (await fetch(`${base}/metrics`)).text()).match(new RegExp(`^${name} (\\d+)`, 'm'))[1]);

async function until(what, fn, seconds) {
  for (const end = Date.now() + seconds * 1000; Date.now() < end; await new Promise((r) => setTimeout(r, 50)))
    if (await fn()) return true;
  check(false, `timed out after ${seconds} s waiting for ${what}`);
  return false;
}

const hello = JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', encoding: 'json', kind: 'test' });
async function joined() {
  const c = await connect(`ws://127.0.0.1:${port}/ws`);
  c.send(hello);
  const m = await c.next();
  check(m && m.type === 'welcome', `a hello is welcome: ${JSON.stringify(m)}`);
  return c;
}

const roundStart = (c, round) => c.all.find((m) => m.type === 'round_start' && m.round === round);
// an update of the round's own global parameters (valid whatever the task),
// and the server's answer to it
async function update(c, round) {
  const r = roundStart(c, round);
  c.send(JSON.stringify({ type: 'update', round, samples: 4, shape: r.shape, data: r.data }));
  for (let m; (m = await c.next());) if (['ack', 'error'].includes(m.type)) return m;
  return null;
}

// the soft limit on the server's file size ("unlimited" or bytes), or sets it
const limit = (value) => execFileSync('prlimit', ['--pid', pid, ...(value === undefined
  ? ['--fsize', '--raw', '--noheadings', '--output=SOFT'] : [`--fsize=${value}:`])]).toString().trim();

const c0 = await joined();
const c1 = await joined();
let ok = await until('round 0 to start', () => roundStart(c0, 0), 30);
const first = ok && await update(c0, 0);
check(first && first.type === 'ack', `client 0's update of round 0 is stored: ${JSON.stringify(first)}`);
ok = await until('round 1 to start with both clients', () => roundStart(c0, 1) && roundStart(c1, 1), 30);
const second = ok && await update(c0, 1);
check(second && second.type === 'ack', `client 0's update of round 1 is stored: ${JSON.stringify(second)}`);

if (ok) {
  const free = limit();
  limit(statSync(`${state}/aggregator.sqlite-wal`).size); // the disk is full
  for (let i = 0; i < refusals; i++) {
    const m = await update(c1, 1);
    check(m && m.type === 'error' && m.code === 'server_error' && /store: .*disk/.test(m.message),
      `an update the store cannot take is refused with server_error: ${JSON.stringify(m)}`);
  }
  // a new volunteer: its registration cannot be stored either
  const c2 = await connect(`ws://127.0.0.1:${port}/ws`);
  c2.send(hello);
  const m = await c2.next();
  check(m && m.type === 'error' && m.code === 'server_error' && /store: .*disk/.test(m.message),
    `a hello the store cannot register is refused with server_error: ${JSON.stringify(m)}`);
  c1.close(); // round 1 is complete without it, but the store cannot close it: tried on every tick
  const failures = await metric('sdfed_store_failures_total');
  await until('the server to try closing round 1 again', async () => (await metric('sdfed_store_failures_total')) >=
    failures + 3, 30);
  check((await status()).round === 1 && (await metric('sdfed_store_failing')) === 1,
    'during the fault the server answers, and round 1 stays open');
  limit(free); // the disk has room again
  await until('round 2 to start, once the store takes round 1', () => roundStart(c0, 2), 30);
  check((await metric('sdfed_store_failing')) === 0, 'the fault is over');
  c2.send(hello); // said again, once the store takes it
  const again = await c2.next();
  check(again && again.type === 'welcome', `the hello said again is welcome: ${JSON.stringify(again)}`);
  c2.close();
}
c0.close();
console.log(`store-fault: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
