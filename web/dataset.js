// The volunteer's images, made into features: a choice of files or a
// folder (sorted by folder.js, classes from the class folders or picked by
// hand, one image in five of each class held out), photos added one by one
// (camera.js; the last one can be undone) or a demo shard from the server,
// encoded in the worker (an image that does not decode left out and named),
// kept in IndexedDB and handed to the worker to train on. Files and photos
// add to the volunteer's own images (an image already among them, to the
// bit of its features, is not added twice); only "Remove all my images", or
// a demo share taken in their place, each asked first, drops them.
import { fetchDemoShard } from './federation.js';
import { askClasses, dropQuestion, sortFiles, undecided } from './folder.js';
import { showNotUsed } from './not-used.js';
import { $, page, setStage, showError, showFeaturesOn, showProgress } from './page.js';
import * as store from './store.js';
import { changeShard, fitDevice } from './training.js';

const HELD_OUT_EVERY = 5; // one image in five of each class is kept aside for testing
let latest = 0; // the latest choice of files: an earlier one still sorting or asking gives way
let encoding = Promise.resolve(); // one encoding at a time in the worker

// "Sneaker 3, Bag 2": the images of each class among labels
function perClass(labels) {
  const classes = page.description.classes, counts = new Array(classes.length).fill(0);
  labels.forEach((l) => counts[l]++);
  return counts.map((n, c) => (n ? `${classes[c]} ${n}` : null)).filter(Boolean).join(', ');
}

function summary(dataset, trained, heldOut) {
  if (!dataset.labels.length) return 'No images yet.';
  return `${dataset.labels.length} images ready (${trained} to train on, ${heldOut} held out` +
    `${dataset.source === 'demo' ? `; demo share ${dataset.shard}` : ''}): ${perClass(dataset.labels)}.`;
}

// The photos' counts per class, and the last one's undo.
function showPhotos(photos = []) {
  const kept = photos.filter((p) => p.photo).length;
  $('camera-counts').textContent = photos.length ? `Photos: ${perClass(photos.map((p) => p.label))}` +
    ` (${kept ? `${kept} of them kept as photos` : 'features only'}).` : 'No photos yet.';
  $('undo').disabled = !photos.length;
  $('undo').textContent = photos.length ?
    `Undo the last photo (${page.description.classes[photos[photos.length - 1].label]})` : 'Undo the last photo';
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
  if (train.labels.length) await fitDevice();
  page.dataset = dataset;
  $('data-summary').textContent = summary(dataset, train.labels.length, test.labels.length);
  showPhotos(dataset.photos);
  showNotUsed(dataset.skipped);
  $('remove-images').hidden = dataset.source === 'demo' || !dataset.labels.length;
  $('join').disabled = page.joined || train.labels.length === 0;
  $('join-hint').textContent = train.labels.length ? '' : 'Add images first.';
  setStage(page.joined ? 'joined' : dataset.labels.length ? 'ready' : 'empty');
}

// The images as stored now (another tab of this browser may have changed
// them since this one read them), in use.
export function restoreImages() {
  return inTurn(async () => {
    const dataset = await store.getDataset(page.federation);
    if (dataset) await useDataset(dataset);
  });
}

// images: [{blob} | {rgba, width, height}], names: what the volunteer
// calls each (for the ones that do not decode); labels: per image. The
// images that encode are handed to combine(encoded, notUsed), which gives
// the dataset to keep: encoded {features, labels, names, kept} of those
// (kept: their indices in images), notUsed the others named with skipped
// (not-used.js). Fails when none encoded, keeping the images in use before.
function encodeAndKeep(images, names, labels, skipped, combine) {
  return inTurn(async () => {
    setStage('encoding');
    const { features, failed, seconds, on, why } = await page.compute.call('encode', { images }, (done, total) =>
      showProgress('encode-progress', done, total, `extracting image features: ${done} of ${total}`));
    showFeaturesOn(on, why);
    const bad = new Set(failed.map((f) => f.index)), kept = images.map((_, i) => i).filter((i) => !bad.has(i));
    const notUsed = skipped.concat(failed.map((f) =>
      ({ path: names[f.index], reason: f.reason, kind: 'undecodable' })));
    showProgress('encode-progress', images.length, images.length,
      `features of ${kept.length} images extracted in ${seconds.toFixed(1)} s` +
      (failed.length ? `; ${failed.length} could not be decoded (named below)` : ''));
    if (!kept.length) {
      showNotUsed(notUsed);
      setStage(page.dataset ? (page.joined ? 'joined' : 'ready') : 'empty');
      throw new Error(`none of the ${images.length} images could be decoded (named below)`);
    }
    await keep(await combine({ features, labels: Uint8Array.from(kept, (i) => labels[i]),
      names: kept.map((i) => names[i]), kept }, notUsed));
  });
}

