#!/usr/bin/env bash
# The aggregator on loopback with real headless clients:
#  1. 10 clients, 5 rounds: every round's global parameters equal, bit for
#     bit, what `sdfed sim` computes for the same task and seed; the same
#     with dropouts, with a task's own classes, template and prompt_init,
#     on a folder dataset, and on colour JPEGs and PNGs with another CLIP,
#     also in derived domains (headless clients that load the model their
#     --host-task file names); a host's task with min_clients 2 runs its
#     rounds with 2 volunteers, and with 1 says why it waits (/status,
#     status.html, the log);
#  2. hostile inputs (adversary.mjs) are refused with their codes before the
#     federation, which then still ends on the simulator's parameters;
#     updates whose mean overflows (uncombinable.mjs) end their round
#     abandoned instead of stalling it;
#  3. kill -9 mid-round and a restart: the run ends on the same history, and
#     /status and status.html count the whole federation, not the restart's;
#     a client killed mid-round and started again with its token is given
#     its round again, and the run ends on the simulator's history;
#  4. 20% of clients send sign-flipped or scaled updates: median and
#     trimmed mean stay within 2 points of a clean run, the mean does not;
#  5. asynchronous mode, TLS, a join key, state that belongs to another
#     task, the store on a full disk (a fault logged once), metrics from
#     clients in no round (refused; the public accuracy unchanged), the
#     state private to its owner, read-only at the start and writable
#     again (recovered by itself), or that cannot be opened (stops at once),
#     malformed HTTP requests (400 with a body), and the command lines;
#  6. liveness: volunteers vanish (closing, kill -9, silence) and rounds are
#     abandoned, then go on with newcomers; seeded churn in which rounds keep
#     closing and every acknowledged update is stored; --host binds only
#     the address given; a client busy loading still answers PINGs; the
#     keepalive hangs up a connection that answers none; a browser's close
#     of a page (1001) keeps its place in its round, a client's own does not;
#  7. the edge a public federation faces (edge.mjs, its own servers): frames
#     and requests over their limits refused before they are read.
# Every server listens on a port the kernel chooses (--port 0), read from
# its --port-file; a restart after kill -9 takes the same port again.
#   run.sh BUILD_DIR MODEL.gguf WORK_DIR [PART]
# Without PART (or with "all") every part runs in turn in WORK_DIR. ctest runs
# one part a test: "setup" makes WORK_DIR afresh, with part 1's task and its
# run of sdfed sim (eq.json, eq-sim) and the feature cache that run fills;
# then each of "1" (1, 1b and 1h), "1c" (1c-1g and a volunteer's own
# images), "2", "3" (3 and 3b), "4", "5", "6" and "7" runs in WORK_DIR/PART
# on a copy of them (a cache of its own: part 6c locks its files), and
# "reports" looks for sanitizer reports in every part's logs.
# With "postgres" only part 1's first federation runs, with its
# state in PostgreSQL (--db, a server of the script's own on a Unix socket:
# tests/lib/postgres.sh), then part 2's updates whose mean overflows (the
# round abandoned by the cluster's coordinator), a database of another task and --db's
# command-line errors (ctest aggregator_postgres); with "edge" only part 7
# (in WORK_DIR);
# with "sanitizer" all but parts 1c-1g (the same server code as part 1 on
# other tasks) and 4 (robust aggregation: its rules are the core's, which
# test_aggregate runs there): their federations of ten clients took minutes
# under ASan;
# with "devices" only the local prompt fitted to devices (ctest
# aggregator_devices): 3 clients given their device's step times (--step-ms)
# train a partial epoch and end on sdfed sim's history, bit for bit; a slow
# client (--step-sleep-ms) times its steps at join, trains fewer of them and
# its update counts with the samples it used; one too slow for a single step
# within the budget leaves every round, which closes without it; /status and
# /metrics summarise the clients' device figures; a client that misses three
# deadlines in a row sits out the next round, told so (wait "paced" with
# retry_after); a measured device that slows down is measured again.
set -u
build=$1 model=$2 work=$3 parts=${4:-all}
root=$3 # a part's own folder is under it when ctest runs the parts one a test
case $parts in
  all) run_parts="1 1c 2 3 4 5 6 7 reports" ;;
  sanitizer) run_parts="1 2 3 5 6 7 reports" ;;
  setup | 1 | 1c | 2 | 3 | 4 | 5 | 6 | 7 | reports) run_parts=$parts work=$root/$parts ;;
  postgres | devices | edge) run_parts= ;;
  *) echo "run.sh: no part '$parts' (all, sanitizer, setup, 1, 1c, 2-7, reports, postgres, devices, edge)" >&2; exit 2 ;;
esac
part() { case " $run_parts " in *" $1 "*) return 0 ;; esac; return 1; } # part NAME: whether this run makes part NAME
other_model=$build/test-models/mini-vit.openai.f32.gguf # another CLIP (ctest converts it first)
sdfed=$build/sdfed aggregator=$build/sdfed-aggregator client=$build/sdfed-client
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../../tools/port_file.sh"
. "$here/../../lib/postgres.sh"
. "$here/../../lib/wait_for.sh"
[ "$parts" = setup ] && rm -rf "$root" # the last run's parts and their logs go with it
rm -rf "$work" && mkdir -p "$work"
cache="$work/cache"
. "$here/../../lib/tally.sh" aggregator
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  postgres_stop
}
trap cleanup EXIT

scheme=http ws=ws # https and wss for the TLS server
join_key= # the running server's join key, which status() presents

task() { # task NAME JSON_OVERRIDES: the pathological task with keys replaced
  /usr/bin/python3 - "$here/../../../tasks/fmnist-pathological.json" "$model" "$2" >"$work/$1.json" <<'PY'
import json, sys
task = json.load(open(sys.argv[1]))
task["model"] = sys.argv[2]
task.update(json.loads(sys.argv[3]))
print(json.dumps(task))
PY
}

