#!/usr/bin/env bash
# make bench, what a model costs a volunteer: for the tiny default model, a
# ViT-B/32 and a ViT-B/16 (random weights of OpenAI's exact shapes, made by
# tools/bench/models.sh; the tiny F32 is its random twin too), each as F32
# and Q8_0: the GGUF's size (what the page downloads), image features per
# second in Chromium with 1 thread and with 2 (the single-threaded and the
# threaded wasm builds), one SDFed step, and the page's peak memory, all
# measured by tools/bench/browser.mjs: the peak resident memory (VmHWM) of
# the renderer process that holds the page and its worker while the model
# is loaded, encodes and trains, and the same for the page itself
# (index.html) from its first visit until its model is loaded. Medians of
# VOLUNTEER_RUNS runs. Prints a markdown table.
#   [VOLUNTEER_RUNS=3] tools/bench/volunteer.sh [MODEL...]      (models: tiny vitb32 vitb16, the default)
. "$(dirname "$0")/../help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/../.."
. tools/bench/models.sh
. tools/bench/figures.sh
runs=${VOLUNTEER_RUNS:-3}
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(tiny vitb32 vitb16)
out=build/bench
[ -d tests/browser/node_modules/playwright-core ] ||
  (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)

# images encoded per run (the 2 seconds of warm-up aside) and SDFed steps timed
declare -A images=([tiny]=200 [vitb32]=20 [vitb16]=10)
steps=3
# the figures of runs of a build: one log line each, one figure a line
figure() { grep "^chromium $1:" | field "$2" | median; }
# a figure to 3 significant digits, or a whole number from 100 up
short() { awk -v v="$1" 'BEGIN { printf(v >= 100 ? "%.0f" : "%.3g", v) }'; }

rows=()
for name in "${models[@]}"; do
  [ -n "${images[$name]:-}" ] || { echo "volunteer: no model '$name' (tiny, vitb32, vitb16)" >&2; exit 2; }
  for type in f32 q8_0; do
    if [ "$name.$type" = tiny.q8_0 ]; then
      file=models/fmnist-tiny-clip.q8_0.gguf
    else
      file=$(bench_model "$name" "$type")
    fi
    log="$out/volunteer-$name.$type.log"
    : >"$log"
    for i in $(seq 1 "$runs"); do
      echo "== $name $type in Chromium ($i/$runs)"
      node tools/bench/browser.mjs build build/targets/emscripten "$file" "$out/browser" "${images[$name]}" "$steps" |
        tee -a "$log"
    done
    one=$(figure single-threaded images_per_s <"$log") two=$(figure threaded images_per_s <"$log")
    page=$(grep '^chromium page:' "$log" | tail -n 1)
    if grep -q 'error=' <<<"$page"; then
      first="fails: $(sed 's/.*error="\([^"]*\)".*/\1/' <<<"$page")"
    else
      first="$(short "$(grep '^chromium page:' "$log" | field peak_rss_mib | median)") MiB"
    fi
    rows+=("| $name | $type | $(awk -v b="$(stat -c %s "$file")" 'BEGIN { printf "%.1f", b / 1e6 }') | $(short "$one") | $(short "$(awk -v r="$one" 'BEGIN { print 1 / r }')") | $(short "$two") | $(short "$(awk -v r="$two" 'BEGIN { print 1 / r }')") | $(short "$(figure threaded step_ms <"$log")") | $(short "$(figure single-threaded peak_rss_mib <"$log")") | $(short "$(figure threaded peak_rss_mib <"$log")") | $(short "$(figure threaded idle_rss_mib <"$log")") | $first |")
  done
done
echo
echo "What a model costs a volunteer, in Chromium on this machine: the download (the GGUF), image features one at a"
echo "time at the model's input size with 1 thread and with 2, one SDFed step (batch 16, C = 10, 2 threads), and the"
echo "peak resident memory (VmHWM) of the renderer process that holds the page and its worker (the wasm threads"
echo "too): loading the model, encoding and training, idle before it; and the page's own first visit (download,"
echo "sha256, IndexedDB, load). Medians of $runs runs. tiny q8_0 is the default model; the others have random weights"
echo "of the real shapes (tiny f32: the default's)."
echo "| model | weights | download MB | 1 thread images/s | s/image | 2 threads images/s | s/image | step ms | peak MiB, 1 thread | peak MiB, 2 threads | idle page MiB | page's first visit, peak |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
