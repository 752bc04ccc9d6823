// The volunteer page's entry: binds the controls to the modules that do the
// work, then starts the page (the federation, the stored state, the model in
// the worker, the stored images; after a reload, the rounds it was in).
import { drawChart } from './chart.js';
import { startCompute } from './compute.js';
import { join, leave } from './connection.js';
import { addFiles, takeDemoShard, useDataset } from './dataset.js';
import { dropZone } from './drop.js';
import { describe, loadModel, pollStatus } from './federation.js';
import { $, forgetJoinKey, page, setStage, showError } from './page.js';
import * as store from './store.js';
import { setTask, showRestored } from './training.js';
import { tryImage } from './try-it.js';

async function forgetMe() {
  if (!confirm('Delete everything this page stored (model, features, prompts, token) and disconnect?')) return;
  leave();
  if (page.compute) page.compute.stop();
  await store.forget();
  forgetJoinKey(); // the address the host gave still has it
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
  page.stored = await store.getState(page.federation);
  if (page.stored.index === undefined) {
    const index = Math.floor(Math.random() * page.description.task.clients);
    page.stored = await store.updateState(page.federation, { index });
  }
  const model = await loadModel();
  page.compute = startCompute(showError);
  // handed over, not copied: the page keeps no use for the bytes
  const info = await page.compute.call('init', { model: model.buffer }, null, [model.buffer]);
  $('model').textContent += `; running in WebAssembly${info.threaded ? ' with threads' : ''}`;
  await setTask();
  $('demo').disabled = false;
  drawChart(page.stored.history);
  const dataset = await store.getDataset(page.federation);
  if (dataset) await useDataset(dataset);
  else setStage('empty');
  await showRestored();
  if (page.stored.joined && page.dataset) join(); // a reload resumes the federation
}

main().catch((e) => { showError(e); setStage('error'); });
