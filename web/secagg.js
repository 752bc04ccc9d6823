// A volunteer's side of a secure round (docs/secure-aggregation.md), stage
// by stage as native/secagg_client.c takes it: the cryptography with
// WebCrypto (crypto.subtle: X25519, HKDF-SHA256, AES-256-GCM, AES-256-CTR)
// and the randomness from crypto.getRandomValues, by the byte layouts of
// shared/fed/secagg_layout.h; the checks, the Shamir sharing, the input and
// the ring in the core's wasm between them (sdfed-api.js's secagg* calls,
// wasm-client/api.h). It runs in the worker, beside the wasm, so that no
// secret crosses to the page; the page loads it too, for
// secureContextProblem() alone.
//   const secure = sdfedSecagg.client(api, { n, round, client });
//   const advertise = await secure.advertise();
//   const shares = await secure.share(shareRequest);
//   const masked = await secure.mask(maskedRequest, { x, g, samples });
//   const unmask = await secure.unmask(unmaskRequest); // a refusal throws, e.code 'secagg_both_sets', ...
// Each step resolves to {message: the bytes to send, ms: its time here} or
// throws, and after a refusal the client sends nothing more in the round.
'use strict';

const sdfedSecagg = (() => {
  // Browsers give crypto.subtle only to secure contexts: HTTPS, or
  // http://localhost and 127.0.0.0/8 (docs/secure-aggregation.md).
  const SECURE_CONTEXT_NEEDED = 'secure rounds need HTTPS or localhost; this page cannot join';
  const secureContextProblem = () =>
    (self.isSecureContext && self.crypto && self.crypto.subtle ? null : SECURE_CONTEXT_NEEDED);
  const subtle = () => {
    const problem = secureContextProblem();
    if (problem) throw new Error(problem);
    return self.crypto.subtle;
  };

  // n bytes of crypto.getRandomValues (at most 65,536 a call)
  function randomBytes(n) {
    const out = new Uint8Array(n);
    for (let at = 0; at < n; at += 65536) crypto.getRandomValues(out.subarray(at, Math.min(n, at + 65536)));
    return out;
  }
  const concat = (...parts) => {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((at, p) => { out.set(p, at); return at + p.length; }, 0);
    return out;
  };

  // ---- the primitives ------------------------------------------------------
  const X25519 = { name: 'X25519' };
  // the HKDF info's purpose of a mask key (shared/fed/secagg_layout.h)
  const PURPOSE_MASK_KEY = 5;
  // RFC 8410: an X25519 private key as PKCS#8 is these 16 bytes, then its 32
  const PKCS8_PREFIX = Uint8Array.of(0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x04,
    0x22, 0x04, 0x20);
  // a new key pair whose private half never leaves WebCrypto
  const generate = () => subtle().generateKey(X25519, false, ['deriveBits']);
  const publicBytes = async (key) => new Uint8Array(await subtle().exportKey('raw', key));
  // a private key from its 32 bytes (a mask key; the test vector's fixed keys)
  const importPrivate = (bytes, extractable = false) =>
    subtle().importKey('pkcs8', concat(PKCS8_PREFIX, bytes), X25519, extractable, ['deriveBits']);
  // the public key of an extractable private key
  async function publicOf(privateKey) {
    const { x } = await subtle().exportKey('jwk', privateKey);
    return Uint8Array.from(atob(x.replaceAll('-', '+').replaceAll('_', '/')), (c) => c.charCodeAt(0));
  }
  // X25519(mine, theirs); WebCrypto refuses a small-order point as the native side does
  async function agree(mine, theirs) {
    const peer = await subtle().importKey('raw', theirs, X25519, true, []);
    return new Uint8Array(await subtle().deriveBits({ name: 'X25519', public: peer }, mine, 256));
  }
  // HKDF-SHA256(ikm, empty salt, info), 32 bytes
  async function hkdf(ikm, info) {
    const key = await subtle().importKey('raw', ikm, 'HKDF', false, ['deriveBits']);
    return new Uint8Array(await subtle().deriveBits({ name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info },
      key, 256));
  }
  // the share, pair or self key: the HKDF of an agreement (or of the seed) under its info
  async function derive(mine, theirs, info) {
    const shared = await agree(mine, theirs);
    try { return await hkdf(shared, info); } finally { shared.fill(0); }
  }
  // the X25519 mask key of a 16-byte mask seed: HKDF under the mask key's info (purpose 5), imported as
  // PKCS#8 -> {privateKey (not extractable), publicKey (32 bytes)}
  async function maskKeyOf(maskSeed, info) {
    const bytes = await hkdf(maskSeed, info);
    try {
      const publicKey = await publicOf(await importPrivate(bytes, true));
      return { privateKey: await importPrivate(bytes), publicKey };
    } finally { bytes.fill(0); }
  }
  const gcm = (key) => subtle().importKey('raw', key, 'AES-GCM', false, ['encrypt', 'decrypt']);
  // each share key seals one pair, so its nonce is 12 zero bytes, never sent (secagg_layout.h says why)
  const ZERO_NONCE = new Uint8Array(12);
  // AES-256-GCM(pair) || tag (16), the info as additional data
  async function seal(key, info, pair) {
    return new Uint8Array(await subtle().encrypt({ name: 'AES-GCM', iv: ZERO_NONCE, additionalData: info,
      tagLength: 128 }, await gcm(key), pair));
  }
  // the pair (48) of a sealed pair (64); throws when it does not authenticate
  async function open(key, info, sealed) {
    return new Uint8Array(await subtle().decrypt({ name: 'AES-GCM', iv: ZERO_NONCE, additionalData: info,
      tagLength: 128 }, await gcm(key), sealed));
  }
  // the mask stream: AES-256-CTR's keystream from counter 0 (a 128-bit big-endian counter)
  async function stream(key, bytes) {
    const ctr = await subtle().importKey('raw', key, 'AES-CTR', false, ['encrypt']);
    return new Uint8Array(await subtle().encrypt({ name: 'AES-CTR', counter: new Uint8Array(16), length: 128 }, ctr,
      new Uint8Array(bytes)));
  }

  // ---- a client of one round -----------------------------------------------
  // api: sdfed-api.js over the wasm with the federation's task set; n: the
  // round's sampled clients; client: the number its rounding is drawn for
  // (fed/secagg_task.h's sdfed_secagg_rounding: the task seed, the round,
  // the client).
  function client(api, { n, round, client: who }) {
    const plan = api.secaggPlan(n);
    let maskKey = null, shareKey = null, seed = null;
    // X25519(shareKey, a neighbour's share public key), by that key's bytes:
    // made sealing its pair to the neighbour, used again opening the pair
    // the neighbour relays (one agreement each, not two)
    const agreed = new Map();
    const forgetAgreements = () => { agreed.forEach((shared) => shared.fill(0)); agreed.clear(); };
    const shareKeyOf = async (theirs, info) => {
      const id = theirs.join(',');
      if (!agreed.has(id)) agreed.set(id, await agree(shareKey, theirs));
      return hkdf(agreed.get(id), info);
    };
    // a failed step leaves the round (the wasm refused already, or the
    // cryptography failed here); a step asked out of order changes nothing
    const leaving = (e) => {
      if (e.code !== 'secagg_wrong_stage') {
        api.secaggAbandon();
        if (seed) seed.fill(0);
        forgetAgreements();
        maskKey = shareKey = seed = null;
      }
      throw e;
    };
    const timed = async (work) => {
      const started = performance.now();
      try {
        const message = await work();
        return { message, ms: performance.now() - started };
      } catch (e) { return leaving(e); }
    };
    const needKeys = () => {
      if (!maskKey) throw Object.assign(new Error('secure round: no keys yet'), { code: 'secagg_wrong_stage' });
    };
    return {
      plan,
      // a new mask seed (Shamir-shared) and the mask key derived from it, a
      // new share key pair (its private half never leaves WebCrypto) and the
      // self-mask seed: 16 random bytes each seed
      advertise: () => timed(async () => {
        subtle();
        const maskSeed = randomBytes(16);
        const mask = await maskKeyOf(maskSeed, api.secaggInfo(PURPOSE_MASK_KEY, new Uint8Array(32), round, 0, 0));
        const share = await generate();
        const keys = { maskSeed, maskPublic: mask.publicKey, sharePublic: await publicBytes(share.publicKey),
                       seed: randomBytes(16) };
        try {
          const message = api.secaggStart(n, round, keys);
          maskKey = mask.privateKey;
          shareKey = share.privateKey;
          seed = keys.seed.slice();
          return message;
        } finally { keys.maskSeed.fill(0); keys.seed.fill(0); }
      }),
      // the share_request: each neighbour's pair sealed under the share key
      // of (this client, that neighbour)
      share: (request) => timed(async () => {
        needKeys();
        const jobs = api.secaggShare(new Uint8Array(request), randomBytes(plan.shareRandomBytes));
        try {
          const sealed = await Promise.all(jobs.map(async (j) => {
            const key = await shareKeyOf(j.sharePublic, j.info);
            try { return await seal(key, j.info, j.pair); } finally { key.fill(0); }
          }));
          return api.secaggShares(sealed);
        } finally { jobs.forEach((j) => j.pair.fill(0)); }
      }),
      // the masked_request: each pair relayed to it opened under the share
      // key of (that neighbour, this client); its input (x, g: Float32Array,
      // samples: its count) with its own noise when the task asks; its self
      // mask and a pair mask with each neighbour whose pair it opened
      mask: (request, { x, g, samples }) => timed(async () => {
        needKeys();
        const jobs = api.secaggRelayed(new Uint8Array(request));
        const pairs = await Promise.all(jobs.map(async (j) => {
          const key = await shareKeyOf(j.sharePublic, j.info);
          try {
            return await open(key, j.info, j.sealed);
          } catch (e) {
            throw new Error(`secure round: client ${j.sender}'s pair does not authenticate (${e.name})`);
          } finally { key.fill(0); }
        }));
        forgetAgreements(); // every pair it will open is open
        jobs.forEach((j, i) => { api.secaggKeepPair(j.slot, pairs[i]); pairs[i].fill(0); });
        const { streamBytes, masks } = api.secaggInput(x, g, samples, who,
          plan.noiseBytes ? randomBytes(plan.noiseBytes) : new Uint8Array(0));
        const own = (m) => m.maskPublic.every((b) => b === 0);
        const streams = await Promise.all(masks.map(async (m) => {
          const key = own(m) ? await hkdf(seed, m.info) : await derive(maskKey, m.maskPublic, m.info);
          try { return await stream(key, streamBytes); } finally { key.fill(0); }
        }));
        masks.forEach((m, i) => api.secaggAddMask(m.slot, streams[i]));
        return api.secaggMasked();
      }),
      // the unmask_request checked as an honest client does, answered with
      // the shares it names; a request naming a neighbour both alive and
      // dropped, or otherwise inconsistent, is refused with its code
      unmask: (request) => timed(async () => {
        const message = api.secaggUnmask(new Uint8Array(request));
        if (seed) seed.fill(0);
        forgetAgreements();
        maskKey = shareKey = seed = null;
        return message;
      }),
      // its input before the masks, (P + 1) u64 little-endian (parity checks)
      inputValues: () => api.secaggInputValues(),
    };
  }

  return { SECURE_CONTEXT_NEEDED, secureContextProblem, client, randomBytes,
           primitives: { generate, publicBytes, importPrivate, publicOf, maskKeyOf, agree, hkdf, derive, seal, open,
                         stream } };
})();

self.sdfedSecagg = sdfedSecagg;
