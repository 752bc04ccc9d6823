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

const [serverPort, clientBin, model, cache, work] = process.argv.slice(2);
let passed = 0, failed = 0;
const ok = () => passed++;
const bad = (why) => { failed++; console.log(`FAIL: ${why}`); };

// every feature file of the cache write-locked (fcntl, as feature_cache.c locks) until stdin closes
const locker = spawn('/usr/bin/python3', ['-c', `
import fcntl, glob, sys
files = [open(p, "r+b") for p in glob.glob(sys.argv[1] + "/*/*.features")]
for f in files: fcntl.lockf(f, fcntl.LOCK_EX)
print(len(files), flush=True)
sys.stdin.read()`, cache], { stdio: ['pipe', 'pipe', 'inherit'] });
const lockedFiles = Number(await new Promise((resolve) => locker.stdout.once('data', resolve)));
lockedFiles > 0 ? ok() : bad(`no feature files to lock in ${cache}`);

// WebSocket frames of a byte stream after its HTTP upgrade: calls onFrame(opcode, payload, bytes)
function frames(onHeaders, onFrame) {
  let buf = Buffer.alloc(0), upgraded = false;
  return (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    if (!upgraded) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      onHeaders(buf.subarray(0, end + 4));
      buf = buf.subarray(end + 4);
      upgraded = true;
    }
    for (;;) {
      if (buf.length < 2) return;
      const masked = (buf[1] & 0x80) !== 0;
      let len = buf[1] & 0x7f, at = 2;
      if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); at = 4; }
      else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); at = 10; }
      const total = at + (masked ? 4 : 0) + len;
      if (buf.length < total) return;
      const bytes = buf.subarray(0, total);
      let payload = Buffer.from(buf.subarray(total - len, total));
      if (masked) {
        const mask = buf.subarray(at, at + 4);
        for (let i = 0; i < len; i++) payload[i] ^= mask[i & 3];
      }
      buf = buf.subarray(total);
      onFrame(bytes[0] & 0x0f, payload, bytes);
    }
  };
}
const ping = Buffer.from('busy?');
let pinged = false, ponged = false, loaded = false, pongWhileHeld = false, released = false;
const proxy = net.createServer((fromClient) => {
  const toServer = net.connect(Number(serverPort), '127.0.0.1');
  fromClient.on('data', frames((h) => toServer.write(h), (opcode, payload, bytes) => {
    if (opcode === 0xa && payload.equals(ping)) { ponged = true; pongWhileHeld = !released && !loaded; }
    toServer.write(bytes);
  }));
  toServer.on('data', frames((h) => fromClient.write(h), (opcode, payload, bytes) => {
    fromClient.write(bytes);
    if (!pinged && opcode === 0x1 && payload.toString().includes('"type": "welcome"')) {
      pinged = true;
      fromClient.write(Buffer.concat([Buffer.from([0x89, ping.length]), ping])); // FIN + PING, unmasked
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
