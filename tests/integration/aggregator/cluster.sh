#!/usr/bin/env bash
# The cluster mode on loopback (ctest aggregator_cluster): a PostgreSQL
# server of the test's own (tests/lib/postgres.sh), 3 sdfed-aggregator
# nodes on it, HAProxy in front (tests/lib/haproxy.sh), 30 headless clients
# through HAProxy, 5 rounds of 10 clients. In round 0 the test holds locks
# on the database, so that what it kills is caught where it means to, not
# by timing:
#  - a SHARE lock on updates: the round's updates reach the nodes and wait
#    to be stored, unacknowledged (a node waits for its store: one waits
#    per node); a front-end (not the coordinator) with an update waiting is
#    killed -9, and its clients reconnect through HAProxy to the other
#    nodes and send their updates again;
#  - a SHARE lock on rounds, taken before the first is released: the
#    coordinator has read the round's updates and aggregated them, and
#    waits to write the close; it is killed -9 there, and another node
#    takes over once its lease expires and closes the round itself.
# Then: the global parameters of every round equal `sdfed sim`'s for the
# same task, bit for bit; every update a client saw acknowledged is in the
# database; each round started once and closed once (the decisions table's
# primary key, and a count), round 0's close by the node that took over;
# every stored round recomputed from its stored updates (--verify).
#   cluster.sh BUILD_DIR MODEL.gguf WORK_DIR
set -u
build=$1 model=$2 work=$3
sdfed=$build/sdfed aggregator=$build/sdfed-aggregator client=$build/sdfed-client
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../../tools/port_file.sh"
. "$here/../../lib/postgres.sh"
. "$here/../../lib/haproxy.sh"
# the feature cache (the same for the simulator and the clients) is kept from run to run
mkdir -p "$work" && find "$work" -mindepth 1 -maxdepth 1 ! -name cache -exec rm -rf {} +
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
summary() { echo "aggregator_cluster: $passed passed, $failed failed"; }
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  haproxy_stop
  postgres_stop
}
trap cleanup EXIT
give_up() { bad "$*"; summary; exit 1; }

wait_for() { # wait_for WHAT SECONDS COMMAND...: polls until the command succeeds
  local what=$1 seconds=$2
  shift 2
  for _ in $(seq 1 $((seconds * 10))); do "$@" && return 0; sleep 0.1; done
  bad "timed out after $seconds s waiting for $what"
  return 1
}

# the task: 30 clients, 10 a round, every one connected before a round starts (so the
# cluster chooses among the same 30 as the simulator)
/usr/bin/python3 - "$here/../../../tasks/fmnist-pathological.json" "$model" >"$work/task.json" <<'PY'
import json, sys
task = json.load(open(sys.argv[1]))
task.update({"model": sys.argv[2], "clients": 30, "clients_per_round": 10, "min_clients": 30, "rounds": 5})
task["partition"].update({"shots": 8, "test_per_client": 20})
print(json.dumps(task))
PY
"$sdfed" sim --task "$work/task.json" --out "$work/sim" --cache "$work/cache" >"$work/sim.log" 2>&1 ||
  give_up "sim: $(tail -n 2 "$work/sim.log")"
sim_history=$(grep -o '"global_sha256": "[0-9a-f]*"' "$work/sim/results.json" | sed 's/.*: "\(.*\)"/\1/')
[ "$(wc -l <<<"$sim_history")" = 5 ] || give_up "the simulator did not run 5 rounds"

postgres_start && postgres_createdb cluster || give_up "no PostgreSQL server"
db=$(postgres_uri cluster)
sql() { postgres_psql cluster -c "$1"; }

# 3 nodes, each on a port the kernel chooses
for k in 1 2 3; do
  "$aggregator" --task "$work/task.json" --db "$db" --port 0 --port-file "$work/node$k.port" --host 127.0.0.1 \
    --node-lease 3 --poll 0.5 >"$work/node$k.log" 2>&1 &
  node_pid[k]=$!
  pids+=("$!")
done
for k in 1 2 3; do
  node_port[k]=$(port_file "$work/node$k.port" "${node_pid[k]}") || give_up "node $k did not start: $(tail -n 3 "$work/node$k.log")"
