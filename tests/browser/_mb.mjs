import { readFileSync } from 'node:fs';
import { launchChromium } from '/work/wt-relaxed/tests/browser/harness.mjs';
const script = readFileSync('/tmp/relaxed-mb/mb.js');
const b = await launchChromium();
const page = await b.newPage();
page.on('console', (m) => console.log(m.text()));
await page.route('http://mb.test/**', (r) => r.request().url().endsWith('.js') ? r.fulfill({ body: script, contentType: 'text/javascript' })
  : r.fulfill({ contentType: 'text/html', body: '<script>var Module={onExit:(c)=>{window.done=1}}</script><script src="/mb.js"></script>' }));
await page.goto('http://mb.test/');
await page.waitForFunction(() => window.done, null, { timeout: 300000 });
await b.close();
