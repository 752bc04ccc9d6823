// The federation as the aggregator serves it over HTTP: its description
// (/task) and progress (/status), shown in section 1, its demo shards
// (/demo/shard), and its model file, downloaded once into IndexedDB and
// checked against its sha256 on every load.
import { $, joinKey, joinKeyAccepted, joinKeyRefused, keyed, page, showProgress } from './page.js';
import * as store from './store.js';

// JSON from the server; a refusal says why (the server's JSON error, or its
// line: "this federation needs its join key: ..."), and the server's answer
// to the join key is told to page.js. onBytes(got, total): the body's
// progress (total 0 when the server does not say).
async function fetchJson(url, onBytes = null) {
  const r = await fetch(url, keyed({ cache: 'no-store' }));
  const text = onBytes ? await textOf(r, onBytes) : await r.text();
  let body = null;
  try { body = JSON.parse(text); } catch (e) { /* a refusal's line */ }
  const why = body && body.error ? body.error : text.trim() || `${url}: HTTP ${r.status}`;
  if (r.status === 401) joinKeyRefused(why); // (429, an address locked out, says nothing of the key)
  if (!r.ok) throw new Error(why);
  joinKeyAccepted();
  return body;
}

async function textOf(r, onBytes) {
  const total = Number(r.headers.get('content-length')) || 0, reader = r.body.getReader(), chunks = [];
  for (let got = 0; ;) {
    const { done, value } = await reader.read();
    if (done) return new Blob(chunks).text();
    chunks.push(value);
    got += value.length;
    onBytes(got, total);
  }
}

async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

// The federation's description shown; a federation with secure
// aggregation where this page cannot run it (no WebCrypto outside a secure
// context: secagg.js) is refused in words, and the page goes no further.
export async function describe() {
  if (joinKey) $('status-link').search = `?key=${encodeURIComponent(joinKey)}`;
  const d = await fetchJson('/task');
  page.description = d;
  // the task's own name and description (text, never markup)
  if (d.task.name) {
    document.title = `${d.task.name} · sdfed`;
    $('federation-name').textContent = d.task.name;
    $('federation-name').hidden = false;
  }
  if (d.task.description) {
    $('federation-description').textContent = d.task.description;
    $('federation-description').hidden = false;
  }
  $('folder-example').textContent = `${d.classes[0]}/`;
  const images = d.task.dataset === 'fashion-mnist' ? 'Fashion-MNIST' : 'the federation\'s images';
  $('demo').textContent = `Use a demo share of ${images}`;
  $('demo').hidden = $('demo-hint').hidden = !d.demo_shards;
  $('federation-summary').textContent = `Together the volunteers teach a ${d.task.method} prompt to a CLIP model ` +
    `to tell ${d.classes.length} kinds of images apart, over ${d.task.rounds} round${d.task.rounds === 1 ? '' : 's'}.`;
  $('classes').textContent = d.classes.join(', ');
  const tokens = d.task.global_prompt_length;
  $('method').textContent = `${d.task.method} (global prompt ${tokens} token${tokens === 1 ? '' : 's'}, shared; ` +
    'personal prompt kept here)';
  $('model').textContent = `${(d.model.size / 1e6).toFixed(1)} MB, sha256 ${d.model.sha256.slice(0, 12)}…`;
  showSecureAggregation(null);
  const problem = d.task.secure_aggregation ? self.sdfedSecagg.secureContextProblem() : null;
  if (problem) {
    $('join-hint').textContent = problem;
    throw new Error(problem);
  }
  page.federation = `${d.model.sha256}:${await sha256Hex(new TextEncoder().encode(JSON.stringify(d.task)))}`;
}

