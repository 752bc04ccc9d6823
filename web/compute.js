// The computing worker (worker.js) behind promises:
//   const compute = startCompute(onError);
//   const result = await compute.call(op, args, (done, total) => ..., transfer);
// (a refused operation rejects with an Error whose code names the refusal,
// when the worker gave one: 'secagg_both_sets', ...)
// Used by the page (app.js), and by the browser test and benchmark through
// import('/compute.js') in the page.
export function startCompute(onError = () => {}) {
  const worker = new Worker('/worker.js');
  const pending = new Map();
  let next = 1;
  worker.onmessage = ({ data }) => {
    const p = pending.get(data.id);
    if (!p) return;
    if (data.progress) return p.onProgress && p.onProgress(data.progress.done, data.progress.total);
    pending.delete(data.id);
    if (data.error) p.reject(Object.assign(new Error(data.error), data.code ? { code: data.code } : {}));
    else p.resolve(data.result);
  };
  worker.onerror = (e) => onError(new Error(`the computing worker failed: ${e.message}`));
  return {
    call(op, args = {}, onProgress = null, transfer = []) {
      const id = next++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject, onProgress });
        worker.postMessage({ id, op, ...args }, transfer);
      });
    },
    // the worker ends once the operation it is in returns (its GPU memory
    // given back: gpu.js); no call settles after this
    stop() {
      pending.clear();
      worker.postMessage({ id: 0, op: 'stop' });
    },
  };
}
