// make bench's one timer of sdfed's image features in Chromium (peers_browser.mjs
// next to onnxruntime-web, browser.mjs for a volunteer's costs): a function
// for page.evaluate in a page of an aggregator's origin. It starts the
// page's worker (web/compute.js, web/worker.js), loads the model into it
// (init: the single-threaded or the threaded build; int8 false keeps a Q8_0
// image tower on f32 activations; relaxedSimd and dot as web/worker.js's: unset the
// page's choice, relaxedSimd true or false relaxed SIMD's or SIMD128's integer kernels, dot 'relaxed' or
// 'simd128' that integer dot with relaxed SIMD's multiply-add), encodes the `count` check images of
// rgbUrl (RGB bytes at the model's input size, handed over as RGBA the way
// the page does) and returns their features, then times the worker's encode
// op (which includes sdfed's preprocessing) on the first of them, or on a
// fixed pattern without rgbUrl: untimed images for warmUpMs (callers pass
// ort_features.mjs's WARM_UP_MS: V8 meanwhile moves the module's busy
// functions to its optimising compiler), then `images` images one at a
// time, the median rate of `repeats` runs. With keep the worker
// stays up as globalThis.sdfedCompute (browser.mjs trains on it next).
// gpu: image features on WebGPU where the worker takes it (web/gpu.js;
// featuresOn says where they ran), else on the CPU alone. pack: the image
// tower's matrices packed once (true), or not (false), or (unset) where
// the page would pack them on this device (web/memory.js's pack;
// packedBytes: the bytes that took).
//   await page.evaluate(sdfedImageFeatures, {modelUrl, rgbUrl, count, single, int8, relaxedSimd, dot, images,
//                                            repeats, warmUpMs, keep, gpu, pack})
//     -> {features: [[...], ...], imagesPerS, threaded, kernels, dot, dotForm, madd, imageSize, embedDim,
//         featuresOn, packedBytes} (dot, dotForm, madd: the worker's init's, the products its kernels run)
export async function sdfedImageFeatures({ modelUrl, rgbUrl = null, count = 0, single, int8 = true, relaxedSimd,
  dot, images, repeats, warmUpMs, keep = false, gpu = false, pack }) {
  const compute = (await import('/compute.js')).startCompute();
  const call = (op, args, transfer) => compute.call(op, args, null, transfer);
  const model = await (await fetch(modelUrl)).arrayBuffer();
  const { fitMemory } = await import('/memory.js');
  const info = await call('init', { model, singleThreaded: single, int8Images: int8, relaxedSimd, dot,
    gpu: gpu ? 'agrees' : 'off', packWeights: pack ?? fitMemory(model.byteLength, navigator.deviceMemory).pack },
    [model]);
  const S = info.imageSize, D = info.embedDim;
  const rgb = rgbUrl ? new Uint8Array(await (await fetch(rgbUrl)).arrayBuffer()) : null;
  const picture = (i) => {
    const rgba = new Uint8ClampedArray(S * S * 4);
    for (let p = 0; p < S * S; p++) {
      for (let c = 0; c < 3; c++) rgba[p * 4 + c] = rgb ? rgb[(i * S * S + p) * 3 + c] : (p * 31 + c * 7) & 255;
      rgba[p * 4 + 3] = 255;
    }
    return { rgba, width: S, height: S };
  };
  const check = Array.from({ length: count }, (_, i) => picture(i));
  const { features } = count ? await call('encode', { images: check }) : { features: new Float32Array(0) };
  const timed = count ? check[0] : picture(0);
  const warming = performance.now();
  do await call('encode', { images: [timed] }); while (performance.now() - warming < warmUpMs);
  const rates = [];
  for (let r = 0; r < repeats; r++) {
    const { seconds } = await call('encode', { images: Array.from({ length: images }, () => timed) });
    rates.push(images / seconds);
  }
  if (keep) globalThis.sdfedCompute = compute;
  else compute.stop();
  rates.sort((a, b) => a - b);
  return { features: Array.from({ length: count }, (_, i) => Array.from(features.slice(i * D, (i + 1) * D))),
    imagesPerS: rates[Math.floor(repeats / 2)], threaded: info.threaded, kernels: info.kernels, dot: info.dot,
    dotForm: info.dotForm, madd: info.madd, imageSize: S, embedDim: D, featuresOn: info.featuresOn,
    packedBytes: info.packedBytes };
}
