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

decode: OUTDIR/cases.txt has one line per case,
    good name file width height c=C bg=RRGGBB [max=N]
        (file decoded over the background, at most N pixels, gives the
        pixels in name.rgb, RGB, in C channels)
    bad  name file [max=N] [want=TEXT] [pil-accepts]
        (decoding must fail, the message naming the file and holding TEXT)
"""
import io
import os
import struct
import sys
import warnings
import zlib

import numpy as np
import torch
from PIL import Image, ImageOps

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


def composite(rgba, bg):
    """Alpha composited onto bg (r, g, b): shared/clip/image_composite.h's
    integer formula on un-premultiplied RGBA, (h, w, 4) -> (h, w, 3)."""
    c = rgba[..., :3].astype(np.int64)
    a = rgba[..., 3:4].astype(np.int64)
    return ((c * a + np.array(bg, np.int64) * (255 - a) + 127) // 255).astype(np.uint8)


def has_alpha(im):
    return im.mode in ("RGBA", "LA", "PA") or "transparency" in im.info


def seen(path, bg):
    """What the decoder gives for a PNG at full size: RGB pixels (h, w, 3)
    and the channel count it gives them in (1 grey, 3 RGB): grey for a grey
    PNG (colour type 0, or 4 over a grey background; PIL opens 16-bit grey
    with alpha as RGBA)."""
    im = Image.open(path)
    with open(path, "rb") as f:
        colour_type = f.read(26)[25]
    grey = colour_type in (0, 4)
    rgba = np.array(im.convert("RGBA"), dtype=np.uint8)
    if not has_alpha(im):
        assert (rgba[..., 3] == 255).all()
        return np.array(im.convert("RGB"), dtype=np.uint8), 1 if grey else 3
    return composite(rgba, bg), 1 if grey and bg[0] == bg[1] == bg[2] else 3


def reduced(px, f):
    """PIL's Image.reduce(f) of RGB pixels."""
    return px if f == 1 else np.array(Image.fromarray(px, "RGB").reduce(f), dtype=np.uint8)


