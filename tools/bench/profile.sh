#!/usr/bin/env bash
# Where image features spend their time: perf samples of bench_features (one
# image at a time) grouped by kind of operation, as percentages of all
# samples (every thread's), and each thread's share. Natively build/bench_features;
# with --wasm the WASI build's (make build-wasi), the browser's SIMD128 kernels
# on one thread under Node's V8 (its functions named through
# --perf-basic-prof; Chromium's V8 is newer: a guide to the page, not its
# figures); with --browser the page's own module in Chromium (relaxed SIMD's
# tile included, which runs there only), from a build of it that keeps its
# functions' names (build/targets/emscripten-profile, made here: emcc's
# --profiling-funcs), its Q8_0 in integers on the kernels and dot the page
# chooses, the machine sampled (perf -a: other programs' samples land in
# "other") while tools/bench/profile_browser.mjs times the images; with
# --annotate FUNCTION also that function of the page's module as V8 compiled
# it (its optimised code, V8 writing it for perf: --perf-prof, then perf
# inject --jit), each instruction with its share of the function's samples:
# those that have any, in address order (the hot loops), all of it in
# build/bench/annotate-FUNCTION.txt. Not part of make bench (perf is not
# among the project's packages):
#   tools/bench/profile.sh MODEL.gguf [THREADS] [INT8_IMAGES]   (after make build)
#   tools/bench/profile.sh --wasm MODEL.gguf [INT8_IMAGES]      (after make build-wasi)
#   tools/bench/profile.sh --browser [--annotate FUNCTION] MODEL.gguf [THREADS]   (after make build web)
# e.g. tools/bench/profile.sh build/bench/vitb16.q8_0.gguf 2 1
#      tools/bench/profile.sh --browser --annotate relaxed_one_panel build/bench/vitb16.q8_0.gguf 1
. "$(dirname "$0")/../help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/../.."
wasm=0 browser=0 annotate="" annotating=0
if [ "${1:-}" = --wasm ]; then
  wasm=1
  shift
