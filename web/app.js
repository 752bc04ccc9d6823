// The volunteer page: the federation's description, the volunteer's images
// and their features, the connection (sdfed.v1, docs/protocol.md), rounds
// trained by the worker (worker.js), the accuracy chart, "try it" and
// "forget me". What it keeps lives in IndexedDB (store.js).
import { startCompute } from './compute.js';
import * as store from './store.js';

const $ = (id) => document.getElementById(id);
const HELD_OUT_EVERY = 5; // one image in five of each class is kept aside for testing

const S = {
  description: null, // GET /task: task, model, classes, global_shape, mode
  federation: null, // this federation's id in IndexedDB
  state: {}, // IndexedDB state: token, shard, index, params, history, joined
  compute: null,
  dataset: null, // {source, shard, features, labels, test, embedDim}
  pendingFiles: [], // [{file, folder}]
  ws: null,
  joined: false,
  reconnectDelay: 1000,
  roundWaiting: null, // a round_start whose parameters are to come
  forgetting: false,
};

// ------------------------------------------------------------------ ui

function showError(e) {
  const box = $('error');
  box.textContent = e ? (e.message || String(e)) : '';
  box.hidden = !e;
}

function setStage(stage) { document.body.dataset.stage = stage; }

function progress(id, done, total, label) {
  const box = $(id);
  box.hidden = false;
  box.firstElementChild.style.width = `${total ? (100 * done) / total : 0}%`;
  box.lastElementChild.textContent = label;
}

function connection(state, text) {
  const badge = $('connection');
  badge.dataset.state = state;
  badge.textContent = text;
}

function drawChart() {
  const svg = $('chart'), history = S.state.history || [];
  const W = 640, H = 260, left = 44, top = 14, pw = W - left - 16, ph = H - top - 34;
  const x = (i) => left + (history.length > 1 ? (pw * i) / (history.length - 1) : pw / 2);
  const y = (a) => top + ph * (1 - a);
  let parts = '';
  for (let p = 0; p <= 100; p += 25)
    parts += `<line x1="${left}" y1="${y(p / 100)}" x2="${left + pw}" y2="${y(p / 100)}" stroke="#e3e7ee"/>` +
      `<text x="${left - 6}" y="${y(p / 100) + 4}" text-anchor="end" font-size="11">${p}%</text>`;
  if (history.length) {
    const points = history.map((h, i) => `${x(i).toFixed(1)},${y(h.accuracy).toFixed(1)}`).join(' ');
    parts += `<polyline fill="none" stroke="#0b63c5" stroke-width="2" points="${points}"/>`;
    parts += history.map((h, i) => `<circle cx="${x(i).toFixed(1)}" cy="${y(h.accuracy).toFixed(1)}" r="3" ` +
      `fill="#0b63c5"><title>round ${h.round + 1}: ${(100 * h.accuracy).toFixed(1)}%</title></circle>`).join('');
    const last = history[history.length - 1];
    parts += `<text x="${left + pw}" y="${H - 8}" text-anchor="end" font-size="12">round ${last.round + 1}: ` +
      `${(100 * last.accuracy).toFixed(1)}%</text>`;
  } else {
    parts += `<text x="${left + pw / 2}" y="${top + ph / 2}" text-anchor="middle" fill="#5b6575">` +
      'no rounds yet</text>';
  }
  svg.innerHTML = parts;
}

// ------------------------------------------------------------- helpers

async function fetchJson(url) {
  const r = await fetch(url, { cache: 'no-store' });
  const body = await r.json().catch(() => null);
  if (!r.ok) throw new Error(body && body.error ? body.error : `${url}: HTTP ${r.status}`);
  return body;
}

async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

// ------------------------------------------------------- the federation

async function describe() {
  const d = await fetchJson('/task');
  S.description = d;
  S.federation = `${d.model.sha256}:${await sha256Hex(new TextEncoder().encode(JSON.stringify(d.task)))}`;
  $('federation-summary').textContent = `Together the volunteers teach a ${d.task.method} prompt to a CLIP model ` +
    `to tell ${d.classes.length} kinds of images apart, over ${d.task.rounds} rounds.`;
  $('classes').textContent = d.classes.join(', ');
  $('method').textContent = `${d.task.method} (global prompt ${d.task.global_prompt_length} tokens, shared; ` +
    'personal prompt kept here)';
  $('model').textContent = `${(d.model.size / 1e6).toFixed(1)} MB, sha256 ${d.model.sha256.slice(0, 12)}…`;
}