is_database() { case $1 in postgres*://*) return 0 ;; *) return 1 ;; esac; }
state_option() { if is_database "$1"; then echo --db; else echo --state; fi; }

start_server() { # start_server NAME TASK STATE [OPTIONS...]: sets $server_pid and $port (STATE: a folder or a URI)
  local name=$1 taskfile=$2 state=$3 want=0 tries=1
  shift 3
  # a restart takes the port its clients know again; only a port the test's own
  # server just held, and a few tries in case it is not free yet
  [ "${same_port:-}" = 1 ] && want=$port tries=5
  for try in $(seq 1 $tries); do
    rm -f "$work/$name.port"
    "$aggregator" --task "$taskfile" --port "$want" --port-file "$work/$name.port" --host 127.0.0.1 "$(state_option "$state")" "$state" \
      "$@" >>"$work/$name.server.log" 2>&1 &
    server_pid=$!
    pids+=("$server_pid")
    port=$(port_file "$work/$name.port" "$server_pid") && return 0
    kill -9 "$server_pid" 2>/dev/null
    [ "$try" -lt "$tries" ] && sleep 0.5
  done
  bad "$name: the server did not start: $(tail -n 3 "$work/$name.server.log")"
  return 1
}

start_client() { # start_client NAME K: headless client K (its token in a file of its own, kept for a restart)
  local name=$1 k=$2
  "$client" --server "$ws://127.0.0.1:$port" --client-index "$k" ${model:+--model "$model"} --cache "$cache" \
    --token-file "$work/$name.token$k" $(client_extra "$k") >>"$work/$name.client$k.log" 2>&1 &
  pids+=("$!")
  client_pid[k]=$!
}
start_clients() { # start_clients NAME N [EXTRA ARGS for client k as a function]; no --model while $model is empty
  for k in $(seq 0 $(($2 - 1))); do start_client "$1" "$k"; done
}
client_extra() { :; }
stop_server() { kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; }

status() { curl -sk ${join_key:+-H "Authorization: Bearer $join_key"} "$scheme://127.0.0.1:$port/status"; }
wait_done() { # wait_done NAME SECONDS
  for _ in $(seq 1 $(($2 * 10))); do status | grep -q '"done": 1' && return 0; sleep 0.1; done
  bad "$1: not done after $2 s: $(status)"
  return 1
}

store_query() { # store_query STATE SQL: one query on a state folder's SQLite or a --db URI's PostgreSQL
  if is_database "$1"; then "$postgres_bin/psql" -X -q -At "$1" -c "$2"; else sqlite3 "$1/aggregator.sqlite" "$2"; fi
}
history() { # the global parameters' hash of every round from the state
  store_query "$1" "SELECT sha256 FROM rounds WHERE round > 0 ORDER BY round"
}
sim_history() { grep -o '"global_sha256": "[0-9a-f]*"' "$1/results.json" | sed 's/.*: "\(.*\)"/\1/'; }

if [ "$parts" = devices ]; then
  devices_task() { # devices_task NAME JSON_OVERRIDES: the pathological task with a local_prompt instead of its length
    task "$1" "$2"
    /usr/bin/python3 -c 'import json, sys; t = json.load(open(sys.argv[1])); t.pop("local_prompt_length")
json.dump(t, open(sys.argv[1], "w"))' "$work/$1.json"
  }
  # one device, 300 and 400 ms a step at 4 and 16 tokens, 0.5 s a round: one of the epoch's 2 steps, 16 samples
  devices_task dev '{"clients": 3, "clients_per_round": 3, "rounds": 3,
    "local_prompt": {"lengths": [4, 16], "rule": "adaptive", "budget_s": 0.5},
    "devices": [{"name": "slow", "share": 1, "step_ms": [300, 400]}]}'
  "$sdfed" sim --task "$work/dev.json" --out "$work/dev-sim" --cache "$cache" >"$work/dev-sim.log" 2>&1 ||
    bad "sim: $(tail -n 2 "$work/dev-sim.log")"
  client_extra() { echo --step-ms 300,400; }
  start_server dev "$work/dev.json" "$work/dev-state" && start_clients dev 3 && wait_done dev 120
  [ -n "$(sim_history "$work/dev-sim")" ] && [ "$(history "$work/dev-state")" = "$(sim_history "$work/dev-sim")" ] &&
    ok || bad "with given step times the aggregator's history differs from sdfed sim's"
  [ "$(store_query "$work/dev-state" 'SELECT DISTINCT samples FROM updates')" = 16 ] && ok ||
    bad "a partial epoch's updates do not weigh the 16 samples used"
  grep -q 'this device: 300.0 ms a step (--step-ms) -> a local prompt of 4 tokens, 1 of 2 steps a round' \
    "$work/dev.client0.log" && ok || bad "the client does not say its plan: $(cat "$work/dev.client0.log")"
  # the figures the clients' metrics carried, summarised in /status and /metrics
  status | grep -q '"devices": {"count": 3, "step_ms": \[{"length": 4, "p10": 300.000, "p50": 300.000, "p90": 300.000}, {"length": 16, "p10": 400.000, "p50": 400.000, "p90": 400.000}\], "threads": \[{"threads": [0-9]*, "devices": 3}\], "kernels": \[{"kernels": "[a-z0-9_.+-]*", "devices": 3}\]' &&
    ok || bad "/status's devices: $(status | grep -o '"devices": {.*')"
  curl -s "http://127.0.0.1:$port/metrics" | grep -q '^sdfed_device_step_ms{length="16",quantile="0.5"} 400.000$' &&
    curl -s "http://127.0.0.1:$port/metrics" | grep -q '^sdfed_devices 3$' && ok ||
    bad "/metrics' devices: $(curl -s "http://127.0.0.1:$port/metrics" | grep device)"
  curl -s "http://127.0.0.1:$port/status.html" | grep -q "<h2>The volunteers' devices</h2><svg" && ok ||
    bad "no devices chart on the status page"
  devices() { status | /usr/bin/python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["devices"]))'; }
  devices_before=$(devices)
  stop_server
  # the figures are the store's: a restart, no client connected, shows the same devices
  start_server dev "$work/dev.json" "$work/dev-state" && [ -n "$devices_before" ] &&
    [ "$(devices)" = "$devices_before" ] && ok || bad "after a restart /status's devices: $(devices)"
  stop_server
  # a slow client (400 ms of sleep after every step) and another, both timing their steps at join: the slow one
  # trains 1 of its 2 steps and its update counts with 16 samples
  devices_task slow '{"clients": 2, "clients_per_round": 2, "rounds": 3,
    "local_prompt": {"lengths": [4, 16], "rule": "adaptive", "budget_s": 0.7}}'
  client_extra() { [ "$1" = 0 ] && echo --step-sleep-ms 400; }
  start_server slow "$work/slow.json" "$work/slow-state" && start_clients slow 2 && wait_done slow 120
  client_extra() { :; }
  grep -q 'this device: [0-9.]* ms a step (measured) -> a local prompt of 4 tokens, 1 of 2 steps a round' \
    "$work/slow.client0.log" && ok || bad "the slow client's plan: $(grep 'this device' "$work/slow.client0.log")"
  [ "$(store_query "$work/slow-state" 'SELECT count(*) FROM updates WHERE samples = 16')" = 3 ] &&
    [ "$(store_query "$work/slow-state" 'SELECT count(*) FROM updates')" = 6 ] && ok ||
    bad "the slow client's updates: $(store_query "$work/slow-state" 'SELECT round, samples FROM updates')"
  stop_server
  # a device that cannot take one step within the budget (2 s a step, 0.7 s a round) leaves every round it is
  # chosen for; the run ends on the other client's updates alone
  devices_task hopeless '{"clients": 2, "clients_per_round": 2, "min_clients": 1, "rounds": 2,
    "local_prompt": {"lengths": [4, 16], "rule": "adaptive", "budget_s": 0.7}}'
  client_extra() { [ "$1" = 0 ] && echo --step-ms 2000,3000; }
  start_server hopeless "$work/hopeless.json" "$work/hopeless-state" && start_clients hopeless 2 &&
    wait_done hopeless 120
  client_extra() { :; }
  grep -q 'not one step fits local_prompt.budget_s on this device: disconnecting' "$work/hopeless.client0.log" &&
    [ "$(store_query "$work/hopeless-state" 'SELECT count(DISTINCT client), min(samples) FROM updates')" = "1|32" ] &&
    ok || bad "a device too slow for one step: $(grep round "$work/hopeless.client0.log" | head -n 3)"
  stop_server
  # a device that slows down (300 ms of sleep a step from its second round on) after timing its steps at join:
  # the round whose steps drift from the measured time measures again, and its metrics carry the new figures
  # (slower than 300 ms at 4 tokens: the figures timed at join were not; round 0 is the reference, round 1 drifts)
  devices_task drift '{"clients": 2, "clients_per_round": 2, "rounds": 3,
    "local_prompt": {"lengths": [4, 16], "rule": "adaptive", "budget_s": 5}}'
  client_extra() { [ "$1" = 0 ] && echo --step-sleep-ms 300 --slow-from-round 1; }
  start_server drift "$work/drift.json" "$work/drift-state" && start_clients drift 2 && wait_done drift 120
  client_extra() { :; }
  grep -q 'round 1: [0-9.]* ms a step, not the [0-9.]* ms expected: measured again, now [0-9.]* ms a step' \
    "$work/drift.client0.log" && ok || bad "the slowed device is not measured again: $(cat "$work/drift.client0.log")"
  status | /usr/bin/python3 -c 'import json, sys; d = json.load(sys.stdin)["devices"]
sys.exit(not (d["count"] == 2 and d["step_ms"][0]["length"] == 4 and d["step_ms"][0]["p90"] >= 300))' &&
    ok || bad "/status does not carry the new figures: $(status | grep -o '"devices": {.*')"
  stop_server
  # pace steering: a device that says it is fast (--step-ms) but sleeps 0.7 s a step misses the 1 s deadline of
  # every round it is sampled for; after three in a row it sits out a round, told so with retry_after (it reads
  # the messages that came while it trained once it is done: waited for), while the rounds go on without it
  devices_task paced '{"clients": 2, "clients_per_round": 2, "min_clients": 1, "rounds": 7,
    "local_prompt": {"lengths": [4, 16], "rule": "adaptive", "budget_s": 0.7}}'
  client_extra() { [ "$1" = 0 ] && echo --step-ms 100,100 --step-sleep-ms 700; }
  start_server paced "$work/paced.json" "$work/paced-state" --deadline 1 && start_clients paced 2 &&
    wait_done paced 120
  client_extra() { :; }
  told() { grep -q 'paced: sitting it out after missed deadlines, back in [0-9]* ms at the soonest' "$work/paced.client0.log"; }
  for _ in $(seq 1 300); do told && break; sleep 0.1; done
  told && ok || bad "the slow client is not told to sit out: $(grep -i 'round' "$work/paced.client0.log" | tail -n 5)"
  grep -q '"event": "paced", "client": [0-9]*, "round": [0-9]*, "rounds_out": 1' "$work/paced.server.log" &&
    [ "$(grep -c '"event": "round_start", "round": [0-9]*, "participants": 1, "connected": 2' "$work/paced.server.log")" -ge 1 ] &&
    ok || bad "the server does not sit the slow client out: $(grep -E 'paced|round_start' "$work/paced.server.log")"
  # its misses are the store's (a restart keeps them): 3 or more in a row (the other client's too, when the
  # machine's load makes it miss the 1 s deadline as well)
  [ "$(store_query "$work/paced-state" 'SELECT count(*) FROM pace WHERE misses >= 3')" -ge 1 ] && ok ||
    bad "the slow client's misses are not stored: $(store_query "$work/paced-state" 'SELECT * FROM pace')"
  stop_server
  summary
  [ "$failed" -eq 0 ]
  exit
fi

# --- 1. the simulator and the aggregator compute the same bits
if [ -z "$run_parts" ] || [ "$work" = "$root" ] || [ "$parts" = setup ]; then
task eq '{"rounds": 5}'
"$sdfed" sim --task "$work/eq.json" --out "$work/eq-sim" --cache "$cache" >"$work/eq-sim.log" 2>&1 || bad "sim: $(tail -n 2 "$work/eq-sim.log")"
if [ "$parts" = setup ]; then
  summary
  [ "$failed" -eq 0 ]
  exit
fi
elif [ "$parts" != reports ]; then
  # one part: the setup's task, its simulated history and the features it cached, copied
  cp -r "$root/setup/eq.json" "$root/setup/eq-sim" "$root/setup/cache" "$work/" ||
    { bad "no $root/setup (ctest runs aggregator_setup first)"; summary; exit 1; }
