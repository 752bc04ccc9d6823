#!/usr/bin/python3
"""Expected outputs for the image tests, computed with PIL, numpy and torch.

    image_oracle.py preprocess OUTDIR   -> cases for tests/oracle/test_preprocess.c
    image_oracle.py decode OUTDIR       -> fixtures for tests/oracle/test_image_decode.c

Run by ctest as a fixture before the C tests, so nothing generated is
committed. Needs /usr/bin/python3 with numpy, PIL (9.4) and torch; torchvision
is not needed: its Resize / CenterCrop / ToTensor / Normalize are restated
below in the few lines they amount to for a PIL image.

preprocess: OUTDIR/cases.txt has one line per case,
    name width height channels stride size mean0 mean1 mean2 std0 std1 std2
and OUTDIR/name.in (height rows of `stride` bytes; padding bytes are random),
name.rgb (the resized and cropped uint8 image, size*size*3) and name.f32
(the normalised tensor, 3*size*size little-endian float32).

decode: OUTDIR/cases.txt has one line per file,
    good name file width height     (expected pixels in name.rgb, RGB)
    bad  name file                  (decoding must fail)
"""
import io
import os
import struct
import sys
import warnings
import zlib

import numpy as np
import torch
from PIL import Image

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


# ---- CLIP's _transform(n_px), as torchvision computes it on a PIL image ----

def clip_resize(img, n_px):
    """torchvision Resize(n_px, BICUBIC): short side -> n_px."""
    w, h = img.size
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = n_px, int(n_px * long / short)
    new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    if (new_w, new_h) == (w, h):
        return img
    return img.resize((new_w, new_h), Image.BICUBIC)


def clip_center_crop(img, n_px):
    """torchvision CenterCrop(n_px) (the image is never smaller here)."""
    w, h = img.size
    top = int(round((h - n_px) / 2.0))
    left = int(round((w - n_px) / 2.0))
    return img.crop((left, top, left + n_px, top + n_px))


def clip_to_tensor_normalize(img, mean, std):
    """ToTensor then Normalize, in float32 like torchvision."""
    arr = np.array(img, dtype=np.uint8, copy=True)
    t = torch.from_numpy(arr).permute(2, 0, 1).contiguous().to(torch.float32).div(255)
    m = torch.as_tensor(mean, dtype=torch.float32)[:, None, None]
    s = torch.as_tensor(std, dtype=torch.float32)[:, None, None]
    return t.sub_(m).div_(s)


def clip_transform(img, n_px, mean, std):
    crop = clip_center_crop(clip_resize(img, n_px), n_px).convert("RGB")
    return np.array(crop, dtype=np.uint8), clip_to_tensor_normalize(crop, mean, std).numpy()


# ---- preprocess cases ----

def make_pixels(rng, w, h, c, kind):
    if kind == "noise":
        return rng.integers(0, 256, size=(h, w, c), dtype=np.uint8)
    # a smooth picture: gradients plus a few blobs, plus a little noise
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    out = np.empty((h, w, c), dtype=np.float64)
    for ch in range(c):
        fx, fy, ph = rng.uniform(0.5, 4.0), rng.uniform(0.5, 4.0), rng.uniform(0, 6.28)
        out[..., ch] = 128 + 100 * np.sin(fx * 6.28 * xx / max(w, 1) + ph) * np.cos(fy * 6.28 * yy / max(h, 1))
    out += rng.normal(0, 6, size=out.shape)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def to_pil_rgb(px):
    c = px.shape[2]
    if c == 1:
        return Image.fromarray(px[..., 0], "L")  # resized as L, convert("RGB") replicates
    if c == 3:
        return Image.fromarray(px, "RGB")
    # RGBA with alpha ignored: what the C code promises (see image_preprocess.h)
    return Image.fromarray(px, "RGBA").convert("RGB")


