// The page's state, and the parts of the page every module shows through:
// the stage (body's data-stage, which the CSS and the browser test read),
// the error lines and the progress bars; and the federation's join key,
// kept once the server accepts it.

export const $ = (id) => document.getElementById(id);

// The join key, when the federation's host gives one: in the page's address
// (https://HOST/?key=KEY), else the one kept in this browser (localStorage)
// from an earlier visit; sent with every request (keyed) and in hello, and
// kept for the visits after only once the server has accepted it.
const KEY_ITEM = 'sdfed-join-key';
function keptJoinKey() {
  try {
    return localStorage.getItem(KEY_ITEM);
  } catch (e) { // a browser that keeps nothing: the address's alone
    return null;
  }
}
export const joinKey = new URLSearchParams(location.search).get('key') || keptJoinKey();
export function forgetJoinKey() {
  try { localStorage.removeItem(KEY_ITEM); } catch (e) { /* nothing was kept */ }
}
// The server's answer to the join key: accepted, it is kept for the visits
// after; refused (why: the server's words), it is kept no longer and the
// Join hint says so. A wrong key kept would be sent on every visit, each
// time counted toward this address's lock-out.
export function joinKeyAccepted() {
  if (!joinKey || keptJoinKey() === joinKey) return;
  try { localStorage.setItem(KEY_ITEM, joinKey); } catch (e) { /* a browser that keeps nothing */ }
}
export function joinKeyRefused(why) {
  if (joinKey && keptJoinKey() === joinKey) forgetJoinKey();
  $('join-hint').textContent = joinKey ? `This page's join key was refused (${why}); open the address the ` +
    'federation\'s host gave you (it ends in ?key=…).' : 'This federation needs its join key: open the address its ' +
    'host gave you (it ends in ?key=…).';
}
// fetch's options with the join key presented (Authorization: Bearer KEY)
export const keyed = (options = {}) =>
  (joinKey ? { ...options, headers: { ...options.headers, Authorization: `Bearer ${joinKey}` } } : options);

export const page = {
  description: null, // GET /task: task, model, classes, global_shape, mode
  federation: null, // this federation's id in IndexedDB
  stored: {}, // its IndexedDB state: token, shard, index, params, history, joined, device ({stepMs})
  info: null, // the worker's: threaded, threads, kernels
  device: null, // with a task's local_prompt: {stepMs, plan} (training.js fitDevice; device.js measures again)
  compute: null, // the worker (compute.js), once the model is in it
  dataset: null, // {source ('demo', else the volunteer's own), shard, features, labels, test, skipped, photos}
  joined: false,
  forgotten: false, // reloaded after "Forget me": nothing loaded until the volunteer acts (app.js)
  // () => a promise of the worker with the model and the task: the first
  // call starts the page's start-up (app.js), later calls wait for it
  ready: null,
};

// e (an Error, or null to clear) shown in the error line with this id:
// the one beside the control that failed, or the page's own at the bottom.
export function showError(e, id = 'error') {
  const box = $(id);
  box.textContent = e ? (e.message || String(e)) : '';
  box.hidden = !e;
}

export function setStage(stage) { document.body.dataset.stage = stage; }

export function showProgress(id, done, total, label) {
  const box = $(id);
  box.hidden = false;
  box.firstElementChild.style.width = `${total ? (100 * done) / total : 0}%`;
  box.lastElementChild.textContent = label;
}

// Where the worker computes image features ('GPU (WebGPU)', 'CPU, 2
// threads') and why not on the GPU, from its init and encode answers.
export function showFeaturesOn(on, why) {
  $('features-on').textContent = why ? `${on} (not on the GPU: ${why})` : on;
}

// For controls the volunteer can use before the worker has the model.
export function requireModel() {
  if (page.compute) return;
  throw new Error(page.forgotten ? 'nothing is loaded since "Forget me": add images or take a demo share first' :
    'the model is still loading; try again in a moment');
}