// With secure aggregation, its promise in the panel: t, the fewest inputs a
// round's sum holds (round_start's min_inputs; null before the first round),
// and what each volunteer adds for differential privacy when the task asks.
export function showSecureAggregation(t) {
  const { rounds, secure_aggregation: sa } = page.description.task;
  if (!sa) return;
  const noise = sa.noise ? ` For differential privacy each volunteer's browser adds its own random integer noise ` +
    `(a discrete Gaussian) to its prompt before masking it, so that the sum is (ε = ${sa.noise.epsilon}, ` +
    `δ = ${sa.noise.delta})-differentially private over ${rounds === 1 ? 'the round' : `the ${rounds} rounds`}; ` +
    'the server adds none.' :
    ' No noise is added for differential privacy.';
  $('secure').textContent = `On: the server sees only the sum of ${t ? `at least ${t}` : 'several'} volunteers' ` +
    `prompts, never one alone; yours leaves this browser masked.${noise}`;
  $('secure').hidden = $('secure-label').hidden = false;
}

let polls = 0; // the latest poll: an earlier one's answer is not shown after it
let nextPoll = 0;
// The federation's progress now, and again every 5 s; called again (when the
// page's connection is welcomed) to show a count that has just changed at once.
export async function pollStatus() {
  const poll = ++polls;
  clearTimeout(nextPoll);
  try {
    const s = await fetchJson('/status');
    if (poll !== polls) return;
    $('round').textContent = s.done ? `finished: ${s.rounds} of ${s.rounds} done` :
      `${s.round} · ${s.round} of ${s.rounds} done${s.round_open ? `, ${s.reported} of ${s.participants} reported` : ''}`;
    $('volunteers').textContent = String(s.clients);
  } catch (e) { /* the badge shows the connection; the next poll retries */ }
  if (poll === polls) nextPoll = setTimeout(pollStatus, 5000);
}

// shard: the one this page had (asked for again), or undefined (the server
// picks); its download's progress shown where its images' encoding is next
export async function fetchDemoShard(shard) {
  const said = (got, total) => showProgress('encode-progress', got, total, total ?
    `downloading the demo share: ${(got / 1e6).toFixed(1)} of ${(total / 1e6).toFixed(1)} MB` :
    `downloading the demo share${got ? `: ${(got / 1e6).toFixed(1)} MB` : '…'}`);
  said(0, 0);
  try {
    return await fetchJson(`/demo/shard${shard !== undefined ? `?k=${shard}` : ''}`, said);
  } catch (e) {
    $('encode-progress').hidden = true;
    throw e;
  }
}

// The model file, read straight into one buffer of the size the
// federation gives (no chunks kept, no joined copy)
async function download(url, size) {
  const r = await fetch(url, keyed());
  if (!r.ok) throw new Error(`the model could not be downloaded (HTTP ${r.status})`);
  const reader = r.body.getReader(), bytes = new Uint8Array(size);
  for (let got = 0; ;) {
    const { done, value } = await reader.read();
    if (done && got === size) return bytes;
    if (done || got + value.length > size) {
      await reader.cancel();
      throw new Error(`the downloaded model is not the federation's ${size} bytes; reload the page, and tell the ` +
        'organiser if it happens again');
    }
    bytes.set(value, got);
    got += value.length;
    showProgress('model-progress', got, size, `downloading the model: ${(got / 1e6).toFixed(1)} of ` +
      `${(size / 1e6).toFixed(1)} MB`);
  }
}

// The model from IndexedDB, or downloaded once; its sha256 checked either way.
export async function loadModel() {
  const { url, sha256, size } = page.description.model;
  let bytes = await store.getModel(sha256);
  if (bytes && (await sha256Hex(bytes)) !== sha256) bytes = null; // damaged copy: fetch again
  if (!bytes) {
    bytes = await download(url, size);
    const actual = await sha256Hex(bytes);
    if (actual !== sha256)
      throw new Error(`the model file does not match the federation's hash (expected ${sha256.slice(0, 12)}…, ` +
        `got ${actual.slice(0, 12)}…); reload the page, and tell the organiser if it happens again`);
    await store.putModel(sha256, bytes);
    showProgress('model-progress', size, size, 'model downloaded and verified');
  }
  return bytes;
}
