// The page's reconnection schedule (web/backoff.js) under Node: its delays
// the C's (build/sdfed-backoff delays prints shared/fed/backoff.c's on a grid
// of attempts, draws and floors), the windows of shared/fed/backoff.h (1, 2,
// 4, 8, 16 s, then 30 s), every delay in [floor, floor + window), the
// server's retry_after a floor used once, a welcome starting over, and 10,000
// pages that lost the server at once coming back spread over the window (no
// 100 ms slot with more than twice its share), also behind a floor. Draws
// come from a seeded generator here. Prints "backoff: N passed, M failed".
//   node backoff.mjs BUILD_DIR
import { execFileSync } from 'node:child_process';
import { backoff, delayMs, windowMs } from '../../web/backoff.js';

let passed = 0, failed = 0;
const check = (ok, what) => { if (ok) passed++; else { failed++; console.log(`FAIL: ${what}`); } };

// xorshift32 from a seed: a test's own reproducible uniform draws
function seeded(seed) {
  let x = (seed * 2654435761 + 1) >>> 0 || 1;
  return () => {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    return x / 4294967296;
  };
}

const CAP_MS = windowMs(Infinity);
const build = process.argv[2] || new URL('../../build', import.meta.url).pathname;
const cDelays = execFileSync(`${build}/sdfed-backoff`, ['delays'], { encoding: 'utf8' }).trim().split('\n');
const differing = cDelays.filter((line) => {
  const [attempt, u, floor, delay] = line.split(' ').map(Number);
  return delayMs(attempt, u, floor) !== delay;
});
check(cDelays.length > 1000 && differing.length === 0,
  `the page's delays are the C's on ${cDelays.length} points (differing: ${differing.slice(0, 3).join('; ')})`);
check([0, 1, 2, 3, 4, 5, 6, 40].map(windowMs).join() === '1000,2000,4000,8000,16000,30000,30000,30000',
  'windows 1, 2, 4, 8, 16 s, then the 30 s cap');
check(delayMs(0, 0) === 0 && delayMs(0, 0.999999) === 999 && delayMs(3, 0.5) === 4000 && delayMs(9, 0.999999) === 29999,
  'delay = floor(u x window), as in C');
check(delayMs(2, 0.25, 5000) === 6000 && delayMs(1, 0.5, -3) === 1000, 'retry_after is a floor; a negative one none');

const b = backoff(seeded(7)), again = backoff(seeded(7));
let inWindow = true, same = true;
for (let a = 0; a < 12; a++) {
  const d = b.next();
  inWindow &&= d >= 0 && d < windowMs(a);
  same &&= d === again.next();
}
check(inWindow, "each try's delay lies in its window");
check(same, 'the same draws give the same delays');
b.serverAsked(4000);
b.serverAsked(2500);
b.serverAsked(undefined); // a message without retry_after
const floored = b.next(), after = b.next();
check(floored >= 4000 && floored < 4000 + CAP_MS, `the largest retry_after asked is the floor (${floored})`);
check(after < CAP_MS, 'the floor is used once');
b.reset();
check(b.attempt === 0 && b.next() < 1000, 'a welcome starts from the first window');

for (const [attempt, floor] of [[0, 0], [3, 0], [6, 5000]]) {
  const window = windowMs(attempt), slots = window / 100, count = new Array(slots).fill(0);
  let bounded = true;
  for (let c = 0; c < 10000; c++) {
    const client = backoff(seeded(c + 1));
    for (let a = 0; a < attempt; a++) client.next();
    client.serverAsked(floor);
    const d = client.next() - floor;
    bounded &&= d >= 0 && d < window;
    if (d >= 0 && d < window) count[Math.floor(d / 100)]++;
  }
  const most = Math.max(...count);
  check(bounded, `attempt ${attempt}, floor ${floor}: every delay in [floor, floor + window)`);
  check(most <= 2 * 10000 / slots && count[0] > 0 && count[slots - 1] > 0,
    `attempt ${attempt}, floor ${floor}: 10,000 pages spread over ${window} ms (busiest 100 ms: ${most})`);
}
console.log(`backoff: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
