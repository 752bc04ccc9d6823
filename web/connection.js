// The page's one WebSocket to the aggregator (sdfed.v1, docs/protocol.md),
// from one tab of this browser at a time (the others stand by, saying so):
// joining, hello with the token kept in IndexedDB (a rejoin) and the join
// key, the server's messages shown, a round's global prompt handed to
// training, reconnecting until the volunteer leaves, after waits with jitter
// (backoff.js) that respect the server's retry_after, or at once when the
// device is back online; while the server cannot be reached the page says
// so, and that an update waits to be sent; a refused join key ends the
// joining (trying again could only lock this address out). A secure round's
// stages are secure-round.js's.
import { backoff } from './backoff.js';
import { restoreImages } from './dataset.js';
import { BAD_JOIN_KEY, BAD_TOKEN, NOT_IN_ROUND, RATE_LIMITED, WRONG_ROUND } from './errors.js';
import { pollStatus, showSecureAggregation } from './federation.js';
import { $, joinKey, joinKeyAccepted, joinKeyRefused, page, setStage, showError } from './page.js';
import * as secureRound from './secure-round.js';
import * as store from './store.js';
import { restorePrompts, trainRound } from './training.js';

let socket = null;
const retry = backoff();
let roundWaiting = null; // a round_start message whose parameters are to come
let training = null; // the round being trained now: { round, ends: the promise of its training }
// the last update sent, { round, update, stored }: sent again, not retrained, if its round comes back;
// stored once the server acknowledged it, forgotten when its round ends
let sent = null;
let left = false; // "forget me": never connect again
let welcomed = false; // this connection's hello was answered
let connectedAs = ''; // the badge's words while connected: "connected as volunteer 3"
let said = ''; // the training line's words from the server's last message
let reconnecting = null; // the timer of the next try to connect
// One tab of this browser takes part at a time: two would knock each other
// off, the server keeping one connection per token and closing the older
// with 1001 CONNECTED_AGAIN (docs/protocol.md). The tab that takes part
// holds the Web Locks API's lock PART_LOCK; another that joins waits for it
// (it takes part when the first closes) or, when the volunteer asks, takes
// it over. Without Web Locks (a page that is no secure context) the
// server's 1001 tells a tab that another took its place, and it waits to
// be asked.
const PART_LOCK = 'sdfed-taking-part', CONNECTED_AGAIN = 'this client connected again';
let elsewhere = false; // another tab takes part: this one does not connect
let holding = false; // this tab holds PART_LOCK
let waitingTurn = null; // the AbortController of this tab's request for PART_LOCK while another holds it

function showConnection(state, text) {
  const badge = $('connection');
  badge.dataset.state = state;
  badge.textContent = text;
}

function showTrainingStatus(text) {
  said = text;
  $('training-status').textContent = text;
}

// While the server cannot be reached, or the device is offline, the
// training line says so, and what waits: a round still being trained, or
// an update the server has not acknowledged (sent again if its round is
// still open when the connection is back).
function showUnreachable() {
  if (elsewhere) return;
  const why = navigator.onLine ? 'The server cannot be reached' : 'This device is offline';
  const waits = training ? `; round ${training.round} is still being trained, and its update waits to be sent` :
    sent && !sent.stored ? `; your update for round ${sent.round} waits to be sent` : '';
  $('training-status').textContent = `${why}${waits}. The page tries again by itself.`;
}

// whether message went (the socket is open)
function send(message) {
  if (!socket || socket.readyState !== WebSocket.OPEN) return false;
  socket.send(message);
  return true;
}

// A send on socket ws alone, whether it went: a secure round's answer to a
// request goes on the socket the request came on, never on the next one
// (after a restart the server asks again there; docs/protocol.md).
const sendOn = (ws) => (message) => {
  if (socket !== ws || ws.readyState !== WebSocket.OPEN) return false;
  ws.send(message);
  return true;
};

export function join() {
  page.joined = true;
  $('join').disabled = true;
  setStage('joined');
  store.updateState(page.federation, { joined: true }).then((s) => { page.stored = s; });
  takePart('if free');
}

