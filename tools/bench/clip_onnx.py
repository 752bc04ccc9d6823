#!/usr/bin/python3
"""Exports a GGUF CLIP model (the file sdfed runs) to ONNX for make bench's
peers (ONNX Runtime in Chromium and natively), from the very same weights.

The towers are written here in PyTorch from the GGUF tensors, as the C core
computes them (shared/clip/): pre-LN residual blocks with fused q, k, v rows,
QuickGELU or GELU as the file says, the causal mask in the text tower, the
image feature ln_post(class token) @ proj, the text feature ln_final(x at
the largest id, CLIP's EOT) @ proj; both L2-normalised, as sdfed's features.
Q8_0 and F16 matrices are turned into f32 first (exactly: a Q8_0 value is
d * q). The patch embedding is a MatMul over the flattened patches (channel,
row, column, as the C core cuts them) rather than a Conv, so that the int8
rewrite quantises it as well.

int8: no onnxruntime quantiser is packaged for Python here, so the f32 graph
is rewritten the way onnxruntime.quantization.quantize_dynamic does by
default: every MatMul whose B is a constant 2-D weight becomes
DynamicQuantizeLinear(A) (uint8, per tensor, at run time) -> MatMulInteger
with the weight as int8, symmetric, one scale per weight tensor (zero point
0) -> Cast to float -> Mul by a_scale * w_scale. MatMuls between
activations (attention) and the token embedding stay f32, as in ORT's
default.

Writes into OUT_DIR: image.f32.onnx, image.int8.onnx, text.f32.onnx,
text.int8.onnx, and config.json (image size, mean, std, embed dim, context
length). With --check-images N also check.rgb (N random RGB images of the
model's input size, uint8, N x S x S x 3) and check.pixels (the same as
CLIP's normalised f32 NCHW input). With --safetensors PATH --merges PATH
also the weights as f32 safetensors under OpenAI names plus the tokenizer's
merges, from which `sdfed convert --type f32` makes the f32 GGUF of exactly
these weights.

  /usr/bin/python3 tools/bench/clip_onnx.py --gguf M.gguf --out-dir DIR
      [--check-images 4] [--safetensors M.f32.safetensors --merges M.merges.txt]
"""
import argparse
import json
import math
import mmap
import os
import struct
import warnings

import numpy as np
import torch
import torch.nn.functional as F

try:  # make bench-deps installs it (Debian's python3-onnx); --help and the GGUF reader do without
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ModuleNotFoundError:
    onnx = None

GGUF_F32, GGUF_F16, GGUF_Q8_0 = 0, 1, 8


