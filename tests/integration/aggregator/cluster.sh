#!/usr/bin/env bash
# The cluster mode on loopback (ctest aggregator_cluster): a PostgreSQL
# server of the test's own (tests/lib/postgres.sh), 3 sdfed-aggregator
# nodes on it, HAProxy in front (tools/haproxy.sh), 30 headless clients
# through HAProxy, 5 rounds of 10 clients. The test keeps the coordinator's
# lease from the nodes until every client has loaded its data, and holds
# round 0's close decision row, inserted in a transaction it keeps open, so
# that round 0 cannot close until it lets go: what it kills is caught where
# it means to, not by timing:
#  - with round 0 open, a front-end (not the coordinator) that holds some
#    of its chosen clients is killed -9; they reconnect through HAProxy to
#    the other nodes and report there;
#  - the coordinator, once every report is in, begins the close: it has
#    passed its fence and locked the round's row, and waits to record its
#    decision; it is killed -9 there (its close is rolled back), and
#    another node takes over once its lease expires and closes the round
#    itself;
#  - PostgreSQL is stopped (pg_ctl -m immediate: no session finishes what
#    it does) while round 2 is open: round 2 starts with the updates table
#    locked by a transaction of the test, so that its clients' updates wait
#    inside the node's batch; the stop fails that batch (its updates are
#    refused with server_error, not acknowledged), the clients resend with
#    backoff and are refused again while it is down, and nothing of round 2
#    is acknowledged; started again, the node reconnects by itself and the
#    round completes.
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
. "$here/../../lib/wait_for.sh"
. "$here/../../../tools/haproxy.sh"
# the feature cache (the same for the simulator and the clients) is kept from run to run
mkdir -p "$work" && find "$work" -mindepth 1 -maxdepth 1 ! -name cache -exec rm -rf {} +
. "$here/../../lib/tally.sh" aggregator_cluster
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  haproxy_stop
  postgres_stop
}
trap cleanup EXIT
give_up() { bad "$*"; summary; exit 1; }

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
    --node-lease 8 --poll 0.5 --proxy-protocol-from "$haproxy_source" >"$work/node$k.log" 2>&1 &
  node_pid[k]=$!
  pids+=("$!")
done
for k in 1 2 3; do
  node_port[k]=$(port_file "$work/node$k.port" "${node_pid[k]}") || give_up "node $k did not start: $(tail -n 3 "$work/node$k.log")"
done
haproxy_start "$work" 127.0.0.1 0 "127.0.0.1:${node_port[1]}" "127.0.0.1:${node_port[2]}" "127.0.0.1:${node_port[3]}" ||
  give_up "HAProxy did not start"
pids+=("$haproxy_pid")
node_status() { curl -s --max-time 5 "http://127.0.0.1:${node_port[$1]}/status"; }
# /status of each node: the whole federation's nodes, and its own role; one coordinator
one_coordinator() {
  local roles=""
  for k in 1 2 3; do roles+=$(node_status "$k" | grep -o '"nodes": 3,\|"role": "[a-z-]*"' | tr -d '\n'); done
  [ "$(grep -o '"nodes": 3,' <<<"$roles" | wc -l)" = 3 ] && [ "$(grep -o '"role": "coordinator"' <<<"$roles" | wc -l)" = 1 ] &&
    [ "$(grep -o '"role": "front-end"' <<<"$roles" | wc -l)" = 2 ]
}
wait_for "one coordinator and two front-ends in the nodes' /status" 60 one_coordinator && ok

# hold NAME SQL: a session that runs SQL in a transaction it keeps open until release NAME
declare -A hold_fd
hold() {
  mkfifo "$work/$1.fifo"
  "$postgres_bin/psql" -X -q -At "$db" <"$work/$1.fifo" >"$work/$1.log" 2>&1 &
  pids+=("$!")
  exec {fd}>"$work/$1.fifo"
  hold_fd[$1]=$fd
  echo "BEGIN; $2; SELECT 'held';" >&"$fd"
  wait_for "the held transaction $1" 30 grep -q held "$work/$1.log"
}
release() { echo "ROLLBACK;" >&"${hold_fd[$1]}"; exec {hold_fd[$1]}>&-; }
drop() { exec {hold_fd[$1]}>&-; } # a held session the server ended: its psql leaves
waiting() { # waiting SQL_PREFIX: the aggregator pids whose session waits for a lock in such a statement
  sql "SELECT application_name FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '$1%'" |
    sed -n 's/^sdfed-aggregator \([0-9]*\)$/\1/p'
}
coordinator() { sql "SELECT n.pid FROM coordinator c JOIN nodes n ON n.id = c.node"; }

