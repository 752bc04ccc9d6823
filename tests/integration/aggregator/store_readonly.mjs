// A state that was read-only at the start recovers by itself. The server
// (run as a user that the file modes bind, not root) was started on a
// federation whose database file is read-only (0400): it serves, but a new
// volunteer's hello cannot be registered and is refused with server_error,
// and /metrics says the store is failing. Once the file is writable again
// (0600) the store opens it again read-write by itself: the hello said
// again is welcome, round 0 starts, its update is stored, and the fault is
// over. Prints a line per failed check and "store-readonly: N passed, M
// failed"; the caller checks what the server logged.
//   node --experimental-websocket store_readonly.mjs PORT DATABASE_FILE
// The server runs a task of 1 client a round with --min-clients 1.
import { chmodSync } from 'node:fs';
import { connect } from '../../lib/connection.mjs';

const [port, database] = process.argv.slice(2);
let passed = 0, failed = 0;
const check = (ok, what) => { if (ok) passed++; else { failed++; console.log(`FAIL: ${what}`); } };
const metric = async (name) => Number((await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()).match(new RegExp(`^${name} (\\d+)`, 'm'))[1]);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const hello = JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', encoding: 'json', kind: 'test' });

const c = await connect(`ws://127.0.0.1:${port}/ws`);
c.send(hello);
const refused = await c.next();
check(refused && refused.type === 'error' && refused.code === 'server_error' && /readonly|read-only/.test(refused.message),
  `a hello the read-only store cannot register is refused with server_error: ${JSON.stringify(refused)}`);
check((await metric('sdfed_store_failing')) === 1, 'the store is failing');
chmodSync(database, 0o600); // writable again
// the store tries to open it again at most once a second: the hello is said again until it is welcome
let welcome = null;
for (let i = 0; i < 40 && !welcome; i++) {
  await sleep(250);
  c.send(hello);
  const m = await c.next();
  if (m && m.type === 'welcome') welcome = m;
  else check(m && m.type === 'error' && m.code === 'server_error', `while it recovers, server_error: ${JSON.stringify(m)}`);
}
check(welcome !== null, 'once the database is writable the hello is welcome');
if (welcome) {
  let start = null;
  for (let i = 0; i < 200 && !start; i++) {
    start = c.all.find((m) => m.type === 'round_start' && m.round === 0);
    if (!start) await sleep(50);
  }
  check(start !== null, 'round 0 starts');
  if (start) {
    c.send(JSON.stringify({ type: 'update', round: 0, samples: 4, shape: start.shape, data: start.data }));
    const ack = await c.next();
    check(ack && ack.type === 'ack' && ack.round === 0, `its update is stored: ${JSON.stringify(ack)}`);
  }
  check((await metric('sdfed_store_failing')) === 0, 'the fault is over');
}
c.close();
console.log(`store-readonly: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
