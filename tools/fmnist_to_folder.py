#!/usr/bin/python3
"""Writes the Fashion-MNIST images the federation uses as a folder dataset in
the ImageFolder layout (one sub-folder per class, grey PNGs), so that a task
with {"train": OUT/train, "test": OUT/test} sees the same images, in the same
order (files named by their index in the IDX files), as "fashion-mnist":
training images 30000..59999 and the whole test set. Class folders are the
class names with "/" and " " written as "_" ("T-shirt_top", "Ankle_boot").

  /usr/bin/python3 tools/fmnist_to_folder.py --out DIR [--data /usr/share/datasets/fashion-mnist]
      [--classes "Trouser,Bag,..."] [--per-class N] [--mixed]

--classes keeps only those classes, --per-class the first N images of each
class in each split: a small dataset for tests. --mixed writes what a host's
own folder looks like instead: colour images of mixed sizes (each one tinted
and enlarged by an amount its index picks, 28 to 76 pixels a side, not
square), every other one a JPEG, the rest PNGs.
"""
import argparse
import gzip
import os
import sys

import numpy as np
from PIL import Image

CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
POOL_FIRST = 30000  # the training images before it trained the default model


def read_idx(path, dims):
    with gzip.open(path, "rb") as f:
        data = f.read()
    return np.frombuffer(data, dtype=np.uint8, offset=8 + 4 * (dims - 1))


def folder_of(c):
    return CLASSES[c].replace("/", "_").replace(" ", "_")


def save(image, path, i, mixed):
    if not mixed:
        Image.fromarray(image, mode="L").save(path + ".png")
        return
    tint = np.array([(97 * i) % 256, (57 * i + 80) % 256, (31 * i + 160) % 256], dtype=np.float32) / 255
    rgb = (image[:, :, None].astype(np.float32) * (0.5 + 0.5 * tint)).round().astype(np.uint8)
    size = (28 + 12 * (i % 5), 28 + 8 * (i % 7))
    picture = Image.fromarray(rgb, mode="RGB").resize(size, Image.BILINEAR)
    if i % 2:
        picture.save(path + ".jpg", quality=90)
    else:
        picture.save(path + ".png")


def write_split(out, images, labels, first, name, keep, per_class, mixed):
    for c in keep:
        os.makedirs(os.path.join(out, name, folder_of(c)), exist_ok=True)
    n, written, count = len(labels), 0, {c: 0 for c in keep}
    for i in range(first, n):
        c = int(labels[i])
        if c not in count or (per_class and count[c] >= per_class):
            continue
        count[c] += 1
        save(images[i], os.path.join(out, name, folder_of(c), f"{i:05d}"), i, mixed)
        written += 1
        if written % 5000 == 0:
            print(f"\r{name}: {written} images", end="", file=sys.stderr, flush=True)
    print(f"\r{name}: {written} images", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--classes", help="comma-separated class names to keep (all)")
    p.add_argument("--per-class", type=int, default=0, help="the first N images of each class per split (all)")
    p.add_argument("--mixed", action="store_true", help="colour JPEGs and PNGs of mixed sizes (grey PNGs)")
    a = p.parse_args()
    keep = list(range(len(CLASSES)))
    if a.classes:
        names = [c.strip() for c in a.classes.split(",")]
        unknown = [c for c in names if c not in CLASSES]
        if unknown:
            sys.exit(f"fmnist_to_folder: not Fashion-MNIST classes: {', '.join(unknown)} (they are: {', '.join(CLASSES)})")
        keep = [CLASSES.index(c) for c in names]
    for split, prefix, first in (("train", "train", POOL_FIRST), ("test", "t10k", 0)):
        images = read_idx(os.path.join(a.data, f"{prefix}-images-idx3-ubyte.gz"), 3).reshape(-1, 28, 28)
        labels = read_idx(os.path.join(a.data, f"{prefix}-labels-idx1-ubyte.gz"), 1)
        write_split(a.out, images, labels, first, split, keep, a.per_class, a.mixed)


if __name__ == "__main__":
    main()
