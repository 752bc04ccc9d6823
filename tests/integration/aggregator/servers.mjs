// The aggregators protocol_doc.mjs and edge.mjs play against: a fresh
// WORK_DIR with protocol_task.json in it (3 clients, 2 a round, 2 rounds,
// the model given), and a function that starts a server on it, on
// loopback, on a port the kernel chooses, with an empty state of its own
// (tests/lib/port_file.mjs).
//   const start = servers(AGGREGATOR, MODEL, WORK_DIR); const server = await start(NAME, OPTIONS);
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

import { startAggregator } from '../../lib/port_file.mjs';

export function servers(aggregator, model, work) {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const task = JSON.parse(readFileSync(new URL('protocol_task.json', import.meta.url), 'utf8'));
  writeFileSync(`${work}/task.json`, JSON.stringify({ ...task, model }));
  return (name, options) => startAggregator(aggregator, `${work}/task.json`, work, name, options);
}
