#!/usr/bin/python3
"""A host's folder of labelled images as people have them, for the tests of
the folder rule (shared/data/folder_rule.h) in the CLI, the demo shards and
the page: 20 image files in three class folders, most nested below them,
of which 17 decode (grey, colour, a black drawing on a transparent ground,
JPEG and PNG, odd sizes) and 3 do not (a truncated PNG, an empty JPEG, an
SVG); hidden files and a hidden folder; files that are not images.

    messy_folder.py OUT      writes the tree into OUT (made anew) and prints
                             what a reader of it must find, as JSON:
                             {"images": {class: count}, "bad": [paths],
                              "hidden": [paths], "not_images": [paths]}
"""
import io
import json
import os
import shutil
import sys

from PIL import Image, ImageDraw


def drawing(size, colour, mode="RGB", ground=None):
    """A disc of colour on a ground (white, or transparent for RGBA)."""
    ground = ground if ground is not None else ((0, 0, 0, 0) if mode == "RGBA" else "white")
    image = Image.new(mode, size, ground)
    w, h = size
    ImageDraw.Draw(image).ellipse((w // 5, h // 5, 4 * w // 5, 4 * h // 5), fill=colour)
    return image


def main(out):
    shutil.rmtree(out, ignore_errors=True)
    good = {
        "animals/cat.jpg": drawing((64, 48), (200, 120, 40)),
        "animals/dog.png": drawing((50, 50), (0, 0, 0, 255), "RGBA"),  # black on transparent
        "animals/bugs/ant0.png": drawing((33, 41), (90, 30, 10)),
        "animals/bugs/ant1.png": drawing((40, 40), 60, "L"),
        "animals/bugs/ant2.png": drawing((29, 57), (120, 60, 20, 200), "RGBA"),
        "animals/birds/deep/eagle.jpg": drawing((80, 60), (110, 80, 50)),
        "animals/birds/owl.png": drawing((45, 45), (150, 140, 90)),
        "buildings/house.png": drawing((60, 40), (40, 90, 200)),
        "buildings/tall/tower0.jpg": drawing((30, 90), (70, 70, 160)),
        "buildings/tall/tower1.jpg": drawing((32, 88), (80, 80, 170)),
        "buildings/old/church.png": drawing((70, 50), (60, 60, 140), "RGBA", (255, 255, 255, 255)),
        "buildings/barn.png": drawing((48, 36), 90, "L"),
        "plants/fern.png": drawing((40, 60), (30, 160, 40)),
        "plants/trees/oak.jpg": drawing((64, 64), (20, 120, 30)),
        "plants/trees/pine.jpg": drawing((50, 70), (10, 100, 50)),
        "plants/flowers/rose.png": drawing((44, 44), (200, 30, 60, 255), "RGBA"),
        "plants/flowers/tulip.png": drawing((36, 52), (220, 60, 120)),
    }
    for path, image in good.items():
        full = os.path.join(out, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        image.save(full)
    buffer = io.BytesIO()
    drawing((60, 60), (40, 90, 200)).save(buffer, "PNG")
    bad = {
        "buildings/tall/broken.png": buffer.getvalue()[: len(buffer.getvalue()) // 2],  # truncated
        "animals/empty.jpg": b"",
        "plants/logo.svg": b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>\n',
    }
    hidden = {
        ".DS_Store": b"\0\0\0\1Bud1",
        "animals/._cat.jpg": b"\0\5\26\7",  # macOS's AppleDouble file beside cat.jpg
        "plants/.thumbnails/fern.png": None,  # a hidden folder, named once
    }
    not_images = {"notes.txt": b"where these came from\n", "buildings/README.md": b"# buildings\n"}
    for path, data in {**bad, **hidden, **not_images}.items():
        full = os.path.join(out, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if data is None:
            drawing((20, 20), (1, 2, 3)).save(full)
        else:
            open(full, "wb").write(data)
    images = {}
    for path in good:
        images[path.split("/")[0]] = images.get(path.split("/")[0], 0) + 1
    print(json.dumps({"images": images, "bad": sorted(bad), "hidden": sorted(hidden),
                      "not_images": sorted(not_images)}))


if __name__ == "__main__":
    main(sys.argv[1])
