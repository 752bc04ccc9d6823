// make bench's ONNX Runtime peer, the same code under Node (onnxruntime-node)
// and in Chromium (onnxruntime-web, loaded by the page from /ort/): runs an
// image encoder exported by clip_onnx.py on check images (their features,
// to compare with sdfed's), then times batch-1 runs of the first one the way
// sdfed's are timed (untimed images for WARM_UP_MS, then `images` images one
// at a time, the median rate of `repeats` runs), the session and its input
// made once, before the timer; and checks that figure with a minimal harness
// of its own session (session.run alone: untimed runs for WARM_UP_MS, then
// the median of 10). And
// the comparison of two feature sets.
//   ortImageFeatures(ort, model, {intraOpNumThreads, size, pixels, count, images, repeats, provider})
//     (intraOpNumThreads: onnxruntime-node's threads, unset in the browser, where the caller sets
//     ort.env.wasm.numThreads; provider: 'webgpu' for onnxruntime-web's WebGPU backend, the default the wasm one)
//     -> {features: [[...], ...], imagesPerS, minimalImagesPerS}
//   ortTextFeatures(ort, model, {intraOpNumThreads, ids (BigInt64Array n x L), n, L}) -> [[...], ...]
//   compareFeatures(a, b) -> {maxAbs, oneMinusCos} (the worst row of each)
//   median(v): the middle value of v (the upper one of an even count)

export const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

// the options ONNX Runtime documents for speed: every graph optimisation, and
// the threads as each package takes them (onnxruntime-node: intraOpNumThreads,
// the threads inside an operator, batch 1 being one chain of operators;
// onnxruntime-web reads no thread count from a session's options)
const sessionOptions = (intraOpNumThreads, provider) => ({ graphOptimizationLevel: 'all',
  ...(intraOpNumThreads ? { intraOpNumThreads } : {}), ...(provider ? { executionProviders: [provider] } : {}) });

// Untimed runs before a timer, for WARM_UP_MS and at least one: a wasm
// engine runs a module's functions first in code compiled in haste and
// moves the busy ones to its optimising compiler as they run (Chromium 156,
// the tiny model: sdfed's images at 534 a second in the first 100, some
// 2,200 from a second and a half on; one untimed image had left every run
// in between). sdfed's timers (sdfed_features.mjs, profile_browser.mjs)
// warm up as long.
export const WARM_UP_MS = 2000;
async function warmUp(run) {
  const started = performance.now();
  do await run(); while (performance.now() - started < WARM_UP_MS);
}

// images per second of session.run alone on feeds: warmed up, then the median of 10
async function minimalHarness(session, feeds) {
  await warmUp(() => session.run(feeds));
  const ms = [];
  for (let i = 0; i < 10; i++) {
    const started = performance.now();
    await session.run(feeds);
    ms.push(performance.now() - started);
  }
  return 1e3 / median(ms);
}

export async function ortImageFeatures(ort, model, { intraOpNumThreads, size, pixels, count, images, repeats,
  provider }) {
  const options = sessionOptions(intraOpNumThreads, provider);
  const session = await ort.InferenceSession.create(model, options);
  const per = 3 * size * size;
  const input = (i) => ({ pixels: new ort.Tensor('float32', pixels.slice(i * per, (i + 1) * per), [1, 3, size, size]) });
  const features = [];
  for (let i = 0; i < count; i++) features.push(Array.from((await session.run(input(i))).features.data));
  const timed = input(0);
  await warmUp(() => session.run(timed));
  const rates = [];
  for (let r = 0; r < repeats; r++) {
    const started = performance.now();
    for (let i = 0; i < images; i++) await session.run(timed);
    rates.push(images / ((performance.now() - started) / 1e3));
  }
  await session.release();
  const minimal = await ort.InferenceSession.create(model, options);
  const minimalImagesPerS = await minimalHarness(minimal, timed);
  await minimal.release();
  return { features, imagesPerS: median(rates), minimalImagesPerS };
}

export async function ortTextFeatures(ort, model, { intraOpNumThreads, ids, n, L }) {
  const session = await ort.InferenceSession.create(model, sessionOptions(intraOpNumThreads));
  const out = await session.run({ ids: new ort.Tensor('int64', ids, [n, L]) });
  await session.release();
  const E = out.features.dims[1];
  return Array.from({ length: n }, (_, i) => Array.from(out.features.data.slice(i * E, (i + 1) * E)));
}
export function compareFeatures(a, b) {
  if (a.length !== b.length || a.some((row, i) => row.length !== b[i].length))
    throw new Error(`feature sets of different shapes (${a.length} x ${a[0]?.length}, ${b.length} x ${b[0]?.length})`);
  let maxAbs = 0, oneMinusCos = 0;
  a.forEach((x, i) => {
    const y = b[i];
    let dot = 0, xx = 0, yy = 0;
    x.forEach((v, d) => {
      maxAbs = Math.max(maxAbs, Math.abs(v - y[d]));
      dot += v * y[d];
      xx += v * v;
      yy += y[d] * y[d];
    });
    oneMinusCos = Math.max(oneMinusCos, 1 - dot / Math.sqrt(xx * yy));
  });
  return { maxAbs, oneMinusCos };
}
