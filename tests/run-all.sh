#!/usr/bin/env bash
# Runs every test of every build (run `make builds` first; `make test` does
# both): ctest in each build tree, the browser tests, then
# bounded fuzzing runs of what reads untrusted bytes (tests/fuzz/: the GGUF
# reader, the CLIP converter, the protocol codec, the image decoder, a secure round's server and
# client, the PROXY protocol header, the gate's check of a request). Prints one
# summary line per suite with the time it took, and a final total.
# Each tree's tests CTEST_JOBS at once (3): they wait more than they compute
# (servers, clients and Chromium wait on each other). On the 2-core Zen 4 of
# 3 December, at 2 at once the native tree's tests kept the cores 75% busy
# and the ASan tree's 76%; everything here took 493 s at 2, 422 s at 3 and
# 413 s at 4 (the native tree 153, 118 and 110 s). The browser tests keep
# their own two lanes; suites run one after another (beside each other they
# took longer: the page's wasm workers and the simulator's pool poll while
# they wait, and starved each other: 425 to 433 s in all). Nor do the builds
# overlap the suites: with the native and emscripten trees built first and
# the other four at nice 19 beside the native, emscripten and browser
# suites, a fresh clone took 713 s in all against 698 (those suites 59 s
# slower: the pool's polls yield their cores, the builds take them).
#   FUZZ_SECONDS (30): each fuzzer's run; CTEST_JOBS (3)
set -u
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-30} CTEST_JOBS=${CTEST_JOBS:-3}
total_passed=0 total_failed=0
summary=()
started=$SECONDS
part_start=$SECONDS
took() { echo "$((SECONDS - part_start)) s"; }

# ctest prints "N% tests passed, M tests failed out of T"
run_ctest() { # run_ctest NAME DIR [CTEST OPTIONS...]
  local name=$1 dir=$2 log
  shift 2
  log=$(mktemp)
  echo "=== $name: ctest in $dir $*"
  part_start=$SECONDS
  ctest --test-dir "$dir" --output-on-failure -j "$CTEST_JOBS" "$@" 2>&1 | tee "$log"
  local line total failed
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1)
  if [ -z "$line" ]; then
    total=0 failed=1
  else
    total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
    failed=$(sed -E 's/.* ([0-9]+) tests? failed.*/\1/' <<<"$line")
  fi
  rm -f "$log"
  summary+=("$name: $((total - failed)) passed, $failed failed ($(took))")
  total_passed=$((total_passed + total - failed))
  total_failed=$((total_failed + failed))
}

# (the long multi-process suites run where they find the most: all in the
# native gcc tree; in the ASan tree, which is clang too, the federation
# under SQLite (the aggregator_* parts of run.sh, but 1c and 4, which that
# tree does not register), whose parity runs are the simulator's rounds
# too, and the PostgreSQL back end through test_store; not aggregator_postgres,
# the same federation again over PostgreSQL, whose feature cache of 10,000
# test images takes minutes to encode under ASan, nor the cluster's 34
# processes (aggregator_cluster, and aggregator_cluster_secure's secure
# rounds on three nodes), nor readme (the README's commands, make run's
# included: the same programs the gcc tree runs), nor aggregator_devices (more parity runs; the rule it follows
# is the core's, test_local_prompt), nor aggregator_secure (the secure
# rounds' headless clients; test_secagg_round and test_secagg_sim run the
# protocol under ASan), nor sim, which encodes 40,000 images four times
# (two caches, f32 activations, a resumed file: 12 of the ASan tree's
# minutes; the simulator's secure rounds run under ASan in test_secagg_sim);
# the clang tree leaves them all to those two, as it leaves the folder
# dataset's 80,000 images to the gcc tree)
run_ctest native build
run_ctest clang build/targets/clang \
  -E '^(aggregator_(setup|[1-7][a-z]*_[a-z]+|reports)|aggregator_postgres|aggregator_cluster|aggregator_cluster_secure|aggregator_devices|aggregator_secure|aggregator_proxy|readme|sim|folder_dataset)$'
run_ctest asan build/targets/asan \
  -E '^(aggregator_postgres|aggregator_cluster|aggregator_cluster_secure|aggregator_devices|aggregator_secure|readme|sim)$'
run_ctest emscripten build/targets/emscripten
run_ctest wasi build/targets/wasi


# the browser: the wasm client against the native one, the page in Chromium
echo "=== browser"
part_start=$SECONDS
browser_log=$(mktemp)
bash tests/browser/run.sh build build/targets/emscripten 2>&1 | tee "$browser_log"
line=$(grep -E '^browser: [0-9]+ passed, [0-9]+ failed' "$browser_log" | tail -n 1)
rm -f "$browser_log"
if [ -n "$line" ]; then
  summary+=("$line ($(took))")
  total_passed=$((total_passed + $(sed -E 's/browser: ([0-9]+) passed.*/\1/' <<<"$line")))
  total_failed=$((total_failed + $(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")))
else
  summary+=("browser: 0 passed, 1 failed")
  total_failed=$((total_failed + 1))
fi

# bounded fuzzing: every target at once (each fuzzer runs on one thread, the
# machine's cores shared), each for FUZZ_SECONDS from its committed corpus
# (copied, so new inputs do not land in the repository); the targets, each
# with its corpus folder under tests/fuzz/corpus and its inputs' largest size
fuzz_targets=(fuzz_gguf:gguf:1048576 fuzz_convert:convert:1048576 fuzz_protocol:protocol:65536 fuzz_image:image:20000 fuzz_secagg:secagg:4096
  fuzz_secagg_client:secagg_client:4096 fuzz_proxy_header:proxy_header:1200 fuzz_request:request:9000)
fuzz() { # fuzz TARGET CORPUS MAX_LEN LOG: the run's last lines into LOG; its status
  local work status
  work=$(mktemp -d)
  build/targets/fuzz/tests/"$1" -max_total_time="$FUZZ_SECONDS" -max_len="$3" -print_final_stats=1 \
    "$work" "$2" >"$4.whole" 2>&1
  status=$?
  tail -n 8 "$4.whole" >"$4"
  rm -rf "$work" "$4.whole"
  return "$status"
}
echo "=== fuzz: ${#fuzz_targets[@]} targets, ${FUZZ_SECONDS}s each, at once"
part_start=$SECONDS
fuzz_logs=$(mktemp -d)
declare -A fuzz_pid
for entry in "${fuzz_targets[@]}"; do
  IFS=: read -r target corpus max_len <<<"$entry"
  fuzz "$target" "tests/fuzz/corpus/$corpus" "$max_len" "$fuzz_logs/$target" &
  fuzz_pid[$target]=$!
done
for entry in "${fuzz_targets[@]}"; do
  target=${entry%%:*}
  if wait "${fuzz_pid[$target]}"; then
    summary+=("$target: 1 passed, 0 failed ($(took))")
    total_passed=$((total_passed + 1))
  else
    summary+=("$target: 0 passed, 1 failed ($(took))")
    total_failed=$((total_failed + 1))
  fi
  echo "--- $target"
  cat "$fuzz_logs/$target"
done
rm -rf "$fuzz_logs"

echo "=== summary"
printf '%s\n' "${summary[@]}"
echo "all tests took $((SECONDS - started)) s"
echo "tests: $total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ] && [ "$total_passed" -gt 0 ]
