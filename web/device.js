// This device measured again when its steps drift: a round's steps take
// more than 1.5 x or less than 0.67 x what was expected (the first round
// after the first measurement, then that scaled by how each new
// measurement changed the step time at the plan's length). The rule is
// shared/fed/local_prompt.h's sdfed_step_watch, the headless client's too,
// kept by the wasm in the worker. The new figures go with the next
// metrics; the length and the steps a round stay as chosen, and IndexedDB
// keeps the first figures (a reload chooses the same length).
import { page } from './page.js';

// After a round whose steps took roundStepMs each: whether it measured again.
export async function remeasureIfDrifted(roundStepMs) {
  const lp = page.description.task.local_prompt;
  if (!lp || !page.device) return false;
  if (!(await page.compute.call('watchRound', { roundMs: roundStepMs }))) return false;
  const at = lp.lengths.indexOf(page.device.plan.length);
  const { stepMs } = await page.compute.call('measure', { lengths: lp.lengths });
  await page.compute.call('watchMeasured', { beforeMs: page.device.stepMs[at], nowMs: stepMs[at] });
  page.device = { ...page.device, stepMs };
  return true;
}
