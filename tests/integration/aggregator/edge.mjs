// The aggregator's edge, as a public federation faces it (docs/protocol.md,
// "Limits"): each part starts its own aggregator on loopback (a port the
// kernel chooses, an empty state, the task protocol_task.json) with the
// options it tests, and plays clients from several loopback addresses
// (127.0.0.2, 127.0.0.3, ...: the server tells clients apart by address).
// Prints a line per failure and "edge: N passed, M failed".
//   node --experimental-websocket edge.mjs AGGREGATOR MODEL.gguf WORK_DIR
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';

import { BINARY, CONTINUATION, TEXT, clientFrame, clientFrameHeader, masked, rawConnect } from '../../lib/raw_websocket.mjs';
import { servers } from './servers.mjs';

const [aggregator, model, work] = process.argv.slice(2);
let passed = 0, failed = 0;
const check = (ok, what) => { if (ok) passed++; else { failed++; console.log(`FAIL: ${what}`); } };

const start = servers(aggregator, model, work);
// GET path from the local address `from`: { status, headers, body } (a body of at most `limit` bytes is read; the
// rest of a larger one is left unread)
function get(port, path, { from = '127.0.0.1', headers = {}, limit = 65536 } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, localAddress: from, headers, agent: false }, (res) => {
      const parts = [];
      let size = 0;
      res.on('data', (d) => {
        parts.push(d);
        size += d.length;
        if (size > limit) res.destroy();
      });
      const done = () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(parts).toString() });
      res.on('end', done);
      res.on('close', done);
    });
    req.on('error', reject);
    req.setTimeout(20000, () => req.destroy(new Error(`GET ${path}: no answer in 20 s`)));
  });
}
// The bytes a server answers to raw request bytes (it closes after one answer over plain HTTP).
function exchange(port, bytes, { from = '127.0.0.1' } = {}) {
  return new Promise((resolve) => {
    let answer = '';
    const s = net.connect({ port, host: '127.0.0.1', localAddress: from }, () => s.write(bytes));
    s.on('data', (d) => { answer += d; });
    s.on('close', () => resolve(answer));
    s.on('error', () => {});
    s.setTimeout(20000, () => s.destroy());
  });
}
const show = (c) => JSON.stringify({ status: c.status, messages: c.messages, close: c.closeCode, ended: c.ended });

// --- a frame whose header announces more than --max-message-bytes is refused with its first piece (lws hands
// over at most 64 KiB of a frame at a time), before the rest of its payload is sent: too_large, then close 1009;
// before hello, a message over 4096 bytes the same
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
  // before hello a message holds at most what a hello can be, 4096 bytes (connections that never said hello hold no
  // megabytes): one byte more is too_large, then close 1009; a hello of 4096 bytes is welcome, and after it the
  // connection's messages may hold --max-message-bytes
  const before = rawConnect(server.port);
  await before.until((x) => x.status, 10);
  before.sendText(JSON.stringify({ type: 'hello', protocol: 'sdfed.v1' }).padEnd(4097));
  await before.until((x) => x.closeCode, 10);
  check((before.messages[0] || {}).code === 'too_large' && before.closeCode === 1009 &&
    before.closeReason === 'before hello, messages are limited to 4096 bytes',
  `4097 bytes before hello are refused (too_large, 1009): ${show(before)} ${before.closeReason}`);
  before.close();
  const after = rawConnect(server.port);
  await after.until((x) => x.status, 10);
  after.sendText(JSON.stringify({ type: 'hello', protocol: 'sdfed.v1' }).padEnd(4096));
  await after.until((x) => x.messages.some((m) => m.type === 'welcome') || x.ended, 10);
  after.sendText(JSON.stringify({ type: 'heartbeat' }).padEnd(100000));
  await after.until((x) => x.messages.some((m) => m.type === 'heartbeat') || x.ended, 10);
  check(after.messages.some((m) => m.type === 'welcome') && after.messages.some((m) => m.type === 'heartbeat') &&
    !after.closeCode, `a hello of 4096 bytes is welcome, then a message of 100000 bytes is read: ${show(after)}`);
  after.close();
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