async function pollStatus() {
  try {
    const s = await fetchJson('/status');
    $('round').textContent = s.done ? `finished (${s.rounds} rounds)` :
      `${s.round + 1} of ${s.rounds}${s.round_open ? `, ${s.reported} of ${s.participants} reported` : ''}`;
    $('volunteers').textContent = String(s.clients);
  } catch (e) { /* the badge shows the connection; the next poll retries */ }
  setTimeout(pollStatus, 5000);
}

// The model from IndexedDB, or downloaded once; its sha256 checked either way.
async function loadModel() {
  const { url, sha256, size } = S.description.model;
  let bytes = await store.getModel(sha256);
  if (bytes && (await sha256Hex(bytes)) !== sha256) bytes = null; // damaged copy: fetch again
  if (!bytes) {
    const r = await fetch(url);
    if (!r.ok) throw new Error(`the model could not be downloaded (HTTP ${r.status})`);
    const reader = r.body.getReader(), chunks = [];
    let got = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      got += value.length;
      progress('model-progress', got, size, `downloading the model: ${(got / 1e6).toFixed(1)} of ` +
        `${(size / 1e6).toFixed(1)} MB`);
    }
    bytes = new Uint8Array(got);
    let at = 0;
    for (const c of chunks) bytes.set(c, at), at += c.length;
    const actual = await sha256Hex(bytes);
    if (actual !== sha256)
      throw new Error(`the model file does not match the federation's hash (expected ${sha256.slice(0, 12)}…, ` +
        `got ${actual.slice(0, 12)}…); reload the page, and tell the organiser if it happens again`);
    await store.putModel(sha256, bytes);
    progress('model-progress', size, size, 'model downloaded and verified');
  }
  return bytes;
}

// The client's index picks its random stream and, for tasks with varied
// lengths, its personal prompt's length: the demo shard, or a number drawn once.
function clientIndex() {
  if (S.state.shard !== undefined) return S.state.shard;
  return S.state.index;
}

async function setTask() {
  const d = S.description;
  await S.compute.call('setTask', { task: d.task, classes: d.classes, index: clientIndex() });
  if (S.state.params) {
    try {
      await S.compute.call('loadParams', { bytes: S.state.params });
    } catch (e) {
      S.state = await store.updateState(S.federation, { params: null }); // another task's prompts: start afresh
    }
  }
}

// ----------------------------------------------------------- your images

function datasetSummary() {
  const d = S.dataset, classes = S.description.classes;
  if (!d) return 'No images yet.';
  const counts = new Array(classes.length).fill(0);
  d.labels.forEach((l) => counts[l]++);
  const tests = d.test.reduce((a, b) => a + b, 0);
  const per = counts.map((n, c) => (n ? `${classes[c]} ${n}` : null)).filter(Boolean).join(', ');
  return `${d.labels.length} images ready (${d.labels.length - tests} to train on, ${tests} held out` +
    `${d.source === 'demo' ? `; demo share ${d.shard}` : ''}): ${per}.`;
}

// Hands the features to the worker: training and held-out sets.
async function useDataset(dataset) {
  const D = dataset.embedDim, pick = (flag) => {
    const rows = [];
    dataset.test.forEach((t, i) => { if (t === flag) rows.push(i); });
    const features = new Float32Array(rows.length * D), labels = new Uint8Array(rows.length);
    rows.forEach((r, j) => { features.set(dataset.features.subarray(r * D, (r + 1) * D), j * D); labels[j] = dataset.labels[r]; });
    return { features, labels };
  };
  const train = pick(0), test = pick(1);
  await S.compute.call('setSamples', { which: 0, ...train });
  await S.compute.call('setSamples', { which: 1, ...test });
  S.dataset = dataset;
  $('data-summary').textContent = datasetSummary();
  $('join').disabled = S.joined || train.labels.length === 0;
  $('join-hint').textContent = train.labels.length ? '' : 'Add images first.';
  setStage(S.joined ? 'joined' : 'ready');
}

async function encodeAndKeep(images, labels, test, extra) {
  setStage('encoding');
  const { features, seconds } = await S.compute.call('encode', { images }, (done, total) =>
    progress('encode-progress', done, total, `extracting image features: ${done} of ${total}`));
  progress('encode-progress', images.length, images.length,
    `features of ${images.length} images extracted in ${seconds.toFixed(1)} s`);
  const dataset = { ...extra, features, labels, test, embedDim: features.length / Math.max(1, labels.length) };
  await store.putDataset(S.federation, dataset);
  await useDataset(dataset);
}

