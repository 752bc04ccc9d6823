// The image tower's forward on WebGPU: clip/image_encoder.c's maths (on f32
// activations, F16 and Q8_0 weights dequantised in the shaders) as WGSL compute
// shaders, from the wasm module's preprocessed pixels and weights
// (sdfed-api.js imageTower) to the projected tokens the module makes into
// features. Loaded by worker.js (importScripts):
//   const gpu = await sdfedGpu.open(tower)    // null: no adapter
//   const tokens = await gpu.forward(pixels)  // every token projected, (T, embed_dim)
//   gpu.device.destroy()                      // its memory given back
'use strict';

const sdfedGpu = (() => {
  const EPILOGUE = { store: 0, activation: 1, add: 2 };

  // y (n, R) = x (n, K) @ W^T (+ bias), W (R, K) as the model stores it;
  // then by the epilogue: stored, the MLP's activation applied, or added to
  // what out holds (the residual stream). `weight` is the WGSL that reads
  // W[r, k] from its buffers (F32, F16, or Q8_0's quants and scales), and
  // `weight4` W[r, k..k+3] for k a multiple of 4 where K is too (Q8_0's
  // always is). Each invocation computes a 4 x 4 block of y in vectors,
  // every output an in-order sum over k; no workgroup memory, barriers or
  // arrays indexed at run time (which a software GPU runs slowly).
  const linearShader = ([weightBindings, weight, weight4], activation) => `
struct Params { n: u32, K: u32, R: u32, bias: u32, epilogue: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;         // (n, K)
@group(0) @binding(2) var<storage, read_write> out: array<f32>; // (n, R)
@group(0) @binding(3) var<storage, read> bias: array<f32>;      // (R), read when p.bias is 1
${weightBindings}

fn weight(r: u32, k: u32) -> f32 { ${weight} }
fn weight4(r: u32, k: u32) -> vec4f { ${weight4} }
${activation}

// x[at..at+3]
fn x4(at: u32) -> vec4f { return vec4f(x[at], x[at + 1u], x[at + 2u], x[at + 3u]); }

// acc + the products of 4 steps of k in order: xs (one row of x at k..k+3)
// times m (m[j]: the 4 columns' weights at k + j)
fn steps4(acc: vec4f, xs: vec4f, m: mat4x4f) -> vec4f {
  return acc + xs.x * m[0] + xs.y * m[1] + xs.z * m[2] + xs.w * m[3];
}

// y[row, col] finished by the epilogue, for an output inside y
fn finish(row: u32, col: u32, acc: f32) {
  if (row >= p.n || col >= p.R) { return; }
  var y = acc;
  if (p.bias == 1u) { y += bias[col]; }
  let at = row * p.R + col;
  if (p.epilogue == ${EPILOGUE.activation}u) { out[at] = act(y); }
  else if (p.epilogue == ${EPILOGUE.add}u) { out[at] = out[at] + y; }
  else { out[at] = y; }
}

fn finish_row(row: u32, col0: u32, acc: vec4f) {
  finish(row, col0, acc.x);
  finish(row, col0 + 1u, acc.y);
  finish(row, col0 + 2u, acc.z);
  finish(row, col0 + 3u, acc.w);
}

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3u) {
  let col0 = id.x * 4u; // of y: a row of W
  let row0 = id.y * 4u; // of x and y
  if (col0 >= p.R || row0 >= p.n) { return; }
  // clamped into the matrices (the outputs past them are not stored)
  let c = min(vec4u(col0) + vec4u(0u, 1u, 2u, 3u), vec4u(p.R - 1u));
  let r = min(vec4u(row0) + vec4u(0u, 1u, 2u, 3u), vec4u(p.n - 1u)) * p.K;
  var acc0 = vec4f(0.0); // row0's 4 outputs
  var acc1 = vec4f(0.0);
  var acc2 = vec4f(0.0);
  var acc3 = vec4f(0.0);
  if (p.K % 4u == 0u) {
    for (var k = 0u; k < p.K; k += 4u) {
      let m = transpose(mat4x4f(weight4(c.x, k), weight4(c.y, k), weight4(c.z, k), weight4(c.w, k)));
      acc0 = steps4(acc0, x4(r.x + k), m);
      acc1 = steps4(acc1, x4(r.y + k), m);
      acc2 = steps4(acc2, x4(r.z + k), m);
      acc3 = steps4(acc3, x4(r.w + k), m);
    }
  } else {
    for (var k = 0u; k < p.K; k++) {
      let w = vec4f(weight(c.x, k), weight(c.y, k), weight(c.z, k), weight(c.w, k));
      acc0 += x[r.x + k] * w;
      acc1 += x[r.y + k] * w;
      acc2 += x[r.z + k] * w;
      acc3 += x[r.w + k] * w;
    }
  }
  finish_row(row0, col0, acc0);
  finish_row(row0 + 1u, col0, acc1);
  finish_row(row0 + 2u, col0, acc2);
  finish_row(row0 + 3u, col0, acc3);
}`;

  // each type's [bindings, weight, weight4] (see linearShader)
  const F32_WEIGHT = ['@group(0) @binding(4) var<storage, read> w: array<f32>; // (R, K)', 'return w[r * p.K + k];',
    'let i = r * p.K + k;\n  return vec4f(w[i], w[i + 1u], w[i + 2u], w[i + 3u]);'];
  // F16: two values a u32
  const F16_WEIGHT = ['@group(0) @binding(4) var<storage, read> w: array<u32>; // (R, K) f16, 2 a word',
    'let i = r * p.K + k;\n  return unpack2x16float(w[i / 2u])[i % 2u];',
    'let i = (r * p.K + k) / 2u;\n  return vec4f(unpack2x16float(w[i]), unpack2x16float(w[i + 1u]));'];
  // Q8_0: value = d * q per block of 32 along k (base/dtype.h); the quants
  // 4 to a u32, the f16 scales 2 to a u32 (as gpu.js repacks them)
  const Q8_0_WEIGHT = [`@group(0) @binding(4) var<storage, read> quants: array<u32>; // (R, K) int8, 4 a word
@group(0) @binding(5) var<storage, read> scales: array<u32>; // (R, K / 32) f16, 2 a word`,
  `let i = r * p.K + k;
  let b = i / 32u;
  let q = extractBits(i32(quants[i / 4u]), (i % 4u) * 8u, 8u);
  return unpack2x16float(scales[b / 2u])[b % 2u] * f32(q);`,
  `let i = r * p.K + k;
  let b = i / 32u;
  let word = i32(quants[i / 4u]);
  let q = vec4f(f32(extractBits(word, 0u, 8u)), f32(extractBits(word, 8u, 8u)), f32(extractBits(word, 16u, 8u)),
                f32(extractBits(word, 24u, 8u)));
  return unpack2x16float(scales[b / 2u])[b % 2u] * q;`];

  const WEIGHTS = { f32: F32_WEIGHT, f16: F16_WEIGHT, q8_0: Q8_0_WEIGHT };

  // the MLP's activation (clip_model.h): QuickGELU x sigmoid(1.702 x), or
  // GELU x (1 + erf(x / sqrt 2)) / 2 with erf by Abramowitz and Stegun
  // 7.1.26 (error below 1.5e-7)
  const ACTIVATIONS = {
    quick_gelu: 'fn act(x: f32) -> f32 { return x / (1.0 + exp(x * -1.702)); }',
    gelu: `fn erf(v: f32) -> f32 {
  let x = abs(v);
  let t = 1.0 / (1.0 + 0.3275911 * x);
  let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return sign(v) * (1.0 - poly * exp(-x * x));
}
fn act(x: f32) -> f32 { return 0.5 * x * (1.0 + erf(x * 0.70710678118654752)); }`,
  };

  // out (n, C) = layernorm(inp (n, C)) * weight + bias, one row an invocation
  const LAYERNORM = `
struct Params { n: u32, C: u32, eps: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> inp: array<f32>;       // (n, C)
@group(0) @binding(2) var<storage, read_write> out: array<f32>; // (n, C)
@group(0) @binding(3) var<storage, read> weight: array<f32>;    // (C)
@group(0) @binding(4) var<storage, read> bias: array<f32>;      // (C)

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  if (id.x >= p.n) { return; }
  let row = id.x * p.C;
  var sum = 0.0;
  for (var c = 0u; c < p.C; c++) { sum += inp[row + c]; }
  let mean = sum / f32(p.C);
  sum = 0.0;
  for (var c = 0u; c < p.C; c++) { let d = inp[row + c] - mean; sum += d * d; }
  let rstd = 1.0 / sqrt(sum / f32(p.C) + p.eps);
  for (var c = 0u; c < p.C; c++) { out[row + c] = (inp[row + c] - mean) * rstd * weight[c] + bias[c]; }
}`;

  // patches (G*G, 3*P*P) of the image (3, S, S), a patch laid out channel,
  // row, column as the convolution's kernel (image_encoder.c's patchify)
  const PATCHIFY = `
struct Params { S: u32, P: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> img: array<f32>;           // (3, S, S)
@group(0) @binding(2) var<storage, read_write> patches: array<f32>; // (G*G, 3*P*P)

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  let G = p.S / p.P;
  let len = 3u * p.P * p.P;
  if (id.x >= G * G * len) { return; }
  let cell = id.x / len; // the patch
  let at = id.x % len;
  let c = at / (p.P * p.P);
  let ky = (at / p.P) % p.P;
  let kx = at % p.P;
  let y = (cell / G) * p.P + ky;
  let x = (cell % G) * p.P + kx;
  patches[id.x] = img[(c * p.S + y) * p.S + x];
}`;

  // x (T, W): the class token then the patches' embeddings, plus positions
  const EMBED = `
struct Params { T: u32, W: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> emb: array<f32>;     // (T - 1, W)
@group(0) @binding(2) var<storage, read_write> x: array<f32>; // (T, W)
@group(0) @binding(3) var<storage, read> class_embd: array<f32>; // (W)
@group(0) @binding(4) var<storage, read> pos: array<f32>;        // (T, W)

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  if (id.x >= p.T * p.W) { return; }
  let t = id.x / p.W;
  let ch = id.x % p.W;
  let src = select(emb[(t - 1u) * p.W + ch], class_embd[ch], t == 0u);
  x[id.x] = src + pos[id.x];
}`;

  // out (T, W) = per head h, softmax(q k^T / sqrt(hd)) v over the image's
  // T tokens, from qkv (T, 3W) (q, k, v columns, each head's hd of them);
  // one invocation a (query, head)
  const attentionShader = (T) => `
struct Params { T: u32, W: u32, heads: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;       // (T, 3W)
@group(0) @binding(2) var<storage, read_write> out: array<f32>; // (T, W)

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  if (id.x >= p.T * p.heads) { return; }
  let i = id.x / p.heads;
  let h = id.x % p.heads;
  let hd = p.W / p.heads;
  let q = i * 3u * p.W + h * hd;
  var scores: array<f32, ${T}>;
  var most = -3.0e38;
  for (var j = 0u; j < p.T; j++) {
    let k = j * 3u * p.W + p.W + h * hd;
    var dot = 0.0;
    for (var d = 0u; d < hd; d++) { dot += qkv[q + d] * qkv[k + d]; }
    scores[j] = p.scale * dot;
    most = max(most, scores[j]);
  }
  var sum = 0.0;
  for (var j = 0u; j < p.T; j++) { scores[j] = exp(scores[j] - most); sum += scores[j]; }
  let inv = 1.0 / sum;
  for (var d = 0u; d < hd; d++) {
    var acc = 0.0;
    for (var j = 0u; j < p.T; j++) { acc += scores[j] * inv * qkv[j * 3u * p.W + 2u * p.W + h * hd + d]; }
    out[i * p.W + h * hd + d] = acc;
  }
}`;

  // A Q8_0 matrix's bytes (34-byte blocks: f16 d, 32 int8 q) as the
  // shader's quants and scales.
  function repackQ8_0(bytes, rows, cols) {
    const blocks = rows * cols / 32;
    const quants = new Uint8Array(rows * cols), scales = new Uint16Array(blocks + (blocks % 2));
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let b = 0; b < blocks; b++) {
      scales[b] = view.getUint16(34 * b, true);
      quants.set(bytes.subarray(34 * b + 2, 34 * b + 34), 32 * b);
    }
    return { quants, scales };
  }

  // Throws the validation error of the device's innermost error scope, if any.
  async function failed(device) {
    const error = await device.popErrorScope();
    if (error) throw new Error(error.message);
  }

  // The adapter's device with its largest buffers, or null: no WebGPU, no
  // adapter, or none that holds the tower's largest matrix (bytes).
  async function requestDevice(largest) {
    if (typeof navigator === 'undefined' || !navigator.gpu) return null;
    const adapter = await navigator.gpu.requestAdapter();
    if (!adapter) return null;
    const { maxStorageBufferBindingSize, maxBufferSize } = adapter.limits;
    if (largest > maxStorageBufferBindingSize) return null;
    return adapter.requestDevice({ requiredLimits: { maxStorageBufferBindingSize, maxBufferSize } });
  }

  // tower: sdfed-api.js imageTower(). Every token is projected (the class
  // token's row is CLIP's pooled feature; FedOTP reads the others). Throws
  // when the tower has a matrix of a type the shaders do not read (not F32,
  // F16 or Q8_0), or WebGPU refused a shader or a binding.
  async function open(tower) {
    const { imageSize: S, patchSize: P, width: W, layers, heads, embedDim: E, eps } = tower;
    const G = S / P, T = G * G + 1;
    for (const t of tower.tensors)
      if (!WEIGHTS[t.type]) throw new Error(`a ${t.type} matrix: the GPU path reads F32, F16 and Q8_0`);
    const device = await requestDevice(Math.max(...tower.tensors.map((t) => 4 * t.rows * t.cols)));
    if (!device) return null;
    device.pushErrorScope('validation');
    const STORAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
    const buffer = (bytes) => device.createBuffer({ size: Math.max(16, Math.ceil(bytes / 4) * 4), usage: STORAGE });
    const upload = (data) => {
      const b = buffer(data.byteLength);
      const whole = new Uint8Array(Math.ceil(data.byteLength / 4) * 4);
      whole.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      device.queue.writeBuffer(b, 0, whole);
      return b;
    };
    // the weights, uploaded once: F32 and F16 tensors as they are, Q8_0 ones
    // repacked (buffers: the bindings after the linear's first four)
    const weights = tower.tensors.map((t) => {
      const bytes = tower.bytesOf(t);
      if (t.type !== 'q8_0') return { ...t, buffers: [upload(bytes)] };
      const { quants, scales } = repackQ8_0(bytes, t.rows, t.cols);
      return { ...t, buffers: [upload(quants), upload(scales)] };
    });
    const floats = (n) => buffer(4 * n);
    const act = {
      pixels: floats(3 * S * S), patches: floats(G * G * 3 * P * P), emb: floats(G * G * W), x0: floats(T * W),
      x: floats(T * W), ln: floats(T * W), qkv: floats(T * 3 * W), att: floats(T * W), fc: floats(T * 4 * W),
      tokens: floats(T * E), none: floats(4),
    };
    const readback = device.createBuffer({ size: 4 * T * E,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });

    const pipeline = (code) => device.createComputePipeline({ layout: 'auto',
      compute: { module: device.createShaderModule({ code }), entryPoint: 'main' } });
    const activation = ACTIVATIONS[tower.activation];
    const pipelines = {
      ...Object.fromEntries(Object.entries(WEIGHTS).map(([type, reads]) =>
        [type, pipeline(linearShader(reads, activation))])),
      layernorm: pipeline(LAYERNORM), patchify: pipeline(PATCHIFY), embed: pipeline(EMBED),
      attention: pipeline(attentionShader(T)),
    };
    // a dispatch: its pipeline, its bind group (a uniform buffer of its own
    // parameters first) and its workgroups
    const uniform = (words) => {
      const b = device.createBuffer({ size: Math.max(16, 4 * words.length),
        usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(b, 0, words);
      return b;
    };
    const dispatch = (name, params, buffers, groups) => {
      const p = pipelines[name];
      const entries = [uniform(params), ...buffers].map((b, i) => ({ binding: i, resource: { buffer: b } }));
      return { pipeline: p, bind: device.createBindGroup({ layout: p.getBindGroupLayout(0), entries }), groups };
    };
    const u32s = (...v) => new Uint32Array(v);
    const linear = (x, out, n, w, bias, epilogue) => {
      const params = u32s(n, w.cols, w.rows, bias ? 1 : 0, epilogue);
      return dispatch(w.type, params, [x, out, bias ? bias.buffers[0] : act.none, ...w.buffers],
        [Math.ceil(w.rows / 32), Math.ceil(n / 32)]); // 8 x 8 invocations of 4 x 4 outputs
    };
    const epsWords = new Uint32Array(new Float32Array([eps]).buffer);
    const layernorm = (inp, out, n, w, b) =>
      dispatch('layernorm', u32s(n, W, epsWords[0]), [inp, out, w.buffers[0], b.buffers[0]], threads(n));
    const threads = (count) => [Math.ceil(count / 64)];

    // the forward as a list of dispatches, made once: the weights and the
    // activations' buffers never change
    const [patchEmbd, classEmbd, pos, lnPreW, lnPreB] = weights.slice(0, 5);
    const [lnPostW, lnPostB, proj] = weights.slice(5 + 12 * layers);
    const scaleWord = new Uint32Array(new Float32Array([1 / Math.sqrt(W / heads)]).buffer)[0];
    const steps = [
      dispatch('patchify', u32s(S, P), [act.pixels, act.patches], threads(G * G * 3 * P * P)),
      linear(act.patches, act.emb, G * G, patchEmbd, null, EPILOGUE.store),
      dispatch('embed', u32s(T, W), [act.emb, act.x0, classEmbd.buffers[0], pos.buffers[0]], threads(T * W)),
      layernorm(act.x0, act.x, T, lnPreW, lnPreB),
    ];
    for (let l = 0; l < layers; l++) {
      const [ln1W, ln1B, qkv, qkvB, out, outB, ln2W, ln2B, fc, fcB, mlpProj, mlpProjB] =
        weights.slice(5 + 12 * l, 5 + 12 * (l + 1));
      steps.push(
        layernorm(act.x, act.ln, T, ln1W, ln1B),
        linear(act.ln, act.qkv, T, qkv, qkvB, EPILOGUE.store),
        dispatch('attention', u32s(T, W, heads, scaleWord), [act.qkv, act.att], threads(T * heads)),
        linear(act.att, act.x, T, out, outB, EPILOGUE.add),
        layernorm(act.x, act.ln, T, ln2W, ln2B),
        linear(act.ln, act.fc, T, fc, fcB, EPILOGUE.activation),
        linear(act.fc, act.x, T, mlpProj, mlpProjB, EPILOGUE.add));
    }
    steps.push(layernorm(act.x, act.ln, T, lnPostW, lnPostB),
      linear(act.ln, act.tokens, T, proj, null, EPILOGUE.store));
    await failed(device);

    return {
      device,
      // pixels (3, S, S) Float32Array -> the projected tokens (T, E)
      async forward(pixels) {
        device.pushErrorScope('validation');
        device.queue.writeBuffer(act.pixels, 0, pixels);
        const encoder = device.createCommandEncoder();
        const pass = encoder.beginComputePass();
        for (const s of steps) {
          pass.setPipeline(s.pipeline);
          pass.setBindGroup(0, s.bind);
          pass.dispatchWorkgroups(...s.groups);
        }
        pass.end();
        encoder.copyBufferToBuffer(act.tokens, 0, readback, 0, 4 * T * E);
        device.queue.submit([encoder.finish()]);
        await failed(device);
        await readback.mapAsync(GPUMapMode.READ);
        const tokens = new Float32Array(readback.getMappedRange().slice(0));
        readback.unmap();
        return tokens;
      },
    };
  }

  return { open };
})();
