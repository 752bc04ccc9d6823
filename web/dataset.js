// The volunteer's images, made into features: files and folders (classes
// from sub-folder names or picked by hand, one image in five of each class
// held out) or a demo shard from the server, encoded in the worker, kept in
// IndexedDB and handed to the worker to train on.
import { fetchDemoShard } from './federation.js';
import { $, page, requireModel, setStage, showError, showProgress } from './page.js';
import * as store from './store.js';
import { changeShard } from './training.js';

const HELD_OUT_EVERY = 5; // one image in five of each class is kept aside for testing
let pendingFiles = []; // [{file, folder, label}] waiting for their classes

function summary(dataset, trained, heldOut) {
  const classes = page.description.classes, counts = new Array(classes.length).fill(0);
  dataset.labels.forEach((l) => counts[l]++);
  const per = counts.map((n, c) => (n ? `${classes[c]} ${n}` : null)).filter(Boolean).join(', ');
  return `${dataset.labels.length} images ready (${trained} to train on, ${heldOut} held out` +
    `${dataset.source === 'demo' ? `; demo share ${dataset.shard}` : ''}): ${per}.`;
}

// Hands the features to the worker: training and held-out sets.
export async function useDataset(dataset) {
  // floats per image: the method's features (pooled, or patches for fedotp)
  const D = dataset.features.length / Math.max(1, dataset.labels.length), pick = (flag) => {
    const rows = [];
    dataset.test.forEach((t, i) => { if (t === flag) rows.push(i); });
    const features = new Float32Array(rows.length * D), labels = new Uint8Array(rows.length);
    rows.forEach((r, j) => {
      features.set(dataset.features.subarray(r * D, (r + 1) * D), j * D);
      labels[j] = dataset.labels[r];
    });
    return { features, labels };
  };
  const train = pick(0), test = pick(1);
  await page.compute.call('setSamples', { which: 0, ...train });
  await page.compute.call('setSamples', { which: 1, ...test });
  page.dataset = dataset;
  $('data-summary').textContent = summary(dataset, train.labels.length, test.labels.length);
  $('join').disabled = page.joined || train.labels.length === 0;
  $('join-hint').textContent = train.labels.length ? '' : 'Add images first.';
  setStage(page.joined ? 'joined' : 'ready');
}

async function encodeAndKeep(images, labels, test, extra) {
  setStage('encoding');
  const { features, seconds } = await page.compute.call('encode', { images }, (done, total) =>
    showProgress('encode-progress', done, total, `extracting image features: ${done} of ${total}`));
  showProgress('encode-progress', images.length, images.length,
    `features of ${images.length} images extracted in ${seconds.toFixed(1)} s`);
  const dataset = { ...extra, features, labels, test };
  await store.putDataset(page.federation, dataset);
  await useDataset(dataset);
}

// A demo shard's images: Fashion-MNIST's grey pixels, a folder dataset's
// files (decoded as the volunteer's own files are), or, when the task sees
// images in derived domains, each image's pixels in its domain.
function shardImages(shard, split) {
  const bytes = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  if (split.files) return split.files.map((b64) => ({ blob: new Blob([bytes(b64)]) }));
  if (split.images) return split.images.map((im) => rgbaImage(bytes(im.pixels), 0, im.width, im.height, im.channels));
  const pixels = bytes(split.pixels), per = shard.width * shard.height;
  return split.labels.map((_, i) => rgbaImage(pixels, i * per, shard.width, shard.height, 1));
}

// An image of grey (1 channel) or RGB (3) pixels from offset on, as RGBA.
function rgbaImage(pixels, offset, width, height, channels) {
  const n = width * height, rgba = new Uint8ClampedArray(n * 4);
  for (let p = 0; p < n; p++) {
    for (let c = 0; c < 3; c++) rgba[4 * p + c] = pixels[offset + p * channels + (channels === 1 ? 0 : c)];
    rgba[4 * p + 3] = 255;
  }
  return { rgba, width, height };
}

