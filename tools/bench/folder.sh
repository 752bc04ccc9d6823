#!/usr/bin/env bash
# make bench, a host's folder of images: how fast `sdfed task check` (what a
# host runs before opening a federation; it computes the features of both
# splits into the feature cache) gets through a folder dataset, with the tiny
# default model and with a ViT-B/16-shaped one (random weights, both towers),
# first with an empty cache and then with it warm.
# The folder, made once under build/bench/folder-N/: N Fashion-MNIST images
# in the ImageFolder layout, half in train/ and half in test/, 10 classes
# (tools/fmnist_to_folder.py); of each class's images, every other one is a
# 28 x 28 grey PNG and the rest colour JPEGs of 96..800 pixels a side
# (tools/bench/colour_jpegs.py).
# The first run is timed FOLDER_RUNS times for the tiny model (each with an
# empty cache; median) and once for ViT-B/16 (about 3 images/s on 2 cores:
# 10,000 images take most of an hour); the cached run 3 times (median).
#   [FOLDER_IMAGES=10000] [FOLDER_IMAGES_VITB16=10000] [FOLDER_RUNS=3] tools/bench/folder.sh
# Image counts are multiples of 20, at most 20,000. Prints a markdown table.
. "$(dirname "$0")/../help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/../.."
. tools/bench/models.sh
. tools/bench/figures.sh
out=build/bench
python=/usr/bin/python3
runs=${FOLDER_RUNS:-3}

# the folder of $1 images, made once; prints its path
make_folder() {
  local n=$1 dir="$out/folder-$1"
  if [ $((n % 20)) -ne 0 ] || [ "$n" -lt 20 ] || [ "$n" -gt 20000 ]; then
    echo "folder: $n images: give a multiple of 20 in 20..20000" >&2
    return 1
  fi
  if [ ! -d "$dir" ]; then
    echo "making a folder of $n images..." >&2
    rm -rf "$dir.tmp"
    "$python" tools/fmnist_to_folder.py --out "$dir.tmp" --per-class $((n / 20)) >&2
    "$python" tools/bench/colour_jpegs.py "$dir.tmp/train" "$dir.tmp/test" >&2
    mv "$dir.tmp" "$dir"
  fi
  echo "$dir"
}

# seconds that `sdfed task check` takes on task $1 with cache $2; its output in $3
timed_check() {
  local start=$EPOCHREALTIME
  build/sdfed task check "$1" --cache "$2" >"$3"
  awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f\n", b - a }'
}

rows=()
for spec in "tiny:models/fmnist-tiny-clip.q8_0.gguf:${FOLDER_IMAGES:-10000}:$runs" \
  "vitb16:$(bench_model vitb16 q8_0):${FOLDER_IMAGES_VITB16:-10000}:1"; do
  IFS=: read -r name model images first_runs <<<"$spec"
  dir=$(make_folder "$images")
  task="$dir/task-$name.json"
  cat >"$task" <<EOF
{"name": "bench folder", "model": "$PWD/$model", "dataset": {"train": "train", "test": "test"},
 "clients": 10, "partition": {"kind": "iid"}, "method": "sdfed", "seed": 1}
EOF
  cache="$out/folder-cache-$name"
  firsts=() cached=()
  for i in $(seq 1 "$first_runs"); do
    echo "== $name, $images images, empty cache ($i/$first_runs)"
    rm -rf "$cache"
    firsts+=("$(timed_check "$task" "$cache" "$out/folder-$name.log")")
    grep 'zero-shot' "$out/folder-$name.log"
  done
  for i in 1 2 3; do
    cached+=("$(timed_check "$task" "$cache" "$out/folder-$name-cached.log")")
  done
  first=$(printf '%s\n' "${firsts[@]}" | median)
  warm=$(printf '%s\n' "${cached[@]}" | median)
  echo "first runs: ${firsts[*]} s; cached runs: ${cached[*]} s"
  rows+=("| $name | $(du -sm "$dir" | cut -f 1) MB | $images | $first_runs | $first | $(awk -v n="$images" -v t="$first" 'BEGIN { printf "%.1f", n / t }') | $warm |")
done
echo
echo "A host's folder: \`sdfed task check\` on a folder dataset (half train, half test; every other image a"
echo "28 x 28 grey PNG, the others colour JPEGs of 96..800 pixels a side), features of every image computed"
echo "into an empty cache (images/s over the whole run: scan, hashing, decoding, encoding), then read from it;"
echo "wall times in s, medians (of the first runs given, and of 3 cached runs); native, 2 cores."
echo "| model | folder | images | first runs | first run s | images/s | cached run s |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