PREPROCESS_CASES = [
    # name, width, height, channels, size, kind, row padding, mean/std
    ("px1x1_rgb", 1, 1, 3, 64, "noise", 0, "clip"),
    ("px1x1_rgba_224", 1, 1, 4, 224, "noise", 0, "clip"),
    ("tall7x300_rgb", 7, 300, 3, 64, "noise", 0, "clip"),
    ("wide300x7_rgb", 300, 7, 3, 64, "noise", 0, "clip"),
    ("tall7x300_grey_224", 7, 300, 1, 224, "smooth", 3, "clip"),
    ("sq64_rgb_identity", 64, 64, 3, 64, "noise", 0, "clip"),
    ("w65x64_rgb_crop_only", 65, 64, 3, 64, "noise", 0, "clip"),
    ("w67x64_rgb_crop_only", 67, 64, 3, 64, "noise", 0, "clip"),
    ("h64x69_grey_crop_only", 64, 69, 1, 64, "noise", 0, "clip"),
    ("w200x150_rgb", 200, 150, 3, 64, "smooth", 0, "clip"),
    ("w200x150_rgba", 200, 150, 4, 64, "noise", 5, "clip"),
    ("w200x150_grey", 200, 150, 1, 64, "noise", 0, "clip"),
    ("w500x333_rgb_224", 500, 333, 3, 224, "smooth", 0, "clip"),
    ("w500x333_rgba_224", 500, 333, 4, 224, "noise", 0, "clip"),
    ("w500x333_grey_224", 500, 333, 1, 224, "smooth", 1, "clip"),
    ("sq33_rgb_224_up", 33, 33, 3, 224, "noise", 0, "clip"),
    ("sq33_rgba_64_up", 33, 33, 4, 64, "smooth", 0, "clip"),
    ("sq33_grey_224_up", 33, 33, 1, 224, "noise", 0, "clip"),
    ("w20x13_rgb_224_up", 20, 13, 3, 224, "smooth", 0, "clip"),
    ("w2x3_rgb_5", 2, 3, 3, 5, "noise", 0, "clip"),
    ("w224x300_rgb_vertical_only", 224, 300, 3, 224, "noise", 0, "clip"),
    ("w301x224_rgb_horizontal_only", 301, 224, 3, 224, "noise", 0, "clip"),
    ("w640x480_rgb_224_padded", 640, 480, 3, 224, "smooth", 7, "clip"),
    ("w37x1000_rgba_64_padded", 37, 1000, 4, 64, "noise", 12, "clip"),
    ("w1200x900_rgb_64", 1200, 900, 3, 64, "smooth", 0, "clip"),
    ("w1200x5_rgb_3_down", 1200, 5, 3, 3, "noise", 0, "clip"),
    ("w150x200_rgb_half", 150, 200, 3, 64, "smooth", 0, "half"),
]


