#!/usr/bin/env bash
# make bench, the aggregator under load: concurrent WebSocket clients on
# loopback (build/sdfed-load), 3 rounds each, the tiny model's global
# prompt (8 x 128), every client in every round.
#  - one process with its SQLite state: 1,000 and 10,000 clients;
#  - a cluster: 2 front-ends (sdfed-aggregator --db) on a PostgreSQL server
#    of the bench's own (tests/lib/postgres.sh: initdb and pg_ctl in a
#    folder under /tmp), 20,000 clients, half on each front-end (one
#    sdfed-load each, their clocks combined).
# Reports connections held, the time until all were welcomed, broadcast /
# collection / round times (medians over the rounds; collection: from the
# last client holding the round's parameters to the first round_end, i.e.
# receiving, checking, storing and acknowledging every update, then
# aggregating), updates stored per second of collection, the server's
# aggregation time (its round_end log) next to numpy's on the same size
# measured here, and each server's peak memory and what it grew by per
# connection it held. Every client comes from 127.0.0.1: the servers' limits
# per address (connections, new clients a minute) are raised to the run's
# size, and their connection limit to what it holds. Clients connect at most 64 at a time: a join commits
# a client row, and handshakes queued behind slow commits (a busy disk)
# would outlast the server's 5 s header timeout.
#   CLIENTS="1000 10000" CLUSTER_CLIENTS="20000" tools/bench/load.sh     (the defaults; empty: none)
. "$(dirname "$0")/../help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/../.."
read -r -a counts <<<"${CLIENTS-1000 10000}"
read -r -a cluster_counts <<<"${CLUSTER_CLIENTS-20000}"
work=build/bench/load
mkdir -p "$work"
python=/usr/bin/python3
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

. tools/bench/figures.sh
. tools/port_file.sh

write_task() { # write_task CLIENTS
  cat >"$work/task.json" <<EOF
{"model": "models/fmnist-tiny-clip.q8_0.gguf", "clients": $1, "partition": {"kind": "iid", "shots": 1},
 "rounds": 3, "clients_per_round": 0, "method": "sdfed", "seed": 1}
EOF
}

rss_kb() { sed -n "s/^$2:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$1/status"; }

numpy_ms() { # numpy_ms N RULE: numpy's weighted mean (or median) of N updates of the prompt's size
  "$python" - "$1" "$2" <<'PY'
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
}

# round times over every sdfed-load log given, on their common monotonic clock: per round
# broadcast (first to last client holding the parameters), collection (last holding them to the
# first round_end) and the round; medians over the rounds, as "broadcast collection round"
combined_rounds() {
  awk '/^round [0-9]+: / {
         r = $2; sub(":", "", r)
         for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
         if (!(r in first) || v["first_params_s"] < first[r]) first[r] = v["first_params_s"]
         if (!(r in last) || v["last_params_s"] > last[r]) last[r] = v["last_params_s"]
         if (!(r in end) || v["first_end_s"] < end[r]) end[r] = v["first_end_s"]
       }
       END { for (r in first) printf "%.1f %.1f %.1f\n", 1e3 * (last[r] - first[r]), 1e3 * (end[r] - last[r]), 1e3 * (end[r] - first[r]) }' "$@" >"$work/rounds.txt"
  echo "$(cut -d' ' -f1 "$work/rounds.txt" | median) $(cut -d' ' -f2 "$work/rounds.txt" | median) $(cut -d' ' -f3 "$work/rounds.txt" | median)"
}

