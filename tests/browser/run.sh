#!/usr/bin/env bash
# The browser tests (make test-browser; part of make test): the wasm client
# against the native one under Node (and the page's reconnection schedule
# against the C's, backoff.mjs, and its choice of build by the device's memory,
# memory.mjs; and --help on every program and script, whose Node ones import
# playwright-core, tests/integration/script_help.sh), then, two at a time, the volunteer page in Debian's
# Chromium (run.mjs), a volunteer's own messy folder, a phone, "Forget
# me" and two tabs of one browser (folder_page.mjs), a host's own federation on another CLIP
# (host_federation.mjs), the page's side of secure rounds against a
# native server and native clients (secagg.mjs), the page in secure rounds
# over the aggregator's socket (secure_page.mjs), the local prompt fitted
# to the device (device_page.mjs), photos from a fake camera
# (camera_page.mjs), photos above the native decoder's 2^24 pixels
# (large_images.mjs) and a whole visit on an emulated phone by taps, with
# too little memory for threads or for the model (phone_page.mjs), and
# image features on WebGPU, on SwiftShader's software GPU (webgpu_page.mjs). Installs
# playwright-core from the npm
# registry into tests/browser/node_modules the first time (package-lock.json
# pins it).
# Prints one summary line: "browser: N passed, M failed".
#   tests/browser/run.sh [BUILD_DIR] [EMSCRIPTEN_BUILD_DIR]
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath "${1:-$here/../../build}") em=$(realpath "${2:-$here/../../build/targets/emscripten}")
model=$(realpath "$here/../../models/fmnist-tiny-clip.q8_0.gguf")
cd "$here"
out=$build/browser-test
mkdir -p "$out"
# another CLIP, for the second federation and a host's own (the native
# ctest converts it too; make test-browser alone must not depend on that)
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
echo "== the page's reconnection schedule (web/backoff.js) under Node"
if node backoff.mjs "$build"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
echo "== the page's choice of build by the device's memory (web/memory.js) under Node"
if node memory.mjs; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
echo "== --help on every program and script (here, after the npm install that the Node scripts' imports need)"
if bash ../integration/script_help.sh "$out/script-help" "$build"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
echo "== the wasm client under Node against the native one (both builds)"
if node parity.mjs "$build" "$em" "$model" "$out/parity-node"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
# The Chromium tests, in two lanes at once: they spend most of their time
# waiting (on the page, the aggregator, Chromium's other processes), not on
# the cores. Each test's output and time go to its log, printed whole, in
# the list's order, once both lanes are done (the lanes balanced by the
# tests' times on this project's 2 cores: 187 and 197 s). NAME|SCRIPT|MODEL|LANE:
tests=(
  "every kernel backend in Chromium, with relaxed SIMD and without|kernels.mjs|$model|1"
  "the volunteer page in Chromium|run.mjs|$model|2"
  "a volunteer's own folder, a phone, \"Forget me\" and two tabs in Chromium|folder_page.mjs|$model|1"
  "a host's own federation in Chromium, on another CLIP|host_federation.mjs|$other_model|1"
  "secure rounds in Chromium: the test vector, rounds with native clients, a refused request, no secure context|secagg.mjs|$model|1"
  "secure rounds on the page over the aggregator's socket in Chromium|secure_page.mjs|$model|2"
  "the local prompt fitted to the device in Chromium|device_page.mjs|$model|2"
  "photos from a fake camera in Chromium, and the camera refused|camera_page.mjs|$model|2"
  "the page on an emulated phone by taps, and on too little memory|phone_page.mjs|$model|2"
  "image features on WebGPU in Chromium (SwiftShader), the fallback to the CPU, a lost device|webgpu_page.mjs|$model|2"
  "photos above 2^24 pixels in Chromium: reduced as the native decoder reduces them, the wasm's memory bounded|large_images.mjs|$model|2"
)
lane() { # lane N: its tests, one after another
  local name script test_model test_lane started
  for t in "${tests[@]}"; do
    IFS='|' read -r name script test_model test_lane <<<"$t"
    [ "$test_lane" = "$1" ] || continue
    started=$SECONDS
    { echo "== $name"; node "$script" "$build" "$em" "$test_model" "$out/$script" 2>&1
      echo "($script: $((SECONDS - started)) s)"; } >"$out/$script.log"
  done
}
lane 1 &
lane_1=$!
lane 2 &
lane_2=$!
wait "$lane_1" "$lane_2"
for t in "${tests[@]}"; do # each test's counts, from its log
  IFS='|' read -r _ script _ _ <<<"$t"
  cat "$out/$script.log"
  line=$(grep -E '^chromium[^:]*: [0-9]+ passed, [0-9]+ failed' "$out/$script.log" | tail -n 1)
  if [ -n "$line" ]; then
    passed=$((passed + $(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$line")))
    failed=$((failed + $(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")))
  else
    failed=$((failed + 1))
  fi
done
echo "browser: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