// --- HTTP: a method other than GET is 405 with Allow: GET; If-None-Match is a list of entity tags compared as
// RFC 9110 says (weak comparison, "*"), never a substring
async function httpRules() {
  const server = await start('http', []);
  const answer = await exchange(server.port, 'POST /status HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n');
  check(/^HTTP\/1.1 405 Method Not Allowed\r\n/.test(answer) && /\r\nallow: GET\r\n/i.test(answer),
    `POST is 405 with Allow: GET: ${JSON.stringify(answer.slice(0, 300))}`);
  const { body } = await get(server.port, '/task');
  const sha = JSON.parse(body).model.sha256, url = `/model/${sha}.gguf`;
  const cases = [[`"${sha}"`, 304], [`W/"${sha}"`, 304], [`"0", W/"1" ,, "${sha}"`, 304], ['*', 304], [` * `, 304],
    [`"${sha.slice(1)}"`, 200], [`"x${sha}"`, 200], [sha, 200], [`"${sha}`, 200], [`"${sha}" x`, 200], ['*, "0"', 200],
    [`"${sha.toUpperCase()}"`, 200]];
  for (const [value, want] of cases) {
    const r = await get(server.port, url, { headers: { 'if-none-match': value } });
    check(r.status === want && (want === 200 || r.headers.etag === `"${sha}"`),
      `If-None-Match: ${value.replace(sha, 'SHA')} is answered ${r.status} (etag ${r.headers.etag}), not ${want}`);
  }
  // every answer carries the content security policy (the page's scripts, styles and workers, WebAssembly, nothing
  // inline, no frames around it) and no Referer; status.html has its style in a file of its own
  const csp = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' blob:; " +
    "connect-src 'self'; worker-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; " +
    "frame-ancestors 'none'";
  for (const path of ['/', '/status.html', '/status.css', '/task', url, '/no-such-file']) {
    const r = await get(server.port, path);
    check(r.headers['content-security-policy'] === csp && r.headers['referrer-policy'] === 'no-referrer',
      `${path.replace(sha, 'SHA')} (${r.status}) carries the content security policy: ${r.headers['content-security-policy']}`);
  }
  const page = (await get(server.port, '/status.html')).body, css = await get(server.port, '/status.css');
  check(!/<style|<script|style=/.test(page) && page.includes('<link rel="stylesheet" href="/status.css">') &&
    css.status === 200 && css.headers['content-type'] === 'text/css' && css.body.includes('.volunteers'),
  'status.html has no inline style: its style is /status.css');
  const raw = await exchange(server.port, 'GET /status?x=%00 HTTP/1.1\r\n\r\n');
  check(raw.includes(`\r\ncontent-security-policy: ${csp}\r\n`), `the gate's refusals carry it too: ${raw.slice(0, 100)}`);
  server.stop();
}

// --- a request whose line and headers pass --max-header-bytes [8192], or that has more than 64 header lines, is
// answered 431 with a line saying so, one with more than 16 query arguments 400; a request at those limits is
// served (lws gets room for all of it)
async function headerSizes() {
  const server = await start('headers', []);
  // a GET /status?QUERY whose line and headers (with the empty line) are `size` bytes, in `lines` header lines
  const request = (size, lines, query = '') => {
    let head = `GET /status${query} HTTP/1.1\r\nHost: 127.0.0.1\r\n`;
    for (let i = 2; i < lines; i++) head += 'a:\r\n';
    return `${head}X-Pad: ${'x'.repeat(size - head.length - 11)}\r\n\r\n`;
  };
  const arguments16 = `?${Array.from({ length: 16 }, (_, i) => `a${i}=1`).join('&')}`;
  const cases = [[request(8192, 2), 200], [request(8192, 64), 200], [request(1000, 64, arguments16), 200],
    [request(8193, 2), 431, "the request's line and headers are longer than 8192 bytes"],
    [request(20000, 30), 431, "the request's line and headers are longer than 8192 bytes"],
    [request(1000, 65), 431, 'the request has more than 64 headers'],
    [request(1000, 2, `${arguments16};b`), 400, 'the query has more than 16 arguments']];
  for (const [bytes, want, line] of cases) {
    const answer = await exchange(server.port, bytes);
    const ok = want === 200 ? /^HTTP\/1.1 200 /.test(answer)
      : answer.startsWith(`HTTP/1.1 ${want} `) && answer.endsWith(`\r\n\r\n${line}\n`);
    const lines = bytes.split('\r\n').length - 3;
    check(ok, `${bytes.length} bytes of line and headers (${lines} header lines): ${JSON.stringify(answer.slice(0, 90))}, ` +
      `not ${want}`);
  }
  server.stop();
}

