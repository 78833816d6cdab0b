#!/usr/bin/python3
"""Golden images for the image transforms (tests/test_image_transforms.cpp), from torchvision 0.14 and Pillow
(Debian's python3-torchvision and python3-pil):

    /usr/bin/python3 tools/make_image_transform_golden.py          # writes tests/data/image_transform_golden.safetensors
    /usr/bin/python3 tools/make_image_transform_golden.py --time   # also times torchvision's transforms

Two small images made from a seed, "rgb" (37 x 53 RGB) and "gray" (37 x 53 L): smooth gradients, a few sharp
edges and noise, so both the filters' smoothing and their edges matter. Each is stored as IMG.x, f32
[C, H, W] = the 8-bit pixels / 255 (what the loader's ToTensor gives Ember's transforms).

The geometric cases run torchvision.transforms.functional on the PIL image — torchvision's default path:
resize is Pillow's bilinear resize, antialiased when shrinking — and store the 8-bit result / 255 as
CASE.y. The C++ test runs the same operation on IMG.x and accepts 1/255 (the issue's bar: Pillow rounds
to 8 bits after each of its two passes; Ember keeps floats). Rotation copies pixels (nearest), so it must
match exactly.

The colour cases (adjust_brightness/contrast/saturation/hue) run torchvision's tensor functions on IMG.x
(IMG "patch": a 20 x 30 piece of "rgb", to keep the file small),
its float formulas, which Ember follows: Pillow's 8-bit versions truncate each result toward zero (up to
1/255 off by themselves), while these are exact up to float rounding and the luma weights (torchvision's
tensor grayscale uses 0.2989 for red, Pillow 0.299). Grayscale itself is Pillow's convert('L').

Case names say what the C++ test does: resize_IMG_H_W (Resize((H, W))), resize_IMG_sS (Resize(S), the
shorter side), center_crop_IMG_H_W, resized_crop_IMG_TOP_LEFT_H_W_OH_OW, rotate_IMG_DEG_FILL (FILL in
8-bit units: the test fills with FILL / 255), grayscale_IMG_N, brightness/contrast/saturation/hue_IMG_F
(F = the factor x 100, m for minus).
"""
import argparse
import pathlib
import time

import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image
from safetensors.torch import save_file


def make_images():
    rng = np.random.default_rng(21)
    h, w = 37, 53
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 255 * (x / (w - 1))
    g = 255 * (0.5 + 0.5 * np.sin(y / 4.0 + x / 9.0))
    b = np.where((x - 30) ** 2 + (y - 15) ** 2 < 100, 230.0, 40.0)  # a sharp-edged disc
    rgb = np.stack([r, g, b], axis=-1) + rng.normal(0, 12, size=(h, w, 3))
    rgb[5:9, :, :] = [250, 10, 120]  # a sharp stripe
    rgb = np.clip(np.rint(rgb), 0, 255).astype(np.uint8)
    gray = np.clip(np.rint(0.5 * r + 0.3 * (255 - g) + rng.normal(0, 20, size=(h, w))), 0, 255).astype(np.uint8)
    gray[:, 20:23] = 255
    return {"rgb": Image.fromarray(rgb, "RGB"), "gray": Image.fromarray(gray, "L")}


