// tests/vectors/secagg-v2.txt recomputed in a Web Worker of the page's
// origin with the scripts the page's worker runs (the wasm, sdfed-api.js,
// secagg.js): the layouts from the core's wasm (the session id's input,
// hashed by WebCrypto; the infos, the ring), the keys (a mask key from its
// seed imported as PKCS#8, as the page's own), the sealed pair and the
// masks from secagg.js's WebCrypto primitives (Chromium's BoringSSL). Given
// the file's text, posts back [[name, hex], ...] for every value it
// derives, or {error}.
'use strict';
importScripts('/wasm/sdfed-wasm.js', '/sdfed-api.js', '/secagg.js');

const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const unhex = (h) => Uint8Array.from(h.match(/../g), (x) => parseInt(x, 16));

async function vector(text) {
  const api = sdfedApi(await createSdfed({ locateFile: (file) => `/wasm/${file}` }));
  const { importPrivate, publicOf, maskKeyOf, derive, hkdf, seal, open, stream } = sdfedSecagg.primitives;
  const given = new Map(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.split(' ')));
  const out = [];
  const put = (name, bytes) => out.push([name, hex(bytes)]);
  const ROUND = 7;
  const c = [];
  const maskInfo = api.secaggInfo(5, new Uint8Array(32), ROUND, 0, 0);
  put('info.mask_key', maskInfo);
  for (const i of [0, 1, 2]) {
    const k = { seed: unhex(given.get(`client${i}.seed`)) };
    const maskSeed = unhex(given.get(`client${i}.mask_seed`));
    put(`client${i}.mask_private`, await hkdf(maskSeed, maskInfo));
    ({ privateKey: k.mask, publicKey: k.maskPublic } = await maskKeyOf(maskSeed, maskInfo));
    k.share = await importPrivate(unhex(given.get(`client${i}.share_private`)), true);
    k.sharePublic = await publicOf(k.share);
    put(`client${i}.mask_public`, k.maskPublic);
    put(`client${i}.share_public`, k.sharePublic);
    c.push(k);
  }
  const session = new Uint8Array(await crypto.subtle.digest('SHA-256',
    api.secaggSessionInput(ROUND, c.map((k) => k.maskPublic), c.map((k) => k.sharePublic))));
  put('session', session);

  // client 0's pair for client 1: the share key from either side, sealed (the nonce of zeros), opened
  const shareInfo = api.secaggInfo(2, session, ROUND, 0, 1);
  put('info.share.0.1', shareInfo);
  const sender = await derive(c[0].share, c[1].sharePublic, shareInfo);
  const recipient = await derive(c[1].share, c[0].sharePublic, shareInfo);
  put('key.share.0.1', recipient);
  put('key.share.0.1.sender', sender);
  const sealed = await seal(sender, shareInfo, unhex(given.get('pair.0.1')));
  put('sealed.0.1', sealed);
  put('pair.0.1', await open(recipient, shareInfo, sealed));
  const tampered = sealed.slice();
  tampered[40] ^= 1;
  put('tampered.0.1', await open(recipient, shareInfo, tampered).then(() => Uint8Array.of(1), () => Uint8Array.of(0)));

  // the pair mask of 1 and 2 from either side; 2's self mask
  const pairInfo = api.secaggInfo(3, session, ROUND, 1, 2);
  put('info.pair.1.2', pairInfo);
  const pairKey = await derive(c[1].mask, c[2].maskPublic, pairInfo);
  put('key.pair.1.2', pairKey);
  put('key.pair.1.2.other', await derive(c[2].mask, c[1].maskPublic, pairInfo));
  put('mask.pair.1.2', await stream(pairKey, 64));
  const selfInfo = api.secaggInfo(4, session, ROUND, 2, 2);
  put('info.self.2', selfInfo);
  const selfKey = await hkdf(c[2].seed, selfInfo);
  put('key.self.2', selfKey);
  put('mask.self.2', await stream(selfKey, 64));

  // client 1's masked input: 0, 1, -1, 2, -2, ... in Z_2^32 + its self mask + its pair mask with 2 (1 < 2: added)
  let v = BigUint64Array.from({ length: 16 }, (_, j) =>
    BigInt.asUintN(32, BigInt((j % 2 ? 1 : -1) * Math.floor((j + 1) / 2))));
  v = api.secaggRingAdd(32, v, await stream(await hkdf(c[1].seed, api.secaggInfo(4, session, ROUND, 1, 1)), 64), 1);
  v = api.secaggRingAdd(32, v, await stream(pairKey, 64), 1);
  const masked = new Uint8Array(64), view = new DataView(masked.buffer);
  v.forEach((x, j) => view.setUint32(4 * j, Number(x), true));
  put('masked.1', masked);
  return out;
}

self.onmessage = ({ data }) => vector(data).then((values) => self.postMessage({ values }),
  (e) => self.postMessage({ error: e && e.message ? e.message : String(e) }));