class GGUF:
    """A GGUF v3 file: metadata (self.meta) and, with_tensors, the tensors as f32 numpy arrays (outermost
    dimension first)."""

    SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}

    def __init__(self, path, with_tensors=True):
        with open(path, "rb") as f:
            self.data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self.pos = 0
        if self.data[:4] != b"GGUF":
            raise SystemExit(f"{path}: not a GGUF file")
        self.pos = 4
        version, n_tensors, n_kv = self.read("<I"), self.read("<Q"), self.read("<Q")
        if version != 3:
            raise SystemExit(f"{path}: GGUF version {version}, expected 3")
        self.meta = {}
        for _ in range(n_kv):
            key = self.string()
            self.meta[key] = self.value(self.read("<I"))
        infos = []
        for _ in range(n_tensors):
            name = self.string()
            dims = [self.read("<Q") for _ in range(self.read("<I"))]
            infos.append((name, dims, self.read("<I"), self.read("<Q")))
        align = self.meta.get("general.alignment", 32)
        base = (self.pos + align - 1) // align * align
        self.tensors = {name: self.tensor(base + offset, dims, kind, name) for name, dims, kind, offset in infos
                        if with_tensors}

    def read(self, fmt):
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.read("<Q")
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def value(self, kind):
        if kind == 8:
            return self.string()
        if kind == 9:
            inner, n = self.read("<I"), self.read("<Q")
            return [self.value(inner) for _ in range(n)]
        return self.read(self.SCALARS[kind])

    def tensor(self, at, dims, kind, name):
        n = int(np.prod(dims))
        shape = list(reversed(dims))  # ggml lists the innermost dimension first
        if kind == GGUF_F32:
            values = np.frombuffer(self.data, "<f4", n, at)
        elif kind == GGUF_F16:
            values = np.frombuffer(self.data, "<f2", n, at).astype(np.float32)
        elif kind == GGUF_Q8_0:
            blocks = np.frombuffer(self.data, np.dtype([("d", "<f2"), ("q", "i1", 32)]), n // 32, at)
            values = (blocks["d"].astype(np.float32)[:, None] * blocks["q"].astype(np.float32)).reshape(-1)
        else:
            raise SystemExit(f"tensor {name}: GGUF type {kind} is not F32, F16 or Q8_0")
        return np.array(values, dtype=np.float32).reshape(shape)


class Tower(torch.nn.Module):
    """The residual blocks of one tower, as shared/clip/transformer.c computes them."""

    def __init__(self, g, prefix, layers, width, heads, activation, eps):
        super().__init__()
        self.width, self.heads, self.activation, self.eps = width, heads, activation, eps
        t = lambda name: torch.from_numpy(g.tensors[name])  # noqa: E731 (a local shorthand)
        self.blocks = []
        for i in range(layers):
            p = f"{prefix}.blk.{i}."
            # weights stored transposed (inputs, outputs): x @ w is the MatMul the int8 rewrite finds
            self.blocks.append({k: t(p + k + ".weight").T.contiguous() if k.startswith(("attn", "mlp")) else
                                t(p + k + ".weight") for k in ("ln1", "attn_qkv", "attn_out", "ln2", "mlp_fc",
                                                               "mlp_proj")})
            self.blocks[-1].update({k + "_b": t(p + k + ".bias") for k in ("ln1", "attn_qkv", "attn_out", "ln2",
                                                                           "mlp_fc", "mlp_proj")})

    def act(self, x):
        if self.activation == "quick_gelu":
            return x * torch.sigmoid(1.702 * x)
        return F.gelu(x)

    def forward(self, x, mask):
        n, L, _ = x.shape
        C, H = self.width, self.heads
        for b in self.blocks:
            h = F.layer_norm(x, (C,), b["ln1"], b["ln1_b"], self.eps)
            qkv = h @ b["attn_qkv"] + b["attn_qkv_b"]
            q, k, v = qkv.reshape(n, L, 3, H, C // H).permute(2, 0, 3, 1, 4)
            att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(C // H))
            if mask is not None:
                att = att + mask
            o = (att.softmax(-1) @ v).transpose(1, 2).reshape(n, L, C)
            x = x + (o @ b["attn_out"] + b["attn_out_b"])
            h = F.layer_norm(x, (C,), b["ln2"], b["ln2_b"], self.eps)
            x = x + (self.act(h @ b["mlp_fc"] + b["mlp_fc_b"]) @ b["mlp_proj"] + b["mlp_proj_b"])
        return x


class ImageEncoder(torch.nn.Module):
    """pixels (n, 3, S, S), CLIP-normalised -> unit-length image features (n, E)."""

    def __init__(self, g):
        super().__init__()
        m, t = g.meta, lambda name: torch.from_numpy(g.tensors[name])  # noqa: E731
        self.S, self.P, self.W = m["clip.vision.image_size"], m["clip.vision.patch_size"], m["clip.vision.width"]
        self.eps = m["clip.layer_norm_epsilon"]
        self.patch = t("vision.patch_embd.weight").T.contiguous()  # (3 P P, W)
        self.cls, self.pos = t("vision.class_embd"), t("vision.pos_embd")
        self.ln_pre, self.ln_pre_b = t("vision.ln_pre.weight"), t("vision.ln_pre.bias")
        self.ln_post, self.ln_post_b = t("vision.ln_post.weight"), t("vision.ln_post.bias")
        self.proj = t("vision.proj.weight").T.contiguous()  # (W, E)
        self.tower = Tower(g, "vision", m["clip.vision.layers"], self.W, m["clip.vision.heads"],
                           m["clip.activation"], self.eps)

    def forward(self, pixels):
        n, S, P, W = pixels.shape[0], self.S, self.P, self.W
        G = S // P
        patches = pixels.reshape(n, 3, G, P, G, P).permute(0, 2, 4, 1, 3, 5).reshape(n, G * G, 3 * P * P)
        x = torch.cat([self.cls.expand(n, 1, W), patches @ self.patch], 1) + self.pos
        x = F.layer_norm(x, (W,), self.ln_pre, self.ln_pre_b, self.eps)
        x = self.tower(x, None)
        f = F.layer_norm(x[:, 0], (W,), self.ln_post, self.ln_post_b, self.eps) @ self.proj
        return f / f.norm(dim=-1, keepdim=True)


class TextEncoder(torch.nn.Module):
    """token ids (n, context length), int64, SOT ... EOT zero-padded -> unit-length text features (n, E)."""

    def __init__(self, g):
        super().__init__()
        m, t = g.meta, lambda name: torch.from_numpy(g.tensors[name])  # noqa: E731
        self.W, self.L, self.eps = m["clip.text.width"], m["clip.context_length"], m["clip.layer_norm_epsilon"]
        self.embd, self.pos = t("text.token_embd.weight"), t("text.pos_embd")
        self.ln_final, self.ln_final_b = t("text.ln_final.weight"), t("text.ln_final.bias")
        self.proj = t("text.proj.weight").T.contiguous()
        self.mask = torch.full((self.L, self.L), float("-inf")).triu(1)
        self.tower = Tower(g, "text", m["clip.text.layers"], self.W, m["clip.text.heads"], m["clip.activation"],
                           self.eps)

    def forward(self, ids):
        x = self.tower(self.embd[ids] + self.pos, self.mask)
        eot = x[torch.arange(ids.shape[0]), ids.argmax(-1)]
        f = F.layer_norm(eot, (self.W,), self.ln_final, self.ln_final_b, self.eps) @ self.proj
        return f / f.norm(dim=-1, keepdim=True)


def export(module, example, input_name, path):
    torch.onnx.export(module, (example,), path, input_names=[input_name], output_names=["features"],
                      dynamic_axes={input_name: {0: "n"}, "features": {0: "n"}}, opset_version=17,
                      do_constant_folding=True)


def quantize_int8(src, dst):
    """The dynamic int8 rewrite described in the module docstring; returns how many MatMuls it quantised."""
    model = onnx.load(src)
    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    # torch may route a weight through a Constant node instead of an initializer
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute[0].name == "value":
            weights[node.output[0]] = node.attribute[0].t
    nodes, added, done = [], [], 0
    for node in graph.node:
        w = weights.get(node.input[1]) if node.op_type == "MatMul" else None
        if w is None or len(w.dims) != 2:
            nodes.append(node)
            continue
        values = numpy_helper.to_array(w).astype(np.float32)
        scale = np.float32(max(np.abs(values).max(), 1e-30) / 127.0)
        q = np.clip(np.rint(values / scale), -127, 127).astype(np.int8)
        a, y, base = node.input[0], node.output[0], f"q{done}_{node.name or y}"
        added += [numpy_helper.from_array(q, base + ".w_int8"),
                  numpy_helper.from_array(np.array(scale, np.float32), base + ".w_scale"),
                  numpy_helper.from_array(np.array(0, np.int8), base + ".w_zero")]
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [a], [base + ".a", base + ".a_scale", base + ".a_zero"],
                             base + ".quantize"),
            helper.make_node("MatMulInteger", [base + ".a", base + ".w_int8", base + ".a_zero", base + ".w_zero"],
                             [base + ".y_int32"], base + ".matmul"),
            helper.make_node("Cast", [base + ".y_int32"], [base + ".y_float"], base + ".cast", to=TensorProto.FLOAT),
            helper.make_node("Mul", [base + ".a_scale", base + ".w_scale"], [base + ".scale"], base + ".scales"),
            helper.make_node("Mul", [base + ".y_float", base + ".scale"], [y], base + ".rescale"),
        ]
        done += 1
    del graph.node[:]
    graph.node.extend(nodes)
    used = {i for n in graph.node for i in n.input}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept + added)
    # drop Constant nodes whose weight moved into an int8 initializer
    live = [n for n in graph.node if n.op_type != "Constant" or n.output[0] in used]
    del graph.node[:]
    graph.node.extend(live)
    onnx.checker.check_model(model)
    onnx.save(model, dst)
    return done


