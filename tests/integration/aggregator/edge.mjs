// The aggregator's edge, as a public federation faces it (docs/protocol.md,
// "Limits"): each part starts its own aggregator on loopback (a port the
// kernel chooses, an empty state, the task protocol_task.json) with the
// options it tests, and plays clients from several loopback addresses
// (127.0.0.2, 127.0.0.3, ...: the server tells clients apart by address).
// Prints a line per failure and "edge: N passed, M failed".
//   node --experimental-websocket edge.mjs AGGREGATOR MODEL.gguf WORK_DIR
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

import { startAggregator } from '../../lib/port_file.mjs';
import { BINARY, CONTINUATION, TEXT, clientFrame, clientFrameHeader, masked, rawConnect } from '../../lib/raw_websocket.mjs';

const [aggregator, model, work] = process.argv.slice(2);
let passed = 0, failed = 0;
const check = (ok, what) => { if (ok) passed++; else { failed++; console.log(`FAIL: ${what}`); } };

rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
const task = JSON.parse(readFileSync(new URL('protocol_task.json', import.meta.url), 'utf8'));
writeFileSync(`${work}/task.json`, JSON.stringify({ ...task, model }));
const start = (name, options) => startAggregator(aggregator, `${work}/task.json`, work, name, options);
const show = (c) => JSON.stringify({ status: c.status, messages: c.messages, close: c.closeCode, ended: c.ended });

// --- a frame whose header announces more than --max-message-bytes is refused with its first piece (lws hands
// over at most 64 KiB of a frame at a time), before the rest of its payload is sent: too_large, then close 1009
async function frameSizes() {
  const server = await start('frames', ['--max-message-bytes', '1048576']);
  for (const [what, length] of [['100 MiB', 100n << 20n], ['2^63 - 1 bytes', (1n << 63n) - 1n]]) {
    const c = rawConnect(server.port);
    await c.until((x) => x.status, 10);
    const { bytes, mask } = clientFrameHeader(BINARY, length);
    c.send(bytes);
    c.send(masked(Buffer.alloc(192 * 1024), mask)); // three of lws's 64 KiB pieces, and nothing more
    const closed = await c.until((x) => x.closeCode, 10);
    const m = c.messages[0] || {};
    check(closed && m.code === 'too_large' && c.closeCode === 1009,
      `a frame announcing ${what} is refused before its payload (too_large, 1009): ${show(c)}`);
    c.close();
  }
  // a length with its most significant bit set is not WebSocket (RFC 6455 5.2): dropped at once
  const c = rawConnect(server.port);
  await c.until((x) => x.status, 10);
  c.send(clientFrameHeader(BINARY, 1n << 63n).bytes);
  check(await c.until((x) => x.ended, 10), `a frame announcing 2^63 bytes is dropped at once: ${show(c)}`);
  c.close();
  server.stop();
}

// --- text frames are UTF-8 (RFC 6455 8.1): one that is not fails the connection with 1007 before anything reads
// it, also when its last character is cut short at the end of a message in fragments; what the server says in its
// own text frames is always UTF-8, also when it quotes what a client sent
async function utf8() {
  const server = await start('utf8', []);
  const bytes = (...parts) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));
  const invalid = [
    ['a byte that is never UTF-8 (0xff)', [clientFrame(TEXT, bytes('{"type": "', [0xff], '"}'))]],
    ['a UTF-16 surrogate encoded (0xed 0xa0 0x80)', [clientFrame(TEXT, bytes('{"type": "', [0xed, 0xa0, 0x80], '"}'))]],
    ['an overlong encoding of "/" (0xc0 0xaf)', [clientFrame(TEXT, bytes('{"type": "', [0xc0, 0xaf], '"}'))]],
    ['a character cut short where a message in two fragments ends',
      [clientFrame(TEXT, bytes('{"type": "heartbeat", "x": "'), { final: false }), clientFrame(CONTINUATION, bytes('"}', [0xc3]))]],
  ];
  for (const [what, frames] of invalid) {
    const c = rawConnect(server.port);
    await c.until((x) => x.status, 10);
    frames.forEach((f) => c.send(f));
    await c.until((x) => x.closeCode || x.ended, 10);
    check(c.closeCode === 1007 && c.messages.length === 0, `${what}: closed with 1007 and no message: ${show(c)}`);
    c.close();
  }
  // the server quotes a client's type and protocol: UTF-8 in, UTF-8 out, whole characters
  const c = rawConnect(server.port);
  await c.until((x) => x.status, 10);
  c.sendText('{"type": "h\u00e9llo\ud800 \u00e9\u00e9"}'); // a lone surrogate escaped is U+FFFD
  c.sendText(JSON.stringify({ type: 'hello', protocol: `sdfed.${'é'.repeat(12)}` }));
  await c.until((x) => x.messages.length === 2, 10);
  check(c.messages.length === 2 && c.notUtf8 === 0 && c.messages[0].code === 'unknown_type' &&
    c.messages[0].message.includes('héllo\ufffd éé') && c.messages[1].code === 'bad_protocol',
  `the server quotes a client's text in UTF-8: ${show(c)}`);
  c.close();
  server.stop();
}

for (const part of [frameSizes, utf8]) {
  try {
    await part();
  } catch (e) {
    check(false, `${part.name}: ${e.stack}`);
  }
}
console.log(`edge: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
