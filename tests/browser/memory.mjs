// The page's choice of build by the device's memory (web/memory.js) under
// Node: each model of the README's table at its own measured peaks, the
// threaded build where half of navigator.deviceMemory holds its peak, the
// single-threaded one where only that one's fits, the model refused (before
// its download) where neither does, a model between the table's sizes
// between its neighbours' peaks, the image tower packed once where the
// build's peak and the download again fit, and a browser that does not say
// its memory keeping the threaded build, nothing packed. Prints "memory: N passed, M failed".
//   node memory.mjs
import { MEASURED, TAB_SHARE, fitMemory, peakMiB } from '../../web/memory.js';

let passed = 0, failed = 0;
const check = (ok, what) => { if (ok) passed++; else { failed++; console.log(`FAIL: ${what}`); } };

for (const m of MEASURED) {
  const peak = peakMiB(m.bytes);
  check(peak.single === m.single && peak.threaded === m.threaded, `${m.model}: the measured peaks ${JSON.stringify(peak)}`);
}
// navigator.deviceMemory's values (GiB), each against every model of the table
for (const gib of [0.25, 0.5, 1, 2, 4, 8]) for (const m of MEASURED) {
  const fit = fitMemory(m.bytes, gib), budget = gib * 1024 * TAB_SHARE;
  const want = m.threaded <= budget ? 'threads' : m.single <= budget ? 'single' : 'refused';
  const got = fit.refused ? 'refused' : fit.threads ? 'threads' : 'single';
  check(got === want && !fit.threads === (want !== 'threads'), `${m.model} on ${gib} GiB: ${got} (${fit.said})`);
  if (got === 'refused') check(/not downloaded/.test(fit.said) && fit.said.includes(`${Math.ceil(m.single)} MiB`),
    `the refusal gives the reason: ${fit.said}`);
  if (got === 'single') check(/single-threaded/.test(fit.said), `the single-threaded build said: ${fit.said}`);
  // packed once where the chosen build's peak and the download again fit
  const peak = got === 'threads' ? m.threaded : m.single;
  check(fit.pack === (got !== 'refused' && peak + m.bytes / 2 ** 20 <= budget) &&
    /packed once/.test(fit.said) === fit.pack, `${m.model} on ${gib} GiB: matrices packed once ${fit.pack} (${fit.said})`);
}
check(fitMemory(162e6, 8).pack && !fitMemory(162e6, 1).pack && fitMemory(162e6, 1).threads,
  'ViT-B/16 Q8_0: packed on 8 GiB; on 1 GiB the threaded build (489 MiB of 512) but nothing packed');
check(fitMemory(163e6, 1).threads === false && fitMemory(163e6, 1).refused === false,
  'ViT-B/32 Q8_0 on 1 GiB: single-threaded (367 MiB fits 512, 524 does not)');
check(fitMemory(607e6, 2).refused && !fitMemory(607e6, 4).refused, 'ViT-B/32 F32: refused on 2 GiB, runs on 4');
const mid = peakMiB(381e6);
check(mid.single > 367 && mid.single < 1315 && mid.threaded > 524 && mid.threaded < 1358,
  `a model between the table's sizes between its neighbours' peaks: ${JSON.stringify(mid)}`);
check(peakMiB(1214e6).single === 2 * 1370 && peakMiB(1e5).single === 163, 'beyond the table: in proportion; below: the smallest');
const unknown = fitMemory(600e6, undefined);
check(unknown.threads && !unknown.refused && !unknown.pack && /does not say/.test(unknown.said),
  `memory not said: ${unknown.said}`);
console.log(`memory: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
