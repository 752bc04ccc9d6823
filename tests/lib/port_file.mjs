// The port of an aggregator started with --port 0 --port-file FILE (the
// kernel chooses it): the number the server writes to FILE once it
// listens. Waits up to SECONDS; null when the process exits first.
import { readFileSync } from 'node:fs';

export async function listeningPort(file, child, seconds = 30) {
  for (const end = Date.now() + seconds * 1000; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
    if (child.exitCode !== null || child.signalCode !== null) return null;
    try {
      const port = Number(readFileSync(file, 'utf8'));
      if (port > 0) return port;
    } catch {
      // not written yet
    }
  }
  throw new Error(`the aggregator did not write ${file} in ${seconds} s`);
}
