#!/usr/bin/env bash
# `make run`: the aggregator with the default Fashion-MNIST task and 4
# headless clients (shards 0..3), serving the volunteer page. Browsers that
# open the printed URL join the same federation. Ctrl-C stops everything;
# the state in state/<task> survives, and the next `make run` resumes it
# (delete that folder to start over).
#   PORT=8080 TASK=tasks/fmnist-pathological.json CLIENTS=4 ROUND_PAUSE=5 bash tools/run.sh
# (PORT=0: a free port the kernel chooses, printed below.)
. "$(dirname "$0")/help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/port_file.sh
. tools/headless_clients.sh
port=${PORT:-8080}
task=${TASK:-tasks/fmnist-pathological.json}
clients=${CLIENTS:-4}
pause=${ROUND_PAUSE:-5}
state=state/$(basename "$task" .json)
mkdir -p "$state"

pids=()
stop() {
  trap - INT TERM EXIT
  echo
  echo "run: stopping the aggregator and the clients (state kept in $state)"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  exit 0
}
trap stop INT TERM EXIT

# the aggregator's JSON log lines go to the terminal and to the state folder
rm -f "$state/aggregator.port"
build/sdfed-aggregator --task "$task" --state "$state" --port "$port" --port-file "$state/aggregator.port" \
  --min-clients "$clients" --round-pause "$pause" 2> >(tee -a "$state/aggregator.log" >&2) &
aggregator=$!
pids+=("$aggregator")
port=$(port_file "$state/aggregator.port" "$aggregator") || { tail -n 5 "$state/aggregator.log" >&2; exit 1; }

start_headless_clients "$port" "$clients" "$state"

cat <<EOF

  sdfed is running: $task, $clients headless clients (logs in $state/).
  Volunteers join at   http://localhost:$port/
  Status and chart     http://localhost:$port/status.html
  Press Ctrl-C to stop; \`make run\` again resumes this federation.

EOF
wait "$aggregator"
