// When the page connects again: exponential backoff with full jitter, capped,
// over its tries since the last session the server welcomed, with the
// server's retry_after (ms, docs/protocol.md) as a floor. The headless
// client's schedule (shared/fed/backoff.h), whose windows backoff_windows.js
// holds as the C computes them:
//   delay = retryAfter + floor(u * window(attempt)),  u in [0, 1)
// u comes from `random` (Math.random in the page; a test passes its own).
import { WINDOWS_MS } from './backoff_windows.js';

export function windowMs(attempt) {
  return WINDOWS_MS[Math.min(attempt, WINDOWS_MS.length - 1)];
}

export function delayMs(attempt, u, retryAfterMs = 0) {
  return Math.max(0, retryAfterMs) + Math.floor(u * windowMs(attempt));
}

// A client's schedule: next() is the wait before the next try (the floor
// used up), serverAsked(ms) keeps the largest floor asked for, reset() after
// a welcome starts from the first window again.
export function backoff(random = Math.random) {
  let attempt = 0, floor = 0;
  return {
    get attempt() { return attempt; },
    serverAsked(ms) { if (Number.isFinite(ms) && ms > floor) floor = ms; },
    next() {
      const d = delayMs(attempt, random(), floor);
      floor = 0;
      attempt++;
      return d;
    },
    reset() { attempt = 0; },
  };
}