// --- a WebSocket upgrade from a page of another origin is refused (403 with a line); one without Origin (a headless
// client) or from the server's own origin comes in, and those of --allow-origin (compared as RFC 6454 writes them)
async function origins() {
  const upgrade = async (port, origin) => {
    const c = rawConnect(port, { extra: origin === null ? '' : `Origin: ${origin}\r\n` });
    await c.until((x) => x.status, 10);
    await c.until((x) => x.ended || x.status.startsWith('HTTP/1.1 101'), 5);
    c.close();
    return c;
  };
  let server = await start('origin', []);
  const own = `http://127.0.0.1:${server.port}`;
  for (const [origin, want] of [[null, 101], [own, 101], [own.toUpperCase().replace('HTTP', 'http'), 101],
    ['https://evil.example', 403], [`http://localhost:${server.port}`, 403], ['http://127.0.0.1', 403], ['null', 403],
    [`${own}/`, 403]]) {
    const c = await upgrade(server.port, origin);
    check(c.status.startsWith(`HTTP/1.1 ${want} `) && (want === 101 || c.raw.includes(
      `\r\n\r\nthis WebSocket is for the pages of this server: a page of ${origin} may not open it`)),
    `an upgrade with Origin ${origin} is answered ${want}: ${c.status}`);
  }
  server.stop();
  server = await start('origin-allowed', ['--allow-origin', 'https://app.example.org', '--allow-origin',
    'http://LOCALHOST:8080']);
  for (const [origin, want] of [['https://app.example.org', 101], ['https://APP.example.org:443', 101],
    ['http://localhost:8080', 101], [`http://127.0.0.1:${server.port}`, 101], ['https://app.example.org:8443', 403],
    ['http://app.example.org', 403]]) {
    const c = await upgrade(server.port, origin);
    check(c.status.startsWith(`HTTP/1.1 ${want} `), `with --allow-origin, Origin ${origin} is answered ${want}: ${c.status}`);
  }
  server.stop();
  const bad = spawnSync(aggregator, ['--task', `${work}/task.json`, '--allow-origin', 'https://app.example.org/path']);
  check(bad.status === 2 && bad.stderr.toString().includes("--allow-origin 'https://app.example.org/path' is not an origin"),
    `a path in --allow-origin is refused at start: ${bad.stderr}`);
}

// Prometheus text's sdfed_edge_refused_total{limit="NAME"} values: { NAME: count }
async function edgeRefused(port, from = '127.0.0.1', headers = {}) {
  const text = (await get(port, '/metrics', { from, headers })).body, counts = {};
  for (const m of text.matchAll(/^sdfed_edge_refused_total\{limit="(\w+)"\} (\d+)$/gm)) counts[m[1]] = Number(m[2]);
  return counts;
}
// n upgraded WebSocket connections from an address (held open), and whether each was let in
async function hold(port, from, n) {
  const held = [];
  for (let i = 0; i < n; i++) {
    const c = rawConnect(port, { from });
    await c.until((x) => x.status || x.ended, 10);
    held.push(c);
  }
  return held;
}

