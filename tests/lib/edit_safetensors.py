#!/usr/bin/python3
"""A safetensors checkpoint edited for a test: SRC copied to DST with EDIT (Python) run on its header `h` (name ->
dtype, shape; without __metadata__, which is kept) and its tensors' bytes `blobs` (name -> bytes); the data offsets
are laid out anew from what is left.
  edit_safetensors.py SRC DST EDIT
  e.g. edit_safetensors.py a.safetensors b.safetensors "del h['ln_final.bias']; del blobs['ln_final.bias']"
"""
import json
import struct
import sys

src, dst, edit = sys.argv[1:4]
data = open(src, 'rb').read()
n = struct.unpack('<Q', data[:8])[0]
h = json.loads(data[8:8 + n])
meta = h.pop('__metadata__', None)
blobs = {k: data[8 + n + v['data_offsets'][0]: 8 + n + v['data_offsets'][1]] for k, v in h.items()}
exec(edit)
out, off = {}, 0
for k in blobs:
    out[k] = {'dtype': h[k]['dtype'], 'shape': h[k]['shape'], 'data_offsets': [off, off + len(blobs[k])]}
    off += len(blobs[k])
if meta:
    out['__metadata__'] = meta
head = json.dumps(out).encode()
open(dst, 'wb').write(struct.pack('<Q', len(head)) + head + b''.join(blobs.values()))
