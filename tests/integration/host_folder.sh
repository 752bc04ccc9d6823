#!/usr/bin/env bash
# A host's real, messy folder (tests/lib/messy_folder.py: images nested
# below their class folders, a transparent drawing, a truncated PNG, an empty
# JPEG, an SVG, hidden files and a hidden folder, files that are no images):
#  - `sdfed task init` counts every image below each class folder at any
#    depth, names each bad, hidden and non-image file with why, and writes a
#    task whose rounds start with 2 volunteers; --strict refuses the folder;
#  - folders laid out as hosts' are, each through `task init`: links to
#    folders (every folder read once: a loop, or a folder read already,
#    named and not walked; two class folders that are one refused); names
#    that are not UTF-8 (a class folder's refused, a file's shown \xNN);
#    folders that mean one class refused; a link to nothing named as an
#    image counted among the images not used; one class, train/ alone,
#    train/ and val/ refused (a task of one class written by hand refused
#    by sim, task check and the aggregator); a small class's test image (held out at
#    0.2, a class of 2 to 4 images gives one); fewer images than clients, the class table's
#    alignment, an existing task file kept (--force), `task init .`'s name;
#    files beside train/ and test/ named as not used (--strict refuses);
#    a link from test/ to a folder of train/ named and not walked, a test
#    class folder that is a train one refused;
#  - `sdfed task check` finishes, names the same files, computes the 17
#    images' features once and takes them from the cache the next time, and
#    says that a folder without a test image has no zero-shot accuracy;
#    fixing the truncated PNG recomputes that one image only;
#  - the aggregator's demo shards are the clients' images as `task check`
#    partitions them, and its log names the files not used;
#  - a cache torn mid-record (the record file's own checks,
#    native/keyed_records.h);
#  - a task asking for secure aggregation refused by the aggregator in
#    asynchronous mode, which has no secure rounds (never plain ones).
#   host_folder.sh BUILD_DIR WORK_DIR
set -u
build=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
sdfed=$build/sdfed
python=/usr/bin/python3
. "$here/../../tools/port_file.sh"
rm -rf "$work" && mkdir -p "$work"
. "$here/../lib/tally.sh" host-folder
export SDFED_CACHE="$work/cache"

"$python" "$here/../lib/messy_folder.py" "$work/folder" >"$work/expected.json" || bad "generating the folder"
expected() { "$python" -c "import json, sys; e = json.load(open('$work/expected.json')); print($1)"; }

# counts per class (training + test) on the lines "  NAME  N training,  M test images"
counts() { sed -n 's/^  \([a-z]*\) *\([0-9]*\) training, *\([0-9]*\) test images$/\1 \2 \3/p' "$1" |
  awk '{ printf "%s%s: %d", (NR > 1 ? ", " : ""), $1, $2 + $3 } END { print "" }'; }
want=$(expected '", ".join(f"{c}: {n}" for c, n in sorted(e["images"].items()))')

# --- task init: every image at any depth, every file not used named
"$sdfed" task init "$work/folder" --clients 4 --out "$work/task.json" >"$work/init.log" 2>&1 ||
  bad "task init: $(cat "$work/init.log")"
[ "$(counts "$work/init.log")" = "$want" ] && ok || bad "task init counts $(counts "$work/init.log"), not $want"
grep -q "^3 images not used:" "$work/init.log" &&
  grep -q "^  buildings/tall/broken.png: invalid PNG" "$work/init.log" &&
  grep -q "^  animals/empty.jpg: file is empty" "$work/init.log" &&
  grep -q "^  plants/logo.svg: SVG: not PNG or JPEG" "$work/init.log" && ok ||
  bad "task init does not name the three bad files: $(cat "$work/init.log")"
grep -q "^1 file not used (hidden folder): plants/.thumbnails" "$work/init.log" &&
  grep -q "^2 files not used (hidden): .DS_Store, animals/._cat.jpg" "$work/init.log" &&
  grep -q "^2 files not used (not an image): notes.txt, buildings/README.md" "$work/init.log" && ok ||
  bad "task init does not name the hidden and non-image files: $(cat "$work/init.log")"
