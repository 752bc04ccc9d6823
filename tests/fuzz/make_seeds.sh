#!/usr/bin/env bash
# Makes the seed models of the fuzzing corpora: a tiny random CLIP, as the
# converter's input (CORPUS_DIR/convert: its safetensors, OpenAI's names)
# and in every weight type (CORPUS_DIR/gguf: every metadata and tensor type
# the GGUF reader knows).
#   tests/fuzz/make_seeds.sh SDFED_CLI CORPUS_DIR
set -euo pipefail
sdfed=$1 corpus=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$corpus/gguf" "$corpus/convert"
/usr/bin/python3 "$here/../../tools/make_random_clip.py" "$corpus/convert/tiny-clip.safetensors" --embed-dim 32 \
  --text-width 64 --text-layers 1 --context-length 8 --vocab-size 520 --vision-width 64 --vision-layers 1 \
  --patch-size 8 --image-size 16
for type in f16 q8_0; do
  "$sdfed" convert --in "$corpus/convert/tiny-clip.safetensors" \
    --vocab "$here/../../../shared/clip/bpe_simple_vocab_16e6.txt.gz" --out "$corpus/gguf/tiny-clip-$type.gguf" \
    --type "$type"
done