// --- connections per address and for the server: an address holds at most --max-connections-per-address, more
// are closed at once while other addresses are served; past --max-connections a connection is in the reserve
// (--status-reserve): /status, /status.html, /metrics answered, anything else 503 with Retry-After; past the
// reserve closed at once
async function connections() {
  const server = await start('connections', ['--max-connections', '12', '--status-reserve', '2',
    '--max-connections-per-address', '5']);
  const a = await hold(server.port, '127.0.0.2', 6);
  check(a.slice(0, 5).every((c) => c.status.startsWith('HTTP/1.1 101')) && a[5].ended && !a[5].status,
    `127.0.0.2's sixth connection is closed at once: ${a.map((c) => c.status.slice(9, 12) || 'closed').join(' ')}`);
  let r = await get(server.port, '/status', { from: '127.0.0.3' });
  check(r.status === 200, `meanwhile another address is served: ${r.status}`);
  const b = await hold(server.port, '127.0.0.3', 5), c = await hold(server.port, '127.0.0.4', 2);
  check([...b, ...c].every((x) => x.status.startsWith('HTTP/1.1 101')), '12 connections held from 3 addresses');
  r = await get(server.port, '/status', { from: '127.0.0.5' });
  check(r.status === 200 && JSON.parse(r.body).round === 0, `the 13th, in the reserve, gets /status: ${r.status}`);
  r = await get(server.port, '/metrics', { from: '127.0.0.5' });
  check(r.status === 200 && /^sdfed_connections 13$/m.test(r.body), `and /metrics, which counts it: ${r.status}`);
  r = await get(server.port, '/task', { from: '127.0.0.5' });
  check(r.status === 503 && r.headers['retry-after'] === '5' && r.body === 'the server is full; try again in a few seconds\n',
    `anything else in the reserve is 503 with Retry-After: ${r.status} ${r.headers['retry-after']} ${r.body}`);
  const late = await hold(server.port, '127.0.0.5', 1);
  check(late[0].status.startsWith('HTTP/1.1 503 '), `a WebSocket in the reserve is 503: ${late[0].status}`);
  // the reserve held by two connections that say nothing: the next one is closed at once, from any address
  const silent = [0, 1].map(() => net.connect({ port: server.port, host: '127.0.0.1', localAddress: '127.0.0.6' }));
  silent.forEach((s) => s.on('error', () => {}));
  await new Promise((resolve) => setTimeout(resolve, 300));
  const full = await exchange(server.port, 'GET /status HTTP/1.1\r\n\r\n', { from: '127.0.0.7' });
  check(full === '', `past the reserve a connection is closed unanswered: ${JSON.stringify(full.slice(0, 60))}`);
  silent.forEach((s) => s.destroy());
  [...a, ...b, ...c].forEach((x) => x.close());
  await new Promise((resolve) => setTimeout(resolve, 300));
  const refused = await edgeRefused(server.port);
  check(refused.address_connections === 1 && refused.server_connections === 1 && refused.reserve === 2,
    `/metrics counts what was refused: ${JSON.stringify(refused)}`);
  r = await get(server.port, '/metrics');
  check(/^sdfed_connections 1$/m.test(r.body), `once they closed, /metrics counts its own connection only: ${r.body.match(/^sdfed_connections .*$/m)}`);
  server.stop();
}