done
haproxy_start "$work" 127.0.0.1 0 "127.0.0.1:${node_port[1]}" "127.0.0.1:${node_port[2]}" "127.0.0.1:${node_port[3]}" ||
  give_up "HAProxy did not start"
pids+=("$haproxy_pid")
status() { curl -s --max-time 5 "http://127.0.0.1:$haproxy_port/status"; }

# lock LOCK_NAME TABLE: a session holding a SHARE lock on TABLE (reads and row locks go on,
# writes wait) until unlock LOCK_NAME
declare -A lock_fd
lock() {
  mkfifo "$work/$1.fifo"
  "$postgres_bin/psql" -X -q -At "$db" <"$work/$1.fifo" >"$work/$1.lock.log" 2>&1 &
  pids+=("$!")
  exec {fd}>"$work/$1.fifo"
  lock_fd[$1]=$fd
  echo "BEGIN; LOCK TABLE $2 IN SHARE MODE; SELECT 'held';" >&"$fd"
  wait_for "the lock on $2" 30 grep -q held "$work/$1.lock.log"
}
unlock() { echo "COMMIT;" >&"${lock_fd[$1]}"; exec {lock_fd[$1]}>&-; }
waiting() { # waiting SQL_PREFIX: "application_name count" of sessions waiting for a lock in such a statement
  sql "SELECT application_name, count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '$1%'
       GROUP BY application_name"
}
waiting_count() { waiting "$1" | awk -F'|' '{ n += $2 } END { print n + 0 }'; }

lock updates updates || give_up "no lock on updates"
for k in $(seq 0 29); do
  "$client" --server "ws://127.0.0.1:$haproxy_port" --client-index "$k" --model "$model" --cache "$work/cache" \
    --token-file "$work/token$k" --give-up 120 >"$work/client$k.log" 2>&1 &
  pids+=("$!")
done

# round 0's updates wait to be stored; the coordinator, and a front-end with an update waiting
coordinator_pid=
front_end_waiting() {
  coordinator_pid=$(sql "SELECT n.pid FROM coordinator c JOIN nodes n ON n.id = c.node")
  victim_pid=$(waiting 'INSERT INTO updates' | sed 's/^sdfed-aggregator //' | grep -v "^$coordinator_pid|" | head -n 1 | cut -d'|' -f1)
  [ -n "$victim_pid" ]
}
wait_for "a front-end to hold one of round 0's updates, unstored" 120 front_end_waiting || { summary; exit 1; }
victim_node=$(sql "SELECT id FROM nodes WHERE pid = $victim_pid")
victim_shards=$(sql "SELECT c.shard FROM presence p JOIN clients c ON c.id = p.client WHERE p.node = $victim_node")
echo "round 0: coordinator pid $coordinator_pid; killing front-end pid $victim_pid with $(sql "SELECT count(*) FROM presence WHERE node = $victim_node") clients and an update waiting"
lock rounds rounds || give_up "no lock on rounds"
kill -9 "$victim_pid" && wait "$victim_pid" 2>/dev/null
unlock updates
# its clients come back through HAProxy; the round's updates are stored, and the coordinator's close waits
wait_for "the coordinator to aggregate round 0 and wait to write it" 120 \
  sh -c "$(declare -f sql postgres_psql postgres_uri waiting); postgres_bin=$postgres_bin postgres_user=$postgres_user \
    postgres_password=$postgres_password postgres_dir=$postgres_dir; waiting 'UPDATE rounds SET closed' | grep -q '^sdfed-aggregator $coordinator_pid|'" ||
  { summary; exit 1; }
[ "$(sql "SELECT count(*) FROM updates WHERE round = 0")" = 10 ] && ok || bad "round 0 does not hold 10 updates before its close"
kill -9 "$coordinator_pid" && wait "$coordinator_pid" 2>/dev/null
unlock rounds
echo "round 0: killed the coordinator (pid $coordinator_pid) while it aggregated"

wait_for "the federation's 5 rounds" 180 sh -c "curl -s --max-time 5 http://127.0.0.1:$haproxy_port/status | grep -q '\"done\": 1'" ||
  { summary; exit 1; }

