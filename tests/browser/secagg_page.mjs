// What the page and its native peers share for secure rounds in Chromium
// (secagg.mjs, secagg_cost.mjs): a static server for the page's files, the
// native side (secagg_native.c) over its stdin and stdout, and the page's
// secure clients, each a worker of web/worker.js, driven from Node.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';
import { createInterface } from 'node:readline';

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm',
  '.css': 'text/css', '.json': 'application/json', '.gguf': 'application/octet-stream' };

// The page's files on HOST (web/ at /, the wasm build at /wasm/, this
// folder's at /test/, the model at /test/model.gguf, a blank page at
// /test/blank.html), the federation's description at /task, cross-origin
// isolated as the aggregator serves them (the worker then runs the threaded
// build); extra: more files, {url path: file}. Resolves to {url, close}.
export function servePage({ root, emBuild, model, host = '127.0.0.1', description = null, extra = {} }) {
  const files = (url) => {
    if (url === '/') return path.join(root, 'web/index.html');
    if (url === '/test/model.gguf') return model;
    if (extra[url]) return extra[url];
    if (url.startsWith('/wasm/')) return path.join(emBuild, 'wasm-client', url.slice(6));
    if (url.startsWith('/test/')) return path.join(root, 'tests/browser', url.slice(6));
    return path.join(root, 'web', url.slice(1));
  };
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x').pathname;
    const headers = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp',
      'Cache-Control': 'no-store' };
    const send = (status, type, body) => {
      res.writeHead(status, { ...headers, 'Content-Type': type });
      res.end(body);
    };
    if (url === '/test/blank.html') return send(200, 'text/html', '<!doctype html><title>secure rounds</title>');
    if (url === '/task' && description) return send(200, 'application/json', JSON.stringify(description));
    if (url === '/status') return send(200, 'application/json', '{"clients": 0, "round": 0, "rounds": 1}');
    if (url.includes('..')) return send(404, 'text/plain', 'no');
    try {
      const file = files(url);
      send(200, TYPES[path.extname(file)] || 'application/octet-stream', readFileSync(file));
    } catch {
      send(404, 'text/plain', 'not found');
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve({ url: `http://${host}:${server.address().port}`,
      port: server.address().port, close: () => server.close() }));
  });
}

