#!/usr/bin/env bash
# make bench, the aggregator under load: 1,000 and 10,000 concurrent
# WebSocket clients on loopback (build/sdfed-load, one process), 3 rounds
# each, the tiny model's global prompt (8 x 128). Reports connections held,
# broadcast / collection / round times (medians over the rounds), the
# server's aggregation time for all the round's updates (its round_end log)
# next to numpy's weighted mean of the same size measured here, and the
# server's peak memory.
#   tools/bench/load.sh [CLIENT_COUNTS...]      (default: 1000 10000)
set -euo pipefail
cd "$(dirname "$0")/../.."
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1000 10000)
work=build/bench/load
mkdir -p "$work"
python=/usr/bin/python3
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

. tools/bench/figures.sh
. tools/port_file.sh

rows=()
for n in "${counts[@]}"; do
  for rule in mean median; do
    [ "$rule" = median ] && [ "$n" -gt 1000 ] && continue # the median at 1,000 is enough to compare rules
    if [ "$(ulimit -n)" -lt $((n + 100)) ]; then
      echo "load: skipping $n clients: the file descriptor limit is $(ulimit -n)"
      continue
    fi
    echo "== $n clients, $rule"
    cat >"$work/task.json" <<EOF
{"model": "models/fmnist-tiny-clip.q8_0.gguf", "clients": $n, "partition": {"kind": "iid", "shots": 1},
 "rounds": 3, "clients_per_round": 0, "method": "sdfed", "seed": 1}
EOF
    rm -rf "$work/state"
    rm -f "$work/port"
    build/sdfed-aggregator --task "$work/task.json" --state "$work/state" --host 127.0.0.1 --port 0 \
      --port-file "$work/port" --min-clients "$n" --aggregate "$rule" 2>"$work/server.log" &
    server=$!
    port=$(port_file "$work/port" "$server") || { echo "load: the aggregator did not start: $(tail -n 3 "$work/server.log")"; exit 1; }
    build/sdfed-load --server "ws://127.0.0.1:$port" --clients "$n" --rounds 3 --timeout 600 | tee "$work/load.log" || true
    peak_kb=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$server/status")
    kill "$server"
    wait "$server" 2>/dev/null || true
    welcomed=$(sed -n 's/.* in \([0-9.]*\) s.*/\1/p' "$work/load.log")
    held=$(sed -n 's/^held=\([0-9]*\).*/\1/p' "$work/load.log")
    bcast=$(sed -n 's/.*broadcast_ms=\([0-9.]*\).*/\1/p' "$work/load.log" | median)
    collect=$(sed -n 's/.*collection_ms=\([0-9.]*\).*/\1/p' "$work/load.log" | median)
    round=$(sed -n 's/.*round_ms=\([0-9.]*\).*/\1/p' "$work/load.log" | median)
    agg=$(grep '"event": "round_end"' "$work/server.log" | sed -n 's/.*"aggregation_ms": \([0-9.]*\).*/\1/p' | median)
    numpy=$("$python" - "$n" "$rule" <<'PY'
import sys, time, numpy as np
n, rule = int(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(1)
rows = rng.standard_normal((n, 8 * 128), dtype=np.float32)
weights = rng.integers(1, 17, n).astype(np.float32)
times = []
for _ in range(5):
    t = time.perf_counter()
    np.average(rows, axis=0, weights=weights) if rule == "mean" else np.median(rows, axis=0)
    times.append(time.perf_counter() - t)
print(f"{1e3 * sorted(times)[2]:.3f}")
PY
)
    ratio=$(awk -v a="$numpy" -v b="$agg" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }')
    rows+=("| $n | $held | $welcomed | $bcast | $collect | $round | $rule | $agg | $numpy | $ratio | $((peak_kb / 1024)) |")
  done
done

echo
echo "The aggregator under load: clients on loopback, 3 rounds, global prompt 8 x 128; medians over the rounds."
echo "| clients | held | all welcomed (s) | broadcast ms | collection ms | round ms | rule | aggregation ms | numpy ms | numpy / sdfed | server peak MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
