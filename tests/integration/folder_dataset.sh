#!/usr/bin/env bash
# Folder datasets (ImageFolder: one sub-folder per class) in `sdfed sim`:
#  1. Fashion-MNIST written out as grey PNGs (tools/fmnist_to_folder.py)
#     gives the same features, bit for bit, as the IDX files (the two
#     feature-cache files are equal byte for byte) and, with its classes
#     named in label order, the same `sdfed sim` global-prompt history;
#  2. a small colour dataset of JPEGs and PNGs of mixed sizes, with one test
#     image in three held out of one folder (test_fraction), classes from
#     the folder names, a file that is not an image skipped and counted,
#     with the tiny default model and with another CLIP (the reference
#     mini-vit: 64x64 colour images in 16x16 patches, other widths and depths);
#  3. bad datasets, each refused with an error naming the folder or the
#     class, before anything is computed;
# and `sdfed task init` / `sdfed task check` on the Fashion-MNIST folder and,
# with the other CLIP, on the small one.
#   folder_dataset.sh BUILD_DIR WORK_DIR OTHER_MODEL.gguf
set -u
build=$1 work=$2 other_model=$3
sdfed=$build/sdfed
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
model="$root/models/fmnist-tiny-clip.q8_0.gguf"
rm -rf "$work" && mkdir -p "$work"
. "$here/../lib/tally.sh" folder-dataset

task() { # task FILE JSON_OVERRIDES: the pathological task, 2 rounds, keys replaced
  /usr/bin/python3 - "$root/tasks/fmnist-pathological.json" "$model" "$2" >"$1" <<'PY'
import json, sys
task = json.load(open(sys.argv[1]))
task.update({"model": sys.argv[2], "rounds": 2})
task.update(json.loads(sys.argv[3]))
print(json.dumps(task))
PY
}

# --- 1. Fashion-MNIST as PNGs: the same features as the IDX files
/usr/bin/python3 "$root/tools/fmnist_to_folder.py" --out "$work/fmnist" 2>"$work/export.log" ||
  bad "export: $(tail -n 2 "$work/export.log")"
task "$work/idx.json" '{}'
# the classes named as Fashion-MNIST names them, in its label order: the folders
# ("T-shirt_top", "Ankle_boot") match them, so the partition and the prompts are the same
task "$work/fmnist/task.json" '{"dataset": {"train": "train", "test": "test"}, "classes": ["T-shirt/top", "Trouser",
  "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]}'
"$sdfed" sim --task "$work/idx.json" --out "$work/idx-sim" --cache "$work/cache" >"$work/idx.log" 2>&1 ||
  bad "sim on the IDX files: $(tail -n 2 "$work/idx.log")"
