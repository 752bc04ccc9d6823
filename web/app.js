// The volunteer's page's entry: binds the controls to the modules that do
// the work, then starts the page (the federation, the stored state, the
// model in the worker, the stored images; after a reload, the rounds it was
// in). After "Forget me" the reloaded page starts only the federation's
// description, and the rest when the volunteer adds images or takes a demo
// share, as on a first visit.
import { bindCamera } from './camera.js';
import { drawChart } from './chart.js';
import { startCompute } from './compute.js';
import { join, leave } from './connection.js';
import { addFiles, removeImages, takeDemoShard, useDataset } from './dataset.js';
import { dropZone } from './drop.js';
import { describe, loadModel, pollStatus } from './federation.js';
import { fitMemory } from './memory.js';
import { $, forgetJoinKey, page, setStage, showError, showFeaturesOn, showProgress } from './page.js';
import * as store from './store.js';
import { setTask, showRestored } from './training.js';
import { tryImage } from './try-it.js';

// Set in this tab's sessionStorage by "Forget me" for the page it reloads:
// nothing is downloaded or stored until the volunteer acts.
const FORGOTTEN = 'sdfed-forgotten';

async function forgetMe() {
  if (!confirm('Delete everything this page stored (model, features, prompts, token) and disconnect?')) return;
  leave();
  if (page.compute) page.compute.stop();
  await store.forget();
  sessionStorage.setItem(FORGOTTEN, '1');
  forgetJoinKey(); // the address the host gave still has it
  location.reload();
}

// The federation's model on this device's memory (memory.js): the build
// it runs in, or refused before its download.
const memoryFit = () => fitMemory(page.description.model.size, navigator.deviceMemory);

// Everything after the description: the stored state (or a client index
// drawn once), the model (downloaded once, if this device holds it) in the
// worker with the task, the stored images and prompts, the federation
// rejoined.
async function start(described) {
  await described;
  const memory = memoryFit();
  if (memory.refused) throw new Error(memory.said);
  sessionStorage.removeItem(FORGOTTEN);
  page.forgotten = false;
  $('forgotten').hidden = true;
  page.stored = await store.getState(page.federation);
  if (page.stored.index === undefined) {
    const index = Math.floor(Math.random() * page.description.task.clients);
    page.stored = await store.updateState(page.federation, { index });
  }
  const model = await loadModel();
  page.compute = startCompute(showError);
  // handed over, not copied: the page keeps no use for the bytes
  // in the address (tests): gpu=agrees, the GPU for image features whenever
  // its check agrees, however slow (SwiftShader's); lose-gpu-after=N, the GPU
  // device destroyed after N images on it, as a lost device would be
  const address = new URLSearchParams(location.search);
  const loseGpuAfter = Number(address.get('lose-gpu-after')) || undefined;
  const gpu = address.get('gpu') === 'agrees' ? 'agrees' : 'faster';
  // the WebAssembly build's download, after the model's (on a slow network
  // it takes as long)
  const loading = (got, total) => showProgress('model-progress', got, total, total ?
    `loading the WebAssembly build: ${(got / 1e6).toFixed(1)} of ${(total / 1e6).toFixed(1)} MB` :
    'loading the WebAssembly build…');
  loading(0, 0);
  const info = page.info = await page.compute.call('init', { model: model.buffer, singleThreaded: !memory.threads,
    gpu, loseGpuAfter, packWeights: memory.pack }, loading, [model.buffer]);
  showProgress('model-progress', 1, 1, 'the model and the WebAssembly build are ready');
  $('model').textContent += `; running in WebAssembly ${info.threads > 1 ? `with ${info.threads} threads` :
    'on one thread'}`;
  showFeaturesOn(info.featuresOn, info.featuresWhy);
  await setTask();
  drawChart(page.stored.history);
  const dataset = await store.getDataset(page.federation);
  if (dataset) await useDataset(dataset);
  else setStage('empty');
  await showRestored();
  if (page.stored.joined && page.dataset) join(); // a reload resumes the federation
}

async function main() {
  drawChart();
  const dataError = (e) => showError(e, 'data-error');
  $('demo').onclick = () => takeDemoShard().catch(dataError);
  $('remove-images').onclick = () => removeImages().catch(dataError);
  $('join').onclick = join;
  $('forget').onclick = () => forgetMe().catch(showError);
  // "Forget me" in another tab of this browser: this one leaves too, and reloads as that one did
  store.onForgottenElsewhere(() => {
    leave();
    if (page.compute) page.compute.stop();
    sessionStorage.setItem(FORGOTTEN, '1');
    location.reload();
  });
  // a chosen folder's files: their paths below it (webkitRelativePath names the folder first)
  const belowFolder = (f) => f.webkitRelativePath.slice(f.webkitRelativePath.indexOf('/') + 1);
  // (the input emptied, so that choosing the same files again is a choice too)
  $('files').onchange = (e) => {
    const files = Array.from(e.target.files);
    e.target.value = '';
    addFiles(files.map((f) => ({ file: f, path: f.name })), '').catch(dataError);
  };
  $('folder').onchange = (e) => {
    const files = Array.from(e.target.files), root = files.length ? files[0].webkitRelativePath.split('/')[0] : '';
    e.target.value = '';
    addFiles(files.map((f) => ({ file: f, path: belowFolder(f) })), root).catch(dataError);
  };
  dropZone($('drop'), (files, root) => addFiles(files, root).catch(dataError));
  const tryError = (e) => showError(e, 'try-error');
  dropZone($('try-drop'), (files) => files.length && tryImage(files[0].file).catch(tryError));
  $('try-file').onchange = (e) => e.target.files.length && tryImage(e.target.files[0]).catch(tryError);

  const described = describe();
  let starting = null;
  page.ready = () => {
    if (!starting) starting = start(described);
    return starting;
  };
  await described;
  bindCamera();
  const memory = memoryFit();
  $('memory').textContent = memory.said;
  pollStatus();
  if (memory.refused) {
    $('join-hint').textContent = 'This device cannot run the model (said above).';
    showError(new Error(memory.said));
    setStage('refused');
    return;
  }
  $('demo').disabled = false; // takes the share once the model is ready
  if (sessionStorage.getItem(FORGOTTEN)) {
    page.forgotten = true;
    $('forgotten').hidden = false;
    setStage('forgotten');
    return;
  }
  await page.ready();
}

main().catch((e) => { showError(e); setStage('error'); });
