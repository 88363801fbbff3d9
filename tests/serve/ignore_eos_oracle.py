#!/usr/bin/env python3
"""The oracle of the ignore_eos tests (engine_*_ignore_eos, serve_ignore_eos), from
onnxruntime-genai: a copy of the hybrid-qwen3_5 package whose EOS is a token that greedy
decoding writes early, and the answers to expect on it.

A random-weight model almost never picks its real EOS, so the copy (PACKAGES/
hybrid-qwen3_5-eos: the same files, linked, and a genai_config.json whose
model.eos_token_id is that token) makes an early EOS certain. onnxruntime-genai decodes
greedily on the original package, where the real EOS is never chosen (each run must
reach max_length, else this script fails): those are the answers with ignore_eos, where
the EOS token is chosen, delivered and fed back like any other. onnxruntime-genai on the
copy gives the answers without ignore_eos (it stops at the first EOS, which is not part
of the answer). Writes PACKAGES/hybrid-qwen3_5-eos/ignore_eos.txt, three lines per prompt:

  P <prompt ids>
  T <max_tokens ids: the answer with ignore_eos>
  S <the answer without it: T up to its first EOS>

Usage: ignore_eos_oracle.py PACKAGES_DIR. Exits 77 (skipped) without onnxruntime_genai
or the package."""
import json
import os
import sys

from prompt_ids import token_prompts

NEW = 40  # tokens per answer with ignore_eos (engine-check holds 48)


def prompts(vocab):
    """Four token-id prompts of 3, 11, 19 and 27 tokens (prompt_ids.token_prompts)."""
    return token_prompts(vocab, [3, 11, 19, 27], 4242)


def greedy(og, np, pkg, prompt, new):
    cfg = og.Config(pkg)
    cfg.clear_providers()
    model = og.Model(cfg)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(prompt) + new, do_sample=False)
    gen = og.Generator(model, params)
    gen.append_tokens(np.array([prompt], dtype=np.int32))
    while not gen.is_done():
        gen.generate_next_token()
    return [int(t) for t in gen.get_sequence(0)][len(prompt):]


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    src = os.path.abspath(os.path.join(sys.argv[1], "hybrid-qwen3_5"))
    if not os.path.exists(os.path.join(src, "genai_config.json")):
        print(f"SKIP: {src} is missing (serve_packages did not write it)")
        return 77
    try:
        import numpy as np
        import onnxruntime_genai as og
    except ImportError as e:
        print(f"SKIP: onnxruntime_genai (the oracle) cannot be imported: {e}")
        return 77
    with open(os.path.join(src, "genai_config.json")) as f:
        cfg = json.load(f)
    model = cfg["model"]
    real_eos = model["eos_token_id"]
    real_eos = set(real_eos if isinstance(real_eos, list) else [real_eos])
    ps = prompts(model["vocab_size"])
    full = []
    for p in ps:
        t = greedy(og, np, src, p, NEW)
        if len(t) != NEW or real_eos & set(t):
            print(f"FAIL: onnxruntime-genai stopped on the real EOS {sorted(real_eos)} after "
                  f"{len(t)} of {NEW} tokens (prompt {p}): pick other prompts")
            return 1
        full.append(t)
    # the EOS of the copy: a token of the first answer's first half (after its first two)
    # found in the most answers, preferring one the first answer writes twice (generation
    # must go on past both), then the earliest
    first = full[0]
    cands = first[2:NEW // 2]
    eos = max(cands, key=lambda t: (sum(t in a for a in full), first.count(t) > 1, -first.index(t)))
    dst = os.path.join(os.path.dirname(src), "hybrid-qwen3_5-eos")
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src):
        link = os.path.join(dst, f)
        if f not in ("genai_config.json", "ignore_eos.txt") and not os.path.lexists(link):
            os.symlink(os.path.join(src, f), link)
    model["eos_token_id"] = eos
    with open(os.path.join(dst, "genai_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    lines = []
    for p, t in zip(ps, full):
        stop = greedy(og, np, dst, p, NEW)
        want = t[:t.index(eos)] if eos in t else t
        if stop != want:
            print(f"FAIL: onnxruntime-genai on the copy (EOS {eos}) answered {stop}, not the "
                  f"original answer up to its first {eos}: {want}")
            return 1
        lines += ["P " + " ".join(map(str, p)), "T " + " ".join(map(str, t)),
                  "S " + " ".join(map(str, stop))]
    with open(os.path.join(dst, "ignore_eos.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    where = [k for k, t in enumerate(first) if t == eos]
    print(f"wrote {dst}: EOS {eos} (at new tokens {where} of the first answer); "
          f"{len(ps)} prompts, answers of {NEW} tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
