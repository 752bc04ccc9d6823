# HAProxy (Debian's haproxy) in front of a cluster's nodes, for the tests and
# `make run-cluster`; source it. HAProxy cannot bind port 0 and say which
# port it got, and choosing a "free" port first races with every other
# process. So the listening socket is made before HAProxy starts: a tiny
# step binds ADDRESS:PORT (PORT 0: the kernel chooses), listens, writes the
# port it holds to a file, and execs HAProxy with that socket as its file
# descriptor 3 (`bind fd@3` in the configuration, HAProxy's way to take a
# socket from its parent). The socket is never closed between the bind and
# HAProxy, so no other process can take the port meanwhile.
#   haproxy_start DIR ADDRESS PORT HOST:PORT...   # writes DIR/haproxy.cfg; sets haproxy_pid and haproxy_port
#   haproxy_stop
# Clients get the nodes round-robin; a node that refuses connections is
# retried on another (redispatch), and health checks (GET /status every
# second, 2 s to answer, 3 failures in a row) take a dead node out. WebSocket connections last as long as their
# client keeps them (tunnel timeout one hour; clients ping every 30 s).
# HAProxy connects to the nodes from $haproxy_source (127.0.0.2, so that a
# test's own requests to a node from 127.0.0.1 stay direct) and starts each
# connection with a PROXY protocol v2 header naming its client
# (send-proxy-v2; its health checks send one too): start the nodes with
# --proxy-protocol-from "$haproxy_source", and their limits per address
# count the clients, not HAProxy.
# With a join key, set haproxy_check=/status?key=KEY before haproxy_start: the
# health checks need it.
haproxy_pid= haproxy_port= haproxy_source=127.0.0.2 haproxy_check=/status

haproxy_config() { # haproxy_config HOST:PORT...: the configuration on stdout
  cat <<CFG
global
  # maxconn: as many as the file descriptor limit allows (HAProxy's default)
defaults
  mode http
  timeout connect 2s
  timeout client 120s
  timeout server 120s
  timeout tunnel 1h
  timeout check 2s
  retries 3
  option redispatch
frontend sdfed
  bind fd@3
  default_backend nodes
backend nodes
  balance roundrobin
  option httpchk GET $haproxy_check
  default-server inter 1s fall 3 rise 1 send-proxy-v2 source $haproxy_source
CFG
  local k=0
  for node in "$@"; do
    k=$((k + 1))
    echo "  server node$k $node check"
  done
}

haproxy_start() {
  local dir=$1 address=$2 port=$3
  shift 3
  if ! command -v haproxy >/dev/null; then
    echo "FAIL: no haproxy: install Debian's haproxy (bash tools/install-deps.sh)" >&2
    return 1
  fi
  haproxy_config "$@" >"$dir/haproxy.cfg"
  rm -f "$dir/haproxy.port"
  /usr/bin/python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1024)
os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
with open(sys.argv[3] + ".tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
os.rename(sys.argv[3] + ".tmp", sys.argv[3])
os.execvp("haproxy", ["haproxy", "-db", "-f", sys.argv[4]])
' "$address" "$port" "$dir/haproxy.port" "$dir/haproxy.cfg" >>"$dir/haproxy.log" 2>&1 &
  haproxy_pid=$!
  # ready once it answers through the port it holds (503 before a node is up)
  for _ in $(seq 1 200); do
    kill -0 "$haproxy_pid" 2>/dev/null || break
    [ -s "$dir/haproxy.port" ] && haproxy_port=$(cat "$dir/haproxy.port") &&
      [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$address:$haproxy_port/status")" != 000 ] && return 0
    sleep 0.05
  done
  echo "FAIL: haproxy did not start: $(tail -n 3 "$dir/haproxy.log")" >&2
  return 1
}

haproxy_stop() {
  [ -n "$haproxy_pid" ] && kill "$haproxy_pid" 2>/dev/null && wait "$haproxy_pid" 2>/dev/null
  haproxy_pid=
}
