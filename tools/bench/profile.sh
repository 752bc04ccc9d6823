#!/usr/bin/env bash
# Where native image features spend their time: perf samples of
# build/bench_features (one image at a time) grouped by kind of operation,
# as percentages of all samples (every thread's), and each thread's share.
# Not part of make bench (perf is not among the project's packages):
#   tools/bench/profile.sh MODEL.gguf [THREADS] [INT8_IMAGES]   (after make build)
# e.g. tools/bench/profile.sh build/bench/vitb16.q8_0.gguf 2 1
. "$(dirname "$0")/../help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -lt 1 ]; then
  echo "usage: tools/bench/profile.sh MODEL.gguf [THREADS] [INT8_IMAGES]   (--help: what it does)" >&2
  exit 2
fi
model=$1 threads=${2:-1} int8=${3:-1}
command -v perf >/dev/null || { echo "profile.sh: perf is not installed (Debian: linux-perf)" >&2; exit 2; }
[ -f "$model" ] || { echo "profile.sh: no model file '$model'" >&2; exit 2; }
[ -x build/bench_features ] || { echo "profile.sh: build/bench_features is missing: make build first" >&2; exit 2; }
data=$(mktemp)
trap 'rm -f "$data"' EXIT
perf record -q -o "$data" build/bench_features --model "$model" --threads "$threads" --int8-images "$int8" \
  --images 6 --repeats 1 | tail -n 1
echo "profile $(basename "$model") --threads $threads --int8-images $int8 (percent of all samples; model loading included):"
perf report -i "$data" --no-children --sort sym --stdio 2>/dev/null | awk '
  /^ +[0-9.]+%/ {
    p = $1; sub(/%/, "", p); sym = $3
    if (sym ~ /^tile_/) g = "tiles (linear layers, attention products)"
    else if (sym ~ /^(sdfed_linear|sdfed_store_outputs|sdfed_f16_to_f32|pack_|sdfed_gemm_fma|gemm_outputs|run_tile|tiles_over)/) g = "packing and stores"
    else if (sym ~ /^quantise/) g = "quantising activations"
    else if (sym ~ /^(masked_softmax|sdfed_softmax_row_wide|sdfed_attention_forward)/) g = "attention softmax"
    else if (sym ~ /^(sdfed_activation|activation_|sdfed_quick_gelu_wide)/) g = "MLP activation"
    else if (sym ~ /^(sdfed_layernorm|layernorm|sdfed_residual|add_in_vectors|__mem)/) g = "layer norms, residuals, copies"
    else g = "other (kernel, loading)"
    share[g] += p
  }
  END { for (g in share) printf "  %5.1f%%  %s\n", share[g], g }' | sort -r -n
echo "samples by thread:"
perf report -i "$data" --no-children --sort pid --stdio 2>/dev/null | awk '/^ +[0-9.]+%/ { printf "  %s\n", $0 }'
