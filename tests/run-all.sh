#!/usr/bin/env bash
# Runs every test of every build (run `make builds` first; `make test` does
# both): ctest in each build tree, the browser tests, then bounded fuzzing
# runs of the GGUF reader and the protocol codec. Prints one summary line
# per suite and a final total.
set -u
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-45}
total_passed=0 total_failed=0
summary=()

# ctest prints "N% tests passed, M tests failed out of T"
run_ctest() {
  local name=$1 dir=$2 log
  log=$(mktemp)
  echo "=== $name: ctest in $dir"
  ctest --test-dir "$dir" --output-on-failure -j 2 2>&1 | tee "$log"
  local line total failed
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1)
  if [ -z "$line" ]; then
    total=0 failed=1
  else
    total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
    failed=$(sed -E 's/.* ([0-9]+) tests? failed.*/\1/' <<<"$line")
  fi
  rm -f "$log"
  summary+=("$name: $((total - failed)) passed, $failed failed")
  total_passed=$((total_passed + total - failed))
  total_failed=$((total_failed + failed))
}

run_ctest native build
run_ctest clang build/targets/clang
run_ctest asan build/targets/asan
run_ctest emscripten build/targets/emscripten
run_ctest wasi build/targets/wasi

# the browser: the wasm client against the native one, the page in Chromium
echo "=== browser"
browser_log=$(mktemp)
bash tests/browser/run.sh build build/targets/emscripten 2>&1 | tee "$browser_log"
line=$(grep -E '^browser: [0-9]+ passed, [0-9]+ failed' "$browser_log" | tail -n 1)
rm -f "$browser_log"
if [ -n "$line" ]; then
  summary+=("$line")
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
  work=$(mktemp -d)
  if build/targets/fuzz/tests/"$target" -max_total_time="$FUZZ_SECONDS" -max_len="$max_len" -print_final_stats=1 \
       "$work" "$corpus_dir" 2>&1 | tail -n 8; [ "${PIPESTATUS[0]}" -eq 0 ]; then
    summary+=("$target: 1 passed, 0 failed")
    total_passed=$((total_passed + 1))
  else
    summary+=("$target: 0 passed, 1 failed")
    total_failed=$((total_failed + 1))
  fi
  rm -rf "$work"
}
fuzz fuzz_gguf tests/fuzz/corpus/gguf 1048576
fuzz fuzz_protocol tests/fuzz/corpus/protocol 65536

echo "=== summary"
printf '%s\n' "${summary[@]}"
echo "tests: $total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ] && [ "$total_passed" -gt 0 ]
