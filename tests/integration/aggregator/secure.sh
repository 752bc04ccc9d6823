#!/usr/bin/env bash
# Secure rounds on loopback (docs/protocol.md, "Secure rounds"), headless
# clients against the aggregator, tasks/fmnist-secure.json's settings (10
# clients a round; k and t from the rule at delta 0.33):
#  1. 2 rounds, no dropout: every round's new global equals, bit for bit,
#     `sdfed sim`'s for the same task and seed (the simulator checks its own
#     against the plain weighted mean of the same quantised inputs); no
#     stored masked input correlates with the round's mean change (|r| <
#     0.05; a client's input in the clear does), and the store keeps no
#     update in the clear;
#  2. dropouts: 2 clients killed (SIGKILL) once their keys are stored, 1
#     once its shares are, 1 once its masked input is: the round closes with
#     the 7 inputs it holds; then more dropouts than the round can take (4
#     after advertising): that round is abandoned and the next one runs,
#     with the killed clients back;
#  3. the aggregator killed (kill -9) in the middle of a stage and started
#     again: the round resumes from its stored rows with the clients coming
#     back, and the federation ends;
#  4. bad input (secure_bad.mjs), each refused with its code, the round
#     going on;
#  5. the task's dropouts at every stage (secure_aggregation.drop and
#     dropout), which the headless clients draw as the simulator's do: the
#     same rounds closed with the same inputs, the same round abandoned,
#     and the same globals bit for bit;
#  6. a round the store cannot rebuild after kill -9 (its graph key gone):
#     abandoned, never unmasked, and the next round closes;
#  7. distributed DP (the task's noise): the privacy spent, as /status,
#     /metrics and status.html say it, is the simulator's after the same
#     rounds, and the mode says secure.
#   secure.sh BUILD_DIR MODEL.gguf WORK_DIR [PARTS, e.g. "2 4": those only]
set -u
build=$1 model=$2 work=$3 parts=${4:-1 2 3 4 5 6 7}
part() { case " $parts " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
sdfed=$build/sdfed aggregator=$build/sdfed-aggregator client=$build/sdfed-client
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../../tools/port_file.sh"
. "$here/../../lib/wait_for.sh"
rm -rf "$work" && mkdir -p "$work"
cache="$work/cache"
. "$here/../../lib/tally.sh" aggregator-secure
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; }
trap cleanup EXIT

task() { # task NAME JSON_OVERRIDES: tasks/fmnist-secure.json with keys replaced
  /usr/bin/python3 - "$here/../../../tasks/fmnist-secure.json" "$model" "$2" >"$work/$1.json" <<'PY'
import json, sys
task = json.load(open(sys.argv[1]))
task["model"] = sys.argv[2]
task.update(json.loads(sys.argv[3]))
print(json.dumps(task))
PY
}

start_server() { # start_server NAME TASK [OPTIONS...]: sets $server_pid and $port (a restart takes $port again)
  local name=$1 taskfile=$2 want=${same_port:-0}
  shift 2
  rm -f "$work/$name.port"
  "$aggregator" --task "$taskfile" --port "$want" --port-file "$work/$name.port" --host 127.0.0.1 \
    --state "$work/$name-state" "$@" >>"$work/$name.server.log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  port=$(port_file "$work/$name.port" "$server_pid") && return 0
  bad "$name: the server did not start: $(tail -n 3 "$work/$name.server.log")"
  return 1
}
start_client() { # start_client NAME K [FLAGS...]
  local name=$1 k=$2
  shift 2
  "$client" --server "ws://127.0.0.1:$port" --client-index "$k" --model "$model" --cache "$cache" \
    --token-file "$work/$name.token$k" --give-up 30 "$@" >>"$work/$name.client$k.log" 2>&1 &
  client_pid=$!
  pids+=("$client_pid")
  disown "$client_pid" # those killed on purpose are not reported
}
hold_round_zero() { # hold_round_zero NAME: NAME's server and 10 clients; once round 0 started the last client is
  # frozen (SIGSTOP; $client_pid), holding its stage open
  local name=$1
  start_server "$name" "$work/$name.json"
  for k in $(seq 0 9); do start_client "$name" "$k" --give-up 60; done
  round_zero_started() { [ "$(query "$name" 'SELECT count(*) FROM rounds WHERE round = 0 AND started IS NOT NULL')" = 1 ]; }
  wait_for "round 0 to start" 60 round_zero_started && kill -STOP "$client_pid"
}
status() { curl -s "http://127.0.0.1:$port/status"; }
done_in() { status | grep -q '"done": 1'; }
query() { sqlite3 "$work/$1-state/aggregator.sqlite" "$2"; }
history() { query "$1" "SELECT sha256 FROM rounds WHERE round > 0 ORDER BY round"; }
logged() { grep -c "$2" "$work/$1.server.log"; }

