#!/usr/bin/env bash
# Secure rounds in cluster mode on loopback (ctest aggregator_cluster_secure;
# docs/secure-aggregation.md, "Cluster mode"): a PostgreSQL server of the
# test's own (tests/lib/postgres.sh), 3 sdfed-aggregator nodes on it, HAProxy
# in front (tools/haproxy.sh), 6 headless clients through HAProxy,
# tasks/fmnist-secure.json's settings with 2 rounds of all 6 clients, and
# the task's dropouts at the unmasking (secure_aggregation.drop, which the
# headless clients draw as the simulator's do: with the task's seed two
# clients leave round 0's unmasking, which is abandoned, and one round 1's,
# which closes without it: the share graph is drawn from the task's seed,
# --graph-from-seed, as the simulator draws it, so that which secrets the
# dropouts leave short of t is the same); a client that leaves closes its
# connection, and its node stores its leave, which every node applies. Once
# round 0 started one client is frozen (SIGSTOP), holding its advertise stage
# open; when the other five's keys are stored, a front-end (not the
# coordinator) that holds some of the round's clients is killed -9: its
# clients reconnect through HAProxy to the other nodes and go on there; once
# they have, the coordinator is killed -9 too, and the frozen client thaws:
# the node left takes the coordinator's lease and goes on with the round
# from the stored rows. Then: the rounds end as the simulator's (abandoned,
# or closed with the same inputs) and their globals equal `sdfed sim`'s bit
# for bit (as secure.sh's parts 1 and 5), within less time than one stage's
# deadline (--deadline 120: no stage waited for a client that left); every
# stage message a client saw acknowledged is stored, each once, and each
# leave; no update in the clear is stored; each round started once and ended
# once, round 0's end by the node that took over; every node opened the
# round from the store.
#   cluster_secure.sh BUILD_DIR MODEL.gguf WORK_DIR
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
. "$here/../../lib/tally.sh" aggregator_cluster_secure
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  haproxy_stop
  postgres_stop
}
trap cleanup EXIT
give_up() { bad "$*"; summary; exit 1; }

/usr/bin/python3 - "$here/../../../tasks/fmnist-secure.json" "$model" >"$work/task.json" <<'PY'
import json, sys
task = json.load(open(sys.argv[1]))
task.update({"model": sys.argv[2], "clients": 6, "clients_per_round": 6, "min_clients": 6, "rounds": 2})
task["partition"].update({"shots": 8, "test_per_client": 20})
task["secure_aggregation"]["drop"] = {"unmask": 0.2}
print(json.dumps(task))
PY
"$sdfed" sim --task "$work/task.json" --out "$work/sim" --cache "$work/cache" >"$work/sim.log" 2>&1 ||
  give_up "sim: $(tail -n 2 "$work/sim.log")"
sim_history=$(grep -o '"global_sha256": "[0-9a-f]*"' "$work/sim/results.json" | sed 's/.*: "\(.*\)"/\1/')
[ "$(wc -l <<<"$sim_history")" = 2 ] || give_up "the simulator did not run 2 rounds"

postgres_start && postgres_createdb secure || give_up "no PostgreSQL server"
db=$(postgres_uri secure)
sql() { postgres_psql secure -c "$1"; }

for k in 1 2 3; do
  "$aggregator" --task "$work/task.json" --db "$db" --port 0 --port-file "$work/node$k.port" --host 127.0.0.1 \
    --node-lease 4 --poll 0.3 --deadline 120 --graph-from-seed --proxy-protocol-from "$haproxy_source" \
    >"$work/node$k.log" 2>&1 &
  node_pid[k]=$!
  pids+=("$!")
done
for k in 1 2 3; do
  node_port[k]=$(port_file "$work/node$k.port" "${node_pid[k]}") || give_up "node $k did not start: $(tail -n 3 "$work/node$k.log")"
done
haproxy_start "$work" 127.0.0.1 0 "127.0.0.1:${node_port[1]}" "127.0.0.1:${node_port[2]}" "127.0.0.1:${node_port[3]}" ||
  give_up "HAProxy did not start"
