#!/usr/bin/env python3
"""Token parity with onnxruntime-genai on packages tools/make_model.py writes at test time:
a tiny package per supported model type, and the hybrid and mixture-of-experts ones in
depth. Prompts are token ids; greedy search with min_length = max_length, so that an
early EOS (random weights) cannot shorten what is compared.

  hybrid NAME  (qwen3_5_text, qwen3_5_moe_text, qwen3_5 / qwen3_5_moe: split vision +
               embedding + text, lfm2, gptoss: sinks, alternating window-sized KV
               caches, swiglu MoE; and NAME-int4: MatMulNBits / QMoE, accuracy_level 0)
      - 64 greedy tokens equal onnxruntime-genai's, batch 1 and a batch of equal-length
        prompts;
      - a batch of prompts of different lengths: every row equals its single run, ours
        and onnxruntime-genai's. onnxruntime-genai's own rows of such a batch are not the
        oracle here: it pads on the right and feeds the pad tokens through the conv and
        recurrent states (its shorter rows then differ from their single runs), and it
        refuses such batches for window-sized KV caches;
      - prompt then decode equals the whole sequence at once: a prompt that already
        holds 20 generated tokens continues exactly as the token-by-token run did;
      - rewind then re-append equals a fresh run (ours and onnxruntime-genai's), to a
        length after the prompt, to the end of the prompt (the snapshot) and inside it;
      - window-sized KV caches (gptoss): onnxruntime-genai refuses batches of different
        lengths and beam search on them, so the same weights with full-length caches
        (local_window_size kept) are its oracle for those: our rows and beams on the
        window-sized package equal its on the full-length one. LFM2's beams are compared
        directly (Qwen3.5's cannot be: onnxruntime-genai 0.18 passes position_ids of the
        wrong shape with beams).
  types        every model type of tools/model_maker/catalog.py (fp32): 32 greedy tokens
               equal onnxruntime-genai's; a batch of two prompts of different lengths
               gives each row onnxruntime-genai's single run of its prompt, and for
               KV-only types also the rows of onnxruntime-genai's own right-padded batch
               (for window-sized caches, of the full-length-cache package: see above);
               window-sized caches also with prompts longer than the window: a batch of
               three lengths (rows = onnxruntime-genai's single runs), an equal-length
               batch (= its batch) and beams of it (= ours of each prompt alone).

Usage: check_types.py BUILD_DIR WORK_DIR --make    (writes every package first)
       check_types.py BUILD_DIR WORK_DIR CASE ...   (hybrid:NAME or types)
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from model_maker import catalog  # noqa: E402

P = [5, 77, 300, 12, 401, 9, 256, 33]
Q = [200, 17, 42]
R = [33, 256, 9, 401, 12, 300, 77, 5]
HYBRID = ["qwen3_5_text", "qwen3_5_moe_text", "qwen3_5", "qwen3_5_moe", "lfm2", "gptoss"]
HYBRID_INT4 = ["qwen3_5_text", "qwen3_5_moe_text", "lfm2", "gptoss"]
STATEFUL = {"qwen3_5_text", "qwen3_5_moe_text", "qwen3_5", "qwen3_5_moe", "lfm2"}


def types():
    return sorted(catalog.TINY) + sorted(catalog.SPLIT)


def package(work, name, dtype="fp32", full_kv=False):
    """The package's folder, written by the maker unless it is there already (full_kv: the
    same weights with full-length KV caches on its sliding-window layers)."""
    d = os.path.join(work, f"{name}-{dtype}" + ("-fullkv" if full_kv else ""))
    if not os.path.exists(os.path.join(d, "genai_config.json")):
        args = ["--type", name, "--dtype", dtype, "--seed", "1"] + (["--full-kv"] if full_kv else [])
        if dtype == "int4":
            args += ["--accuracy-level", "0"]
        import contextlib
        import io
        import make_model  # in this process: imports once for all packages
        with contextlib.redirect_stdout(io.StringIO()):
            if make_model.main([*args, "--out", d]) != 0:
                raise RuntimeError(f"make_model.py {' '.join(args)} failed")
    return d


def theirs(d, rows, max_length, pad=True):
    """onnxruntime-genai: greedy, min_length = max_length; right-padded rows when pad."""
    import numpy as np
    import onnxruntime_genai as og
    cfg = og.Config(d)
    cfg.clear_providers()
    model = og.Model(cfg)
    pad_id = json.load(open(os.path.join(d, "genai_config.json")))["model"]["pad_token_id"]
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=max_length, min_length=max_length, do_sample=False,
                              batch_size=len(rows))
    gen = og.Generator(model, params)
    width = max(len(r) for r in rows)
    gen.append_tokens(np.array([r + [pad_id] * (width - len(r)) for r in rows], dtype=np.int32))
    while not gen.is_done():
        gen.generate_next_token()
    return [[int(t) for t in gen.get_sequence(i)] for i in range(len(rows))]


def theirs_beams(d, prompt, max_length, beams=3, ret=2):
    import numpy as np
    import onnxruntime_genai as og
    cfg = og.Config(d)
    cfg.clear_providers()
    model = og.Model(cfg)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=max_length, min_length=max_length, do_sample=False,
                              num_beams=beams, num_return_sequences=ret)
    gen = og.Generator(model, params)
    gen.append_tokens(np.array([prompt], dtype=np.int32))
    while not gen.is_done():
        gen.generate_next_token()
    return [[int(t) for t in gen.get_sequence(i)] for i in range(ret)]


def ours(build, d, rows, max_length, extra=()):
    cmd = [os.path.join(build, "onnx-genai"), "generate", "-m", d, "--max-length", str(max_length),
           "--min-length", str(max_length), "--json", *extra]
    for r in rows:
        cmd += ["--ids", ",".join(map(str, r))]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {res.stderr.strip()}")
    return json.loads(res.stdout)["sequences"]


def rewind(build, d, max_length, n, prompt, extra):
    r = subprocess.run([os.path.join(build, "tests", "rewind-check"), d, str(max_length), str(n),
                        ",".join(map(str, prompt)), ",".join(map(str, extra)), str(max_length)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"rewind-check: {r.stderr.strip()}")
    return [[int(x) for x in line.split(",")] for line in r.stdout.split()]


class Check:
    def __init__(self, name):
        self.name, self.ok, self.n = name, True, 0

    def same(self, what, a, b):
        self.n += 1
        if a != b:
            first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            print(f"FAIL {self.name}: {what}: differ at {first}\n  ours   {a}\n  oracle {b}")
            self.ok = False
        return a == b


def check_hybrid(build, work, name, dtype):
    c = Check(f"{name}-{dtype}")
    d = package(work, name, dtype)
    L = len(P) + 64
    single = {tuple(p): theirs(d, [p], L)[0] for p in (P, Q, R[:5])}
    c.same("batch 1, 64 tokens vs onnxruntime-genai", ours(build, d, [P], L)[0], single[tuple(P)])
    c.same("equal-length batch vs onnxruntime-genai", ours(build, d, [P, R], L), theirs(d, [P, R], L))
    rows = [P, Q, R[:5]]
    batch = ours(build, d, rows, L)
    for i, r in enumerate(rows):
        c.same(f"batch of lengths 8/3/5: row {i} vs our single run", batch[i], ours(build, d, [r], L)[0])
        c.same(f"batch of lengths 8/3/5: row {i} vs onnxruntime-genai's single run", batch[i], single[tuple(r)])
    if name in STATEFUL:
        # reported, not compared: onnxruntime-genai's right padding reaches the states
        padded = theirs(d, [P, Q], L)[1]
        differs = padded[len(Q) + (len(P) - len(Q)):] != single[tuple(Q)][len(Q):L - (len(P) - len(Q))]
        print(f"note {c.name}: onnxruntime-genai's right-padded row of prompt {Q} "
              f"{'differs from' if differs else 'equals'} its single run (pad tokens pass through the states)")
    win = windowed(name)
    if win:
        # onnxruntime-genai refuses batches of different lengths and beams with window-sized
        # caches; the same weights with full-length caches (local_window_size kept) are its
        # oracle for ours
        fk = package(work, name, dtype, full_kv=True)
        padded = theirs(fk, [P, Q], L)
        c.same("batch of lengths 8/3: row 0 vs onnxruntime-genai's batch (full-length KV)", batch[0], padded[0])
        c.same("batch of lengths 8/3: row 1 vs onnxruntime-genai's right-padded row (full-length KV)",
               ours(build, d, [P, Q], L)[1][len(Q):len(Q) + L - len(P)], padded[1][len(P):])
    if win or name == "lfm2":
        oracle = package(work, name, dtype, full_kv=True) if win else d
        c.same("beam search (3 beams, 2 returned) vs onnxruntime-genai" +
               (" (full-length KV)" if win else ""),
               ours(build, d, [P], 40, ["--num-beams", "3", "--num-return-sequences", "2"]),
               theirs_beams(oracle, P, 40))
    full = single[tuple(P)]
    k = len(P) + 20
    c.same("prompt of 28 tokens (20 generated) vs the token-by-token run", ours(build, d, [full[:k]], L)[0], full)
    for n in (len(P) + 22, len(P), 5):
        first, again = rewind(build, d, L, n, P, [7, 8, 9])
        c.same(f"rewind-check first run vs onnxruntime-genai", first, full)
        fresh = first[:n] + [7, 8, 9]
        c.same(f"rewind to {n} + [7, 8, 9] vs our fresh run", again, ours(build, d, [fresh], L)[0])
        c.same(f"rewind to {n} + [7, 8, 9] vs onnxruntime-genai's fresh run", again, theirs(d, [fresh], L)[0])
    print(f"{'ok  ' if c.ok else 'FAIL'} {c.name}: {c.n} comparisons")
    return c.ok


def check_window_batches(build, d, c):
    """Window-sized KV caches with prompts longer than the window (the maker's is 8): a batch
    of three lengths (20, 3, 11) gives each row onnxruntime-genai's single run of its prompt;
    an equal-length batch (12 each) equals onnxruntime-genai's own batch (which it runs on
    window-sized caches); beams of that batch equal our beams of each prompt alone (those are
    held to onnxruntime-genai on the full-length-cache package in hybrid:gptoss)."""
    long, mid = P + R + P[:4], R + Q
    L = len(long) + 24
    rows = [long, Q, mid]
    batch = ours(build, d, rows, L)
    for i, r in enumerate(rows):
        c.same(f"batch [20, 3, 11 tokens]: row {i} vs onnxruntime-genai's single run", batch[i],
               theirs(d, [r], L)[0])
    eq = [P + R[:4], R + P[:4]]
    c.same("batch [12, 12 tokens] vs onnxruntime-genai's batch", ours(build, d, eq, L), theirs(d, eq, L))
    beams = ["--num-beams", "3", "--num-return-sequences", "2"]
    c.same("beams of batch [12, 12 tokens] vs our beams of each prompt alone",
           ours(build, d, eq, 30, beams), ours(build, d, eq[:1], 30, beams) + ours(build, d, eq[1:], 30, beams))


def windowed(name):
    """Has the type sliding-window layers with window-sized KV caches?"""
    a = catalog.tiny(name)
    return a.window_cache and any(a.sliding(i) for i in range(a.layers))


def kv_only(name):
    return not catalog.tiny(name).layer_types and not windowed(name)


def check_types(build, work):
    ok = True
    L = len(P) + 32
    for name in types():
        c = Check(name)
        d = package(work, name)
        sp, sq = theirs(d, [P], L)[0], theirs(d, [Q], L)[0]
        c.same("batch 1 vs onnxruntime-genai", ours(build, d, [P], L)[0], sp)
        batch = ours(build, d, [P, Q], L)
        c.same("batch [8, 3 tokens]: row 0 vs onnxruntime-genai's single run", batch[0], sp)
        c.same("batch [8, 3 tokens]: row 1 vs onnxruntime-genai's single run", batch[1], sq)
        how = "rows vs its single runs"
        win = windowed(name)
        if kv_only(name) or win:
            # window-sized caches: onnxruntime-genai refuses the batch; its oracle is then
            # the same weights with full-length caches
            padded = theirs(package(work, name, full_kv=True) if win else d, [P, Q], L)
            n = L - len(P)  # the padded row has that many new tokens
            c.same("batch [8, 3 tokens]: row 0 vs onnxruntime-genai's batch", batch[0], padded[0])
            c.same("batch [8, 3 tokens]: row 1 vs onnxruntime-genai's right-padded row",
                   batch[1][len(Q):len(Q) + n], padded[1][len(P):])
            how += " and its own right-padded batch" + (" (full-length KV)" if win else "")
        if win:
            check_window_batches(build, d, c)
            how += "; prompts past the window: batches equal single runs"
        print(f"{'ok  ' if c.ok else 'FAIL'} {name}: 32 tokens and a batch of two lengths equal "
              f"onnxruntime-genai's ({how})")
        ok &= c.ok
    return ok


def make_all(work):
    for name in types():
        package(work, name)
    for name in HYBRID_INT4:
        package(work, name, "int4")
    for name in types():
        if windowed(name):
            package(work, name, full_kv=True)
    package(work, "gptoss", "int4", full_kv=True)
    print("packages written to", work)


def main():
    build, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    if sys.argv[3:] == ["--make"]:
        make_all(work)
        return
    try:
        import onnxruntime_genai  # noqa: F401
    except ImportError:
        print("SKIP: onnxruntime_genai (the oracle) is not installed; pip install -r tools/requirements.txt")
        sys.exit(77)
    ok = True
    for case in sys.argv[3:]:
        try:
            if case == "types":
                ok &= check_types(build, work)
            elif case.startswith("hybrid:"):
                name, _, dtype = case[len("hybrid:"):].partition("-")
                ok &= check_hybrid(build, work, name, dtype or "fp32")
            else:
                raise ValueError(f"unknown case {case}")
        except Exception as e:  # an error in either runtime is a failure, with its message
            print(f"FAIL {case}: {e}")
            ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
