#!/usr/bin/env bash
# `make run`: the main job of the project as far as it is built today.
# The aggregator and the volunteer page are not written yet; until they are,
# this converts the reference CLIP (../shared/clip, both namings) into GGUF
# models under models/, checks each against the reference PyTorch outputs,
# and shows the CLI on them.
set -euo pipefail
cd "$(dirname "$0")/.."
clip=../shared/clip
sdfed=build/sdfed
mkdir -p models
for type in f32 f16 q8_0; do
  out=models/mini-vit.$type.gguf
  [ -f "$out" ] || "$sdfed" convert --in "$clip/mini-vit.openai.safetensors" \
    --vocab "$clip/bpe_simple_vocab_16e6.txt.gz" --out "$out" --type "$type"
done
"$sdfed" info models/mini-vit.q8_0.gguf
for type in f32 f16 q8_0; do
  "$sdfed" check-reference --model "models/mini-vit.$type.gguf" --reference "$clip/mini-vit.reference.safetensors"
done
echo "tokens of 'a photo of a T-shirt/top.':"
"$sdfed" tokenize --tokens --model models/mini-vit.q8_0.gguf "a photo of a T-shirt/top."
echo
echo "The aggregator (make run's eventual job) is not built yet; see README.md."