part 1 && {
# --- 1. parity with the simulator, and the stored rows
task eq '{"rounds": 2}'
"$sdfed" sim --task "$work/eq.json" --out "$work/eq-sim" --cache "$cache" >"$work/eq-sim.log" 2>&1 ||
  bad "sim: $(tail -n 2 "$work/eq-sim.log")"
start_server eq "$work/eq.json" && for k in $(seq 0 9); do start_client eq "$k"; done
wait_for "the secure federation to end" 60 done_in
sim=$(grep -o '"global_sha256": "[0-9a-f]*"' "$work/eq-sim/results.json" | sed 's/.*: "\(.*\)"/\1/')
[ -n "$sim" ] && [ "$(history eq)" = "$sim" ] && ok ||
  bad "the secure rounds' globals differ from sdfed sim's: $(history eq | tr '\n' ' ') vs $(echo $sim)"
[ "$(query eq 'SELECT count(*) FROM updates')" = 0 ] && ok || bad "updates in the clear were stored"
[ "$(query eq "SELECT count(*) FROM secagg_messages WHERE client >= 0")" = 80 ] && ok ||
  bad "not 4 stage messages of 10 clients in 2 rounds stored: $(query eq 'SELECT count(*) FROM secagg_messages')"
# the stored masked inputs (kind 5: a 13-byte header and count, then u32s, centred) against the round's mean
# change, pooled over each round's inputs (some 10,000 values: a masked input's |r| is ~0.01, a change in the
# clear correlates with the mean of ten of them far above 0.05)
/usr/bin/python3 - "$work/eq-state/aggregator.sqlite" >"$work/correlation.txt" <<'PY'
import sqlite3, struct, sys, math
db = sqlite3.connect(sys.argv[1])
def floats(b): return struct.unpack("<%df" % (len(b) // 4), b)
g = {r: floats(v) for r, v in db.execute("SELECT round, global FROM rounds")}
pooled = {}
for rnd, msg in db.execute("SELECT round, message FROM secagg_messages WHERE client >= 0 AND substr(message, 1, 1) = x'05'"):
    change = [b - a for a, b in zip(g[rnd], g[rnd + 1])]
    values = struct.unpack("<%dI" % ((len(msg) - 13) // 4), msg[13:])[:len(change)]
    xs, ys = pooled.setdefault(rnd, ([], []))
    xs.extend(v - (1 << 32) if v >= 1 << 31 else v for v in values)
    ys.extend(change)
def r(x, y):
    n = len(x); mx = sum(x) / n; my = sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sx = math.sqrt(sum((a - mx) ** 2 for a in x)); sy = math.sqrt(sum((b - my) ** 2 for b in y))
    return sxy / (sx * sy) if sx and sy else 1.0
print("%.4f" % max(abs(r(x, y)) for x, y in pooled.values()) if pooled else "1")
PY
worst=$(cat "$work/correlation.txt")
/usr/bin/python3 -c "import sys; sys.exit(0 if float('$worst') < 0.05 else 1)" 2>/dev/null && ok ||
  bad "a stored masked input correlates with the round's change: |r| = $worst"
kill "$server_pid"; wait "$server_pid" 2>/dev/null

}
part 2 && {
# --- 2. dropouts: the round closes with the survivors' sum; then one that cannot, abandoned, and the next one runs.
# The share graph is drawn from the task's seed (--graph-from-seed, as sdfed sim draws it), so which secrets the
# dropouts leave with how many holders is the same every run: with the task's seed every secret the unmasking needs
# keeps at least t holders that answer (with the OS's randomness, about one graph in ten leaves some secret short, and
# that round is rightly abandoned at its unmasking)
task drop '{"rounds": 3}'
round_ended() { [ "$(query "$name" "SELECT count(*) FROM rounds WHERE round = $1 AND closed IS NOT NULL")" = 1 ]; }
name=drop
start_server "$name" "$work/drop.json" --graph-from-seed
for k in 0 1; do start_client "$name" "$k" --exit-after-stage advertise; done
start_client "$name" 2 --exit-after-stage shares
start_client "$name" 3 --exit-after-stage masked
for k in $(seq 4 9); do start_client "$name" "$k"; done
wait_for "round 0 with dropouts to end" 60 round_ended 0
[ "$(query "$name" 'SELECT abandoned, n_updates FROM rounds WHERE round = 0')" = "0|7" ] && ok ||
  bad "round 0 with 4 dropouts: $(query "$name" 'SELECT abandoned, n_updates FROM rounds WHERE round = 0'); $(grep -E 'round_abandoned|secagg_unmasked' "$work/$name.server.log")"
grep -q '"event": "secagg_unmasked", "round": 0, "inputs": 7' "$work/$name.server.log" && ok ||
  bad "round 0 did not unmask 7 inputs: $(grep -E 'secagg' "$work/$name.server.log" | head -n 5)"
# round 1: four of the six clients left die once their keys are stored: too few for min_inputs
for k in 0 1 2 3; do start_client "$name" "$k" --exit-after-stage advertise; done
wait_for "round 1 to end" 60 round_ended 1
[ "$(query "$name" 'SELECT abandoned FROM rounds WHERE round = 1')" = 1 ] && ok ||
  bad "round 1 with 4 of 10 gone after advertising was not abandoned: $(grep -E 'round_abandoned|secagg_unmasked' "$work/$name.server.log")"
# round 2: everyone back
for k in 0 1 2 3; do start_client "$name" "$k"; done
wait_for "the federation with dropouts to end" 60 done_in
[ "$(query "$name" 'SELECT abandoned FROM rounds WHERE round = 2')" = 0 ] && ok || bad "round 2 did not close"
kill "$server_pid"; wait "$server_pid" 2>/dev/null

}
part 3 && {
# --- 3. the aggregator killed mid-stage, restarted on the same state and port: one client frozen (SIGSTOP) once
# round 0 started holds its stage open while the others' messages are stored; then the server dies, the
# client thaws, and the restarted server resumes the round from its rows
task restart '{"rounds": 2}'
hold_round_zero restart
others_in() { [ "$(query restart 'SELECT count(DISTINCT client) FROM secagg_messages WHERE round = 0 AND client >= 0')" -ge 9 ]; }
wait_for "9 clients' messages stored in round 0" 180 others_in
rows=$(query restart 'SELECT count(*) FROM secagg_messages WHERE round = 0')
kill -9 "$server_pid"; wait "$server_pid" 2>/dev/null
kill -CONT "$client_pid"
same_port=$port start_server restart "$work/restart.json"
wait_for "the restarted federation to end" 90 done_in
grep -qE '"event": "secagg_resumed", "round": 0, "rows": '"$rows"', "stage": "(advertise|share)"' "$work/restart.server.log" &&
  ok || bad "the restarted server did not resume round 0 from its $rows rows: $(grep -E 'secagg|error' "$work/restart.server.log" | head -n 5)"
[ "$(query restart 'SELECT count(*) FROM rounds WHERE abandoned = 0 AND closed IS NOT NULL')" = 2 ] && ok ||
  bad "not 2 rounds closed after the restart: $(query restart 'SELECT round, abandoned FROM rounds')"
kill "$server_pid"; wait "$server_pid" 2>/dev/null

}
part 4 && {
# --- 4. bad input, each refused with its code
task hostile '{"rounds": 1, "clients_per_round": 3, "clients": 4}'
start_server hostile "$work/hostile.json" --min-clients 3
node --experimental-websocket --no-warnings "$here/secure_bad.mjs" "$port" >"$work/hostile.log" 2>&1
grep -q "^secure-bad: [0-9]* passed, 0 failed" "$work/hostile.log" && ok || bad "bad input: $(grep -E 'FAIL|secure-bad:' "$work/hostile.log")"
kill "$server_pid"; wait "$server_pid" 2>/dev/null

}
part 5 && {
# --- 5. the task's dropouts, as the simulator draws them
task dropouts '{"rounds": 3, "dropout": 0.1, "secure_aggregation": {"dropout_rate": 0.33, "corrupt_rate": 0.05,
  "clip": 0.5, "quant_bits": 16, "ring_bits": 32, "max_weight": 4096, "drop": {"advertise": 0.1, "share": 0.1, "unmask": 0.1}}}'
"$sdfed" sim --task "$work/dropouts.json" --out "$work/dropouts-sim" --cache "$cache" >"$work/dropouts-sim.log" 2>&1 ||
  bad "sim with dropouts: $(tail -n 2 "$work/dropouts-sim.log")"
start_server dropouts "$work/dropouts.json" --graph-from-seed && for k in $(seq 0 9); do start_client dropouts "$k"; done
wait_for "the federation with the task's dropouts to end" 60 done_in
sim_rounds=$(awk '/^round [0-9]+: .*; secure: / { sub(":", "", $2); masked = $0; sub(/ masked,.*/, "", masked);
  sub(/.* /, "", masked); print $2 " " (/abandoned/ ? "abandoned" : masked) }' "$work/dropouts-sim.log" | tr '\n' ';')
stored_rounds=$(query dropouts "SELECT round || ' ' || CASE abandoned WHEN 1 THEN 'abandoned' ELSE n_updates END FROM rounds
  WHERE closed IS NOT NULL ORDER BY round" | tr '\n' ';')
[ -n "$sim_rounds" ] && [ "$stored_rounds" = "$sim_rounds" ] && ok ||
  bad "the rounds with the task's dropouts: the store says $stored_rounds, the simulator $sim_rounds"
sim=$(grep -o '"global_sha256": "[0-9a-f]*"' "$work/dropouts-sim/results.json" | sed 's/.*: "\(.*\)"/\1/')
[ "$(history dropouts)" = "$sim" ] && ok || bad "with the task's dropouts the globals differ from sdfed sim's"
kill "$server_pid"; wait "$server_pid" 2>/dev/null
}
part 6 && {
# --- 6. a round that cannot be rebuilt: one client frozen holds round 0 open, the server dies, the round's key
# is removed from the store; after the restart the round is abandoned and the next one closes
task broken '{"rounds": 2}'
hold_round_zero broken
kill -9 "$server_pid"; wait "$server_pid" 2>/dev/null
query broken 'DELETE FROM secagg_rounds WHERE round = 0'
kill -CONT "$client_pid"
same_port=$port start_server broken "$work/broken.json"
wait_for "the federation to end after the restart" 90 done_in
[ "$(query broken 'SELECT round || abandoned FROM rounds WHERE closed IS NOT NULL ORDER BY round' | tr '\n' ' ')" = "01 10 " ] &&
  ok || bad "round 0 without its key: $(query broken 'SELECT round, abandoned FROM rounds' | tr '\n' ' ')"
grep -q '"event": "round_abandoned", "round": 0, "masked_inputs": 0, "why": "it could not be rebuilt from the store' \
  "$work/broken.server.log" && ok || bad "round 0's abandonment: $(grep -E 'abandoned|error' "$work/broken.server.log")"
kill "$server_pid"; wait "$server_pid" 2>/dev/null
}
part 7 && {
# --- 7. distributed DP, epsilon 8 over 2 rounds: the privacy spent is the simulator's after the same rounds
task noise '{"rounds": 2, "secure_aggregation": {"dropout_rate": 0.33, "corrupt_rate": 0.05, "clip": 0.5,
  "l2_clip": 0.2, "quant_bits": 16, "ring_bits": 32, "max_weight": 32, "noise": {"epsilon": 8}}}'
"$sdfed" sim --task "$work/noise.json" --out "$work/noise-sim" --cache "$cache" >"$work/noise-sim.log" 2>&1 ||
  bad "sim with noise: $(tail -n 2 "$work/noise-sim.log")"
epsilon_after() { # epsilon_after ROUND: the simulator's epsilon spent after it, 6 decimals
  /usr/bin/python3 -c 'import json, sys; print("%.6f" % json.load(open(sys.argv[1]))["rounds"][int(sys.argv[2])]["secure"]["epsilon"])' \
    "$work/noise-sim/results.json" "$1"
}
privacy_is() { # privacy_is ROUNDS EPSILON: /status says ROUNDS unmasked, EPSILON spent (6 decimals) of 8
  status >"$work/noise-status.json"
  /usr/bin/python3 - "$work/noise-status.json" "$1" "$2" <<'PY' && ok || bad "/status after $1 rounds with noise: $(cat "$work/noise-status.json")"
import json, sys
s = json.load(open(sys.argv[1]))
p = s["privacy"]
assert s["mode"] == "secure", s["mode"]
assert p["rounds_unmasked"] == int(sys.argv[2]) and p["epsilon_budget"] == 8 and p["delta"] == 1e-5, p
assert "%.6f" % p["epsilon_spent"] == sys.argv[3], (p, sys.argv[3])
PY
}
start_server noise "$work/noise.json" && privacy_is 0 0.000000
# round 1 held open by a frozen client while /status is read after round 0
for k in $(seq 0 9); do start_client noise "$k"; done
round_one_started() { [ "$(query noise 'SELECT count(*) FROM rounds WHERE round = 1 AND started IS NOT NULL')" = 1 ]; }
wait_for "round 1 with noise to start" 60 round_one_started && kill -STOP "$client_pid"
privacy_is 1 "$(epsilon_after 0)"
kill -CONT "$client_pid"
wait_for "the federation with noise to end" 60 done_in
sim_epsilon=$(epsilon_after 1)
privacy_is 2 "$sim_epsilon"
curl -s "http://127.0.0.1:$port/metrics" | grep -q "^sdfed_privacy_epsilon_spent $sim_epsilon$" && ok ||
  bad "/metrics' epsilon spent is not the simulator's $sim_epsilon: $(curl -s "http://127.0.0.1:$port/metrics" | grep privacy)"
curl -s "http://127.0.0.1:$port/status.html" | grep -q "<td>privacy spent</td><td>epsilon $(printf %.3f "$sim_epsilon") of 8 at delta 1e-05, over 2 rounds unmasked" &&
  ok || bad "status.html's privacy row: $(curl -s "http://127.0.0.1:$port/status.html" | grep -o '<tr><td>privacy[^/]*')"
kill "$server_pid"; wait "$server_pid" 2>/dev/null
}

summary
[ "$failed" -eq 0 ]