grep -q '"min_clients": 2' "$work/task.json" && grep -q '"clients_per_round": 4' "$work/task.json" &&
  grep -q "^rounds: one starts when 2 volunteers are connected" "$work/init.log" && ok ||
  bad "task init's quorum: $(cat "$work/task.json")"
if "$sdfed" task init "$work/folder" --clients 4 --out "$work/strict.json" --strict >"$work/strict.log" 2>&1; then
  bad "task init --strict accepted a folder with bad images"
else
  grep -q "task init: --strict: 3 images not used (listed above)" "$work/strict.log" && [ ! -e "$work/strict.json" ] &&
    ok || bad "task init --strict: $(cat "$work/strict.log")"
fi

# --- folders laid out as hosts' are: LAYOUT_N the folder mk_folder writes, init_log LAYOUT the output of
# task init on it (its task in LAYOUT.json)
mk_folder() { # mk_folder DIR CLASS:N...: N small PNGs in each DIR/CLASS
  "$python" - "$@" <<'PY'
import os, sys
from PIL import Image
root = sys.argv[1]
for spec in sys.argv[2:]:
    name, n = spec.rsplit(":", 1)
    os.makedirs(os.path.join(root, name), exist_ok=True)
    for i in range(int(n)):
        Image.new("RGB", (16, 16), (len(name) * 20 % 256, i * 20 % 256, 9)).save(os.path.join(root, name, f"{i:03d}.png"))
PY
}
init() { "$sdfed" task init "$work/$1" --out "$work/$1.json" "${@:2}" >"$work/$1.log" 2>&1; }

# links to folders: every folder is read once in a scan; a link to a folder above it is a loop, a link to one
# read already (another class's, or its own class's by another path) is not used, both named
mk_folder "$work/links" cat:3 dog:3 dog/sub:2
ln -s . "$work/links/cat/self" && ln -s .. "$work/links/dog/up" && ln -s ../cat "$work/links/dog/cats" &&
  ln -s sub "$work/links/dog/zz_again"
init links || bad "task init on links: $(cat "$work/links.log")"
[ "$(counts "$work/links.log")" = "cat: 3, dog: 5" ] &&
  grep -q "^2 files not used (a folder loop): cat/self, dog/up$" "$work/links.log" &&
  grep -q "^2 files not used (a folder read already by another path): dog/cats, dog/zz_again$" "$work/links.log" &&
  ok || bad "task init on folder links: $(cat "$work/links.log")"
mk_folder "$work/twins" cat:3 dog:3 && ln -s cat "$work/twins/kitten"
init twins && bad "task init took one folder as two classes" ||
  { grep -q "twins: class folders 'cat' and 'kitten' are one folder (a link)" "$work/twins.log" &&
    [ ! -e "$work/twins.json" ] && ok || bad "task init on two class folders that are one: $(cat "$work/twins.log")"; }

# names that are not UTF-8 (a zip from CP1252: 'caf\xe9'): a class folder's, which every volunteer would be sent, is
# refused with its bytes shown and nothing written; a file's not used is named so, and an image's is used (only its
# bytes travel)
mk_folder "$work/latin1" ok:5 other:5
"$python" -c "import os, shutil; d = b'$work/latin1/'; os.rename(d + b'other', d + b'caf\xe9')
shutil.copy(d + b'ok/000.png', d + b'ok/th\xe9.png'); open(d + b'ok/r\xe9sum\xe9.txt', 'w').write('hi')"
init latin1 && bad "task init took a class folder whose name is not UTF-8" ||
  { grep -qF "latin1/caf\xe9: the class folder's name is not UTF-8 text" "$work/latin1.log" &&
    grep -q "rename it" "$work/latin1.log" && [ ! -e "$work/latin1.json" ] && ok ||
    bad "task init on a class folder whose name is not UTF-8: $(cat -v "$work/latin1.log")"; }
