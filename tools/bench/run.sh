#!/usr/bin/env bash
# make bench: benchmarks, never tests. Times one SDFed local step (batch 16,
# S_s 8, S_l 16, C = 10 and 100) in the C core and in PyTorch (CPU, fp32,
# 2 threads) on the same weights and shapes in this same run, and prints the
# ratio. Models: the reference mini-vit, and a ViT-B/16-shaped text tower
# (width 512, 12 layers, vocabulary 49408) with random weights; each in F32
# and Q8_0 (PyTorch runs the F32 weights: it is the peer for both).
#   tools/bench/run.sh [STEPS]      (medians over STEPS timed steps, default 5)
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${1:-5}
clip=../shared/clip
out=build/bench
mkdir -p "$out"
python=/usr/bin/python3

# the ViT-B/16-shaped text tower (the image tower is kept tiny: not timed)
if [ ! -f "$out/vitb16-text.safetensors" ]; then
  echo "making a random ViT-B/16-shaped text tower..."
  "$python" tools/make_random_clip.py "$out/vitb16-text.safetensors" --embed-dim 512 --text-width 512 \
    --text-layers 12 --vision-width 64 --vision-layers 1 --patch-size 16 --image-size 32
fi
declare -A source=([mini-vit]="$clip/mini-vit.openai.safetensors" [vitb16-text]="$out/vitb16-text.safetensors")
for model in mini-vit vitb16-text; do
  for type in f32 q8_0; do
    [ -f "$out/$model.$type.gguf" ] || build/sdfed convert --in "${source[$model]}" \
      --vocab "$clip/bpe_simple_vocab_16e6.txt.gz" --out "$out/$model.$type.gguf" --type "$type" >/dev/null
  done
done

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" | tail -n 1; }

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
