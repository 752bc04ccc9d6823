#!/usr/bin/env bash
# The browser tests (make test-browser; part of make test): the wasm client
# against the native one under Node, then the volunteer page in Debian's
# Chromium (run.mjs). Installs playwright-core from the npm registry into
# tests/browser/node_modules the first time (package-lock.json pins it).
# Prints one summary line: "browser: N passed, M failed".
#   tests/browser/run.sh [BUILD_DIR] [EMSCRIPTEN_BUILD_DIR]
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath "${1:-$here/../../build}") em=$(realpath "${2:-$here/../../build/targets/emscripten}")
model=$(realpath "$here/../../models/fmnist-tiny-clip.q8_0.gguf")
cd "$here"
out=$build/browser-test
mkdir -p "$out"
# the second federation's model (the native ctest converts it too; make
# test-browser alone must not depend on that)
other_model=$build/test-models/mini-vit.openai.f32.gguf
if [ ! -s "$other_model" ]; then
  mkdir -p "$build/test-models"
  clip=$here/../../../shared/clip
  "$build/sdfed" convert --in "$clip/mini-vit.openai.safetensors" --vocab "$clip/bpe_simple_vocab_16e6.txt.gz" \
    --out "$other_model" --type f32 >/dev/null || { echo "browser: 0 passed, 1 failed (converting $other_model)"; exit 1; }
fi
if [ ! -d node_modules/playwright-core ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error || { echo "browser: 0 passed, 1 failed (npm ci)"; exit 1; }
fi
passed=0 failed=0
echo "== the wasm client under Node against the native one (both builds)"
if node parity.mjs "$build" "$em" "$model" "$out/parity-node"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
echo "== the volunteer page in Chromium"
node run.mjs "$build" "$em" "$model" "$out/chromium" 2>&1 | tee "$out/chromium.log"
line=$(grep -E '^chromium: [0-9]+ passed, [0-9]+ failed' "$out/chromium.log" | tail -n 1)
if [ -n "$line" ]; then
  passed=$((passed + $(sed -E 's/chromium: ([0-9]+) passed.*/\1/' <<<"$line")))
  failed=$((failed + $(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")))
else
  failed=$((failed + 1))
fi
echo "browser: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
