// What the page keeps in this browser (IndexedDB database "sdfed"); none of
// it is ever uploaded:
//   models    model files by sha256 (downloaded once, checked on every load)
//   datasets  the volunteer's image features and labels, per federation
//   state     per federation: the client token, the demo shard or client
//             index, the saved prompts (global + private local), the
//             accuracy history
// forget() deletes the whole database.

const DB = 'sdfed', VERSION = 1;
let opened = null;

function request(r) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

function db() {
  if (!opened) {
    const r = indexedDB.open(DB, VERSION);
    r.onupgradeneeded = () => {
      for (const name of ['models', 'datasets', 'state'])
        if (!r.result.objectStoreNames.contains(name)) r.result.createObjectStore(name);
    };
    opened = request(r);
  }
  return opened;
}

async function get(store, key) {
  const d = await db();
  return request(d.transaction(store).objectStore(store).get(key));
}

async function put(store, key, value) {
  const d = await db();
  const t = d.transaction(store, 'readwrite');
  t.objectStore(store).put(value, key);
  return new Promise((resolve, reject) => {
    t.oncomplete = () => resolve();
    t.onerror = () => reject(t.error);
    t.onabort = () => reject(t.error || new Error('IndexedDB write aborted (storage full?)'));
  });
}

export const getModel = (sha256) => get('models', sha256);
export const putModel = (sha256, bytes) => put('models', sha256, bytes);
export const getDataset = (federation) => get('datasets', federation);
export const putDataset = (federation, dataset) => put('datasets', federation, dataset);
export const getState = async (federation) => (await get('state', federation)) || {};
export async function updateState(federation, changes) {
  const state = { ...(await getState(federation)), ...changes };
  await put('state', federation, state);
  return state;
}

export async function forget() {
  if (opened) (await opened).close();
  opened = null;
  await request(indexedDB.deleteDatabase(DB));
}
