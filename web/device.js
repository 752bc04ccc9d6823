// This device measured again when its steps drift: a round's steps take
// more than 1.5 x or less than 0.67 x those of the first round after the
// last measurement (a round's steps hold work the probe's do not, so the
// two are not compared). The rule is shared/fed/local_prompt.h's
// sdfed_local_prompt_drifted, which the headless client uses, asked of the
// wasm in the worker. The new figures go with the next metrics; the length
// and the steps a round stay as chosen, and IndexedDB keeps the first
// figures (a reload chooses the same length).
import { page } from './page.js';

// After a round whose steps took roundStepMs each: whether it measured again.
export async function remeasureIfDrifted(roundStepMs) {
  const lp = page.description.task.local_prompt;
  if (!lp || !page.device) return false;
  if (!page.device.referenceMs) {
    page.device.referenceMs = roundStepMs;
    return false;
  }
  if (!(await page.compute.call('drifted', { referenceMs: page.device.referenceMs, roundMs: roundStepMs }))) return false;
  const { stepMs } = await page.compute.call('measure', { lengths: lp.lengths });
  page.device = { ...page.device, stepMs, referenceMs: 0 };
  return true;
}
