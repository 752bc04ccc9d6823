#!/usr/bin/env bash
# make bench: benchmarks, never tests. Times one SDFed local step (batch 16,
# S_s 8, S_l 16, C = 10 and 100) in the C core and in PyTorch (CPU, fp32,
# 2 threads) on the same weights and shapes in this same run, and prints the
# ratio; then the aggregator under load (load.sh), the aggregation rules
# against numpy on the same updates (aggregate.sh), the browser client in
# Chromium next to native (browser.mjs; image features timed by
# bench_features natively), a secure round's client steps in Chromium next
# to a native client's (secagg_page.mjs), the server's side of a secure round
# of 100 to 10,000 clients (bench_secagg), a host's folder of images through
# the feature cache (folder.sh), what each model size costs a volunteer (volunteer.sh),
# image features against ONNX Runtime natively and in Chromium, F32 and Q8_0
# (in integers, and on f32 activations) (peers.sh) and the kernels against
# the measured FMA peak (peak.sh). Models (tools/bench/models.sh): the
# reference mini-vit, and a ViT-B/16-shaped text tower (width 512, 12 layers, vocabulary 49408)
# with random weights; each in F32 and Q8_0 (PyTorch runs the F32 weights:
# it is the peer for both).
#   tools/bench/run.sh [STEPS]      (medians over STEPS timed steps, default 5)
. "$(dirname "$0")/../help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${1:-5}
out=build/bench
mkdir -p "$out"
python=/usr/bin/python3

. tools/bench/models.sh
. tools/bench/figures.sh

# the ViT-B/16-shaped text tower keeps its image tower tiny: it is not timed
declare -A source=()
for model in mini-vit vitb16-text; do
  source[$model]=$(bench_source "$model")
  for type in f32 q8_0; do
    bench_model "$model" "$type" >/dev/null
  done
done

rows=()
for model in mini-vit vitb16-text; do
  for classes in 10 100; do
    echo "== $model, C=$classes"
    torch_log=$("$python" tools/bench/sdfed_step_torch.py --model "${source[$model]}" --sdfed build/sdfed \
      --gguf "$out/$model.f32.gguf" --classes tools/bench/classes.txt --n-classes "$classes" --steps "$steps")
    echo "$torch_log" | head -n 1
    torch_ms=$(echo "$torch_log" | field step_ms)
    for type in f32 q8_0; do
      log=$(build/bench_step --model "$out/$model.$type.gguf" --classes tools/bench/classes.txt \
        --n-classes "$classes" --steps "$steps")
      echo "$log" | head -n 1
      ms=$(echo "$log" | field step_ms)
      rows+=("| $model | $type | $classes | $ms | $(echo "$log" | field svd_ms) | $(echo "$log" | field projection_ms) | $(echo "$log" | field forward_ms) | $(echo "$log" | field backward_ms) | $torch_ms | $(awk -v a="$torch_ms" -v b="$ms" 'BEGIN { printf "%.1fx", a / b }') |")
    done
  done
done

echo
echo "One SDFed local step, batch 16, S_s 8, S_l 16; medians of $steps steps after a warm-up; ms."
echo "| model | weights | C | sdfed step | svd | projection | forward | backward | PyTorch fp32 step | PyTorch / sdfed |"
echo "|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
bash tools/bench/load.sh
echo
bash tools/bench/aggregate.sh

# the browser: Chromium (threaded and single-threaded wasm) next to native,
# for the tiny default model and a ViT-B/16-shaped one (both towers)
echo
[ -d tests/browser/node_modules/playwright-core ] ||
  (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)
browser_rows=()
for spec in "tiny:models/fmnist-tiny-clip.q8_0.gguf:100" "vitb16:$(bench_model vitb16 q8_0):4"; do
  IFS=: read -r name file images <<<"$spec"
  echo "== $name in Chromium and natively"
  native_img=$(build/bench_features --model "$file" --threads "$(nproc)" --images "$images" | field images_per_s)
  native_step=$(build/bench_step --model "$file" --classes tools/bench/classes.txt --n-classes 10 --steps "$steps" |
    field step_ms)
  node tools/bench/browser.mjs build build/targets/emscripten "$file" "$out/browser" "$images" "$steps" |
    tee "$out/browser-$name.log"
  while read -r line; do
    variant=$(sed -E 's/chromium ([a-z-]+):.*/\1/' <<<"$line")
    img=$(echo "$line" | field images_per_s) step=$(echo "$line" | field step_ms)
    browser_rows+=("| $name | $variant | $img | $step | $native_img | $native_step | $(awk -v a="$native_img" -v b="$img" 'BEGIN { printf "%.1fx", a / b }') | $(awk -v a="$step" -v b="$native_step" 'BEGIN { printf "%.1fx", a / b }') |")
  done < <(grep '^chromium.*images_per_s' "$out/browser-$name.log")
done
echo
echo "The browser: image features per second (one image at a time, the model's input size) and one SDFed step"
echo "(batch 16, S_s 8, S_l 16, C = 10; ms, median of $steps) in Chromium's wasm, next to native (2 cores)."
echo "| model | Chromium build | images/s | step ms | native images/s | native step ms | native / browser, images | browser / native, step |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${browser_rows[@]}"
# a secure round's client steps in the page (WebCrypto and the wasm) next to a native client's (OpenSSL)
echo
echo "== a secure round's client steps in Chromium and natively"
node tools/bench/secagg_page.mjs build build/targets/emscripten models/fmnist-tiny-clip.q8_0.gguf "$out/secagg"
# a secure round's server (and its clients, natively) at 100, 1,000 and 10,000 clients
echo
echo "== a secure round of 100, 1,000 and 10,000 clients natively (the server timed; $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg))"
build/bench_secagg tasks/fmnist-secure.json 100 1000 10000
echo
bash tools/bench/folder.sh
echo
bash tools/bench/volunteer.sh
# image features against ONNX Runtime (native and Chromium; sdfed's Q8_0 in
# integers and on f32 activations) and the kernels against the measured FMA
# peak; a feature check that fails fails make bench
echo
bash tools/bench/peers.sh all
echo
bash tools/bench/peak.sh