async function takeDemoShard() {
  $('demo').disabled = true;
  try {
    const asked = S.state.shard !== undefined ? `?k=${S.state.shard}` : '';
    const shard = await fetchJson(`/demo/shard${asked}`);
    if (shard.shard !== S.state.shard) {
      // the shard is this client's index, as it is the simulator's client index
      S.state = await store.updateState(S.federation, { shard: shard.shard, params: null });
      await setTask();
    }
    const images = [], labels = [], test = [];
    for (const [split, flag] of [[shard.train, 0], [shard.test, 1]]) {
      const pixels = Uint8Array.from(atob(split.pixels), (c) => c.charCodeAt(0));
      const per = shard.width * shard.height;
      split.labels.forEach((label, i) => {
        const rgba = new Uint8ClampedArray(per * 4);
        for (let p = 0; p < per; p++) {
          const v = pixels[i * per + p];
          rgba[4 * p] = rgba[4 * p + 1] = rgba[4 * p + 2] = v;
          rgba[4 * p + 3] = 255;
        }
        images.push({ rgba, width: shard.width, height: shard.height });
        labels.push(label);
        test.push(flag);
      });
    }
    await encodeAndKeep(images, Uint8Array.from(labels), Uint8Array.from(test), { source: 'demo', shard: shard.shard });
  } finally {
    $('demo').disabled = false;
  }
}

const normalise = (s) => s.toLowerCase().replace(/[^a-z0-9]/g, '');

// The task's class a folder name means, or -1.
function classOfFolder(folder) {
  const n = normalise(folder), classes = S.description.classes.map(normalise);
  let c = classes.indexOf(n);
  if (c < 0) c = classes.findIndex((k) => k && (k.startsWith(n) || n.startsWith(k)) && n.length >= 3);
  return c;
}

// Files grouped by folder, each group with its class picker.
function showGroups() {
  const groups = new Map();
  for (const f of S.pendingFiles) {
    if (!groups.has(f.folder)) groups.set(f.folder, []);
    groups.get(f.folder).push(f);
  }
  const box = $('groups');
  box.innerHTML = '';
  for (const [folder, files] of groups) {
    const row = document.createElement('div');
    row.className = 'group';
    const select = document.createElement('select');
    select.innerHTML = '<option value="-1">choose the class…</option>' +
      S.description.classes.map((c, i) => `<option value="${i}">${c}</option>`).join('');
    select.value = String(files[0].label ?? classOfFolder(folder));
    select.onchange = () => files.forEach((f) => { f.label = Number(select.value); });
    files.forEach((f) => { f.label = Number(select.value); });
    row.append(`${folder || 'loose files'}: ${files.length} image${files.length > 1 ? 's' : ''} → `, select);
    box.append(row);
  }
  if (groups.size) {
    const go = document.createElement('button');
    go.textContent = 'Use these images';
    go.onclick = () => useFiles().catch(showError);
    box.append(go);
  }
}

const ready = () => { if (!S.compute) throw new Error('the model is still loading; try again in a moment'); };

async function useFiles() {
  ready();
  const chosen = S.pendingFiles.filter((f) => f.label >= 0);
  if (!chosen.length) throw new Error('pick a class for at least one group of images');
  const seen = new Map(), test = [];
  for (const f of chosen) {
    const k = (seen.get(f.label) || 0) + 1;
    seen.set(f.label, k);
    test.push(k % HELD_OUT_EVERY === 0 ? 1 : 0);
  }
  if (S.state.shard !== undefined) {
    S.state = await store.updateState(S.federation, { shard: undefined, params: null });
    await setTask();
  }
  $('groups').innerHTML = '';
  S.pendingFiles = [];
  await encodeAndKeep(chosen.map((f) => ({ blob: f.file })), Uint8Array.from(chosen.map((f) => f.label)),
    Uint8Array.from(test), { source: 'files' });
}

function addFiles(list) {
  for (const { file, path } of list) {
    if (!file.type.startsWith('image/')) continue;
    const parts = path.split('/');
    S.pendingFiles.push({ file, folder: parts.length > 1 ? parts[parts.length - 2] : '' });
  }
  showGroups();
}

