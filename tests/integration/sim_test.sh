#!/usr/bin/env bash
# sdfed sim with the default tiny model on Fashion-MNIST:
#  - a 3-client, 3-round federation: SDFed beats zero-shot on the same split;
#    its lines and results.json count rounds from 0 ("round 2: ... (3 of 3
#    rounds done)") and its last line says what the final accuracy is;
#  - the same seed gives the same rounds, another seed a different split;
#  - --isa avx2 and portable give the same features and rounds as the CPU's
#    best instruction set;
#  - --validation tests every client on a fifth of its training images held
#    out, --lr overrides the task's;
#  - a run encodes only its clients' images, not the whole pool;
#  - the feature cache keeps the Q8_0 tower's integer features and its f32
#    activations' (--f32-images) apart, and resumes from a file cut in the
#    middle of a record with the same features;
#  - tools/compare.py --archive keeps each finished run and gives it back to
#    a later comparison (no run made again, the same table), and runs again
#    what a changed task or other sim flags made stale;
#  - secure aggregation (tasks/fmnist-secure.json, 5 rounds): every round
#    line says its stages (10 advertised, shared, masked and survivors),
#    results.json keeps them with the plan (k 4, t 2, 7 inputs), each
#    round's global is the plain mean of the same quantised inputs (its
#    sha256 is plain_sha256), a second run gives the same globals (fresh
#    keys and masks, the same sums), and the final accuracy is within 1
#    point of the same task's plain run (quantisation's cost; docs/
#    secure-aggregation.md); with the task's dropouts at every stage (seed
#    7, 6 rounds) rounds are abandoned at the masked stage and in the
#    unmasking, the global unchanged, and the next round runs; with noise
#    (epsilon 8 over 3 rounds) each round says the epsilon spent, rising to
#    at most 8;
#  - devices: on a device too slow for the fixed length every round is
#    missed; the adaptive rule fits the length, or a partial epoch, to the
#    budget (the round lines' simulated time and misses, results.json's
#    devices and steps); a client that misses rounds sits them out as the
#    aggregator's pace steering says;
#  - small folders of PNGs made here: 4 test images over 10 clients go to
#    the first 4, the 6 without one have no accuracy (null in results.json)
#    and are left out of the means, which the log says; with no test image
#    anywhere, no accuracy, said plainly; a volunteer's --data with a task
#    naming no classes is matched to the task's folders (another class's
#    folder refused); --out that is a file is refused before anything runs;
#  - bad task files and flags: one error line naming the key, exit 1 (the
#    task) or 2 (a flag).
#   sim_test.sh SDFED MODEL.gguf WORK_DIR
set -u
sdfed=$1 model=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
rm -rf "$work/runs" && mkdir -p "$work/runs"
cache="$work/cache"
rm -rf "$cache" # the checks below are of what a first run writes into an empty cache
. "$here/../lib/tally.sh" sim_test

cat >"$work/task.json" <<JSON
{"model": "$model", "clients": 3, "partition": {"kind": "pathological", "classes_per_client": 2, "shots": 16},
 "rounds": 3, "batch_size": 16, "lr": 0.01, "seed": 7}
JSON

final() { sed -n 's/^final accuracy (mean of the last [0-9]* rounds): \([0-9.]*\)%$/\1/p' "$1"; }
run() { # run NAME ARGS...: sdfed sim into $work/runs/NAME, output in NAME.log
  local name=$1
  shift
  "$sdfed" sim --task "$work/task.json" --cache "$cache" --out "$work/runs/$name" "$@" >"$work/runs/$name.log" 2>&1
}

run zeroshot --method zeroshot || bad "zeroshot run: $(tail -n 1 "$work/runs/zeroshot.log")"
run sdfed --method sdfed || bad "sdfed run: $(tail -n 1 "$work/runs/sdfed.log")"
z=$(final "$work/runs/zeroshot.log") s=$(final "$work/runs/sdfed.log")
echo "zero-shot $z%, sdfed $s%"
if [ -n "$z" ] && [ -n "$s" ] && awk -v a="$s" -v b="$z" 'BEGIN { exit !(a > b) }'; then ok; else bad "sdfed ($s%) does not beat zero-shot ($z%)"; fi
for f in results.json accuracy.svg; do
  [ -s "$work/runs/sdfed/$f" ] && ok || bad "sdfed wrote no $f"
