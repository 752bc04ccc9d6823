#!/usr/bin/env bash
# make bench's image features, sdfed against ONNX Runtime: the tiny default
# model and a ViT-B/16-shaped one (random weights), one image at a time,
# f32 and Q8_0 (sdfed: in integer products, clip_model.h's int8_images;
# ONNX Runtime: int8 by dynamic quantisation), 1 and 2 threads, natively
# (bench_features next to onnxruntime-node) and in Chromium (the page's
# worker, sdfed_features.mjs, next to onnxruntime-web's wasm SIMD backend;
# peers_browser.mjs), same weights (clip_onnx.py exports them from the
# GGUF), same inputs, this same run. sdfed's Q8_0 is also timed on f32
# activations (int8_images 0, the path before the integer one; no ONNX
# Runtime peer): its own line against the integer path. Before anything is
# timed each runtime's features of the check images are compared with
# native sdfed's f32 ones: f32 must agree to 1e-4 (max abs) or 1e-6
# (1 - cosine), Q8_0 / int8 to 1e-2 (1 - cosine), else the line says
# FAILED and the script fails at the end; the Q8_0 / int8 1 - cosine is
# printed. Each comparison's runs are timed in rounds, one timed run of each
# in turn a round (natively sdfed, sdfed on f32 activations, onnxruntime-node;
# in Chromium each in a fresh browser), so that the load of a shared machine
# falls on them alike, each round starting one run further on (no run always
# first); a line's rate is the median of its REPEATS rounds (the logs'
# rounds=RATE,... each round's, in round order). Lines for scripts (PLACE: native or chromium):
#   bench image-features MODEL WEIGHTS THREADS: sdfed X img/s, onnxruntime-web Y img/s, ratio X/Y; minimal
#     harness Y2 img/s, ratio X/Y2; sdfed dot=D madd=M
#   bench image-features MODEL WEIGHTS THREADS: sdfed X img/s, onnxruntime-node Y img/s, ratio X/Y; minimal
#     harness Y2 img/s, ratio X/Y2
#     (Y: ONNX Runtime timed as sdfed is, its session and input made once,
#     before the timer, graph optimisation all, its threads as each package
#     documents them; Y2: the check on it, session.run alone in a minimal
#     harness, untimed runs for 2 s then the median of 10, ort_features.mjs; D, M:
#     the integer dot and the f32 multiply-add sdfed's page ran, below)
#   bench q8_0-activations MODEL THREADS PLACE: f32 X img/s, int8 Y img/s, ratio Y/X
#   bench relaxed-simd MODEL THREADS chromium: simd128 X img/s, simd128-relaxed Y img/s, ratio Y/X; the page
#     chose dot=D madd=M
#     (sdfed's integer path on SIMD128's kernels alone and on relaxed SIMD's
#     with its integer dot asked for: that dot, and its multiply-add for the
#     f32 products where fused; D the integer dot the page chose, relaxed or
#     simd128, M the multiply-add its f32 products use, fused or unfused)
#   bench dot-choice MODEL THREADS chromium: dot=relaxed X img/s (form F), dot=simd128 Y img/s (madd=M); the
#     page chose dot=D,... Z img/s, ratio R (goal >= 0.95); the faster asked for A,..., the page's choice in
#     N of K rounds
#     (each integer dot asked for, the rest of relaxed SIMD as the page's
#     own, against the page's choice by its start-up timing, in turn in
#     the same run; F the relaxed dot's form, split (two dots per 16
#     products) or unsigned or signed (one: the engine's dot exact as that
#     kind); D the dot the page chose in each round; X, Y, Z the
#     medians of their rounds, R the median of the rounds' own ratios,
#     each round's page's choice over the faster forced dot of that round;
#     A the faster of the two asked for in each round, and in how many
#     rounds the page chose it: where it chose that very dot, R's
#     distance from 1 is the spread between page loads, not its choice)
#   bench accuracy MODEL q8_0/int8 PLACE: 1-cos vs f32 sdfed A, sdfed-f32-act B, onnxruntime-node|web C
# and with webgpu (also in all), image features on WebGPU in Chromium
# (web/gpu.js; peers_browser.mjs ... webgpu) against onnxruntime-web's WebGPU
# backend on the same adapter and model, and against sdfed's wasm in the same
# browser (2 threads; Q8_0 in integers); on SwiftShader (this machine's only
# WebGPU adapter, a software GPU on the CPU) the first ratio is between two
# GPU programs on the same software GPU, as the line says:
#   bench webgpu MODEL f32: sdfed-webgpu X img/s, onnxruntime-web-webgpu Y img/s, ratio X/Y; sdfed wasm 2 threads
#     Z img/s, ratio X/Z; adapter A
#   bench webgpu MODEL q8_0: sdfed-webgpu X img/s, sdfed wasm int8 2 threads Z img/s, ratio X/Z; adapter A
#   tools/bench/peers.sh [native|browser|webgpu|all] [REPEATS] [MODEL...]   (after make build web; from make bench)
# Models: tiny (models/fmnist-tiny-clip.q8_0.gguf; its f32 twin holds the
# same weights turned back into f32, so that sdfed's f32 and every ONNX
# model see exactly the file's values) and vitb16 (tools/bench/models.sh).
. "$(dirname "$0")/../help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/../.."
part=${1:-all} repeats=${2:-3}
models=("${@:3}")
[ ${#models[@]} -gt 0 ] || models=(tiny vitb16)
out=build/bench
mkdir -p "$out/peers"
. tools/bench/models.sh
declare -A images=([tiny]=100 [vitb16]=4)
for model in "${models[@]}"; do
  [ -n "${images[$model]:-}" ] || { echo "peers.sh: no model '$model' (tiny, vitb16)" >&2; exit 2; }
done
case $part in native | browser | webgpu | all) ;; *) echo "peers.sh: '$part' is not native, browser, webgpu or all" >&2; exit 2 ;; esac
check_images=2
failed=0

