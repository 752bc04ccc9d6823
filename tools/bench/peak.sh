#!/usr/bin/env bash
# make bench: sdfed's kernels against the machine's measured f32 peak. The
# peak: an FMA loop natively (bench_peak: AVX2, AVX-512) and a SIMD128
# multiply-add loop in Chromium (peak_browser.mjs), 1 and 2 threads. The
# work: FLOPs counted from the shapes (flops.py). Then per model (tiny,
# vitb16; f32) the image encoder natively on 1 and 2 threads
# (bench_features), the SDFed step's text forward, backward and whole step
# natively (bench_step, on every core), and, when peers.sh ran before in
# this tree, the image encoder in Chromium (its log). Lines:
#   bench flops MODEL KERNEL PLACE THREADS: X GFLOP/s, Y% of the measured peak (Z GFLOP/s)
#   tools/bench/peak.sh [REPEATS]          (after make build web)
set -euo pipefail
cd "$(dirname "$0")/../.."
repeats=${1:-3}
out=build/bench
mkdir -p "$out/peers"
. tools/bench/models.sh
value() { sed -nE "s/(^|.*[ :])$1=([^ ]+).*/\2/p" <<<"$2"; }

echo "== kernels against the measured peak (load: $(cut -d' ' -f1-3 /proc/loadavg))"
native_peaks=$(build/bench_peak --repeats 5)
browser_peaks=$(node tools/bench/peak_browser.mjs "$out/peers" 5)
printf '%s\n%s\n' "$native_peaks" "$browser_peaks"
# the best instruction set's peak on THREADS threads
native_peak() { grep -E "^peak native [a-z0-9]+ $1:" <<<"$native_peaks" | sed -E 's/.*gflops=//' | sort -g | tail -n 1; }
browser_peak() { grep "^peak chromium simd128 $1:" <<<"$browser_peaks" | sed -E 's/.*gflops=//'; }

# MODEL KERNEL PLACE THREADS GFLOP_PER_UNIT UNITS_PER_S PEAK
line() {
  awk -v m="$1" -v k="$2" -v p="$3" -v t="$4" -v g="$5" -v r="$6" -v peak="$7" 'BEGIN {
    f = g * r; printf "bench flops %s %s %s %s: %.1f GFLOP/s, %.0f%% of the measured peak (%.1f GFLOP/s)\n", m, k, p, t, f,
      100 * f / peak, peak }'
}

cores=$(nproc)
for model in tiny vitb16; do
  if [ "$model" = tiny ]; then f32=$out/tiny-default.f32.gguf; else f32=$(bench_model vitb16 f32); fi
  [ -f "$f32" ] || { echo "bench flops $model: run tools/bench/peers.sh first (it makes $f32)"; continue; }
  counts=$(/usr/bin/python3 tools/bench/flops.py --gguf "$f32" --sdfed build/sdfed --classes tools/bench/classes.txt)
  echo "# $model: $counts" >&2
  n=$([ "$model" = tiny ] && echo 200 || echo 4)
  for threads in 1 2; do
    rate=$(value images_per_s "$(build/bench_features --model "$f32" --threads "$threads" --images "$n" \
      --repeats "$repeats" | tail -n 1)")
    line "$model" image-encoder native "$threads" "$(value image_gflop "$counts")" "$rate" "$(native_peak "$threads")"
    log=$out/peers/$model.browser.log
    if [ -f "$log" ]; then
      rate=$(value images_per_s "$(grep "^chromium sdfed f32 $threads:" "$log" || true)")
      [ -n "$rate" ] && line "$model" image-encoder chromium "$threads" "$(value image_gflop "$counts")" "$rate" \
        "$(browser_peak "$threads")"
    fi
  done
  step=$(build/bench_step --model "$f32" --classes tools/bench/classes.txt --n-classes 10 --steps "$repeats" |
    tail -n 1)
  for kernel in text-forward:forward sdfed-step:step; do
    ms=$(value "${kernel#*:}_ms" "$step")
    line "$model" "${kernel%:*}" native "$cores" "$(value "${kernel#*:}_gflop" "$counts")" \
      "$(awk -v ms="$ms" 'BEGIN { print 1000 / ms }')" "$(native_peak "$cores")"
  done
done
