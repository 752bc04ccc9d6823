// What the page keeps in this browser (IndexedDB database "sdfed"); none of
// it is ever uploaded:
//   models    model files by sha256 (downloaded once, checked on every load),
//             in parts of MODEL_PART bytes (a real CLIP is far above the
//             largest value Chromium stores, 128 MiB): sha256 -> {size,
//             parts}, `${sha256}/${i}` -> part i
//   datasets  the volunteer's image features and labels, per federation,
//             with the photos taken (their classes, and each photo itself
//             where the volunteer asked to keep it: dataset.js addPhoto)
//   state     per federation: the client token, the demo shard or client
//             index, the saved prompts (global + private local), the
//             accuracy history
// forget() deletes the whole database, and nothing is stored after it (the
// page reloads; see app.js for what the reloaded page waits for), nor in
// the other tabs of this site in this browser: they are told (a
// BroadcastChannel; the deletion's versionchange too), refuse to make the
// database again, and call what onForgottenElsewhere gave (app.js: they
// leave the federation and reload as this one does).

const DB = 'sdfed', VERSION = 1;
let opened = null;
let forgotten = false;
const tabs = new BroadcastChannel('sdfed'); // this site's other tabs in this browser
let forgottenElsewhere = () => {};

// "Forget me" in another tab: nothing more is stored here either.
function deletedElsewhere() {
  if (forgotten) return;
  forgotten = true;
  opened?.then((d) => d.close(), () => {});
  opened = null;
  forgottenElsewhere();
}
tabs.onmessage = (e) => { if (e.data === 'forgotten') deletedElsewhere(); };
export function onForgottenElsewhere(fn) { forgottenElsewhere = fn; }

function request(r) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

function db() {
  if (forgotten) return Promise.reject(new Error('this page\'s storage was deleted ("Forget me")'));
  if (!opened) {
    const r = indexedDB.open(DB, VERSION);
    r.onupgradeneeded = () => {
      for (const name of ['models', 'datasets', 'state'])
        if (!r.result.objectStoreNames.contains(name)) r.result.createObjectStore(name);
    };
    // another tab deleting the database ("Forget me" there) is not kept waiting, nor its deletion undone
    opened = request(r).then((d) => {
      d.onversionchange = (e) => {
        d.close();
        opened = null;
        if (e.newVersion === null) deletedElsewhere();
      };
      return d;
    });
  }
  return opened;
}

async function get(store, key) {
  const d = await db();
  return request(d.transaction(store).objectStore(store).get(key));
}

function committed(t) {
  return new Promise((resolve, reject) => {
    t.oncomplete = () => resolve();
    t.onerror = () => reject(t.error);
    t.onabort = () => reject(t.error || new Error('IndexedDB write aborted (storage full?)'));
  });
}

async function put(store, key, value) {
  const d = await db();
  const t = d.transaction(store, 'readwrite');
  t.objectStore(store).put(value, key);
  return committed(t);
}

const MODEL_PART = 8 << 20;

// The stored model's bytes, or undefined (none, or a part missing)
export async function getModel(sha256) {
  const head = await get('models', sha256);
  if (!head || !head.parts) return undefined;
  const bytes = new Uint8Array(head.size);
  for (let i = 0; i < head.parts; i++) {
    const part = await get('models', `${sha256}/${i}`);
    if (!part) return undefined;
    bytes.set(part, i * MODEL_PART);
  }
  return bytes;
}

// Every part and then the head, in one transaction: all or nothing
export async function putModel(sha256, bytes) {
  const d = await db();
  const t = d.transaction('models', 'readwrite'), models = t.objectStore('models');
  const parts = Math.ceil(bytes.length / MODEL_PART);
  for (let i = 0; i < parts; i++) {
    const part = bytes.slice(i * MODEL_PART, (i + 1) * MODEL_PART); // a view would store the whole buffer
    models.put(part, `${sha256}/${i}`);
    // put() made its own copy: detaching frees this one now, not at a later garbage collection
    // (where the browser has ArrayBuffer.transfer)
    part.buffer.transfer?.(0);
  }
  models.put({ size: bytes.length, parts }, sha256);
  return committed(t);
}
export const getDataset = (federation) => get('datasets', federation);
export const putDataset = (federation, dataset) => put('datasets', federation, dataset);
export const getState = async (federation) => (await get('state', federation)) || {};
export async function updateState(federation, changes) {
  const state = { ...(await getState(federation)), ...changes };
  await put('state', federation, state);
  return state;
}

export async function forget() {
  forgotten = true; // a write still under way (a round's prompts) must not make the database again
  tabs.postMessage('forgotten');
  if (opened) (await opened.catch(() => null))?.close();
  opened = null;
  await request(indexedDB.deleteDatabase(DB));
}