[ -d tools/bench/node_modules/onnxruntime-node ] ||
  (cd tools/bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error)
[ -d tests/browser/node_modules/playwright-core ] ||
  (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)

# prints "F32.gguf Q8_0.gguf ONNX_DIR" for a model, making what is missing
peer_models() {
  local f32 q8 onnx="$out/onnx/$1"
  if [ "$1" = tiny ]; then
    q8=models/fmnist-tiny-clip.q8_0.gguf f32=$out/tiny-default.f32.gguf
    if [ ! -f "$f32" ]; then
      /usr/bin/python3 tools/bench/clip_onnx.py --gguf "$q8" --out-dir "$onnx" --check-images "$check_images" \
        --safetensors "$out/tiny-default.f32.safetensors" --merges "$out/tiny-default.merges.txt" >&2
      build/sdfed convert --in "$out/tiny-default.f32.safetensors" --vocab "$out/tiny-default.merges.txt" \
        --out "$f32" --type f32 >&2
    fi
  else
    f32=$(bench_model "$1" f32) q8=$(bench_model "$1" q8_0)
  fi
  [ -f "$onnx/config.json" ] && [ "$onnx/config.json" -nt "$f32" ] ||
    /usr/bin/python3 tools/bench/clip_onnx.py --gguf "$f32" --out-dir "$onnx" --check-images "$check_images" >&2
  echo "$f32 $q8 $onnx"
}

value() { sed -nE "s/(^|.*[ :])$1=([^ ]+).*/\2/p" <<<"$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# an f32 check: max abs <= 1e-4 or 1 - cos <= 1e-6
agrees() { awk -v a="$(value max_abs "$1")" -v c="$(value one_minus_cos "$1")" 'BEGIN { exit !(a <= 1e-4 || c <= 1e-6) }'; }
# a quantised model still computes the same features: 1 - cos <= 1e-2
close_enough() { awk -v c="$(value one_minus_cos "$1")" 'BEGIN { exit !(c <= 1e-2) }'; }

# MODEL THREADS PLACE F32_ACTIVATIONS_LINE INT8_LINE: sdfed's Q8_0 on f32
# activations against its integer path
activations() {
  local x y
  x=$(value images_per_s "$4") y=$(value images_per_s "$5")
  if [ -z "$x" ] || [ -z "$y" ] || ! close_enough "$4"; then
    echo "bench q8_0-activations $1 $2 $3: FAILED: features differ from native sdfed f32's or no timing ($4)"
    failed=1
  else
    echo "bench q8_0-activations $1 $2 $3: f32 $x img/s, int8 $y img/s, ratio $(ratio "$y" "$x")"
  fi
}

# MODEL THREADS SIMD128_LINE RELAXED_LINE DEFAULT_LINE: sdfed's integer path
# in Chromium on SIMD128's kernels against relaxed SIMD's, and which products the page chose
relaxed() {
  local x y
  x=$(value images_per_s "$3") y=$(value images_per_s "$4")
  if [ -z "$x" ] || [ -z "$y" ] || ! close_enough "$3" || ! close_enough "$4"; then
    echo "bench relaxed-simd $1 $2 chromium: FAILED: features differ from native sdfed f32's or no timing ($3; $4)"
    failed=1
  else
    echo "bench relaxed-simd $1 $2 chromium: simd128 $x img/s, $(value kernels "$4") $y img/s, ratio $(ratio "$y" "$x");" \
      "the page chose dot=$(value dot "$5") madd=$(value madd "$5")"
  fi
}

# RELAXED SIMD128 CHOSEN (each a round's rates, comma-separated): the median
# over the rounds of the chosen rate over the faster forced one
round_ratios() {
  awk -v x="$1" -v y="$2" -v z="$3" 'BEGIN {
    n = split(x, a, ","); split(y, b, ","); split(z, c, ",")
    for (i = 1; i <= n; i++) r[i] = c[i] / (a[i] > b[i] ? a[i] : b[i])
    for (i = 2; i <= n; i++) for (j = i; j > 1 && r[j - 1] > r[j]; j--) { t = r[j]; r[j] = r[j - 1]; r[j - 1] = t }
    printf "%.2f", r[int(n / 2) + 1]
  }'
}