elif [ "${1:-}" = --browser ]; then
  browser=1
  shift
  if [ "${1:-}" = --annotate ] && [ $# -ge 2 ]; then
    annotating=1 annotate=$2
    shift 2
  fi
fi
if [ $# -lt 1 ] || [ "$1" = --annotate ] || { [ $annotating = 1 ] && [[ ! "$annotate" =~ ^[A-Za-z0-9_]+$ ]]; }; then
  echo "usage: tools/bench/profile.sh [--wasm | --browser [--annotate FUNCTION]] MODEL.gguf [THREADS] [INT8_IMAGES]" \
    "  (--help: what it does)" >&2
  exit 2
fi
model=$1
if [ $wasm = 1 ]; then threads=1 int8=${2:-1}; elif [ $browser = 1 ]; then threads=${2:-1} int8=1; else threads=${2:-1} int8=${3:-1}; fi
command -v perf >/dev/null || { echo "profile.sh: perf is not installed (Debian: linux-perf)" >&2; exit 2; }
[ -f "$model" ] || { echo "profile.sh: no model file '$model'" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
touch "$work/start" # V8 (Node's, Chromium's) names its code in /tmp/perf-PID.map from here on (removed below)
args=(--model "$(realpath "$model")" --threads "$threads" --int8-images "$int8" --images 6 --repeats 1)
if [ $browser = 1 ]; then
  profiled=build/targets/emscripten-profile
  echo "profile.sh: building the page's module with its functions' names in $profiled" >&2
  cmake -S . -B $profiled -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE="$PWD/emscripten.cmake" \
    -DCMAKE_EXE_LINKER_FLAGS=--profiling-funcs >/dev/null
  cmake --build $profiled -j 2 --target sdfed-wasm sdfed-wasm-threads >/dev/null
  [ -d tests/browser/node_modules/playwright-core ] || (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)
  if [ -z "$annotate" ]; then
    node tools/bench/profile_browser.mjs $profiled "$model" "$threads" 6 "$work/data" "$work/v8.log"
  else # V8 writes its code's dumps in the working directory
    root=$PWD model=$(realpath "$model")
    (cd "$work" && node "$root/tools/bench/profile_browser.mjs" "$root/$profiled" "$model" "$threads" 6 "$work/data" \
      "$work/v8.log" jit)
    # its copies of V8's code beside the dumps, and in a cache of its own in $work (not the user's ~/.debug)
    perf --buildid-dir "$work/debug" inject --jit -i "$work/data" -o "$work/data.jit" 2>/dev/null
    mv "$work/data.jit" "$work/data"
  fi
elif [ $wasm = 1 ]; then
  program=build/targets/wasi/bench_features
  [ -f $program ] || { echo "profile.sh: $program is missing: make build-wasi first" >&2; exit 2; }
  perf record -q -o "$work/data" node --perf-basic-prof --logfile="$work/v8.log" --no-logfile-per-isolate \
    --experimental-wasi-unstable-preview1 --no-warnings wasm-client/wasi-run.mjs $program "${args[@]}" | tail -n 1
else
  [ -x build/bench_features ] || { echo "profile.sh: build/bench_features is missing: make build first" >&2; exit 2; }
  perf record -q -o "$work/data" build/bench_features "${args[@]}" | tail -n 1
fi
# the samples grouped: all of them, or the page's workers' (its module's threads are Chromium's dedicated workers)
samples=(--no-children --sort sym) what="all samples; model loading included" where=""
if [ $browser = 1 ]; then
  samples+=(--comms DedicatedWorker --percentage relative) what="the page's workers' samples while they encode"
  where=" (the page, Chromium)"
elif [ $wasm = 1 ]; then
  where=" (wasm, Node)"
fi
echo "profile $(basename "$model") --threads $threads --int8-images $int8$where (percent of $what):"
# a wasm function's samples are named "JS:name-INDEX-turbofan" (or -liftoff, its first compilation)
perf report -i "$work/data" "${samples[@]}" --stdio 2>/dev/null | awk '
  /^ +[0-9.]+%/ {
    p = $1; sub(/%/, "", p); sym = $3
    sub(/^JS:/, "", sym); sub(/-[0-9]+-(turbofan|liftoff)$/, "", sym)
    if (sym ~ /^(tile_|panel_int16|gemm_block|linear_rows|relaxed_(one_|f32_)?panel)/) g = "tiles (linear layers, attention products)"
    else if (sym ~ /^(sdfed_linear|sdfed_store_outputs|sdfed_f16_to_f32|pack_|int8_outputs|sdfed_gemm_fma|gemm_outputs|run_tile|tiles_over|gemm$)/) g = "packing and stores"
    else if (sym ~ /^(quantise|linear_int8_on|fmaxf)/) g = "quantising activations"
    else if (sym ~ /^(masked_softmax|sdfed_softmax_row_wide|sdfed_attention_forward|attention_blocks)/) g = "attention softmax"
    else if (sym ~ /^(sdfed_activation|activation_|sdfed_quick_gelu_wide)/) g = "MLP activation"
    else if (sym ~ /^(sdfed_layernorm|layernorm|sdfed_residual|add_in_vectors|__mem|memcpy|memset)/) g = "layer norms, residuals, copies"
    else g = "other (kernel, loading)"
    share[g] += p
  }
  END { for (g in share) printf "  %5.1f%%  %s\n", share[g], g }' | sort -r -n
echo "samples by thread:"
perf report -i "$work/data" --no-children --sort pid --stdio 2>/dev/null | awk '/^ +[0-9.]+%/ { printf "  %s\n", $0 }'
if [ -n "$annotate" ]; then
  # the function's optimised code: JS:FUNCTION-INDEX-turbofan
  symbol=$(perf report -i "$work/data" "${samples[@]}" --stdio 2>/dev/null |
    grep -o -m 1 "JS:$annotate-[0-9]*-turbofan" || true)
  [ -n "$symbol" ] || { echo "profile.sh: no samples in the page's optimised $annotate" >&2; exit 1; }
  mkdir -p build/bench
  listing=build/bench/annotate-$annotate.txt
  perf annotate -i "$work/data" --stdio -s "$symbol" 2>/dev/null | grep -v '^ *$' >"$listing"
  echo "annotate $symbol (percent of its samples; the instructions with any, in address order; all: $listing):"
  awk '$1 + 0 > 0' "$listing"
fi
# the perf maps of this run's V8 processes, which perf report has read (those of processes still running stay)
find /tmp -maxdepth 1 -name 'perf-*.map' -newer "$work/start" | while read -r map; do
  pid=${map#/tmp/perf-} pid=${pid%.map}
  kill -0 "$pid" 2>/dev/null || rm -f "$map"
done
