#!/usr/bin/python3
"""Expected output tokens of CLIP's vision transformer, computed in torch.

    image_tokens_oracle.py CLIP_DIR OUTDIR   -> fixtures for tests/oracle/test_image_tokens.c

CLIP_DIR is ../shared/clip (mini-vit.openai.safetensors and the reference
tensors). The tower is openai/CLIP's VisionTransformer as FedOTP modifies it
(clip/model.py, ModifiedVisionTransformer.forward): ln_post and the
projection applied to every token instead of the class token only. The
blocks run through torch's own multi-head attention
(F.multi_head_attention_forward, what nn.MultiheadAttention calls), not a
restatement of the C code. Before writing anything the oracle checks its
class-token rows against image.features, which openai/CLIP itself produced.

OUTDIR/tokens.txt holds "n T D"; OUTDIR/pixels.f32 the reference pixels
(n, 3, S, S) and OUTDIR/tokens.f32 the tokens (n, T, D), little-endian
float32. Run by ctest as a fixture, so nothing generated is committed.
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench"))
from sdfed_step_torch import load_safetensors  # noqa: E402


def vision_tokens(w, pixels):
    """Every output token of the tower: (n, T, D)."""
    width = w["visual.class_embedding"].shape[0]
    heads = width // 64
    layers = sum(1 for k in w if k.startswith("visual.transformer.") and k.endswith(".attn.in_proj_weight"))
    patch = w["visual.conv1.weight"].shape[-1]
    x = F.conv2d(pixels, w["visual.conv1.weight"], stride=patch)  # (n, width, grid, grid)
    x = x.reshape(x.shape[0], width, -1).permute(0, 2, 1)
    cls = w["visual.class_embedding"].expand(x.shape[0], 1, width)
    x = torch.cat([cls, x], dim=1) + w["visual.positional_embedding"]
    x = F.layer_norm(x, (width,), w["visual.ln_pre.weight"], w["visual.ln_pre.bias"], eps=1e-5)
    x = x.permute(1, 0, 2)  # (T, n, width), the layout nn.MultiheadAttention takes
    for i in range(layers):
        p = "visual.transformer.resblocks.%d." % i
        h = F.layer_norm(x, (width,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps=1e-5)
        att, _ = F.multi_head_attention_forward(
            h, h, h, width, heads, w[p + "attn.in_proj_weight"], w[p + "attn.in_proj_bias"], None, None, False, 0.0,
            w[p + "attn.out_proj.weight"], w[p + "attn.out_proj.bias"], training=False, need_weights=False)
        x = x + att
        h = F.layer_norm(x, (width,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps=1e-5)
        h = F.linear(h, w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"])
        h = h * torch.sigmoid(1.702 * h)  # QuickGELU
        x = x + F.linear(h, w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"])
    x = x.permute(1, 0, 2)
    x = F.layer_norm(x, (width,), w["visual.ln_post.weight"], w["visual.ln_post.bias"], eps=1e-5)
    return x @ w["visual.proj"]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: image_tokens_oracle.py CLIP_DIR OUTDIR")
    clip_dir, outdir = sys.argv[1], sys.argv[2]
    w = load_safetensors(os.path.join(clip_dir, "mini-vit.openai.safetensors"))
    ref = load_safetensors(os.path.join(clip_dir, "mini-vit.reference.safetensors"))
    pixels, pooled = ref["image.pixels"], ref["image.features"]
    with torch.no_grad():
        tokens = vision_tokens(w, pixels)
    rel = float((tokens[:, 0] - pooled).abs().max() / pooled.abs().max())
    if rel > 1e-5:
        sys.exit("image_tokens_oracle: class tokens differ from openai/CLIP's image.features (rel %.2e)" % rel)
    os.makedirs(outdir, exist_ok=True)
    n, T, D = tokens.shape
    with open(os.path.join(outdir, "tokens.txt"), "w") as f:
        f.write("%d %d %d\n" % (n, T, D))
    pixels.numpy().astype("<f4").tofile(os.path.join(outdir, "pixels.f32"))
    tokens.numpy().astype("<f4").tofile(os.path.join(outdir, "tokens.f32"))
    print("image_tokens_oracle: %d images, %d tokens of %d; class tokens match openai/CLIP (rel %.2e)" % (n, T, D, rel))


if __name__ == "__main__":
    main()
