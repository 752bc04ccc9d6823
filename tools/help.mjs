// --help for the project's Node scripts: scriptHelp(import.meta.url) before
// anything else. With -h or --help first it prints the script's first
// comment (its // lines, without their "// ") and exits 0, having done
// nothing else; otherwise it does nothing.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export function scriptHelp(url) {
  if (!['-h', '--help'].includes(process.argv[2])) return;
  const lines = readFileSync(fileURLToPath(url), 'utf8').split('\n');
  const end = lines.findIndex((line) => !line.startsWith('//'));
  console.log(lines.slice(0, end).map((line) => line.replace(/^\/\/ ?/, '')).join('\n'));
  process.exit(0);
}
