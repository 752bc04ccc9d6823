// The page's side of a secure round on the wire (docs/protocol.md, "Secure
// rounds"), as the headless client takes it (tools/client/secure.c): its
// keys after round_start, then training, then each of the server's requests
// answered in order through the worker's secagg ops (secagg.js), every
// message in an SDFS frame the wasm writes and checks; a request it must
// not answer refused with secagg_refusal and its code. The prompt never
// leaves in the clear: the worker makes no update frame in a secure round.
import { $, page } from './page.js';
import { clientIndex, trainRound } from './training.js';

// each server request and the message that answers it
const ANSWER = { share_request: 'shares', masked_request: 'masked', unmask_request: 'unmask' };
// what the page says once it sent each message
const SAID = { advertise: 'keys sent', shares: 'shares sent', masked: 'masked prompt sent',
               unmask: 'unmasking: shares for the sum sent' };
// the code of a refusal the worker gives none for: the request could not be
// read, or (the masked input) a pair relayed to it did not open
const REFUSED_AS = { share_request: 'secagg_bad_request', masked_request: 'secagg_auth_failed',
                     unmask_request: 'secagg_bad_request' };

// the round this page is in: {round, last: its last message {kind, frame,
// sent: whether it went}, resent (the messages sent again on this socket
// after the server came back and not answered yet: each the server may
// refuse as one it had already, even once the page has answered a later
// request), samples (once trained), over (it refused, or a step failed),
// queue}. Every send is on the socket the request came on (send returns
// whether it went): an answer computed after that socket closed waits for
// the server to ask again on the next.
let current = null;

const say = (round, text) => { $('training-status').textContent = `Secure round ${round}: ${text}.`; };

// Whether a binary message is a secure frame: its magic, "SDFS" (fed/protocol.h).
export const isSecureFrame = (data) => {
  const b = new Uint8Array(data, 0, Math.min(4, data.byteLength));
  return b.length === 4 && String.fromCharCode(...b) === 'SDFS';
};

// its message of the round, in its frame; kept to be sent again if asked
// (none once the round is over)
async function answer(r, kind, message, send) {
  const frame = await page.compute.call('secureFrame', { message });
  if (r.over) return;
  r.last = { kind, frame, sent: send(frame) };
  say(r.round, r.last.sent ? SAID[kind] : `${SAID[kind].replace(/ sent$/, '')} ready; the connection closed before ` +
    'it went, so it goes when the server asks again');
}

// the last message sent again, asked for after the server came back: one
// the server may have had already awaits its refusal or acknowledgement
function sendAgain(r, send) {
  const before = r.last.sent;
  if (!send(r.last.frame)) return false;
  r.last.sent = true;
  if (before) r.resent.push(r.last.kind);
  return true;
}

function refuse(r, code, reason, send) {
  r.over = true;
  send(JSON.stringify({ type: 'secagg_refusal', round: r.round, code, message: reason }));
  throw new Error(`secure round ${r.round}: this page refused the server's request (${code}): ${reason}`);
}

// a step of the round after the ones before it; once one failed (its error
// shown by the caller) the page takes no further part in the round
function then(r, step) {
  const done = r.queue.then(() => (r.over ? null : step()));
  r.queue = done.catch(() => { r.over = true; });
  return done;
}

// round_start (m, with its secure settings) and the global frame after it:
// the plan checked against the server's, the keys advertised, then training.
// The same round again (the server came back) goes on where it was, its
// keys sent again if they were its last message; nothing sent before
// then is answered any more.
export function start(m, frame, send) {
  if (current && current.round === m.round) {
    current.resent = [];
    if (current.last && current.last.kind === 'advertise' && !current.over && sendAgain(current, send))
      say(current.round, 'keys sent again (the server came back)');
    return null;
  }
  const r = { round: m.round, last: null, resent: [], samples: null, over: false, queue: Promise.resolve() };
  current = r;
  const { n, k, t, min_inputs: minInputs } = m.secure;
  return then(r, async () => {
    const plan = await page.compute.call('secaggPlan', { n });
    if (plan.k !== k || plan.t !== t || plan.minInputs !== minInputs)
      refuse(r, 'secagg_bad_request', `the server's k ${k}, t ${t}, min_inputs ${minInputs} for ${n} clients are ` +
        `not the task's (${plan.k}, ${plan.t}, ${plan.minInputs})`, send);
    let keys;
    try {
      keys = await page.compute.call('secaggAdvertise', { n, round: m.round, client: clientIndex() });
    } catch (e) {
      refuse(r, e.code || 'secagg_bad_request', e.message, send);
    }
    await answer(r, 'advertise', keys.message, send);
    r.samples = await trainRound(m.round, frame, send, { secure: true });
    if (!r.over) say(r.round, 'keys sent; your prompt is trained and waits for the server\'s request to mask it');
  });
}

// A secure frame from the server: its request answered once the steps
// before it are done (the masked input once training is); asked again for
// what it last sent (after a restart), that is sent again.
export function request(data, send) {
  const r = current;
  if (!r) return null; // a request of a round this page is not in
  return then(r, async () => {
    let m;
    try {
      m = await page.compute.call('secureMessage', { frame: data });
    } catch (e) {
      refuse(r, 'secagg_bad_request', e.message, send);
    }
    if (m.round !== r.round) return; // a request of a round it left
    const kind = ANSWER[m.kind];
    if (!kind) refuse(r, 'secagg_bad_request', `a ${m.kind} message is no server's request`, send);
    if (r.last && r.last.kind === kind) {
      const again = r.last.sent;
      if (sendAgain(r, send)) say(r.round, `${SAID[kind]}${again ? ' again' : ''} (the server asked again)`);
      return;
    }
    if (m.kind === 'unmask_request') say(r.round, 'unmasking');
    const op = { share_request: 'secaggShare', masked_request: 'secaggMask', unmask_request: 'secaggUnmask' }[m.kind];
    let out;
    try {
      out = await page.compute.call(op, { request: m.message, samples: r.samples });
    } catch (e) {
      refuse(r, e.code || REFUSED_AS[m.kind], e.message, send);
    }
    await answer(r, kind, out.message, send);
  });
}

// Whether the server's refusal (its code) is of a message sent again that
// it had stored already (its keys: known; another: repeated) or whose stage
// it had left: the round goes on without it. Each message sent again takes
// one such refusal; an acknowledgement of it (secagg_ack: the server had
// not stored it) takes it too.
export function refusedAgain(code) {
  if (current === null || current.resent.length === 0 ||
      !['secagg_bad_keys', 'secagg_repeated', 'secagg_wrong_stage'].includes(code)) return false;
  current.resent.shift();
  return true;
}

// secagg_ack: the server stored the page's message of that stage; one sent
// again waits for no refusal any more.
export function acknowledged(round, stage) {
  if (current === null || current.round !== round) return;
  const i = current.resent.indexOf(stage);
  if (i >= 0) current.resent.splice(i, 1);
}

// round_end: the round is over (closed or abandoned), nothing more to send
// in it, not even an answer on its way.
export function end(round) {
  if (!current || current.round !== round) return;
  current.over = true;
  current = null;
}
