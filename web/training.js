// This volunteer's prompts in the worker: set up for the federation's task
// with the client index and the prompts kept in IndexedDB, then trained
// round by round on the server's global prompt (the update and the accuracy
// sent back, the prompts and the accuracy per round kept).
import { drawChart } from './chart.js';
import { remeasureIfDrifted } from './device.js';
import { $, page, setStage, showProgress } from './page.js';
import * as store from './store.js';

// The client's index picks its random stream and, for tasks with varied
// lengths, its personal prompt's length: the demo shard, or a number drawn once.
export function clientIndex() {
  if (page.stored.shard !== undefined) return page.stored.shard;
  return page.stored.index;
}

// The adaptive rule's length is chosen with the images (fitDevice), which
// restores the stored prompts then.
const adaptive = () => (page.description.task.local_prompt || {}).rule === 'adaptive';

export async function setTask() {
  const d = page.description;
  await page.compute.call('setTask', { task: d.task, index: clientIndex() });
  if (page.stored.params && !adaptive()) {
    try {
      await page.compute.call('loadParams', { bytes: page.stored.params });
    } catch (e) {
      page.stored = await store.updateState(page.federation, { params: null }); // another task's prompts: start afresh
    }
  }
}

// With a task's local_prompt, once the images are set: this device's step
// times (measured once, then kept in IndexedDB), the local prompt length and
// the steps a round the core's rule gives for them, the stored prompts
// restored at that length, and the choice said in words.
export async function fitDevice() {
  const lp = page.description.task.local_prompt;
  if (!lp) return;
  const kept = page.stored.device;
  const { stepMs, plan } = await page.compute.call('device', { lengths: lp.lengths, stepMs: kept && kept.stepMs });
  if (!kept) page.stored = await store.updateState(page.federation, { device: { stepMs } });
  page.device = { stepMs, plan };
  if (page.stored.params && adaptive()) {
    try {
      await page.compute.call('loadParams', { bytes: page.stored.params });
    } catch (e) {
      page.stored = await store.updateState(page.federation, { params: null }); // other images, another length
    }
  }
  const ms = stepMs[lp.lengths.indexOf(plan.length)];
  const why = !adaptive() ? `the federation's ${lp.rule} rule` : plan.steps < plan.epochSteps ?
    `a whole pass over your images (${plan.epochSteps} steps) does not fit the ${lp.budget_s} s a round gives, ` +
    'so it trains for that time' : `the longest that fits the ${lp.budget_s} s a round gives`;
  $('device').textContent = `This device: ${ms.toFixed(0)} ms a step → a local prompt of ${plan.length} tokens, ` +
    `${plan.steps} steps a round (${why}${kept ? '; measured on your first visit' : ''}).`;
  $('device').hidden = false;
}

// Another demo shard, or none (the volunteer's own images): another client
// index, so the prompts start afresh.
export async function changeShard(shard) {
  page.stored = await store.updateState(page.federation, { shard, params: null });
  await setTask();
}

// The prompts and the accuracies per round as stored now (another tab of
// this browser may have trained rounds since this one read them), in the
// worker and the chart.
export async function restorePrompts() {
  page.stored = await store.getState(page.federation);
  await setTask();
  drawChart(page.stored.history);
}

// An accuracy measured: the worker's is NaN without a held-out image.
const tested = (accuracy) => !Number.isNaN(accuracy);

// The global parameters of a round: train, upload (send), report, keep. A
// secure round (secure-round.js) uploads nothing here and reports no
// metrics (the server knows no one's update): its masked input goes when
// the server asks; the samples the steps used are returned for it.
export async function trainRound(round, frame, send, { secure = false } = {}) {
  setStage('training');
  const r = await page.compute.call('round', { frame, secure }, (done, total) =>
    showProgress('round-progress', done, total, `round ${round}: training step ${done} of ${total}`), [frame]);
  if (!secure) {
    send(r.update.buffer);
    // with a local_prompt, the device's figures too: step times, threads, kernels
    const device = page.device ?
      { step_ms: page.device.stepMs, threads: page.info.threads, kernels: page.info.kernels } : {};
    // no test image (accuracy NaN): the protocol's 0 beside test_samples 0, which says there is none
    send(JSON.stringify({ type: 'metrics', round, accuracy: tested(r.accuracy) ? r.accuracy : 0,
      loss: r.losses ? r.losses.total : 0, test_samples: page.dataset.test.reduce((a, b) => a + b, 0), ...device }));
  }
  const params = await page.compute.call('saveParams');
  const history = (page.stored.history || []).filter((h) => h.round !== round)
    .concat([{ round, accuracy: tested(r.accuracy) ? r.accuracy : null }]);
  page.stored = await store.updateState(page.federation, { params, history });
  showProgress('round-progress', r.steps, r.steps, `round ${round}: ${r.steps} steps, ` +
    `${r.stepMs.toFixed(0)} ms per step; ${tested(r.accuracy) ? `your accuracy ${(100 * r.accuracy).toFixed(1)}%` :
      'no accuracy (no test image)'}`);
  drawChart(history);
  await remeasureIfDrifted(r.stepMs); // the next metrics carry the new figures (device.js)
  setStage(`trained-${history.length}`);
  return r.samples;
}

// After a reload, prompts trained in an earlier round: which round, and
// their accuracy on the held-out images now.
export async function showRestored() {
  const history = page.stored.history || [];
  if (!page.dataset || !page.stored.params || !history.length) return;
  const accuracy = await page.compute.call('accuracy');
  $('resume-status').hidden = false;
  $('resume-status').textContent = `Welcome back: your personal prompt from round ` +
    `${history[history.length - 1].round} is restored; ` + (tested(accuracy) ?
    `its accuracy on your held-out images is ${(100 * accuracy).toFixed(1)}%.` :
    'you have no held-out image to measure its accuracy on.');
}
