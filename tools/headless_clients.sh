# The headless volunteers of `make run` and `make run-cluster`, sourced:
#   start_headless_clients PORT COUNT STATE
# starts COUNT sdfed-client processes (shards 0 to COUNT-1) against
# ws://127.0.0.1:PORT, each with its token and log in the folder STATE, and
# adds their process ids to the caller's pids array.
start_headless_clients() {
  local port=$1 count=$2 state=$3 k
  for k in $(seq 0 $((count - 1))); do
    build/sdfed-client --server "ws://127.0.0.1:$port" --client-index "$k" --token-file "$state/client$k.token" \
      >>"$state/client$k.log" 2>&1 &
    pids+=("$!")
  done
}