def factor(w, h, max_pixels):
    """native/image_decode.h's reduction rule."""
    f = 1
    while -(-w // f) * -(-h // f) > max_pixels or -(-w // f) > 16384 or -(-h // f) > 16384:
        f *= 2
    return f


def jpeg_seen(path, max_pixels):
    """A JPEG as the decoder gives it: libjpeg's DCT scaling by s = min(f, 8)
    (PIL's draft), the rest of f by PIL's reduce, then the EXIF orientation
    (ImageOps.exif_transpose, which reads the copied info["exif"])."""
    im = Image.open(path)
    w, h = im.size
    f = factor(w, h, max_pixels)
    s = min(f, 8)
    if s > 1:
        im.draft(im.mode, (w // s, h // s))
        assert im.size == (-(-w // s), -(-h // s)), (path, im.size)
    out = im.convert("RGB")
    if f // s > 1:
        out = out.reduce(f // s)
    out.info = dict(im.info)
    out = ImageOps.exif_transpose(out)
    return np.array(out, dtype=np.uint8), 1 if im.mode == "L" else 3


def exif_segment(orientation, big_endian, other_tags=True):
    """An APP1 payload: "Exif\\0\\0", a TIFF header in either byte order,
    IFD0 with the orientation as one SHORT (after a Make tag pointing at its
    text, so that the tag is not the first entry)."""
    e = ">" if big_endian else "<"
    entries = []
    n = 2 if other_tags else 1
    text_at = 8 + 2 + 12 * n + 4
    if other_tags:
        entries.append(struct.pack(e + "HHII", 0x010F, 2, 6, text_at))
    entries.append(struct.pack(e + "HHI", 0x0112, 3, 1) + struct.pack(e + "H", orientation) + b"\0\0")
    tiff = (b"MM" if big_endian else b"II") + struct.pack(e + "HI", 42, 8) + struct.pack(e + "H", n)
    tiff += b"".join(entries) + struct.pack(e + "I", 0) + (b"Maker\0" if other_tags else b"")
    return b"Exif\0\0" + tiff


WHITE, BLUE, GREY, BLACK = (255, 255, 255), (48, 128, 192), (64, 64, 64), (0, 0, 0)


def write_decode(outdir):
    rng = np.random.default_rng(7)
    d = lambda f: os.path.join(outdir, f)
    lines = []

    def case(name, file, px, channels, bg=WHITE, max_pixels=None):
        """A good case: file decoded over bg (and reduced for max_pixels)
        gives px (h, w, 3) in `channels` channels."""
        px.astype(np.uint8).tofile(d(name + ".rgb"))
        extra = " max=%d" % max_pixels if max_pixels else ""
        lines.append("good %s %s %d %d c=%d bg=%02x%02x%02x%s" % (name, file, px.shape[1], px.shape[0], channels,
                                                                 bg[0], bg[1], bg[2], extra))

    def pil_case(file, bg=WHITE, max_pixels=None, name=None):
        """PIL's pixels of a PNG (composited, reduced) or a JPEG."""
        im = Image.open(d(file))
        if im.format == "JPEG":
            px, channels = jpeg_seen(d(file), max_pixels or (1 << 24))
        else:
            px, channels = seen(d(file), bg)
            px = reduced(px, factor(im.width, im.height, max_pixels or (1 << 24)))
        case(name or file, file, px, channels, bg, max_pixels)

    def pil_save(file, img, **kw):
        img.save(d(file), **kw)
        return file

    rgb = rng.integers(0, 256, size=(23, 31, 3), dtype=np.uint8)
    rgba = rng.integers(0, 256, size=(17, 12, 4), dtype=np.uint8)
    grey = rng.integers(0, 256, size=(19, 26), dtype=np.uint8)
    smooth = make_pixels(rng, 45, 38, 3, "smooth")
    # alpha as clip art has it: opaque, transparent and anti-aliased edges
    art = make_pixels(rng, 50, 31, 4, "smooth")
    art[..., 3] = np.where(art[..., 3] > 150, 255, np.where(art[..., 3] < 100, 0, art[..., 3]))

    full = [
        pil_save("rgb.png", Image.fromarray(rgb, "RGB")),
        pil_save("rgba.png", Image.fromarray(rgba, "RGBA")),
        pil_save("art.png", Image.fromarray(art, "RGBA")),
        pil_save("grey.png", Image.fromarray(grey, "L")),
        pil_save("grey_alpha.png", Image.fromarray(rgba[..., :2], "LA")),
        pil_save("bilevel.png", Image.fromarray(grey > 127).convert("1")),
        pil_save("palette.png", Image.fromarray(smooth, "RGB").quantize(colors=200)),
        pil_save("palette_trns.png", Image.fromarray(smooth, "RGB").quantize(colors=200), transparency=3),
        pil_save("palette_4bit.png", Image.fromarray(smooth, "RGB").quantize(colors=13), bits=4),
    ]
    # an opaque RGBA image: its RGB unchanged
    opaque = rgba.copy()
    opaque[..., 3] = 255
    full.append(pil_save("rgba_opaque.png", Image.fromarray(opaque, "RGBA")))
    # a grey image with a tRNS key (8-bit: PIL honours it)
    grey_trns = grey.copy()
    grey_trns[::3, ::2] = 20
    full.append(pil_save("grey_trns.png", Image.fromarray(grey_trns, "L"), transparency=20))
    for file, samples, color, depth, kw in [
        ("rgb16.png", rng.integers(0, 65536, size=(9, 14, 3)), 2, 16, {}),
        ("rgba16.png", rng.integers(0, 65536, size=(9, 14, 4)), 6, 16, {}),
        ("grey_alpha16.png", rng.integers(0, 65536, size=(8, 5, 2)), 4, 16, {}),
        ("grey2.png", rng.integers(0, 4, size=(7, 13, 1)), 0, 2, {}),
        ("grey4_interlaced.png", rng.integers(0, 16, size=(11, 9, 1)), 0, 4, {"interlace": True}),
        ("rgb_interlaced.png", rng.integers(0, 256, size=(21, 19, 3)), 2, 8, {"interlace": True}),
        ("rgba16_interlaced.png", rng.integers(0, 65536, size=(10, 7, 4)), 6, 16, {"interlace": True}),
        ("palette2_interlaced.png", rng.integers(0, 4, size=(13, 17, 1)), 3, 2,
         {"interlace": True, "palette": rng.integers(0, 256, size=(6, 3)), "trns": bytes([0, 128])}),
        ("rgb_trns.png", rng.integers(0, 256, size=(5, 6, 3)), 2, 8, {"trns": b"\x00\x01\x00\x02\x00\x03"}),
        ("rgba_interlaced.png", art[:29, :45], 6, 8, {"interlace": True}),
        ("rgba_interlaced_3x2.png", rgba[:2, :3], 6, 8, {"interlace": True}),
    ]:
        write_png(d(file), samples, color, depth, **kw)
        full.append(file)
    # an RGB image with a tRNS colour that occurs
    rgb_key = rgb.copy()
    rgb_key[::4, ::3] = (1, 2, 3)
    write_png(d("rgb_trns_hit.png"), rgb_key, 2, 8, trns=b"\x00\x01\x00\x02\x00\x03")
    full.append("rgb_trns_hit.png")

    full += [
        pil_save("colour.jpg", Image.fromarray(smooth, "RGB"), quality=90),
        pil_save("colour444.jpg", Image.fromarray(smooth, "RGB"), quality=95, subsampling=0),
        pil_save("colour_progressive.jpg", Image.fromarray(rgb, "RGB"), quality=75, progressive=True),
        pil_save("grey.jpg", Image.fromarray(grey, "L"), quality=85),
        pil_save("cmyk.jpg", Image.fromarray(rng.integers(0, 256, size=(16, 24, 4), dtype=np.uint8), "CMYK"),
                 quality=90),
        # a JPEG named .png and a PNG named .jpg: the magic bytes decide
        pil_save("jpeg_named.png", Image.fromarray(smooth, "RGB"), format="JPEG", quality=80),
        pil_save("png_named.jpg", Image.fromarray(rgb, "RGB"), format="PNG"),
    ]
    # EXIF orientations 1..8, little- and big-endian (the image is not square:
    # 5..8 swap its sides), and segments that turn nothing
    for o in range(1, 9):
        full.append(pil_save("exif%d.jpg" % o, Image.fromarray(smooth, "RGB"), quality=92,
                             exif=exif_segment(o, big_endian=o % 2 == 0, other_tags=o != 3)))
    pil = Image.Exif()
    pil[0x0112] = 6
    full.append(pil_save("exif6_pil.jpg", Image.fromarray(smooth, "RGB"), quality=92, exif=pil.tobytes()))
    full.append(pil_save("exif9.jpg", Image.fromarray(smooth, "RGB"), quality=92, exif=exif_segment(9, True)))
    full.append(pil_save("exif_truncated.jpg", Image.fromarray(smooth, "RGB"), quality=92,
                         exif=exif_segment(6, False)[:20]))

    for file in full:
        pil_case(file)
        im = Image.open(d(file))
        if has_alpha(im):  # the same files over other backgrounds
            for tag, bg in (("blue", BLUE), ("grey", GREY), ("black", BLACK)):
                pil_case(file, bg, name="%s.%s" % (file, tag))
        assert (file not in ("exif1.jpg", "exif9.jpg", "exif_truncated.jpg") or
                np.array_equal(np.fromfile(d(file + ".rgb"), np.uint8), np.array(im.convert("RGB")).ravel()))
        assert file != "exif6_pil.jpg" or np.array_equal(np.fromfile(d(file + ".rgb"), np.uint8),
                                                         np.fromfile(d("exif6.jpg.rgb"), np.uint8))

    # 16-bit grey: PIL saturates (mode "I"); the expected pixels are the high bytes
    grey16 = rng.integers(0, 65536, size=(6, 10, 1))
    write_png(d("grey16.png"), grey16, 0, 16)
    hi = (grey16[..., 0] >> 8).astype(np.uint8)
    case("grey16.png", "grey16.png", np.repeat(hi[..., None], 3, axis=2), 1)
    # 2-bit grey with a tRNS key: the key is a 2-bit sample (the PNG rule,
    # libpng's); PIL compares it with the scaled samples and misses it
    grey2 = rng.integers(0, 4, size=(9, 11, 1))
    write_png(d("grey2_trns.png"), grey2, 0, 2, trns=b"\x00\x02")
    scaled = np.repeat((grey2 * 85).astype(np.uint8), 3, axis=2)
    alpha = np.where(grey2 == 2, 0, 255).astype(np.uint8)
    case("grey2_trns.png", "grey2_trns.png", composite(np.concatenate([scaled, alpha], axis=2), BLUE), 3, BLUE)

    # reductions: a small max_pixels on small images, against PIL's reduce
    # (PNG, after compositing) and draft + reduce (JPEG)
    big = make_pixels(rng, 150, 97, 3, "smooth")
    reduced_files = [
        ("rgb.png", 100, WHITE),  # 31 x 23 by 4
        ("art.png", 60, BLUE),  # 50 x 31 by 8, composited first
        ("art.png", 40, GREY),
        ("grey_alpha.png", 30, GREY),  # 12 x 17 by 4, stays grey
        ("grey_trns.png", 30, BLUE),
        ("palette_trns.png", 120, WHITE),  # 45 x 38 by 4
        ("bilevel.png", 5, WHITE),  # by 16: the blocks are whole image sides
        ("rgb_interlaced.png", 150, WHITE),  # Adam7 by 2
        ("rgba_interlaced.png", 50, BLUE),  # Adam7 45 x 29 by 8
        ("rgba16_interlaced.png", 4, BLACK),  # Adam7 16-bit by 8
        ("palette2_interlaced.png", 20, WHITE),
        ("rgba_interlaced_3x2.png", 1, BLUE),  # empty passes; one pixel
        ("rgb16.png", 20, WHITE),
        ("colour.jpg", 200, WHITE),  # DCT by 4
        ("colour_progressive.jpg", 20, WHITE),  # DCT by 8
        ("grey.jpg", 200, WHITE),  # DCT by 2
        ("cmyk.jpg", 100, WHITE),  # DCT by 2
        ("exif6.jpg", 30, WHITE),  # DCT by 8, turned
    ]
    for file, max_pixels, bg in reduced_files:
        name = "%s.max%d.%02x%02x%02x" % (file, max_pixels, bg[0], bg[1], bg[2])
        pil_case(file, bg, max_pixels, name=name)
    pil_save("big.jpg", Image.fromarray(big, "RGB"), quality=90)
    pil_save("big_exif7.jpg", Image.fromarray(big, "RGB"), quality=90, exif=exif_segment(7, False))
    pil_case("big.jpg", max_pixels=40, name="big.jpg.max40")  # 150 x 97 by 32: DCT by 8, then 4
    pil_case("big_exif7.jpg", max_pixels=70, name="big_exif7.jpg.max70")  # by 16: DCT by 8, then 2; turned
    # a side above 16384 alone asks for a reduction (by 2 here)
    wide = np.repeat(rng.integers(0, 256, size=(1, 16385, 1)), 3, axis=0)
    write_png(d("wide16385.png"), wide, 0, 8)
    pil_case("wide16385.png")

    # broken files: decoding must fail ("pil-accepts" notes the ones PIL would open)
    with open(d("colour.jpg"), "rb") as f:
        jpg = f.read()
    with open(d("rgb.png"), "rb") as f:
        png = f.read()
    sof = jpg.index(b"\xff\xc0")
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
        # sides past what the formats allow: refused with the size
        "jpeg_65535_wide.jpg": jpg[: sof + 7] + struct.pack(">H", 65535) + jpg[sof + 9:],
        "png_1000001_wide.png": (png[:8] + png_chunk(b"IHDR", struct.pack(">IIBBBBB", 1000001, 3, 8, 2, 0, 0, 0)) +
                                 png[33:]),
    }
    wants = {"jpeg_65535_wide.jpg": "65535", "png_1000001_wide.png": "1000001"}
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
        lines.append("bad %s %s%s%s" % (name, name, " want=" + wants[name] if name in wants else "",
                                        "" if pil_fails else " pil-accepts"))
    # a reduction past SDFED_IMAGE_MAX_FACTOR (2048): one pixel of a 4097-wide row
    write_png(d("wide4097.png"), rng.integers(0, 256, size=(1, 4097, 1)), 0, 8)
    lines.append("bad wide4097.png.max1 wide4097.png max=1 want=8192")
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