fi
same_as_sim() { # same_as_sim NAME STATE: 10 clients, 5 rounds of the eq task, with this state (a folder or a URI)
  local name=$1 state=$2
  start_server "$name" "$work/eq.json" "$state" && start_clients "$name" 10 && wait_done "$name" 120
  if [ "$(history "$state")" = "$(sim_history "$work/eq-sim")" ] && [ -n "$(sim_history "$work/eq-sim")" ]; then ok
  else bad "$name: the aggregator's history differs from sdfed sim's"; fi
  [ "$(store_query "$state" 'SELECT count(*) FROM updates')" = 50 ] && ok || bad "$name: not 50 updates stored"
  status | grep -q '"global_prompt_sha256": "'"$(sim_history "$work/eq-sim" | tail -n 1)"'"' &&
    ok || bad "$name: /status does not show the final global's hash"
  curl -s "http://127.0.0.1:$port/status.html" | grep -q "<svg" && ok || bad "$name: no chart on the status page"
  # /status's accuracy per round: every round the clients reported an accuracy for (on test images), as stored
  # (the server reads it again at most once a second)
  local want
  want=$(store_query "$state" 'SELECT count(DISTINCT round) FROM metrics WHERE test_samples > 0')
  rounds_shown() { status | grep -o '"accuracy": [0-9]' | wc -l; }
  for _ in $(seq 1 30); do [ "$(rounds_shown)" = "$want" ] && break; sleep 0.1; done
  [ "$want" -ge 5 ] && [ "$(rounds_shown)" = "$want" ] && ok ||
    bad "$name: /status shows the accuracy of $(rounds_shown) rounds, the store has $want"
  stop_server
}
uncombinable() { # uncombinable NAME STATE: 10 updates whose mean overflows end round 0 abandoned, not stalled
  local name=$1 state=$2
  start_server "$name" "$work/eq.json" "$state" --min-clients 10 &&
    node --experimental-websocket --no-warnings "$here/uncombinable.mjs" "$port" >"$work/$name.log" 2>&1
  grep -q "^uncombinable: [0-9]* passed, 0 failed" "$work/$name.log" && ok ||
    bad "$name: $(grep -E 'FAIL|uncombinable:' "$work/$name.log")"
  [ "$(store_query "$state" 'SELECT abandoned, n_updates FROM rounds WHERE round = 0')" = "1|10" ] && ok ||
    bad "$name: round 0 is not stored abandoned with its 10 updates: $(store_query "$state" 'SELECT * FROM rounds')"
  [ "$(grep -c '"aggregation failed: aggregate: the result is not finite; the round is abandoned"' "$work/$name.server.log")" = 1 ] &&
    ok || bad "$name: the aggregation is not logged failed once: $(grep '"error"' "$work/$name.server.log" | head -n 3)"
  stop_server
}
edge() { # --- 7. the edge (edge.mjs starts its own servers)
  node --experimental-websocket --no-warnings "$here/edge.mjs" "$aggregator" "$model" "$work/edge" >"$work/edge.log" 2>&1
  grep -q "^edge: [0-9]* passed, 0 failed" "$work/edge.log" && ok || bad "edge: $(grep -E 'FAIL|edge:' "$work/edge.log")"
}
if [ "$parts" = edge ]; then
  edge
  summary
  [ "$failed" -eq 0 ]
  exit
fi

if [ "$parts" = postgres ]; then
  postgres_start && postgres_createdb eq && postgres_createdb other && postgres_createdb uncombinable ||
    { bad "no PostgreSQL server"; summary; exit 1; }
  db=$(postgres_uri eq)
  same_as_sim eq-pg "$db"
  uncombinable uncombinable-pg "$(postgres_uri uncombinable)"
  # a database of another task is refused, as a state folder is
  task other '{"rounds": 2}'
  "$aggregator" --task "$work/other.json" --port 0 --host 127.0.0.1 --db "$db" >"$work/other-pg.log" 2>&1 &&
    bad "the database of another task was accepted" || ok
  grep -q "belongs to another task .*use another --db" "$work/other-pg.log" && ok ||
    bad "no clear message for another task's database: $(cat "$work/other-pg.log")"
  # --db's command-line errors: status 2; a server that refuses the login is one line naming the URI, not the password
  "$aggregator" --task "$work/other.json" --db "$db" --state "$work/other-state" 2>"$work/db-args.log"
  [ $? -eq 2 ] && grep -q "give one" "$work/db-args.log" && ok || bad "--db with --state: $(cat "$work/db-args.log")"
  "$aggregator" --task "$work/other.json" --db "$work/other-state" 2>"$work/db-args.log"
  [ $? -eq 2 ] && grep -q "postgresql://" "$work/db-args.log" && ok || bad "--db with a folder: $(cat "$work/db-args.log")"
  "$aggregator" --task "$work/other.json" --port 0 --db "${db/$postgres_password/not-the-password}" 2>"$work/db-login.log"
  # one error line (stderr also carries the log's JSON lines: the dataset, read before the store)
  [ $? -eq 1 ] && [ "$(grep -c '^sdfed-aggregator: ' "$work/db-login.log")" = 1 ] &&
    grep -q "^sdfed-aggregator: store: postgresql://sdfed@/eq?host=.*password authentication failed" \
    "$work/db-login.log" && ! grep -q "not-the-password" "$work/db-login.log" && ok ||
    bad "a refused login: $(cat "$work/db-login.log")"
  summary
  [ "$failed" -eq 0 ]
  exit
fi

if part 1; then
same_as_sim eq "$work/eq-state"

# --- 1b. part 1 with volunteers dropping out (the task's dropout): a chosen
# client that draws it disconnects (and comes back), the round cannot reach
# its quorum (min_clients 10 makes it all 5 chosen) and is abandoned; the
# simulator draws the same dropouts, so both abandon the same rounds
task drop '{"rounds": 5, "clients_per_round": 5, "min_clients": 10, "dropout": 0.15}'
"$sdfed" sim --task "$work/drop.json" --out "$work/drop-sim" --cache "$cache" >"$work/drop-sim.log" 2>&1 ||
  bad "sim with dropouts: $(tail -n 2 "$work/drop-sim.log")"
sim_abandoned=$(grep -o '"abandoned": [a-z]*' "$work/drop-sim/results.json" | sed 's/.*: //' | tr '\n' ' ')
case $sim_abandoned in *true*false* | *false*true*) ok ;; *) bad "the dropout task should abandon some rounds and close others: $sim_abandoned" ;; esac
start_server drop "$work/drop.json" "$work/drop-state" && start_clients drop 10 && wait_done drop 120
[ "$(history "$work/drop-state")" = "$(sim_history "$work/drop-sim")" ] && ok ||
  bad "with dropouts the aggregator's history differs from sdfed sim's"
stored_abandoned=$(sqlite3 "$work/drop-state/aggregator.sqlite" \
  "SELECT CASE abandoned WHEN 1 THEN 'true' ELSE 'false' END FROM rounds WHERE round < 5 ORDER BY round" | tr '\n' ' ')
[ "$stored_abandoned" = "$sim_abandoned" ] && ok ||
  bad "abandoned rounds: the store says $stored_abandoned, the simulator $sim_abandoned"
status | grep -q '"rounds_abandoned": '"$(grep -o true <<<"$sim_abandoned" | wc -l)" && ok ||
  bad "/status does not count the abandoned rounds: $(status)"
stop_server
fi

# --- 1c-1g (not in the sanitizer tree: the same server code as part 1 on other tasks; their clients' and
# the simulator's data paths run under ASan in the unit tests)
if part 1c; then
# --- 1c. a task with its own text: renamed classes (names shown, texts put
# into prompts), its own template and prompt_init, a name and description:
# the simulator runs it, and the aggregator with 3 headless clients gives
# its bits; the server shows the task's name and classes; the text changes
# the federation (another history than the same task without it)
task named '{"clients": 3, "clients_per_round": 3, "rounds": 3,
  "name": "Clothes & shoes", "description": "Ten <kinds> of clothing, renamed",
  "classes": [{"name": "Tee", "text": "t-shirt"}, {"name": "Trousers", "text": "pair of trousers"}, "Pullover",
              "Dress", "Coat", {"name": "Sandal", "text": "summer sandal"}, "Shirt", "Sneaker", "Bag",
              {"name": "Boot", "text": "ankle boot"}],
  "template": "a grey photo of a {}, a piece of clothing.", "prompt_init": "a photo of a"}'
task plain '{"clients": 3, "clients_per_round": 3, "rounds": 3}'
for t in named plain; do
  "$sdfed" sim --task "$work/$t.json" --out "$work/$t-sim" --cache "$cache" >"$work/$t-sim.log" 2>&1 ||
    bad "sim of the $t task: $(tail -n 2 "$work/$t-sim.log")"
done
[ -n "$(sim_history "$work/named-sim")" ] && [ "$(sim_history "$work/named-sim")" != "$(sim_history "$work/plain-sim")" ] &&
  ok || bad "the task's classes, template and prompt_init change nothing in the simulator"
start_server named "$work/named.json" "$work/named-state" && start_clients named 3 && wait_done named 120
[ "$(history "$work/named-state")" = "$(sim_history "$work/named-sim")" ] && ok ||
  bad "with the task's own text the aggregator's history differs from sdfed sim's"
curl -s "http://127.0.0.1:$port/task" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
names = ["Tee", "Trousers", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Boot"]
assert d["classes"] == names, d["classes"]
t = d["task"]
assert t["name"] == "Clothes & shoes" and t["description"] == "Ten <kinds> of clothing, renamed", t
assert [c["name"] for c in t["classes"]] == names and t["classes"][0]["text"] == "t-shirt", t["classes"]
assert t["template"] == "a grey photo of a {}, a piece of clothing." and t["prompt_init"] == "a photo of a", t
' && ok || bad "/task does not carry the task's name, classes, template and prompt_init"
status | grep -q '"name": "Clothes & shoes", "description": "Ten <kinds> of clothing, renamed"' && ok ||
  bad "/status does not show the task's name and description: $(status)"
curl -s "http://127.0.0.1:$port/status.html" | grep -q '<h1>Clothes &amp; shoes</h1><p class="description">Ten &lt;kinds&gt; of clothing, renamed</p>' &&
  ok || bad "the status page does not show the task's name and description, escaped"
stop_server

# --- 1d. a folder dataset: four Fashion-MNIST classes written as PNGs (tools/fmnist_to_folder.py), named
# by the task with their own texts, template and prompt_init: the aggregator with 3 headless clients gives
# the simulator's bits, and the server names the four classes
/usr/bin/python3 "$here/../../../tools/fmnist_to_folder.py" --out "$work/four" --classes "Trouser,Bag,Sandal,Ankle boot" \
  --per-class 120 2>"$work/four-export.log" || bad "export: $(tail -n 2 "$work/four-export.log")"
task four '{"dataset": {"train": "'"$work"'/four/train", "test": "'"$work"'/four/test"}, "clients": 3,
  "clients_per_round": 3, "rounds": 3, "partition": {"kind": "pathological", "classes_per_client": 2},
  "classes": [{"name": "Trouser", "text": "pair of trousers"}, "Bag", {"name": "Sandal", "text": "summer sandal"},
              {"name": "Ankle boot", "text": "boot"}],
  "template": "a grey photo of a {}.", "prompt_init": "a photo of a"}'
"$sdfed" sim --task "$work/four.json" --out "$work/four-sim" --cache "$cache" >"$work/four-sim.log" 2>&1 ||
  bad "sim of the folder task: $(tail -n 2 "$work/four-sim.log")"