done
# the first run encoded its clients' images (their training and test images), not the pool's 40,000
"$python" - "$work/runs/sdfed/results.json" "$work/runs/zeroshot.log" <<'PY' && ok || bad "the first run's encoding: $(grep '^sim: image' "$work/runs/zeroshot.log")"
import json, re, sys
r = json.load(open(sys.argv[1]))
computed = int(re.search(r"^sim: image features: 0 from the cache, (\d+) computed$", open(sys.argv[2]).read(), re.M)[1])
shards = sum(c["train"] + c["test"] for c in r["clients"])  # (seed 7: no test image in two clients' splits)
sys.exit(0 if computed == shards < 40000 else 1)
PY
# rounds count from 0 (docs/protocol.md), with the rounds done said as a count; the final accuracy says what it is
lines=$(sed -n 's/^round \([0-9]*\): accuracy [0-9.]*% (\([0-9]*\) of \([0-9]*\) rounds done), .*/\1 \2 \3/p' "$work/runs/sdfed.log" | tr '\n' ',')
[ "$lines" = "0 1 3,1 2 3,2 3 3," ] && ok || bad "the round lines: $lines: $(grep '^round' "$work/runs/sdfed.log")"
grep -q "^final accuracy (mean of the last 3 rounds): $s%$" "$work/runs/sdfed.log" && ok ||
  bad "the final line: $(tail -n 1 "$work/runs/sdfed.log")"
"$python" -c 'import json, sys; sys.exit([r["round"] for r in json.load(open(sys.argv[1]))["rounds"]] != [0, 1, 2])' \
  "$work/runs/sdfed/results.json" && ok || bad "results.json's rounds are not 0, 1, 2"

# the same seed, the same federation; another seed, another split
run again --method sdfed
run other --method sdfed --seed 8
same=$("$python" - "$work/runs" <<'PY'
import json, sys
load = lambda n: json.load(open(f"{sys.argv[1]}/{n}/results.json"))
a, b, c = load("sdfed"), load("again"), load("other")
strip = lambda r: [(x["accuracy"], x["client_accuracy"], x["losses"]) for x in r["rounds"]]
print(int(strip(a) == strip(b) and a["clients"] == b["clients"]), int(a["clients"] != c["clients"] or strip(a) != strip(c)))
PY
)
[ "$same" = "1 1" ] && ok || bad "reproducibility: same seed equal / other seed different = $same"

