// A volunteer's own folder in the page, as people have them, against a real
// aggregator on loopback running the folder's own task (`sdfed task init`),
// in Debian's Chromium:
//   1. the messy folder (tests/lib/messy_folder.py: nested class folders,
//      a truncated PNG, an empty JPEG, an SVG, hidden files and a hidden
//      folder, files that are not images) chosen with the folder input:
//      encoding starts without a click; the page's images per class are the
//      CLI's (`sdfed task check`: training + test), the 17 good images are
//      encoded, every bad, hidden and non-image file is named beside the
//      counts, and Join is enabled;
//   2. a folder whose class folders do not all mean a class, with images in
//      no sub-folder: the page asks (the step says why, the button beside
//      it), the root's name preselects the loose images' class, and picking
//      a class for the other folder proceeds;
//   3. a phone (390x844 and 360x740, touch) trains the rounds on a demo
//      share; no horizontal overflow, the training lines not cut, the
//      chart's axis text at least 11 px high, buttons and file pickers at
//      least 40 px;
//   4. "Forget me": nothing in IndexedDB and no request for the model after
//      it, while the page polls the federation's status, until the
//      volunteer chooses a folder; then the page proceeds as on a first
//      visit (the model downloaded, the images encoded, the state stored);
//   5. (from here on a federation of many rounds of its own) a folder with
//      no image held out (one of each class): its rounds say "no accuracy
//      (no test image)", not 0.0%, and the server counts its metrics
//      (test_samples 0) in no round's accuracy (/status lists none,
//      /status.html shows no 0.00%);
//   6. two tabs of one browser: the second says that the page takes part
//      in another tab and opens no WebSocket; it takes part when the first
//      closes; a third takes over when asked, the second standing by,
//      neither connecting again; without Web Locks the server's 1001 makes
//      the older tab stand by;
//   7. "Forget me" in a tab that does not take part: the one that does
//      leaves, says why, and no database is made again over 2 more rounds.
// Screenshots go to OUT/screenshots.
//   node folder_page.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL.gguf OUT
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromiumTest, launchChromium, watchPage } from './harness.mjs';

const { root, build, emBuild, model, out, shots, h } = chromiumTest();
const { check, until } = h;

