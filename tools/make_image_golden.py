#!/usr/bin/env python3
"""Golden files for tests/test_images.cpp: small PNG and JPEG files of every kind the decoders read, written
with PIL, and what PIL decodes from them: Image.open(f).convert('L') and .convert('RGB'), the loader of
torchvision's ImageFolder. Writes tests/data/images/<name>.<png|jpg> and <name>.L.raw / <name>.RGB.raw
(the decoded pixels, row-major HWC bytes). Run with Debian's python3-pil:
    /usr/bin/python3 tools/make_image_golden.py
"""
import os
import random
import zlib

from PIL import Image

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "images")
W, H = 7, 5  # odd sizes: no row padding or subsampling coincidences


def pixels(n, channels, rng, depth=256):
    return [tuple(rng.randrange(depth) for _ in range(channels)) if channels > 1 else rng.randrange(depth)
            for _ in range(n)]


def chunk(kind, data):
    return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")


def save(img, name, path=None, **kw):
    """Writes img as OUT/name (unless `path`, an existing file) and PIL's decodes of the file."""
    if path is None:
        path = os.path.join(OUT, name)
        img.save(path, **kw)
    name = os.path.basename(path)
    with Image.open(path) as back:
        for mode in ("L", "RGB"):
            raw = back.convert(mode).tobytes()
            with open(os.path.join(OUT, name + "." + mode + ".raw"), "wb") as f:
                f.write(raw)


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = random.Random(21)
    n = W * H
    for mode, channels in (("L", 1), ("LA", 2), ("RGB", 3), ("RGBA", 4)):
        img = Image.new(mode, (W, H))
        img.putdata(pixels(n, channels, rng))
        save(img, f"{mode.lower()}.png")
    # Palette (with and without transparency), 1-bit and 4-bit gray, 16-bit RGB, interlaced RGB.
    pal = Image.new("P", (W, H))
    pal.putpalette([rng.randrange(256) for _ in range(3 * 16)])
    pal.putdata([rng.randrange(16) for _ in range(n)])
    save(pal, "palette.png")
    pal.info["transparency"] = 3
    save(pal, "palette_trns.png", transparency=3)
    bw = Image.new("1", (W, H))
    bw.putdata([255 * rng.randrange(2) for _ in range(n)])
    save(bw, "gray1.png")
    g4 = Image.new("L", (W, H))
    g4.putdata([17 * rng.randrange(16) for _ in range(n)])
    save(g4, "gray4.png", bits=4)
    # 16 bits per sample: PIL cannot write them, so the file is built here (filter 0 rows, zlib); PIL reads
    # 16-bit RGB as 8-bit RGB keeping each sample's high byte.
    samples = [rng.randrange(65536) for _ in range(n * 3)]
    rows = b"".join(b"\0" + b"".join(v.to_bytes(2, "big") for v in samples[y * W * 3:(y + 1) * W * 3]) for y in range(H))
    ihdr = W.to_bytes(4, "big") + H.to_bytes(4, "big") + bytes([16, 2, 0, 0, 0])
    with open(os.path.join(OUT, "rgb16.png"), "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    save(Image.open(os.path.join(OUT, "rgb16.png")).copy(), None, path=os.path.join(OUT, "rgb16.png"))
    # JPEG: color (4:2:0) and gray, PIL's encoder (libjpeg-turbo).
    smooth = Image.new("RGB", (W * 3, H * 3))
    smooth.putdata([((x * 12) % 256, (y * 17) % 256, ((x + y) * 9) % 256) for y in range(H * 3) for x in range(W * 3)])
    save(smooth, "rgb.jpg", quality=90)
    save(smooth.convert("L"), "gray.jpg", quality=90)


if __name__ == "__main__":
    main()
