// WebSocket at the byte level, for tests that must see or withhold what a
// WebSocket library hides (PINGs, PONGs): an upgrade request, a client's
// masked frame, and a parser of a byte stream's frames after its upgrade.
import { randomBytes } from 'node:crypto';

export const TEXT = 0x1, CLOSE = 0x8, PING = 0x9, PONG = 0xa;

// The HTTP upgrade a client sends for the sdfed.v1 subprotocol.
export function upgradeRequest(port) {
  return `GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n` +
    'Sec-WebSocket-Protocol: sdfed.v1\r\n\r\n';
}

// One final frame as a client sends it (masked, RFC 6455 5.3); payloads under 64 KiB.
export function clientFrame(opcode, payload) {
  const data = Buffer.from(payload), mask = randomBytes(4);
  const head = data.length < 126 ? Buffer.from([0x80 | opcode, 0x80 | data.length])
    : Buffer.from([0x80 | opcode, 0x80 | 126, data.length >> 8, data.length & 0xff]);
  return Buffer.concat([head, mask, data.map((b, i) => b ^ mask[i & 3])]);
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
