// docs/protocol.md is the protocol: every ```exchange block in it is played
// against a live aggregator (a fresh one per block, on loopback, a port the
// kernel chooses, with the options on the fence line and the task
// protocol_task.json), and what the server sends is compared with the block,
// field by field; the doc explains the format. Then an upgrade that does not
// offer the sdfed.v1 subprotocol, or that asks for another path than /ws,
// must get 400 with a body saying so. Prints a
// line per failure and "protocol-doc: N passed, M failed".
//   node --experimental-websocket protocol_doc.mjs AGGREGATOR MODEL.gguf WORK_DIR docs/protocol.md
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { connect } from '../../lib/connection.mjs';
import { decode, decodeSecure, frame, GLOBAL, secureFrame, UPDATE } from '../../lib/frame.mjs';
import { servers } from './servers.mjs';

const [aggregator, model, work, doc] = process.argv.slice(2);
let passed = 0, failed = 0;
const check = (ok, what) => { if (ok) passed++; else { failed++; console.log(`FAIL: ${what}`); } };


// The blocks: { line (of the fence, 1-based), options, lines: [{ line, text }] }.
function exchanges(text) {
  const found = [];
  let block = null;
  text.split('\n').forEach((line, i) => {
    if (!block && line.startsWith('```exchange')) {
      block = { line: i + 1, options: line.slice('```exchange'.length).trim().split(/\s+/).filter(Boolean), lines: [] };
    } else if (block && line.startsWith('```')) {
      found.push(block);
      block = null;
    } else if (block && line.trim() && !line.startsWith('#')) {
      block.lines.push({ line: i + 1, text: line });
    }
  });
  return found;
}

const startServer = servers(aggregator, model, work);

// Placeholders: a string "<name>" is any value, bound at its first use and
// equal to it afterwards; "<name>" inside a longer string is any text.
const PLACEHOLDER = /<([a-z0-9_]+)>/;

