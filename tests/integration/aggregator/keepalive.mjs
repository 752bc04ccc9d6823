// The server's WebSocket keepalive (run against `sdfed-aggregator
// --ping-after 1 --hangup-after 3`): two volunteers say hello and then say
// nothing. P answers every PING with a PONG; S answers none. The server
// must ping both, hang up S once it has been silent for 3 s, with a close
// frame (1001 going away, its reason saying why; it then counts one client
// fewer in /status), and keep P, whose PONGs show it is there, connected
// long past 3 s.
//   node keepalive.mjs PORT
import net from 'node:net';

import { CLOSE, PING, PONG, clientFrame, frames, upgradeRequest } from '../../lib/raw_websocket.mjs';

const port = Number(process.argv[2]);
let passed = 0, failed = 0;
const ok = () => passed++;
const bad = (why) => { failed++; console.log(`FAIL: ${why}`); };
const hello = JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', kind: 'silent' });

// A raw volunteer: its PINGs so far, whether the server closed it, and a promise for each change.
function volunteer(answersPings) {
  const v = { pings: 0, closedByServer: false, closeFrame: null, changed: null };
  let wake = () => {};
  const changed = () => { const w = wake; v.changed = new Promise((r) => { wake = r; }); w(); };
  changed();
  v.socket = net.connect(port, '127.0.0.1', () => v.socket.write(upgradeRequest(port)));
  v.socket.on('data', frames((headers) => {
    if (!headers.toString().startsWith('HTTP/1.1 101')) bad(`upgrade refused: ${headers.toString().split('\r\n')[0]}`);
    v.socket.write(clientFrame(0x1, hello));
  }, (opcode, payload) => {
    if (opcode === PING) {
      v.pings++;
      if (answersPings) v.socket.write(clientFrame(PONG, payload));
      changed();
    }
    if (opcode === CLOSE) {
      v.closeFrame = { code: payload.length >= 2 ? payload.readUInt16BE(0) : 0, reason: payload.subarray(2).toString() };
      v.closedByServer = true;
      changed();
    }
  }));
  v.socket.on('close', () => { v.closedByServer = true; changed(); });
  v.socket.on('error', () => {});
  return v;
}
// Waits until cond() holds, at most SECONDS; false (and a failure) if it never does.
async function until(what, seconds, v, cond) {
  const deadline = Date.now() + seconds * 1000;
  while (!cond()) {
    const left = deadline - Date.now();
    if (left <= 0) { bad(`timed out after ${seconds} s waiting for ${what}`); return false; }
    await Promise.race([v.changed, new Promise((r) => setTimeout(r, left))]);
  }
  return true;
}
const clientsConnected = async () => (await (await fetch(`http://127.0.0.1:${port}/status`)).json()).clients;

const p = volunteer(true), s = volunteer(false);
if (await until("S's first PING", 20, s, () => s.pings >= 1)) ok();
if (await until('the server to hang up S', 20, s, () => s.closedByServer)) ok();
s.pings === 1 ? ok() : bad(`S was pinged ${s.pings} times in one silence`);
s.closeFrame && s.closeFrame.code === 1001 && /^nothing heard for [3-9] s; hanging up$/.test(s.closeFrame.reason) ? ok()
  : bad(`S was hung up without a close frame 1001 saying why: ${JSON.stringify(s.closeFrame)}`);
// P's fourth PING comes at least 4 s after it last spoke before its PONGs: they kept it
if (await until("P's fourth PING", 20, p, () => p.pings >= 4 || p.closedByServer))
  p.closedByServer ? bad(`the server hung up P, which answered its ${p.pings} PINGs`) : ok();
const clients = await clientsConnected();
clients === 1 ? ok() : bad(`/status counts ${clients} clients connected, not 1 (P)`);
p.socket.destroy();
console.log(`keepalive: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
