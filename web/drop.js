// Dropping onto a zone: every file dropped, folders walked down
// (webkitGetAsEntry), each as {file, path}, the paths below the root the
// folder rule reads (shared/data/folder_rule.h): a single dropped folder is
// the root, as a chosen folder is; several folders or files dropped
// together are the root's contents (its name then '').

// Every file below a dropped folder, its path from the folder the entry is in.
async function entryFiles(entry, out) {
  if (entry.isFile) {
    out.push({ file: await new Promise((res, rej) => entry.file(res, rej)), path: entry.fullPath.slice(1) });
  } else if (entry.isDirectory) {
    const reader = entry.createReader();
    for (;;) {
      const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
      if (!batch.length) break;
      for (const e of batch) await entryFiles(e, out);
    }
  }
}

// onFiles(files, root): files [{file, path}], root the dropped folder's name or ''
export function dropZone(zone, onFiles) {
  zone.addEventListener('dragover', (e) => { e.preventDefault(); zone.classList.add('over'); });
  zone.addEventListener('dragleave', () => zone.classList.remove('over'));
  zone.addEventListener('drop', async (e) => {
    e.preventDefault();
    zone.classList.remove('over');
    // the entries first: the list of items is emptied once the event is over
    const entries = [], loose = [];
    for (const item of e.dataTransfer.items) {
      const entry = item.webkitGetAsEntry && item.webkitGetAsEntry();
      if (entry) entries.push(entry);
      else if (item.kind === 'file') loose.push(item.getAsFile());
    }
    const out = [];
    for (const entry of entries) await entryFiles(entry, out);
    out.push(...loose.map((file) => ({ file, path: file.name })));
    if (entries.length === 1 && entries[0].isDirectory && !loose.length) {
      const root = entries[0].name;
      return onFiles(out.map((f) => ({ file: f.file, path: f.path.slice(root.length + 1) })), root);
    }
    onFiles(out, '');
  });
}
