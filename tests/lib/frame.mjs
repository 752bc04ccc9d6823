// sdfed.v1 binary frames for the JavaScript test and benchmark drivers
// (docs/protocol.md): "SDFT", version 1, kind, dtype f32, dims, round,
// samples, shape, the values, and a CRC-32 of everything before it.
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