// dataset stored, then used; the volunteer's own images after a demo
// share's start the prompts afresh (another client index)
async function keep(dataset) {
  if (dataset.source !== 'demo' && page.stored.shard !== undefined) await changeShard(undefined);
  await store.putDataset(page.federation, dataset);
  await useDataset(dataset);
}

// One encoding or change of the images at a time, in the order asked.
function inTurn(fn) {
  const work = encoding.then(fn);
  encoding = work.catch(() => {});
  return work;
}

// The volunteer's own images as stored now (another tab of this browser may
// have added some since this one read them), or none: a demo share's are
// the server's, not theirs.
async function ownImages() {
  const d = await store.getDataset(page.federation);
  if (d && d.source !== 'demo') return { ...d, photos: d.photos || [] };
  return { source: 'own', features: new Float32Array(0), labels: new Uint8Array(0), test: new Uint8Array(0),
    skipped: [], photos: [] };
}

// The rows of features (d floats each) by a hash of their bits, for
// finding an image already kept: hash -> [row].
function rowsByHash(features, d) {
  const bits = new Uint32Array(features.buffer, features.byteOffset, features.length), rows = new Map();
  for (let r = 0; r < features.length / d; r++) {
    let hash = 0x811c9dc5; // FNV-1a over the row's words
    for (let k = r * d; k < (r + 1) * d; k++) hash = Math.imul(hash ^ bits[k], 0x01000193) >>> 0;
    rows.set(hash, [...(rows.get(hash) || []), r]);
  }
  return rows;
}

// own's images with the encoded ones added: a chosen file's before the
// photos (photos stay last, each in own.photos), an image whose features
// are, to the bit, those of one already kept named as not used instead; the
// held-out images drawn again over them all. notUsed: the choice's files
// not used, shown and kept with the dataset.
function withImages(own, encoded, notUsed) {
  const n = own.labels.length, d = encoded.features.length / encoded.labels.length, files = n - own.photos.length;
  const have = rowsByHash(own.features, d), fresh = rowsByHash(encoded.features, d);
  const same = (r, o) => encoded.features.subarray(r * d, (r + 1) * d)
    .every((v, k) => Object.is(v, own.features[o * d + k]));
  const added = [], duplicates = [];
  for (const [hash, rows] of fresh) for (const r of rows) {
    const o = (have.get(hash) || []).find((row) => same(r, row));
    if (o === undefined) added.push(r);
    else duplicates.push({ path: encoded.names[r], kind: 'duplicate',
      reason: `already among your images (as ${page.description.classes[own.labels[o]]})` });
  }
  added.sort((x, y) => x - y);
  const features = new Float32Array((n + added.length) * d);
  features.set(own.features.subarray(0, files * d));
  added.forEach((r, j) => features.set(encoded.features.subarray(r * d, (r + 1) * d), (files + j) * d));
  features.set(own.features.subarray(files * d), (files + added.length) * d);
  const labels = Uint8Array.from([...own.labels.subarray(0, files), ...added.map((r) => encoded.labels[r]),
    ...own.labels.subarray(files)]);
  return { ...own, features, labels, test: heldOut(labels), skipped: notUsed.concat(duplicates) };
}

// A photo (camera.js: {rgba, width, height}, or {blob} from the camera
// app) of class label, made into features and added to the volunteer's own
// images (a demo share's give way to them); photo: the photo itself (a
// Blob) to keep with them, or null. Photos come after any chosen files,
// each in dataset.photos as {label, photo}.
export function addPhoto(image, label, photo) {
  return inTurn(async () => {
    await page.ready();
    const { features, failed, on, why } = await page.compute.call('encode', { images: [image] });
    showFeaturesOn(on, why);
    if (failed.length) throw new Error(`the photo could not be used: ${failed[0].reason}`);
    const own = await ownImages();
    const all = new Float32Array(own.features.length + features.length);
    all.set(own.features);
    all.set(features, own.features.length);
    const labels = Uint8Array.from([...own.labels, label]);
    await keep({ ...own, features: all, labels, test: heldOut(labels), photos: [...own.photos, { label, photo }] });
  });
}

// The last photo taken left out again (its features, and the photo if kept).
export function undoPhoto() {
  return inTurn(async () => {
    const d = await ownImages();
    if (!d.photos.length) throw new Error('there is no photo to undo');
    const n = d.labels.length - 1, D = d.features.length / d.labels.length;
    await keep({ ...d, features: d.features.slice(0, n * D), labels: d.labels.slice(0, n), test: d.test.slice(0, n),
                 photos: d.photos.slice(0, -1) });
  });
}

