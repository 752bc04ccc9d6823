// A client busy loading its data still answers the server: sdfed-client's
// load is held (another process keeps a write lock on every feature-cache
// file it reads), and a proxy between it and a real aggregator sends it a
// WebSocket PING right after the welcome. The PONG must come back while the
// load is held, which only a client whose event loop runs beside its work
// can do; once the lock is released the client must finish loading.
//   node busy_client.mjs SERVER_PORT CLIENT MODEL CACHE_DIR WORK_DIR
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

import { frames, PING, PONG, TEXT } from '../../lib/raw_websocket.mjs';

const [serverPort, clientBin, model, cache, work] = process.argv.slice(2);
let passed = 0, failed = 0;
const ok = () => passed++;
const bad = (why) => { failed++; console.log(`FAIL: ${why}`); };

// every feature file of the cache write-locked (fcntl, as native/keyed_records.c locks) until stdin closes
const locker = spawn('/usr/bin/python3', ['-c', `
import fcntl, glob, sys
files = [open(p, "r+b") for p in glob.glob(sys.argv[1] + "/*/*.records")]
for f in files: fcntl.lockf(f, fcntl.LOCK_EX)
print(len(files), flush=True)
sys.stdin.read()`, cache], { stdio: ['pipe', 'pipe', 'inherit'] });
const lockedFiles = Number(await new Promise((resolve) => locker.stdout.once('data', resolve)));
lockedFiles > 0 ? ok() : bad(`no feature files to lock in ${cache}`);

const ping = Buffer.from('busy?');
let pinged = false, ponged = false, loaded = false, pongWhileHeld = false, released = false;
const proxy = net.createServer((fromClient) => {
  const toServer = net.connect(Number(serverPort), '127.0.0.1');
  fromClient.on('data', frames((h) => toServer.write(h), (opcode, payload, bytes) => {
    if (opcode === PONG && payload.equals(ping)) { ponged = true; pongWhileHeld = !released && !loaded; }
    toServer.write(bytes);
  }));
  toServer.on('data', frames((h) => fromClient.write(h), (opcode, payload, bytes) => {
    fromClient.write(bytes);
    if (!pinged && opcode === TEXT && payload.toString().includes('"type": "welcome"')) {
      pinged = true;
      fromClient.write(Buffer.concat([Buffer.from([0x80 | PING, ping.length]), ping])); // a final PING, unmasked
    }
  }));
  const end = () => { fromClient.destroy(); toServer.destroy(); };
  fromClient.on('close', end); toServer.on('close', end);
  fromClient.on('error', end); toServer.on('error', end);
});
await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));

const client = spawn(clientBin, ['--server', `ws://127.0.0.1:${proxy.address().port}`, '--client-index', '0',
  '--model', model, '--cache', cache, '--token-file', path.join(work, 'busy.token')], { stdio: ['ignore', 'pipe', 'pipe'] });
let log = '';
client.stdout.on('data', (d) => { log += d; if (log.includes('shard of')) loaded = true; });
client.stderr.on('data', (d) => { log += d; });

const waitFor = async (what, seconds, cond) => {
  for (let i = 0; i < seconds * 20; i++) { if (cond()) return true; await new Promise((r) => setTimeout(r, 50)); }
  bad(`timed out after ${seconds} s waiting for ${what}; client log: ${log.trim().split('\n').slice(-3).join(' | ')}`);
  return false;
};
if (await waitFor('the welcome to pass the proxy', 30, () => pinged)) ok();
if (await waitFor('the PONG of the client busy loading', 30, () => ponged)) {
  pongWhileHeld ? ok() : bad('the PONG came only after the client had loaded');
  loaded ? bad('the client loaded while its feature files were locked') : ok();
}
released = true;
locker.stdin.end();
if (await waitFor('the client to load once the lock was released', 60, () => loaded)) ok();
client.kill('SIGKILL');
locker.kill('SIGKILL');
proxy.close();
console.log(`busy_client: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