// This tab takes part: how 'if free' (else it stands by and waits for its
// turn), 'in turn' (once the tab that takes part lets go: it closed, or was
// taken over) or 'now' (the volunteer asked: the tab that took part stands
// by). A tab that takes over from another first takes up what that one
// stored (its rounds' prompts, images added).
function takePart(how) {
  if (!navigator.locks || (how === 'now' && holding)) {
    taking();
    return;
  }
  if (waitingTurn) waitingTurn.abort();
  waitingTurn = how === 'in turn' ? new AbortController() : null;
  const options = how === 'now' ? { steal: true } : how === 'if free' ? { ifAvailable: true } :
    { signal: waitingTurn.signal };
  let held = false;
  navigator.locks.request(PART_LOCK, options, async (lock) => {
    if (!lock) {
      standBy();
      takePart('in turn');
      return undefined;
    }
    held = holding = true;
    if (how !== 'if free') await restorePrompts().then(restoreImages).catch(showError);
    taking();
    return new Promise(() => {}); // held while this tab is open, unless another takes it over
  }).catch((e) => {
    if (!held) { // this tab's own wait given up for taking over
      if (e.name !== 'AbortError') showError(e);
      return;
    }
    holding = false; // taken over by another tab at the volunteer's asking
    standBy();
    takePart('in turn');
  });
}

function taking() {
  elsewhere = false;
  $('take-part').hidden = true;
  connect();
}

// Another tab of this browser takes part: this one's connection closed
// and not made again until its turn, said in the badge and the training
// line, with the control that takes part here instead.
function standBy() {
  elsewhere = true;
  if (socket) socket.close(); // (its messages are dropped from now on, its close too)
  socket = null;
  showConnection('elsewhere', 'taking part in another tab');
  showTrainingStatus('This page is open in another tab of this browser, which takes part in the federation' +
    (navigator.locks ? '; this tab takes over when that one closes.' : '.'));
  $('take-part').hidden = false;
  $('take-part').onclick = () => takePart('now');
}

// For good: the server is told, and the page does not reconnect.
export function leave() {
  left = true;
  if (socket) {
    send(JSON.stringify({ type: 'leave' }));
    socket.close();
  }
}

