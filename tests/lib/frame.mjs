// sdfed.v1 binary frames for the JavaScript test and benchmark drivers, made
// and read (docs/protocol.md): "SDFT", version 1, kind, dtype f32, dims,
// round, samples, shape, the values, and a CRC-32 of everything before it;
// and the secure-aggregation frames ("SDFS") around a secagg message.
export const GLOBAL = 1, UPDATE = 2;

export function crc32(bytes) {
  let crc = ~0;
  for (const b of bytes) {
    crc ^= b;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc >>> 0;
}

// A frame as an ArrayBuffer; badCrc flips the checksum (for refusal tests).
export function frame(kind, round, samples, shape, values, { badCrc = false } = {}) {
  const n = values.length, size = 16 + 4 * shape.length + 4 * n + 4;
  const buf = new ArrayBuffer(size), view = new DataView(buf), bytes = new Uint8Array(buf);
  bytes.set([0x53, 0x44, 0x46, 0x54, 1, kind, 0, shape.length]);
  view.setUint32(8, round, true);
  view.setUint32(12, samples, true);
  shape.forEach((s, i) => view.setUint32(16 + 4 * i, s, true));
  values.forEach((v, i) => view.setFloat32(16 + 4 * shape.length + 4 * i, v, true));
  view.setUint32(size - 4, (crc32(bytes.subarray(0, size - 4)) ^ (badCrc ? 1 : 0)) >>> 0, true);
  return buf;
}

// A frame's fields from an ArrayBuffer: { kind, round, samples, shape, values
// (Float32Array), bytes (the values' raw bytes) }; throws when the magic,
// version, dtype, size or CRC-32 is wrong.
export function decode(buf) {
  const view = new DataView(buf), bytes = new Uint8Array(buf), dims = bytes[7];
  if (buf.byteLength < 20 || String.fromCharCode(...bytes.subarray(0, 4)) !== 'SDFT' || bytes[4] !== 1 || bytes[6] !== 0)
    throw new Error('not an SDFT version 1 f32 frame');
  const shape = Array.from({ length: dims }, (_, i) => view.getUint32(16 + 4 * i, true));
  const n = shape.reduce((a, b) => a * b, 1), start = 16 + 4 * dims;
  if (buf.byteLength !== start + 4 * n + 4) throw new Error(`a frame of ${buf.byteLength} bytes, its header says ${start + 4 * n + 4}`);
  if (view.getUint32(buf.byteLength - 4, true) !== crc32(bytes.subarray(0, buf.byteLength - 4))) throw new Error('CRC-32 mismatch');
  const values = Float32Array.from({ length: n }, (_, i) => view.getFloat32(start + 4 * i, true));
  return { kind: bytes[5], round: view.getUint32(8, true), samples: view.getUint32(12, true), shape, values,
    bytes: bytes.slice(start, start + 4 * n) };
}

// Secure aggregation's frames: "SDFS", version 1, one secagg message (its
// kind, round as a big-endian i64, body: shared/fed/secagg_message.h), and
// a CRC-32 of everything before it.
export const SECAGG_KINDS = ['advertise', 'share_request', 'shares', 'masked_request', 'masked', 'unmask_request', 'unmask'];

// A secure frame as an ArrayBuffer around the message's kind (its name),
// round and body (bytes); badCrc flips the checksum.
export function secureFrame(kind, round, body, { badCrc = false } = {}) {
  const size = 5 + 9 + body.length + 4;
  const buf = new ArrayBuffer(size), view = new DataView(buf), bytes = new Uint8Array(buf);
  bytes.set([0x53, 0x44, 0x46, 0x53, 1, SECAGG_KINDS.indexOf(kind) + 1]);
  view.setBigInt64(6, BigInt(round));
  bytes.set(body, 14);
  view.setUint32(size - 4, (crc32(bytes.subarray(0, size - 4)) ^ (badCrc ? 1 : 0)) >>> 0, true);
  return buf;
}

// A secure frame's message from an ArrayBuffer: { kind (its name), round,
// body (bytes) }; throws when the magic, version, size or CRC-32 is wrong.
export function decodeSecure(buf) {
  const view = new DataView(buf), bytes = new Uint8Array(buf);
  if (buf.byteLength < 18 || String.fromCharCode(...bytes.subarray(0, 4)) !== 'SDFS' || bytes[4] !== 1)
    throw new Error('not an SDFS version 1 frame');
  if (view.getUint32(buf.byteLength - 4, true) !== crc32(bytes.subarray(0, buf.byteLength - 4))) throw new Error('CRC-32 mismatch');
  return { kind: SECAGG_KINDS[bytes[5] - 1], round: Number(view.getBigInt64(6)), body: bytes.slice(14, buf.byteLength - 4) };
}
