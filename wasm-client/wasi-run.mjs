// Runs a WASI (preview1) program under Node with the host file system at "/",
// forwarding arguments, the environment and the exit status:
//   node --experimental-wasi-unstable-preview1 wasi-run.mjs PROGRAM.wasm [ARGS...]
// WASI programs start in "/"; ours chdir() to $PWD so relative paths work.
import { setFlagsFromString } from 'node:v8';
import { WASI } from 'node:wasi';
import { readFileSync } from 'node:fs';

// Node's WASI calls are V8 "fast API calls" that may start a GC in the middle
// of the call, which crashes Node when a WASI call coincides with memory
// growth (nodejs/node#46777, seen here converting a 29 MB model); disabling
// fast calls before anything is compiled avoids it.
setFlagsFromString('--no-turbo-fast-api-calls');

const [program, ...args] = process.argv.slice(2);
if (!program) {
  console.error('usage: node wasi-run.mjs PROGRAM.wasm [ARGS...]');
  process.exit(2);
}
const wasi = new WASI({
  version: 'preview1',
  args: [program, ...args],
  env: { ...process.env, PWD: process.cwd() },
  preopens: { '/': '/' },
  returnOnExit: true,
});
const module = await WebAssembly.compile(readFileSync(program));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
process.exitCode = wasi.start(instance);