# the same bits as the simulator
history=$(sql "SELECT sha256 FROM rounds WHERE round > 0 ORDER BY round")
[ "$history" = "$sim_history" ] && ok || bad "the cluster's history differs from sdfed sim's: $(diff <(echo "$history") <(echo "$sim_history") | head -n 4)"
# every acknowledged update is stored
acked=$(grep -ho 'client [0-9]*: the update for round [0-9]* was acknowledged' "$work"/client*.log |
  sed 's/client \([0-9]*\): the update for round \([0-9]*\).*/\2 \1/' | sort -u)
stored=$(sql "SELECT u.round || ' ' || c.shard FROM updates u JOIN clients c ON c.id = u.client" | sort -u)
missing=$(comm -23 <(echo "$acked") <(echo "$stored"))
[ -n "$acked" ] && [ -z "$missing" ] && ok || bad "acknowledged updates missing from the database: $missing"
[ "$(wc -l <<<"$acked")" -ge 40 ] && ok || bad "only $(wc -l <<<"$acked") acknowledgements seen"
# each round started once and closed once: the decisions' primary key, and their count
[ "$(sql "SELECT string_agg(kind, ',' ORDER BY kind) FROM decisions GROUP BY round ORDER BY round" | sort | uniq -c | sed 's/^ *//')" = "5 close,start" ] &&
  ok || bad "decisions per round: $(sql "SELECT round, kind, epoch, node FROM decisions ORDER BY round, kind")"
[ "$(sql "SELECT count(*) FROM rounds WHERE closed IS NOT NULL")" = 5 ] && [ "$(sql "SELECT count(*) FROM rounds")" = 6 ] &&
  ok || bad "not 5 rounds closed: $(sql "SELECT round, closed FROM rounds ORDER BY round")"
closes=$(grep -h '"event": "round_end"' "$work"/node*.log | grep -o '"round": [0-9]*' | sort | uniq -c | awk '{print $1}' | sort -u)
[ "$closes" = 1 ] && [ "$(grep -h '"event": "round_end"' "$work"/node*.log | wc -l)" = 5 ] && ok ||
  bad "the nodes' logs do not close each round once: $(grep -h '"event": "round_end"' "$work"/node*.log | cut -c1-80)"
# round 0 was closed by the node that took over, at a higher epoch than it was started
takeover=$(sql "SELECT (SELECT epoch FROM decisions WHERE round = 0 AND kind = 'close') >
                       (SELECT epoch FROM decisions WHERE round = 0 AND kind = 'start'),
                       (SELECT n.pid FROM decisions d JOIN nodes n ON n.id = d.node WHERE round = 0 AND kind = 'close')")
[ "${takeover%%|*}" = t ] && [ "${takeover#*|}" != "$coordinator_pid" ] && [ "${takeover#*|}" != "$victim_pid" ] && ok ||
  bad "round 0's close was not the new coordinator's: $takeover"
# every stored global recomputed from its stored updates
"$aggregator" --task "$work/task.json" --db "$db" --verify >"$work/verify.log" 2>&1 &&
  grep -q "verify: every stored round recomputed" "$work/verify.log" && [ "$(grep -c ': closed, 10 updates, next .*: recomputed$' "$work/verify.log")" = 5 ] &&
  ok || bad "--verify: $(cat "$work/verify.log")"
# the killed front-end's clients came back through HAProxy: to other nodes, since their rows moved
# there (and went when they left at the end)
for k in $victim_shards; do grep -q "disconnected; reconnecting" "$work/client$k.log" || bad "client $k of the killed front-end did not reconnect"; done
[ -n "$victim_shards" ] && [ "$(sql "SELECT count(*) FROM presence WHERE node = $victim_node")" = 0 ] && ok ||
  bad "clients of the killed front-end did not reconnect to the other nodes: $(sql "SELECT client FROM presence WHERE node = $victim_node")"
# every client saw the end
[ "$(grep -l "the federation finished its 5 rounds" "$work"/client*.log | wc -l)" = 30 ] && ok ||
  bad "not every client finished: $(grep -L "the federation finished" "$work"/client*.log | head -n 3)"

summary
[ "$failed" -eq 0 ]