// secagg_native (secagg_native.c): the server and the native clients; send
// a command, get its lines back (up to "end").
export function startNative(exe, args, log) {
  const child = spawn(exe, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines = [], ready = [], waiting = [];
  let stderr = '', exited = null;
  child.stderr.on('data', (d) => { stderr += d; });
  createInterface({ input: child.stdout }).on('line', (line) => {
    if (log) log(line.length > 160 ? `${line.slice(0, 160)}…` : line);
    lines.push(line);
    if (line !== 'end') return;
    if (waiting.length) waiting.shift().resolve(lines.splice(0)); else ready.push(lines.splice(0));
  });
  child.on('exit', (code) => {
    exited = new Error(`secagg_native exited (${code}): ${stderr.trim()}`);
    waiting.splice(0).forEach((w) => w.reject(exited));
  });
  // the next block of lines, up to "end"
  const block = () => new Promise((resolve, reject) => {
    if (ready.length) return resolve(ready.shift());
    if (exited) return reject(exited);
    waiting.push({ resolve, reject });
  });
  return {
    child,
    block,
    send(command) {
      child.stdin.write(`${command}\n`);
      return block();
    },
    close() { child.stdin.end(); },
  };
}

// The page's secure clients: `count` workers (web/worker.js through
// compute.js) on the blank page, each with the model and the task; worker
// i single-threaded when singleThreaded(i). Returns their global size and
// whether each runs threads.
export function startPageClients(page, count, task, singleThreaded = () => false) {
  return page.evaluate(async ({ count, task, single }) => {
    const { startCompute } = await import('/compute.js');
    window.secure = [];
    const info = [];
    for (let i = 0; i < count; i++) {
      const compute = startCompute((e) => console.error(e.message));
      const model = await (await fetch('/test/model.gguf')).arrayBuffer();
      const init = await compute.call('init', { model, singleThreaded: single[i] }, null, [model]);
      const set = await compute.call('setTask', { task, index: i });
      window.secure.push(compute);
      info.push({ threaded: init.threaded, globalSize: set.globalSize });
    }
    return info;
  }, { count, task, single: Array.from({ length: count }, (_, i) => singleThreaded(i)) });
}

// Operation op of page client i; bytes travel as hex: args' request (hex),
// x and g (hex of float32s); resolves to {message (hex), ms, ...} or
// {error, code}.
export function pageCall(page, i, op, args = {}) {
  return page.evaluate(async ({ i, op, args }) => {
    const unhex = (h) => Uint8Array.from(h.match(/../g) || [], (x) => parseInt(x, 16));
    const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
    const a = { ...args };
    if (a.request) a.request = unhex(a.request);
    for (const k of ['x', 'g']) if (a[k]) a[k] = new Float32Array(unhex(a[k]).buffer);
    try {
      const r = await window.secure[i].call(op, a);
      if (r instanceof Uint8Array) return { message: hex(r) };
      return r && r.message ? { ...r, message: hex(r.message) } : r;
    } catch (e) {
      return { error: e.message, code: e.code || null };
    }
  }, { i, op, args });
}

// The task every page client works for (setTask again: the plan is the task's).
export const setPageTask = (page, task) => page.evaluate(({ task }) =>
  Promise.all(window.secure.map((c, i) => c.call('setTask', { task, index: i }))), { task });

// One secure round of n clients: the native side (secagg_native) holds the
// server and the native clients; the page's clients take the places of
// `places` (place -> page client), stage by stage, their messages carried
// between the two. drop: a native place that leaves after sharing; bad: a
// page place sent an unmasking request that names an alive neighbour as
// dropped too; sendInputs: the page clients' inputs before masking given to
// the native side for its parity check (with noise, which it cannot
// recompute). Returns what happened: the plan (native and page), each
// message refused, each page refusal with its code, the page's time per
// step, the native clients' mean time per stage, the parity line.
export async function runRound({ page, exe, taskFile, P, n, round, places, drop = -1, bad = -1, sendInputs = false,
                                 log = null }) {
  const native = startNative(exe, [taskFile, n, round, P, [...places.keys()].join(','), drop, bad], log);
  const r = { plan: null, pagePlans: [], refused: [], refusals: [], pageMs: {}, nativeMs: {}, sizes: {},
              maskKeyShares: 0, stages: [], parity: null, noised: [], abandoned: null, inputs: new Map() };
  try {
    const first = await native.block();
    const [, N, k, t, minInputs] = first[0].split(' ').map(Number);
    for (const l of first.filter((x) => x.startsWith('time advertise '))) {
      const [, , cpu, wall] = l.split(' ');
      r.nativeMs.advertise = { cpu: Number(cpu), wall: Number(wall) };
    }
    r.plan = { n: N, k, t, minInputs };
    const g = first.find((l) => l.startsWith('g ')).slice(2);
    const given = new Map(first.filter((l) => l.startsWith('page ')).map((l) => {
      const [, p, client, samples, x] = l.split(' ');
      return [Number(p), { client: Number(client), samples: Number(samples), x }];
    }));
    const note = (stage, p, res) => {
      (r.pageMs[stage] ||= []).push(res.ms);
      (r.sizes[stage] ||= []).push(res.message.length / 2);
    };
    const deliver = async (stage, p, message) => {
      const answer = await native.send(`msg ${p} ${message}`);
      if (answer[0] !== 'ok') r.refused.push(`${stage} from place ${p}: ${answer[0]}`);
    };
    for (const [p, w] of places) {
      r.pagePlans.push(await pageCall(page, w, 'secaggPlan', { n }));
      const res = await pageCall(page, w, 'secaggAdvertise', { n, round, client: given.get(p).client });
      if (res.error) { r.refusals.push({ place: p, stage: 'advertise', ...res }); continue; }
      note('advertise', p, res);
      await deliver('advertise', p, res.message);
    }
    for (;;) {
      const lines = await native.send('next');
      if (lines[0].startsWith('abandoned')) { r.abandoned = lines[0]; break; }
      const stage = lines[0].split(' ')[1];
      r.stages.push(stage);
      for (const l of lines.filter((x) => x.startsWith('time '))) {
        const [, , cpu, wall] = l.split(' ');
        r.nativeMs[stage] = { cpu: Number(cpu), wall: Number(wall) };
      }
      if (stage === 'done') {
        const [, same, weight, sha] = lines.find((l) => l.startsWith('parity ')).split(' ');
        r.parity = { same: same === 'same', weight: Number(weight), sha };
        r.noised = lines.filter((l) => l.startsWith('noised ')).map((l) => {
          const [, p, count, weight] = l.split(' ');
          return { place: Number(p), moved: Number(count), sameWeight: weight === 'same-weight' };
        });
        break;
      }
      for (const l of lines.filter((x) => x.startsWith('request '))) {
        const [, place, request] = l.split(' '), p = Number(place), w = places.get(p);
        const op = { share: 'secaggShare', masked: 'secaggMask', unmask: 'secaggUnmask' }[stage];
        const { x, samples } = given.get(p);
        const args = stage === 'masked' ? { request, x, g, samples } : { request };
        const res = await pageCall(page, w, op, args);
        if (res.error) {
          r.refusals.push({ place: p, stage, ...res });
          await native.send(`leave ${p}`);
          continue;
        }
        note(stage, p, res);
        if (stage === 'masked') {
          const input = await pageCall(page, w, 'secaggInput');
          r.inputs.set(p, input.message);
          if (sendInputs) await native.send(`input ${p} ${input.message}`);
        }
        if (stage === 'unmask') { /* kind (1) round (8) count (4), then owner (4) which (1) share (24) each */
          const b = Buffer.from(res.message, 'hex');
          for (let at = 13; at + 29 <= b.length; at += 29) r.maskKeyShares += b[at + 4] === 2 ? 1 : 0;
        }
        await deliver(stage, p, res.message);
      }
    }
  } finally {
    native.close();
  }
  return r;
}