# RELAXED SIMD128 CHOSEN_DOTS (each a round's rates, then the dots the page
# chose, comma-separated): the faster dot asked for in each round, then in
# how many rounds the page chose it ("relaxed,simd128,simd128; the page's
# choice in 2 of 3 rounds")
faster_dots() {
  awk -v x="$1" -v y="$2" -v d="$3" 'BEGIN {
    n = split(x, a, ","); split(y, b, ","); split(d, c, ",")
    for (i = 1; i <= n; i++) {
      f = a[i] > b[i] ? "relaxed" : "simd128"
      list = list (i > 1 ? "," : "") f
      same += c[i] == f
    }
    printf "%s, the page'"'"'s choice in %d of %d rounds", list, same, n
  }'
}

# MODEL THREADS RELAXED_DOT_LINE SIMD128_DOT_LINE DEFAULT_LINE: the page's choice
# of integer dot against the faster of the two asked for, in the same run
dot_choice() {
  local x y z
  x=$(value images_per_s "$3") y=$(value images_per_s "$4") z=$(value images_per_s "$5")
  if [ -z "$x" ] || [ -z "$y" ] || [ -z "$z" ] || ! close_enough "$3" || ! close_enough "$4" ||
    [ "$(value dot "$3")" != relaxed ] || [ "$(value dot "$4")" != simd128 ]; then
    echo "bench dot-choice $1 $2 chromium: FAILED: features differ from native sdfed f32's, no timing or not the" \
      "dot asked for ($3; $4)"
    failed=1
  else
    echo "bench dot-choice $1 $2 chromium: dot=relaxed $x img/s (form $(value dot_form "$3")), dot=simd128 $y img/s" \
      "(madd=$(value madd "$3"));" \
      "the page chose dot=$(value round_dots "$5") $z img/s, ratio $(round_ratios "$(value rounds "$3")" \
        "$(value rounds "$4")" "$(value rounds "$5")") (goal >= 0.95); the faster asked for" \
      "$(faster_dots "$(value rounds "$3")" "$(value rounds "$4")" "$(value round_dots "$5")")"
  fi
}

# MODEL WEIGHTS THREADS PEER SDFED_LINE PEER_LINE: the comparison's line
comparison() {
  local model=$1 weights=$2 threads=$3 peer=$4 ours=$5 theirs=$6 name="$2"
  [ "$weights" = q8_0 ] && name=q8_0/int8
  for line in "$ours" "$theirs"; do
    if [ -z "$(value images_per_s "$line")" ] ||
      { [ "$weights" = f32 ] && ! agrees "$line"; } || { [ "$weights" = q8_0 ] && ! close_enough "$line"; }; then
      echo "bench image-features $model $name $threads: FAILED: features differ from native sdfed f32's or no" \
        "timing ($line)"
      failed=1
      return
    fi
  done
  local x y y2 products=
  x=$(value images_per_s "$ours") y=$(value images_per_s "$theirs") y2=$(value minimal_images_per_s "$theirs")
  [ -z "$(value dot "$ours")" ] || products="; sdfed dot=$(value dot "$ours") madd=$(value madd "$ours")"
  echo "bench image-features $model $name $threads: sdfed $x img/s, $peer $y img/s, ratio $(ratio "$x" "$y");" \
    "minimal harness $y2 img/s, ratio $(ratio "$x" "$y2")$products"
}