const run = (cmd, args) => {
  const r = spawnSync(cmd, args, { cwd: out, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${path.basename(cmd)} ${args[0]}: ${r.stderr || r.stdout}`);
  return r.stdout;
};

// the messy folder, its task, and what the CLI counts in it
const messy = path.join(out, 'holiday-photos');
const expected = JSON.parse(run('/usr/bin/python3', [path.join(root, 'tests/lib/messy_folder.py'), messy]));
const taskFile = path.join(out, 'task.json');
run(path.join(build, 'sdfed'), ['task', 'init', messy, '--clients', '4', '--model', model, '--out', taskFile]);
const task = JSON.parse(readFileSync(taskFile, 'utf8'));
Object.assign(task, { rounds: 3, min_clients: 1, clients_per_round: 1 }); // a page alone trains the rounds
writeFileSync(taskFile, JSON.stringify(task));
// "3 classes:" then "  NAME   N training,   M test images" per class
const checked = run(path.join(build, 'sdfed'), ['task', 'check', taskFile]).split('\n');
const cli = {};
for (let i = checked.findIndex((l) => /^\d+ classes:$/.test(l)) + 1; i > 0 && /^ {2}\S/.test(checked[i]); i++) {
  const [, name, train, test] = checked[i].match(/^ {2}(.*?)\s+(\d+) training,\s+(\d+) test images/);
  cli[name] = Number(train) + Number(test);
}
const CLASSES = Object.keys(cli);

await h.startAggregator('aggregator', ['--task', taskFile, '--state', path.join(out, 'state'), '--min-clients', '1',
  '--deadline', '600', '--round-pause', '1', '--web', path.join(root, 'web'),
  '--wasm', path.join(emBuild, 'wasm-client')]);

// The counts per class a page's summary gives ("17 images ready (...): animals 7, buildings 5, plants 5.")
const countsOf = (summary) => Object.fromEntries((summary.split('): ')[1] || '').replace(/\.$/, '').split(', ')
  .filter(Boolean).map((part) => [part.replace(/ \d+$/, ''), Number(part.match(/(\d+)$/)[1])]));
const same = (a, b) => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());

const browser = await launchChromium();
const consoles = [];
// Each part on a page of its own: one that fails (or times out) does not keep the others from running.
async function part(name, options, fn) {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  const watch = watchPage(page);
  try {
    await fn(page, watch);
  } catch (e) {
    check(false, `${name}: ${e.message}`);
    console.log(watch.tail());
  } finally {
    consoles.push(`== ${name}`, ...watch.lines);
    await context.close();
  }
}

try {
  // 1. the messy folder: at once, the CLI's counts, every file not used named
  await part('the messy folder', {}, async (desk, watch) => {
    await desk.goto(`${h.base}/`);
    await until('the page', async () => (await watch.stage()) === 'empty', 60);
    const clicks = [];
    await desk.exposeFunction('noteClick', (what) => clicks.push(what));
    await desk.evaluate(() => document.addEventListener('click',
      (e) => window.noteClick(e.target.outerHTML.slice(0, 60)), true));
    await desk.setInputFiles('#folder', messy);
    await until('the folder\'s features', async () => (await watch.stage()) === 'ready', 120);
    check(clicks.length === 0 && (await desk.locator('#groups button, #groups select').count()) === 0,
      `the folder is encoded without a click after choosing it (clicks: ${clicks.length})`);
    const summary = await watch.text('data-summary');
    const counts = countsOf(summary);
    check(same(counts, cli), `the page's images per class are the CLI's (task check, training + test): ` +
      `${JSON.stringify(counts)} / ${JSON.stringify(cli)}`);
    const good = Object.values(expected.images).reduce((a, b) => a + b, 0);
    check(good === 17 && summary.startsWith(`${good} images ready`), `the ${good} good images are encoded: ${summary}`);
    // "path: reason" per file, or "folder/: hidden folder (N files)" for the files below it
    const items = await desk.locator('#data-skipped li').allTextContents();
    const listed = items.join('\n');
    const named = (p) => items.some((item) => item.startsWith(`${p}: `) ||
      (/^[^:]+\/: hidden folder/.test(item) && p.startsWith(item.split(': ')[0])));
    const kinds = [['bad', expected.bad], ['hidden', expected.hidden], ['not an image', expected.not_images]];
    for (const [what, paths] of kinds)
      check(paths.length && paths.every(named), `each ${what} file is named in the page: ${paths.join(', ')}`);
    check(/animals\/empty\.jpg: the file is empty/.test(listed) && /broken\.png: .*decode/.test(listed) &&
      /logo\.svg: SVG: not PNG or JPEG/.test(listed), `the reasons are given with the names: ${items.join('; ')}`);
    check(await desk.locator('#join').isEnabled() && await desk.locator('#data-error').isHidden(),
      'Join is enabled, and no error is shown');
    await desk.screenshot({ path: path.join(shots, '01-messy-folder.png'), fullPage: true });
  });

  // 2. a folder to decide about: "kangaroo" means no class; images in the root ("Plants") preselected as plants
  const mixed = path.join(out, 'Plants');
  for (const [from, to] of [['animals/bugs/ant0.png', 'animals/bugs/ant0.png'],
    ['animals/cat.jpg', 'kangaroo/joey/cat.jpg'], ['animals/birds/owl.png', 'kangaroo/owl.png'],
    ['plants/fern.png', 'fern.png']]) {
    mkdirSync(path.dirname(path.join(mixed, to)), { recursive: true });
    copyFileSync(path.join(messy, from), path.join(mixed, to));
  }
  await part('a folder to decide about', {}, async (second, watch2) => {
    await second.goto(`${h.base}/`);
    await until('the second page', async () => (await watch2.stage()) === 'empty', 60);
    await second.setInputFiles('#folder', mixed);
    const asking = second.locator('#groups .ask');
    const ask = await until('the step asking for classes', async () => (await asking.isVisible()) && asking.innerText(),
      30);
    const rows = await second.locator('#groups .group').evaluateAll((all) => all.map((r) =>
      `${r.firstChild.textContent}${r.querySelector('select').selectedOptions[0].text}`));
    check(rows.includes('animals/: 1 image → animals') &&
      rows.includes('kangaroo/: 2 images → choose the class…') &&
      rows.includes('Plants (in no sub-folder): 1 image → plants'),
      `the step lists the class folders and the loose images, the root's name preselected: ${rows.join('; ')}`);
    check(/"kangaroo" is none of this federation's classes/.test(ask) && /1 image is in no sub-folder/.test(ask) &&
      (await watch2.stage()) === 'classes' && await second.locator('#encode-progress').isHidden(),
      `the step says why it asks, and nothing is encoded before: ${ask}`);
    check(await second.locator('#groups button', { hasText: 'Use these images' }).isVisible(),
      'the button is beside the step');
    await second.screenshot({ path: path.join(shots, '02-classes-asked.png'), fullPage: true });
    await second.locator('#groups .group', { hasText: 'kangaroo' }).locator('select')
      .selectOption({ label: 'buildings' });
    await second.click('#groups button');
    await until('the picked images\' features', async () => (await watch2.stage()) === 'ready', 120);
    const picked = countsOf(await watch2.text('data-summary'));
    check(same(picked, { animals: 1, buildings: 2, plants: 1 }),
      `picking a class proceeds: ${await watch2.text('data-summary')}`);
    await second.screenshot({ path: path.join(shots, '03-classes-picked.png'), fullPage: true });
  });

  // 3. a phone: the federation's rounds trained on a demo share, then the page measured at two widths
  const phone = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, hasTouch: true, isMobile: true };
  await part('a phone', phone, async (mobile, watch3) => {
    await mobile.goto(`${h.base}/`);
    await until('the phone page', async () => (await watch3.stage()) === 'empty', 60);
    await mobile.tap('#demo');
    await until('the phone\'s demo share', async () => (await watch3.stage()) === 'ready', 120);
    await mobile.tap('#join');
    await until('the federation\'s rounds on the phone', async () => (await h.status()).done === 1 &&
      (await watch3.stage()) === 'done', 300);
    for (const [width, height] of [[390, 844], [360, 740]]) {
      await mobile.setViewportSize({ width, height });
      // what a resize sets off has run by the second frame after it
      await mobile.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      const m = await mobile.evaluate(() => {
        const cut = (el) => el.scrollWidth > el.clientWidth || el.scrollHeight > el.clientHeight;
        const lines = ['#round-progress', '#round-progress > span', '#training-status']
          .map((s) => document.querySelector(s));
        const visible = (el) => el.getClientRects().length > 0;
        const targets = [...document.querySelectorAll('button, label.button, select')].filter(visible)
          .map((el) => ({ what: el.id || el.textContent.trim().slice(0, 24),
            height: el.getBoundingClientRect().height }));
        return {
          overflow: document.documentElement.scrollWidth - innerWidth,
          line: lines[1].textContent,
          cut: lines.filter((el) => cut(el)).map((el) => el.id || `${el.parentElement.id}'s text`),
          axis: Math.min(...[...document.querySelectorAll('#chart text')].filter((t) => /%$/.test(t.textContent))
            .map((t) => t.getBoundingClientRect().height)),
          small: targets.filter((t) => t.height < 40),
          targets: targets.length,
        };
      });
      const at = `at ${width}x${height}`;
      check(m.overflow <= 0, `${at} the page does not overflow sideways (by ${m.overflow} px)`);
      check(/your accuracy \d+\.\d%/.test(m.line) && m.cut.length === 0,
        `${at} the training lines are not cut (${m.cut.join(', ') || 'none cut'}): ${m.line}`);
      check(m.axis >= 11, `${at} the chart's axis labels are ${m.axis.toFixed(1)} px high (at least 11)`);
      check(m.targets >= 4 && m.small.length === 0, `${at} the ${m.targets} buttons and pickers are at least 40 px ` +
        `high${m.small.length ? `; lower: ${JSON.stringify(m.small)}` : ''}`);
      await mobile.screenshot({ path: path.join(shots, `04-phone-${width}x${height}.png`), fullPage: true });
    }
  });

  // 4. forget me: nothing stored or downloaded until the volunteer acts, then as a first visit
  await part('forget me', phone, async (mobile, watch4) => {
    let modelRequests = 0, polls = 0;
    mobile.on('request', (r) => { if (r.url().includes('/model/')) modelRequests++; });
    mobile.on('response', (r) => { if (r.url().endsWith('/status')) polls++; });
    const databases = () => mobile.evaluate(async () => (await indexedDB.databases()).map((d) => d.name));
    await mobile.goto(`${h.base}/`);
    await until('the page', async () => (await watch4.stage()) === 'empty', 60);
    await mobile.tap('#demo');
    await until('the demo share', async () => (await watch4.stage()) === 'ready', 120);
    await mobile.tap('#join');
    const badge = mobile.locator('#connection');
    await until('the server\'s welcome', async () => (await badge.getAttribute('data-state')) === 'online', 60);
    check((await databases()).includes('sdfed') && modelRequests === 1, 'before "Forget me" the page stored its state');
    modelRequests = 0;
    await mobile.tap('#forget');
    await until('the page after forgetting', async () => ['forgotten', 'empty'].includes(await watch4.stage()), 60);
    const pollsThen = polls;
    await until('two more polls of the status', async () => polls >= pollsThen + 2, 30);
    const left = await databases();
    check(!left.includes('sdfed') && modelRequests === 0,
      `after "Forget me", while the page polls the status, no database is left (${JSON.stringify(left)}) and the ` +
      `model is not requested (${modelRequests} requests)`);
    const notice = await mobile.locator('#forgotten').innerText().catch(() => '');
    check((await watch4.stage()) === 'forgotten' && /was deleted/.test(notice) &&
      (await watch4.text('data-summary')) === 'No images yet.', `the page says everything was deleted: ${notice}`);
    await mobile.screenshot({ path: path.join(shots, '05-forgotten.png'), fullPage: true });
    // the model held back until the page has said that the folder waits for it
    let release = null;
    const held = new Promise((resolve) => { release = resolve; });
    await mobile.route('**/model/**', async (route) => { await held; await route.continue(); });
    await mobile.setInputFiles('#folder', messy);
    const waiting = await until('the folder waiting for the model', async () => {
      const t = await mobile.locator('#encode-progress').innerText();
      return /as soon as the model is ready/.test(t) && t;
    }, 30);
    check(Boolean(waiting), `a folder chosen before the model is ready waits for it, saying so: ${waiting}`);
    release();
    await until('the features after forgetting', async () => (await watch4.stage()) === 'ready', 180);
    const stored = await mobile.evaluate(() => new Promise((resolve, reject) => {
      const r = indexedDB.open('sdfed');
      r.onerror = () => reject(r.error);
      r.onsuccess = () => {
        const all = r.result.transaction('state').objectStore('state').getAll();
        all.onsuccess = () => resolve(all.result);
      };
    }));
    check(modelRequests === 1 && stored.length === 1 && stored[0].index !== undefined && !stored[0].token &&
      /^17 images ready/.test(await watch4.text('data-summary')) && await mobile.locator('#forgotten').isHidden(),
      `choosing a folder then works as on a first visit (model requests ${modelRequests}, state ` +
      `${JSON.stringify(stored.map((st) => Object.keys(st)))})`);
    await mobile.screenshot({ path: path.join(shots, '06-after-forgetting.png'), fullPage: true });
  });

  // 5 to 7 on a federation of many rounds, which goes on while the tabs come and go
  await h.stopAggregator();
  const longTask = path.join(out, 'long-task.json'), longState = path.join(out, 'state-long');
  writeFileSync(longTask, JSON.stringify({ ...task, rounds: 1000 }));
  await h.startAggregator('aggregator-long', ['--task', longTask, '--state', longState,
    '--min-clients', '1', '--deadline', '600', '--round-pause', '1', '--web', path.join(root, 'web'),
    '--wasm', path.join(emBuild, 'wasm-client')]);
  // 5. no image held out: no accuracy (the first of the long federation's volunteers: no round has any yet)
  const few = path.join(out, 'few');
  for (const [from, to] of [['animals/cat.jpg', 'animals/cat.jpg'], ['buildings/barn.png', 'buildings/barn.png'],
    ['plants/fern.png', 'plants/fern.png']]) {
    mkdirSync(path.dirname(path.join(few, to)), { recursive: true });
    copyFileSync(path.join(messy, from), path.join(few, to));
  }
  await part('no image held out', {}, async (desk, watch5) => {
    await desk.goto(`${h.base}/`);
    await until('the page', async () => (await watch5.stage()) === 'empty', 60);
    await desk.setInputFiles('#folder', few);
    await until('the features of the three images', async () => (await watch5.stage()) === 'ready', 120);
    const summary = await watch5.text('data-summary');
    check(/^3 images ready \(3 to train on, 0 held out\)/.test(summary), `one of each class, none held out: ${summary}`);
    await desk.click('#join');
    await until('a round trained', async () => /^(trained-\d+|done)$/.test(await watch5.stage()), 180);
    const line = await watch5.text('round-progress');
    const chart = await desk.locator('#chart').textContent();
    check(/no accuracy \(no test image\)/.test(line) && !/accuracy \d/.test(line) &&
      /no accuracy \(no test image\)/.test(chart) && !/\d%$/.test(chart),
      `the round says it has no accuracy, not 0.0% (line: ${line}; chart: ${chart})`);
    // its metrics stored (the server reads its history again a second after)
    const stored = () => spawnSync('sqlite3', [path.join(longState, 'aggregator.sqlite'),
      'SELECT count(*) FROM metrics WHERE test_samples = 0'], { encoding: 'utf8' }).stdout.trim();
    await until('the page\'s metrics stored', async () => Number(stored()) >= 1, 30);
    await new Promise((r) => setTimeout(r, 1100));
    const accuracy = JSON.stringify((await h.status()).accuracy);
    const html = await (await h.get('/status.html')).text();
    check(accuracy === '[]' && !html.includes('0.00%'),
      `the server counts metrics of no test image in no round: /status's accuracy ${accuracy}, ` +
      `/status.html ${html.includes('0.00%') ? 'shows 0.00%' : 'shows no 0.00%'}`);
    await desk.screenshot({ path: path.join(shots, '07-no-image-held-out.png'), fullPage: true });
  });

  const sleep = (s) => new Promise((r) => setTimeout(r, s * 1000));
  // a page of the part's browser context, its WebSockets counted; badge: its connection badge's state
  const tab = async (context) => {
    const p = await context.newPage();
    const t = { page: p, watch: watchPage(p), sockets: 0 };
    p.on('websocket', () => t.sockets++);
    t.badge = () => p.locator('#connection').getAttribute('data-state');
    await p.goto(`${h.base}/`);
    return t;
  };
  // the first tab: a demo share, joined
  const joined = async (context) => {
    const t = await tab(context);
    await until('the page', async () => (await t.watch.stage()) === 'empty', 60);
    await t.page.click('#demo');
    await until('the demo share', async () => (await t.watch.stage()) === 'ready', 120);
    await t.page.click('#join');
    await until('the server\'s welcome', async () => (await t.badge()) === 'online', 60);
    return t;
  };

  // 6. two tabs of one browser: one takes part, the other says so and does not connect; it takes part when
  // the first closes, and a third takes over when asked, the one it took over from standing by
  await part('two tabs', {}, async (page) => {
    const context = page.context();
    const first = await joined(context);
    const second = await tab(context);
    await until('the second tab to stand by', async () => (await second.badge()) === 'elsewhere', 60);
    await sleep(5);
    const line = await second.watch.text('training-status');
    check(first.sockets === 1 && second.sockets === 0 && (await first.badge()) === 'online' &&
      /open in another tab of this browser/.test(line) && await second.page.locator('#take-part').isVisible(),
    `a second tab says the page takes part in another tab and does not connect (WebSockets in 5 s: the first ` +
      `tab's ${first.sockets}, the second's ${second.sockets}): ${line}`);
    await second.page.screenshot({ path: path.join(shots, '08-another-tab.png'), fullPage: true });
    await first.page.close();
    await until('the second tab to take part', async () => (await second.badge()) === 'online', 60);
    check(second.sockets === 1 && (await h.status()).clients === 1,
      'the first tab closed, the second takes part by itself');
    const third = await tab(context);
    await until('the third tab to stand by', async () => (await third.badge()) === 'elsewhere', 60);
    await third.page.click('#take-part');
    await until('the third tab to take part', async () => (await third.badge()) === 'online' &&
      (await second.badge()) === 'elsewhere', 60);
    const rounds = (await h.status()).round;
    await until('a round with the third tab', async () => (await h.status()).round >= rounds + 2, 60);
    check(second.sockets === 1 && third.sockets === 1 && (await third.badge()) === 'online' &&
      (await second.badge()) === 'elsewhere' && (await h.status()).clients === 1,
    `asked, the third tab takes part and the second stands by, neither connecting again over 2 rounds ` +
      `(WebSockets: ${second.sockets}, ${third.sockets}): ${await second.watch.text('training-status')}`);
  });

  // 6b. without Web Locks (a page that is no secure context): a second tab takes part, and the server's 1001
  // ("this client connected again") makes the first stand by, not connect again
  await part('two tabs without Web Locks', {}, async (page) => {
    const context = page.context();
    await context.addInitScript(() => { delete Navigator.prototype.locks; });
    const first = await joined(context);
    const second = await tab(context);
    await until('the second tab to take part', async () => (await second.badge()) === 'online', 60);
    await until('the first tab to stand by', async () => (await first.badge()) === 'elsewhere', 30).catch(() => null);
    await sleep(5);
    check(first.sockets === 1 && second.sockets === 1 && (await first.badge()) === 'elsewhere' &&
      (await second.badge()) === 'online' && /open in another tab/.test(await first.watch.text('training-status')),
    `without Web Locks, the tab the server closed with 1001 stands by and does not connect again (WebSockets in ` +
      `5 s: ${first.sockets}, ${second.sockets}): ${await first.watch.text('training-status')}`);
  });

  // 7. "Forget me" in a tab that does not take part: the tab that does leaves the federation, says so and
  // stores nothing again while the federation's rounds go on
  await part('forget me in another tab', {}, async (page) => {
    const context = page.context();
    const first = await joined(context);
    const second = await tab(context);
    await until('the second tab', async () => ['joined', 'ready', 'elsewhere'].includes(await second.watch.stage()) ||
      (await second.badge()) !== 'offline', 60);
    await second.page.click('#forget');
    await until('the first tab to stop', async () => (await first.watch.stage()) === 'forgotten', 30)
      .catch(() => null);
    const rounds = (await h.status()).round;
    await until('two more rounds', async () => (await h.status()).round >= rounds + 2, 60).catch(() => null);
    await sleep(2);
    const databases = await second.page.evaluate(async () => (await indexedDB.databases()).map((d) => d.name));
    const notice = await first.page.locator('#forgotten').innerText().catch(() => '');
    check(!databases.includes('sdfed') && (await h.status()).clients === 0 &&
      (await first.watch.stage()) === 'forgotten' && /in this tab or another/.test(notice),
      `after "Forget me" in another tab, the one that took part left (${(await h.status()).clients} connected), ` +
      `no database is left after 2 more rounds (${JSON.stringify(databases)}), and it says why: ${notice}`);
    await first.page.screenshot({ path: path.join(shots, '09-forgotten-elsewhere.png'), fullPage: true });
  });
} finally {
  writeFileSync(path.join(out, 'console.log'), consoles.join('\n'));
  await browser.close();
  h.cleanup();
}
process.exit(h.summary('chromium, a volunteer\'s own folder', shots));
