// A scripted sdfed.v1 connection for the aggregator's tests (Node 20's
// WebSocket: node --experimental-websocket): the messages received, in
// order, the next one that answers what the script sent, and the next one
// of any kind.
export function connect(url) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, 'sdfed.v1');
    ws.binaryType = 'arraybuffer';
    const inbox = [], waiters = [], all = [];
    let closed = false;
    ws.onmessage = (e) => {
      const m = typeof e.data === 'string' ? JSON.parse(e.data) : { type: 'binary', size: e.data.byteLength, data: e.data };
      all.push(m);
      const w = waiters.shift();
      if (w) w(m); else inbox.push(m);
    };
    let closeCode = 0, closeReason = '';
    ws.onclose = (e) => {
      closed = true;
      closeCode = e.code;
      closeReason = e.reason;
      while (waiters.length) waiters.shift()(null);
    };
    ws.onerror = () => reject(new Error('connection failed'));
    ws.onopen = () => resolve({
      send: (d) => ws.send(d),
      close: () => ws.close(),
      get closed() { return closed; },
      get closeCode() { return closeCode; }, // the close frame's status (1006: the connection ended without one)
      get closeReason() { return closeReason; },
      all, // every message received, in order
      // the next message, whatever it is (binary ones with their bytes), or
      // null once the connection is closed; an error after SECONDS without one
      receive: (seconds = 20) => new Promise((res, rej) => {
        if (inbox.length) return res(inbox.shift());
        if (closed) return res(null);
        const waiter = (m) => { clearTimeout(timer); res(m); };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          rej(new Error(`no message in ${seconds} s`));
        }, seconds * 1000);
        waiters.push(waiter);
      }),
      // the next message that is not a wait/round_start/binary, or null after 3 s or on close
      next: () => new Promise((res) => {
        const pick = (m) => (m && ['wait', 'round_start', 'binary', 'heartbeat'].includes(m.type) ? false : true);
        while (inbox.length) { const m = inbox.shift(); if (pick(m)) return res(m); }
        if (closed) return res(null);
        const timer = setTimeout(() => res(null), 3000);
        const waiter = (m) => { if (m && !pick(m)) { waiters.push(waiter); return; } clearTimeout(timer); res(m); };
        waiters.push(waiter);
      }),
    });
  });
}
