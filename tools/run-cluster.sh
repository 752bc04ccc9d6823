#!/usr/bin/env bash
# `make run-cluster`: the cluster mode on this machine (docs/cluster.md): a
# PostgreSQL server of its own (Debian's postgresql-15 through initdb and
# pg_ctl, no system service; its data in state/cluster-<task>/postgres, its
# Unix socket in a folder under /tmp, no TCP), NODES aggregator nodes on
# ports the kernel chooses, HAProxy on the public port in front of them
# (tools/haproxy.sh), and CLIENTS headless clients through HAProxy. Ctrl-C
# stops it all, the server last; the next start resumes the federation
# (delete the folder to start over).
#   NODES=3 PORT=8080 TASK=tasks/fmnist-pathological.json CLIENTS=4 ROUND_PAUSE=5 bash tools/run-cluster.sh
. "$(dirname "$0")/help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/port_file.sh
. tools/headless_clients.sh
. tools/haproxy.sh
nodes=${NODES:-3}
port=${PORT:-8080}
task=${TASK:-tasks/fmnist-pathological.json}
clients=${CLIENTS:-4}
pause=${ROUND_PAUSE:-5}
bin=${POSTGRES_BIN:-/usr/lib/postgresql/15/bin}
state=$PWD/state/cluster-$(basename "$task" .json)
data=$state/postgres
mkdir -p "$state"
[ -x "$bin/pg_ctl" ] || { echo "run-cluster: no PostgreSQL in $bin: make deps (Debian's postgresql-15)" >&2; exit 1; }
as_owner() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

pids=()
socket_dir=
stop() {
  trap - INT TERM EXIT
  echo
  echo "run-cluster: stopping the clients, HAProxy, the nodes and PostgreSQL (state kept in $state)"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -f "$data/postmaster.pid" ] && as_owner "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1
  [ -n "$socket_dir" ] && rm -rf "$socket_dir"
  exit 0
}
trap stop INT TERM EXIT

# the server: made once (a password of its own, kept with the state), started on a fresh socket folder
if [ ! -s "$state/postgres.password" ]; then
  (umask 077 && head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$state/postgres.password")
fi
password=$(cat "$state/postgres.password")
if [ ! -f "$data/PG_VERSION" ]; then
  rm -rf "$data" && mkdir -p "$data"
  pwfile=$(mktemp /tmp/sdfed-cluster-pw.XXXXXX)
  cp "$state/postgres.password" "$pwfile"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$data" "$pwfile"
  as_owner "$bin/initdb" -D "$data" -U sdfed --auth=scram-sha-256 --pwfile="$pwfile" --no-locale -E UTF8 \
    >"$state/initdb.log" 2>&1 || { rm -f "$pwfile"; echo "run-cluster: initdb failed: $(tail -n 3 "$state/initdb.log")" >&2; exit 1; }
  rm -f "$pwfile"
  echo "listen_addresses = ''" >>"$data/postgresql.conf"
fi
socket_dir=$(mktemp -d /tmp/sdfed-cluster.XXXXXX)
[ "$(id -u)" -eq 0 ] && chown postgres: "$socket_dir"
as_owner "$bin/pg_ctl" -D "$data" -l "$data/server.log" -o "-k $socket_dir" -w start >/dev/null ||
  { echo "run-cluster: PostgreSQL did not start: $(tail -n 3 "$data/server.log")" >&2; exit 1; }
db="postgresql://sdfed:$password@/sdfed?host=$socket_dir"
"$bin/psql" -X -q -At "postgresql://sdfed:$password@/postgres?host=$socket_dir" \
  -c "SELECT 1 FROM pg_database WHERE datname = 'sdfed'" | grep -q 1 ||
  "$bin/psql" -X -q "postgresql://sdfed:$password@/postgres?host=$socket_dir" -c "CREATE DATABASE sdfed"

# the nodes, on ports the kernel chooses; their JSON log lines in the state folder
backends=()
for k in $(seq 1 "$nodes"); do
  rm -f "$state/node$k.port"
  build/sdfed-aggregator --task "$task" --db "$db" --port 0 --port-file "$state/node$k.port" --host 127.0.0.1 \
    --min-clients "$clients" --round-pause "$pause" --proxy-protocol-from "$haproxy_source" >>"$state/node$k.log" 2>&1 &
  node_pid[k]=$!
  pids+=("$!")
done
for k in $(seq 1 "$nodes"); do
  node_port=$(port_file "$state/node$k.port" "${node_pid[k]}") || { tail -n 5 "$state/node$k.log" >&2; exit 1; }
  backends+=("127.0.0.1:$node_port")
done
haproxy_start "$state" 0.0.0.0 "$port" "${backends[@]}" || exit 1
pids+=("$haproxy_pid")

start_headless_clients "$haproxy_port" "$clients" "$state"

cat <<MSG

  sdfed cluster is running: $task, $nodes nodes (${backends[*]}) behind HAProxy,
  PostgreSQL in $data, $clients headless clients (logs in $state/).
  Volunteers join at   http://localhost:$haproxy_port/
  Status and chart     http://localhost:$haproxy_port/status.html
  Press Ctrl-C to stop; \`make run-cluster\` again resumes this federation.

MSG
wait "$haproxy_pid"
