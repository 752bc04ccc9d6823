#!/usr/bin/env bash
# sdfed convert writes its model whole or not at all: four conversions of one
# output at once all succeed and leave exactly the file one conversion alone
# writes; a conversion that fails (its input, or the disk full mid-write)
# leaves the file that was there, and none leaves a temporary file behind;
# the errors name the output given and why.
#   convert_whole.sh SDFED CLIP_DATA_DIR WORK_DIR
set -eu
sdfed=$1 clip=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
convert() { # convert IN OUT
  "$sdfed" convert --in "$1" --vocab "$clip/bpe_simple_vocab_16e6.txt.gz" --type q8_0 --out "$2" >/dev/null
}
convert "$clip/mini-vit.hf.safetensors" "$work/alone.gguf"

for round in 1 2 3; do
  pids=()
  for i in 1 2 3 4; do
    convert "$clip/mini-vit.hf.safetensors" "$work/shared.gguf" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || { echo "round $round: a conversion beside three others of the same output failed" >&2; exit 1; }
  done
  cmp "$work/alone.gguf" "$work/shared.gguf"
done

# a checkpoint that opens but lacks the last of its tensors: the conversion
# fails once its output is open
/usr/bin/python3 "$(dirname "$0")/../lib/edit_safetensors.py" "$clip/mini-vit.hf.safetensors" "$work/short.safetensors" \
  "last = sorted(h)[-1]; del h[last]; del blobs[last]"
if convert "$work/short.safetensors" "$work/shared.gguf" 2>"$work/short.err"; then
  echo "a checkpoint without one of its tensors converted" >&2
  exit 1
fi
cmp "$work/alone.gguf" "$work/shared.gguf"

# the disk full mid-write (a file size limit of 100 KiB: writes past it fail,
# EFBIG, as ENOSPC would): the error names the output and why, the old file stays
if (ulimit -f 100 && trap '' XFSZ && convert "$clip/mini-vit.hf.safetensors" "$work/shared.gguf") 2>"$work/full.err"; then
  echo "a model was written past the file size limit" >&2
  exit 1
fi
grep -qF "$work/shared.gguf: File too large" "$work/full.err" ||
  { echo "the error does not name the output and why: $(cat "$work/full.err")" >&2; exit 1; }
cmp "$work/alone.gguf" "$work/shared.gguf"

# an output in a folder that is not there: the error names the output
if convert "$clip/mini-vit.hf.safetensors" "$work/missing/model.gguf" 2>"$work/missing.err"; then
  echo "a model was written into a folder that is not there" >&2
  exit 1
fi
grep -qF "$work/missing/model.gguf: No such file or directory" "$work/missing.err" ||
  { echo "the error does not name the output: $(cat "$work/missing.err")" >&2; exit 1; }

left=$(find "$work" -name '*.tmp')
[ -z "$left" ] || { echo "temporary files left behind: $left" >&2; exit 1; }
echo "convert_whole: 5 passed, 0 failed"