// Every file below a dropped folder (webkitGetAsEntry).
async function entryFiles(entry, out) {
  if (entry.isFile) {
    out.push({ file: await new Promise((res, rej) => entry.file(res, rej)), path: entry.fullPath.slice(1) });
  } else if (entry.isDirectory) {
    const reader = entry.createReader();
    for (;;) {
      const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
      if (!batch.length) break;
      for (const e of batch) await entryFiles(e, out);
    }
  }
}

function dropZone(zone, onFiles) {
  zone.addEventListener('dragover', (e) => { e.preventDefault(); zone.classList.add('over'); });
  zone.addEventListener('dragleave', () => zone.classList.remove('over'));
  zone.addEventListener('drop', async (e) => {
    e.preventDefault();
    zone.classList.remove('over');
    const out = [];
    for (const item of e.dataTransfer.items) {
      const entry = item.webkitGetAsEntry && item.webkitGetAsEntry();
      if (entry) await entryFiles(entry, out);
      else if (item.kind === 'file') out.push({ file: item.getAsFile(), path: item.getAsFile().name });
    }
    onFiles(out);
  });
}

// ---------------------------------------------------------- connection

function send(message) { if (S.ws && S.ws.readyState === WebSocket.OPEN) S.ws.send(message); }

function join() {
  S.joined = true;
  $('join').disabled = true;
  setStage('joined');
  store.updateState(S.federation, { joined: true }).then((s) => { S.state = s; });
  connect();
}

