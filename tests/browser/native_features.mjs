// The native reference a browser test compares the page's image features
// with: `sdfed encode-image` on image files, and the distance used.
import { spawnSync } from 'node:child_process';
import path from 'node:path';

// `sdfed encode-image ARGS... FILES...` of BUILD_DIR: one Float32Array per file.
export function nativeFeatures(build, args, files) {
  const r = spawnSync(path.join(build, 'sdfed'), ['encode-image', ...args, ...files], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`sdfed encode-image: ${r.stderr}`);
  return r.stdout.trim().split('\n').map((line) => Float32Array.from(line.split(' '), Number));
}

export function oneMinusCosine(a, b) {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) { ab += a[i] * b[i]; aa += a[i] * a[i]; bb += b[i] * b[i]; }
  return 1 - ab / Math.sqrt(aa * bb);
}
