// The aggregators protocol_doc.mjs and edge.mjs play against: a fresh
// WORK_DIR with protocol_task.json in it (3 clients, 2 a round, 2 rounds,
// the model given), and a function that starts a server on it, on
// loopback, on a port the kernel chooses, with an empty state of its own
// (tests/lib/port_file.mjs); --secure-task serves the task with secure
// aggregation.
//   const start = servers(AGGREGATOR, MODEL, WORK_DIR); const server = await start(NAME, OPTIONS);
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

import { startAggregator } from '../../lib/port_file.mjs';

// The option --secure-task (not the server's) serves the same task with
// secure aggregation (docs/protocol.md, "Secure rounds").
const SECURE = { secure_aggregation: { dropout_rate: 0.33, corrupt_rate: 0.05, clip: 0.5, quant_bits: 16, ring_bits: 32, max_weight: 4096 } };

export function servers(aggregator, model, work) {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const task = JSON.parse(readFileSync(new URL('protocol_task.json', import.meta.url), 'utf8'));
  writeFileSync(`${work}/task.json`, JSON.stringify({ ...task, model }));
  writeFileSync(`${work}/task-secure.json`, JSON.stringify({ ...task, model, ...SECURE }));
  return (name, options) => {
    const secure = options.includes('--secure-task');
    return startAggregator(aggregator, `${work}/task${secure ? '-secure' : ''}.json`, work, name,
      options.filter((o) => o !== '--secure-task'));
  };
}
