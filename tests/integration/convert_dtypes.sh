#!/usr/bin/env bash
# sdfed convert reads F16 and BF16 checkpoints as well as F32: a checkpoint
# stored in F16 (or BF16) must convert to exactly the file that the same
# values stored in F32 give.
#   convert_dtypes.sh SDFED CLIP_DATA_DIR WORK_DIR
set -eu
sdfed=$1 clip=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
/usr/bin/python3 - "$clip/mini-vit.hf.safetensors" "$work" <<'PY'
import json, struct, sys
import numpy as np
src, work = sys.argv[1:3]
data = open(src, 'rb').read()
n = struct.unpack('<Q', data[:8])[0]
h = json.loads(data[8:8 + n])
meta = h.pop('__metadata__', None)
arrays = {k: np.frombuffer(data[8 + n + v['data_offsets'][0]: 8 + n + v['data_offsets'][1]], dtype='<f4').reshape(v['shape'])
          for k, v in h.items()}

def to_bf16(a):  # round to nearest even, as torch does
    u = a.astype('<f4').view('<u4').astype(np.uint64)
    u = (u + np.uint64(0x7fff) + ((u >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
    return u.astype('<u2')

def write(path, dtype, encode):
    header, blobs, off = {}, [], 0
    for k, a in arrays.items():
        b = encode(a).tobytes()
        header[k] = {'dtype': dtype, 'shape': list(a.shape), 'data_offsets': [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    head = json.dumps(header).encode()
    open(path, 'wb').write(struct.pack('<Q', len(head)) + head + b''.join(blobs))

bf16_as_f32 = lambda a: (to_bf16(a).astype('<u4').reshape(-1) << np.uint32(16)).view('<f4').reshape(a.shape)
write(f'{work}/model.f16.safetensors', 'F16', lambda a: a.astype('<f2'))
write(f'{work}/model.f16-values.safetensors', 'F32', lambda a: a.astype('<f2').astype('<f4'))
write(f'{work}/model.bf16.safetensors', 'BF16', to_bf16)
write(f'{work}/model.bf16-values.safetensors', 'F32', bf16_as_f32)
PY
for name in f16 f16-values bf16 bf16-values; do
  "$sdfed" convert --in "$work/model.$name.safetensors" --vocab "$clip/bpe_simple_vocab_16e6.txt.gz" \
    --out "$work/$name.gguf" >/dev/null
done
cmp "$work/f16.gguf" "$work/f16-values.gguf"
cmp "$work/bf16.gguf" "$work/bf16-values.gguf"
if cmp -s "$work/f16.gguf" "$work/bf16.gguf"; then
  echo "F16 and BF16 inputs gave the same model: the values were not read as stored" >&2
  exit 1
fi
echo "convert_dtypes: 3 passed, 0 failed"
