// Image files a test hands the page, written from RGBA pixels: a PNG (a
// volunteer's image).
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
