#!/usr/bin/env bash
# Bad files and bad arguments given to the sdfed CLI: each must end with one
# error line on stderr ("sdfed: ..."), nothing on stdout, and the documented
# exit status (2 for a wrong command line, 1 for bad input), leaving any
# existing output file untouched.
#   cli_errors.sh SDFED CLIP_DATA_DIR MODEL.gguf WORK_DIR
set -u
sdfed=$1 clip=$2 model=$3 work=$4
lib=$(cd "$(dirname "$0")/../lib" && pwd)
python=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
. "$lib/tally.sh" cli_errors

# expect STATUS PATTERN -- COMMAND...: the pattern must appear in the one line
expect() {
  local want=$1 pattern=$2
  shift 3
  "$@" >"$work/out" 2>"$work/err"
  local status=$? lines
  lines=$(wc -l <"$work/err")
  if [ "$status" -eq "$want" ] && [ "$lines" -eq 1 ] && [ ! -s "$work/out" ] &&
     grep -q '^sdfed: ' "$work/err" && grep -qi -- "$pattern" "$work/err"; then
    ok
  else
    bad "$* -> status $status (want $want), $lines stderr lines, expected /$pattern/:"
    sed 's/^/  | /' "$work/err" "$work/out"
  fi
}

# a modified copy of the OpenAI-named checkpoint: $1 = output, $2 = python
# statement editing the dict `h` (header) and `blobs` (name -> bytes)
make_safetensors() {
  "$python" "$lib/edit_safetensors.py" "$clip/mini-vit.openai.safetensors" "$1" "$2"
}

vocab="$clip/bpe_simple_vocab_16e6.txt.gz"
st="$clip/mini-vit.openai.safetensors"
ref="$clip/mini-vit.reference.safetensors"

# command lines
expect 2 'no command given' -- "$sdfed"
expect 2 "unknown command 'frobnicate'" -- "$sdfed" frobnicate
expect 2 'are required' -- "$sdfed" convert --in "$st"
expect 2 "unexpected argument 'stray'" -- "$sdfed" convert stray --in "$st"
expect 2 "unexpected argument 'stray'" -- "$sdfed" check-reference --model "$model" -- stray
expect 2 "option '--out' needs a value" -- "$sdfed" convert --in "$st" --vocab "$vocab" --out
expect 2 "--type must be f32, f16 or q8_0, not 'q4_0'" -- "$sdfed" convert --in "$st" --vocab "$vocab" --out "$work/x.gguf" --type q4_0
expect 2 "--activation must be" -- "$sdfed" convert --in "$st" --vocab "$vocab" --out "$work/x.gguf" --activation relu
expect 2 "unknown option '--modle'" -- "$sdfed" tokenize --modle "$model" hello
expect 2 "option '--model' needs a value" -- "$sdfed" encode-text hello --model
expect 2 'at least one' -- "$sdfed" encode-text --model "$model"
expect 2 "backend 'nope' is not in this build" -- "$sdfed" encode-text --model "$model" --backend nope hi
expect 2 "backend 'nope' is not in this build" -- "$sdfed" task check "$work/absent.json" --backend nope
expect 2 'give one model file' -- "$sdfed" info "$model" "$model"
expect 2 'required' -- "$sdfed" check-reference --model "$model"