// A hello over a WebSocket from an address: its answer (the first message that is not a wait), or null
async function hello(port, from, fields) {
  const c = rawConnect(port, { from });
  await c.until((x) => x.status, 10);
  c.sendText(JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', ...fields }));
  await c.until((x) => x.messages.length || x.ended, 10);
  c.close();
  return c.messages[0] || null;
}

// --- the join key guards every path but the page's own files, presented as Authorization: Bearer KEY or ?key=KEY;
// /metrics takes the metrics token instead when there is one; a key is compared whole (a NUL or more bytes after
// it make another key); wrong keys lock their address out, for a time that doubles, across connections, while
// other addresses are served
async function joinKeys() {
  const key = 'sesame', bearer = (k) => ({ authorization: `Bearer ${k}` });
  let server = await start('key', ['--join-key', key, '--metrics-token', 'prom', '--key-failures', '3',
    '--key-lockout', '1']);
  const sha = JSON.parse((await get(server.port, '/task', { headers: bearer(key) })).body).model.sha256;
  const guarded = ['/task', '/status', '/status.html', '/demo/shard', `/model/${sha}.gguf`];
  for (const path of guarded) {
    const r = await get(server.port, path, { from: '127.0.0.2' });
    check(r.status === 401 && r.headers['www-authenticate'] === 'Bearer realm="sdfed"' &&
      r.body.startsWith('this federation needs its join key'), `${path} without the key: ${r.status} ${r.body}`);
  }
  for (const path of ['/', '/app.js', '/style.css', '/status.css', '/wasm/sdfed-wasm.js', '/no-such-file']) {
    const r = await get(server.port, path, { from: '127.0.0.2' });
    check(r.status !== 401, `${path}, the page's own, needs no key: ${r.status}`);
  }
  for (const path of guarded) {
    const byHeader = await get(server.port, path, { headers: bearer(key) });
    const byQuery = await get(server.port, `${path}?key=${key}${path === '/demo/shard' ? '&k=1' : ''}`);
    check(byHeader.status === 200 && byQuery.status === 200, `${path} with the key: ${byHeader.status} ${byQuery.status}`);
  }
  const page = (await get(server.port, `/status.html?key=${key}`)).body;
  check(page.includes(`href="/status?key=${key}"`) && page.includes('href="/metrics"') && page.includes(`href="/?key=${key}"`),
    'status.html links with the key (/metrics, which takes the token, without)');
  const metrics = [await get(server.port, '/metrics', { headers: bearer(key) }), await get(server.port, '/metrics', { headers: bearer('prom') }),
    await get(server.port, '/metrics?key=prom')];
  check(metrics.map((r) => r.status).join() === '401,200,200',
    `/metrics takes the metrics token, not the join key: ${metrics.map((r) => r.status)}`);
  // hello: a key with a NUL after it, or longer than any key, is a wrong key; no key is no guess
  for (const [what, fields] of [['no key', {}], ['a NUL after the key', { join_key: `${key}\u0000x` }],
    ['300 bytes', { join_key: key + 'x'.repeat(294) }]]) {
    const m = await hello(server.port, '127.0.0.9', fields);
    check(m && m.code === 'bad_join_key' && m.message === 'this federation needs its join key' && !m.retry_after,
      `hello with ${what}: ${JSON.stringify(m)}`);
  }
  check((await hello(server.port, '127.0.0.9', { join_key: key })).type === 'welcome', 'the key itself is welcome');
  // wrong keys from 127.0.0.2, each on a new connection: the third locks the address out for 1 s
  const answers = [];
  for (const path of ['/task', '/status']) answers.push((await get(server.port, path, { from: '127.0.0.2', headers: bearer('x') })).status);
  const locking = await get(server.port, '/task', { from: '127.0.0.2', headers: bearer('y') });
  check(answers.join() === '401,401' && locking.status === 429 && locking.headers['retry-after'] === '1',
    `wrong keys: ${answers}, then ${locking.status} (Retry-After ${locking.headers['retry-after']})`);
  const locked = [await get(server.port, '/task', { from: '127.0.0.2', headers: bearer(key) }),
    await hello(server.port, '127.0.0.2', { join_key: key })];
  check(locked[0].status === 429 && locked[1].code === 'bad_join_key' && locked[1].retry_after > 0 &&
    locked[1].retry_after <= 1000 && locked[1].message.startsWith('too many wrong join keys from this address'),
  `locked out, the right key is refused too: ${locked[0].status} ${JSON.stringify(locked[1])}`);
  check((await get(server.port, '/task', { from: '127.0.0.3', headers: bearer(key) })).status === 200,
    'another address is served meanwhile');
  await new Promise((resolve) => setTimeout(resolve, 1100));
  check((await hello(server.port, '127.0.0.2', { join_key: key })).type === 'welcome', 'after the lock-out the key works');
  // three wrong hellos again, over new connections: the next lock-out lasts twice as long
  const again = [];
  for (let i = 0; i < 3; i++) again.push(await hello(server.port, '127.0.0.2', { join_key: `guess${i}` }));
  check(again[0].code === 'bad_join_key' && !again[0].retry_after && again[2].retry_after === 2000,
    `the second lock-out lasts 2 s: ${JSON.stringify(again.map((m) => m.retry_after))}`);
  const counts = await edgeRefused(server.port, '127.0.0.1', bearer('prom'));
  const metricsText = (await get(server.port, '/metrics', { headers: bearer('prom') })).body;
  check(counts.key_missing >= 6 && counts.key_wrong === 9 && counts.key_locked === 2 &&
    /^sdfed_addresses_locked 1$/m.test(metricsText), `/metrics counts the key's refusals: ${JSON.stringify(counts)}`);
  server.stop();

  // 8 clients that reconnect at once, each guessing, from one address: 3 guesses are compared, the rest refused
  // unread until the lock-out (60 s) ends; another address joins meanwhile
  server = await start('key-guesses', ['--join-key', key, '--key-failures', '3', '--key-lockout', '60']);
  const guesses = await Promise.all(Array.from({ length: 8 }, async (_, thread) => {
    const seen = [];
    for (let i = 0; i < 5; i++) seen.push(await hello(server.port, '127.0.0.4', { join_key: `t${thread}-${i}` }));
    return seen;
  }));
  const all = guesses.flat(), compared = all.filter((m) => m && !m.retry_after).length;
  const refused = all.filter((m) => m && m.retry_after > 57000 && m.retry_after <= 60000).length;
  check(all.length === 40 && compared === 2 && refused === 38,
    `40 guesses over reconnects: ${compared + 1} compared (the third locking), ${refused - 1} not compared`);
  check((await hello(server.port, '127.0.0.5', { join_key: key })).type === 'welcome', 'another address joins meanwhile');
  server.stop();
  for (const [what, value] of [['a space', 'open sesame'], ['128 characters', 'k'.repeat(128)]]) {
    const r = spawnSync(aggregator, ['--task', `${work}/task.json`, '--join-key', value]);
    check(r.status === 2 && r.stderr.toString().includes('--join-key '), `a key with ${what} is refused at start: ${r.stderr}`);
  }
}

// --- new clients per address and minute (--registrations-per-minute): past it a hello without a token is refused
// (rate_limited, retry_after the rest of the minute) while a client with its token rejoins and other addresses
// register
async function registrations() {
  const server = await start('registrations', ['--registrations-per-minute', '3']);
  const welcomed = [];
  for (let i = 0; i < 3; i++) welcomed.push(await hello(server.port, '127.0.0.2', {}));
  const fourth = await hello(server.port, '127.0.0.2', {});
  check(welcomed.every((m) => m && m.type === 'welcome') && fourth && fourth.code === 'rate_limited' &&
    fourth.retry_after > 50000 && fourth.retry_after <= 60000 &&
    fourth.message.startsWith('more than 3 new clients from this address in a minute'),
  `three new clients from 127.0.0.2, then: ${JSON.stringify(fourth)}`);
  const rejoin = await hello(server.port, '127.0.0.2', { token: welcomed[0].token });
  check(rejoin && rejoin.type === 'welcome' && rejoin.client_id === welcomed[0].client_id,
    `a client with its token rejoins from there: ${JSON.stringify(rejoin)}`);
  const other = await hello(server.port, '127.0.0.3', {});
  check(other && other.type === 'welcome', `another address registers: ${JSON.stringify(other)}`);
  const status = JSON.parse((await get(server.port, '/status')).body);
  const counts = await edgeRefused(server.port);
  check(status.clients_registered === 4 && counts.registrations === 1,
    `4 clients registered, 1 refused: ${status.clients_registered} ${JSON.stringify(counts)}`);
  server.stop();
}

// --- demo shards: a request for a free one leases it to the address that asks, at most --demo-leases-per-address
// at a time (past it 429 with Retry-After, the rest of its first lease); asking for a shard by number (?k=K, a page
// that kept its shard) leases nothing; so that one address cannot take every shard from the others
async function demoLeases() {
  const server = await start('demo', ['--demo-leases-per-address', '2']); // the task has 3 demo shards
  const shardOf = async (from, query = '') => {
    const r = await get(server.port, `/demo/shard${query}`, { from, limit: Infinity });
    return r.status === 200 ? JSON.parse(r.body).shard : r;
  };
  const byNumber = [await shardOf('127.0.0.5', '?k=0'), await shardOf('127.0.0.5', '?k=1'), await shardOf('127.0.0.5', '?k=2')];
  check(byNumber.join() === '0,1,2', `shards asked for by number: ${byNumber}`);
  const first = [await shardOf('127.0.0.2'), await shardOf('127.0.0.2')];
  check(first.join() === '0,1', `127.0.0.2 leases shards 0 and 1 (none was leased by number): ${first}`);
  const third = await shardOf('127.0.0.2');
  check(third.status === 429 && Number(third.headers['retry-after']) > 590 && Number(third.headers['retry-after']) <= 600 &&
    third.body.startsWith('your address holds 2 demo shards already'),
  `a third lease for 127.0.0.2 is refused: ${third.status} ${third.headers && third.headers['retry-after']} ${third.body}`);
  check(await shardOf('127.0.0.3') === 2, 'another address leases the last free shard');
  const none = await shardOf('127.0.0.4');
  check(none.status === 409, `then none is free: ${none.status}`);
  check(await shardOf('127.0.0.2', '?k=0') === 0, 'a shard asked for by number is still served');
  check((await edgeRefused(server.port)).demo_leases === 1, '/metrics counts the lease refused');
  server.stop();
}

// --- a WebSocket that says no hello within --hello-timeout is closed with 1008 and a reason, also one that answers
// every PING (the keepalive alone would keep it) and one whose hello was refused; one that was welcomed stays
async function helloDeadline() {
  const server = await start('hello', ['--hello-timeout', '1', '--ping-after', '0.3', '--hangup-after', '30',
    '--join-key', 'sesame']);
  const silent = rawConnect(server.port, { from: '127.0.0.2' }), refused = rawConnect(server.port, { from: '127.0.0.3' });
  const welcomed = rawConnect(server.port, { from: '127.0.0.4' });
  for (const c of [silent, refused, welcomed]) await c.until((x) => x.status, 10);
  refused.sendText(JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', join_key: 'wrong' }));
  welcomed.sendText(JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', join_key: 'sesame' }));
  for (const c of [silent, refused]) {
    await c.until((x) => x.closeCode, 10);
    check(c.closeCode === 1008 && c.closeReason === 'no hello within 1 s', `no hello in 1 s: closed ${c.closeCode} ` +
      `"${c.closeReason}" after ${c.pings} PINGs answered, ${c.messages.length} messages`);
  }
  await welcomed.until((x) => x.closeCode || x.ended, 2);
  check(!welcomed.closeCode && !welcomed.ended && welcomed.messages[0].type === 'welcome' && welcomed.pings >= 1,
    `a welcomed client stays past the deadline: ${show(welcomed)}`);
  [silent, refused, welcomed].forEach((c) => c.close());
  check((await edgeRefused(server.port, '127.0.0.1', { authorization: 'Bearer sesame' })).no_hello === 2,
    '/metrics counts the 2 closed without hello');
  server.stop();
}

// --- files being sent at once (a descriptor each, as a connection): past --max-file-sends a file is answered 503
// with Retry-After; once the one on its way ends (its reader gone), files go out again
async function fileSends() {
  const web = `${work}/web`;
  mkdirSync(web, { recursive: true });
  writeFileSync(`${web}/index.html`, '<!doctype html><title>x</title>');
  writeFileSync(`${web}/big.bin`, Buffer.alloc(64 << 20)); // more than any socket buffers hold
  const server = await start('files', ['--max-file-sends', '1', '--web', web]);
  // a reader that takes the first bytes and then stops reading: the file stays on its way
  const slow = net.connect({ port: server.port, host: '127.0.0.1' }, () => slow.write('GET /big.bin HTTP/1.1\r\n\r\n'));
  slow.on('error', () => {});
  await new Promise((resolve) => slow.once('data', () => { slow.pause(); resolve(); }));
  const busy = await get(server.port, '/index.html', { from: '127.0.0.2' });
  const sending = (await get(server.port, '/metrics')).body.match(/^sdfed_file_sends (\d+)$/m);
  check(busy.status === 503 && busy.headers['retry-after'] === '5' && sending && sending[1] === '1',
    `a second file while one is on its way: ${busy.status} ${busy.body.trim()}, ${sending && sending[0]}`);
  slow.destroy();
  await new Promise((resolve) => setTimeout(resolve, 300));
  check((await get(server.port, '/index.html', { from: '127.0.0.2' })).status === 200, 'once it ended, files go out again');
  check((await edgeRefused(server.port)).file_sends === 1, '/metrics counts the file refused');
  server.stop();
  rmSync(web, { recursive: true, force: true });
}

for (const part of [frameSizes, utf8, httpRules, headerSizes, origins, connections, joinKeys, registrations, demoLeases,
  helloDeadline, fileSends]) {
  try {
    await part();
  } catch (e) {
    check(false, `${part.name}: ${e.stack}`);
  }
}
console.log(`edge: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
