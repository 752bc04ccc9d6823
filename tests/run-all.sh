#!/usr/bin/env bash
# Runs every test of every build (run `make builds` first; `make test` does
# both): ctest in each build tree, then a bounded fuzzing run of the GGUF
# reader. Prints one summary line per suite and a final total.
set -u
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
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

echo "=== fuzz: GGUF reader and model loader, ${FUZZ_SECONDS}s"
corpus=$(mktemp -d)
if build/targets/fuzz/tests/fuzz_gguf -max_total_time="$FUZZ_SECONDS" -max_len=1048576 -print_final_stats=1 \
     "$corpus" tests/fuzz/corpus/gguf 2>&1 | tail -n 12; [ "${PIPESTATUS[0]}" -eq 0 ]; then
  summary+=("fuzz_gguf: 1 passed, 0 failed")
  total_passed=$((total_passed + 1))
else
  summary+=("fuzz_gguf: 0 passed, 1 failed")
  total_failed=$((total_failed + 1))
fi
rm -rf "$corpus"

echo "=== summary"
printf '%s\n' "${summary[@]}"
echo "tests: $total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ] && [ "$total_passed" -gt 0 ]
