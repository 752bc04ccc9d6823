#!/usr/bin/python3
"""How far other schemes than Q8_0's (8-bit, and one with 16-bit activations) would move image features: 1 - cosine
against the f32 model's features when every linear of the image tower (the patch embedding, q/k/v, output, MLP, the
final projection: those the C core's integer path takes) quantises its weights and its input by each scheme below,
round to nearest even, d = max|v| / 127 (63 for 7 bits, 32767 for 16) per group, as sdfed_q8_0_activations does.

Issue 39 asked whether the integer path's per-block scale work could leave the inner loop, for instance with one
scale per weight row, if the accuracy held (1 - cosine <= 1e-4 against f32). Each scheme names where its scales
change: a per-row weight scale alone still leaves one f32 step per block of the activations; only activations with
one scale per token (or per 128 values) take it out of the loop; activations per 32 whose scales are a token's
largest divided by powers of two leave one multiply a block (d_x d_w is then d_w's exponent moved, and the token's
scale a multiply at the end). The first line, Q8_0's own rule (weights per 32 with
the scale stored in f16, as the GGUF converter writes it, activations per 32), is what sdfed computes; with --q8-0
the weights are read from that file instead, and its figure is then bench_features --check's (docs/performance.md).

The towers are tools/bench/clip_onnx.py's PyTorch ones (the C core's maths); the check images are its random ones
(the same seed: bench_features --check and peers.sh use the first 2).

  /usr/bin/python3 tools/bench/quant_schemes.py --gguf M.f32.gguf [--q8-0 M.q8_0.gguf] [--images 4]
prints one line per scheme: "SCHEME  1-cos worst W mean M".
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clip_onnx import GGUF, ImageEncoder  # noqa: E402 (the folder is the module's path)

# (name, weights' group, activations' group, activations' levels, activations' scales powers of two of their
# token's largest): a group of None is a whole row (a weight row, a token); a group is 32 where a row is not a
# multiple of it (the tiny model's patches)
SCHEMES = [
    ("Q8_0 (weights /32 f16 scale, x /32)", 32, 32, 127, False),
    ("weights per row, x /32", None, 32, 127, False),
    ("weights per row, x /64", None, 64, 127, False),
    ("weights per row, x /128", None, 128, 127, False),
    ("weights per row, x per token", None, None, 127, False),
    ("weights per row, x per token in 16 bits", None, None, 32767, False),
    ("weights /32, x per token", 32, None, 127, False),
    ("weights /32, x /32 in 7 bits", 32, 32, 63, False),
    ("weights /32, x /32 by powers of two", 32, 32, 127, True),
]


def quantised(v, group, levels, f16_scale=False, power_of_two=False):
    """v with each run of `group` values along its last dimension (None: all of it) quantised and back; with
    power_of_two each run's scale is its row's largest divided by the largest power of two that keeps it at least
    the run's own."""
    n = v.shape[-1] if group is None or v.shape[-1] % group else group
    rows = v.reshape(-1, n)
    d = rows.abs().amax(1, keepdim=True) / levels
    if power_of_two:
        by_row = d.reshape(*v.shape[:-1], -1)
        largest = by_row.amax(-1, keepdim=True)
        shift = torch.floor(torch.log2(largest / by_row.clamp_min(torch.finfo(d.dtype).tiny))).clamp(0, 126)
        d = torch.where(by_row != 0, largest / torch.exp2(shift), by_row).reshape(d.shape)
    q = torch.round(rows * torch.where(d != 0, 1.0 / d, torch.zeros_like(d)))
    if f16_scale:
        d = d.half().float()
    return (q * d).reshape(v.shape)


def linears(encoder):
    """The image tower's integer-path weights as (holder, key): each stored (inputs, outputs)."""
    found = [(encoder.__dict__, "patch"), (encoder.__dict__, "proj")]
    for block in encoder.tower.blocks:
        found += [(block, k) for k in ("attn_qkv", "attn_out", "mlp_fc", "mlp_proj")]
    return found


def features(encoder, pixels, activation_group, levels, power_of_two=False):
    """The encoder's features with the input of every integer-path linear quantised."""
    weights = {id(holder[key]) for holder, key in linears(encoder)}
    matmul = torch.Tensor.__matmul__

    def quantising_matmul(a, w):
        if id(w) in weights:
            a = quantised(a.contiguous(), activation_group, levels, power_of_two=power_of_two)
        return matmul(a, w)

    torch.Tensor.__matmul__ = quantising_matmul
    try:
        return encoder(pixels)
    finally:
        torch.Tensor.__matmul__ = matmul


def one_minus_cosine(f, ref):
    c = 1 - (f * ref).sum(-1) / (f.norm(dim=-1) * ref.norm(dim=-1))
    return float(c.max()), float(c.mean())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gguf", required=True, help="the f32 model (the reference, and the source of the schemes)")
    p.add_argument("--q8-0", help="the same model in Q8_0: its weights for the first line")
    p.add_argument("--images", type=int, default=4, help="random check images (default 4)")
    a = p.parse_args()
    torch.set_grad_enabled(False)
    g = GGUF(a.gguf)
    if g.meta.get("general.architecture") != "clip":
        raise SystemExit(f"{a.gguf}: not a CLIP model (general.architecture is not 'clip')")
    encoder = ImageEncoder(g)
    S, mean, std = encoder.S, g.meta["clip.vision.image_mean"], g.meta["clip.vision.image_std"]
    rgb = np.random.default_rng(7).integers(0, 256, (a.images, S, S, 3), dtype=np.uint8)
    pixels = (rgb.astype(np.float32) / np.float32(255) - np.array(mean, np.float32)) / np.array(std, np.float32)
    pixels = torch.from_numpy(np.ascontiguousarray(pixels.transpose(0, 3, 1, 2)))
    ref = encoder(pixels)
    originals = [(holder, key, holder[key]) for holder, key in linears(encoder)]
    file_encoder = ImageEncoder(GGUF(a.q8_0)) if a.q8_0 else None
    print(f"{a.gguf}: {a.images} images, 1 - cosine of the image features against f32")
    for name, weight_group, activation_group, levels, power_of_two in SCHEMES:
        q8_0_rule = weight_group == 32 and levels == 127 and activation_group == 32 and not power_of_two
        if file_encoder is not None and q8_0_rule:
            f = features(file_encoder, pixels, activation_group, levels)
            name = f"Q8_0 as {os.path.basename(a.q8_0)} holds it, x /32"
        else:
            for holder, key, w in originals:  # a weight row is a column here
                holder[key] = quantised(w.T.contiguous(), weight_group, 127, weight_group == 32).T.contiguous()
            f = features(encoder, pixels, activation_group, levels, power_of_two)
            for holder, key, w in originals:
                holder[key] = w
        worst, average = one_minus_cosine(f, ref)
        print(f"  {name:44s} 1-cos worst {worst:.3g} mean {average:.3g}")


if __name__ == "__main__":
    main()
