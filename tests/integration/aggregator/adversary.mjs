// Hostile and broken clients against a running aggregator. Every case
// expects the refusal's protocol error code (docs/protocol.md); at the end
// the server must still answer. Run with Node 20's WebSocket:
//   node --experimental-websocket adversary.mjs PORT JOIN_KEY
// The server must run with --join-key JOIN_KEY, --max-update-norm 100,
// --max-message-bytes 1048576, --rate-limit 50, --rate-window 60 (a flood
// falls in one window however slowly the server reads it), --max-refusals 20.
import net from 'node:net';
import { connect } from '../../lib/connection.mjs';
import { frame as encodeFrame, UPDATE } from '../../lib/frame.mjs';

const [port, joinKey] = process.argv.slice(2);
let rows = 0, width = 0; // the global prompt's shape, from the welcome
const url = `ws://127.0.0.1:${port}/ws`;
let passed = 0, failed = 0;
const check = (ok, what) => { if (ok) passed++; else { failed++; console.log(`FAIL: ${what}`); } };

// An update frame (docs/protocol.md), optionally with a broken CRC.
const frame = (round, samples, shape, values, options) => encodeFrame(UPDATE, round, samples, shape, values, options);

async function expectError(conn, code, what) {
  const m = await conn.next();
  check(m && m.type === 'error' && m.code === code, `${what}: expected error ${code}, got ${JSON.stringify(m)}`);
  return m;
}

async function joined() {
  const c = await connect(url);
  c.send(JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', join_key: joinKey, kind: 'adversary' }));
  const m = await c.next();
  check(m && m.type === 'welcome' && m.token, `a hello with the join key is welcome: ${JSON.stringify(m)}`);
  if (m && m.global_shape) [rows, width] = m.global_shape;
  return c;
}

const good = () => new Array(rows * width).fill(0.01);

// before hello
let c = await connect(url);
c.send('{"type": "hello", "protocol"');
await expectError(c, 'bad_json', 'malformed JSON');
c.send(JSON.stringify({ type: 'update', round: 0, samples: 1, shape: [1], data: [0] }));
await expectError(c, 'bad_message', 'an update before hello');
c.send(JSON.stringify({ type: 'hello', protocol: 'sdfed.v0', join_key: joinKey }));
await expectError(c, 'bad_protocol', 'another protocol version');
c.send(JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', join_key: 'wrong' }));
await expectError(c, 'bad_join_key', 'a wrong join key');
c.send(JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', join_key: joinKey, token: 'f'.repeat(32) }));
await expectError(c, 'bad_token', 'a token the server never issued');
c.send(JSON.stringify({ type: 'teleport' }));
await expectError(c, 'unknown_type', 'an unknown message type');
c.close();

// after hello: bad updates, each refused with its code
c = await joined();
c.send(JSON.stringify({ type: 'update', round: 0, samples: 4, shape: [2, 2], data: [1, 2, 3, 4] }));
await expectError(c, 'bad_shape', 'a JSON update of the wrong shape');
c.send(frame(0, 4, [rows + 1, width], new Array((rows + 1) * width).fill(0)));
await expectError(c, 'bad_shape', 'a binary update of the wrong shape');
const nan = good(); nan[3] = NaN;
c.send(frame(0, 4, [rows, width], nan));
await expectError(c, 'not_finite', 'NaN in a binary update');
const inf = good(); inf[5] = Infinity;
c.send(frame(0, 4, [rows, width], inf));
await expectError(c, 'not_finite', 'Inf in a binary update');
c.send(`{"type": "update", "round": 0, "samples": 4, "shape": [${rows}, ${width}], "data": [1e39${',0'.repeat(rows * width - 1)}]}`);
await expectError(c, 'not_finite', 'a JSON value beyond float range');
c.send(frame(0, 4, [rows, width], new Array(rows * width).fill(1e4)));
await expectError(c, 'norm_too_large', 'an update with a huge norm');
c.send(frame(0, 0, [rows, width], good()));
await expectError(c, 'bad_samples', 'a sample count of 0');
const late = await (c.send(frame(9999, 4, [rows, width], good())), c.next());
check(late && late.code === 'wrong_round' && Number.isInteger(late.next_round), `a wrong round names the next one: ${JSON.stringify(late)}`);
c.send(frame(0, 4, [rows, width], good(), { badCrc: true }));
await expectError(c, 'bad_crc', 'a frame with a wrong CRC-32');
c.send(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21]).buffer);
await expectError(c, 'bad_frame', 'garbage binary');
c.send(JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', join_key: joinKey }));
await expectError(c, 'bad_message', 'a second hello');
c.close();

// an oversized frame is refused and the connection closed
c = await joined();
c.send(new Uint8Array(2 * 1048576).buffer);
await expectError(c, 'too_large', 'a 2 MB frame');
// (its close frame waited for, as the flood's below: 500 ms were not always enough on a loaded machine)
for (let waited = 0; !c.closed && waited < 15000; waited += 100) await new Promise((r) => setTimeout(r, 100));
check(c.closed && c.closeCode === 1009, `the connection that sent 2 MB is closed with 1009 (${c.closeCode})`);

// flooding: messages beyond the rate limit are refused, and repeated abuse closes
c = await joined();
for (let i = 0; i < 120; i++) c.send('{"type": "heartbeat"}');
for (let waited = 0; !c.closed && waited < 15000; waited += 100) await new Promise((r) => setTimeout(r, 100));
const limited = c.all.filter((m) => m.type === 'error' && m.code === 'rate_limited').length;
const answered = c.all.filter((m) => m.type === 'heartbeat').length;
check(limited >= 1, `a flood is rate limited (${answered} heartbeats answered, ${limited} refused)`);
check(c.closed && c.closeCode === 1008, `a client refused 20 times is disconnected with 1008 (${c.closeCode})`);

// slow loris: a request whose headers never end is dropped, the server answers meanwhile
const started = Date.now();
const loris = net.connect(port, '127.0.0.1');
const lorisClosed = new Promise((r) => loris.on('close', () => r(Date.now() - started)));
loris.on('error', () => {});
loris.write('GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\n');
const drip = setInterval(() => loris.write('X-Drip: 1\r\n'), 1000);
const keyed = { headers: { authorization: `Bearer ${joinKey}` } };
const status = await (await fetch(`http://127.0.0.1:${port}/status`, keyed)).json();
check(typeof status.round === 'number', 'the server answers during a slow loris');
const lorisMs = await Promise.race([lorisClosed, new Promise((r) => setTimeout(() => r(-1), 20000))]);
clearInterval(drip);
loris.destroy();
check(lorisMs > 0 && lorisMs < 15000, `a slow-loris connection is dropped (after ${lorisMs} ms)`);

// the server is up and counted what it refused
const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`, keyed)).text();
for (const code of ['bad_json', 'bad_message', 'bad_join_key', 'bad_token', 'bad_shape', 'not_finite', 'norm_too_large',
  'bad_crc', 'bad_frame', 'wrong_round', 'too_large', 'rate_limited'])
  check(new RegExp(`sdfed_updates_refused_total\\{reason="${code}"\\} [1-9]`).test(metrics), `/metrics counts ${code}`);
console.log(`adversary: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