function connect() {
  if (S.ws || S.forgetting) return;
  connection('connecting', 'connecting…');
  const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`, 'sdfed.v1');
  ws.binaryType = 'arraybuffer';
  S.ws = ws;
  ws.onopen = () => {
    S.reconnectDelay = 1000;
    const hello = { type: 'hello', protocol: 'sdfed.v1', kind: 'browser', encoding: 'binary' };
    if (S.state.token) hello.token = S.state.token;
    if (S.dataset && S.dataset.source === 'demo') hello.shard = S.dataset.shard;
    ws.send(JSON.stringify(hello));
  };
  ws.onmessage = (e) => {
    const work = typeof e.data === 'string' ? onMessage(JSON.parse(e.data)) : onFrame(e.data);
    Promise.resolve(work).catch(showError);
  };
  ws.onclose = () => {
    S.ws = null;
    S.roundWaiting = null;
    if (S.forgetting || !S.joined) return connection('offline', 'not connected');
    const seconds = Math.round(S.reconnectDelay / 1000);
    connection('offline', `connection lost; retrying in ${seconds} s`);
    setTimeout(connect, S.reconnectDelay);
    S.reconnectDelay = Math.min(30000, S.reconnectDelay * 2);
  };
}

function status(text) { $('training-status').textContent = text; }

async function onMessage(m) {
  switch (m.type) {
  case 'welcome':
    if (m.model.sha256 !== S.description.model.sha256 || m.classes.join('\n') !== S.description.classes.join('\n')) {
      S.joined = false; // not this page's federation: stay out of it
      S.ws.close();
      connection('offline', 'another federation');
      throw new Error('the server now runs another federation (another model or classes); reload the page to ' +
        'see it');
    }
    S.state = await store.updateState(S.federation, { token: m.token });
    connection('online', `connected as volunteer ${m.client_id}`);
    status(`Joined. Waiting for the next round (the federation is at round ${m.round + 1}).`);
    break;
  case 'round_start':
    S.roundWaiting = m.round;
    status(`Round ${m.round + 1}: receiving the shared prompt…`);
    break;
  case 'ack': status(`Round ${m.round + 1}: the server stored your update. Waiting for the others…`); break;
  case 'round_end': status(`Round ${m.round + 1} is over (${m.participants} volunteers). Waiting for the next…`); break;
  case 'wait':
    status(m.reason === 'not_sampled' ? `Round ${m.round + 1} runs without you; you are in line for the next.` :
      `Waiting for round ${m.round + 1} (${m.reason.replaceAll('_', ' ')}).`);
    break;
  case 'done':
    status(`The federation finished its ${m.rounds} rounds. Thank you! Your personal prompt stays here for "try it".`);
    setStage('done');
    break;
  case 'error':
    if (m.code === 'bad_token') { // the server forgot us (a new federation): join afresh
      S.state = await store.updateState(S.federation, { token: null });
      S.ws.close();
      break;
    }
    if (m.code === 'wrong_round' || m.code === 'not_in_round') { status(`The round closed before your update arrived; you are in line for round ${(m.next_round ?? 0) + 1}.`); break; }
    throw new Error(`the server refused: ${m.message} (${m.code})`);
  default: break;
  }
}

// The global parameters of a round: train, upload, report, keep.
async function onFrame(frame) {
  const round = S.roundWaiting;
  if (round === null) return;
  S.roundWaiting = null;
  setStage('training');
  const r = await S.compute.call('round', { frame }, (done, total) =>
    progress('round-progress', done, total, `round ${round + 1}: training step ${done} of ${total}`), [frame]);
  send(r.update.buffer);
  send(JSON.stringify({ type: 'metrics', round, accuracy: r.accuracy, loss: r.losses ? r.losses.total : 0,
    test_samples: S.dataset.test.reduce((a, b) => a + b, 0) }));
  const params = await S.compute.call('saveParams');
  const history = (S.state.history || []).filter((h) => h.round !== round).concat([{ round, accuracy: r.accuracy }]);
  S.state = await store.updateState(S.federation, { params, history });
  progress('round-progress', r.steps, r.steps, `round ${round + 1}: ${r.steps} steps, ` +
    `${r.stepMs.toFixed(0)} ms per step; your accuracy ${(100 * r.accuracy).toFixed(1)}%`);
  drawChart();
  setStage(`trained-${history.length}`);
}

// ------------------------------------------------------------- try it

async function tryImage(file) {
  ready();
  const { best, probabilities } = await S.compute.call('predict', { image: { blob: file } });
  const order = Array.from(probabilities.keys()).sort((a, b) => probabilities[b] - probabilities[a]).slice(0, 5);
  const url = URL.createObjectURL(file);
  $('try-result').innerHTML = `<p><img src="${url}" alt="" style="max-height:96px;vertical-align:middle"> ` +
    `<strong>${S.description.classes[best]}</strong></p><div class="bars">` + order.map((c) =>
    `<span class="${c === best ? 'best' : ''}">${S.description.classes[c]}</span>` +
    `<div class="bar" style="width:${(100 * probabilities[c]).toFixed(1)}%"></div>` +
    `<span>${(100 * probabilities[c]).toFixed(1)}%</span>`).join('') + '</div>';
}

// ---------------------------------------------------------------- main

async function forgetMe() {
  if (!confirm('Delete everything this page stored (model, features, prompts, token) and disconnect?')) return;
  S.forgetting = true;
  if (S.ws) { send(JSON.stringify({ type: 'leave' })); S.ws.close(); }
  if (S.compute) S.compute.stop();
  await store.forget();
  location.reload();
}

async function main() {
  drawChart();
  $('demo').onclick = () => takeDemoShard().catch(showError);
  $('join').onclick = join;
  $('forget').onclick = () => forgetMe().catch(showError);
  $('files').onchange = (e) => addFiles(Array.from(e.target.files, (f) => ({ file: f, path: f.name })));
  $('folder').onchange = (e) => addFiles(Array.from(e.target.files, (f) => ({ file: f, path: f.webkitRelativePath })));
  dropZone($('drop'), addFiles);
  dropZone($('try-drop'), (files) => files.length && tryImage(files[0].file).catch(showError));
  $('try-file').onchange = (e) => e.target.files.length && tryImage(e.target.files[0]).catch(showError);

  await describe();
  pollStatus();
  S.state = await store.getState(S.federation);
  if (S.state.index === undefined)
    S.state = await store.updateState(S.federation, { index: Math.floor(Math.random() * S.description.task.clients) });
  const model = await loadModel();
  S.compute = startCompute(showError);
  // handed over, not copied: the page keeps no use for the bytes
  const info = await S.compute.call('init', { model: model.buffer }, null, [model.buffer]);
  $('model').textContent += `; running in WebAssembly${info.threaded ? ' with threads' : ''}`;
  await setTask();
  $('demo').disabled = false;
  drawChart();
  const dataset = await store.getDataset(S.federation);
  if (dataset) await useDataset(dataset);
  else setStage('empty');
  const history = S.state.history || [];
  if (S.dataset && S.state.params && history.length) {
    const accuracy = await S.compute.call('accuracy');
    $('resume-status').hidden = false;
    $('resume-status').textContent = `Welcome back: your personal prompt from round ` +
      `${history[history.length - 1].round + 1} is restored; its accuracy on your held-out images is ` +
      `${(100 * accuracy).toFixed(1)}%.`;
  }
  if (S.state.joined && S.dataset) join(); // a reload resumes the federation
}

main().catch((e) => { showError(e); setStage('error'); });