rows=()
row() { # row MODE CLIENTS RULE LOADLOGS SERVERLOGS PEAK_KB GROWTH_KB
  local mode=$1 n=$2 rule=$3 loads=$4 servers=$5 peak_kb=$6 growth_kb=$7
  local held welcomed times bcast collect round agg numpy ratio rate
  held=$(cat $loads | sed -n 's/^held=\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
  welcomed=$(cat $loads | sed -n 's/.* in \([0-9.]*\) s.*/\1/p' | sort -n | tail -n 1)
  read -r bcast collect round <<<"$(combined_rounds $loads)"
  agg=$(cat $servers | grep '"event": "round_end"' | sed -n 's/.*"aggregation_ms": \([0-9.]*\).*/\1/p' | median)
  numpy=$(numpy_ms "$n" "$rule")
  ratio=$(awk -v a="$numpy" -v b="$agg" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }')
  rate=$(awk -v n="$n" -v c="$collect" 'BEGIN { if (c > 0) printf "%.0f", n / (c / 1e3); else print "-" }')
  rows+=("| $mode | $n | $held | $welcomed | $bcast | $collect | $rate | $round | $rule | $agg | $numpy | $ratio | $((peak_kb / 1024)) | $(awk -v g="$growth_kb" -v h="$held" 'BEGIN { if (h > 0) printf "%.1f", g / h; else print "-" }') |")
}

# --- one process, SQLite
for n in "${counts[@]+"${counts[@]}"}"; do
  for rule in mean median; do
    [ "$rule" = median ] && [ "$n" -gt 1000 ] && continue # the median at 1,000 is enough to compare rules
    if [ "$(ulimit -n)" -lt $((n + 500)) ]; then # the clients, the reserve, file sends, the process's own
      echo "load: skipping $n clients: the file descriptor limit is $(ulimit -n)"
      continue
    fi
    echo "== one process, SQLite: $n clients, $rule"
    write_task "$n"
    rm -rf "$work/state"
    rm -f "$work/port"
    build/sdfed-aggregator --task "$work/task.json" --state "$work/state" --host 127.0.0.1 --port 0 \
      --port-file "$work/port" --min-clients "$n" --aggregate "$rule" --max-connections "$((n + 100))" \
      --max-connections-per-address "$((n + 100))" --registrations-per-minute "$n" 2>"$work/server.log" &
    server=$!
    port=$(port_file "$work/port" "$server") || { echo "load: the aggregator did not start: $(tail -n 3 "$work/server.log")"; exit 1; }
    idle_kb=$(rss_kb "$server" VmRSS)
    build/sdfed-load --server "ws://127.0.0.1:$port" --clients "$n" --rounds 3 --ramp 64 --timeout 900 | tee "$work/load.log" || true
    peak_kb=$(rss_kb "$server" VmHWM)
    kill "$server"
    wait "$server" 2>/dev/null || true
    row "one process" "$n" "$rule" "$work/load.log" "$work/server.log" "$peak_kb" $((peak_kb - idle_kb))
  done
done

# --- a cluster: 2 front-ends on PostgreSQL, half the clients on each
for n in "${cluster_counts[@]+"${cluster_counts[@]}"}"; do
  half=$((n / 2))
  if [ "$(ulimit -n)" -lt $((half + 500)) ]; then
    echo "load: skipping the cluster at $n clients: the file descriptor limit is $(ulimit -n)"
    continue
  fi
  echo "== a cluster of 2 front-ends on PostgreSQL: $n clients, mean"
  . tests/lib/postgres.sh
  trap postgres_stop EXIT
  postgres_start && postgres_createdb load || { echo "load: no PostgreSQL server"; exit 1; }
  write_task "$n"
  servers=() loads=() logs=()
  for k in 1 2; do
    rm -f "$work/node$k.port"
    build/sdfed-aggregator --task "$work/task.json" --db "$(postgres_uri load)" --host 127.0.0.1 --port 0 \
      --port-file "$work/node$k.port" --min-clients "$n" --node-lease 60 --max-connections "$((half + 100))" \
      --max-connections-per-address "$((half + 100))" --registrations-per-minute "$half" 2>"$work/node$k.log" &
    servers+=("$!")
    logs+=("$work/node$k.log")
  done
  idle_kb=0 ports=()
  for k in 1 2; do
    ports+=("$(port_file "$work/node$k.port" "${servers[k - 1]}")") || { echo "load: node $k did not start: $(tail -n 3 "$work/node$k.log")"; exit 1; }
    idle_kb=$((idle_kb + $(rss_kb "${servers[k - 1]}" VmRSS)))
  done
  for k in 1 2; do
    build/sdfed-load --server "ws://127.0.0.1:${ports[k - 1]}" --clients "$half" --rounds 3 --ramp 64 --timeout 1200 \
      >"$work/cluster-load$k.log" 2>&1 &
    loads+=("$!")
  done
  for p in "${loads[@]}"; do wait "$p" || true; done
  cat "$work/cluster-load1.log" "$work/cluster-load2.log"
  peak_kb=0 sum_kb=0
  for p in "${servers[@]}"; do
    kb=$(rss_kb "$p" VmHWM)
    sum_kb=$((sum_kb + kb))
    [ "$kb" -gt "$peak_kb" ] && peak_kb=$kb
    kill "$p"
    wait "$p" 2>/dev/null || true
  done
  row "2 front-ends, PostgreSQL" "$n" mean "$work/cluster-load1.log $work/cluster-load2.log" "${logs[*]}" "$peak_kb" \
    $((sum_kb - idle_kb))
  postgres_stop
  trap - EXIT
done

echo
echo "The aggregator under load: clients on loopback, 3 rounds, global prompt 8 x 128; medians over the rounds."
echo "Server peak: the largest process's; per connection: what the servers' resident memory grew by, per connection held."
echo "| mode | clients | held | all welcomed (s) | broadcast ms | collection ms | updates/s | round ms | rule | aggregation ms | numpy ms | numpy / sdfed | server peak MiB | KiB per connection |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]+"${rows[@]}"}"
