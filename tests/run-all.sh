#!/usr/bin/env bash
# Runs every test of every build (run `make builds` first; `make test` does
# both): ctest in each build tree, the browser tests, then
# bounded fuzzing runs of the GGUF reader and the protocol codec. Prints one
# summary line per suite with the time it took, and a final total.
set -u
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
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
  ctest --test-dir "$dir" --output-on-failure -j 2 "$@" 2>&1 | tee "$log"
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

# (the clang tree leaves the long multi-process suites, aggregator,
# aggregator_postgres and sim, to the native gcc tree and the ASan tree,
# which is clang too, and the folder dataset's 80,000 images to the gcc tree;
# the ASan tree runs the federation under SQLite (aggregator) and the
# PostgreSQL back end through test_store, and leaves aggregator_postgres,
# the same federation again over PostgreSQL, whose feature cache of 10,000
# test images takes minutes to encode under ASan, to the gcc tree; the
# cluster's 34 processes run in the gcc tree only, as the secure rounds'
# headless clients, aggregator_secure, to keep CI within its time)
run_ctest native build
run_ctest clang build/targets/clang -E '^(aggregator|aggregator_secure|aggregator_postgres|aggregator_cluster|sim|folder_dataset)$'
run_ctest asan build/targets/asan -E '^(aggregator_secure|aggregator_postgres|aggregator_cluster)$'
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

# bounded fuzzing: each target for FUZZ_SECONDS, from its committed corpus
# (copied, so new inputs do not land in the repository)
fuzz() {
  local target=$1 corpus_dir=$2 max_len=$3 work
  echo "=== fuzz: $target, ${FUZZ_SECONDS}s"
  part_start=$SECONDS
  work=$(mktemp -d)
  if build/targets/fuzz/tests/"$target" -max_total_time="$FUZZ_SECONDS" -max_len="$max_len" -print_final_stats=1 \
       "$work" "$corpus_dir" 2>&1 | tail -n 8; [ "${PIPESTATUS[0]}" -eq 0 ]; then
    summary+=("$target: 1 passed, 0 failed ($(took))")
    total_passed=$((total_passed + 1))
  else
    summary+=("$target: 0 passed, 1 failed ($(took))")
    total_failed=$((total_failed + 1))
  fi
  rm -rf "$work"
}
fuzz fuzz_gguf tests/fuzz/corpus/gguf 1048576
fuzz fuzz_protocol tests/fuzz/corpus/protocol 65536

echo "=== summary"
printf '%s\n' "${summary[@]}"
echo "all tests took $((SECONDS - started)) s"
echo "tests: $total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ] && [ "$total_passed" -gt 0 ]