# missing and malformed files
expect 1 "$work/missing.safetensors" -- "$sdfed" convert --in "$work/missing.safetensors" --vocab "$vocab" --out "$work/x.gguf"
head -c 5000 "$st" >"$work/cut-header.safetensors"
expect 1 'does not fit' -- "$sdfed" convert --in "$work/cut-header.safetensors" --vocab "$vocab" --out "$work/x.gguf"
head -c 1000000 "$st" >"$work/truncated.safetensors"
expect 1 'outside the file' -- "$sdfed" convert --in "$work/truncated.safetensors" --vocab "$vocab" --out "$work/x.gguf"
head -c 4000 /dev/urandom >"$work/garbage.safetensors"
expect 1 'safetensors' -- "$sdfed" convert --in "$work/garbage.safetensors" --vocab "$vocab" --out "$work/x.gguf"
printf '\x10\x00\x00\x00\x00\x00\x00\x00{"a": [1, 2,]}  ' >"$work/badjson.safetensors"
expect 1 'json' -- "$sdfed" convert --in "$work/badjson.safetensors" --vocab "$vocab" --out "$work/x.gguf"
make_safetensors "$work/missing-tensor.safetensors" "del h['ln_final.bias']; del blobs['ln_final.bias']"
expect 1 "^sdfed: convert: $work/missing-tensor.safetensors: tensor 'ln_final.bias' is missing" -- "$sdfed" convert --in "$work/missing-tensor.safetensors" --vocab "$vocab" --out "$work/x.gguf"
make_safetensors "$work/extra-tensor.safetensors" "h['visual.extra_head.weight'] = {'dtype': 'F32', 'shape': [2]}; blobs['visual.extra_head.weight'] = bytes(8)"
expect 1 "^sdfed: convert: $work/extra-tensor.safetensors: 1 unexpected tensor: 'visual.extra_head.weight'" -- "$sdfed" convert --in "$work/extra-tensor.safetensors" --vocab "$vocab" --out "$work/x.gguf"
make_safetensors "$work/bad-shape.safetensors" "h['transformer.resblocks.1.mlp.c_fc.weight']['shape'] = [128, 512]"
expect 1 "^sdfed: convert: $work/bad-shape.safetensors: tensor 'transformer.resblocks.1.mlp.c_fc.weight' has shape \[128, 512\]" -- "$sdfed" convert --in "$work/bad-shape.safetensors" --vocab "$vocab" --out "$work/x.gguf"
# sizes of 0 (tensors of no values): refused before anything divides by them (a patch size of 0 ended in SIGFPE)
make_safetensors "$work/no-patch.safetensors" "h['visual.conv1.weight']['shape'][2:] = [0, 0]; blobs['visual.conv1.weight'] = b''"
expect 1 "^sdfed: convert: $work/no-patch.safetensors: the patch size is 0, not 1 to" -- "$sdfed" convert --in "$work/no-patch.safetensors" --vocab "$vocab" --out "$work/x.gguf"
make_safetensors "$work/no-positions.safetensors" "h['visual.positional_embedding']['shape'][0] = 1; blobs['visual.positional_embedding'] = blobs['visual.positional_embedding'][:4 * h['visual.positional_embedding']['shape'][1]]"
expect 1 "^sdfed: convert: $work/no-positions.safetensors: the image tower's patch embedding or positions are not square" -- "$sdfed" convert --in "$work/no-positions.safetensors" --vocab "$vocab" --out "$work/x.gguf"
make_safetensors "$work/nan.safetensors" "import struct as s; blobs['ln_final.bias'] = s.pack('<f', float('nan')) + blobs['ln_final.bias'][4:]"
expect 1 "^sdfed: convert: $work/nan.safetensors: tensor 'text.ln_final.bias' holds a non-finite" -- "$sdfed" convert --in "$work/nan.safetensors" --vocab "$vocab" --out "$work/x.gguf"
make_safetensors "$work/int.safetensors" "h['ln_final.bias']['dtype'] = 'I32'"
expect 1 "^sdfed: convert: $work/int.safetensors: safetensors: tensor 'ln_final.bias' has dtype I32" -- "$sdfed" convert --in "$work/int.safetensors" --vocab "$vocab" --out "$work/x.gguf"
make_safetensors "$work/resnet.safetensors" "h['visual.layer1.0.conv1.weight'] = {'dtype': 'F32', 'shape': [1]}; blobs['visual.layer1.0.conv1.weight'] = bytes(4)"
expect 1 "ResNet" -- "$sdfed" convert --in "$work/resnet.safetensors" --vocab "$vocab" --out "$work/x.gguf"
expect 1 'not a CLIP checkpoint' -- "$sdfed" convert --in "$ref" --vocab "$vocab" --out "$work/x.gguf"

# vocabularies
gzip -dc "$vocab" | head -n 1000 >"$work/short-vocab.txt"
expect 1 'merge lines' -- "$sdfed" convert --in "$st" --vocab "$work/short-vocab.txt" --out "$work/x.gguf"
head -c 20000 "$vocab" >"$work/cut.txt.gz"
expect 1 'vocabulary .*corrupt gzip data' -- "$sdfed" convert --in "$st" --vocab "$work/cut.txt.gz" --out "$work/x.gguf"
expect 1 "$work/none.txt" -- "$sdfed" convert --in "$st" --vocab "$work/none.txt" --out "$work/x.gguf"

