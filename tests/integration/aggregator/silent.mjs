// A volunteer that joins and never reports: it prints each message it gets
// as one line ("welcome 3", "round_start 1", "wait round_in_progress", ...)
// and, with a round, closes its connection when that round starts.
//   node --experimental-websocket silent.mjs PORT [CLOSE_ON_ROUND]
const [port, closeOn] = process.argv.slice(2);
const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, 'sdfed.v1');
ws.onopen = () => ws.send(JSON.stringify({ type: 'hello', protocol: 'sdfed.v1', kind: 'silent' }));
ws.onmessage = (e) => {
  if (typeof e.data !== 'string') return;
  const m = JSON.parse(e.data);
  console.log(`${m.type} ${m.client_id ?? m.reason ?? m.round ?? ''}`);
  if (m.type === 'round_start' && closeOn !== undefined && m.round === Number(closeOn)) ws.close();
};
ws.onclose = () => { console.log('closed'); process.exit(0); };
