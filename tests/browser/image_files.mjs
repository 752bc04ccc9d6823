// Image files a test hands the page, written from RGBA pixels: a PNG (a
// volunteer's image) and a BMP.
import { crc32, deflateSync } from 'node:zlib';

// An 8-bit RGBA PNG of RGBA pixels (a volunteer's image file).
export function png(rgba, w, h) {
  const chunk = (type, data) => {
    const head = Buffer.alloc(8), tail = Buffer.alloc(4);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'latin1');
    tail.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
    return Buffer.concat([head, data, tail]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(w, 0);
  header.writeUInt32BE(h, 4);
  header[8] = 8; // bits per channel
  header[9] = 6; // RGBA
  const rows = Buffer.alloc(h * (1 + 4 * w)); // each row: filter 0, then its pixels
  for (let y = 0; y < h; y++) rows.set(rgba.subarray(y * 4 * w, (y + 1) * 4 * w), y * (1 + 4 * w) + 1);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows)), chunk('IEND', Buffer.alloc(0))]);
}

// A 24-bit BMP of RGBA pixels (what "try it" gets as a file).
export function bmp(rgba, w, h) {
  const row = Math.ceil((3 * w) / 4) * 4, size = 54 + row * h, b = Buffer.alloc(size);
  b.write('BM', 0);
  b.writeUInt32LE(size, 2);
  b.writeUInt32LE(54, 10);
  b.writeUInt32LE(40, 14);
  b.writeInt32LE(w, 18);
  b.writeInt32LE(h, 22);
  b.writeUInt16LE(1, 26);
  b.writeUInt16LE(24, 28);
  b.writeUInt32LE(row * h, 34);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) {
      const s = 4 * ((h - 1 - y) * w + x), d = 54 + y * row + 3 * x;
      b[d] = rgba[s + 2], b[d + 1] = rgba[s + 1], b[d + 2] = rgba[s];
    }
  return b;
}