# GGUF INT8_IMAGES CHECK.rgb: native sdfed's features of the check images, one line each
check_features() {
  build/bench_features --model "$1" --int8-images "$2" --check "$3" --images 1 --repeats 1 --threads 1 |
    grep -v '^result'
}
# A B (feature files): "max_abs=... one_minus_cos=..." between them
feature_distance() { node tools/bench/peers_node.mjs compare "$1" "$2"; }
# GGUF INT8_IMAGES THREADS IMAGES: native sdfed's timing line, one timed run (a round's)
timed() {
  build/bench_features --model "$1" --int8-images "$2" --threads "$3" --images "$4" --repeats 1 | tail -n 1
}

# LINE...: one contender's rounds as one line: the first round's, its images_per_s (and minimal_images_per_s)
# the median of the rounds' and rounds=RATE,... each round's images_per_s in order; a round without a rate is
# the line itself (its comparison then says FAILED)
rounds_line() {
  local line
  for line in "$@"; do [ -n "$(value images_per_s "$line")" ] || { echo "$line"; return; }; done
  printf '%s\n' "$@" | awk '
    function median(v, n,   s, i, j, t) {
      for (i = 1; i <= n; i++) s[i] = v[i]
      for (i = 2; i <= n; i++) for (j = i; j > 1 && s[j - 1] > s[j]; j--) { t = s[j]; s[j] = s[j - 1]; s[j - 1] = t }
      return s[int(n / 2) + 1]
    }
    {
      for (f = 1; f <= NF; f++) {
        if ($f ~ /^images_per_s=/) { rate[NR] = substr($f, 14); list = list (NR > 1 ? "," : "") rate[NR] }
        if ($f ~ /^minimal_images_per_s=/) minimal[NR] = substr($f, 22)
      }
      if (NR == 1) first = $0
    }
    END {
      for (f = split(first, field, " "); f > 0; f--) {
        if (field[f] ~ /^images_per_s=/) field[f] = sprintf("images_per_s=%.4f", median(rate, NR))
        if (field[f] ~ /^minimal_images_per_s=/) field[f] = sprintf("minimal_images_per_s=%.4f", median(minimal, NR))
      }
      out = field[1]
      for (f = 2; field[f] != ""; f++) out = out " " field[f]
      print out " rounds=" list
    }'
}