# --isa: the native tiles capped at AVX2 (the image features encoded again, into a cache of their own) and at
# portable C (training only, on the first cache's features) give the same features and the same federation, round
# by round, as the CPU's best: nothing in a run depends on the instruction set, so none on an Intel or AMD CPU
for isa in avx2 portable; do
  isa_cache=$cache
  [ "$isa" = avx2 ] && isa_cache="$work/cache-avx2" && rm -rf "$isa_cache"
  "$sdfed" sim --task "$work/task.json" --cache "$isa_cache" --out "$work/runs/isa-$isa" --method sdfed --isa "$isa" \
    >"$work/runs/isa-$isa.log" 2>&1
  status=$?
  if [ $status = 2 ] && grep -q "this CPU does not run it" "$work/runs/isa-$isa.log"; then
    echo "--isa $isa: not checked, this CPU lacks it"
    continue
  fi
  [ $status = 0 ] || { bad "--isa $isa run: $(tail -n 1 "$work/runs/isa-$isa.log")"; continue; }
  same=$("$python" - "$work/runs" "$isa" <<'PY'
import json, sys
load = lambda n: json.load(open(f"{sys.argv[1]}/{n}/results.json"))
a, b = load("sdfed"), load("isa-" + sys.argv[2])
strip = lambda r: [(x["accuracy"], x["client_accuracy"], x["losses"], x["global_sha256"]) for x in r["rounds"]]
print(int(strip(a) == strip(b)))
PY
)
  [ "$same" = 1 ] && ok || bad "--isa $isa: the rounds differ from the CPU's best instruction set's"
  if [ "$isa" = avx2 ]; then # every record (the image's key and its features) one the best wrote too
    for f in "$cache"/*-int8/*.records; do
      "$python" - "$isa_cache/${f#"$cache"/}" "$f" <<'PY' && ok || bad "--isa avx2: ${f#"$cache"/} differs from the best's"
import sys
size = 32 + 64 * 4 + 4
def records(path):
    data = open(path, "rb").read()
    return [data[i:i + size] for i in range(16, len(data), size)]
isa, best = records(sys.argv[1]), set(records(sys.argv[2]))
sys.exit(0 if isa and all(r in best for r in isa) else 1)
PY
    done
  fi
done

# --validation: each client (2 classes of 16 shots) trains on 13 of each and is tested on the 3 held out, never
# on the test split; --lr changes the run
run validation --method sdfed --validation || bad "validation run: $(tail -n 1 "$work/runs/validation.log")"
run lr --method sdfed --lr 0.05 || bad "--lr run: $(tail -n 1 "$work/runs/lr.log")"
checked=$("$python" - "$work/runs" <<'PY'
import json, sys
load = lambda n: json.load(open(f"{sys.argv[1]}/{n}/results.json"))
v, a, lr = load("validation"), load("sdfed"), load("lr")
held = all(c["train"] == 26 and c["test"] == 6 for c in v["clients"])
print(int(held), int(abs(lr["task"]["lr"] - 0.05) < 1e-6 and lr["rounds"] != a["rounds"]))
PY
)
[ "$checked" = "1 1" ] && grep -q "sim: validation: each client tested on a fifth of its training images" \
  "$work/runs/validation.log" && ok || bad "--validation (held out 6 of 32, 26 trained) / --lr (changes the run): $checked"

# the Q8_0 model's image features come from integer products: a folder of
# their own beside the model's hash, apart from f32 activations' features
sha=$(sha256sum "$model" | cut -d' ' -f1)
file="$cache/$sha-int8/pooled-v3.records"
[ -f "$file" ] && ok || bad "no $file (the cache holds: $(ls "$cache"))"
# --f32-images: the tower on f32 activations, into the hash's own folder
run f32 --method zeroshot --f32-images || bad "--f32-images run: $(tail -n 1 "$work/runs/f32.log")"
f32_file="$cache/$sha/pooled-v3.records"
[ -f "$f32_file" ] && ! cmp -s "$f32_file" "$file" && ok ||
  bad "--f32-images: no features of its own in $f32_file, or the integer path's"

# resume: the cache cut in the middle of a record (a run killed while it wrote); the next run finds the
# whole records before the cut, computes the rest, and ends with the same features
# (the images the first run encoded: its clients' shards, the first records of the file)
cp "$file" "$work/full.records"
size=$((32 + 64 * 4 + 4))
images=$(sed -n 's/^sim: image features: 0 from the cache, \([0-9]*\) computed$/\1/p' "$work/runs/zeroshot.log")
cut=$((${images:-2} / 2))
truncate -s $((16 + cut * size + 100)) "$file"
run resumed --method zeroshot 2>/dev/null
grep -q "sim: image features: $cut from the cache, $((${images:-2} - cut)) computed" "$work/runs/resumed.log" && ok ||
  bad "no resumed encoding of $cut of ${images:-no} images: $(grep '^sim:' "$work/runs/resumed.log")"
"$python" - "$file" "$work/full.records" "$size" "${images:-0}" <<'PY' && ok || bad "the resumed cache differs from the full one"
import sys
size, images = int(sys.argv[3]), int(sys.argv[4])
def records(path, n=None):
    data = open(path, "rb").read()
    assert (len(data) - 16) % size == 0, f"{path}: a torn record"
    return {data[i:i + size] for i in range(16, len(data), size)[:n]}
sys.exit(0 if images and records(sys.argv[1]) == records(sys.argv[2], images) else 1)
PY
[ "$(final "$work/runs/resumed.log")" = "$z" ] && ok || bad "the resumed run's zero-shot accuracy differs"

# tools/compare.py --archive: 2 methods x 2 seeds archived; an ablation's folder of the same comparison takes them
# from there, as does a second comparison from an empty build folder, which runs nothing (no run's log) and writes
# the same table; a task with another round count, and --f32-images, run again
compare() { # compare OUT [FLAGS...]: the comparison of 2 methods over 2 seeds into $work/OUT, its output in OUT.log
  local out=$1
  shift
  rm -rf "${work:?}/$out"
  SDFED_CACHE=$cache "$python" "$here/../../tools/compare.py" --task "$work/compare.json" --methods "zeroshot coop" \
    --seeds 2 --sdfed "$sdfed" --out "$work/$out" --archive "$work/archive" "$@" >"$work/$out.log" 2>&1
}
made_runs() { ls "$work/$1" | grep -c '\.log$'; }
sed 's/"rounds": 3/"rounds": 2/' "$work/task.json" >"$work/compare.json"
rm -rf "$work/archive"
compare first || bad "compare.py: $(tail -n 3 "$work/first.log")"
[ "$(ls "$work/archive/first" 2>/dev/null | grep -c '\.json\.gz$')" = 4 ] && [ "$(made_runs first)" = 4 ] && ok ||
  bad "compare.py --archive: 4 runs made and archived, found $(made_runs first) made, archive: $(ls -R "$work/archive")"
compare first-ablation || bad "compare.py, an ablation's folder: $(tail -n 3 "$work/first-ablation.log")"
[ "$(made_runs first-ablation)" = 0 ] && ok ||
  bad "compare.py: an ablation's plain methods are the comparison's archived runs, yet $(made_runs first-ablation) ran"
# and so do they when the comparison chose each method's lr and chose the task's own (its runs name their lr)
compare lrs --lrs 0.01 || bad "compare.py --lrs: $(tail -n 3 "$work/lrs.log")"
compare lrs-ablation || bad "compare.py, the ablation's folder of a comparison with --lrs: $(tail -n 3 "$work/lrs-ablation.log")"
[ "$(made_runs lrs)" = 5 ] && [ "$(made_runs lrs-ablation)" = 0 ] && ok ||
  bad "compare.py: the comparison at the task's lr made $(made_runs lrs) runs (5), its ablation's folder $(made_runs lrs-ablation) (0)"
mv "$work/archive/first" "$work/archive/again"
compare again || bad "compare.py from the archive: $(tail -n 3 "$work/again.log")"
[ "$(made_runs again)" = 0 ] && cmp -s "$work/first/table.md" "$work/again/table.md" && ok ||
  bad "compare.py from the archive: $(made_runs again) runs made again, tables: $(cat "$work/first/table.md" "$work/again/table.md")"
sed -i 's/"rounds": 2/"rounds": 3/' "$work/compare.json"
compare again || bad "compare.py, a changed task: $(tail -n 3 "$work/again.log")"
[ "$(made_runs again)" = 4 ] && [ "$(grep -c 'made by another task, model or flags: running it again' "$work/again.log")" = 4 ] &&
  "$python" -c 'import gzip, json, sys; sys.exit(len(json.load(gzip.open(sys.argv[1], "rt"))["results"]["rounds"]) != 3)' \
    "$work/archive/again/coop-seed1.json.gz" && ok ||
  bad "compare.py, a changed task: $(made_runs again) of 4 runs made again, archive not replaced: $(cat "$work/again.log")"
compare again --f32-images || bad "compare.py --f32-images: $(tail -n 3 "$work/again.log")"
[ "$(made_runs again)" = 4 ] && ok || bad "compare.py, other sim flags: $(made_runs again) of 4 runs made again"

# tools/compare.py --methods longer: after a comparison that chose each method's lr, the methods whose mean rise over
# the last third was above 0.3 points run again with 3 times the rounds at their chosen lr, the others do not
(cd "$work" && rm -rf build/compare && SDFED_CACHE=$cache "$python" "$here/../../tools/compare.py" --task compare.json \
  --methods "coop promptfl" --seeds 2 --lrs 0.01,0.1 --sdfed "$sdfed" >lrs.log 2>&1 &&
  SDFED_CACHE=$cache "$python" "$here/../../tools/compare.py" --task compare.json --methods longer --seeds 1 \
    --sdfed "$sdfed" >longer.log 2>&1) || bad "compare.py --methods longer: $(tail -n 3 "$work/lrs.log" "$work/longer.log")"
"$python" - "$work/build/compare" <<'PY' && ok || bad "compare.py --methods longer: $(cat "$work/longer.log")"
import json, os, statistics, sys
main, longer = os.path.join(sys.argv[1], "compare"), os.path.join(sys.argv[1], "compare-longer")
lrs = json.load(open(os.path.join(main, "lrs.json")))
def rise(res):  # the final 3-round window less the one ending two thirds of the way
    acc = [r["accuracy"] for r in res["rounds"]]
    n, w = len(acc), min(10, len(acc))
    end = max(1, 2 * n // 3)
    return statistics.mean(acc[n - w:]) - statistics.mean(acc[max(0, end - w):end])
for m in ("coop", "promptfl"):
    rises = [100 * rise(json.load(open(os.path.join(main, f"{m}-seed{s}-lr{lrs[m]:g}", "results.json")))) for s in (1, 2)]
    run = os.path.join(longer, f"{m}-rounds=9-lr={lrs[m]:g}-seed1", "results.json")
    if statistics.mean(rises) > 0.3:
        res = json.load(open(run))
        assert len(res["rounds"]) == 9 and abs(res["task"]["lr"] - lrs[m]) < 1e-6, (m, len(res["rounds"]), res["task"])
    else:
        assert not os.path.exists(run), (m, rises)
PY

# secure aggregation: tasks/fmnist-secure.json for 5 rounds, against the same task's plain run
secure() { # secure NAME SETTINGS_JSON [FLAGS...]: tasks/fmnist-secure.json with SETTINGS set, into $work/runs/NAME
  local name=$1 settings=$2
  shift 2
  "$python" - "$here/../../tasks/fmnist-secure.json" "$model" "$settings" >"$work/$name.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["model"] = sys.argv[2]
for key, value in json.loads(sys.argv[3]).items():
    if isinstance(value, dict) and isinstance(t.get(key), dict):
        t[key].update(value)
    else:
        t[key] = value
print(json.dumps(t))
PY
  "$sdfed" sim --task "$work/$name.json" --cache "$cache" --out "$work/runs/$name" "$@" >"$work/runs/$name.log" 2>&1
}
secure secure '{"rounds": 5}' || bad "secure run: $(tail -n 1 "$work/runs/secure.log")"
secure secure-again '{"rounds": 5}' || bad "secure run again: $(tail -n 1 "$work/runs/secure-again.log")"
secure secure-plain '{"rounds": 5, "secure_aggregation": false}' || bad "plain run: $(tail -n 1 "$work/runs/secure-plain.log")"
[ "$(grep -c '^round [0-4]: .*; secure: 10 advertised, 10 shared, 10 masked, 10 survivors, [0-9.]* s$' "$work/runs/secure.log")" = 5 ] &&
  grep -q '^sim: secure aggregation: 10 clients a round, 4 neighbours each (Harary graph), threshold 2, at least 7 inputs' \
    "$work/runs/secure.log" && grep -q '^secure aggregation: 5 of 5 rounds unmasked$' "$work/runs/secure.log" && ok ||
  bad "the secure run's lines: $(grep -E '^(round|sim: secure|secure)' "$work/runs/secure.log")"
! grep -qE 'secure aggregation|; secure:' "$work/runs/secure-plain.log" && ok || bad "the plain run speaks of secure aggregation"
checked=$("$python" - "$work/runs" <<'PY'
import json, sys
load = lambda n: json.load(open(f"{sys.argv[1]}/{n}/results.json"))
s, again, plain = load("secure"), load("secure-again"), load("secure-plain")
stages = all(r["secure"]["advertised"] == r["secure"]["shared"] == r["secure"]["masked"] == r["secure"]["survivors"] == 10
             and r["secure"]["weight_sum"] == 320 and not r["abandoned"] for r in s["rounds"])
parity = all(r["global_sha256"] == r["secure"]["plain_sha256"] for r in s["rounds"])
plan = s["secure_aggregation"]
planned = (plan["k"], plan["t"], plan["min_inputs"], plan["rounds_unmasked"], plan["sigma2"]) == (4, 2, 7, 5, 0)
same = [r["global_sha256"] for r in s["rounds"]] == [r["global_sha256"] for r in again["rounds"]]
apart = all(a["global_sha256"] != b["global_sha256"] for a, b in zip(s["rounds"], plain["rounds"]))
close = abs(s["final_accuracy"] - plain["final_accuracy"]) <= 0.01
print(int(stages), int(parity), int(planned), int(same), int(apart and "secure" not in plain["rounds"][0]), int(close),
      f'{100 * s["final_accuracy"]:.2f} {100 * plain["final_accuracy"]:.2f}')
PY
)
echo "secure aggregation, 5 rounds: final accuracy (secure, plain) ${checked#* * * * * * }"
[ "${checked% * *}" = "1 1 1 1 1 1" ] && ok ||
  bad "secure: stages / parity with the plain mean / plan / the same again / apart from plain / within 1 point: $checked"

# the task's dropouts at every stage: rounds abandoned at the masked stage and in the unmasking, the next ones run
secure secure-drops '{"rounds": 6, "seed": 7, "dropout": 0.1, "secure_aggregation": {"drop": {"advertise": 0.1, "share": 0.05, "unmask": 0.1}}}' ||
  bad "secure run with dropouts: $(tail -n 1 "$work/runs/secure-drops.log")"
"$python" - "$work/runs/secure-drops/results.json" <<'PY' && ok || bad "secure dropouts: $(grep '^round' "$work/runs/secure-drops.log")"
import json, sys
rounds = json.load(open(sys.argv[1]))["rounds"]
at = lambda stage: [r for r in rounds if r["abandoned"] and r["secure"]["why"].startswith(f"at its {stage} stage")]
assert at("masked") and at("unmask"), [r["secure"] for r in rounds]
for i, r in enumerate(rounds):
    s = r["secure"]
    assert s["advertised"] >= s["shared"] >= s["masked"] >= s["survivors"], s
    if r["abandoned"]:
        assert i == 0 or r["global_sha256"] == rounds[i - 1]["global_sha256"], (i, "the global moved")
        assert s["plain_sha256"] == "", s
    else:
        assert r["global_sha256"] == s["plain_sha256"] and s["masked"] >= 7, (i, s)
assert not rounds[-1]["abandoned"] and sum(not r["abandoned"] for r in rounds) >= 3
PY
grep -q '^round 0: .*; secure: .*, abandoned at its masked stage: the clients left fell below the inputs a round accepts$' \
  "$work/runs/secure-drops.log" && ok || bad "an abandoned round's line: $(grep '^round 0' "$work/runs/secure-drops.log")"

# with noise: epsilon 8 over the run's 3 rounds, spent round by round
secure secure-noise '{"rounds": 3, "secure_aggregation": {"max_weight": 32, "l2_clip": 0.2, "noise": {"epsilon": 8}}}' ||
  bad "secure run with noise: $(tail -n 1 "$work/runs/secure-noise.log")"
"$python" - "$work/runs/secure-noise/results.json" <<'PY' && ok || bad "secure noise: $(grep -E '^(round|secure)' "$work/runs/secure-noise.log")"
import json, sys
res = json.load(open(sys.argv[1]))
eps = [r["secure"]["epsilon"] for r in res["rounds"]]
assert 0 < eps[0] < eps[1] < eps[2] <= 8 and eps[2] > 7.99, eps
assert res["secure_aggregation"]["sigma2"] > 0 and res["secure_aggregation"]["epsilon"] == eps[2], res["secure_aggregation"]
assert all(r["global_sha256"] == r["secure"]["plain_sha256"] for r in res["rounds"])
PY
grep -q '^round 2: .*; epsilon [0-9.]* spent of 8 (delta 1e-05)$' "$work/runs/secure-noise.log" &&
  grep -q '^secure aggregation: 3 of 3 rounds unmasked, epsilon [0-9.]* spent of 8 at delta 1e-05$' "$work/runs/secure-noise.log" &&
  ok || bad "the noise's lines: $(grep -E '^(round|secure)' "$work/runs/secure-noise.log")"

# devices (tasks' "devices", fed/devices.h): a device too slow for a whole epoch at the fixed length misses every
# round (each line says so, the round waits for the budget and is abandoned); the adaptive rule picks the length that
# fits (2 steps at 4 tokens, 0.2 s), and on a slower device trains the one step the budget holds and counts
devices() { # devices NAME RULE STEP_MS: a 3-client, 2-round task on one device with lengths 4 and 16, budget 0.25 s
  cat >"$work/$1.json" <<JSON
{"model": "$model", "clients": 3, "partition": {"kind": "pathological", "classes_per_client": 2, "shots": 16},
 "rounds": 2, "seed": 7, "local_prompt": {"lengths": [4, 16], "rule": "$2", "budget_s": 0.25},
 "devices": [{"name": "slow", "share": 1, "step_ms": $3}]}
JSON
  "$sdfed" sim --task "$work/$1.json" --cache "$cache" --out "$work/runs/$1" >"$work/runs/$1.log" 2>&1 ||
    bad "$1: $(tail -n 1 "$work/runs/$1.log")"
}
devices fixed fixed "[100, 150]"
devices adaptive adaptive "[100, 150]"
devices partial adaptive "[200, 300]"
[ "$(grep -c ' 0 clients, 6 steps.*abandoned.*; simulated 0.25 s, 3 missed, 0 sitting out$' "$work/runs/fixed.log")" = 2 ] && ok ||
  bad "the fixed length on a slow device: $(grep '^round' "$work/runs/fixed.log")"
[ "$(grep -c ' 3 clients, 6 steps.*; simulated 0.20 s, 0 missed, 0 sitting out$' "$work/runs/adaptive.log")" = 2 ] && ok ||
  bad "the adaptive rule on a slow device: $(grep '^round' "$work/runs/adaptive.log")"
[ "$(grep -c ' 3 clients, 3 steps.*; simulated 0.20 s, 0 missed, 0 sitting out$' "$work/runs/partial.log")" = 2 ] && ok ||
  bad "the adaptive rule's partial epoch: $(grep '^round' "$work/runs/partial.log")"
"$python" -c '
import json, sys
c = [json.load(open(f"{sys.argv[1]}/{n}/results.json"))["clients"] for n in ("adaptive", "partial")]
sys.exit(not all(x["local_prompt_length"] == 4 and x["device"] == 0 for x in c[0] + c[1]) or
         [x["steps"] for x in c[0] + c[1]] != [2] * 3 + [1] * 3)' "$work/runs" && ok ||
  bad "results.json does not give each client its device, length and steps"
# pace steering (fed/pace.h), as the aggregator steers: of 3 clients, the one on a device too slow for the fixed
# length misses rounds 0-2, sits out round 3, misses round 4 and sits out 5 and 6 (doubling); rounds it sits out
# take the fast devices' time, not the deadline
cat >"$work/paced.json" <<JSON
{"model": "$model", "clients": 3, "partition": {"kind": "pathological", "classes_per_client": 2, "shots": 16},
 "rounds": 7, "seed": 7, "local_prompt": {"lengths": [4, 16], "rule": "fixed", "budget_s": 0.25},
 "devices": [{"name": "slow", "share": 1, "step_ms": [100, 150]}, {"name": "fast", "share": 2, "step_ms": [10, 15]}]}
JSON
"$sdfed" sim --task "$work/paced.json" --cache "$cache" --out "$work/runs/paced" >"$work/runs/paced.log" 2>&1 ||
  bad "paced: $(tail -n 1 "$work/runs/paced.log")"
"$python" - "$work/runs/paced/results.json" <<'PY' && ok || bad "pace steering: $(grep '^round' "$work/runs/paced.log")"
import json, sys
r = json.load(open(sys.argv[1]))
assert [c["device"] for c in r["clients"]] == [0, 1, 1], r["clients"]
got = [(x["missed"], x["paced"], x["participants"]) for x in r["rounds"]]
assert got == [(1, 0, 2)] * 3 + [(0, 1, 2), (1, 0, 2), (0, 1, 2), (0, 1, 2)], got
assert all((x["sim_seconds"] == 0.25) == (x["missed"] == 1) for x in r["rounds"]), [x["sim_seconds"] for x in r["rounds"]]
PY
grep -q '^round 3: .*; simulated 0.03 s, 0 missed, 1 sitting out$' "$work/runs/paced.log" && ok ||
  bad "the line of a round a client sits out: $(grep '^round 3' "$work/runs/paced.log")"

# small folders of 16x16 PNGs made here
small() { # small ROOT CLASS:N...: N images in ROOT/CLASS for each
  "$python" - "$@" <<'PY'
import os, sys
from PIL import Image
root = sys.argv[1]
for k, spec in enumerate(sys.argv[2:]):
    c, n = spec.rsplit(":", 1)
    os.makedirs(f"{root}/{c}", exist_ok=True)
    for i in range(int(n)):
        Image.new("RGB", (16, 16), (60 * k % 256, 20 * i % 256, 9)).save(f"{root}/{c}/{i:03d}.png")
PY
}
folder_task() { # folder_task FILE FOLDER CLIENTS: a folder task with no "classes" key (as task init writes one)
  printf '{"model": "%s", "dataset": {"folder": "%s", "test_fraction": 0.2}, "clients": %s, "partition": {"kind": "iid"}, "rounds": 2, "batch_size": 4}' \
    "$model" "$2" "$3" >"$1"
}
rm -rf "$work/small" && mkdir -p "$work/small"
small "$work/small/s20" a:5 b:5 c:5 d:5
folder_task "$work/small/s20.json" "$work/small/s20" 10
# 4 test images over 10 clients: the first 4 get one each (not 0 each); the 6 without one have no accuracy (null,
# not 0) and the means are the other 4's
"$sdfed" sim --task "$work/small/s20.json" --cache "$cache" --out "$work/runs/s20" --method zeroshot \
  >"$work/runs/s20.log" 2>&1 || bad "the 20-image folder: $(tail -n 1 "$work/runs/s20.log")"
grep -q '^sim: 6 of 10 clients have no test image: no accuracy, left out of the means$' "$work/runs/s20.log" && ok ||
  bad "the clients without test images are not said: $(grep '^sim:' "$work/runs/s20.log")"
"$python" - "$work/runs/s20/results.json" "$work/runs/s20.log" <<'PY' && ok || bad "the 20-image folder's means: $(grep '^round\|^final' "$work/runs/s20.log")"
import json, re, sys
r = json.load(open(sys.argv[1]))
assert [c["test"] for c in r["clients"]] == [1] * 4 + [0] * 6, r["clients"]
assert r["clients_without_test"] == 6, r["clients_without_test"]
for x in r["rounds"]:
    got = [a for a in x["client_accuracy"] if a is not None]
    assert len(got) == 4 and x["client_accuracy"][4:] == [None] * 6, x["client_accuracy"]
    assert abs(x["accuracy"] - sum(got) / 4) < 1e-6, x
final = float(re.search(r"^final accuracy \(mean of the last 2 rounds\): ([0-9.]+)%$", open(sys.argv[2]).read(), re.M)[1])
assert abs(final - 100 * r["final_accuracy"]) < 0.01 and abs(r["final_accuracy"] - r["rounds"][-1]["accuracy"]) < 1e-6
PY
# no client has a test image (a class of one image is all training): said plainly, never 0.00%
small "$work/small/s1" a:1 b:1 c:1
folder_task "$work/small/s1.json" "$work/small/s1" 3
"$sdfed" sim --task "$work/small/s1.json" --cache "$cache" --out "$work/runs/s1" >"$work/runs/s1.log" 2>&1 &&
  grep -q '^sim: no client has a test image: no accuracy to report$' "$work/runs/s1.log" &&
  grep -q '^round 1: no accuracy (2 of 2 rounds done), loss ' "$work/runs/s1.log" &&
  [ "$(tail -n 1 "$work/runs/s1.log")" = "final accuracy: none (no client has a test image)" ] &&
  "$python" -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(not (r["final_accuracy"] is None and
    all(x["accuracy"] is None and x["client_accuracy"] == [None] * 3 for x in r["rounds"])))' "$work/runs/s1/results.json" &&
  ok || bad "no test image anywhere: $(grep '^sim:\|^round\|^final\|sdfed:' "$work/runs/s1.log")"
# a volunteer's own images (--data) with a task that names no classes: the classes are the task's folder's, so a
# folder of another class is refused (as with a "classes" key) and one of some of them is taken
small "$work/small/own" cat:5 horse:3
small "$work/small/some" B:3 d:3
refused() { # refused WHAT ARGS...: exit 1 naming the other classes' folders, nothing run
  "$sdfed" "$@" >"$work/out" 2>"$work/err"
  local status=$?
  [ $status = 1 ] && grep -q "folders without a class: 'cat', 'horse'" "$work/err" && ! grep -q '^round' "$work/out" && ok ||
    bad "$1 --data with folders of other classes: status $status, $(cat "$work/err") $(grep classes "$work/out")"
}
refused task check "$work/small/s20.json" --cache "$cache" --data "$work/small/own"
refused sim --task "$work/small/s20.json" --cache "$cache" --data "$work/small/own" --out "$work/runs/own"
"$sdfed" task check "$work/small/s20.json" --cache "$cache" --data "$work/small/some" >"$work/out" 2>&1 &&
  grep -q '^4 classes:' "$work/out" && grep -q '^  b  *2 training, *1 test images$' "$work/out" && ok ||
  bad "task check --data with some of the task's classes: $(cat "$work/out")"

# --out is made and checked before anything runs: a file there is named, and nothing run
"$sdfed" sim --task "$work/small/s20.json" --cache "$cache" --out "$work/small/s20.json" >"$work/out" 2>"$work/err"
status=$?
[ $status = 1 ] && grep -q -- "--out $work/small/s20.json: not a folder" "$work/err" && ! grep -q '^round' "$work/out" &&
  ok || bad "--out a file: status $status, $(cat "$work/err"), $(grep -c '^round' "$work/out") rounds run"

# bad tasks and flags
expect() { # expect STATUS PATTERN TASK_JSON [FLAGS...]
  local want=$1 pattern=$2 json=$3
  shift 3
  printf '%s' "$json" >"$work/bad.json"
  "$sdfed" sim --task "$work/bad.json" --cache "$cache" --out "$work/runs/bad" "$@" >"$work/out" 2>"$work/err"
  local status=$?
  if [ "$status" -eq "$want" ] && [ "$(wc -l <"$work/err")" -eq 1 ] && grep -q -- "$pattern" "$work/err"; then
    ok
  else
    bad "task $json $*: status $status, stderr: $(cat "$work/err")"
  fi
}
expect 1 "key 'rounds' must be an integer" '{"rounds": "ten"}'
expect 1 "unknown key 'round'" '{"round": 3}'
expect 1 "unknown key 'partition.kinds'" '{"partition": {"kinds": "iid"}}'
expect 1 "key 'partition.kind' must be one of" '{"partition": {"kind": "random"}}'
expect 1 "key 'method' must be one of" '{"method": "fedavg"}'
expect 1 "key 'local_prompt_length' must be \[min, max\] with min <= max" '{"local_prompt_length": [64, 4]}'
expect 1 "key 'clients_per_round' (20) exceeds 'clients' (10)" '{"clients": 10, "clients_per_round": 20}'
expect 1 "key 'classes' names the class 'Bag' twice" '{"classes": ["Bag", "Coat", {"name": "Bag", "text": "purse"}]}'
expect 1 "unknown key 'classes\[0\].label'" '{"classes": [{"name": "Bag", "label": "bag"}]}'
expect 1 "key 'classes' lists 3 classes; fashion-mnist's 10 are needed" '{"classes": ["Bag", "Coat", "Dress"]}'
expect 1 "key 'dataset' must be .fashion-mnist., " '{"dataset": "folders"}'
expect 1 "key 'template' must be a string with exactly one {}" '{"template": "a photo of a"}'
expect 1 "key 'prompt_init' must be" '{"prompt_init": 4}'
expect 1 "key 'demo' must be true or false" '{"demo": "no"}'
expect 1 "json" '{"rounds": 3,'
expect 1 "model: .*no-such-model.gguf" '{"model": "no-such-model.gguf"}'
# a wrong flag is the command line's (2), before the task is read
expect 2 "method 'fedavg' is not a method" "{\"model\": \"$model\"}" --method fedavg
expect 2 "unknown option '--round'" '{}' --round 3
expect 2 "\-\-lr must be a number" "{\"model\": \"$model\"}" --lr -1
expect 2 "\-\-rounds must be an integer in \[1, 1000000\], not 'abc'" "{\"model\": \"$model\"}" --rounds abc
expect 2 "\-\-seed must be an integer" "{\"model\": \"$model\"}" --seed -1
expect 2 "backend 'bogus' is not in this build" '{}' --backend bogus
expect 2 "option '--task' needs a value" '{}' --task
expect 1 "task (3 clients a round): secure_aggregation.ring_bits 16: the sum of 3 clients' inputs (quant_bits 16, max_weight 4096) could wrap; it needs ring_bits >= 30" \
  '{"clients": 3, "secure_aggregation": {"ring_bits": 16}}'
expect 1 "key 'devices\[0\].step_ms' must give a time > 0 for each of the 2 lengths" \
  '{"local_prompt": {"lengths": [4, 16]}, "devices": [{"step_ms": [40]}]}'
expect 1 "unknown key 'secure_aggregation.drop.masked'" '{"secure_aggregation": {"drop": {"masked": 0.2}}}'
expect 1 "key 'secure_aggregation.noise.epsilon' 0.5 over 50 rounds needs each client's noise above sigma^2 = 2^48" \
  "{\"model\": \"$model\", \"clients\": 3, \"partition\": {\"kind\": \"pathological\", \"shots\": 4}, \"secure_aggregation\": {\"noise\": {\"epsilon\": 0.5}}}"

summary
[ "$failed" -eq 0 ]
