// test_kernels (tests/unit/test_kernels.c, built for a page as
// test_kernels_web) in Chromium: every kernel backend of the browser build
// against the portable one, linear_int8 bit for bit. Chromium runs relaxed
// SIMD, so when the page asks for it (Module.relaxedSimd = true) the
// simd128-relaxed backend must be tested, be the default and run
// linear_int8 on the relaxed dot, in each of its forms (relaxed_tile.h:
// the sign split, one dot on x + 128 or on x; the one-dot forms the
// engine's dot is not exact as computed exactly in SIMD128 instead, so
// that each form's layout and sums are checked on every CPU); turned off
// (false, the fallback of browsers without it) simd128 must be the default
// and relaxed absent; left to the module (unset) either, whichever is the
// faster on this machine (not asserted: it depends on the CPU).
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
  const runs = [[true], [true, 'split'], [true, 'unsigned'], [true, 'signed'], [false], [undefined]];
  for (const [relaxedSimd, form] of runs) {
    const page = await browser.newPage();
    const lines = [];
    page.on('console', (m) => lines.push(m.text()));
    const asked = (relaxedSimd === undefined ? '' : `relaxedSimd: ${relaxedSimd}, `) +
      (form ? `relaxedDotForm: '${form}', ` : '');
    await page.route(`${origin}/**`, (route) => route.request().url().endsWith('.js')
      ? route.fulfill({ body: script, contentType: 'text/javascript' })
      : route.fulfill({ contentType: 'text/html', body: `<script>var Module = { ${asked}
          onExit: (code) => { window.exitCode = code; } };</script><script src="/test_kernels_web.js"></script>` }));
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => window.exitCode !== undefined, null, { timeout: 120000 });
    const code = await page.evaluate(() => window.exitCode), text = lines.join('\n');
    const summary = text.match(/test_kernels: \d+ passed, \d+ failed/)?.[0] ?? 'no summary';
    const backends = text.match(/^backends: .*$/m)?.[0] ?? 'no backends line';
    const which = { true: 'relaxed SIMD asked for', false: 'relaxed SIMD turned off',
      undefined: 'the module\'s choice' }[relaxedSimd] + (form ? `, the ${form} form` : '');
    h.check(code === 0, `test_kernels in Chromium, ${which}: ${summary}`);
    if (code !== 0) console.log(text.split('\n').filter((l) => l.startsWith('FAIL')).slice(0, 20).join('\n'));
    const want = { true: /simd128-relaxed \(default simd128-relaxed\)$/, false: /simd128 \(default simd128\)$/,
      undefined: /simd128(-relaxed)? \(default simd128(-relaxed)?\)$/ }[relaxedSimd];
    h.check(want.test(backends), `${which}: ${backends}`);
    // the relaxed dot runs where it is asked for, never where relaxed SIMD is off; the module's choice either
    const relaxedLine = text.match(/^relaxed SIMD: .*$/m)?.[0] ?? 'no relaxed SIMD line';
    // (in the form asked for, or the module's: a kind its dot is exact as, else the split)
    const formSaid = form ? `${form}(, exact in SIMD128)?` : '(split|unsigned|signed)';
    const dotWant = { true: new RegExp(`^relaxed SIMD: runs here.*, linear_int8 on its 8-bit dot \\(${formSaid}\\)$`),
      false: /^relaxed SIMD: not here \(or turned off\)$/, undefined: /^relaxed SIMD: / }[relaxedSimd];
    h.check(dotWant.test(relaxedLine), `${which}: ${relaxedLine}`);
    await page.close();
  }
} finally {
  await browser.close();
}
process.exit(h.summary('chromium-kernels'));
