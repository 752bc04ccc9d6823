# For the bench scripts: the CLIP models they time, each made once under
# build/bench/ (the reference mini-vit from ../shared/clip; the others with
# random weights of a real model's exact shape, tools/make_random_clip.py,
# which cost what the real model costs), then converted by `build/sdfed
# convert`. Source it from the project root, after `make build`:
#   bench_source NAME        prints NAME's safetensors checkpoint, making it first
#   bench_model NAME TYPE    prints build/bench/NAME.TYPE.gguf, making it first
# NAME: mini-vit; tiny (the default model's shape: 28 x 28 in 7 x 7 patches,
# widths 128, 3 layers each, embedding 64, 695 tokens); vitb32, vitb16
# (OpenAI's ViT-B/32 and ViT-B/16: embedding 512, text 512 x 12 layers,
# image 768 x 12 layers, 224 x 224 in 32 x 32 or 16 x 16 patches);
# vitb16-text (ViT-B/16's text tower, the image tower tiny). TYPE: f32,
# f16, q8_0.

bench_models_dir=build/bench
bench_clip=../shared/clip

# the arguments of tools/make_random_clip.py for each shape
declare -A bench_shapes=(
  [tiny]="--shape tiny"
  [vitb32]="--shape vit-b-32"
  [vitb16]="--shape vit-b-16"
  [vitb16-text]="--shape vit-b-16 --vision-width 64 --vision-layers 1 --image-size 32"
)

bench_source() {
  if [ "$1" = mini-vit ]; then
    echo "$bench_clip/mini-vit.openai.safetensors"
    return
  fi
  local out="$bench_models_dir/$1.safetensors"
  [ -n "${bench_shapes[$1]:-}" ] || { echo "bench_source: no model '$1'" >&2; return 1; }
  if [ ! -f "$out" ]; then
    echo "making a random $1-shaped CLIP..." >&2
    mkdir -p "$bench_models_dir"
    # shellcheck disable=SC2086 # the shape is a list of arguments
    /usr/bin/python3 tools/make_random_clip.py "$out.tmp" ${bench_shapes[$1]} >&2
    mv "$out.tmp" "$out"
  fi
  echo "$out"
}

bench_model() {
  local out="$bench_models_dir/$1.$2.gguf" src
  if [ ! -f "$out" ]; then
    src=$(bench_source "$1")
    mkdir -p "$bench_models_dir"
    build/sdfed convert --in "$src" --vocab "$bench_clip/bpe_simple_vocab_16e6.txt.gz" --out "$out" \
      --type "$2" >/dev/null
  fi
  echo "$out"
}
