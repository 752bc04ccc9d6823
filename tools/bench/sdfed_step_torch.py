#!/usr/bin/python3
"""The SDFed local step in PyTorch (CPU, fp32), the peer that `make bench`
times against the C core on the same shapes and weights.

A careful version: all classes of a prompt run as one batch padded only to
the longest sequence of that prompt (not the full context), the causal mask
is built once, the refined prompt's features run under no_grad, the SVD is
torch.linalg.svd. The step is: SVD of G_s, G~_c = G_c (I - X X^T), f(G~_c),
f(G_c), f(G_s), the four SDFed losses, backward, SGD.

  sdfed_step_torch.py --model M.safetensors --sdfed build/sdfed --gguf M.gguf
                      --classes FILE --n-classes C [--batch 16] [--global 8]
                      [--local 16] [--steps 5] [--threads 2]
Class names are tokenised by the project's CLI (`sdfed tokenize`), so both
sides see the same ids. Prints "result step_ms=..." like bench_step.
"""
import argparse
import json
import math
import statistics
import struct
import subprocess
import time

import numpy as np
import torch
import torch.nn.functional as F


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        array = np.frombuffer(data[8 + n + begin:8 + n + end], dtype="<f4").reshape(info["shape"])
        out[name] = torch.from_numpy(array.copy())
    return out


class TextTower:
    def __init__(self, w):
        self.w = w
        self.layers = sum(1 for k in w if k.endswith(".attn.in_proj_weight") and k.startswith("transformer."))
        self.width = w["ln_final.weight"].shape[0]
        self.heads = self.width // 64

    def block(self, x, i, mask):
        w, p = self.w, f"transformer.resblocks.{i}."
        C, H = self.width, self.heads
        h = F.layer_norm(x, (C,), w[p + "ln_1.weight"], w[p + "ln_1.bias"])
        qkv = F.linear(h, w[p + "attn.in_proj_weight"], w[p + "attn.in_proj_bias"])
        n, L, _ = qkv.shape
        q, k, v = qkv.view(n, L, 3, H, C // H).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(C // H) + mask
        o = (att.softmax(-1) @ v).transpose(1, 2).reshape(n, L, C)
        x = x + F.linear(o, w[p + "attn.out_proj.weight"], w[p + "attn.out_proj.bias"])
        h = F.layer_norm(x, (C,), w[p + "ln_2.weight"], w[p + "ln_2.bias"])
        h = F.linear(h, w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"])
        h = h * torch.sigmoid(1.702 * h)
        return x + F.linear(h, w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"])

    def features(self, prompt, names, sot, eot):
        """f(P): normalised features of [SOT, P, name, EOT] for every class."""
        T, w = prompt.shape[0], self.w
        L = 2 + T + max(len(n) for n in names)
        ids = torch.zeros(len(names), L, dtype=torch.long)
        eot_at = []
        for c, name in enumerate(names):
            ids[c, 0] = sot
            ids[c, 1 + T:1 + T + len(name)] = torch.tensor(name)
            ids[c, 1 + T + len(name)] = eot
            eot_at.append(1 + T + len(name))
        x = w["token_embedding.weight"][ids]
        x = torch.cat([x[:, :1], prompt.unsqueeze(0).expand(len(names), -1, -1), x[:, 1 + T:]], dim=1)
        x = x + w["positional_embedding"][:L]
        mask = torch.full((L, L), float("-inf")).triu(1)
        for i in range(self.layers):
            x = self.block(x, i, mask)
        x = F.layer_norm(x[torch.arange(len(names)), eot_at], (self.width,), w["ln_final.weight"], w["ln_final.bias"])
        return F.normalize(x @ w["text_projection"], dim=-1)


def step(tower, Gs, Gc, names, sot, eot, img, labels, scale, lam=0.6, gamma=0.8, lr=0.01):
    with torch.no_grad():
        _, s, vt = torch.linalg.svd(Gs, full_matrices=False)
        k = min(int(lam * Gs.shape[1]), int((s > s[0] * Gs.shape[1] * 1.1920929e-07).sum()))
        X = vt[:k]
        refined = Gc - (Gc @ X.T) @ X
        target = tower.features(refined, names, sot, eot)
    fc = tower.features(Gc, names, sot, eot)
    fs = tower.features(Gs, names, sot, eot)
    loss = (F.cross_entropy(scale * img @ fc.T, labels) + F.cross_entropy(scale * img @ fs.T, labels)
            + ((fc - target) ** 2).mean() + F.relu(gamma - (fc - fs).norm(dim=1)).mean())
    Gs.grad = Gc.grad = None
    loss.backward()
    with torch.no_grad():
        Gs -= lr * Gs.grad
        Gc -= lr * Gc.grad
    return loss.item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--sdfed", required=True, help="the project's CLI, for tokenising")
    ap.add_argument("--gguf", required=True, help="the same model as GGUF, for its tokenizer")
    ap.add_argument("--classes", required=True)
    ap.add_argument("--n-classes", type=int, default=10)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--global", dest="global_len", type=int, default=8)
    ap.add_argument("--local", type=int, default=16)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    w = load_safetensors(a.model)
    tower = TextTower(w)
    class_names = [l.strip() for l in open(a.classes) if l.strip()][:a.n_classes]
    lines = subprocess.run([a.sdfed, "tokenize", "--model", a.gguf] + [n + "." for n in class_names],
                           check=True, capture_output=True, text=True).stdout.split("\n")
    ids = [[int(t) for t in line.split()] for line in lines if line.strip()]
    sot, eot = ids[0][0], ids[0][-1]
    names = [row[1:-1] for row in ids]
    D = w["text_projection"].shape[1]
    img = F.normalize(torch.randn(a.batch, D), dim=-1)
    labels = torch.arange(a.batch) % a.n_classes
    Gs = (0.02 * torch.randn(a.global_len, tower.width)).requires_grad_()
    Gc = (0.02 * torch.randn(a.local, tower.width)).requires_grad_()
    scale = float(w["logit_scale"].exp())
    step(tower, Gs, Gc, names, sot, eot, img, labels, scale)  # warm-up
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        loss = step(tower, Gs, Gc, names, sot, eot, img, labels, scale)
        times.append(time.perf_counter() - t0)
    ms = statistics.median(times) * 1e3
    print(f"pytorch {torch.__version__}, {a.threads} threads, C={a.n_classes}, batch {a.batch}, "
          f"S_s {a.global_len}, S_l {a.local}: step {ms:.1f} ms median of {a.steps} (loss {loss:.4f})")
    print(f"result step_ms={ms:.3f}")


if __name__ == "__main__":
    main()
