// The accuracy chart (#chart, an SVG): the volunteer's accuracy on the
// held-out images, per round, drawn at the size the page shows it (a unit
// of the drawing is a CSS pixel, so that its text is as large on a phone as
// on a desktop), again when that size changes.
import { $ } from './page.js';

let shown = []; // the history drawn
let resizes = null; // the observer that redraws it at a new size

// history: [{round, accuracy}], as kept in IndexedDB (accuracy null: none,
// no held-out image; such a round has no point)
export function drawChart(history = []) {
  shown = history;
  if (!resizes && typeof ResizeObserver === 'function') {
    resizes = new ResizeObserver(() => draw(shown));
    resizes.observe($('chart'));
  }
  draw(history);
}

function draw(history) {
  const svg = $('chart');
  const W = Math.round(svg.clientWidth) || 640, H = Math.round(Math.min(260, Math.max(180, 0.45 * W)));
  const left = 44, top = 14, pw = W - left - 16, ph = H - top - 34;
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  const x = (i) => left + (history.length > 1 ? (pw * i) / (history.length - 1) : pw / 2);
  const y = (a) => top + ph * (1 - a);
  let parts = '';
  for (let p = 0; p <= 100; p += 25)
    parts += `<line x1="${left}" y1="${y(p / 100)}" x2="${left + pw}" y2="${y(p / 100)}" stroke="#e3e7ee"/>` +
      `<text x="${left - 6}" y="${y(p / 100) + 4}" text-anchor="end" font-size="12">${p}%</text>`;
  if (history.length) {
    const measured = history.map((h, i) => ({ ...h, i })).filter((h) => h.accuracy !== null);
    const points = measured.map((h) => `${x(h.i).toFixed(1)},${y(h.accuracy).toFixed(1)}`).join(' ');
    parts += `<polyline fill="none" stroke="#0b63c5" stroke-width="2" points="${points}"/>`;
    parts += measured.map((h) => `<circle cx="${x(h.i).toFixed(1)}" cy="${y(h.accuracy).toFixed(1)}" r="3" ` +
      `fill="#0b63c5"><title>round ${h.round}: ${(100 * h.accuracy).toFixed(1)}%</title></circle>`).join('');
    const last = history[history.length - 1];
    parts += `<text x="${left + pw}" y="${H - 8}" text-anchor="end" font-size="12">round ${last.round}: ` +
      `${last.accuracy === null ? 'no accuracy (no test image)' : `${(100 * last.accuracy).toFixed(1)}%`}</text>`;
  } else {
    parts += `<text x="${left + pw / 2}" y="${top + ph / 2}" text-anchor="middle" fill="#5b6575">` +
      'no rounds yet</text>';
  }
  svg.innerHTML = parts;
}