def write_preprocess(outdir):
    rng = np.random.default_rng(20240601)
    lines = []
    for name, w, h, c, size, kind, pad, norm in PREPROCESS_CASES:
        mean, std = (CLIP_MEAN, CLIP_STD) if norm == "clip" else ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
        mean32 = [float(np.float32(v)) for v in mean]
        std32 = [float(np.float32(v)) for v in std]
        px = make_pixels(rng, w, h, c, kind)
        stride = w * c + pad
        raw = np.empty((h, stride), dtype=np.uint8)
        raw[:, : w * c] = px.reshape(h, w * c)
        raw[:, w * c:] = rng.integers(0, 256, size=(h, pad), dtype=np.uint8)
        rgb, f32 = clip_transform(to_pil_rgb(px), size, mean32, std32)
        assert rgb.shape == (size, size, 3) and f32.shape == (3, size, size)
        raw.tofile(os.path.join(outdir, name + ".in"))
        rgb.tofile(os.path.join(outdir, name + ".rgb"))
        f32.astype("<f4").tofile(os.path.join(outdir, name + ".f32"))
        lines.append("%s %d %d %d %d %d %s %s" % (name, w, h, c, stride, size,
                     " ".join("%.9g" % v for v in mean32), " ".join("%.9g" % v for v in std32)))
    with open(os.path.join(outdir, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


# ---- decode fixtures ----

def png_chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def pack_rows(samples, depth):
    """samples: (h, n) integers of `depth` bits -> PNG scanlines, filter 0."""
    h = samples.shape[0]
    rows = []
    for y in range(h):
        s = samples[y]
        if depth == 16:
            b = s.astype(">u2").tobytes()
        elif depth == 8:
            b = s.astype(np.uint8).tobytes()
        else:
            per = 8 // depth
            n = len(s)
            padded = np.zeros(((n + per - 1) // per) * per, dtype=np.uint16)
            padded[:n] = s
            padded = padded.reshape(-1, per)
            byte = np.zeros(padded.shape[0], dtype=np.uint16)
            for i in range(per):
                byte |= padded[:, i] << (8 - depth * (i + 1))
            b = byte.astype(np.uint8).tobytes()
        rows.append(b"\x00" + b)
    return b"".join(rows)


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def write_png(path, samples, color_type, depth, interlace=False, palette=None, trns=None):
    """samples: (h, w, c) integers. A minimal PNG writer, so that we can make
    what PIL cannot save (16-bit colour, 2-bit grey, interlacing)."""
    h, w, c = samples.shape
    if interlace:
        idat = b""
        for x0, y0, dx, dy in ADAM7:
            sub = samples[y0::dy, x0::dx]
            if sub.size:
                idat += pack_rows(sub.reshape(sub.shape[0], -1), depth)
    else:
        idat = pack_rows(samples.reshape(h, -1), depth)
    out = b"\x89PNG\r\n\x1a\n"
    out += png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, 1 if interlace else 0))
    if palette is not None:
        out += png_chunk(b"PLTE", palette.astype(np.uint8).tobytes())
    if trns is not None:
        out += png_chunk(b"tRNS", trns)
    out += png_chunk(b"IDAT", zlib.compress(idat, 9))
    out += png_chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(out)


def write_decode(outdir):
    rng = np.random.default_rng(7)
    good, bad = [], []
    d = lambda f: os.path.join(outdir, f)

    def pil_save(name, img, **kw):
        img.save(d(name), **kw)
        good.append(name)

    rgb = rng.integers(0, 256, size=(23, 31, 3), dtype=np.uint8)
    rgba = rng.integers(0, 256, size=(17, 12, 4), dtype=np.uint8)
    grey = rng.integers(0, 256, size=(19, 26), dtype=np.uint8)
    smooth = make_pixels(rng, 45, 38, 3, "smooth")

    pil_save("rgb.png", Image.fromarray(rgb, "RGB"))
    pil_save("rgba.png", Image.fromarray(rgba, "RGBA"))
    pil_save("grey.png", Image.fromarray(grey, "L"))
    pil_save("grey_alpha.png", Image.fromarray(rgba[..., :2], "LA"))
    pil_save("bilevel.png", Image.fromarray(grey > 127).convert("1"))
    pal = Image.fromarray(smooth, "RGB").quantize(colors=200)
    pil_save("palette.png", pal)
    pil_save("palette_trns.png", pal, transparency=3)
    pil_save("palette_4bit.png", Image.fromarray(smooth, "RGB").quantize(colors=13), bits=4)

    write_png(d("rgb16.png"), rng.integers(0, 65536, size=(9, 14, 3)), 2, 16); good.append("rgb16.png")
    write_png(d("rgba16.png"), rng.integers(0, 65536, size=(9, 14, 4)), 6, 16); good.append("rgba16.png")
    write_png(d("grey_alpha16.png"), rng.integers(0, 65536, size=(8, 5, 2)), 4, 16); good.append("grey_alpha16.png")
    write_png(d("grey2.png"), rng.integers(0, 4, size=(7, 13, 1)), 0, 2); good.append("grey2.png")
    write_png(d("grey4_interlaced.png"), rng.integers(0, 16, size=(11, 9, 1)), 0, 4, interlace=True)
    good.append("grey4_interlaced.png")
    write_png(d("rgb_interlaced.png"), rng.integers(0, 256, size=(21, 19, 3)), 2, 8, interlace=True)
    good.append("rgb_interlaced.png")
    write_png(d("rgba16_interlaced.png"), rng.integers(0, 65536, size=(10, 7, 4)), 6, 16, interlace=True)
    good.append("rgba16_interlaced.png")
    plte = rng.integers(0, 256, size=(6, 3))
    write_png(d("palette2_interlaced.png"), rng.integers(0, 4, size=(13, 17, 1)), 3, 2, interlace=True,
              palette=plte, trns=bytes([0, 128]))
    good.append("palette2_interlaced.png")
    write_png(d("rgb_trns.png"), rng.integers(0, 256, size=(5, 6, 3)), 2, 8, trns=b"\x00\x01\x00\x02\x00\x03")
    good.append("rgb_trns.png")
    # 16-bit grey: PIL saturates (mode "I"); the expected pixels are the high bytes
    grey16 = rng.integers(0, 65536, size=(6, 10, 1))
    write_png(d("grey16.png"), grey16, 0, 16)

    pil_save("colour.jpg", Image.fromarray(smooth, "RGB"), quality=90)
    pil_save("colour444.jpg", Image.fromarray(smooth, "RGB"), quality=95, subsampling=0)
    pil_save("colour_progressive.jpg", Image.fromarray(rgb, "RGB"), quality=75, progressive=True)
    pil_save("grey.jpg", Image.fromarray(grey, "L"), quality=85)
    pil_save("cmyk.jpg", Image.fromarray(rng.integers(0, 256, size=(16, 24, 4), dtype=np.uint8), "CMYK"),
             quality=90)
    # a JPEG named .png and a PNG named .jpg: the magic bytes decide
    pil_save("jpeg_named.png", Image.fromarray(smooth, "RGB"), format="JPEG", quality=80)
    pil_save("png_named.jpg", Image.fromarray(rgb, "RGB"), format="PNG")

    lines = []
    for name in good:
        im = Image.open(d(name))
        arr = np.array(im.convert("RGB"), dtype=np.uint8)
        arr.tofile(d(name + ".rgb"))
        lines.append("good %s %s %d %d" % (name, name, arr.shape[1], arr.shape[0]))
    hi = (grey16[..., 0] >> 8).astype(np.uint8)
    np.repeat(hi[..., None], 3, axis=2).tofile(d("grey16.png.rgb"))
    lines.append("good grey16.png grey16.png %d %d" % (hi.shape[1], hi.shape[0]))

    # broken files: decoding must fail ("pil-accepts" notes the ones PIL would open)
    with open(d("colour.jpg"), "rb") as f:
        jpg = f.read()
    with open(d("rgb.png"), "rb") as f:
        png = f.read()
    broken = {
        "empty.png": b"",
        "text.jpg": b"hello, this is not an image\n",
        "png_magic_only.png": png[:8],
        "png_truncated_header.png": png[:20],
        "png_truncated_data.png": png[: len(png) // 2],
        "png_bad_crc.png": png[:29] + bytes([png[29] ^ 0xFF]) + png[30:],  # IHDR CRC
        "png_bad_zlib.png": png[:41] + b"\xff" * 16 + png[57:],  # inside the IDAT zlib stream
        "jpeg_soi_only.jpg": jpg[:3],
        "jpeg_truncated_header.jpg": jpg[:100],
        "jpeg_truncated_data.jpg": jpg[: len(jpg) // 2],
        "jpeg_garbage.jpg": jpg[:3] + bytes(rng.integers(0, 256, size=300, dtype=np.uint8)),
    }
    gif = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(gif, format="GIF")
    broken["valid.gif"] = gif.getvalue()  # a good image, but not PNG or JPEG
    for name, data in broken.items():
        with open(d(name), "wb") as f:
            f.write(data)
        try:
            Image.open(d(name)).convert("RGB")
            pil_fails = False
        except Exception:
            pil_fails = True
        lines.append("bad %s %s%s" % (name, name, "" if pil_fails else " pil-accepts"))
    with open(d("cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("preprocess", "decode"):
        sys.exit("usage: image_oracle.py preprocess|decode OUTDIR")
    warnings.simplefilter("ignore")  # PIL's advice about palette transparency
    outdir = sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    if sys.argv[1] == "preprocess":
        write_preprocess(outdir)
    else:
        write_decode(outdir)


if __name__ == "__main__":
    main()
