#!/usr/bin/env bash
# make bench: sdfed's kernels against the machine's measured peaks. The
# peaks: an FMA loop natively (bench_peak: AVX2, AVX-512) and a SIMD128
# multiply-add loop in Chromium (peak_browser.mjs; also relaxed SIMD's
# multiply-add, the yardstick where the page ran simd128-relaxed's fused
# f32 products), 1 and 2 threads; for the
# integer path the same loops of its 8-bit multiply-adds (vpdpbusd or
# AVX2's vpmaddubsw + vpmaddwd; in Chromium i32x4.dot_i16x8_s, and relaxed
# SIMD's 8-bit dot, the yardstick where the page's integer tile ran it). The work:
# the products' multiply-adds counted from the shapes, 2 operations each
# (flops.py). Then per model (tiny, vitb16) the image encoder natively on 1
# and 2 threads (bench_features; f32, and Q8_0 on the integer path, whose
# attention products stay f32: 4% of ViT-B/16's operations), the SDFed
# step's text forward and whole step natively (bench_step, on every core),
# and, when peers.sh ran before in this tree, the image encoder in Chromium
# (its log). First the Q8_0 linear alone on operands in L1 (bench_peak's
# "tiles q8_0" lines: what its tiles' code reaches of the 8-bit peak, Q8_0's
# f32 steps per block included, where an image's Q8_0 would stand without
# memory and the rest of the image), and with AVX-512 VNNI against Q8_0's
# bound (bench_peak's "bound q8_0" lines: the VNNI tile's dots and f32 steps
# in registers, what the definition leaves of the peak where its multiplies
# share the dots' pipes). Lines:
#   bench flops l1 q8_0-tiles native THREADS: X Gop/s, Y% of the measured int8 peak (Z Gop/s)[, V% of Q8_0's
#     bound (B Gop/s)]
#   bench flops MODEL KERNEL PLACE THREADS: X GFLOP/s, Y% of the measured peak (Z GFLOP/s)
#   bench flops MODEL image-encoder-q8_0 PLACE THREADS: X Gop/s, Y% of the measured int8 peak (Z Gop/s)[, W% of
#     the Q8_0 tiles alone (natively)]
#   tools/bench/peak.sh [REPEATS]          (after make build web)
. "$(dirname "$0")/../help.sh" "$@"
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
# the best instruction set's peak on THREADS threads (f32, or with int8 the integer one)
native_peak() {
  grep -E "^peak ${2:+int8 }native [a-z0-9]+ $1:" <<<"$native_peaks" | sed -E 's/.*=//' | sort -g | tail -n 1
}
# Chromium's peak on THREADS threads: SIMD128's, or with int8 its integer one, or
# relaxed SIMD's multiply-add (what simd128-relaxed's f32 products run where it is fused),
# or with int8 and relaxed-dot relaxed SIMD's 8-bit dot (where the page's dot=relaxed)
browser_peak() {
  local kind=${3:-simd128}
  grep "^peak ${2:+int8 }chromium $kind $1:" <<<"$browser_peaks" | sed -E 's/.*=//'
}

# MODEL KERNEL PLACE THREADS GFLOP_PER_UNIT UNITS_PER_S PEAK [int8 [TILES: the Q8_0 tiles alone, G ops/s
# [BOUND: Q8_0's bound, G ops/s]]]
line() {
  awk -v m="$1" -v k="$2" -v p="$3" -v t="$4" -v g="$5" -v r="$6" -v peak="$7" -v int8="${8:-}" -v tiles="${9:-}" \
    -v bound="${10:-}" 'BEGIN {
    f = g * r; unit = int8 ? "Gop/s" : "GFLOP/s"
    printf "bench flops %s %s %s %s: %.1f %s, %.0f%% of the measured %speak (%.1f %s)", m, k, p, t, f, unit,
      100 * f / peak, int8 ? "int8 " : "", peak, unit
    if (tiles != "") printf ", %.0f%% of the Q8_0 tiles alone", 100 * f / tiles
    if (bound != "") printf ", %.0f%% of Q8_0'"'"'s bound (%.1f %s)", 100 * f / bound, bound, unit
    printf "\n" }'
}

# the Q8_0 tiles alone on THREADS threads (G ops/s), or nothing; Q8_0's bound the same way
tiles_alone() { grep -E "^tiles q8_0 native [a-z0-9]+ $1:" <<<"$native_peaks" | sed -E 's/.*=//' || true; }
q8_0_bound() { grep -E "^bound q8_0 native [a-z0-9]+ $1:" <<<"$native_peaks" | sed -E 's/.*=//' || true; }

for threads in 1 2; do
  rate=$(tiles_alone "$threads")
  [ -n "$rate" ] && line l1 q8_0-tiles native "$threads" 1 "$rate" "$(native_peak "$threads" int8)" int8 "" \
    "$(q8_0_bound "$threads")"
done

cores=$(nproc)
for model in tiny vitb16; do
  if [ "$model" = tiny ]; then
    f32=$out/tiny-default.f32.gguf q8_0=models/fmnist-tiny-clip.q8_0.gguf
  else
    f32=$(bench_model vitb16 f32) q8_0=$(bench_model vitb16 q8_0)
  fi
  [ -f "$f32" ] || { echo "bench flops $model: run tools/bench/peers.sh first (it makes $f32)"; continue; }
  counts=$(/usr/bin/python3 tools/bench/flops.py --gguf "$f32" --sdfed build/sdfed --classes tools/bench/classes.txt)
  echo "# $model: $counts" >&2
  n=$([ "$model" = tiny ] && echo 200 || echo 4)
  for threads in 1 2; do
    rate=$(value images_per_s "$(build/bench_features --model "$f32" --threads "$threads" --images "$n" \
      --repeats "$repeats" | tail -n 1)")
    line "$model" image-encoder native "$threads" "$(value image_gflop "$counts")" "$rate" "$(native_peak "$threads")"
    rate=$(value images_per_s "$(build/bench_features --model "$q8_0" --threads "$threads" --images "$n" \
      --repeats "$repeats" --int8-images 1 | tail -n 1)")
    line "$model" image-encoder-q8_0 native "$threads" "$(value image_gflop "$counts")" "$rate" \
      "$(native_peak "$threads" int8)" int8 "$(tiles_alone "$threads")"
    log=$out/peers/$model.browser.log
    if [ -f "$log" ]; then
      run=$(grep "^chromium sdfed f32 $threads:" "$log" || true)
      rate=$(value images_per_s "$run")
      kind=$([ "$(value kernels "$run")" = simd128-relaxed ] && echo relaxed-madd || echo simd128)
      [ -n "$rate" ] && line "$model" image-encoder chromium "$threads" "$(value image_gflop "$counts")" "$rate" \
        "$(browser_peak "$threads" "" "$kind")"
      run=$(grep "^chromium sdfed q8_0 $threads:" "$log" || true)
      rate=$(value images_per_s "$run")
      kind=$([ "$(value dot "$run")" = relaxed ] && echo relaxed-dot || echo simd128)
      [ -n "$rate" ] && line "$model" image-encoder-q8_0 chromium "$threads" "$(value image_gflop "$counts")" "$rate" \
        "$(browser_peak "$threads" int8 "$kind")" int8
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