client_extra() { echo --host-task "$work/four.json"; }
start_server four "$work/four.json" "$work/four-state" && start_clients four 3 && wait_done four 120
[ -n "$(sim_history "$work/four-sim")" ] && [ "$(history "$work/four-state")" = "$(sim_history "$work/four-sim")" ] &&
  ok || bad "on the folder dataset the aggregator's history differs from sdfed sim's"
curl -s "http://127.0.0.1:$port/task" | grep -q '"classes": \["Trouser", "Bag", "Sandal", "Ankle boot"\]' && ok ||
  bad "/task does not name the folder task's four classes"
# the host's folders are not sent: a client needs its own images, or on the host's machine the host's task file
curl -s "http://127.0.0.1:$port/task" | grep -q '"dataset": "folder"' && ! curl -s "http://127.0.0.1:$port/task" | grep -q "$work" &&
  ok || bad "/task gives the host's paths: $(curl -s "http://127.0.0.1:$port/task" | grep -o '"dataset": [^,]*')"
"$client" --server "ws://127.0.0.1:$port" --client-index 0 --model "$model" --cache "$cache" --give-up 5 \
  >"$work/four-nodata.log" 2>&1 && bad "a client without images joined the folder task" ||
  { grep -q "this federation's images are its host's: give --data DIR" "$work/four-nodata.log" && ok ||
    bad "a client without images: $(tail -n 2 "$work/four-nodata.log")"; }
"$client" --server "ws://127.0.0.1:$port" --client-index 0 --model "$model" --cache "$cache" --give-up 5 \
  --host-task "$work/named.json" >"$work/four-othertask.log" 2>&1 && bad "a client with another task file joined" ||
  { grep -q "host-task .*named.json is not the server's task" "$work/four-othertask.log" && ok ||
    bad "a client with another task file: $(tail -n 2 "$work/four-othertask.log")"; }
stop_server
# --- 1e. another CLIP (the reference mini-vit: 64x64 colour input, 16x16 patches, other widths and depths)
# on the four classes written as a host's own folder looks (colour JPEGs and PNGs of mixed sizes): the
# aggregator with 3 headless clients gives the simulator's bits; its demo shards are the folder's files.
# The task names its model relative to its own folder, and the clients are given no --model: each loads
# the one --host-task's file names, found as the file finds it (here and in 1f)
/usr/bin/python3 "$here/../../../tools/fmnist_to_folder.py" --out "$work/mixed" --classes "Trouser,Bag,Sandal,Ankle boot" \
  --per-class 60 --mixed 2>"$work/mixed-export.log" || bad "export: $(tail -n 2 "$work/mixed-export.log")"
ln -sf "$other_model" "$work/mini-vit.gguf"
sed -e "s|$work/four/|$work/mixed/|g" -e "s|\"model\": \"[^\"]*\"|\"model\": \"mini-vit.gguf\"|" "$work/four.json" >"$work/mixed.json"
"$sdfed" sim --task "$work/mixed.json" --out "$work/mixed-sim" --cache "$cache" >"$work/mixed-sim.log" 2>&1 ||
  bad "sim of the mixed folder with mini-vit: $(tail -n 2 "$work/mixed-sim.log")"
tiny_model=$model model=
client_extra() { echo --host-task "$work/mixed.json"; }
start_server mixed "$work/mixed.json" "$work/mixed-state" && start_clients mixed 3 && wait_done mixed 180
model=$tiny_model
[ -n "$(sim_history "$work/mixed-sim")" ] && [ "$(history "$work/mixed-state")" = "$(sim_history "$work/mixed-sim")" ] &&
  ok || bad "with mini-vit on colour JPEGs and PNGs the aggregator's history differs from sdfed sim's"
curl -s "http://127.0.0.1:$port/demo/shard?k=1" | /usr/bin/python3 -c '
import base64, glob, hashlib, json, sys
shard = json.load(sys.stdin)
on_disk = {hashlib.sha256(open(f, "rb").read()).hexdigest() for f in glob.glob(sys.argv[1] + "/*/*/*")}
for split in ("train", "test"):
    s = shard[split]
    assert len(s["files"]) == len(s["labels"]) > 0, (split, len(s["files"]), len(s["labels"]))
    assert all(hashlib.sha256(base64.b64decode(f)).hexdigest() in on_disk for f in s["files"]), split
assert shard["shard"] == 1 and "pixels" not in shard["train"], shard.keys()
' "$work/mixed" && ok || bad "the folder task's demo shard is not the folder's files"
curl -s "http://127.0.0.1:$port/task" | grep -q '"demo_shards": 3' && ok || bad "/task does not offer the 3 demo shards"
stop_server
# --- 1f. derived domains on that folder: each image seen inverted, rotated, with low contrast or as it is, one
# client a domain: the aggregator with 4 headless clients gives the simulator's bits; a demo shard carries its
# images decoded and in their domains (each one checked against the transform of a file of the folder)
/usr/bin/python3 - "$work/mixed.json" >"$work/domains.json" <<'PY'
import json, sys
task = json.load(open(sys.argv[1]))
task.update({"clients": 4, "clients_per_round": 4, "partition": {"kind": "domains", "clients_per_domain": 1}})
print(json.dumps(task))
PY
"$sdfed" sim --task "$work/domains.json" --out "$work/domains-sim" --cache "$cache" >"$work/domains-sim.log" 2>&1 ||
  bad "sim of the folder in domains: $(tail -n 2 "$work/domains-sim.log")"
# each image in its domain is an image of its own to the cache (its key names the domain and its noise)
grep -q "^sim: image features: 0 from the cache, [1-9][0-9]* computed" "$work/domains-sim.log" && ok ||
  bad "the folder in domains took features of the images as they are: $(grep '^sim: image' "$work/domains-sim.log")"
model=
client_extra() { echo --host-task "$work/domains.json"; }
start_server domains "$work/domains.json" "$work/domains-state" && start_clients domains 4 && wait_done domains 180
client_extra() { :; }
model=$tiny_model
[ -n "$(sim_history "$work/domains-sim")" ] && [ "$(history "$work/domains-state")" = "$(sim_history "$work/domains-sim")" ] &&
  ok || bad "on the folder in domains the aggregator's history differs from sdfed sim's"
/usr/bin/python3 -c '
import base64, glob, json, sys, urllib.request
import numpy as np
from PIL import Image
files = [np.asarray(Image.open(f)) for f in glob.glob(sys.argv[1] + "/*/*/*")]
def transforms(a):  # the domains a file can be seen in, but low contrast, whose noise is drawn
    return [a, 255 - a, np.rot90(a, -1)]