"$python" -c "import os; d = b'$work/latin1/'; os.rename(d + b'caf\xe9', d + b'cafe')"
init latin1 && [ "$(counts "$work/latin1.log")" = "cafe: 5, ok: 6" ] &&
  grep -qF "1 file not used (not an image): ok/r\xe9sum\xe9.txt" "$work/latin1.log" && ok ||
  bad "task init on file names that are not UTF-8: $(cat -v "$work/latin1.log")"
mv "$work/latin1" "$work/latin1"$'\xe9'
init latin1$'\xe9' && bad "task init wrote a folder's path that is not UTF-8 into the task's JSON" ||
  { grep -qF "latin1\xe9: the folder's path is not UTF-8 text" "$work/latin1"$'\xe9'.log &&
    [ ! -e "$work/latin1"$'\xe9'.json ] && ok || bad "task init on a folder whose path is not UTF-8: $(cat -v "$work/latin1"$'\xe9'.log)"; }

# folders that mean one class under the folder rule (case, '_', '-' and space alike): refused, both named
mk_folder "$work/sealions" sea_lion:3 "sea lion:3" Sea-Lion:3 walrus:3
init sealions && bad "task init took folders that are one class" ||
  { grep -q "sealions: class folders 'Sea-Lion' and 'sea lion' are one class" "$work/sealions.log" &&
    [ ! -e "$work/sealions.json" ] && ok || bad "task init on folders that are one class: $(cat "$work/sealions.log")"; }
mk_folder "$work/cats" Cat:3 cat:3 dog:3
init cats && bad "task init took Cat and cat as two classes" ||
  { grep -q "cats: class folders 'Cat' and 'cat' are one class" "$work/cats.log" && ok ||
    bad "task init on Cat and cat: $(cat "$work/cats.log")"; }

# a file named as an image that cannot be read (a link to nothing) is an image not used, as one that cannot be
# opened is: --strict refuses it; a link to nothing named otherwise is a file not used
mk_folder "$work/gone" cat:3 dog:3
ln -s /gone/photo.jpg "$work/gone/dog/photo.jpg" && ln -s /gone/notes "$work/gone/dog/notes"
init gone && grep -q "^1 image not used:$" "$work/gone.log" &&
  grep -q "^  dog/photo.jpg: cannot be read: No such file or directory$" "$work/gone.log" &&
  grep -q "^1 file not used (cannot be read: No such file or directory): dog/notes$" "$work/gone.log" && ok ||
  bad "task init on a link to nothing: $(cat "$work/gone.log")"
rm "$work/gone.json"
init gone --strict && bad "task init --strict took an image that cannot be read" ||
  { grep -q "task init: --strict: 1 image not used" "$work/gone.log" && ok ||
    bad "task init --strict on a link to nothing: $(cat "$work/gone.log")"; }

# layouts that would make a misleading task: one class (zero-shot "100%"), train/ alone, train/ and val/ (two
# classes named "train" and "val"): refused, saying why
mk_folder "$work/one" cat:5
init one && bad "task init took one class" ||
  { grep -q "one: one class folder ('cat'): a task needs at least two classes" "$work/one.log" &&
    [ ! -e "$work/one.json" ] && ok || bad "task init on one class: $(cat "$work/one.log")"; }
# a one-class task written by hand (a folder of one class, or "classes" of one entry) is refused by sim, task check
# and the aggregator alike, naming the class
printf '{"dataset": {"folder": "one", "test_fraction": 0.2}, "clients": 2, "partition": {"kind": "iid"}}' >"$work/one-folder.json"
printf '{"dataset": {"folder": "one", "test_fraction": 0.2}, "classes": ["cat"], "clients": 2,
  "partition": {"kind": "iid"}}' >"$work/one-key.json"
