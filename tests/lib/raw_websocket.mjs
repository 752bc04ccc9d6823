// WebSocket at the byte level, for tests that must see or withhold what a
// WebSocket library hides (PINGs, PONGs, close frames, invalid UTF-8, frame
// headers that lie, the client's own address): an upgrade request, a
// client's masked frame, a parser of a byte stream's frames after its
// upgrade, and a connection made of them.
import { randomBytes } from 'node:crypto';
import net from 'node:net';

export const CONTINUATION = 0x0, TEXT = 0x1, BINARY = 0x2, CLOSE = 0x8, PING = 0x9, PONG = 0xa;

// The HTTP upgrade a client sends for the sdfed.v1 subprotocol; extra: more
// header lines ("Origin: ...\r\n").
export function upgradeRequest(port, extra = '') {
  return `GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n` +
    `Sec-WebSocket-Protocol: sdfed.v1\r\n${extra}\r\n`;
}

// A client frame's header and mask (RFC 6455 5.2) announcing `length`
// payload bytes (a BigInt or a number; any 64-bit value, even one the
// payload that follows never reaches); payload bytes follow it masked with
// the mask returned.
export function clientFrameHeader(opcode, length, { final = true } = {}) {
  const mask = randomBytes(4), n = BigInt(length);
  let head;
  if (n < 126n) head = Buffer.from([(final ? 0x80 : 0) | opcode, 0x80 | Number(n)]);
  else if (n < 65536n) head = Buffer.from([(final ? 0x80 : 0) | opcode, 0x80 | 126, Number(n >> 8n), Number(n & 0xffn)]);
  else {
    head = Buffer.alloc(10);
    head[0] = (final ? 0x80 : 0) | opcode;
    head[1] = 0x80 | 127;
    head.writeBigUInt64BE(n, 2);
  }
  return { bytes: Buffer.concat([head, mask]), mask };
}

// Payload bytes masked with a frame's mask, the first of them at `offset` in its frame.
export const masked = (payload, mask, offset = 0) => Buffer.from(payload).map((b, i) => b ^ mask[(offset + i) & 3]);

// One whole frame as a client sends it (masked, RFC 6455 5.3).
export function clientFrame(opcode, payload, options) {
  const data = Buffer.from(payload), { bytes, mask } = clientFrameHeader(opcode, data.length, options);
  return Buffer.concat([bytes, masked(data, mask)]);
}

// A 'data' listener for a byte stream: calls onHeaders(bytes) with the HTTP
// response or request that upgrades it, then onFrame(opcode, payload, bytes)
// for each whole frame (payload unmasked, bytes as they came).
export function frames(onHeaders, onFrame) {
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

// A raw sdfed.v1 connection to 127.0.0.1:port from the local address `from`
// (127.0.0.x: another client as the server sees it; Linux routes all of
// 127/8 to lo), upgraded with extra header lines:
//   status       the upgrade's status line ('' until it came)
//   raw          every byte received, as text (a refusal's body is in it)
//   messages     the text messages received, parsed (a text that is not
//                JSON as {raw: text})
//   notUtf8      how many of them were not valid UTF-8 (RFC 6455 8.1)
//   closeCode, closeReason  of the server's close frame (0 until one came)
//   ended        the socket closed
//   send(bytes), sendText(text), sendBinary(bytes), close()
//   until(what, seconds, cond): waits until cond(c) holds (false after SECONDS)
export function rawConnect(port, { from = '127.0.0.1', extra = '' } = {}) {
  const c = { status: '', raw: '', messages: [], notUtf8: 0, closeCode: 0, closeReason: '', ended: false, pings: 0 };
  const strict = new TextDecoder('utf-8', { fatal: true });
  let wake = () => {};
  const changed = () => wake();
  c.socket = net.connect({ port, host: '127.0.0.1', localAddress: from }, () => c.socket.write(upgradeRequest(port, extra)));
  c.socket.on('data', (d) => { c.raw += d.toString('latin1'); });
  c.socket.on('data', frames((headers) => {
    c.status = headers.toString().split('\r\n')[0];
    c.headers = headers.toString();
    changed();
  }, (opcode, payload) => {
    if (opcode === TEXT) {
      try { strict.decode(payload); } catch { c.notUtf8++; }
      try { c.messages.push(JSON.parse(payload.toString())); } catch { c.messages.push({ raw: payload.toString() }); }
    }
    if (opcode === PING) {
      c.pings++;
      c.socket.write(clientFrame(PONG, payload));
    }
    if (opcode === CLOSE) {
      c.closeCode = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
      c.closeReason = payload.subarray(2).toString();
    }
    changed();
  }));
  c.socket.on('close', () => { c.ended = true; changed(); });
  c.socket.on('error', () => {});
  c.send = (bytes) => {
    if (!c.ended) c.socket.write(bytes);
  };
  c.sendText = (text) => c.send(clientFrame(TEXT, Buffer.from(text)));
  c.sendBinary = (bytes) => c.send(clientFrame(BINARY, bytes));
  c.close = () => c.socket.destroy();
  c.until = async (cond, seconds) => {
    const end = Date.now() + seconds * 1000;
    while (!cond(c)) {
      const left = end - Date.now();
      if (left <= 0) return false;
      await new Promise((r) => {
        const timer = setTimeout(r, Math.min(left, 200));
        wake = () => { clearTimeout(timer); r(); };
      });
    }
    return true;
  };
  return c;
}