seen = {(d, x.shape, x.tobytes()) for a in files for d, x in enumerate(transforms(a))}
for k in range(4):  # client k is the one of domain k
    shard = json.load(urllib.request.urlopen("http://127.0.0.1:%s/demo/shard?k=%d" % (sys.argv[2], k)))
    assert shard["shard"] == k and "files" not in shard["train"], shard.keys()
    for split in ("train", "test"):
        s = shard[split]
        assert len(s["images"]) == len(s["labels"]) == len(s["domains"]) > 0 and set(s["domains"]) == {k}, (k, split)
        for image in s["images"]:
            shape = (image["height"], image["width"]) + ((image["channels"],) if image["channels"] > 1 else ())
            x = np.frombuffer(base64.b64decode(image["pixels"]), np.uint8).reshape(shape)
            if k < 3:
                assert (k, x.shape, x.tobytes()) in seen, (split, k, x.shape)
            else:  # 64 + v / 2 + e, e in -16..16, for one of the files
                assert any(a.shape == x.shape and np.all(np.abs(x.astype(int) - 64 - a // 2) <= 16) for a in files), shape
' "$work/mixed" "$port" >"$work/domains-shard.log" 2>&1 && ok || bad "the demo shards of the folder in domains: $(tail -n 3 "$work/domains-shard.log")"
stop_server
# --- 1g. FedOTP on the four classes: prompts matched to each image's patch features by optimal transport;
# the patch features are cached apart from the pooled ones; the aggregator with 3 headless clients gives the
# simulator's bits
/usr/bin/python3 - "$work/four.json" >"$work/fedotp.json" <<'PY'
import json, sys
task = json.load(open(sys.argv[1]))
task.update({"method": "fedotp", "transport": {"kind": "partial", "epsilon": 0.1, "mass": 0.8}})
print(json.dumps(task))
PY
"$sdfed" sim --task "$work/fedotp.json" --out "$work/fedotp-sim" --cache "$cache" >"$work/fedotp-sim.log" 2>&1 ||
  bad "sim of fedotp: $(tail -n 2 "$work/fedotp-sim.log")"
ls "$cache"/*/patches-v3.records >/dev/null 2>&1 && ok || bad "no patch-feature cache for fedotp"
client_extra() { echo --host-task "$work/fedotp.json"; }
start_server fedotp "$work/fedotp.json" "$work/fedotp-state" && start_clients fedotp 3 && wait_done fedotp 120
client_extra() { :; }
[ -n "$(sim_history "$work/fedotp-sim")" ] && [ "$(history "$work/fedotp-state")" = "$(sim_history "$work/fedotp-sim")" ] &&
  [ "$(sim_history "$work/fedotp-sim")" != "$(sim_history "$work/four-sim")" ] &&
  ok || bad "with fedotp the aggregator's history differs from sdfed sim's (or equals sdfed's)"
curl -s "http://127.0.0.1:$port/task" | grep -q '"method": "fedotp"' && ok || bad "/task does not say fedotp"
stop_server
# a volunteer's own images (--data): two of the four classes, folder names in another case; alone in its
# federation (--min-clients 1) it trains on them; an own folder that is none of the classes is refused by name
mkdir -p "$work/own/trouser" "$work/own/BAG" "$work/own-bad/Bag" "$work/own-bad/kangaroo"
for f in $(ls "$work/four/train/Trouser" | head -n 15); do cp "$work/four/train/Trouser/$f" "$work/own/trouser/"; done
for f in $(ls "$work/four/train/Bag" | head -n 15); do
  cp "$work/four/train/Bag/$f" "$work/own/BAG/" && cp "$work/four/train/Bag/$f" "$work/own-bad/Bag/"
done
cp "$work/own/trouser/"* "$work/own-bad/kangaroo/"
start_server own "$work/four.json" "$work/own-state" --min-clients 1
"$client" --server "ws://127.0.0.1:$port" --client-index 0 --model "$model" --cache "$cache" --data "$work/own-bad" \
  >"$work/own-bad.log" 2>&1 && bad "a client whose own folder is none of the classes was let in" ||
  { grep -q "folders without a class: 'kangaroo'" "$work/own-bad.log" && ok ||
    bad "the refusal does not name the folder: $(tail -n 2 "$work/own-bad.log")"; }
# it had joined (the task names the classes) and quits with a close frame: it left on purpose, and round 0, which
# chose it, does not wait --rejoin-grace (30 s) for it
wait_for "the refused client's leave" 10 grep -q '"event": "leave", "client": 1' "$work/own.server.log" &&
  { grep -q '"event": "leave", "client": 1, "connected": 0, "lost": false' "$work/own.server.log" && ok ||
    bad "the refused client was lost, not gone: $(grep '"event": "leave"' "$work/own.server.log")"; }
"$client" --server "ws://127.0.0.1:$port" --client-index 0 --model "$model" --cache "$cache" --data "$work/own" \
  >"$work/own.client.log" 2>&1 &
pids+=("$!")
wait_done own 120 && grep -q "shard of 24 training and 6 test images" "$work/own.client.log" && ok ||
  bad "the client on its own images: $(tail -n 3 "$work/own.client.log")"
stop_server
fi

# --- 1h. a host's task as `sdfed task init` writes it: 20 volunteers, 10 a round, min_clients 2 (no --min-clients:
# the task's is the default): with one volunteer connected no round starts, and /status, status.html and the log
# say why; with a second one the rounds run with the two (2 reports each); /metrics stays Prometheus text
if part 1; then
task host '{"clients": 20, "clients_per_round": 10, "min_clients": 2, "rounds": 2}'
if start_server host "$work/host.json" "$work/host-state"; then
  start_clients host 1
  waiting_for_one() { status | grep -qF '"waiting": {"reason": "too_few_clients", "needed": 2, "connected": 1}'; }
  wait_for "one volunteer, waiting for a second" 120 waiting_for_one && ok
  curl -s "http://127.0.0.1:$port/status.html" | grep -q '<td class="now">waiting for 2 volunteers, 1 connected</td>' &&
    ok || bad "status.html does not say why no round starts: $(curl -s "http://127.0.0.1:$port/status.html" | grep -o '<td class="now">[^<]*')"
  [ "$(grep -c '"event": "waiting", "reason": "too_few_clients", "round": 0, "needed": 2' "$work/host.server.log")" = 1 ] &&
    ok || bad "the wait is not logged once: $(grep '"waiting"' "$work/host.server.log")"
  "$client" --server "ws://127.0.0.1:$port" --client-index 1 --model "$model" --cache "$cache" >"$work/host.client1.log" 2>&1 &
  pids+=("$!")
  wait_done host 120
  [ "$(sqlite3 "$work/host-state/aggregator.sqlite" 'SELECT n_updates, abandoned FROM rounds WHERE round < 2 ORDER BY round' | tr '\n' ' ')" = "2|0 2|0 " ] &&
    ok || bad "the rounds with 2 volunteers: $(sqlite3 "$work/host-state/aggregator.sqlite" 'SELECT round, n_updates, abandoned FROM rounds')"
  status | grep -qF '"waiting": {"reason": "finished", "needed": 2,' && ok || bad "/status at the end: $(status)"
  curl -s "http://127.0.0.1:$port/metrics" | /usr/bin/python3 -c '
import re, sys
text = sys.stdin.read()
typed = set(re.findall(r"^# TYPE (\w+) (?:counter|gauge|summary)$", text, re.M))
for line in text.splitlines():
    if line.startswith("#"):
        assert re.match(r"^# (HELP|TYPE) \w+ .+$", line), line
        continue
    m = re.match(r"^(\w+?)(_sum|_count)?(\{\w+=\"[^\"]*\"(,\w+=\"[^\"]*\")*\})? -?[0-9.e+-]+$", line)
    assert m and (m.group(1) in typed or m.group(1) + (m.group(2) or "") in typed), line
' && ok || bad "/metrics is not Prometheus text"
fi
stop_server
fi

# --- 2. hostile clients first, then the same federation
if part 2; then
start_server adv "$work/eq.json" "$work/adv-state" --join-key sesame --max-update-norm 100 \
  --max-message-bytes 1048576 --rate-limit 50 --rate-window 60 --max-refusals 20 &&
  node --experimental-websocket --no-warnings "$here/adversary.mjs" "$port" sesame >"$work/adversary.log" 2>&1
grep -q "^adversary: [0-9]* passed, 0 failed" "$work/adversary.log" && ok || bad "adversary: $(grep -E 'FAIL|adversary:' "$work/adversary.log")"
kill -0 "$server_pid" 2>/dev/null && ok || bad "the server died under hostile input"
client_extra() { echo --join-key sesame; }
join_key=sesame
start_clients adv 10 && wait_done adv 120
join_key=
[ "$(history "$work/adv-state")" = "$(sim_history "$work/eq-sim")" ] && ok || bad "hostile input changed the federation"
"$client" --server "ws://127.0.0.1:$port" --client-index 0 --model "$model" --cache "$cache" --give-up 5 \
  >"$work/nokey.log" 2>&1 && bad "a client without the join key got in" || ok
grep -q "join key" "$work/nokey.log" && ok || bad "no join-key message: $(cat "$work/nokey.log")"
client_extra() { :; }
stop_server
# updates that are each finite but whose mean overflows: the round is abandoned, never stalled
uncombinable uncombinable "$work/uncombinable-state"
fi

# --- 3. kill -9 while a round is open, restart on the same state
if part 3; then
task crash '{"rounds": 6}'
"$sdfed" sim --task "$work/crash.json" --out "$work/crash-sim" --cache "$cache" >"$work/crash-sim.log" 2>&1
# Client 9 is stopped (SIGSTOP) in the pause before round 3, after its
# round-2 update was acknowledged, so round 3 cannot close before the kill
# however loaded the machine is; it resumes once the server is back.
start_server crash "$work/crash.json" "$work/crash-state" --deadline 120 --round-pause 3 && start_clients crash 10
killed=0 stopped=0
for _ in $(seq 1 3000); do
  s=$(status)
  if [ "$stopped" = 0 ] && echo "$s" | grep -q '"round": 3,' && echo "$s" | grep -q '"round_open": 0'; then
    kill -STOP "${client_pid[9]}" && stopped=1
  fi
  if [ "$stopped" = 1 ] && echo "$s" | grep -q '"round": 3,' && echo "$s" | grep -q '"round_open": 1' &&
     ! echo "$s" | grep -q '"reported": 0,'; then
    kill -9 "$server_pid"; wait "$server_pid" 2>/dev/null; killed=1; break
  fi
  sleep 0.01
done
[ "$killed" = 1 ] && ok || bad "could not catch round 3 half-reported"
acked=$(sqlite3 "$work/crash-state/aggregator.sqlite" 'SELECT count(*) FROM updates WHERE round = 3')
sleep 1
same_port=1 start_server crash "$work/crash.json" "$work/crash-state" --deadline 120
kill -CONT "${client_pid[9]}"
wait_done crash 180
grep -q '"resumed": true' "$work/crash.server.log" && ok || bad "the restart did not resume"
[ "$(history "$work/crash-state")" = "$(sim_history "$work/crash-sim")" ] && ok ||
  bad "after kill -9 the history differs from an uninterrupted run"
echo "kill -9 in round 3 with $acked acknowledged updates stored; the run completed on the same history"
# the federation's counts are the store's, from before the restart too: 6 rounds closed (3 of them by the
# process that was killed), every stored update, the 10 volunteers registered and listed
updates=$(sqlite3 "$work/crash-state/aggregator.sqlite" 'SELECT count(*) FROM updates')
status | grep -q '"clients_registered": 10,.*"updates_accepted": '"$updates"', "rounds_closed": 6, "rounds_abandoned": 0,' &&
  [ "$updates" -ge 60 ] && ok || bad "after the restart /status does not count the whole federation ($updates updates): $(status)"
page=$(curl -s "http://127.0.0.1:$port/status.html")
grep -q "<td>rounds</td><td>6 closed, 0 abandoned</td>.*<td>updates accepted</td><td>$updates</td>" <<<"$page" &&
  grep -q "<td>volunteers</td><td>[0-9]* connected, 10 registered</td>" <<<"$page" &&
  [ "$(grep -o '<tr><td><code>[0-9a-f]\{8\}</code></td>' <<<"$page" | sort -u | wc -l)" = 10 ] &&
  ! grep -q "$(head -c 12 "$work/crash.token0")" <<<"$page" && ok ||
  bad "after the restart status.html does not show the whole federation: $(sed 's/<svg.*<\/svg>//' <<<"$page" | head -c 1500)"
# every client came back to the restarted server (a join each after its second
# "listening"), having waited as the backoff schedule says: each wait it logged
# lies in its try's window, min(30 s, 2^(try - 1) s) (no retry_after here)
rejoined=$(sed -n '/"event": "listening"/h; /"event": "listening"/!H; ${x;p}' "$work/crash.server.log" |
  sed -n 's/.*"event": "join", "client": \([0-9]*\).*/\1/p' | sort -u | wc -l)
[ "$rejoined" = 10 ] && ok || bad "after the restart $rejoined of 10 clients came back"
waits=0 outside=0
for k in $(seq 0 9); do
  while read -r ms try; do
    waits=$((waits + 1))
    window=$((try <= 5 ? 1000 << (try - 1) : 30000))
    [ "$ms" -ge 0 ] && [ "$ms" -lt "$window" ] || outside=$((outside + 1))
  done < <(sed -n 's/.*connecting again in \([0-9]*\) ms (try \([0-9]*\)).*/\1 \2/p' "$work/crash.client$k.log")
done
[ "$waits" -ge 10 ] && [ "$outside" = 0 ] && ok || bad "backoff: $waits waits logged, $outside outside their window"
stop_server

# --- 3b. a volunteer whose connection is lost mid-round keeps its round: part 1's federation (10 clients, all 10
# in each round, each needed); client 3, loaded, is stopped (SIGSTOP) before round 0 starts, so round 0 starts with
# the 10 and the other 9 report while it cannot; then it is killed (-9: its connection ends without a close frame)
# and the round waits for it, its place kept (--rejoin-grace); started again with its token, it is given round 0
# again, with the time left, trains it and its update counts: the run ends on sdfed sim's history, bit for bit; the
# state holds its token's SHA-256, never the token.
# (The keepalive is set long: the stopped client answers no PING, and it is its lost connection that is tested.)
if start_server rejoin "$work/eq.json" "$work/rejoin-state" --rejoin-grace 600 --ping-after 300 --hangup-after 600; then
  start_client rejoin 3
  wait_for "client 3 to load its data" 120 grep -q "shard of" "$work/rejoin.client3.log" && kill -STOP "${client_pid[3]}"
  for k in 0 1 2 4 5 6 7 8 9; do start_client rejoin "$k"; done
  nine_reported() { status | grep -q '"round": 0, .*"round_open": 1, "participants": 10, "reported": 9,'; }
  if wait_for "the other nine to report round 0" 180 nine_reported; then
    kill -9 "${client_pid[3]}"
    wait "${client_pid[3]}" 2>/dev/null
    wait_for "client 3's lost connection" 30 grep -q '"event": "leave", .*"lost": true, "place_kept": true' \
      "$work/rejoin.server.log" && ok
    status | grep -q '"round": 0, .*"round_open": 1, "participants": 10, "reported": 9,' && ok ||
      bad "the lost client's round did not wait for it: $(status)"
    start_client rejoin 3
    wait_done rejoin 180
    grep -q '"event": "join", "client": [0-9]*, "shard": 3, .*"back": true' "$work/rejoin.server.log" && ok ||
      bad "client 3 did not come back into its place: $(grep '"join"' "$work/rejoin.server.log" | tail -n 2)"
    [ "$(grep -c "round 0: [0-9]* steps" "$work/rejoin.client3.log")" = 1 ] && ok ||
      bad "client 3 did not train round 0 again after its restart: $(grep 'round 0' "$work/rejoin.client3.log")"
    [ "$(history "$work/rejoin-state")" = "$(sim_history "$work/eq-sim")" ] && ok ||
      bad "with a client killed mid-round and back with its token, the history differs from sdfed sim's"
    [ "$(sqlite3 "$work/rejoin-state/aggregator.sqlite" 'SELECT n_updates, abandoned FROM rounds WHERE round = 0')" = "10|0" ] &&
      ok || bad "round 0 did not close with the 10: $(sqlite3 "$work/rejoin-state/aggregator.sqlite" 'SELECT * FROM rounds WHERE round = 0')"
    # its token is kept as its SHA-256 alone (docs/state.md): in no file of the state
    token=$(cat "$work/rejoin.token3")
    [ -n "$token" ] && ! grep -qaF "$token" "$work/rejoin-state"/aggregator.sqlite* &&
      [ "$(sqlite3 "$work/rejoin-state/aggregator.sqlite" "SELECT count(*) FROM clients WHERE token_sha256 = \
        '$(printf %s "$token" | sha256sum | cut -c1-64)'")" = 1 ] && ok || bad "the state holds a token, or not its hash"
  fi
fi
stop_server
fi

# --- 4. robust aggregation: 2 of 10 clients attack PromptFL's global prompt
if part 4; then
  task robust '{"method": "promptfl", "rounds": 8, "partition": {"kind": "iid", "shots": 16}}'
  honest_accuracy() { # the honest clients' mean accuracy over the last 3 rounds
    sqlite3 "$1/aggregator.sqlite" "SELECT printf('%.4f', avg(m.accuracy) * 100) FROM metrics m JOIN clients c ON m.client = c.id
                                    WHERE c.shard < 8 AND m.round >= 5"
  }
  robust_run() { # robust_run NAME ATTACK RULE: the honest accuracy into $work/NAME.accuracy
    if [ "$2" = yes ]; then client_extra() { [ "$1" -eq 8 ] && echo --attack flip; [ "$1" -eq 9 ] && echo --attack scale:-20; }
    else client_extra() { :; }; fi
    start_server "$1" "$work/robust.json" "$work/$1-state" --aggregate "$3" --trim 0.2 && start_clients "$1" 10 && wait_done "$1" 120
    stop_server
    client_extra() { :; }
    honest_accuracy "$work/$1-state" >"$work/$1.accuracy"
  }
  robust_run robust-clean no mean
  robust_run robust-mean yes mean
  robust_run robust-median yes median
  robust_run robust-trimmed yes trimmed_mean
  clean=$(cat "$work/robust-clean.accuracy") attacked_mean=$(cat "$work/robust-mean.accuracy")
  attacked_median=$(cat "$work/robust-median.accuracy") attacked_trimmed=$(cat "$work/robust-trimmed.accuracy")
  echo "honest clients' accuracy: clean $clean%, attacked with mean $attacked_mean%, median $attacked_median%, trimmed mean $attacked_trimmed%"
  within() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 2) }'; }
  within "$attacked_median" "$clean" && ok || bad "median is not within 2 points of the clean run"
  within "$attacked_trimmed" "$clean" && ok || bad "trimmed mean is not within 2 points of the clean run"
  within "$attacked_mean" "$clean" && bad "the plain mean resisted the attack (the test would show nothing)" || ok
fi

# --- 5a. asynchronous rounds
if part 5; then
task async '{"rounds": 4}'
start_server async "$work/async.json" "$work/async-state" --mode async --buffer 5 --max-staleness 3 &&
  start_clients async 10 && wait_done async 120
[ "$(sqlite3 "$work/async-state/aggregator.sqlite" 'SELECT count(*) FROM rounds WHERE closed IS NOT NULL')" = 4 ] &&
  ok || bad "async: not 4 versions"
grep -q '"mode": "async"' "$work/async.server.log" && ok || bad "async mode not logged"
# a client is sent a version only when idle: 4 versions x 5 updates, plus at most one
# training per client that the end cuts short
trained=$(cat "$work"/async.client*.log | grep -c ': round [0-9]*:')
[ "$trained" -le 30 ] && ok || bad "async: the clients trained $trained times for 20 updates"
stop_server

# --- 5b. TLS with a self-signed certificate
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 1 \
  -subj /CN=127.0.0.1 >/dev/null 2>&1
task tls '{"rounds": 2, "clients": 2, "clients_per_round": 2}'
scheme=https ws=wss
if start_server tls "$work/tls.json" "$work/tls-state" --cert "$work/cert.pem" --key "$work/key.pem"; then
  status | grep -q '"round"' && ok || bad "no /status over https"
  start_clients tls 2 && wait_done tls 30 && ok
fi
stop_server
scheme=http ws=ws

# --- 5c. a state folder is refused for another task (5a's)
"$aggregator" --task "$work/tls.json" --port 0 --host 127.0.0.1 --state "$work/async-state" >"$work/other.log" 2>&1 &&
  bad "the state of another task was accepted" || ok
grep -q "belongs to another task" "$work/other.log" && ok || bad "no clear message for another task's state"

# --- 5d. the store on a full disk (store_fault.mjs): updates and a new client's hello refused with server_error
# while the server answers, the fault logged once when it begins, with its error (storing a batch of updates: an
# insert, or, once SQLite writes its log, the commit), and once when it is over, with the 4 requests refused;
# they are not the client's doing, so they do not count toward its refusals (--max-refusals 2 would close it)
task fault '{"rounds": 3, "clients": 2, "clients_per_round": 2}'
if start_server fault "$work/fault.json" "$work/fault-state" --min-clients 1 --max-refusals 2; then
  node --experimental-websocket --no-warnings "$here/store_fault.mjs" "$port" "$server_pid" "$work/fault-state" 3 \
    >"$work/store_fault.log" 2>&1
  grep -q "^store-fault: [0-9]* passed, 0 failed" "$work/store_fault.log" && ok ||
    bad "store fault: $(grep -E 'FAIL|store-fault:' "$work/store_fault.log")"
  log=$work/fault.server.log
  [ "$(grep -c '"event": "store_fault",' "$log")" = 1 ] &&
    grep -q '"event": "store_fault", "message": "store: \(add update\|commit\): .*disk' "$log" && ok ||
    bad "the store fault is not logged once with its error: $(grep '"store_fault' "$log")"
  [ "$(grep -c '"event": "store_fault_cleared", "refused": 4,' "$log")" = 1 ] && ok ||
    bad "the fault's end is not logged once with the 4 refused requests: $(grep store_fault_cleared "$log")"
  grep -q '"event": "error"\|"code": "server_error"' "$log" && bad "store errors logged one by one" || ok
  kill -0 "$server_pid" 2>/dev/null && ok || bad "the server died on a full disk"
fi
stop_server

# --- 5e. the public accuracy is the reporters' alone (metrics_poison.mjs): two volunteers report round 0 with
# accuracy 0.5, then ten that were in no round send metrics of 0 for rounds 0, 1 and 2: each is refused with its
# code (not_in_round, wrong_round), and /status keeps round 0 at 0.5 from 2 clients, no other round; then the two
# report rounds 1 and 2, some with no test image (test_samples 0): no accuracy, left out of the rounds' means
task poison '{"rounds": 3, "clients": 2, "clients_per_round": 2}'
if start_server poison "$work/poison.json" "$work/poison-state" --min-clients 2; then
  node --experimental-websocket --no-warnings "$here/metrics_poison.mjs" "$port" >"$work/metrics_poison.log" 2>&1
  grep -q "^metrics-poison: [0-9]* passed, 0 failed" "$work/metrics_poison.log" && ok ||
    bad "metrics poisoning: $(grep -E 'FAIL|metrics-poison:' "$work/metrics_poison.log")"
  [ "$(sqlite3 "$work/poison-state/aggregator.sqlite" 'SELECT count(*), count(DISTINCT client) FROM metrics')" = '6|2' ] && ok ||
    bad "metrics of clients in no round were stored: $(sqlite3 "$work/poison-state/aggregator.sqlite" 'SELECT * FROM metrics')"
fi
stop_server

# --- 5f. the state private to its owner, and read-only: the server runs as an unprivileged user whom file modes bind
# (root runs it as nobody, through setpriv). A state folder it cannot make stops it at once, with one line naming the
# folder. A new state folder is 0700, its database, -wal and -shm 0600. On a federation whose database file is
# read-only (0400) it starts and serves (store_readonly.mjs): a new volunteer's hello is refused with server_error,
# the fault logged once; made writable again (0600), the store opens it again by itself: the hello is welcome, round
# 0's update stored, the fault's end logged once. A read-only folder without the database's -shm cannot even be read:
# the server stops at once, naming it.
unprivileged=()
[ "$(id -u)" = 0 ] && unprivileged=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
ro=$work/readonly
mkdir -p "$ro" "$work/locked" && chmod 0555 "$work/locked"
[ "$(id -u)" = 0 ] && chown nobody "$ro"
task readonly '{"rounds": 2, "clients": 1, "clients_per_round": 1}'
ro_server() { # ro_server: the server as the unprivileged user on $ro/state; 1 when it did not start
  rm -f "$ro/port"
  "${unprivileged[@]}" "$aggregator" --task "$work/readonly.json" --port 0 --port-file "$ro/port" --host 127.0.0.1 \
    --state "$ro/state" --min-clients 1 >>"$work/readonly.server.log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  port=$(port_file "$ro/port" "$server_pid")
}
"${unprivileged[@]}" "$aggregator" --task "$work/readonly.json" --port 0 --host 127.0.0.1 --state "$work/locked/state" \
  >"$work/locked.log" 2>&1
[ $? = 1 ] && [ "$(grep -c '^sdfed-aggregator: ' "$work/locked.log")" = 1 ] &&
  grep -q "^sdfed-aggregator: store: the state in $work/locked/state cannot be opened: .*Permission denied" \
  "$work/locked.log" && ok || bad "a state folder that cannot be made: $(cat "$work/locked.log")"
if ro_server; then
  modes=$(cd "$ro" && stat -c '%a %n' state state/aggregator.sqlite state/aggregator.sqlite-wal state/aggregator.sqlite-shm | tr '\n' ' ')
  [ "$modes" = "700 state 600 state/aggregator.sqlite 600 state/aggregator.sqlite-wal 600 state/aggregator.sqlite-shm " ] &&
    ok || bad "the state is not private to its owner: $modes"
  stop_server
  chmod 0400 "$ro/state/aggregator.sqlite"
  if ro_server; then
    node --experimental-websocket --no-warnings "$here/store_readonly.mjs" "$port" "$ro/state/aggregator.sqlite" \
      >"$work/store_readonly.log" 2>&1
    grep -q "^store-readonly: [0-9]* passed, 0 failed" "$work/store_readonly.log" && ok ||
      bad "a read-only state: $(grep -E 'FAIL|store-readonly:' "$work/store_readonly.log")"
    log=$work/readonly.server.log
    [ "$(grep -c '"event": "store_fault",' "$log")" = 1 ] && grep -q '"event": "store_fault", .*readonly' "$log" &&
      [ "$(grep -c '"event": "store_fault_cleared",' "$log")" = 1 ] && ok ||
      bad "the read-only fault is not logged once when it begins and once when it ends: $(grep '"store_fault' "$log")"
  else
    bad "the server did not start on a read-only database: $(tail -n 2 "$work/readonly.server.log")"
  fi
  stop_server
  chmod 0500 "$ro/state"
  "${unprivileged[@]}" "$aggregator" --task "$work/readonly.json" --port 0 --host 127.0.0.1 --state "$ro/state" \
    >"$work/unreadable.log" 2>&1
  [ $? = 1 ] && grep -q "the state in $ro/state cannot be opened: .*readonly" "$work/unreadable.log" && ok ||
    bad "a read-only folder without the database's -shm: $(cat "$work/unreadable.log")"
  chmod 0700 "$ro/state"
else
  bad "the server did not start as an unprivileged user: $(tail -n 2 "$work/readonly.server.log")"
fi

# --- 5g. malformed requests: 400 (405 for another method) with a text/plain line saying what is wrong, every
# request of a connection, and the server goes on serving; the "listening" line names the port the kernel chose;
# /wasm/ serves the browser build's modules, not the build system's files beside them (a build folder as
# --help names it: Makefile, cmake_install.cmake with the host's paths, a library, a sub-folder's scripts)
mkdir -p "$work/wasm-build/CMakeFiles"
for f in sdfed-wasm.js sdfed-wasm.wasm Makefile cmake_install.cmake libsdfed_core_threads.a CMakeFiles/x.js; do
  echo "$f" >"$work/wasm-build/$f"
done
start_server http "$work/tls.json" "$work/http-state" --wasm "$work/wasm-build"
codes=$(for f in sdfed-wasm.js sdfed-wasm.wasm Makefile cmake_install.cmake libsdfed_core_threads.a CMakeFiles/x.js; do
  curl -s -o /dev/null -w '%{http_code} ' "http://127.0.0.1:$port/wasm/$f"
done)
[ "$codes" = "200 200 404 404 404 404 " ] && ok || bad "/wasm/'s modules, then the build's other files: $codes"
grep -q "\"event\": \"listening\", \"address\": \"127.0.0.1\", \"port\": $port," "$work/http.server.log" && ok ||
  bad "the listening line does not name port $port: $(grep listening "$work/http.server.log")"
refused() { # refused ANSWER_FILE STATUS PHRASE WHAT
  head -n 1 "$1" | grep -q "^HTTP/1.1 $2 " && grep -qi "^content-type: text/plain" "$1" &&
    sed '1,/^\r$/d' "$1" | grep -qF "$3" && ok || bad "$4: expected $2 saying \"$3\", got: $(head -c 400 "$1" | tr '\r\n' ' ')"
}
while IFS='|' read -r target phrase; do
  curl -s -i --path-as-is --max-time 10 "http://127.0.0.1:$port$target" >"$work/http.answer"
  refused "$work/http.answer" 400 "$phrase" "GET ${target:0:60}"
done <<EOF
/status?x=%00|the query has a percent-encoded control character (%00)
/%00|the path has a percent-encoded control character (%00)
/status?x=%zz|the query has a '%' that is not followed by two hex digits
/%zz/index.html|the path has a '%' that is not followed by two hex digits
/status?x=%0d%0aSet-Cookie:x|the query has a percent-encoded control character (%0D)
/../../etc/passwd|the path has a '..' segment
/wasm/%2e%2e/%2E%2E/etc/passwd|the path has a '..' segment
/$(printf 'a%.0s' $(seq 1 3000))|the request line is longer than 2048 bytes
EOF
answer() { (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf "$1" >&3 && timeout 10 cat <&3) >"$work/http.answer"; }
while IFS='|' read -r code bytes phrase; do
  answer "$bytes"
  refused "$work/http.answer" "$code" "$phrase" "the bytes $bytes"
done <<'EOF'
400|GET /st\0atus HTTP/1.1\r\nHost: x\r\n\r\n|a byte that is not printable ASCII (0x00)
400|GET /status\r\n\r\n|the request line has no HTTP version
400|GET /status HTTP/2.0\r\n\r\n|the HTTP version is not HTTP/1.0 or HTTP/1.1
400|garbage\r\n\r\n|the request line does not start with a method
400|GET status HTTP/1.1\r\n\r\n|the request target is not a path starting with '/'
405|BREW /status HTTP/1.1\r\nHost: x\r\n\r\n|only GET is served
EOF
# a malformed request after a good one from the same client (curl would reuse the connection)
codes=$(curl -s -o /dev/null -o /dev/null -w '%{http_code} ' "http://127.0.0.1:$port/status" "http://127.0.0.1:$port/status?x=%00")
[ "$codes" = "200 400 " ] && ok || bad "a good request then a malformed one: $codes"
status | grep -q '"round": 0' && kill -0 "$server_pid" 2>/dev/null && ok || bad "the server stopped serving after malformed requests"
# a demo shard is sent whole or not at all: with the server's address space
# capped just above what it uses (prlimit), building the shard runs out of
# memory and the answer is 503 with nothing partial; uncapped, 200 again.
# (Not in sanitizer builds, whose allocator reserves memory its own way.)
shard() { curl -s -o "$work/shard.answer" -w '%{http_code}' "http://127.0.0.1:$port/demo/shard?k=0"; }
whole_shard() {
  /usr/bin/python3 -c 'import base64, json, sys
d = json.load(open(sys.argv[1]))
for part in ("train", "test"):
    assert len(base64.b64decode(d[part]["pixels"])) == len(d[part]["labels"]) * d["width"] * d["height"]' "$work/shard.answer"
}
[ "$(shard)" = 200 ] && whole_shard && ok || bad "a demo shard is not whole: $(head -c 200 "$work/shard.answer")"
if ! nm "$aggregator" 2>/dev/null | grep -q __asan_init; then
  vm_kb=$(awk '/^VmSize/ {print $2}' "/proc/$server_pid/status")
  prlimit --pid "$server_pid" --as=$(((vm_kb + 512) * 1024)):  # the soft limit only, which can go back up
  code=$(shard)
  prlimit --pid "$server_pid" --as=unlimited:
  [ "$code" = 503 ] && grep -q "out of memory" "$work/shard.answer" && ok ||
    bad "a shard without memory: $code $(head -c 200 "$work/shard.answer")"
  [ "$(shard)" = 200 ] && whole_shard && ok || bad "the demo shard after the memory came back: $(head -c 200 "$work/shard.answer")"
  # a free shard leased (no ?k=) and then not sent is not kept leased: after
  # as many failures as one address may hold leases (4), the next asks get
  # shards, not 429 "your address holds 4 demo shards already"
  prlimit --pid "$server_pid" --as=$(((vm_kb + 512) * 1024)):
  codes=$(for i in 1 2 3 4; do curl -s -o /dev/null -w '%{http_code} ' "http://127.0.0.1:$port/demo/shard"; done)
  prlimit --pid "$server_pid" --as=unlimited:
  codes+=$(curl -s -o "$work/shard.answer" -w '%{http_code}' "http://127.0.0.1:$port/demo/shard")
  [ "$codes" = "503 503 503 503 200" ] && whole_shard && ok ||
    bad "free shards not sent stay leased: $codes $(head -c 200 "$work/shard.answer")"
fi
stop_server

# --- 5h. command lines: --help is usage on stdout; a wrong option or argument is one line that starts with the
# program's name, and status 2
for prog in "$aggregator" "$client"; do
  "$prog" --help >"$work/help.out" 2>"$work/help.err" && grep -q "^usage: $(basename "$prog") " "$work/help.out" &&
    [ ! -s "$work/help.err" ] && ok || bad "$(basename "$prog") --help"
  "$prog" --no-such-option >"$work/help.out" 2>"$work/help.err"
  [ $? -eq 2 ] && [ "$(wc -l <"$work/help.err")" -eq 1 ] && grep -q "^$(basename "$prog"): unknown option '--no-such-option' (see --help)" \
    "$work/help.err" && ok || bad "$(basename "$prog") with an unknown option: $(cat "$work/help.err")"
  "$prog" stray >"$work/help.out" 2>"$work/help.err"
  [ $? -eq 2 ] && grep -q "unexpected argument 'stray' (see --help)" "$work/help.err" && ok ||
    bad "$(basename "$prog") with a stray argument: $(cat "$work/help.err")"
done
# the build's other programs (those this tree builds) answer --help with their usage on stdout
for prog in "$build"/sdfed-load "$build"/sdfed-errors "$build"/bench_features "$build"/bench_step \
  "$build"/bench_aggregate "$build"/bench_peak; do
  [ -x "$prog" ] || continue
  "$prog" --help >"$work/help.out" 2>"$work/help.err" && grep -q "^usage: $(basename "$prog") " "$work/help.out" &&
    [ ! -s "$work/help.err" ] && ok || bad "$(basename "$prog") --help"
done
# bench_peak's lines (their figures not judged): the peaks, and the Q8_0 linear alone on the CPU's best integer
# tiles (peak.sh's "l1 q8_0-tiles"), on 1 and 2 threads
if [ -x "$build"/bench_peak ]; then
  "$build"/bench_peak --repeats 1 --ms 5 >"$work/peak.out" 2>"$work/peak.err" &&
    grep -qE '^tiles q8_0 native [a-z0-9]+ 1: gops=[0-9]+[.][0-9]$' "$work/peak.out" &&
    grep -qE '^tiles q8_0 native [a-z0-9]+ 2: gops=[0-9]+[.][0-9]$' "$work/peak.out" &&
    grep -qE '^peak native avx2( 1: gflops=[0-9]|: not on this CPU)' "$work/peak.out" &&
    [ ! -s "$work/peak.err" ] && ok ||
    bad "bench_peak's lines: $(cat "$work/peak.out" "$work/peak.err")"
fi
fi

# --- 6a. volunteers vanish and the federation goes on (min_clients 2, deadline 10 s): A (headless)
# and X, Y (silent.mjs: they never report) join; the round they are in is abandoned at its deadline
# with A's report alone; in the next one Y closes its connection as it starts and X is killed (-9),
# so the round is abandoned as soon as its quorum is out of reach (--rejoin-grace 0: X's lost
# connection keeps no place), not at its deadline; B, who joins meanwhile, is in the next round
# with A, and it closes. X and Y join once A has its data (as B is in before X
# goes), so that the deadline waits for a report, not for a shard's features encoded on a loaded
# machine (under ASan they took longer than a deadline of 3 s)
if part 6; then
task live '{"rounds": 3, "clients": 3, "clients_per_round": 3}'
start_server live "$work/live.json" "$work/live-state" --min-clients 2 --deadline 10 --rejoin-grace 0
start_clients live 1
wait_for "A to have its data" 120 grep -q "shard of" "$work/live.client0.log"
node --experimental-websocket --no-warnings "$here/silent.mjs" "$port" >"$work/live.x.log" 2>&1 &
x_pid=$!
pids+=("$x_pid")
node --experimental-websocket --no-warnings "$here/silent.mjs" "$port" 1 >"$work/live.y.log" 2>&1 &
pids+=("$!")
if wait_for "round 1 to start" 30 grep -q "round_start 1" "$work/live.x.log"; then
  "$client" --server "ws://127.0.0.1:$port" --client-index 1 --model "$model" --cache "$cache" \
    >"$work/live.b.log" 2>&1 &
  pids+=("$!")
  wait_for "B to be welcomed" 30 grep -q "shard of" "$work/live.b.log" && kill -9 "$x_pid"
fi
wait_done live 60
[ "$(sqlite3 "$work/live-state/aggregator.sqlite" 'SELECT abandoned FROM rounds WHERE round < 3 ORDER BY round' | tr '\n' ' ')" = "1 1 0 " ] &&
  ok || bad "rounds 0 and 1 should be abandoned and round 2 closed: $(sqlite3 "$work/live-state/aggregator.sqlite" 'SELECT round, abandoned, n_updates FROM rounds')"
[ "$(sqlite3 "$work/live-state/aggregator.sqlite" 'SELECT n_updates FROM rounds WHERE round = 2')" = 2 ] && ok ||
  bad "round 2 should combine A's and B's updates"
grep -q '"event": "round_abandoned", "round": 0' "$work/live.server.log" &&
  grep -q '"event": "deadline", "round": 0' "$work/live.server.log" && ok || bad "round 0 was not abandoned at its deadline"
grep -q '"event": "deadline", "round": 1' "$work/live.server.log" &&
  bad "round 1 waited for its deadline with its quorum out of reach" || ok
grep -q "closed" "$work/live.y.log" && ok || bad "Y did not close its connection"
status | grep -q '"rounds_abandoned": 2' && ok || bad "/status does not count 2 abandoned rounds: $(status)"
stop_server

# --- 6b. churn: clients join and leave at random (seeded) for 8 s; rounds keep closing and every
# acknowledged update is in the store. The server binds 127.0.0.1 only: 127.0.0.2 is refused.
task churn '{"rounds": 100000, "clients_per_round": 3}'
start_server churn "$work/churn.json" "$work/churn-state" --min-clients 2 --deadline 2
curl -s --max-time 5 -o /dev/null "http://127.0.0.2:$port/status"
[ $? = 7 ] && ok || bad "bound to 127.0.0.1, the server answered on 127.0.0.2"
grep -q '"event": "listening", "address": "127.0.0.1"' "$work/churn.server.log" && ok ||
  bad "the listening line does not name the address bound"
node --experimental-websocket --no-warnings "$here/churn.mjs" "$port" 8 7 "$work/churn.acked" >"$work/churn.log" 2>&1 ||
  bad "churn: $(grep -v '^churn: [0-9]* passed' "$work/churn.log" | tail -n 3)"
grep '^churn: [0-9]* joins' "$work/churn.log"
stop_server
missing=$(sqlite3 "$work/churn-state/aggregator.sqlite" "SELECT round || ' ' || client FROM updates" | sort |
  comm -23 <(sort "$work/churn.acked") -)
[ -s "$work/churn.acked" ] && [ -z "$missing" ] && ok || bad "acknowledged updates missing from the store: $missing"

# --- 6c. a client busy loading its data still answers the server (it loads on a thread of its own): its
# feature files locked, a proxy's PING right after the welcome gets its PONG before the load can end
task busy '{"rounds": 1, "clients": 1, "clients_per_round": 1}'
start_server busy "$work/busy.json" "$work/busy-state"
node --no-warnings "$here/busy_client.mjs" "$port" "$client" "$model" "$cache" "$work" >"$work/busy.log" 2>&1 && ok ||
  bad "busy client: $(grep -v '^busy_client: [0-9]* passed' "$work/busy.log" | tail -n 3)"
stop_server

# --- 6d. keepalive: a volunteer silent at the WebSocket level is pinged and, answering no PING, hung
# up (and counted gone); one that answers its PINGs stays
task keepalive '{"rounds": 100, "clients": 2, "clients_per_round": 2}'
start_server keepalive "$work/keepalive.json" "$work/keepalive-state" --ping-after 1 --hangup-after 3
node --no-warnings "$here/keepalive.mjs" "$port" >"$work/keepalive.log" 2>&1 && ok ||
  bad "keepalive: $(grep -v '^keepalive: [0-9]* passed' "$work/keepalive.log" | tail -n 3)"
stop_server
"$aggregator" --task "$work/keepalive.json" --ping-after 5 --hangup-after 5 >"$work/keepalive.cli" 2>&1
[ $? = 2 ] && grep -q "hangup-after (5 s) must be longer than --ping-after (5 s)" "$work/keepalive.cli" && ok ||
  bad "--hangup-after not longer than --ping-after: $(cat "$work/keepalive.cli")"

# --- 6e. a browser's close (1001, going away: a page reloaded or closed) keeps its place in its round, as a lost
# connection does; a close on purpose (1000, or no status) leaves it
task going '{"rounds": 100, "clients": 1, "clients_per_round": 1}'
start_server going "$work/going.json" "$work/going-state" --min-clients 1 --rejoin-grace 600
node --no-warnings "$here/going_away.mjs" "$port" >"$work/going.log" 2>&1 && ok ||
  bad "going away: $(grep -v '^going_away: [0-9]* passed' "$work/going.log" | tail -n 3)"
stop_server
fi

part 7 && edge

# sanitizer builds: no process reported a memory error or a leak (in every part's logs when ctest ran them apart)
if part reports; then
cleanup
sleep 1
logs=("$work"/*.log)
[ "$parts" = reports ] && logs=("$root"/*/*.log)
reports=$(grep -l "ERROR: [A-Za-z]*Sanitizer\|runtime error:" "${logs[@]}" 2>/dev/null)
[ -z "$reports" ] && ok || bad "sanitizer reports in: $reports"
fi

summary
[ "$failed" -eq 0 ]