// What dropping the volunteer's own images loses, for the question asked
// first: "your 12 images (3 of them photos kept only in this browser)", or
// null when there are none.
function whatIsDropped(own) {
  if (!own.labels.length) return null;
  const kept = own.photos.filter((p) => p.photo).length;
  return `your ${own.labels.length} image${own.labels.length === 1 ? '' : 's'}` +
    (kept ? ` (${kept === 1 ? 'one of them a photo' : `${kept} of them photos`} kept only in this browser)` : '');
}

// "Remove all my images": the volunteer's own images and photos dropped,
// once they said so; the page is then as before any image was added.
export function removeImages() {
  return inTurn(async () => {
    const own = await ownImages(), dropped = whatIsDropped(own);
    if (!dropped || !confirm(`Remove ${dropped} from this page? This cannot be undone.`)) return;
    await keep({ source: 'own', features: new Float32Array(0), labels: new Uint8Array(0), test: new Uint8Array(0),
      skipped: [], photos: [] });
  });
}

// One image in five of each class held out, and a class of 2 to 4 images,
// which that gives none, its last, as a host's folder is split
// (native/image_folder.h): test flags per image.
function heldOut(labels) {
  const size = new Map(), seen = new Map();
  for (const label of labels) size.set(label, (size.get(label) || 0) + 1);
  return Uint8Array.from(labels, (label) => {
    const k = (seen.get(label) || 0) + 1, n = size.get(label);
    seen.set(label, k);
    return k % HELD_OUT_EVERY === 0 || (n >= 2 && n < HELD_OUT_EVERY && k === n) ? 1 : 0;
  });
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
    showError(null, 'data-error');
    await page.ready();
    const dropped = whatIsDropped(await ownImages());
    if (dropped && !confirm(`A demo share takes the place of ${dropped}, deleting what you added. Take it?`)) return;
    const shard = await fetchDemoShard(page.stored.shard);
    // the shard is this client's index, as it is the simulator's client index
    if (shard.shard !== page.stored.shard) await changeShard(shard.shard);
    const images = [], labels = [], test = [];
    for (const [split, flag] of [[shard.train, 0], [shard.test, 1]]) {
      images.push(...shardImages(shard, split));
      labels.push(...split.labels);
      test.push(...split.labels.map(() => flag));
    }
    await encodeAndKeep(images, images.map((_, i) => `demo image ${i + 1}`), labels, [], (encoded, notUsed) =>
      ({ source: 'demo', shard: shard.shard, features: encoded.features, labels: encoded.labels,
         test: Uint8Array.from(encoded.kept, (i) => test[i]), skipped: notUsed }));
  } finally {
    $('demo').disabled = false;
  }
}

// A choice of files: list [{file, path}] (paths below the root), root the
// chosen folder's name ('' for several things dropped together), added to
// the volunteer's own images (withImages). Sorted by
// the folder rule once the worker has the model (waiting for it, saying
// so); encoded at once when every group means a class, else after the
// volunteer has picked.
export async function addFiles(list, root) {
  const mine = ++latest;
  showError(null, 'data-error');
  dropQuestion();
  if (!list.length) return;
  if (!page.compute)
    showProgress('encode-progress', 0, list.length, `${list.length} files chosen; they are read as soon as the ` +
      'model is ready (loading it above)');
  await page.ready();
  if (mine !== latest) return;
  const { groups, notUsed } = await sortFiles(list, root);
  if (mine !== latest) return;
  showNotUsed(notUsed);
  if (!groups.length) {
    $('encode-progress').hidden = true;
    throw new Error(`none of the ${list.length} files is a PNG or JPEG image this page can use (named below)`);
  }
  if (undecided(groups)) {
    $('encode-progress').hidden = true;
    await askClasses(groups);
    if (mine !== latest) return;
  }
  const chosen = groups.filter((g) => g.label >= 0);
  const skipped = notUsed.concat(groups.filter((g) => g.label < 0).flatMap((g) => (g.loose ?
    g.files.map((f) => ({ path: f.path, reason: 'in no sub-folder, and no class picked', kind: 'no-class' })) :
    [{ path: `${g.name}/`, reason: `${g.files.length} images; none of this federation's classes`, kind: 'no-class',
       files: g.files.length }])));
  const files = chosen.flatMap((g) => g.files.map((f) => ({ ...f, label: g.label })));
  await encodeAndKeep(files.map((f) => ({ blob: f.file })), files.map((f) => f.path), files.map((f) => f.label),
    skipped, async (encoded, notUsed) => withImages(await ownImages(), encoded, notUsed));
}