records=$(ls "$work"/cache/*/pooled-v3.records 2>/dev/null)
idx_bytes=$(stat -c %s "$records" 2>/dev/null || echo 0)
"$sdfed" sim --task "$work/fmnist/task.json" --out "$work/folder-sim" --cache "$work/cache" >"$work/folder.log" 2>&1 ||
  bad "sim on the folder: $(tail -n 2 "$work/folder.log")"
grep -q "sim: 10 classes, 30000 training and 10000 test images" "$work/folder.log" && ok ||
  bad "the folder's images were not all found: $(grep '^sim:' "$work/folder.log")"
# the cache's records (native/keyed_records.h: 16-byte header; key, 64 floats, CRC): the features the
# folder's PNGs added (all 40,000 images: a folder's are all encoded) hold exactly the features of the IDX
# images the IDX run encoded (its clients' images; keyed by the files' content, not the pixels)
/usr/bin/python3 - "$records" "$idx_bytes" <<'PY' && ok || bad "the folder's features differ from the IDX files'"
import sys
data, split = open(sys.argv[1], "rb").read(), int(sys.argv[2])
size = 32 + 64 * 4 + 4
def payloads(lo, hi):
    assert (hi - lo) % size == 0, "a torn record"
    return [data[i + 32:i + size - 4] for i in range(lo, hi, size)]
idx, folder = payloads(16, split), payloads(split, len(data))
missing = set(idx) - set(folder)
print(f"features: {len(idx)} from the IDX files, {len(folder)} from the folder, {len(missing)} of the IDX's not among them")
sys.exit(0 if idx and len(folder) == 40000 and not missing else 1)
PY
sim_history() { grep -o '"global_sha256": "[0-9a-f]*"' "$1/results.json"; }
[ -n "$(sim_history "$work/idx-sim")" ] && [ "$(sim_history "$work/idx-sim")" = "$(sim_history "$work/folder-sim")" ] &&
  ok || bad "the folder's sim history differs from the IDX files'"
# a second run reads the cache (each image found by its file's content)
"$sdfed" sim --task "$work/fmnist/task.json" --out "$work/folder-sim2" --cache "$work/cache" >"$work/folder2.log" 2>&1
grep -q "sim: image features: 40000 from the cache, 0 computed" "$work/folder2.log" && ok ||
  bad "the second run encoded the folder again: $(grep '^sim:' "$work/folder2.log")"

# sdfed task init writes a task for the folder, sdfed task check reads it back: classes, clients, zero-shot
"$sdfed" task init "$work/fmnist" --clients 5 --out "$work/init.json" >"$work/init.log" 2>&1 &&
  grep -q "T-shirt top  *[0-9]* training,  *1000 test images" "$work/init.log" && ok ||
  bad "task init: $(tail -n 3 "$work/init.log")"
"$sdfed" task check "$work/init.json" --cache "$work/cache" >"$work/check.log" 2>&1 &&
  [ "$(grep -c '^client ' "$work/check.log")" = 5 ] &&
  grep -q "zero-shot accuracy on the 10000 test images: [0-9.]*%" "$work/check.log" && ok ||
  bad "task check: $(tail -n 3 "$work/check.log")"

# --- 2. a small colour dataset: JPEG and PNG, mixed sizes, test images held out
/usr/bin/python3 - "$work/small" <<'PY'
import os, sys
from PIL import Image
out = sys.argv[1]
for c, (name, colour) in enumerate([("red_panda", (200, 60, 20)), ("Sea-lion", (40, 90, 200)), ("zebra", (230, 230, 230))]):
    os.makedirs(os.path.join(out, name))
    for i in range(6):
        size = (40 + 13 * i, 30 + 7 * c)
        img = Image.new("RGB", size, tuple((v + 9 * i) % 256 for v in colour))
        img.save(os.path.join(out, name, f"{c}{i}.jpg" if i % 2 else f"{c}{i}.png"))
open(os.path.join(out, "zebra", "notes.txt"), "w").write("not an image\n")
PY
task "$work/small/task.json" '{"dataset": {"folder": ".", "test_fraction": 0.34}, "clients": 3, "clients_per_round": 3,
  "partition": {"kind": "pathological", "classes_per_client": 2}, "method": "coop"}'
for m in "$model" "$other_model"; do
  /usr/bin/python3 - "$work/small/task.json" "$m" >"$work/small/task-model.json" <<'PY'
import json, sys
task = json.load(open(sys.argv[1]))
task["model"] = sys.argv[2]
print(json.dumps(task))
PY
  "$sdfed" sim --task "$work/small/task-model.json" --out "$work/small-sim" --cache "$work/cache" >"$work/small.log" 2>&1 &&
    grep -q "sim: 3 classes, 12 training and 6 test images, 3 files not used" "$work/small.log" &&
    grep -q "final accuracy" "$work/small.log" && ok || bad "the small folder with $m: $(grep '^sim:\|sdfed:' "$work/small.log")"
done

# task init on the small folder with the other CLIP: too few images a client for a Dirichlet split, so iid;
# task check then names the model's own shape
"$sdfed" task init "$work/small" --clients 3 --model "$other_model" --out "$work/small-init.json" >"$work/small-init.log" 2>&1 &&
  grep -q "partition: iid, about 5 training images a client" "$work/small-init.log" &&
  "$sdfed" task check "$work/small-init.json" --cache "$work/cache" >"$work/small-check.log" 2>&1 &&
  grep -q "images 64x64 in 16x16 patches" "$work/small-check.log" && [ "$(grep -c '^client ' "$work/small-check.log")" = 3 ] &&
  ok || bad "task init and check with another CLIP: $(tail -n 3 "$work/small-init.log" "$work/small-check.log")"

# --- 3. bad datasets: an error naming what is wrong
expect_error() { # expect_error WHAT TASK_FILE PATTERN
  if "$sdfed" sim --task "$2" --out "$work/bad-sim" --cache "$work/cache" >"$work/bad.log" 2>&1; then
    bad "$1: accepted"
  elif grep -q "$3" "$work/bad.log"; then ok
  else bad "$1: the error does not say '$3': $(cat "$work/bad.log")"; fi
}
task "$work/missing.json" '{"dataset": {"train": "nowhere/train", "test": "nowhere/test"}}'
expect_error "a missing folder" "$work/missing.json" "nowhere/train: No such file or directory"
task "$work/unnamed.json" '{"dataset": "folder"}'
expect_error "a folder task naming no folders" "$work/unnamed.json" "unnamed.json: task: key 'dataset': \"folder\" names no folders"
mkdir -p "$work/empty/train/cat" "$work/empty/train/dog" "$work/empty/test/cat" "$work/empty/test/dog"
cp "$work/small/zebra/20.png" "$work/empty/train/cat/" && cp "$work/small/zebra/20.png" "$work/empty/test/cat/" &&
  cp "$work/small/zebra/20.png" "$work/empty/test/dog/"
task "$work/empty/task.json" '{"dataset": {"train": "train", "test": "test"}}'
expect_error "a class without images" "$work/empty/task.json" "class 'dog' has no images"
mkdir -p "$work/extra/train/cat" "$work/extra/test/cat" "$work/extra/test/bird"
cp "$work/small/zebra/20.png" "$work/extra/train/cat/" && cp "$work/small/zebra/20.png" "$work/extra/test/cat/" &&
  cp "$work/small/zebra/20.png" "$work/extra/test/bird/"
task "$work/extra/task.json" '{"dataset": {"train": "train", "test": "test"}}'
expect_error "a test folder without its class" "$work/extra/task.json" "folders without a class: 'bird'"
task "$work/extra/named.json" '{"dataset": {"train": "train", "test": "test"}, "classes": ["cat", "fish"]}'
expect_error "a class without its folder" "$work/extra/named.json" "classes without a folder: 'fish'"
# an image that cannot be decoded is named and left out, not fatal (--strict refuses it)
mkdir -p "$work/corrupt/train/cat" "$work/corrupt/test/cat" "$work/corrupt/train/dog" "$work/corrupt/test/dog"
for c in cat dog; do cp "$work/small/zebra/20.png" "$work/small/zebra/22.png" "$work/corrupt/train/$c/" &&
  cp "$work/small/zebra/20.png" "$work/corrupt/test/$c/"; done
head -c 100 "$work/small/zebra/21.jpg" >"$work/corrupt/train/cat/cut.jpg" # a JPEG cut short
task "$work/corrupt/task.json" '{"dataset": {"train": "train", "test": "test"}, "clients": 2, "clients_per_round": 2,
  "partition": {"kind": "iid"}, "method": "coop"}'
"$sdfed" task check "$work/corrupt/task.json" --cache "$work/cache" >"$work/corrupt.log" 2>&1 &&
  grep -q "^  cat *2 training, *1 test images" "$work/corrupt.log" &&
  grep -q "^  train/cat/cut.jpg: JPEG file is truncated" "$work/corrupt.log" && ok ||
  bad "task check with a truncated JPEG: $(cat "$work/corrupt.log")"
if "$sdfed" task check "$work/corrupt/task.json" --cache "$work/cache" --strict >"$work/corrupt.log" 2>&1; then
  bad "task check --strict accepted a truncated JPEG"
else
  grep -q "task check: --strict: 1 image not used" "$work/corrupt.log" && ok || bad "--strict: $(cat "$work/corrupt.log")"
fi
echo "not a model" >"$work/model.gguf"
task "$work/badmodel.json" '{"model": "model.gguf"}'
expect_error "a model that is not a CLIP GGUF" "$work/badmodel.json" "model.gguf"
"$sdfed" task init "$work/small" --model "$work/model.gguf" --out "$work/never.json" >"$work/bad.log" 2>&1 ||
  { grep -q "model.gguf: gguf: not a GGUF file" "$work/bad.log" && [ ! -e "$work/never.json" ] && ok ||
    bad "task init with a model that is not a CLIP GGUF: $(cat "$work/bad.log")"; }
task "$work/both.json" '{"dataset": {"train": "a", "folder": "b"}}'
expect_error "a dataset with both forms" "$work/both.json" "key 'dataset' must be"

summary
[ "$failed" -eq 0 ]
