// When the page connects again: exponential backoff with full jitter, capped,
// over its tries since the last session the server welcomed, with the
// server's retry_after (ms, docs/protocol.md) as a floor. The same schedule
// as the headless client's (shared/fed/backoff.h):
//   window(attempt) = min(30000, 1000 * 2^attempt)
//   delay           = retryAfter + floor(u * window(attempt)),  u in [0, 1)
// u comes from `random` (Math.random in the page; a test passes its own).
export const BASE_MS = 1000;
export const CAP_MS = 30000;

export function windowMs(attempt) {
  return Math.min(CAP_MS, BASE_MS * 2 ** Math.min(attempt, 30));
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
