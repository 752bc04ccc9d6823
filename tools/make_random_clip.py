#!/usr/bin/python3
"""Writes a CLIP checkpoint with random weights under OpenAI state-dict names
(safetensors, fp32), of any shape: for tests (tiny fuzzing seeds) and for
benchmarks (a ViT-B/16-shaped text tower). Weights follow CLIP's own
initialisation scales so that activations stay in a realistic range.

  /usr/bin/python3 tools/make_random_clip.py OUT.safetensors [--text-width 512] ...
"""
import argparse
import json
import struct

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--embed-dim", type=int, default=512)
    p.add_argument("--text-width", type=int, default=512)
    p.add_argument("--text-layers", type=int, default=12)
    p.add_argument("--context-length", type=int, default=77)
    p.add_argument("--vocab-size", type=int, default=49408)
    p.add_argument("--vision-width", type=int, default=768)
    p.add_argument("--vision-layers", type=int, default=12)
    p.add_argument("--patch-size", type=int, default=16)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    tensors = {}

    def normal(name, shape, std):
        tensors[name] = (rng.standard_normal(shape) * std).astype(np.float32)

    def norm_layer(prefix, width):
        tensors[prefix + ".weight"] = (1.0 + 0.1 * rng.standard_normal(width)).astype(np.float32)
        tensors[prefix + ".bias"] = (0.1 * rng.standard_normal(width)).astype(np.float32)

    def blocks(prefix, width, layers):
        attn_std, proj_std, fc_std = width ** -0.5, (width ** -0.5) * ((2 * layers) ** -0.5), (2 * width) ** -0.5
        for i in range(layers):
            b = f"{prefix}.{i}."
            norm_layer(b + "ln_1", width)
            norm_layer(b + "ln_2", width)
            normal(b + "attn.in_proj_weight", (3 * width, width), attn_std)
            normal(b + "attn.in_proj_bias", (3 * width,), 0.02)
            normal(b + "attn.out_proj.weight", (width, width), proj_std)
            normal(b + "attn.out_proj.bias", (width,), 0.02)
            normal(b + "mlp.c_fc.weight", (4 * width, width), fc_std)
            normal(b + "mlp.c_fc.bias", (4 * width,), 0.02)
            normal(b + "mlp.c_proj.weight", (width, 4 * width), proj_std)
            normal(b + "mlp.c_proj.bias", (width,), 0.02)

    tw, vw = a.text_width, a.vision_width
    grid = a.image_size // a.patch_size
    normal("token_embedding.weight", (a.vocab_size, tw), 0.02)
    normal("positional_embedding", (a.context_length, tw), 0.01)
    blocks("transformer.resblocks", tw, a.text_layers)
    norm_layer("ln_final", tw)
    normal("text_projection", (tw, a.embed_dim), tw ** -0.5)
    normal("visual.conv1.weight", (vw, 3, a.patch_size, a.patch_size), 0.02)
    normal("visual.class_embedding", (vw,), vw ** -0.5)
    normal("visual.positional_embedding", (grid * grid + 1, vw), vw ** -0.5)
    norm_layer("visual.ln_pre", vw)
    blocks("visual.transformer.resblocks", vw, a.vision_layers)
    norm_layer("visual.ln_post", vw)
    normal("visual.proj", (vw, a.embed_dim), vw ** -0.5)
    tensors["logit_scale"] = np.array(np.log(1 / 0.07), dtype=np.float32)

    header, offset = {}, 0
    for name, t in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + t.nbytes]}
        offset += t.nbytes
    header["__metadata__"] = {"format": "random-clip", "args": json.dumps(vars(a))}
    head = json.dumps(header).encode()
    with open(a.out, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for t in tensors.values():
            f.write(t.tobytes())


if __name__ == "__main__":
    main()
