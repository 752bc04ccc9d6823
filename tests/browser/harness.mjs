// What the Chromium tests share: counting checks, child processes whose
// output goes to OUT/NAME.log and which die with the test, waiting for a
// condition with a bound, an aggregator on a port the kernel chooses (a
// restart takes that port again; h.key, when set, is its join key, which
// h.get presents), Debian's Chromium, and what the content security policy
// refused in a browser context (its pages and their workers).
//   const h = harness(OUT, ROOT, BUILD_DIR); h.check(ok, what); ... h.summary('chromium')
// or, for a script run as `node SCRIPT BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL OUT`,
//   const { root, build, emBuild, model, out, shots, h } = chromiumTest();
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { listeningPort } from '../lib/port_file.mjs';

// A Chromium test's command line (BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL OUT,
// absolute), OUT made anew with its screenshots' folder, the repository's
// root, and the harness.
export function chromiumTest() {
  const [build, emBuild, model, out] = process.argv.slice(2).map((p) => path.resolve(p));
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  const shots = path.join(out, 'screenshots');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(shots, { recursive: true });
  return { root, build, emBuild, model, out, shots, h: harness(out, root, build) };
}

export function harness(out, root, build) {
  const h = { build, passed: 0, failed: 0, children: [], port: 0, base: null, aggregator: null, key: null };
  h.check = (ok, what) => {
    if (ok) h.passed++; else h.failed++;
    console.log(`${ok ? 'ok' : 'FAIL'}: ${what}`);
  };
  h.cleanup = () => h.children.forEach((c) => c.exitCode === null && c.kill('SIGKILL'));
  process.on('exit', h.cleanup);

  h.start = (name, cmd, args) => {
    const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    const log = [];
    child.stdout.on('data', (d) => log.push(d));
    child.stderr.on('data', (d) => log.push(d));
    child.on('exit', () => writeFileSync(path.join(out, `${name}.log`), Buffer.concat(log)));
    h.children.push(child);
    return child;
  };

  h.until = async (what, fn, seconds) => {
    const end = Date.now() + seconds * 1000;
    for (;;) {
      const v = await fn().catch(() => null);
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out after ${seconds} s waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  // sdfed-aggregator NAME's log; args: its flags after the port's; sets
  // h.aggregator, h.port and h.base
  h.startAggregator = async (name, args) => {
    const portFile = path.join(out, `${name}.port`);
    for (let tries = h.port ? 5 : 1; tries > 0; tries--) {
      h.aggregator = h.start(name, path.join(h.build, 'sdfed-aggregator'), ['--host', '127.0.0.1', '--port',
        String(h.port), '--port-file', portFile, ...args]);
      const bound = await listeningPort(portFile, h.aggregator);
      if (bound) {
        h.port = bound;
        h.base = `http://127.0.0.1:${h.port}`;
        return;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    throw new Error(`the aggregator did not start (${name}.log)`);
  };
  h.stopAggregator = async () => {
    h.aggregator.kill('SIGTERM');
    await h.until('the aggregator to stop', async () => h.aggregator.exitCode !== null, 30);
  };
  // GET path from the aggregator, with its join key
  h.get = (p) => fetch(`${h.base}${p}`, h.key ? { headers: { authorization: `Bearer ${h.key}` } } : {});
  h.status = async () => (await h.get('/status')).json();

  h.summary = (name, shots) => {
    console.log(`${name}: ${h.passed} passed, ${h.failed} failed${shots ? ` (screenshots in ${shots})` : ''}`);
    return h.failed ? 1 : 0;
  };
  return h;
}

// The switches that give headless Chromium WebGPU on SwiftShader's software
// Vulkan (../shared/TOOLCHAIN.md); without them navigator.gpu gives no adapter.
export const WEBGPU_SWITCHES = ['--enable-unsafe-webgpu', '--enable-features=Vulkan',
  '--use-webgpu-adapter=swiftshader'];

// (extra: more command-line switches; WEBGPU_SWITCHES among them leave the GPU on)
export const launchChromium = (extra = []) => chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', ...(extra.includes(WEBGPU_SWITCHES[0]) ? [] : ['--disable-gpu']), '--disable-quic',
    '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', ...extra],
});

// What the content security policy refused in a browser context, in its
// pages and their workers (Chromium says so on their consoles): a list that
// grows.
export function cspViolations(context) {
  const found = [];
  const note = (m) => { if (/Content Security Policy/i.test(m.text())) found.push(m.text()); };
  context.on('console', note);
  context.on('page', (p) => p.on('worker', (w) => w.on('console', note)));
  return found;
}

// A page's console kept for the failure report, its dialogs accepted, and
// the stage it shows (document.body.dataset.stage).
export function watchPage(page) {
  const lines = [];
  page.on('console', (m) => lines.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => lines.push(`pageerror: ${e.message}`));
  page.on('dialog', (d) => d.accept());
  return {
    lines,
    tail: () => `browser console (last lines):\n  ${lines.slice(-15).join('\n  ')}`,
    stage: () => page.evaluate(() => document.body.dataset.stage || ''),
    text: (id) => page.locator(`#${id}`).innerText(),
  };
}