for t in one-folder one-key; do
  for run in "sim --task $work/$t.json --out $work/$t-sim" "task check $work/$t.json"; do
    "$sdfed" $run >"$work/$t.log" 2>&1 && bad "sdfed $run took a task of one class" ||
      { grep -q "one class ('cat'): a task needs at least two classes" "$work/$t.log" && ! grep -q '^round' "$work/$t.log" &&
        ok || bad "sdfed $run on a task of one class: $(cat "$work/$t.log")"; }
  done
  timeout 30 "$build/sdfed-aggregator" --task "$work/$t.json" --state "$work/$t-state" --port 0 --host 127.0.0.1 \
    >"$work/$t.log" 2>&1 &&
    bad "the aggregator took a task of one class" ||
    { grep -q "one class ('cat'): a task needs at least two classes" "$work/$t.log" && ok ||
      bad "the aggregator on a task of one class: $(cat "$work/$t.log")"; }
done
mk_folder "$work/trainonly" train/cat:3 train/dog:3
init trainonly && bad "task init took train/ alone as one class" ||
  { grep -q "trainonly holds train/ but no test/" "$work/trainonly.log" && ok ||
    bad "task init on train/ alone: $(cat "$work/trainonly.log")"; }
mk_folder "$work/trainval" train/cat:3 train/dog:3 val/cat:2 val/dog:2
init trainval && bad "task init took train/ and val/ as two classes" ||
  { grep -q "trainval holds train/ and val/ but no test/: only test/ is read as the test split" "$work/trainval.log" &&
    ok || bad "task init on train/ and val/: $(cat "$work/trainval.log")"; }

# fewer training images than the default 10 clients: as many clients as images, said plainly; more clients asked
# for than images: said how many get none. The task's name is the folder's (from "." too); class names line up by
# characters; an existing task file is kept unless --force
mk_folder "$work/few" a:4 b:4 "café:4"
init few && grep -q "^partition: iid, 9 clients of 1 training image each (9 training images are too few for 10" \
  "$work/few.log" && grep -q '"clients": 9,' "$work/few.json" && ok || bad "task init on 9 images: $(cat "$work/few.log")"
"$python" - "$work/few.log" <<'PY' && ok || bad "the class table is not aligned: $(cat "$work/few.log")"
import sys
rows = [l for l in open(sys.argv[1], encoding="utf-8") if l.endswith(" test images\n")]
sys.exit(not (len(rows) == 3 and len({l.index(" training") for l in rows}) == 1))
PY
init few --clients 12 && bad "task init overwrote an existing task file" ||
  { grep -q "few.json exists (a task edited by hand?): --force to replace it" "$work/few.log" &&
    grep -q '"clients": 9,' "$work/few.json" && ok || bad "task init on an existing task file: $(cat "$work/few.log")"; }
init few --clients 12 --force && grep -q "^partition: iid, 9 training images for 12 clients: 3 get none" "$work/few.log" &&
  grep -q '"clients": 12,' "$work/few.json" && ok || bad "task init --clients 12 on 9 images: $(cat "$work/few.log")"
(cd "$work/few" && "$sdfed" task init . --out "$work/dot.json" >"$work/dot.log" 2>&1) &&
  grep -q '"name": "few",' "$work/dot.json" && grep -q "\"folder\": \"$work/few\"," "$work/dot.json" && ok ||
  bad "task init .: $(cat "$work/dot.log" "$work/dot.json")"

# one folder held out at 0.2: a class of 2 to 4 images gives its last to the test split (by the rule alone, none),
# one of a single image keeps it for training, the others as the rule has it (5: 1, 7: 1, 10: 2)
mk_folder "$work/sizes" one:1 two:2 four:4 five:5 seven:7 ten:10
init sizes --clients 3 && [ "$(sed -n 's/^  \([a-z]*\) *\([0-9]*\) training, *\([0-9]*\) test images$/\1 \2 \3/p' \
  "$work/sizes.log" | tr '\n' ',')" = "five 4 1,four 3 1,one 1 0,seven 6 1,ten 8 2,two 1 1," ] && ok ||
  bad "task init's test split of small classes: $(cat "$work/sizes.log")"

