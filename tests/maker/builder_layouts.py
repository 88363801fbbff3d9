#!/usr/bin/env python3
"""The model maker's graphs against the layouts onnxruntime-genai's model builder (0.18)
wrote for the same tiny models: every node's op, attributes and wiring, the graph
inputs and outputs (tools/compare_graphs.py's description, weights' values excluded), and
genai_config.json without the token ids. CI cannot run the builder (torch, transformers,
the checkpoints), so a digest of each builder package's description is kept in
builder_layouts.json, recorded from the packages of the builder research
(/work/notes/builder: the tiny checkpoints' shapes are the maker's catalog.TINY).

  builder_layouts.py [--out DIR]                  make every type, compare the digests
  builder_layouts.py --record BUILDER_PKGS_DIR    write builder_layouts.json from the
                                                  builder's packages (where they exist)
"""
import argparse
import contextlib
import hashlib
import io
import json
import os
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import compare_graphs  # noqa: E402
import make_model  # noqa: E402
from model_maker import catalog  # noqa: E402

DIGESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "builder_layouts.json")

# Builder package folder per maker type, where the names differ (%s: fp32 | int4). The
# builder could not produce SmolLM3's NoPE layers (its smollm3 package has RoPE on every
# layer, which the maker does not write), so smollm3 has no digest.
BUILDER_DIR = {"gemma3_text": "gemma3_text-%s-shim", "gemma4_text": "gemma4_text_dense-%s-shim"}
NO_BUILDER = {"smollm3"}
IDS = ("bos_token_id", "eos_token_id", "pad_token_id", "image_token_id", "video_token_id",
       "vision_start_token_id")


def digest(pkg):
    """sha256 of the decoder graph's description and of the config without token ids."""
    d = compare_graphs.describe(os.path.join(pkg, "model.onnx"))
    d.pop("order")
    cfg = json.load(open(os.path.join(pkg, "genai_config.json")))
    for k in IDS:
        cfg["model"].pop(k, None)
    cfg["model"]["decoder"].pop("session_options", None)
    for section in ("embedding", "vision"):  # the split graphs are the maker's own
        cfg["model"].pop(section, None)
    blob = json.dumps({"graph": d, "config": cfg}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def builder_folder(name, dtype):
    return BUILDER_DIR.get(name, f"{name}-%s") % dtype


def record(pkgs):
    out = {}
    for name in sorted(catalog.TINY) + sorted(catalog.SPLIT):
        if name in NO_BUILDER:
            continue
        for dtype in ("fp32", "int4"):
            p = os.path.join(pkgs, builder_folder(name, dtype))
            if os.path.exists(os.path.join(p, "model.onnx")):
                out[f"{name}-{dtype}"] = digest(p)
    with open(DIGESTS, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"recorded {len(out)} builder layouts in {DIGESTS}")


def check(out):
    want = json.load(open(DIGESTS))
    bad = 0
    for key in sorted(want):
        name, dtype = key.rsplit("-", 1)
        pkg = os.path.join(out, key)
        with contextlib.redirect_stdout(io.StringIO()):
            make_model.main(["--type", name, "--dtype", dtype, "--out", pkg])
        ok = digest(pkg) == want[key]
        bad += not ok
        what = "the builder's layout" if ok else \
            "differs from the builder's layout (compare its package with tools/compare_graphs.py)"
        print(f"{'ok  ' if ok else 'FAIL'} {key}: {what}")
    missing = [t for t in catalog.TINY if t not in NO_BUILDER and f"{t}-fp32" not in want]
    for t in missing:
        print(f"FAIL {t}: no builder layout recorded")
    print(f"{len(want) - bad} of {len(want)} packages in the builder's layout")
    return 1 if bad or missing else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--record", metavar="BUILDER_PKGS_DIR")
    ap.add_argument("--out", help="where to write the maker's packages (default: a temporary folder)")
    a = ap.parse_args()
    if a.record:
        record(a.record)
        return 0
    if a.out:
        return check(a.out)
    with tempfile.TemporaryDirectory() as tmp:
        return check(tmp)


if __name__ == "__main__":
    sys.exit(main())
