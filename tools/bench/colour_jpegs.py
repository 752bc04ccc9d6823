#!/usr/bin/python3
"""Turns every other image of an ImageFolder of grey PNGs (what
tools/fmnist_to_folder.py writes) into a colour JPEG of another size, in
place, so that a benchmark decodes what a host's own folder holds: in each
class folder, of its images in name order, image 1, 3, 5, ... becomes
NAME.jpg (NAME.png removed), each side 96..800 pixels (aspect 3:4 to 4:3),
the item resized and coloured on a coloured background with a little noise,
quality 90. Seeded: the same folder gives the same files.

  /usr/bin/python3 tools/bench/colour_jpegs.py DIR [DIR...] [--seed 1]
"""
import argparse
import os
import sys

import numpy as np
from PIL import Image


def to_colour_jpeg(path, rng):
    grey = Image.open(path).convert("L")
    width = int(rng.integers(96, 801))
    height = int(np.clip(width * rng.uniform(0.75, 4 / 3), 96, 800))
    item = np.asarray(grey.resize((width, height), Image.BILINEAR), dtype=np.float32)[..., None] / 255
    fore, back = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
    noise = rng.normal(0, 6, (height, width, 3))
    rgb = np.clip(item * fore + (1 - item) * back + noise, 0, 255).astype(np.uint8)
    Image.fromarray(rgb, mode="RGB").save(os.path.splitext(path)[0] + ".jpg", quality=90)
    os.remove(path)
    return width * height


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", metavar="DIR")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    done, pixels = 0, 0
    for top in a.dirs:
        for cls in sorted(os.listdir(top)):
            folder = os.path.join(top, cls)
            if not os.path.isdir(folder):
                continue
            pngs = sorted(f for f in os.listdir(folder) if f.lower().endswith(".png"))
            for name in pngs[1::2]:
                pixels += to_colour_jpeg(os.path.join(folder, name), rng)
                done += 1
    mean = pixels / done if done else 0
    print(f"colour JPEGs: {done}, mean {mean / 1e3:.0f} k pixels", file=sys.stderr)


if __name__ == "__main__":
    main()
