// The page's half of the secure aggregation test vector: every derived value
// of tests/vectors/secagg-v2.txt recomputed with WebCrypto (crypto.subtle:
// X25519, HKDF-SHA256, AES-256-GCM, AES-CTR, SHA-256) and the layout of
// shared/fed/secagg_layout.h written again here in JavaScript, as the page
// will; compared byte for byte with the file that OpenSSL's path checks too
// (tests/unit/test_secagg_vector.c). Prints "secagg_webcrypto: N passed, M failed".
//   node secagg_webcrypto.mjs tests/vectors/secagg-v2.txt
import { readFileSync } from 'node:fs';

const subtle = globalThis.crypto.subtle;
const hex = (b) => Buffer.from(b).toString('hex');
const unhex = (h) => new Uint8Array(Buffer.from(h, 'hex'));

const file = readFileSync(process.argv[2], 'utf8');
const values = new Map();
for (const line of file.split('\n')) {
  if (!line || line.startsWith('#')) continue;
  const [name, value] = line.split(' ');
  values.set(name, value);
}
const ROUND = 7n;
const LABEL = new TextEncoder().encode('sdfed/secagg/v2');
let passed = 0, failed = 0;
function check(name, bytes) {
  if (values.get(name) === hex(bytes)) passed++;
  else {
    failed++;
    console.error(`FAIL ${name}: WebCrypto ${hex(bytes)}, the file ${values.get(name)}`);
  }
}

function be32(v) { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, v); return b; }
function be64(v) { const b = new Uint8Array(8); new DataView(b.buffer).setBigUint64(0, BigInt.asUintN(64, v)); return b; }
function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}
const info = (purpose, session, a, b) => concat(LABEL, Uint8Array.of(purpose), session, be64(ROUND), be32(a), be32(b));

// a raw X25519 private key as PKCS#8 (RFC 8410: the fixed 16-byte prefix, then the 32 bytes)
const PKCS8_PREFIX = unhex('302e020100300506032b656e04220420');
async function privateKey(d) {
  return subtle.importKey('pkcs8', concat(PKCS8_PREFIX, d), { name: 'X25519' }, true, ['deriveBits']);
}
async function publicKey(x) { return subtle.importKey('raw', x, { name: 'X25519' }, true, []); }
async function publicOf(d) {
  const jwk = await subtle.exportKey('jwk', await privateKey(d));
  return new Uint8Array(Buffer.from(jwk.x, 'base64url'));
}
async function agree(d, theirs) {
  return new Uint8Array(await subtle.deriveBits({ name: 'X25519', public: await publicKey(theirs) }, await privateKey(d),
                                                256));
}
async function hkdf(ikm, infoBytes) {
  const key = await subtle.importKey('raw', ikm, 'HKDF', false, ['deriveBits']);
  return new Uint8Array(await subtle.deriveBits({ name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: infoBytes },
                                                key, 256));
}
async function maskStream(key, bytes) {
  const k = await subtle.importKey('raw', key, 'AES-CTR', false, ['encrypt']);
  return new Uint8Array(await subtle.encrypt({ name: 'AES-CTR', counter: new Uint8Array(16), length: 128 }, k,
                                             new Uint8Array(bytes)));
}

// a mask key: HKDF of its 16-byte mask seed under the info of purpose 5 (a session of zeros, a = b = 0)
const maskInfo = info(5, new Uint8Array(32), 0, 0);
check('info.mask_key', maskInfo);
const c = [];
for (const i of [0, 1, 2]) {
  c.push({
    maskSk: await hkdf(unhex(values.get(`client${i}.mask_seed`)), maskInfo),
    shareSk: unhex(values.get(`client${i}.share_private`)),
    seed: unhex(values.get(`client${i}.seed`)),
  });
  check(`client${i}.mask_private`, c[i].maskSk);
}
for (const [i, k] of c.entries()) {
  k.maskPk = await publicOf(k.maskSk);
  k.sharePk = await publicOf(k.shareSk);
  check(`client${i}.mask_public`, k.maskPk);
  check(`client${i}.share_public`, k.sharePk);
}
const session = new Uint8Array(await subtle.digest('SHA-256', concat(LABEL, Uint8Array.of(1), be64(ROUND), be32(3),
  ...c.flatMap((k, i) => [be32(i), k.maskPk, k.sharePk]))));
check('session', session);

const shareInfo = info(2, session, 0, 1);
check('info.share.0.1', shareInfo);
const shareKey = await hkdf(await agree(c[1].shareSk, c[0].sharePk), shareInfo); // the recipient's side
check('key.share.0.1', shareKey);
const nonce = new Uint8Array(12); // one message a share key: the nonce of zeros, not sent
const gcm = await subtle.importKey('raw', shareKey, 'AES-GCM', false, ['encrypt', 'decrypt']);
const sealed = new Uint8Array(await subtle.encrypt({ name: 'AES-GCM', iv: nonce, additionalData: shareInfo,
                                                    tagLength: 128 }, gcm, unhex(values.get('pair.0.1'))));
check('sealed.0.1', sealed);
const opened = new Uint8Array(await subtle.decrypt({ name: 'AES-GCM', iv: nonce, additionalData: shareInfo,
                                                    tagLength: 128 }, gcm, sealed));
check('pair.0.1', opened);

const pairInfo = info(3, session, 1, 2);
check('info.pair.1.2', pairInfo);
const pairKey = await hkdf(await agree(c[1].maskSk, c[2].maskPk), pairInfo);
check('key.pair.1.2', pairKey);
check('mask.pair.1.2', await maskStream(pairKey, 64));
const selfInfo = info(4, session, 2, 2);
check('info.self.2', selfInfo);
const selfKey = await hkdf(c[2].seed, selfInfo);
check('key.self.2', selfKey);
check('mask.self.2', await maskStream(selfKey, 64));

// client 1's masked input: 0, 1, -1, 2, -2, ... + its self mask + its pair mask with 2 (added: 1 < 2), in Z_2^32
const self1 = await maskStream(await hkdf(c[1].seed, info(4, session, 1, 1)), 64);
const pair12 = await maskStream(pairKey, 64);
const masked = new Uint8Array(64);
const view = new DataView(masked.buffer), s = new DataView(self1.buffer), p = new DataView(pair12.buffer);
for (let j = 0; j < 16; j++) {
  const q = (j % 2 ? 1 : -1) * Math.floor((j + 1) / 2);
  view.setUint32(4 * j, (q + s.getUint32(4 * j, true) + p.getUint32(4 * j, true)) >>> 0, true);
}
check('masked.1', masked);
console.log(`secagg_webcrypto: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