pids+=("$haproxy_pid")
coordinator() { sql "SELECT n.pid FROM coordinator c JOIN nodes n ON n.id = c.node WHERE c.lease_until > now()"; }
has_coordinator() { [ -n "$(coordinator)" ]; }
wait_for "a coordinator" 30 has_coordinator || give_up "no node took the coordinator's lease"

for k in $(seq 0 5); do
  "$client" --server "ws://127.0.0.1:$haproxy_port" --client-index "$k" --model "$model" --cache "$work/cache" \
    --token-file "$work/token$k" --give-up 60 >"$work/client$k.log" 2>&1 &
  client_pid[k]=$!
  pids+=("$!")
done
started() { [ "$(sql "SELECT count(*) FROM rounds WHERE round = 0 AND started IS NOT NULL")" = 1 ]; }
wait_for "round 0 to start" 60 started || { summary; exit 1; }
kill -STOP "${client_pid[5]}"
advertised() { [ "$(sql "SELECT count(*) FROM secagg_messages WHERE round = 0 AND client >= 0")" -ge 5 ]; }
wait_for "five clients' keys stored in round 0" 60 advertised || { summary; exit 1; }
stage=$(sql "SELECT count(*) FROM secagg_messages WHERE round = 0 AND client = -1")
[ "$stage" = 0 ] && ok || bad "round 0 left its advertise stage without the frozen client's keys"
coordinator_pid=$(coordinator)
victim=$(sql "SELECT n.pid, n.id FROM presence p JOIN nodes n ON n.id = p.node WHERE n.pid <> $coordinator_pid
              GROUP BY n.pid, n.id ORDER BY count(*) DESC LIMIT 1")
victim_pid=${victim%%|*} victim_node=${victim#*|}
[ -n "$victim_pid" ] || give_up "no front-end holds a client"
victim_shards=$(sql "SELECT c.shard FROM presence p JOIN clients c ON c.id = p.client WHERE p.node = $victim_node")
echo "round 0 at its advertise stage: coordinator pid $coordinator_pid; killing front-end pid $victim_pid with clients $(echo $victim_shards)"
kill -9 "$victim_pid" && wait "$victim_pid" 2>/dev/null
# the killed node's clients (but the frozen one) are held by the other nodes again; then the coordinator dies
moved() {
  [ "$(sql "SELECT count(*) FROM presence p JOIN clients c ON c.id = p.client WHERE p.node <> $victim_node AND c.shard <> 5")" = 5 ]
}
wait_for "the killed front-end's clients to reconnect to the other nodes" 30 moved || { summary; exit 1; }
kill -9 "$coordinator_pid" && wait "$coordinator_pid" 2>/dev/null
echo "round 0 at its advertise stage: killed the coordinator (pid $coordinator_pid) too"
kill -CONT "${client_pid[5]}"

done_in() { curl -s --max-time 5 "http://127.0.0.1:$haproxy_port/status" | grep -q '"done": 1'; }
wait_for "the secure federation's 2 rounds" 90 done_in || {
  echo "rounds: $(sql "SELECT round, started IS NOT NULL, closed IS NOT NULL, abandoned FROM rounds ORDER BY round" | tr '\n' ' ')"
  echo "rows: $(sql "SELECT round, client, get_byte(message, 0) FROM secagg_messages ORDER BY round, seq" | tr '\n' ' ')"
  summary
  exit 1
}

history=$(sql "SELECT sha256 FROM rounds WHERE round > 0 ORDER BY round")
[ "$history" = "$sim_history" ] && ok || bad "the cluster's secure globals differ from sdfed sim's: $(echo $history) vs $(echo $sim_history)"
# each round abandoned, or closed with the inputs, as the simulator's
sim_rounds=$(awk '/^round [0-9]+: .*; secure: / { sub(":", "", $2); masked = $0; sub(/ masked,.*/, "", masked);
  sub(/.* /, "", masked); print $2 " " (/abandoned/ ? "abandoned" : masked) }' "$work/sim.log" | tr '\n' ';')
stored_rounds=$(sql "SELECT round || ' ' || CASE abandoned WHEN 1 THEN 'abandoned' ELSE n_updates::text END FROM rounds
  WHERE closed IS NOT NULL ORDER BY round" | tr '\n' ';')
[ "$sim_rounds" = "0 abandoned;1 6;" ] && [ "$stored_rounds" = "$sim_rounds" ] && ok ||
  bad "the rounds with the task's dropouts: the store says $stored_rounds, the simulator $sim_rounds"
[ "$(sql "SELECT count(*) FROM updates")" = 0 ] && ok || bad "updates in the clear were stored"
# each stage message once, 3 leaves at the unmasking (the simulator's dropouts), 3 stage ends a round
[ "$(sql "SELECT count(*) = count(DISTINCT (round, client, get_byte(message, 0))) FROM secagg_messages WHERE client >= 0")" = t ] &&
  [ "$(sql "SELECT count(*) FROM secagg_messages WHERE client >= 0 AND message = '\\x00'")" = 3 ] &&
  [ "$(sql "SELECT count(*) FROM secagg_messages WHERE client = -1")" = 6 ] && ok ||
  bad "the stored rows: $(sql "SELECT round, client, get_byte(message, 0) FROM secagg_messages ORDER BY round, seq" | tr '\n' ' ')"
# rows numbered 0.. without gaps in each round
[ "$(sql "SELECT count(*) FROM (SELECT round, max(seq) + 1 = count(*) AS dense FROM secagg_messages GROUP BY round) r WHERE dense")" = 2 ] &&
  ok || bad "a round's rows are not numbered without gaps"
# every message a client saw acknowledged is stored
kinds="advertise:1 shares:3 masked:5 unmask:7"
acked=$(grep -ho 'client [0-9]*: round [0-9]*: the server stored its [a-z]* message' "$work"/client*.log |
  sed 's/client \([0-9]*\): round \([0-9]*\): the server stored its \([a-z]*\) message/\2 \1 \3/' |
  while read -r r c kind; do for m in $kinds; do [ "${m%%:*}" = "$kind" ] && echo "$r $c ${m#*:}"; done; done | sort -u)
stored=$(sql "SELECT m.round || ' ' || c.shard || ' ' || get_byte(m.message, 0) FROM secagg_messages m JOIN clients c ON c.id = m.client" | sort -u)
missing=$(comm -23 <(echo "$acked") <(echo "$stored"))
[ -n "$acked" ] && [ -z "$missing" ] && ok || bad "acknowledged messages missing from the database: $missing"
[ "$(sql "SELECT string_agg(kind, ',' ORDER BY kind) FROM decisions GROUP BY round ORDER BY round" | sort | uniq -c | sed 's/^ *//')" = "2 close,start" ] &&
  ok || bad "decisions per round: $(sql "SELECT round, kind, epoch, node FROM decisions ORDER BY round, kind")"
# round 0 was ended by the node that took over, at a higher epoch than it was started
takeover=$(sql "SELECT (SELECT epoch FROM decisions WHERE round = 0 AND kind = 'close') >
                       (SELECT epoch FROM decisions WHERE round = 0 AND kind = 'start'),
                       (SELECT n.pid FROM decisions d JOIN nodes n ON n.id = d.node WHERE round = 0 AND kind = 'close')")
[ "${takeover%%|*}" = t ] && [ "${takeover#*|}" != "$coordinator_pid" ] && [ "${takeover#*|}" != "$victim_pid" ] && ok ||
  bad "round 0's end was not the new coordinator's: $takeover"
# every node opened round 0 from the store
[ "$(grep -l '"event": "secagg_resumed", "round": 0,' "$work"/node*.log | wc -l)" = 3 ] && ok ||
  bad "not every node opened round 0: $(grep -h secagg_resumed "$work"/node*.log)"
# the killed front-end's clients came back through HAProxy to the other nodes
for k in $victim_shards; do grep -q "connecting again in" "$work/client$k.log" || bad "client $k of the killed front-end did not reconnect"; done
# (a client that left at the last round's unmasking, as the task's dropouts say, hears that the federation is done
# once it has reconnected: after its back-off, which may end after the federation did)
all_finished() { [ "$(grep -l "the federation finished its 2 rounds" "$work"/client*.log | wc -l)" = 6 ]; }
if wait_for "every client to hear the federation finished" 30 all_finished; then ok; else
  echo "  not finished: $(grep -L "the federation finished" "$work"/client*.log)"; fi

summary
[ "$failed" -eq 0 ]
