// Whether this device's memory holds the federation's model, and in which
// build: the page renderer's peak memory measured for the models of the
// table in docs/bench.md ("What a model costs a volunteer",
// tools/bench/volunteer.sh),
// with one thread and with two, against half of navigator.deviceMemory (a
// phone closes a tab well before it has all of the memory). A model between
// the table's download sizes is estimated on the line between its two
// neighbours, a smaller one as the smallest, a larger one in proportion to
// the largest. Decided before the model is downloaded: the page knows its
// size from the federation's description. Used by app.js, and under Node
// by tests/browser/memory.mjs.

// download (bytes), peak MiB with the single-threaded build, with the threaded one (2 threads)
export const MEASURED = [
  { model: 'tiny default, Q8_0', bytes: 1.5e6, single: 163, threaded: 176 },
  { model: 'ViT-B/16, Q8_0', bytes: 162e6, single: 352, threaded: 489 },
  { model: 'ViT-B/32, Q8_0', bytes: 163e6, single: 367, threaded: 524 },
  { model: 'ViT-B/16, F32', bytes: 600e6, single: 1315, threaded: 1358 },
  { model: 'ViT-B/32, F32', bytes: 607e6, single: 1370, threaded: 1383 },
];
export const TAB_SHARE = 0.5; // of the device's memory, what the page may count on

// A model of `bytes` -> {single, threaded}: its peak MiB in each build.
export function peakMiB(bytes) {
  const first = MEASURED[0], last = MEASURED[MEASURED.length - 1];
  if (bytes <= first.bytes) return { single: first.single, threaded: first.threaded };
  if (bytes >= last.bytes)
    return { single: last.single * (bytes / last.bytes), threaded: last.threaded * (bytes / last.bytes) };
  const hi = MEASURED.findIndex((m) => m.bytes >= bytes), a = MEASURED[hi - 1], b = MEASURED[hi];
  const t = (bytes - a.bytes) / (b.bytes - a.bytes);
  return { single: a.single + t * (b.single - a.single), threaded: a.threaded + t * (b.threaded - a.threaded) };
}

// Whether the image tower's matrices are packed once (web/worker.js's
// packWeights: the same features sooner, a tenth of a ViT-B/16 Q8_0 image in
// Chromium, for a copy of the matrices in their packed layout): where the
// budget holds the build's peak and the whole download again, more than
// the packed copy takes (the image tower's matrices, 1.18 times their Q8_0
// bytes: 108 MB of ViT-B/16's 162).
const packFits = (peak, bytes, budget) => peak + bytes / 2 ** 20 <= budget;

// A model of `bytes` on a device of deviceGiB (navigator.deviceMemory;
// undefined where the browser does not tell) ->
//   {threads: whether the threaded build may run, refused: whether the
//    model is not to be downloaded, pack: whether its image tower's
//    matrices are packed once (never where the memory is not said),
//    said: the choice in words}
export function fitMemory(bytes, deviceGiB) {
  const peak = peakMiB(bytes), mib = (x) => `${Math.ceil(x)} MiB`;
  if (!(deviceGiB > 0))
    return { threads: true, refused: false, pack: false, said: 'this browser does not say how much memory the ' +
      `device has; the model needs about ${mib(peak.threaded)} with threads, ${mib(peak.single)} without` };
  const budget = deviceGiB * 1024 * TAB_SHARE, device = `this device has about ${Number(deviceGiB.toFixed(2))} GiB of memory`;
  // the choice of build, and whether its peak leaves room to pack
  const runs = (threads, peakOfBuild, said) => {
    const pack = packFits(peakOfBuild, bytes, budget);
    return { threads, refused: false, pack, said: said + (pack ? `; the image tower's matrices are packed once, ` +
      `for speed (under ${mib(bytes / 2 ** 20)} more)` : '') };
  };
  if (peak.threaded <= budget)
    return runs(true, peak.threaded, `${device}: enough for the threaded build (about ${mib(peak.threaded)} with ` +
      'this model)');
  if (peak.single <= budget)
    return runs(false, peak.single, `${device}, too little for the threaded build (about ${mib(peak.threaded)} ` +
      `with this model): the single-threaded one runs (about ${mib(peak.single)})`);
  return { threads: false, refused: true, pack: false, said: `This federation's model needs about ${mib(peak.single)} of ` +
    `memory while it runs, and ${device} (a page can count on about half), so it is not downloaded. Join from a ` +
    'computer or a device with more memory.' };
}