# train/ and test/: everything else in the folder (another class folder, validation/, a README) is named as not
# used, its images among the images not used (--strict refuses them)
mk_folder "$work/splits" train/cat:5 train/dog:5 test/cat:2 test/dog:2 extra_class:4 validation/cat:2 validation/dog:2
echo hi >"$work/splits/README.txt"
init splits && [ "$(counts "$work/splits.log")" = "cat: 7, dog: 7" ] && grep -q "^8 images not used:$" "$work/splits.log" &&
  grep -q "^  extra_class/003.png: not in train/ or test/ (a task reads those two)$" "$work/splits.log" &&
  grep -q "^  validation/dog/001.png: not in train/ or test/ (a task reads those two)$" "$work/splits.log" &&
  grep -q "^1 file not used (not an image): README.txt$" "$work/splits.log" && ok ||
  bad "task init on train/, test/ and more: $(cat "$work/splits.log")"
rm "$work/splits.json"
init splits --strict && bad "task init --strict took images beside train/ and test/" ||
  { grep -q "task init: --strict: 8 images not used (listed above)" "$work/splits.log" && [ ! -e "$work/splits.json" ] &&
    ok || bad "task init --strict on train/, test/ and more: $(cat "$work/splits.log")"; }

# train/ and test/ read as one dataset, every folder once: a link in test/ to a folder of train/ is named and not
# walked (the training images are not tested on), and a test class folder that is a train one is refused
mk_folder "$work/crossed" train/cat:5 train/dog:5 test/cat:2 test/dog:2
ln -s ../../train/dog "$work/crossed/test/dog/more"
init crossed && [ "$(counts "$work/crossed.log")" = "cat: 7, dog: 7" ] &&
  grep -q "^1 file not used (a folder read already by another path): test/dog/more$" "$work/crossed.log" && ok ||
  bad "task init on a link from test/ to train/: $(cat "$work/crossed.log")"
rm -r "$work/crossed/test/cat" "$work/crossed.json" && ln -s ../train/cat "$work/crossed/test/cat"
init crossed && bad "task init took train/cat as test/cat too" ||
  { grep -q "crossed/test/cat is $work/crossed/train/cat, read already (a link): the test split would hold training" \
    "$work/crossed.log" && [ ! -e "$work/crossed.json" ] && ok ||
    bad "task init on test/cat -> ../train/cat: $(cat "$work/crossed.log")"; }

# --- task check: finishes, names them, caches the 17 images' features
"$sdfed" task check "$work/task.json" >"$work/check.log" 2>&1 || bad "task check: $(cat "$work/check.log")"
[ "$(counts "$work/check.log")" = "$want" ] && grep -q "^image features: 0 from the cache, 17 computed" "$work/check.log" &&
  grep -q "^3 images not used:" "$work/check.log" && grep -q "^zero-shot accuracy on the" "$work/check.log" && ok ||
  bad "task check: $(cat "$work/check.log")"
"$sdfed" task check "$work/task.json" >"$work/check2.log" 2>&1 &&
  grep -q "^image features: 17 from the cache, 0 computed" "$work/check2.log" && ok ||
  bad "a second task check computed features again: $(grep '^image features' "$work/check2.log")"
# a folder of one image a class has no test image: no zero-shot accuracy, not 0.00%
mk_folder "$work/single" a:1 b:1 c:1
init single && "$sdfed" task check "$work/single.json" >"$work/single-check.log" 2>&1 &&
  grep -q "^zero-shot accuracy: none (no test images)$" "$work/single-check.log" && ok ||
  bad "task check without test images: $(cat "$work/single.log" "$work/single-check.log")"
# no message on the progress line: every line of stderr is whole (no carriage returns in a file)
! grep -q $'\r' "$work/check.log" && ok || bad "a progress line in a log file"

