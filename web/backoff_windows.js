// The page's reconnection windows (ms) by attempt since the last welcome, the
// last one for every later attempt: shared/fed/backoff.c's, written by
// `build/sdfed-backoff write web/backoff_windows.js`; the ctest
// backoff_windows fails when this file differs.
export const WINDOWS_MS = Object.freeze([1000, 2000, 4000, 8000, 16000, 30000]);
