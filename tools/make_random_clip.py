#!/usr/bin/python3
"""Writes a CLIP checkpoint with random weights under OpenAI state-dict names
(safetensors, fp32), of any shape: a real model's exact shape (--shape
vit-b-32 or vit-b-16: the same size and speed as the real one, for trying
the 224 x 224 path; `make random-model` converts it), or any other (tiny
fuzzing seeds, a ViT-B/16-shaped text tower for benchmarks). Weights follow
CLIP's own initialisation scales so that activations stay in a realistic
range; the features mean nothing.

  /usr/bin/python3 tools/make_random_clip.py OUT.safetensors [--shape vit-b-32|vit-b-16|tiny] [--text-width 512] ...
"""
import argparse
import json
import struct

import numpy as np


# the shapes of real models: OpenAI's ViT-B/32 and ViT-B/16, and the default tiny model's
SHAPES = {
    "vit-b-32": dict(embed_dim=512, text_width=512, text_layers=12, vision_width=768, vision_layers=12,
                     patch_size=32, image_size=224),
    "vit-b-16": dict(embed_dim=512, text_width=512, text_layers=12, vision_width=768, vision_layers=12,
                     patch_size=16, image_size=224),
    "tiny": dict(embed_dim=64, text_width=128, text_layers=3, vocab_size=695, vision_width=128, vision_layers=3,
                 patch_size=7, image_size=28),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--shape", choices=sorted(SHAPES), help="a real model's shape (the other options then override it)")
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
    shape = p.parse_known_args()[0].shape
    if shape:  # the shape's values, which the other options override
        p.set_defaults(**SHAPES[shape])
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
