#!/usr/bin/env bash
# Makes the seed models of the GGUF fuzzing corpus: a tiny random CLIP in
# every weight type (every metadata and tensor type the reader knows).
#   tests/fuzz/make_seeds.sh SDFED_CLI OUT_DIR
set -euo pipefail
sdfed=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
/usr/bin/python3 "$here/../../tools/make_random_clip.py" "$tmp/tiny.safetensors" --embed-dim 32 --text-width 64 \
  --text-layers 1 --context-length 8 --vocab-size 520 --vision-width 64 --vision-layers 1 --patch-size 8 --image-size 16
for type in f16 q8_0; do
  "$sdfed" convert --in "$tmp/tiny.safetensors" --vocab "$here/../../../shared/clip/bpe_simple_vocab_16e6.txt.gz" \
    --out "$out/tiny-clip-$type.gguf" --type "$type"
done
