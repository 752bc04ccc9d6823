// make bench, the native peer: onnxruntime-node (tools/bench/package.json)
// on an image encoder exported by clip_onnx.py, on THREADS threads: its
// features of the check images against REFERENCE (sdfed's, one line of
// numbers per image), then images per second (ort_features.mjs). With
// --text-ids (sdfed tokenize's lines) and --text-reference (sdfed
// encode-text --normalize's), the text encoder's features against sdfed's too.
//   node peers_node.mjs run ONNX_DIR WEIGHTS THREADS IMAGES REPEATS REFERENCE [TEXT_IDS TEXT_REFERENCE]
//     -> "onnxruntime-node WEIGHTS THREADS: images_per_s=... minimal_images_per_s=... max_abs=... one_minus_cos=...
//         [text_max_abs=... text_one_minus_cos=...]"
//        (minimal_images_per_s: ort_features.mjs's minimal harness, the check on images_per_s)
//   node peers_node.mjs compare A B  -> "max_abs=... one_minus_cos=..." (two files of feature lines)
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { compareFeatures, ortImageFeatures, ortTextFeatures } from './ort_features.mjs';
import { scriptHelp } from '../help.mjs';
scriptHelp(import.meta.url);

const readRows = (file) => readFileSync(file, 'utf8').trim().split('\n').map((line) => line.trim().split(/\s+/).map(Number));
const [mode, ...args] = process.argv.slice(2);

if (mode === 'compare') {
  const { maxAbs, oneMinusCos } = compareFeatures(readRows(args[0]), readRows(args[1]));
  console.log(`max_abs=${maxAbs.toExponential(2)} one_minus_cos=${oneMinusCos.toExponential(2)}`);
} else if (mode === 'run') {
  const [dir, weights, threadsArg, imagesArg, repeatsArg, reference, textIds, textReference] = args;
  const ort = createRequire(import.meta.url)('onnxruntime-node');
  const config = JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8'));
  const bytes = readFileSync(path.join(dir, 'check.pixels'));
  const pixels = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
  const expected = readRows(reference), threads = Number(threadsArg);
  const { features, imagesPerS, minimalImagesPerS } = await ortImageFeatures(ort,
    path.join(dir, `image.${weights}.onnx`), { intraOpNumThreads: threads, size: config.image_size, pixels,
      count: expected.length, images: Number(imagesArg), repeats: Number(repeatsArg) });
  const image = compareFeatures(features, expected);
  let line = `onnxruntime-node ${weights} ${threads}: images_per_s=${imagesPerS.toFixed(4)} ` +
    `minimal_images_per_s=${minimalImagesPerS.toFixed(4)} max_abs=${image.maxAbs.toExponential(2)} ` +
    `one_minus_cos=${image.oneMinusCos.toExponential(2)}`;
  if (textIds) {
    const L = config.context_length, rows = readRows(textIds), ids = new BigInt64Array(rows.length * L);
    rows.forEach((row, i) => row.forEach((id, t) => { ids[i * L + t] = BigInt(id); }));
    const text = compareFeatures(await ortTextFeatures(ort, path.join(dir, `text.${weights}.onnx`),
      { intraOpNumThreads: threads, ids, n: rows.length, L }), readRows(textReference));
    line += ` text_max_abs=${text.maxAbs.toExponential(2)} text_one_minus_cos=${text.oneMinusCos.toExponential(2)}`;
  }
  console.log(line);
} else {
  console.error('usage: node peers_node.mjs run ONNX_DIR WEIGHTS THREADS IMAGES REPEATS REFERENCE [TEXT_IDS ' +
    'TEXT_REFERENCE] | compare A B');
  process.exit(2);
}
