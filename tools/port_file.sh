# For the scripts that start build/sdfed-aggregator with --port-file FILE
# (and --port 0, a port the kernel chooses); source it.
#   port=$(port_file FILE PID): the port, once the server listens and has
#   written FILE; fails when process PID exits first, or after 30 s.
port_file() {
  for _ in $(seq 1 600); do
    [ -s "$1" ] && cat "$1" && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