# round 0's close decision, inserted and not committed: the coordinator's close waits on its key
# (inside its transaction, the round's row locked), and nothing else does
hold close "INSERT INTO decisions (round, kind, epoch, node) VALUES (0, 'close', 0, 0)" || give_up "no held row"
# and no round starts until every client has its data ready (a client busy loading for over a
# minute misses the server's keepalive and is hung up, which would make it leave): the test takes
# the coordinator's lease meanwhile, and no node can claim a lease that has not expired, so that no
# node waits on a held row while clients connect (a node waiting there would not welcome its own);
# the coordinator's decisions are refused at its fence, and it steps down
sql "UPDATE coordinator SET node = NULL, epoch = epoch + 1, lease_until = 'infinity'" || give_up "no coordinator row"
# and round 2's start, until the test has locked the updates table (PostgreSQL stopped mid-round, below)
hold start2 "INSERT INTO decisions (round, kind, epoch, node) VALUES (2, 'start', 0, 0)" || give_up "no held row"
for k in $(seq 0 29); do
  "$client" --server "ws://127.0.0.1:$haproxy_port" --client-index "$k" --model "$model" --cache "$work/cache" \
    --token-file "$work/token$k" --give-up 120 >"$work/client$k.log" 2>&1 &
  pids+=("$!")
done
ready() { [ "$(grep -l "shard of" "$work"/client*.log | wc -l)" = 30 ]; }
wait_for "the 30 clients to load their data" 300 ready || { summary; exit 1; }
sql "UPDATE coordinator SET lease_until = '-infinity'" # a node claims it, and starts round 0

