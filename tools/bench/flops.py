#!/usr/bin/python3
"""The floating-point work of sdfed's kernels, counted from a model's shapes
(a multiply-add is 2 FLOPs; layer norms, softmax and activations are left
out: the count is the matrix products'), for make bench's FLOP/s against
the measured peak (tools/bench/peak.sh):

- image: one image through the image tower: patch embedding, per layer the
  q/k/v, output, MLP products (24 T W^2) and attention (4 T^2 W, every token
  sees every token), the projection. T = patches + 1.
- forward: one SDFed step's text forward, f(G_c), f(G_s) and f(G~_c) for
  C classes, as the C core computes them (shared/clip/text_encoder.h): the
  prefix [SOT] P (1 + T rows) once per prompt, then each class's own rows
  (its name's tokens, ".", EOT; nothing after EOT); per layer 24 W^2 per row
  and causal attention, 4 W per (query, key) pair, then the projection.
- backward: the gradient with respect to the prompts only (the weights are
  frozen) through f(G_c) and f(G_s): per layer 24 W^2 per row (dx = dy W,
  once per product) and twice the attention's forward work, and the
  projection.
- step: forward + backward + G_c R (2 S_l W^2); the SVD of G_s is left out.

  flops.py --gguf M.gguf --sdfed build/sdfed --classes FILE [--n-classes 10]
           [--global 8] [--local 16]
prints "image_gflop=... forward_gflop=... backward_gflop=... step_gflop=...".
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clip_onnx import GGUF  # noqa: E402 (the project's one GGUF reader in Python)


def text_prompt(T, class_tokens, W, layers, E, backward):
    """One prompt of T vectors through the text tower for every class (class_tokens: each class's ids with SOT
    and EOT)."""
    prefix = 1 + T
    rows = prefix + sum(n - 1 for n in class_tokens)
    pairs = prefix * (prefix + 1) // 2  # (query, key) pairs under the causal mask
    for n in class_tokens:
        pairs += sum(i + 1 for i in range(prefix, prefix + n - 1))
    attention = 4 * W * pairs
    per_layer = 24 * W * W * rows + (2 * attention if backward else attention)
    return layers * per_layer + 2 * W * E * len(class_tokens)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gguf", required=True)
    p.add_argument("--sdfed", required=True)
    p.add_argument("--classes", required=True)
    p.add_argument("--n-classes", type=int, default=10)
    p.add_argument("--global", dest="S_s", type=int, default=8)
    p.add_argument("--local", dest="S_l", type=int, default=16)
    a = p.parse_args()
    m = GGUF(a.gguf, with_tensors=False).meta
    E = m["clip.embed_dim"]
    W, layers = m["clip.vision.width"], m["clip.vision.layers"]
    S, P = m["clip.vision.image_size"], m["clip.vision.patch_size"]
    G = S // P
    T = G * G + 1
    image = 2 * G * G * 3 * P * P * W + layers * (24 * T * W * W + 4 * T * T * W) + 2 * W * E

    with open(a.classes, encoding="utf-8") as f:
        names = [line.strip() for line in f if line.strip()][:a.n_classes]
    ids = subprocess.run([a.sdfed, "tokenize", "--model", a.gguf] + [n + "." for n in names], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    class_tokens = [len(line.split()) for line in ids]  # SOT, the name's tokens, ".", EOT
    Wt, Lt = m["clip.text.width"], m["clip.text.layers"]

    def prompt(T_prompt, backward):
        return text_prompt(T_prompt, class_tokens, Wt, Lt, E, backward)

    forward = 2 * prompt(a.S_l, False) + prompt(a.S_s, False)
    backward = prompt(a.S_l, True) + prompt(a.S_s, True)
    step = forward + backward + 2 * a.S_l * Wt * Wt
    print(f"image_gflop={image / 1e9:.4f} forward_gflop={forward / 1e9:.4f} backward_gflop={backward / 1e9:.4f} "
          f"step_gflop={step / 1e9:.4f}")


if __name__ == "__main__":
    main()
