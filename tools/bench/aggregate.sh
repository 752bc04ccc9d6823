#!/usr/bin/env bash
# make bench, the aggregation rules: build/bench_aggregate times sdfed's
# aggregation (sdfed_aggregate, as the aggregator and the simulator run it)
# of 1,000 and 10,000 updates of the default task's global prompt (8 x 128)
# and of a ViT-B/16-sized one (8 x 512), every rule, and
# tools/bench/aggregate_numpy.py times numpy doing the same on the same
# updates in the same run; prints both, their ratio and how far numpy's
# result is from sdfed's.
#   tools/bench/aggregate.sh [REPEATS]      (medians of REPEATS, default 5)
. "$(dirname "$0")/../help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/../.."
repeats=${1:-5}
work=build/bench/aggregate
mkdir -p "$work"
python=/usr/bin/python3
. tools/bench/figures.sh

rows=()
for size in 1024 4096; do
  for n in 1000 10000; do
    echo "== $n updates of $size floats"
    build/bench_aggregate --updates "$n" --size "$size" --dir "$work" --repeats "$repeats" >"$work/sdfed.log"
    "$python" tools/bench/aggregate_numpy.py "$work" "$n" "$size" "$repeats" >"$work/numpy.log"
    while read -r line; do
      rule=$(sed 's/rule=\([a-z_]*\).*/\1/' <<<"$line")
      ms=$(echo "$line" | field ms)
      theirs=$(grep "rule=$rule " "$work/numpy.log")
      numpy_ms=$(echo "$theirs" | field numpy_ms)
      diff=$(sed -n 's/.*max_diff=\([^ ]*\).*/\1/p' <<<"$theirs")
      rows+=("| $size | $n | $rule | $ms | $numpy_ms | $(awk -v a="$numpy_ms" -v b="$ms" 'BEGIN { printf "%.1fx", a / b }') | $diff |")
      echo "${rows[-1]}"
    done <"$work/sdfed.log"
  done
done
rm -f "$work"/*.f32 "$work"/*.f64

echo
echo "Aggregation (ms, median of $repeats): sdfed_aggregate against numpy on the same updates, same run."
echo "| floats | updates | rule | sdfed ms | numpy ms | numpy / sdfed | max abs diff |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