function match(want, got, bound, path) {
  if (typeof want === 'string' && /^<[a-z0-9_]+>$/.test(want)) {
    const name = want.slice(1, -1);
    if (!(name in bound)) { bound[name] = got; return null; }
    return JSON.stringify(bound[name]) === JSON.stringify(got) ? null : `${path}: ${want} was ${JSON.stringify(bound[name])} before, now ${JSON.stringify(got)}`;
  }
  if (typeof want === 'string' && PLACEHOLDER.test(want)) {
    const parts = want.split(new RegExp(PLACEHOLDER, 'g')), names = parts.filter((_, i) => i % 2);
    const pattern = parts.map((part, i) => (i % 2 ? '(.+?)' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('');
    const m = typeof got === 'string' && got.match(new RegExp(`^${pattern}$`));
    if (!m) return `${path}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`;
    for (let i = 0; i < names.length; i++) {
      const error = match(`<${names[i]}>`, m[i + 1], bound, path);
      if (error) return error;
    }
    return null;
  }
  if (Array.isArray(want)) {
    if (!Array.isArray(got) || got.length !== want.length) return `${path}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`;
    for (let i = 0; i < want.length; i++) {
      const error = match(want[i], got[i], bound, `${path}[${i}]`);
      if (error) return error;
    }
    return null;
  }
  if (want && typeof want === 'object') {
    if (!got || typeof got !== 'object' || Array.isArray(got)) return `${path}: expected an object, got ${JSON.stringify(got)}`;
    const extra = Object.keys(got).filter((k) => !(k in want)), missing = Object.keys(want).filter((k) => !(k in got));
    if (extra.length || missing.length) return `${path}: fields ${extra.map((k) => `+${k}`).concat(missing.map((k) => `-${k}`)).join(' ')} in ${JSON.stringify(got).slice(0, 300)}`;
    for (const k of Object.keys(want)) {
      const error = match(want[k], got[k], bound, `${path}.${k}`);
      if (error) return error;
    }
    return null;
  }
  return want === got ? null : `${path}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`;
}

// A line to send with every "<name>" replaced by its value.
function substitute(text, bound) {
  return text.replace(/"<([a-z0-9_]+)>"/g, (_, name) => {
    if (!(name in bound)) throw new Error(`<${name}> is used before a reply gave it a value`);
    return JSON.stringify(bound[name]);
  });
}

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const f32Bytes = (values) => new Uint8Array(Float32Array.from(values).buffer);
const KINDS = { global: GLOBAL, update: UPDATE };

// What "NAME> frame {...}" sends: kind, round, samples, shape, and data (the
// values) or fill (every value); bad_crc spoils the checksum.
function frameToSend(d) {
  const n = d.shape.reduce((a, b) => a * b, 1);
  return frame(KINDS[d.kind], d.round, d.samples, d.shape, d.data ?? new Array(n).fill(d.fill), { badCrc: !!d.bad_crc });
}

// What "NAME> secagg {...}" sends: a secure frame of kind (its name) and
// round around body (hex) or `bytes` bytes of `fill`; bad_crc spoils the
// CRC-32.
function secureToSend(d) {
  const body = d.body !== undefined ? Buffer.from(d.body, 'hex') : new Uint8Array(d.bytes).fill(d.fill);
  return secureFrame(d.kind, d.round, body, { badCrc: !!d.bad_crc });
}

async function play(block) {
  const where = (l) => `${doc}:${l.line}`;
  const server = await startServer(`exchange-${block.line}`, block.options);
  const clients = {}, bound = {}, lastSha = {};
  try {
    for (const l of block.lines) {
      const m = l.text.match(/^([A-Z][A-Za-z0-9]*)([<>]) (.*)$/);
      if (!m) throw new Error(`${where(l)}: not "NAME> ..." or "NAME< ...": ${l.text}`);
      const [, name, direction, rest] = m;
      if (direction === '>') {
        clients[name] ??= await connect(`ws://127.0.0.1:${server.port}/ws`);
        const bytes = rest.match(/^bytes (\d+)$/);
        if (rest === 'close') clients[name].close();
        else if (bytes) clients[name].send(new Uint8Array(Number(bytes[1])).buffer);
        else if (rest.startsWith('frame ')) clients[name].send(frameToSend(JSON.parse(substitute(rest.slice(6), bound))));
        else if (rest.startsWith('secagg ')) clients[name].send(secureToSend(JSON.parse(substitute(rest.slice(7), bound))));
        else clients[name].send(substitute(rest, bound));
        continue;
      }
      if (!clients[name]) throw new Error(`${where(l)}: ${name} receives before it sent anything`);
      const got = await clients[name].receive();
      const close = rest.match(/^close (\d+)(?: (.+))?$/);
      let error;
      if (close) {
        const { closeCode, closeReason } = clients[name];
        error = got === null ? (closeCode === Number(close[1]) && closeReason === (close[2] ?? '') ? null
          : `closed with ${closeCode} "${closeReason}"`) : `expected the close, got ${JSON.stringify(got).slice(0, 300)}`;
        if (got === null) delete clients[name];
      } else if (got === null) {
        error = `closed (${clients[name].closeCode}) instead of sending ${rest.slice(0, 80)}`;
      } else if (rest.startsWith('secagg ')) {
        try {
          const f = got.type === 'binary' ? decodeSecure(got.data) : null;
          error = f ? match(JSON.parse(rest.slice(7)), { kind: f.kind, round: f.round, bytes: f.body.length }, bound, 'secagg')
            : `expected a secure frame, got ${JSON.stringify(got).slice(0, 300)}`;
        } catch (e) {
          error = e.message;
        }
      } else if (rest.startsWith('frame ')) {
        if (got.type !== 'binary') {
          error = `expected a frame, got ${JSON.stringify(got).slice(0, 300)}`;
        } else {
          const f = decode(got.data);
          const kind = Object.keys(KINDS).find((k) => KINDS[k] === f.kind);
          error = match(JSON.parse(rest.slice(6)), { kind, round: f.round, samples: f.samples, shape: f.shape, data: Array.from(f.values) }, bound, 'frame');
          if (!error && kind === 'global' && sha256(f.bytes) !== lastSha[name]) error = 'the frame\'s SHA-256 is not the round_start\'s global_sha256';
        }
      } else {
        error = match(JSON.parse(rest), got, bound, got.type ?? 'message');
        if (!error && got.type === 'round_start') {
          lastSha[name] = got.global_sha256;
          if (got.data && sha256(f32Bytes(got.data)) !== got.global_sha256) error = 'global_sha256 is not the SHA-256 of data as f32';
        }
      }
      check(!error, `${where(l)}: ${error}`);
      if (error) return;
    }
    // nothing the block does not show: a heartbeat's answer is each client's next message
    for (const [name, c] of Object.entries(clients)) {
      if (c.closed) continue;
      c.send('{"type": "heartbeat"}');
      const got = await c.receive();
      check(got && got.type === 'heartbeat', `${doc}:${block.line}: ${name} got more than the exchange shows: ${JSON.stringify(got).slice(0, 300)}`);
    }
  } catch (e) {
    check(false, `${doc}:${block.line}: ${e.message}`);
  } finally {
    for (const c of Object.values(clients)) c.close();
    server.stop();
  }
}

const blocks = exchanges(readFileSync(doc, 'utf8'));
check(blocks.length >= 10, `${doc} has ${blocks.length} exchanges`);
for (const block of blocks) await play(block);

// An upgrade without sdfed.v1 (none offered, or another one), or to another path than /ws, is refused: 400, a
// body that says so.
function upgrade(port, protocol, path = '/ws') {
  return new Promise((resolve) => {
    let answer = '';
    const s = net.connect(port, '127.0.0.1', () => s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n` +
      'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n' +
      `${protocol ? `Sec-WebSocket-Protocol: ${protocol}\r\n` : ''}\r\n`));
    s.on('data', (d) => {
      answer += d;
      if (answer.startsWith('HTTP/1.1 101 ') && answer.includes('\r\n\r\n')) s.destroy(); // accepted: enough said
    });
    s.on('close', () => resolve(answer));
    s.on('error', () => {});
    s.setTimeout(20000, () => s.destroy());
  });
}
const server = await startServer('subprotocol', []);
for (const protocol of ['', 'chat', 'sdfed.v0']) {
  const answer = await upgrade(server.port, protocol);
  check(answer.startsWith('HTTP/1.1 400 ') && answer.endsWith('\r\n\r\nthis WebSocket speaks only the sdfed.v1 subprotocol (Sec-WebSocket-Protocol: sdfed.v1)\n'),
    `an upgrade offering "${protocol}" is refused with 400 and a body: ${JSON.stringify(answer.slice(0, 400))}`);
}
check((await upgrade(server.port, 'chat, sdfed.v1')).startsWith('HTTP/1.1 101 '), 'an upgrade offering sdfed.v1 among others is accepted');
for (const path of ['/', '/ws/', '/wss', '/index.html', '/ws/x']) {
  const answer = await upgrade(server.port, 'sdfed.v1', path);
  check(answer.startsWith('HTTP/1.1 400 ') && answer.endsWith('\r\n\r\nthe sdfed.v1 WebSocket is at /ws (ws://HOST:PORT/ws, or wss://)\n'),
    `an upgrade to ${path} is refused with 400 and a body naming /ws: ${JSON.stringify(answer.slice(0, 400))}`);
}
check((await upgrade(server.port, 'sdfed.v1', '/ws?from=page')).startsWith('HTTP/1.1 101 '), 'an upgrade to /ws with a query is accepted');
server.stop();

console.log(`protocol-doc: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