native() {
  local model=$1 f32 q8 onnx ref="$out/peers/$1.reference.txt" q8_features="$out/peers/$1.q8_0"
  read -r f32 q8 onnx < <(peer_models "$model")
  check_features "$f32" 1 "$onnx/check.rgb" >"$ref"
  check_features "$q8" 1 "$onnx/check.rgb" >"$q8_features.int8.txt"
  check_features "$q8" 0 "$onnx/check.rgb" >"$q8_features.f32-act.txt"
  # the text tower too (not timed): ONNX Runtime's f32 text features against sdfed's
  local texts=("a photo of a dress." "a t-shirt/top on a white background." "an ankle boot")
  build/sdfed tokenize --model "$f32" "${texts[@]}" >"$out/peers/$model.ids.txt"
  build/sdfed encode-text --normalize --model "$f32" "${texts[@]}" >"$out/peers/$model.text.txt"
  local text
  text=$(node tools/bench/peers_node.mjs run "$onnx" f32 1 1 1 "$ref" "$out/peers/$model.ids.txt" \
    "$out/peers/$model.text.txt")
  if awk -v a="$(value text_max_abs "$text")" -v c="$(value text_one_minus_cos "$text")" \
    'BEGIN { exit !(a <= 1e-4 || c <= 1e-6) }'; then
    echo "bench text-features $model f32: onnxruntime-node agrees with sdfed (max abs $(value text_max_abs "$text"))"
  else
    echo "bench text-features $model f32: FAILED: onnxruntime-node's text features differ from sdfed's ($text)"
    failed=1
  fi
  local ort_int8 q8_line f32_act_line n=${images[$model]}
  for threads in 1 2; do
    for weights in f32 q8_0; do
      # rounds of one timed run of each in turn (sdfed; sdfed on f32 activations for Q8_0; ONNX Runtime), so
      # that the load of a shared machine falls on them alike, each round starting one further on, so that no
      # run always comes first; each line's rate the median of its rounds
      local ours theirs round turn rounds_ours=() rounds_acts=() rounds_theirs=() ort_weights=$weights gguf=$f32
      local contenders=(ours acts theirs)
      [ "$weights" = q8_0 ] && ort_weights=int8 gguf=$q8
      [ "$weights" = q8_0 ] || contenders=(ours theirs)
      for ((round = 0; round < repeats; round++)); do
        for ((turn = 0; turn < ${#contenders[@]}; turn++)); do
          case ${contenders[(round + turn) % ${#contenders[@]}]} in
          ours) rounds_ours+=("$(timed "$gguf" 1 "$threads" "$n")") ;;
          acts) rounds_acts+=("$(timed "$q8" 0 "$threads" "$n")") ;;
          theirs) rounds_theirs+=("$(node tools/bench/peers_node.mjs run "$onnx" "$ort_weights" "$threads" "$n" 1 "$ref")") ;;
          esac
        done
      done
      theirs=$(rounds_line "${rounds_theirs[@]}")
      if [ "$weights" = f32 ]; then
        ours="$(rounds_line "${rounds_ours[@]}") max_abs=0 one_minus_cos=0" # the reference itself
      else
        ours="$(rounds_line "${rounds_ours[@]}") $(feature_distance "$q8_features.int8.txt" "$ref")"
        f32_act_line="$(rounds_line "${rounds_acts[@]}") $(feature_distance "$q8_features.f32-act.txt" "$ref")"
        echo "# sdfed on f32 activations: $f32_act_line" >&2
      fi
      echo "# sdfed: $ours; $theirs" >&2
      comparison "$model" "$weights" "$threads" onnxruntime-node "$ours" "$theirs"
      [ "$weights" = q8_0 ] && ort_int8=$theirs q8_line=$ours
    done
    activations "$model" "$threads" native "$f32_act_line" "$q8_line"
  done
  echo "bench accuracy $model q8_0/int8 native: 1-cos vs f32 sdfed $(value one_minus_cos "$q8_line")," \
    "sdfed-f32-act $(value one_minus_cos "$f32_act_line"), onnxruntime-node $(value one_minus_cos "$ort_int8")"
}

# SWIFTSHADER|other: what the WebGPU lines say of their adapter
adapter_note() {
  if [[ $1 == */swiftshader ]]; then
    echo "adapter $1 (SwiftShader: a software GPU on the CPU; the ratio is between two GPU programs on the same" \
      "software GPU, not a real GPU's speed)"
  else
    echo "adapter $1"
  fi
}

# OURS PEER_OR_EMPTY CHECK: a WebGPU run's line is timed, agrees with the reference (CHECK: agrees or close_enough)
# and ran where it says (sdfed-webgpu: on the GPU)
webgpu_ok() { [ -n "$(value images_per_s "$1")" ] && "$2" "$1" && { [ "$3" = any ] || [ "$(value on "$1")" = "$3" ]; }; }

webgpu() {
  local model=$1 f32 q8 onnx ref="$out/peers/$1.reference.txt" log="$out/peers/$1.webgpu.log"
  read -r f32 q8 onnx < <(peer_models "$model")
  [ -f "$ref" ] && [ "$ref" -nt "$onnx/check.rgb" ] || check_features "$f32" 1 "$onnx/check.rgb" >"$ref"
  node tools/bench/peers_browser.mjs build build/targets/emscripten "$out/peers" "$onnx" "$ref" "$f32" "$q8" \
    "${images[$model]}" "$repeats" webgpu | tee "$log" | sed 's/^/# /' >&2
  local gpu_f32 gpu_q8 ort wasm_f32 wasm_q8 note
  gpu_f32=$(grep "^chromium sdfed-webgpu f32 webgpu:" "$log" || true)
  gpu_q8=$(grep "^chromium sdfed-webgpu q8_0 webgpu:" "$log" || true)
  ort=$(grep "^chromium onnxruntime-web-webgpu f32 webgpu:" "$log" || true)
  wasm_f32=$(grep "^chromium sdfed f32 2:" "$log" || true)
  wasm_q8=$(grep "^chromium sdfed q8_0 2:" "$log" || true)
  note=$(adapter_note "$(value adapter "$gpu_f32")")
  if webgpu_ok "$gpu_f32" agrees gpu && webgpu_ok "$ort" agrees any && webgpu_ok "$wasm_f32" agrees any; then
    local x y z
    x=$(value images_per_s "$gpu_f32") y=$(value images_per_s "$ort") z=$(value images_per_s "$wasm_f32")
    echo "bench webgpu $model f32: sdfed-webgpu $x img/s, onnxruntime-web-webgpu $y img/s, ratio $(ratio "$x" "$y");" \
      "sdfed wasm 2 threads $z img/s, ratio $(ratio "$x" "$z"); $note"
  else
    echo "bench webgpu $model f32: FAILED: not on the GPU, features differ from native sdfed f32's or no timing" \
      "($gpu_f32; $ort; $wasm_f32)"
    failed=1
  fi
  if webgpu_ok "$gpu_q8" close_enough gpu && webgpu_ok "$wasm_q8" close_enough any; then
    local x z
    x=$(value images_per_s "$gpu_q8") z=$(value images_per_s "$wasm_q8")
    echo "bench webgpu $model q8_0: sdfed-webgpu $x img/s, sdfed wasm int8 2 threads $z img/s," \
      "ratio $(ratio "$x" "$z"); $note"
  else
    echo "bench webgpu $model q8_0: FAILED: not on the GPU, features differ from native sdfed f32's or no timing" \
      "($gpu_q8; $wasm_q8)"
    failed=1
  fi
}

browser() {
  local model=$1 f32 q8 onnx ref="$out/peers/$1.reference.txt" log="$out/peers/$1.browser.log"
  read -r f32 q8 onnx < <(peer_models "$model")
  [ -f "$ref" ] && [ "$ref" -nt "$onnx/check.rgb" ] || check_features "$f32" 1 "$onnx/check.rgb" >"$ref"
  node tools/bench/peers_browser.mjs build build/targets/emscripten "$out/peers" "$onnx" "$ref" "$f32" "$q8" \
    "${images[$model]}" "$repeats" | tee "$log" | sed 's/^/# /' >&2
  for threads in 1 2; do
    comparison "$model" f32 "$threads" onnxruntime-web "$(grep "^chromium sdfed f32 $threads:" "$log" || true)" \
      "$(grep "^chromium onnxruntime-web f32 $threads:" "$log" || true)"
    comparison "$model" q8_0 "$threads" onnxruntime-web "$(grep "^chromium sdfed q8_0 $threads:" "$log" || true)" \
      "$(grep "^chromium onnxruntime-web int8 $threads:" "$log" || true)"
    activations "$model" "$threads" chromium "$(grep "^chromium sdfed q8_0-f32-act $threads:" "$log" || true)" \
      "$(grep "^chromium sdfed q8_0 $threads:" "$log" || true)"
    relaxed "$model" "$threads" "$(grep "^chromium sdfed q8_0-simd128 $threads:" "$log" || true)" \
      "$(grep "^chromium sdfed q8_0-dot-relaxed $threads:" "$log" || true)" \
      "$(grep "^chromium sdfed q8_0 $threads:" "$log" || true)"
    dot_choice "$model" "$threads" "$(grep "^chromium sdfed q8_0-dot-relaxed $threads:" "$log" || true)" \
      "$(grep "^chromium sdfed q8_0-dot-simd128 $threads:" "$log" || true)" \
      "$(grep "^chromium sdfed q8_0 $threads:" "$log" || true)"
  done
  echo "bench accuracy $model q8_0/int8 chromium: 1-cos vs f32 sdfed" \
    "$(value one_minus_cos "$(grep "^chromium sdfed q8_0 1:" "$log")")," \
    "sdfed-f32-act $(value one_minus_cos "$(grep "^chromium sdfed q8_0-f32-act 1:" "$log")")," \
    "onnxruntime-web $(value one_minus_cos "$(grep "^chromium onnxruntime-web int8 1:" "$log")")"
}

echo "== image features against ONNX Runtime 1.30 ($part; medians of $repeats runs; load: $(cut -d' ' -f1-3 /proc/loadavg))"
for model in "${models[@]}"; do
  case $part in
    native) native "$model" ;;
    browser) browser "$model" ;;
    webgpu) webgpu "$model" ;;
    all)
      native "$model"
      browser "$model"
      # WebGPU for the tiny model alone there: on SwiftShader a ViT-B/16 image takes minutes
      if [ "$model" = tiny ]; then webgpu "$model"; fi ;;
  esac
done
exit "$failed"