# a failed conversion leaves an existing output alone and no temporary file
echo keep >"$work/existing.gguf"
expect 1 'missing' -- "$sdfed" convert --in "$work/missing-tensor.safetensors" --vocab "$vocab" --out "$work/existing.gguf"
if [ "$(cat "$work/existing.gguf")" = keep ] && [ ! -e "$work/existing.gguf.tmp" ]; then
  ok
else
  bad "a failed conversion touched the existing output"
fi
expect 1 'No such file or directory' -- "$sdfed" convert --in "$st" --vocab "$vocab" --out "$work/no/such/dir/x.gguf"

# model files
head -c 100000 "$model" >"$work/truncated.gguf"
expect 1 'truncated' -- "$sdfed" info "$work/truncated.gguf"
expect 1 'not a GGUF file' -- "$sdfed" info "$st"
: >"$work/empty.gguf"
expect 1 'too short' -- "$sdfed" info "$work/empty.gguf"
expect 1 'not a regular file' -- "$sdfed" info /dev/null
expect 1 'not a regular file' -- "$sdfed" info "$work"
expect 1 'nothing.safetensors: No such file' -- "$sdfed" check-reference --model "$model" --reference "$work/nothing.safetensors"
expect 1 "reference" -- "$sdfed" check-reference --model "$model" --reference "$work/garbage.safetensors"

# images
printf 'not an image at all' >"$work/fake.png"
expect 1 "$work/fake.png" -- "$sdfed" encode-image --model "$model" "$work/fake.png"
expect 1 "$work/absent.jpg" -- "$sdfed" encode-image --model "$model" "$work/absent.jpg"

# task files: the same parser as the aggregator's and the page's (shared/fed/task.c); each refused naming its key,
# before any image is read (Fashion-MNIST from Debian's package, the shipped tiny model)
printf '{"rounds": 2, "rounds": 3}' >"$work/twice.json"
expect 1 "key 'rounds' twice in one object" -- "$sdfed" sim --task "$work/twice.json" --out "$work/sim"
printf '{"rounds": 2, "name": "caf\xe9"}' >"$work/latin1.json"
expect 1 "invalid UTF-8 at byte 26, in the value of 'name'" -- "$sdfed" sim --task "$work/latin1.json" --out "$work/sim"
printf '{"rounds": 2, "name": "a\\u0000b"}' >"$work/nul.json"
expect 1 "key 'name' must be" -- "$sdfed" sim --task "$work/nul.json" --out "$work/sim"
printf '{"clients": 100000}' >"$work/clients.json"
expect 1 "key 'clients' must be an integer in 1..65536" -- "$sdfed" sim --task "$work/clients.json" --out "$work/sim"
# a Dirichlet partition gives each client a batch at least: too many clients for the data names the task's keys
printf '{"clients": 5000, "partition": {"kind": "dirichlet"}, "rounds": 1}' >"$work/dirichlet.json"
expect 1 "at least 'batch_size' (16) .*lower 'batch_size' or 'clients', or raise 'partition.alpha'" -- \
  "$sdfed" sim --task "$work/dirichlet.json" --out "$work/sim"

# help: usage on stdout, status 0, for the tool and for each command
for cmd in "" convert info check-reference; do
  if "$sdfed" $cmd --help >"$work/out" 2>"$work/err" && grep -q "^usage: sdfed $cmd" "$work/out" && [ ! -s "$work/err" ]; then
    ok
  else
    bad "sdfed $cmd --help"; sed 's/^/  | /' "$work/err" "$work/out"
  fi
done

# task init and task check: --help or -h anywhere among the arguments prints the command's help
for args in "init $work --help" "init -h $work --clients 3" "check $work/task.json --strict --help" "check -h"; do
  set -- $args
  if "$sdfed" task $args >"$work/out" 2>"$work/err" && grep -q "^usage: sdfed task $1 " "$work/out" && [ ! -s "$work/err" ]; then
    ok
  else
    bad "sdfed task $args"; sed 's/^/  | /' "$work/err" "$work/out"
  fi
done

summary
[ "$failed" -eq 0 ]
