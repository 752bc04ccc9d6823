// The port of an aggregator started with --port 0 --port-file FILE (the
// kernel chooses it): the number the server writes to FILE once it
// listens. Waits up to SECONDS; null when the process exits first. And an
// aggregator started that way on loopback.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';

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

// sdfed-aggregator on 127.0.0.1, a port the kernel chooses, with the task
// TASK, an empty state WORK/NAME.state and OPTIONS; its log in WORK/NAME.log.
// { port, child, stop() }; throws when it does not start.
export async function startAggregator(aggregator, task, work, name, options = []) {
  const log = openSync(`${work}/${name}.log`, 'w');
  const child = spawn(aggregator, ['--task', task, '--port', '0', '--port-file', `${work}/${name}.port`, '--host',
    '127.0.0.1', '--state', `${work}/${name}.state`, ...options], { stdio: ['ignore', log, log] });
  closeSync(log);
  const port = await listeningPort(`${work}/${name}.port`, child);
  if (!port) throw new Error(`the aggregator with ${options.join(' ')} did not start (${work}/${name}.log)`);
  return { port, child, stop: () => child.kill('SIGKILL') };
}
