// The wasm-vs-native parity check's inputs and its wasm half (see
// step_native.c): 32 Fashion-MNIST test images as RGBA (half of them partly
// transparent, over the task's background), their labels, the default task
// (with SDFed, or FedOTP, which reads patch features) and model. Used by the browser test (the wasm half runs in
// the page's worker) and, under Node, by `node parity.mjs` as a quick check:
//   node parity.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL.gguf WORK_DIR
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { gunzipSync } from 'node:zlib';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decode } from '../lib/frame.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const FMNIST = '/usr/share/datasets/fashion-mnist';
export const CLASSES = ['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag',
  'Ankle boot'];

// n images of an IDX file (gzip) as 28 x 28 RGBA, and their labels
export function fmnistImages(first, n) {
  const images = gunzipSync(readFileSync(`${FMNIST}/t10k-images-idx3-ubyte.gz`)).subarray(16);
  const labels = gunzipSync(readFileSync(`${FMNIST}/t10k-labels-idx1-ubyte.gz`)).subarray(8);
  const rgba = new Uint8Array(n * 28 * 28 * 4);
  for (let i = 0; i < n * 784; i++) {
    const v = images[first * 784 + i];
    rgba.set([v, v, v, 255], 4 * i);
  }
  return { rgba, labels: Uint8Array.from(labels.subarray(first, first + n)), n, width: 28, height: 28 };
}

// The methods the parity check runs: one that reads pooled features, one patches.
export const PARITY_METHODS = ['sdfed', 'fedotp'];

// The image tower's two arithmetics the parity check runs (step_native.c):
// f32 activations, and Q8_0 in integer products (the default).
export const PARITY_INT8 = [false, true];

// DIR with the inputs; the native side then writes DIR/global.frame
export function makeInputs(dir, model, stepNative, method, int8Images) {
  mkdirSync(dir, { recursive: true });
  const task = JSON.parse(readFileSync(path.join(here, '../../tasks/fmnist-pathological.json'), 'utf8'));
  // the prompts' own text: class texts that differ from the names, a
  // template and a prompt initialisation, read by the wasm from the task
  Object.assign(task, { classes: CLASSES.map((name, i) => (i % 2 ? name : { name, text: name.toLowerCase() })),
    template: 'a grey picture of a {}, a kind of clothing.', prompt_init: 'a photo of a', method,
    background: '#3080c0' });
  // every other image on a ground that fades to transparent where it is
  // dark, which the wasm composites onto the task's background (a blue)
  const images = fmnistImages(100, 32);
  for (let i = 0; i < images.n; i += 2)
    for (let p = i * 784; p < (i + 1) * 784; p++) images.rgba[4 * p + 3] = Math.min(255, 4 * images.rgba[4 * p]);
  copyFileSync(model, path.join(dir, 'model.gguf'));
  writeFileSync(path.join(dir, 'task.json'), JSON.stringify(task));
  writeFileSync(path.join(dir, 'index'), '3');
  writeFileSync(path.join(dir, 'images.rgba'), images.rgba);
  writeFileSync(path.join(dir, 'images.shape'), `${images.n} ${images.width} ${images.height}`);
  writeFileSync(path.join(dir, 'labels.u8'), images.labels);
  writeFileSync(path.join(dir, 'int8_images'), int8Images ? '1' : '0');
  // a previous run's wasm results (another arithmetic, maybe) are not this one's
  for (const stale of ['wasm.features.f32', 'wasm.params']) rmSync(path.join(dir, stale), { force: true });
  execFileSync(stepNative, [dir]);
  return { task, images, index: 3, int8Images, frame: readFileSync(path.join(dir, 'global.frame')) };
}

// The wasm half on an API object (web/sdfed-api.js): features and the
// parameters after one round from the frame.
export function wasmSide(api, modelBytes, inputs) {
  const { task, images, index, int8Images, frame } = inputs;
  api.setInt8Images(int8Images);
  api.loadModel(modelBytes);
  api.setTask(task, index);
  const D = api.featureSize(), per = images.width * images.height * 4;
  const features = new Float32Array(images.n * D);
  for (let i = 0; i < images.n; i++)
    features.set(api.encodeImage(images.rgba.subarray(i * per, (i + 1) * per), images.width, images.height), i * D);
  api.setSamples(0, features, images.labels);
  api.roundBegin(frame);
  while (!api.roundDone()) api.roundStep();
  return { features, params: api.saveParams() };
}

// Writes the wasm results and lets the native side compare; returns its report.
export function compare(dir, stepNative, { features, params }) {
  writeFileSync(path.join(dir, 'wasm.features.f32'), new Uint8Array(features.buffer));
  writeFileSync(path.join(dir, 'wasm.params'), params);
  return execFileSync(stepNative, [dir], { encoding: 'utf8' });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [build, emBuild, model, work] = process.argv.slice(2);
  const stepNative = path.join(build, 'tests/step_native');
  const require = createRequire(import.meta.url);
  const { sdfedApi } = require(path.join(here, '../../web/sdfed-api.js'));
  let failed = false;
  for (const method of PARITY_METHODS) for (const int8 of PARITY_INT8) for (const variant of ['sdfed-wasm', 'sdfed-wasm-threads']) {
    const dir = path.join(work, method), inputs = makeInputs(dir, model, stepNative, method, int8);
    const wasm = path.resolve(emBuild, 'wasm-client', variant);
    const createSdfed = require(`${wasm}.js`);
    const threaded = variant.endsWith('threads');
    const memory = threaded ? new WebAssembly.Memory({ initial: 512, maximum: 32768, shared: true }) : null;
    // Node's fetch() cannot read a file path: hand the module its bytes
    const module = await createSdfed({ wasmBinary: readFileSync(`${wasm}.wasm`), ...(threaded ? { wasmMemory: memory } : {}) });
    console.log(`${method}, ${int8 ? 'integer' : 'f32'} image tower, ${variant}${threaded ? `: ${module._wc_set_threads(2)} threads` : ''}`);
    try {
      const api = sdfedApi(module, memory);
      process.stdout.write(compare(dir, stepNative, wasmSide(api, readFileSync(model), inputs)));
      // the round's global as received and the client's after its steps (a secure round's input is their
      // difference): the frame's values, and the update's
      const { g, x } = api.roundGlobals(), sent = decode(inputs.frame.buffer.slice(inputs.frame.byteOffset,
        inputs.frame.byteOffset + inputs.frame.byteLength)).values;
      const update = api.roundUpdate(), after = decode(update.buffer.slice(update.byteOffset,
        update.byteOffset + update.byteLength)).values;
      const same = (a, b) => a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
      if (!same(g, sent) || !same(x, after) || same(x, g))
        throw new Error('roundGlobals: not the frame\'s and the update\'s values');
      console.log(`roundGlobals: the frame's ${g.length} values and the update's, ok`);
    } catch (e) {
      process.stdout.write(e.stdout || '');
      console.error(`parity (${method}, ${int8 ? 'integer' : 'f32'} image tower, ${variant}): ${e.message}`);
      failed = true;
    }
  }
  process.exit(failed ? 1 : 0);
}
