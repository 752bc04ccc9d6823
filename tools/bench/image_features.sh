#!/usr/bin/env bash
# make bench, what the Q8_0 integer path buys: image features per second
# (random images of the model's input size, one at a time) for F32
# weights, Q8_0 weights on f32 activations (--int8-images 0, the path
# before the integer one) and Q8_0 in integer products (the default,
# clip_model.h's int8_images), natively (bench_step, 1 and 2 threads) and
# in Chromium (browser.mjs: the single-threaded build and the threaded one,
# 2 threads here), for the tiny default model's shape and ViT-B/16's
# (random weights, tools/bench/models.sh). One line per figure, then a
# markdown table with the ratios to F32 measured in the same run:
#   bench image-features MODEL WEIGHTS THREADS PLACE: X img/s
#   tools/bench/image_features.sh [--native-only]
set -euo pipefail
cd "$(dirname "$0")/../.."
. tools/bench/models.sh
. tools/bench/figures.sh
native_only=0
[ "${1:-}" = --native-only ] && native_only=1
out=build/bench
declare -A images=([tiny]=400 [vitb16]=6) browser_images=([tiny]=200 [vitb16]=4)
# WEIGHTS as printed: the model file's type and --int8-images
declare -A weights=([f32]="f32 1" [q8_0-f32-act]="q8_0 0" [q8_0-int8]="q8_0 1")
order=(f32 q8_0-f32-act q8_0-int8)
declare -A rate=()

if [ $native_only = 0 ]; then
  [ -d tests/browser/node_modules/playwright-core ] ||
    (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)
fi
for model in tiny vitb16; do
  for w in "${order[@]}"; do
    read -r type int8 <<<"${weights[$w]}"
    file=$(bench_model "$model" "$type")
    for threads in 1 2; do
      r=$(build/bench_step --model "$file" --classes tools/bench/classes.txt --n-classes 10 --steps 1 \
        --images "${images[$model]}" --threads "$threads" --int8-images "$int8" | field images_per_s)
      rate[$model,$w,$threads,native]=$r
      echo "bench image-features $model $w $threads native: $r img/s"
    done
    [ $native_only = 1 ] && continue
    log=$(node tools/bench/browser.mjs build build/targets/emscripten "$file" "$out/browser-int8" \
      "${browser_images[$model]}" 1 "$int8")
    for variant in single-threaded threaded; do
      threads=$([ $variant = threaded ] && echo 2 || echo 1)
      r=$(grep "^chromium $variant:" <<<"$log" | field images_per_s)
      rate[$model,$w,$threads,chromium]=$r
      echo "bench image-features $model $w $threads chromium: $r img/s"
    done
  done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", a / b; else print "-" }'; }
echo
echo "Image features per second, one image at a time; in brackets the ratio to F32 weights in the same place."
echo "| model | where | threads | F32 | Q8_0, f32 activations | Q8_0, integer | integer / f32 activations |"
echo "|---|---|---|---|---|---|---|"
places=(native)
[ $native_only = 1 ] || places+=(chromium)
for model in tiny vitb16; do
  for place in "${places[@]}"; do
    for threads in 1 2; do
      f=${rate[$model,f32,$threads,$place]} o=${rate[$model,q8_0-f32-act,$threads,$place]}
      i=${rate[$model,q8_0-int8,$threads,$place]}
      echo "| $model | $place | $threads | $f | $o ($(ratio "$o" "$f")) | $i ($(ratio "$i" "$f")) | $(ratio "$i" "$o") |"
    done
  done
done