def pixels(img):  # PIL image -> f32 [C, H, W] / 255
    return F.to_tensor(img).contiguous().clone()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--time", action="store_true",
                        help="time the transforms on a 500x375 PIL image (compare: bench/bench_image_transforms)")
    args = parser.parse_args()

    images = make_images()
    out = {}
    for name, img in images.items():
        out[f"{name}.x"] = pixels(img)

    def geometric(case, fn, img):
        out[case + ".y"] = pixels(fn(images[img]))

    # A 20 x 30 patch of the RGB image (rows 2-21, columns 5-34: the stripe, the disc's edge) for the colour
    # cases, which act pixel by pixel (contrast: through the mean), so a patch tests them as well as the whole.
    out["patch.x"] = out["rgb.x"][:, 2:22, 5:35].contiguous().clone()

    for img in ("rgb", "gray"):
        geometric(f"resize_{img}_15_40", lambda i: F.resize(i, [15, 40]), img)  # shrink both
        geometric(f"resize_{img}_44_61", lambda i: F.resize(i, [44, 61]), img)  # grow both
        geometric(f"resize_{img}_50_20", lambda i: F.resize(i, [50, 20]), img)  # grow H, shrink W
        geometric(f"resize_{img}_s20", lambda i: F.resize(i, 20), img)          # shorter side 20: 20 x 28
        geometric(f"resize_{img}_s41", lambda i: F.resize(i, 41), img)          # shorter side 41: 41 x 58
        geometric(f"resize_{img}_7_9", lambda i: F.resize(i, [7, 9]), img)      # a 5-6x shrink
        geometric(f"resized_crop_{img}_5_7_25_30_16_16", lambda i: F.resized_crop(i, 5, 7, 25, 30, [16, 16]), img)
        geometric(f"resized_crop_{img}_3_2_10_12_32_29", lambda i: F.resized_crop(i, 3, 2, 10, 12, [32, 29]), img)
        geometric(f"resized_crop_{img}_0_0_37_53_30_30", lambda i: F.resized_crop(i, 0, 0, 37, 53, [30, 30]), img)
    geometric("center_crop_rgb_20_31", lambda i: F.center_crop(i, [20, 31]), "rgb")  # offsets round(8.5), 11
    geometric("center_crop_rgb_24_24", lambda i: F.center_crop(i, [24, 24]), "rgb")  # round(6.5), round(14.5)
    geometric("center_crop_gray_45_60", lambda i: F.center_crop(i, [45, 60]), "gray")  # padded with zeros
    # Rotation is the same per plane: most angles on the gray image; the RGB one for a fill and a right angle.
    for img, deg, fill in (("gray", 30, 0), ("gray", -45, 0), ("gray", 180, 0), ("gray", 7, 0), ("rgb", 30, 200),
                           ("rgb", 90, 0)):
        tag = f"{deg}".replace("-", "m")
        geometric(f"rotate_{img}_{tag}_{fill}", lambda i: F.rotate(i, deg, fill=fill), img)
    geometric("grayscale_rgb_1", lambda i: F.to_grayscale(i, num_output_channels=1), "rgb")

    # Saturation and hue leave a 1-channel image as it is (the test checks that without a golden).
    for fn, name, factors, imgs in ((F.adjust_brightness, "brightness", (140, 60), ("patch", "gray")),
                                    (F.adjust_contrast, "contrast", (150, 50), ("patch", "gray")),
                                    (F.adjust_saturation, "saturation", (170, 30), ("patch",)),
                                    (F.adjust_hue, "hue", (20, -35), ("patch",))):
        for img in imgs:
            for f in factors:
                tag = f"{f}".replace("-", "m")
                out[f"{name}_{img}_{tag}.y"] = fn(out[f"{img}.x"], f / 100.0).contiguous().clone()

    path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "image_transform_golden.safetensors"
    save_file(out, str(path))
    print(f"wrote {len(out)} tensors to {path}")

    if args.time:
        rng = np.random.default_rng(0)
        big = Image.fromarray(rng.integers(0, 256, size=(375, 500, 3), dtype=np.uint8), "RGB")
        torch.manual_seed(0)
        rrc = T.RandomResizedCrop(224)
        cases = [("RandomResizedCrop(224)", rrc), ("RandomResizedCrop(224) + ToTensor", T.Compose([rrc, T.ToTensor()])),
                 ("Resize(256)", T.Resize(256)), ("CenterCrop(224)", T.CenterCrop(224)),
                 ("ColorJitter(0.4, 0.4, 0.4, 0.1)", T.ColorJitter(0.4, 0.4, 0.4, 0.1)),
                 ("RandomRotation(15)", T.RandomRotation(15)), ("Grayscale(3)", T.Grayscale(3))]
        for n, t in cases:
            for _ in range(20):
                t(big)
            reps = 500
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(reps):
                t(big)
            wall, cpu = (time.perf_counter() - t0) / reps * 1e6, (time.process_time() - c0) / reps * 1e6
            print(f"torchvision {n}, PIL 500x375 RGB: {wall:.0f} us wall, {cpu:.0f} us CPU per image")


if __name__ == "__main__":
    main()