export async function takeDemoShard() {
  $('demo').disabled = true;
  try {
    const shard = await fetchDemoShard(page.stored.shard);
    // the shard is this client's index, as it is the simulator's client index
    if (shard.shard !== page.stored.shard) await changeShard(shard.shard);
    const images = [], labels = [], test = [];
    for (const [split, flag] of [[shard.train, 0], [shard.test, 1]]) {
      images.push(...shardImages(shard, split));
      labels.push(...split.labels);
      test.push(...split.labels.map(() => flag));
    }
    await encodeAndKeep(images, Uint8Array.from(labels), Uint8Array.from(test),
      { source: 'demo', shard: shard.shard });
  } finally {
    $('demo').disabled = false;
  }
}

// The rule the server's folder datasets follow (native/image_folder.h): a
// folder means the class whose name equals it ignoring case and treating
// '_', '-', '/' and space alike.
const normalise = (s) => s.toLowerCase().replace(/[_\-/ ]/g, ' ');

// The task's class a folder name means, or -1.
function classOfFolder(folder) {
  return page.description.classes.map(normalise).indexOf(normalise(folder));
}

// Files grouped by folder, each group with its class picker.
function showGroups() {
  const groups = new Map();
  for (const f of pendingFiles) {
    if (!groups.has(f.folder)) groups.set(f.folder, []);
    groups.get(f.folder).push(f);
  }
  const box = $('groups');
  box.innerHTML = '';
  for (const [folder, files] of groups) {
    const row = document.createElement('div');
    row.className = 'group';
    const select = document.createElement('select');
    // the task's class names as text, never markup
    select.append(new Option('choose the class…', '-1'),
      ...page.description.classes.map((c, i) => new Option(c, String(i))));
    select.value = String(files[0].label ?? classOfFolder(folder));
    select.onchange = () => files.forEach((f) => { f.label = Number(select.value); });
    files.forEach((f) => { f.label = Number(select.value); });
    row.append(`${folder || 'loose files'}: ${files.length} image${files.length > 1 ? 's' : ''} → `, select);
    if (folder && select.value === '-1') {
      const note = document.createElement('span');
      note.className = 'muted skipped';
      note.textContent = ` "${folder}" is none of this federation's classes: skipped unless you pick one`;
      row.append(note);
    }
    box.append(row);
  }
  if (groups.size) {
    const go = document.createElement('button');
    go.textContent = 'Use these images';
    go.onclick = () => useFiles().catch(showError);
    box.append(go);
  }
}

async function useFiles() {
  requireModel();
  const chosen = pendingFiles.filter((f) => f.label >= 0);
  if (!chosen.length) throw new Error('pick a class for at least one group of images');
  const skipped = [...new Set(pendingFiles.filter((f) => f.label < 0).map((f) => f.folder || 'loose files'))];
  const seen = new Map(), test = [];
  for (const f of chosen) {
    const k = (seen.get(f.label) || 0) + 1;
    seen.set(f.label, k);
    test.push(k % HELD_OUT_EVERY === 0 ? 1 : 0);
  }
  if (page.stored.shard !== undefined) await changeShard(undefined);
  $('groups').innerHTML = '';
  pendingFiles = [];
  await encodeAndKeep(chosen.map((f) => ({ blob: f.file })), Uint8Array.from(chosen.map((f) => f.label)),
    Uint8Array.from(test), { source: 'files' });
  if (skipped.length)
    $('data-summary').textContent += ` Skipped (none of this federation's classes): ${skipped.join(', ')}.`;
}

// list: [{file, path}], picked or dropped; images only, grouped by their folder
export function addFiles(list) {
  for (const { file, path } of list) {
    if (!file.type.startsWith('image/')) continue;
    const parts = path.split('/');
    pendingFiles.push({ file, folder: parts.length > 1 ? parts[parts.length - 2] : '' });
  }
  showGroups();
}
