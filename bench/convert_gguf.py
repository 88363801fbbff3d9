#!/usr/bin/env python3
"""Times `onnx-genai convert` on a GGUF file at a released model's shapes.

  convert_gguf.py BUILD_DIR WORK_DIR [--shape qwen2.5-0.5b|llama-3.2-1b] [--type Q4_0|Q8_0]

Writes WORK_DIR/<shape>-<type>.gguf with PyPI's gguf writer (random blocks: random 4- or
8-bit values with small float16 scales, written as bytes, so that making a 1B file takes
seconds; norms float32), converts it three times (the first run reads the file from disk
into the page cache) and prints each wall time, the sizes and the CPU model.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
from model_maker.synthetic import _bytes_to_unicode  # noqa: E402  GPT-2's byte alphabet

SHAPES = {
    # hidden, layers, heads, kv heads, head dim, mlp, vocab, context, arch, tied
    "qwen2.5-0.5b": (896, 24, 14, 2, 64, 4864, 151936, 32768, "qwen2", True),
    "llama-3.2-1b": (2048, 16, 32, 8, 64, 8192, 128256, 131072, "llama", True),
}
BLOCK = {"Q4_0": 18, "Q8_0": 34}


def blocks(rng, rows, cols, qtype):
    nb = cols // 32
    b = rng.integers(0, 256, size=(rows, nb, BLOCK[qtype]), dtype=np.uint8)
    b[:, :, 0:2] = np.frombuffer(np.float16(0.01).tobytes(), np.uint8)
    return b.reshape(rows, nb * BLOCK[qtype])


def write(path, shape, qtype):
    import gguf
    H, L, nh, nkv, hd, F, V, ctx, arch, tied = SHAPES[shape]
    q = getattr(gguf.GGMLQuantizationType, qtype)
    rng = np.random.default_rng(0)
    w = gguf.GGUFWriter(path, arch)
    w.add_block_count(L)
    w.add_context_length(ctx)
    w.add_embedding_length(H)
    w.add_feed_forward_length(F)
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1e6)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2" if arch == "qwen2" else "llama-bpe")
    b2u = _bytes_to_unicode()
    merged = [b2u[32] + b2u[116], b2u[104] + b2u[101]]
    tokens = [b2u[i] for i in range(256)] + merged + [f"<|t{i}|>" for i in range(258, V)]
    w.add_token_list(tokens)
    w.add_token_types([1] * (V - 3) + [3] * 3)  # a few control tokens, as real vocabularies have
    w.add_token_merges([f"{b2u[32]} {b2u[116]}", f"{b2u[104]} {b2u[101]}"])
    w.add_bos_token_id(V - 1)
    w.add_eos_token_id(V - 2)
    norm = np.ones(H, np.float32)
    w.add_tensor("token_embd.weight", blocks(rng, V, H, qtype), raw_dtype=q)
    for i in range(L):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", norm)
        for name, rows, cols in (("attn_q", nh * hd, H), ("attn_k", nkv * hd, H), ("attn_v", nkv * hd, H),
                                 ("attn_output", H, nh * hd), ("ffn_gate", F, H), ("ffn_up", F, H),
                                 ("ffn_down", H, F)):
            w.add_tensor(p + name + ".weight", blocks(rng, rows, cols, qtype), raw_dtype=q)
        if arch == "qwen2":
            for name, n in (("attn_q", nh * hd), ("attn_k", nkv * hd), ("attn_v", nkv * hd)):
                w.add_tensor(p + name + ".bias", np.zeros(n, np.float32))
        w.add_tensor(p + "ffn_norm.weight", norm)
    w.add_tensor("output_norm.weight", norm)
    if not tied:
        w.add_tensor("output.weight", blocks(rng, V, H, qtype), raw_dtype=q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="qwen2.5-0.5b")
    ap.add_argument("--type", choices=sorted(BLOCK), default="Q4_0")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    path = os.path.join(a.work, f"{a.shape}-{a.type}.gguf")
    if not os.path.exists(path):
        t = time.time()
        write(path, a.shape, a.type)
        print(f"wrote {path}: {os.path.getsize(path) / 2**20:.0f} MiB in {time.time() - t:.1f} s")
    out = os.path.join(a.work, f"{a.shape}-{a.type}")
    for r in range(a.runs):
        t = time.time()
        subprocess.run([os.path.join(a.build, "onnx-genai"), "convert", path, out, "--quiet"], check=True)
        dt = time.time() - t
        size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
        print(f"run {r + 1}: convert {dt:.2f} s, package {size / 2**20:.0f} MiB")
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    print(next((ln for ln in cpu.splitlines() if ln.startswith("Model name")), "Model name: ?"),
          f"({os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
