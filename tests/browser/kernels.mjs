// test_kernels (tests/unit/test_kernels.c, built for a page as
// test_kernels_web) in Chromium: every kernel backend of the browser build
// against the portable one, linear_int8 bit for bit. Chromium runs relaxed
// SIMD, so there the simd128-relaxed backend must be tested and be the
// default; with it turned off (Module.relaxedSimd = false, what a page does
// to force the fallback) simd128 must be the default and relaxed absent.
//   node kernels.mjs BUILD_DIR EMSCRIPTEN_BUILD_DIR MODEL OUT
// Prints "chromium-kernels: N passed, M failed".
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { harness, launchChromium } from './harness.mjs';

const [build, em, , out] = process.argv.slice(2);
const h = harness(out, path.resolve(import.meta.dirname, '../..'), build);
const script = readFileSync(path.join(em, 'tests/test_kernels_web.js'));
const origin = 'http://sdfed-kernels.test';

const browser = await launchChromium();
try {
  for (const relaxedSimd of [true, false]) {
    const page = await browser.newPage();
    const lines = [];
    page.on('console', (m) => lines.push(m.text()));
    await page.route(`${origin}/**`, (route) => route.request().url().endsWith('.js')
      ? route.fulfill({ body: script, contentType: 'text/javascript' })
      : route.fulfill({ contentType: 'text/html', body: `<script>var Module = { relaxedSimd: ${relaxedSimd},
          onExit: (code) => { window.exitCode = code; } };</script><script src="/test_kernels_web.js"></script>` }));
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => window.exitCode !== undefined, null, { timeout: 120000 });
    const code = await page.evaluate(() => window.exitCode), text = lines.join('\n');
    const summary = text.match(/test_kernels: \d+ passed, \d+ failed/)?.[0] ?? 'no summary';
    const backends = text.match(/^backends: .*$/m)?.[0] ?? 'no backends line';
    const which = relaxedSimd ? 'relaxed SIMD on' : 'relaxed SIMD turned off';
    h.check(code === 0, `test_kernels in Chromium, ${which}: ${summary}`);
    if (code !== 0) console.log(text.split('\n').filter((l) => l.startsWith('FAIL')).slice(0, 20).join('\n'));
    h.check(relaxedSimd ? /simd128-relaxed \(default simd128-relaxed\)$/.test(backends)
      : /simd128 \(default simd128\)$/.test(backends), `${which}: ${backends}`);
    await page.close();
  }
} finally {
  await browser.close();
}
process.exit(h.summary('chromium-kernels'));
