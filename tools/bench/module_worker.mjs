// What the bench tools that run builds of the page's module in a worker of
// their own share (ab_browser.mjs, profile_browser.mjs): a build's files,
// the worker's function that makes a module as web/worker.js does and
// loads the model into it, and the worker served cross-origin isolated as
// the aggregator serves the page (tests/browser/secagg_page.mjs).
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { servePage } from '../../tests/browser/secagg_page.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// the module's name: the threaded build for more than one thread
export const moduleName = (threads) => (threads > 1 ? 'sdfed-wasm-threads' : 'sdfed-wasm');

// A build's module files (BUILD: a folder that `make web` filled, its
// wasm-client folder inside) as the server's {'/TAG/FILE': path}; a missing
// one ends the process with a message naming TOOL.
export function moduleFiles(tool, build, tag, threads) {
  const name = moduleName(threads), files = {};
  for (const ext of threads > 1 ? ['js', 'wasm', 'worker.js'] : ['js', 'wasm']) {
    const file = path.join(build, 'wasm-client', `${name}.${ext}`);
    if (!existsSync(file)) {
      console.error(`${tool}: no ${file} (make web builds it)`);
      process.exit(2);
    }
    files[`/${tag}/${name}.${ext}`] = file;
  }
  return files;
}

// The source of a worker's
//   async function makeModule(create, tag) -> {M, used, rgba, features, size, dim}
// (create: a build's createSdfed, its files at /TAG/): the module made as
// web/worker.js makes it (on THREADS of its own above 1), the model at
// /test/model.gguf loaded, a fixed RGBA image and room for its features in
// the module's memory.
export const makeModuleSource = (threads) => `
async function makeModule(create, tag) {
  const threads = ${threads}, threaded = threads > 1;
  const memory = threaded ? new WebAssembly.Memory({ initial: 512, maximum: 32768, shared: true }) : null;
  const M = await create({ locateFile: (file) => '/' + tag + '/' + file,
    ...(threaded ? { wasmMemory: memory, mainScriptUrlOrBlob: '/' + tag + '/${moduleName(threads)}.js' } : {}) });
  const used = threaded ? M._wc_set_threads(threads) : 1;
  const bytes = new Uint8Array(await (await fetch('/test/model.gguf')).arrayBuffer());
  const p = M._malloc(bytes.length);
  M.HEAPU8.set(bytes, p);
  if (M._wc_load_model(p, bytes.length)) throw new Error(tag + ': the module refused the model');
  const size = M._wc_image_size(), dim = M._wc_embed_dim();
  const rgba = M._malloc(size * size * 4), features = M._malloc(dim * 4);
  for (let i = 0; i < size * size * 4; i++) M.HEAPU8[rgba + i] = (i * 31 + (i >> 12)) & 255;
  return { M, used, rgba, features, size, dim };
}`;

// Serves the worker (its source) at /bench_worker.js, the files and the
// model at /test/model.gguf, with a blank page at /test/blank.html:
// {url, close()}.
export async function serveWorker({ emBuild, model, files, worker }) {
  const work = mkdtempSync(path.join(os.tmpdir(), 'bench-worker-'));
  writeFileSync(path.join(work, 'bench_worker.js'), worker);
  const server = await servePage({ root, emBuild, model,
    extra: { ...files, '/bench_worker.js': path.join(work, 'bench_worker.js') } });
  return {
    url: server.url,
    close: () => {
      server.close();
      rmSync(work, { recursive: true, force: true });
    },
  };
}
