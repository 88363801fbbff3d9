#!/usr/bin/env python3
"""A decoder deeper than 32 layers: more than 64 graph outputs (logits and a key and a
value per layer), as Qwen2.5-3B (36 layers) and Llama-3.1-8B or Phi-4-mini (32 layers:
65 outputs) have. The generator refused such packages ("has more than 64 outputs") until
a stage's outputs were counted per model.

The maker's tiny llama (fp32, hidden 128) with 40 layers (81 outputs): our greedy ids
equal onnxruntime-genai 0.18's over 24 tokens for one prompt and for a batch of two
prompts of equal length. Skips (77) without onnxruntime-genai.

usage: check_deep.py BUILD WORK
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_types  # noqa: E402

LAYERS = 40


def main():
    build, work = sys.argv[1], sys.argv[2]
    try:
        import onnxruntime_genai  # noqa: F401
    except ImportError:
        print("SKIP: onnxruntime_genai is not installed (the oracle)")
        return 77
    os.makedirs(work, exist_ok=True)
    d = os.path.join(work, f"llama-{LAYERS}-layers")
    if os.path.exists(d):
        shutil.rmtree(d)
    import contextlib
    import io
    import make_model
    with contextlib.redirect_stdout(io.StringIO()):
        if make_model.main(["--type", "llama", "--layers", str(LAYERS), "--seed", "3", "--out", d]) != 0:
            print("FAIL: make_model.py --type llama --layers 40")
            return 1
    import onnx
    outs = len(onnx.load(os.path.join(d, "model.onnx"), load_external_data=False).graph.output)
    assert outs == 2 * LAYERS + 1, outs
    bad = 0
    for rows in ([[5, 17, 300, 42, 9]], [[5, 17, 300, 42, 9], [480, 2, 77, 77, 13]]):
        want = check_types.theirs(d, rows, 24)
        got = check_types.ours(build, d, rows, 24)
        for i, (w, g) in enumerate(zip(want, got)):
            ok = w == g
            bad += not ok
            print(f"{'ok' if ok else 'FAIL'}: {outs} outputs, batch {len(rows)} row {i}: "
                  f"ours {g[5:]}{'' if ok else f' onnxruntime-genai {w[5:]}'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