# round 0 is open and cannot close: kill a front-end that holds some of its chosen clients
started() { [ "$(sql "SELECT count(*) FROM rounds WHERE round = 0 AND started IS NOT NULL")" = 1 ]; }
wait_for "round 0 to start" 120 started || { summary; exit 1; }
chosen=$(sql "SELECT encode(participants, 'hex') FROM rounds WHERE round = 0" | fold -w 16 |
  sed 's/\(..\)\(..\)\(..\)\(..\)\(..\)\(..\)\(..\)\(..\)/\8\7\6\5\4\3\2\1/' | while read -r h; do echo $((16#$h)); done | paste -sd,)
coordinator_pid=$(coordinator)
victim=$(sql "SELECT n.pid, n.id FROM presence p JOIN nodes n ON n.id = p.node WHERE p.client IN ($chosen) AND n.pid <> $coordinator_pid
              GROUP BY n.pid, n.id ORDER BY count(*) DESC LIMIT 1")
victim_pid=${victim%%|*} victim_node=${victim#*|}
[ -n "$victim_pid" ] || give_up "no front-end holds a client chosen for round 0 (chosen: $chosen)"
victim_shards=$(sql "SELECT c.shard FROM presence p JOIN clients c ON c.id = p.client WHERE p.node = $victim_node")
echo "round 0 (clients $chosen): coordinator pid $coordinator_pid; killing front-end pid $victim_pid with $(wc -w <<<"$victim_shards") clients, $(sql "SELECT count(*) FROM presence WHERE node = $victim_node AND client IN ($chosen)") of them chosen"
kill -9 "$victim_pid" && wait "$victim_pid" 2>/dev/null
# its clients come back through HAProxy; the round's updates are stored, and the coordinator's close waits
closing() { closing_pid=$(waiting 'INSERT INTO decisions' | head -n 1); [ -n "$closing_pid" ]; }
wait_for "the coordinator to begin closing round 0" 120 closing || { summary; exit 1; }
[ "$closing_pid" = "$coordinator_pid" ] || echo "round 0: the coordinator is now pid $closing_pid (a lease ran out meanwhile)"
coordinator_pid=$closing_pid
[ "$(sql "SELECT count(*) FROM updates WHERE round = 0")" = 10 ] && ok || bad "round 0 does not hold 10 updates before its close"
kill -9 "$coordinator_pid" && wait "$coordinator_pid" 2>/dev/null
release close
echo "round 0: killed the coordinator (pid $coordinator_pid) while it closed the round"
for k in 1 2 3; do [ "${node_pid[k]}" != "$victim_pid" ] && [ "${node_pid[k]}" != "$coordinator_pid" ] && survivor=$k; done

# PostgreSQL stopped mid-round: round 2 starts with the updates table locked, so that its updates
# wait in the node's batch (its insert waits for the lock); then the server stops
round2_row() { [ "$(sql "SELECT count(*) FROM rounds WHERE round = 2")" = 1 ]; }
wait_for "round 1 to close" 180 round2_row || { summary; exit 1; }
hold lock "LOCK TABLE updates IN SHARE MODE" || give_up "the updates table could not be locked"
release start2
batch_waits() { [ -n "$(waiting 'INSERT INTO updates')" ]; }
wait_for "round 2's updates to wait in a batch" 120 batch_waits || { summary; exit 1; }
t_stop=$(date +%s%N)
postgres_pause immediate || give_up "pg_ctl stop failed"
drop lock
# while it is down: the node's store fails, the batch is refused, and some client resends and is
# refused again; nothing of round 2 is acknowledged
fault_seen() { grep -q '"event": "store_fault"' "$work/node$survivor.log"; }
refused_resend() { # a client resent its update, and the resend was refused too (the store failed)
  awk 'FNR == 1 { again = 0 } /sending the update again/ { again = 1 }
       again && /server_error \(not stored: store: (begin|add update|commit)/ { found = 1 } END { exit !found }' "$work"/client*.log
}
wait_for "the node's store fault" 30 fault_seen && ok
wait_for "a client's resent update to be refused while PostgreSQL is down" 60 refused_resend && ok
[ "$(grep -l "the update for round 2 was acknowledged" "$work"/client*.log | wc -l)" = 0 ] && ok ||
  bad "round 2 updates acknowledged while PostgreSQL was down: $(grep -l "the update for round 2 was acknowledged" "$work"/client*.log)"
postgres_resume || give_up "pg_ctl start failed"
echo "round 2: PostgreSQL was down for $((($(date +%s%N) - t_stop) / 1000000)) ms with the round's updates in flight"

wait_for "the federation's 5 rounds" 180 sh -c "curl -s --max-time 5 http://127.0.0.1:$haproxy_port/status | grep -q '\"done\": 1'" || {
  echo "rounds: $(sql "SELECT round, started IS NOT NULL, closed IS NOT NULL FROM rounds ORDER BY round" | tr '\n' ' ')"
  echo "clients present: $(sql "SELECT count(*) FROM presence p JOIN nodes n ON n.id = p.node WHERE n.lease_until > now()")"
  echo "clients not finished: $(grep -L "the federation finished" "$work"/client*.log | tr '\n' ' ')"
  summary
  exit 1
}

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
for k in $victim_shards; do grep -A1 ": disconnected$" "$work/client$k.log" | grep -q "connecting again in" || bad "client $k of the killed front-end did not reconnect"; done
[ -n "$victim_shards" ] && [ "$(sql "SELECT count(*) FROM presence WHERE node = $victim_node")" = 0 ] && ok ||
  bad "clients of the killed front-end did not reconnect to the other nodes: $(sql "SELECT client FROM presence WHERE node = $victim_node")"
# nothing was acknowledged while the node's store failed (PostgreSQL stopped): no update logged between
# its store_fault and the store_fault_cleared that ended it, and it did end
[ "$(grep -c '"event": "store_fault_cleared"' "$work/node$survivor.log")" -ge 1 ] &&
  [ "$(awk '/"event": "store_fault"/ { down = 1 } /"event": "store_fault_cleared"/ { down = 0 } down && /"event": "update"/' "$work/node$survivor.log" | wc -l)" = 0 ] &&
  ok || bad "the node acknowledged updates while its store failed, or its fault did not end"
# the node left standing took over: its /status and /metrics say so, with the federation's counts
epoch=$(sql "SELECT epoch FROM coordinator")
node_status "$survivor" | grep -q "\"updates_accepted\": $(sql "SELECT count(*) FROM updates"), \"rounds_closed\": 5, .*\"nodes\": 1, .*\"coordinator_epoch\": $epoch, \"node\": {\"id\": [0-9]*, \"role\": \"coordinator\", \"epoch\": $epoch," &&
  ok || bad "the surviving node's /status: $(node_status "$survivor" | cut -c1-900)"
metrics=$(curl -s --max-time 5 "http://127.0.0.1:${node_port[$survivor]}/metrics")
grep -q '^sdfed_node_coordinator{node="[0-9]*"} 1$' <<<"$metrics" && grep -q '^sdfed_cluster_rounds_closed 5$' <<<"$metrics" &&
  grep -q "^sdfed_cluster_epoch $epoch\$" <<<"$metrics" && ok || bad "the surviving node's /metrics: $(grep -E 'node_|cluster_' <<<"$metrics")"
# every client saw the end
[ "$(grep -l "the federation finished its 5 rounds" "$work"/client*.log | wc -l)" = 30 ] && ok ||
  bad "not every client finished: $(grep -L "the federation finished" "$work"/client*.log | head -n 3)"

summary
[ "$failed" -eq 0 ]
