#!/usr/bin/python3
"""Writes the Fashion-MNIST images the federation uses as a folder dataset in
the ImageFolder layout (one sub-folder per class, grey PNGs), so that a task
with {"train": OUT/train, "test": OUT/test} sees the same images, in the same
order (files named by their index in the IDX files), as "fashion-mnist":
training images 30000..59999 and the whole test set. Class folders are the
class names with "/" and " " written as "_" ("T-shirt_top", "Ankle_boot").

  /usr/bin/python3 tools/fmnist_to_folder.py --out DIR [--data /usr/share/datasets/fashion-mnist]
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


def write_split(out, images, labels, first, name):
    for c in CLASSES:
        os.makedirs(os.path.join(out, name, c.replace("/", "_").replace(" ", "_")), exist_ok=True)
    n = len(labels)
    for i in range(first, n):
        folder = CLASSES[labels[i]].replace("/", "_").replace(" ", "_")
        Image.fromarray(images[i], mode="L").save(os.path.join(out, name, folder, f"{i:05d}.png"))
        if (i - first) % 5000 == 0 or i == n - 1:
            print(f"\r{name}: {i - first + 1}/{n - first} images", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    a = p.parse_args()
    for split, prefix, first in (("train", "train", POOL_FIRST), ("test", "t10k", 0)):
        images = read_idx(os.path.join(a.data, f"{prefix}-images-idx3-ubyte.gz"), 3).reshape(-1, 28, 28)
        labels = read_idx(os.path.join(a.data, f"{prefix}-labels-idx1-ubyte.gz"), 1)
        write_split(a.out, images, labels, first, split)


if __name__ == "__main__":
    main()
