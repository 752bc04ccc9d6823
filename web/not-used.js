// The files a choice of images left out, named beside the counts
// (#data-skipped): how many for each reason, then each file (or hidden
// folder) with its reason, by reason, folded away when the list is long.
//   entries: [{path, reason, kind, files}], kind one of KINDS' keys, files
//   the number of files the entry stands for (a hidden folder's; else 1)
import { $ } from './page.js';

const KINDS = {
  hidden: 'hidden',
  unsupported: 'not PNG or JPEG',
  'not-image': 'not images',
  undecodable: 'could not be decoded',
  'no-class': 'in no class you picked',
  duplicate: 'already among your images',
};
const OPEN_UP_TO = 12; // entries shown unfolded

export function showNotUsed(entries = []) {
  const box = $('data-skipped');
  box.hidden = !entries.length;
  box.replaceChildren();
  if (!entries.length) return;
  const count = (list) => list.reduce((n, e) => n + (e.files || 1), 0);
  const per = Object.entries(KINDS).map(([kind, what]) => {
    const n = count(entries.filter((e) => e.kind === kind));
    return n ? `${n} ${what}` : null;
  }).filter(Boolean);
  const total = count(entries);
  const summary = document.createElement('summary');
  summary.textContent = `${total} file${total > 1 ? 's' : ''} not used: ${per.join(', ')}`;
  const list = document.createElement('ul');
  const order = Object.keys(KINDS), sorted = [...entries].sort((a, b) =>
    order.indexOf(a.kind) - order.indexOf(b.kind) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  // names as text, never markup
  for (const e of sorted) {
    const item = document.createElement('li');
    const name = document.createElement('code');
    name.textContent = e.path;
    item.append(name, `: ${e.reason}`);
    list.append(item);
  }
  box.append(summary, list);
  box.open = entries.length <= OPEN_UP_TO;
}