# fixing the truncated PNG recomputes that image only
"$python" -c "from PIL import Image; Image.new('RGB', (61, 37), (50, 100, 210)).save('$work/folder/buildings/tall/broken.png')"
"$sdfed" task check "$work/task.json" >"$work/fixed.log" 2>&1 &&
  grep -q "^image features: 17 from the cache, 1 computed" "$work/fixed.log" && grep -q "^2 images not used:" "$work/fixed.log" &&
  ok || bad "after fixing one file: $(cat "$work/fixed.log")"
fixed=$(counts "$work/fixed.log")

# --- the aggregator's demo shards: each client's images as the CLI's partition gives them
clients() { sed -n 's/^client *\([0-9]*\): *\([0-9]*\) training, *\([0-9]*\) test images; by class: \(.*\)$/\1: \2 \3 \4/p' "$1"; }
"$build/sdfed-aggregator" --task "$work/task.json" --state "$work/state/nested/here" --port 0 --host 127.0.0.1 \
  --port-file "$work/port" 2>"$work/aggregator.log" &
pid=$!
if port=$(port_file "$work/port" "$pid"); then
  "$python" - "$port" >"$work/shards.txt" <<'PY'
import json, sys, urllib.request
port = sys.argv[1]
task = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/task"))
for k in range(task["task"]["clients"]):
    shard = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/demo/shard?k={k}"))
    assert all(len(shard[s]["files"]) == len(shard[s]["labels"]) for s in ("train", "test"))
    by_class = [shard["train"]["labels"].count(c) for c in range(len(task["classes"]))]
    print(f"{k}: {len(shard['train']['labels'])} {len(shard['test']['labels'])} {' '.join(map(str, by_class))}")
PY
  [ -s "$work/shards.txt" ] && [ "$(cat "$work/shards.txt")" = "$(clients "$work/fixed.log")" ] && ok ||
    bad "the demo shards hold $(cat "$work/shards.txt"), the CLI's clients $(clients "$work/fixed.log")"
  grep -q '"event": "dataset", "classes": 3, "train": [0-9]*, "test": [0-9]*, "skipped": 7' "$work/aggregator.log" &&
    grep -q '"event": "dataset_skipped".*animals/empty.jpg: file is empty' "$work/aggregator.log" && ok ||
    bad "the aggregator's log does not name the files not used: $(grep dataset "$work/aggregator.log")"
else
  bad "the aggregator did not start: $(tail -n 3 "$work/aggregator.log")"
fi
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null

# --- the cache's record file: a torn record is not found, and is cut by the next writer
records=$(ls "$work"/cache/*/pooled-v3.records)
size=$(stat -c %s "$records")
head -c $((size - 7)) "$records" >"$work/torn" && cp "$work/torn" "$records"
"$sdfed" task check "$work/task.json" >"$work/torn.log" 2>&1 &&
  grep -q "^image features: 17 from the cache, 1 computed" "$work/torn.log" && [ "$(stat -c %s "$records")" = "$size" ] &&
  ok || bad "a torn cache record: $(grep '^image features' "$work/torn.log"), $(stat -c %s "$records") bytes, not $size"

# --- a task that asks for secure aggregation runs secure rounds only: asynchronous ones (never plain) are refused
"$python" -c "import json; t = json.load(open('$work/task.json')); t['secure_aggregation'] = {}; json.dump(t, open('$work/secure.json', 'w'))"
"$build/sdfed-aggregator" --task "$work/secure.json" --state "$work/secure-state" --port 0 --mode async \
  2>"$work/secure.log" >&2 && bad "the aggregator ran a secure task's rounds asynchronously, in the clear" ||
  { grep -qF '"secure_aggregation" runs synchronous rounds, not asynchronous ones (--mode async)' \
    "$work/secure.log" && ok || bad "a secure task in async mode: $(cat "$work/secure.log")"; }

summary
[ "$failed" -eq 0 ]