def write_checkpoint(g, path, merges_path):
    """The weights as f32 safetensors under OpenAI names, and the merges, for `sdfed convert`."""
    m, t = g.meta, g.tensors
    out = {"token_embedding.weight": t["text.token_embd.weight"], "positional_embedding": t["text.pos_embd"],
           "ln_final.weight": t["text.ln_final.weight"], "ln_final.bias": t["text.ln_final.bias"],
           "text_projection": t["text.proj.weight"].T, "visual.class_embedding": t["vision.class_embd"],
           "visual.positional_embedding": t["vision.pos_embd"], "visual.proj": t["vision.proj.weight"].T,
           "visual.ln_pre.weight": t["vision.ln_pre.weight"], "visual.ln_pre.bias": t["vision.ln_pre.bias"],
           "visual.ln_post.weight": t["vision.ln_post.weight"], "visual.ln_post.bias": t["vision.ln_post.bias"],
           "logit_scale": t["logit_scale"].reshape(()),
           "visual.conv1.weight": t["vision.patch_embd.weight"].reshape(
               m["clip.vision.width"], 3, m["clip.vision.patch_size"], m["clip.vision.patch_size"])}
    names = {"ln1": "ln_1", "ln2": "ln_2", "attn_qkv": "attn.in_proj", "attn_out": "attn.out_proj",
             "mlp_fc": "mlp.c_fc", "mlp_proj": "mlp.c_proj"}
    for tower, prefix in (("text", "transformer.resblocks"), ("vision", "visual.transformer.resblocks")):
        for i in range(m[f"clip.{tower}.layers"]):
            for ours, theirs in names.items():
                w, b = t[f"{tower}.blk.{i}.{ours}.weight"], t[f"{tower}.blk.{i}.{ours}.bias"]
                if ours == "attn_qkv":
                    out[f"{prefix}.{i}.attn.in_proj_weight"], out[f"{prefix}.{i}.attn.in_proj_bias"] = w, b
                else:
                    out[f"{prefix}.{i}.{theirs}.weight"], out[f"{prefix}.{i}.{theirs}.bias"] = w, b
    header, offset, blobs = {}, 0, []
    for name, v in out.items():
        blob = np.ascontiguousarray(v, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(np.shape(v)), "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    head = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))
    with open(merges_path, "w", encoding="utf-8") as f:
        f.write("#version: 0.2 (the merges of a GGUF model, written by tools/bench/clip_onnx.py)\n")
        f.write("".join(merge + "\n" for merge in m["tokenizer.ggml.merges"]))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gguf", required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--check-images", type=int, default=0)
    p.add_argument("--safetensors")
    p.add_argument("--merges")
    a = p.parse_args()
    if bool(a.safetensors) != bool(a.merges):
        p.error("--safetensors and --merges go together")
    if onnx is None:
        raise SystemExit("clip_onnx.py: writing ONNX needs Python's onnx module: make bench-deps (Debian's python3-onnx)")
    g = GGUF(a.gguf)
    if g.meta.get("general.architecture") != "clip":
        raise SystemExit(f"{a.gguf}: not a CLIP model (general.architecture is not 'clip')")
    os.makedirs(a.out_dir, exist_ok=True)
    torch.set_grad_enabled(False)
    warnings.filterwarnings("ignore")  # the tracer's notes on shapes taken as constants (the batch is dynamic)
    image, text = ImageEncoder(g), TextEncoder(g)
    S, L = image.S, text.L
    mean, std = g.meta["clip.vision.image_mean"], g.meta["clip.vision.image_std"]
    export(image, torch.zeros(1, 3, S, S), "pixels", os.path.join(a.out_dir, "image.f32.onnx"))
    ids = torch.zeros(1, L, dtype=torch.int64)
    ids[0, :3] = torch.tensor([len(g.meta["tokenizer.ggml.tokens"]) - 2, 1, len(g.meta["tokenizer.ggml.tokens"]) - 1])
    export(text, ids, "ids", os.path.join(a.out_dir, "text.f32.onnx"))
    quantised = {tower: quantize_int8(os.path.join(a.out_dir, f"{tower}.f32.onnx"),
                                      os.path.join(a.out_dir, f"{tower}.int8.onnx")) for tower in ("image", "text")}
    config = {"image_size": S, "image_mean": mean, "image_std": std, "embed_dim": g.meta["clip.embed_dim"],
              "context_length": L, "int8_matmuls": quantised}
    with open(os.path.join(a.out_dir, "config.json"), "w") as f:
        json.dump(config, f)
    if a.check_images:
        rng = np.random.default_rng(7)
        rgb = rng.integers(0, 256, (a.check_images, S, S, 3), dtype=np.uint8)
        pixels = (rgb.astype(np.float32) / np.float32(255) - np.array(mean, np.float32)) / np.array(std, np.float32)
        rgb.tofile(os.path.join(a.out_dir, "check.rgb"))
        np.ascontiguousarray(pixels.transpose(0, 3, 1, 2), dtype="<f4").tofile(os.path.join(a.out_dir, "check.pixels"))
        # torch's own answer, a third opinion when ORT and sdfed disagree
        np.savetxt(os.path.join(a.out_dir, "check.torch.txt"),
                   image(torch.from_numpy(pixels.transpose(0, 3, 1, 2).copy())).numpy(), fmt="%.7g")
    if a.safetensors:
        write_checkpoint(g, a.safetensors, a.merges)
    print(f"clip_onnx: {a.gguf} -> {a.out_dir} (image {S} x {S}, int8 MatMuls: image {quantised['image']}, "
          f"text {quantised['text']})")


if __name__ == "__main__":
    main()
