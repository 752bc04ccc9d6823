// Dropping onto a zone: every file dropped, folders walked down
// (webkitGetAsEntry), each as {file, path}.

// Every file below a dropped folder.
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

export function dropZone(zone, onFiles) {
  zone.addEventListener('dragover', (e) => { e.preventDefault(); zone.classList.add('over'); });
  zone.addEventListener('dragleave', () => zone.classList.remove('over'));
  zone.addEventListener('drop', async (e) => {
    e.preventDefault();
    zone.classList.remove('over');
    const out = [];
    for (const item of e.dataTransfer.items) {
      const entry = item.webkitGetAsEntry && item.webkitGetAsEntry();
      if (entry) await entryFiles(entry, out);
      else if (item.kind === 'file') out.push({ file: item.getAsFile(), path: item.getAsFile().name });
    }
    onFiles(out);
  });
}