function connect() {
  clearTimeout(reconnecting);
  if (socket || left || elsewhere) return;
  showConnection('connecting', 'connecting…');
  const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`, 'sdfed.v1');
  ws.binaryType = 'arraybuffer';
  socket = ws;
  welcomed = false;
  ws.onopen = () => {
    const hello = { type: 'hello', protocol: 'sdfed.v1', kind: 'browser', encoding: 'binary' };
    if (page.stored.token) hello.token = page.stored.token;
    if (joinKey) hello.join_key = joinKey;
    if (page.dataset && page.dataset.source === 'demo') hello.shard = page.dataset.shard;
    ws.send(JSON.stringify(hello));
  };
  ws.onmessage = (e) => {
    const work = typeof e.data === 'string' ? onMessage(JSON.parse(e.data)) : onFrame(e.data, sendOn(ws));
    Promise.resolve(work).catch(showError);
  };
  ws.onclose = (e) => {
    if (socket !== ws) return; // closed as this tab stood by
    socket = null;
    roundWaiting = null;
    // this page's token said hello on another connection: another tab (or window) of this browser took part;
    // connecting again at once would knock that one off in turn
    if (e.code === 1001 && e.reason === CONNECTED_AGAIN) return standBy();
    if (left || !page.joined) return showConnection('offline', 'not connected');
    const delay = retry.next();
    showConnection('offline', `${navigator.onLine ? 'connection lost' : 'this device is offline'}; retrying in ` +
      `${Math.ceil(delay / 1000)} s`);
    $('connection').dataset.retryMs = String(delay);
    $('connection').dataset.tries = String(retry.attempt);
    showUnreachable();
    reconnecting = setTimeout(connect, delay);
  };
}

// The device's network gone: said at once (its socket may stay open,
// silent, for long); back: the connection as it was, or a new one at once.
addEventListener('offline', () => {
  if (!page.joined || left || elsewhere) return;
  showConnection('offline', 'this device is offline');
  showUnreachable();
});
addEventListener('online', () => {
  if (!page.joined || left || elsewhere) return;
  if (!socket) {
    connect();
    return;
  }
  if (welcomed) showConnection('online', connectedAs);
  $('training-status').textContent = said;
});

async function onMessage(m) {
  switch (m.type) {
  case 'welcome':
    if (m.model.sha256 !== page.description.model.sha256 ||
        m.classes.join('\n') !== page.description.classes.join('\n')) {
      page.joined = false; // not this page's federation: stay out of it
      socket.close();
      showConnection('offline', 'another federation');
      throw new Error('the server now runs another federation (another model or classes); reload the page to ' +
        'see it');
    }
    retry.reset(); // a session that succeeded
    welcomed = true;
    joinKeyAccepted();
    // said before the token is stored: the round_start after it says more
    connectedAs = `connected as volunteer ${m.client_id}`;
    showConnection('online', connectedAs);
    pollStatus(); // the volunteers connected, this one among them
    showTrainingStatus(`Joined. Waiting for the next round (the federation is at round ${m.round}).`);
    page.stored = await store.updateState(page.federation, { token: m.token });
    break;
  case 'round_start':
    roundWaiting = m;
    if (m.secure) showSecureAggregation(m.secure.min_inputs);
    showTrainingStatus(`${m.secure ? 'Secure round' : 'Round'} ${m.round}: receiving the shared prompt…`);
    break;
  case 'ack':
    if (sent && sent.round === m.round) sent.stored = true;
    showTrainingStatus(`Round ${m.round}: the server stored your update. Waiting for the others…`);
    break;
  case 'round_end':
    secureRound.end(m.round);
    if (sent && sent.round === m.round) sent = null;
    showTrainingStatus(m.abandoned ?
      `Round ${m.round} was abandoned: too few volunteers reported, so the shared prompt stays as it was. ` +
      'Waiting for the next…' :
      `Round ${m.round} is over (${m.participants} volunteers). Waiting for the next…`);
    break;
  case 'wait':
    retry.serverAsked(m.retry_after);
    showTrainingStatus(m.reason === 'not_sampled' ?
      `Round ${m.round} runs without you; you are in line for the next.` :
      `Waiting for round ${m.round} (${m.reason.replaceAll('_', ' ')}).`);
    break;
  case 'done':
    // our update can end the federation before its round's figures are shown: they come first
    if (training) await training.ends.catch(() => {});
    showTrainingStatus(`The federation finished its ${m.rounds} rounds. Thank you! Your personal prompt stays here ` +
      'for "try it".');
    setStage('done');
    break;
  case 'error':
    retry.serverAsked(m.retry_after);
    if (m.code === BAD_TOKEN) { // the server forgot us (a new federation): join afresh
      page.stored = await store.updateState(page.federation, { token: null });
      socket.close();
      break;
    }
    if (m.code === BAD_JOIN_KEY) {
      if (!m.retry_after) joinKeyRefused(m.message); // (with it, this address is locked out, whatever the key)
      page.joined = false;
      socket.close();
      showConnection('offline', 'join key refused');
      throw new Error(`the server refused this page's join key: ${m.message}; open the address the federation's host ` +
        'gave you (it ends in ?key=…)');
    }
    if (m.code === RATE_LIMITED && !welcomed) { // not now (too many new volunteers from here): after retry_after
      socket.close();
      break;
    }
    if (secureRound.refusedAgain(m.code)) {
      showTrainingStatus('The server already had your last secure-round message; the round goes on.');
      break;
    }
    if (m.code === WRONG_ROUND || m.code === NOT_IN_ROUND) {
      sent = null;
      showTrainingStatus('The round closed before your update arrived; you are in line for round ' +
        `${m.next_round ?? 0}.`);
      break;
    }
    throw new Error(`the server refused: ${m.message} (${m.code})`);
  case 'secagg_ack':
    secureRound.acknowledged(m.round, m.stage);
    break;
  default: break;
  }
}

// A binary frame: a secure round's request, or the frame after a
// round_start: that round's global parameters. A round given again (a
// rejoin: the connection came back while the round is open) is not trained
// twice: one being trained sends its update when done, and one already sent
// is sent again (a secure round's: secure-round.js, its messages on this
// socket alone: sendHere).
async function onFrame(frame, sendHere) {
  if (secureRound.isSecureFrame(frame)) return secureRound.request(frame, sendHere);
  const start = roundWaiting;
  if (start === null) return;
  roundWaiting = null;
  if (start.secure) return secureRound.start(start, frame, sendHere);
  const round = start.round;
  if (training && training.round === round) return;
  if (sent && sent.round === round) return send(sent.update);
  const keep = (message) => {
    if (typeof message !== 'string') sent = { round, update: message, stored: false };
    if (!send(message)) showUnreachable();
  };
  training = { round, ends: trainRound(round, frame, keep) };
  try {
    await training.ends;
  } finally {
    training = null;
  }
}
