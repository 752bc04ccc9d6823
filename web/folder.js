// A choice of files sorted by the core's folder rule
// (shared/data/folder_rule.h, in the worker): the images in groups, one per
// class folder and one of the images in no class folder (named after the
// chosen folder), each with the class it means; the files not used named.
// When a group means no class, the step where the volunteer picks (#groups).
import { $, page, setStage, showError } from './page.js';

const plural = (n, what) => `${n} ${what}${n === 1 ? '' : 's'}`;

// list: [{file, path}], paths below the root; root: the chosen folder's
// name ('' for several things dropped together) ->
//   {groups: [{name, loose, root, label, files: [{file, path}]}],
//    notUsed: [{path, reason, kind, files}] (not-used.js)}
export async function sortFiles(list, root) {
  const { entries, rootLabel } = await page.compute.call('classify', { paths: list.map((f) => f.path), root });
  const groups = new Map(), notUsed = [], hiddenFolders = new Map();
  entries.forEach((entry, i) => {
    const { file, path } = list[i];
    if (entry.kind === 'image' || entry.kind === 'loose') {
      const loose = entry.kind === 'loose', key = loose ? '' : entry.folder;
      if (!groups.has(key))
        groups.set(key, { name: loose ? root || 'loose files' : entry.folder, loose, root,
                          label: loose ? rootLabel : entry.label, files: [] });
      groups.get(key).files.push({ file, path });
    } else if (entry.hiddenFolder) {
      hiddenFolders.set(entry.hiddenFolder, (hiddenFolders.get(entry.hiddenFolder) || 0) + 1);
    } else {
      notUsed.push({ path, reason: entry.why, kind: entry.kind });
    }
  });
  for (const [folder, files] of hiddenFolders)
    notUsed.push({ path: `${folder}/`, reason: `hidden folder (${plural(files, 'file')})`, kind: 'hidden', files });
  return { groups: [...groups.values()], notUsed };
}

// Whether the volunteer has something to decide: a folder that means none
// of the classes, or images in no class folder.
export const undecided = (groups) => groups.some((g) => g.loose || g.label < 0);

// The volunteer picks the class of each group (those the rule matched
// preselected); resolves with the groups when "Use these images" is
// pressed, their labels as picked (-1: left out).
export function askClasses(groups) {
  const box = $('groups');
  box.replaceChildren();
  setStage('classes');
  const unmatched = groups.filter((g) => !g.loose && g.label < 0), loose = groups.find((g) => g.loose);
  const why = [];
  const are = (n) => (n > 1 ? 'are' : 'is');
  if (unmatched.length)
    why.push(`${unmatched.map((g) => `"${g.name}"`).join(', ')} ${are(unmatched.length)} none of this federation's ` +
      'classes');
  if (loose)
    why.push(`${plural(loose.files.length, 'image')} ${are(loose.files.length)} in no sub-folder` +
      (loose.root ? ` of "${loose.root}"` : ''));
  const ask = document.createElement('p');
  ask.className = 'ask';
  ask.textContent = `Your images need a decision: ${why.join(', and ')}. Pick a class for each group below ` +
    '(groups left at "choose the class…" are not used), then press "Use these images".';
  box.append(ask);
  for (const group of groups) {
    const row = document.createElement('div');
    row.className = 'group';
    const select = document.createElement('select');
    // the task's class names as text, never markup
    select.append(new Option('choose the class…', '-1'),
      ...page.description.classes.map((c, i) => new Option(c, String(i))));
    select.value = String(group.label);
    select.onchange = () => { group.label = Number(select.value); };
    const name = group.loose ? `${group.name} (in no sub-folder)` : `${group.name}/`;
    row.append(`${name}: ${plural(group.files.length, 'image')} → `, select);
    if (!group.loose && group.label < 0) {
      const note = document.createElement('span');
      note.className = 'muted skipped';
      note.textContent = ` "${group.name}" is none of this federation's classes: skipped unless you pick one`;
      row.append(note);
    }
    box.append(row);
  }
  const go = document.createElement('button');
  go.textContent = 'Use these images';
  box.append(go);
  return new Promise((resolve) => {
    go.onclick = () => {
      if (!groups.some((g) => g.label >= 0))
        return showError(new Error('pick a class for at least one group of images'), 'data-error');
      showError(null, 'data-error');
      box.replaceChildren();
      resolve(groups);
    };
  });
}

// Leaves the step without a decision (another choice of files came).
export function dropQuestion() { $('groups').replaceChildren(); }
