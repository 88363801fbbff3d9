#!/usr/bin/env python3
"""Token parity between onnx-genai and onnxruntime-genai (the oracle) on whole packages.

Cases (each made or found at test time; a missing input skips loudly, a mismatch fails):
  qwen35      ../shared tiny-qwen35-cuda (qwen2, fp16 GroupQueryAttention) on CPU: greedy
              from [10,20,30,40] to 10 tokens, then rewind to 3 and append [40].
  stories     stories260K made by tools/make_model.py (fp32): greedy from BOS for 200
              steps (llama2.c's 200 forward passes each emit a token: BOS + 200 tokens,
              max_length 201); the decoded text must equal the published text in
              ../shared/models/README.md, through both runtimes.
  stories4    the same checkpoint as int4 (MatMulNBits, accuracy_level 0): 200 greedy
              tokens identical to onnxruntime-genai's; accuracy_level 4 is reported.
  continuous  stories260K fp32: generate 160 tokens, rewind to 140, append three tokens
              (a prompt chunk run against 139 cached keys), continue to 160.
  prompts     the stories260K tokenizer.json as the maker writes it: our tokenizer
              encodes prompts to exactly the ids of llama2.c's own encoder (run.c's
              score-driven merge, ported in tools/model_maker/llama2c.py).
  isa         OG_ISA forces each instruction-set level below the CPU's (amx -> avx512 ->
              avx2 -> generic; `bench --json` must report the level asked for): stories260K
              fp32 and int4 accuracy_level 0 from a 41-token prompt (so prefill runs the
              long-A GEMM kernels, decode the row kernels) give onnxruntime-genai's tokens
              at every level; accuracy_level 4 gives at every level the tokens of the
              CPU's own level (the int8 kernels of all levels compute identical bits).
  qwen05      a qwen2.5-0.5b-shaped int4 package (random weights, accuracy_level 0): the
              first 32 greedy tokens from a fixed prompt identical to onnxruntime-genai's.
              Not accuracy_level 4: random weights leave the top logits within 0.013 of
              each other, and int8 activations turn 1e-7 differences into flipped
              roundings; onnxruntime itself moves this package's logits by 0.06 between
              its own graph optimization levels (docs/PERFORMANCE.md, MatMulNBits).

Usage: check_parity.py BUILD_DIR WORK_DIR [CASE ...]
       check_parity.py BUILD_DIR WORK_DIR --make    (writes every package first, so that
                                                    cases run in parallel share them)
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")


def ort_generate(model_dir, prompt_ids, max_length, rewind=None):
    import onnxruntime_genai as og
    cfg = og.Config(model_dir)
    cfg.clear_providers()  # CPU, whatever the package's provider options say
    model = og.Model(cfg)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=max_length, do_sample=False)
    gen = og.Generator(model, params)
    gen.append_tokens(prompt_ids)
    while not gen.is_done():
        gen.generate_next_token()
    out = [[int(t) for t in gen.get_sequence(0)]]
    if rewind:
        n, extra = rewind
        gen.rewind_to(n)
        if extra:
            gen.append_tokens(extra)
        while not gen.is_done():
            gen.generate_next_token()
        out.append([int(t) for t in gen.get_sequence(0)])
    return out, model


def ort_decode(model, ids):
    import onnxruntime_genai as og
    return og.Tokenizer(model).decode(ids)


def isa_env(level):
    env = dict(os.environ)
    env.pop("OG_ISA", None)
    if level:
        env["OG_ISA"] = level
    return env


def ours_json(build, model_dir, ids, max_length, isa=None):
    cmd = [os.path.join(build, "onnx-genai"), "generate", "-m", model_dir, "--ids",
           ",".join(map(str, ids)), "--max-length", str(max_length), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=isa_env(isa))
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def compare(name, ours, theirs):
    if ours != theirs:
        first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b),
                     min(len(ours), len(theirs)))
        print(f"FAIL {name}: sequences differ at position {first}:\n  ours   {ours}\n  oracle {theirs}")
        return False
    print(f"ok   {name}: {len(ours)} tokens identical")
    return True


def published_story():
    text = open(os.path.join(SHARED, "models", "README.md"), encoding="utf-8").read()
    m = re.search(r"the decoded text is exactly:\s*```\n(.*?)\n```", text, re.S)
    return m.group(1) if m else None


def make_package(out, *args):
    if os.path.exists(os.path.join(out, "genai_config.json")):
        return out
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_model.py"), *args,
                    "--out", out], check=True, capture_output=True)
    return out


class Skip(Exception):
    pass


def case_qwen35(build, work):
    d = os.path.join(SHARED, "models", "ortgenai", "hf-internal-testing", "tiny-qwen35-cuda")
    if not os.path.isdir(d):
        raise Skip(f"{d} is missing")
    theirs, _ = ort_generate(d, [10, 20, 30, 40], 10, rewind=(3, [40]))
    ours = ours_json(build, d, [10, 20, 30, 40], 10)["sequences"][0]
    ok = compare("qwen35 greedy", ours, theirs[0])
    r = subprocess.run([os.path.join(build, "tests", "rewind-check"), d, "10", "3",
                        "10,20,30,40", "40"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL qwen35 rewind: {r.stderr.strip()}")
        return False
    lines = [[int(x) for x in line.split(",")] for line in r.stdout.split()]
    ok &= compare("qwen35 rewind to 3 + [40]", lines[1], theirs[1])
    ok &= compare("qwen35 rewind reproduces the first run", lines[1], lines[0])
    return ok


def stories_inputs():
    ckpt = os.path.join(SHARED, "models", "llama2c", "stories260K.bin")
    tok = os.path.join(SHARED, "models", "llama2c", "tok512.bin")
    if not (os.path.exists(ckpt) and os.path.exists(tok)):
        raise Skip("../shared/models/llama2c is missing")
    return ckpt, tok


def case_stories(build, work):
    ckpt, tok = stories_inputs()
    want = published_story()
    if want is None:
        raise Skip("the published story is not in ../shared/models/README.md")
    d = make_package(os.path.join(work, "stories260K-fp32"), "--from-llama2c", ckpt,
                     "--tokenizer", tok, "--dtype", "fp32")
    theirs, model = ort_generate(d, [1], 201)
    ours = ours_json(build, d, [1], 201)
    ok = compare("stories fp32 tokens", ours["sequences"][0], theirs[0])
    for who, text in (("onnx-genai", ours["text"][0]), ("onnxruntime-genai", ort_decode(model, theirs[0]))):
        if text == want:
            print(f"ok   stories fp32 text through {who} equals the published text")
        else:
            print(f"FAIL stories fp32 text through {who}:\n{text!r}\nexpected\n{want!r}")
            ok = False
    return ok


def case_stories4(build, work):
    ckpt, tok = stories_inputs()
    ok = True
    for level in (0, 4):
        d = make_package(os.path.join(work, f"stories260K-int4-acc{level}"), "--from-llama2c",
                         ckpt, "--tokenizer", tok, "--dtype", "int4", "--accuracy-level", str(level))
        theirs, _ = ort_generate(d, [1], 201)
        ours = ours_json(build, d, [1], 201)["sequences"][0]
        same = compare(f"stories int4 accuracy_level {level}", ours, theirs[0])
        if level == 0:
            ok &= same
        elif not same:
            print("     (accuracy_level 4 quantizes activations; reported, not required)")
    return ok


ISA_LEVELS = ["generic", "avx2", "avx512", "amx"]


def isa_in_use(build, model_dir, level):
    """The level `bench` reports running under OG_ISA=level (None: unset)."""
    cmd = [os.path.join(build, "onnx-genai"), "bench", "-m", model_dir, "-p", "1", "-n", "1",
           "-r", "1", "--probe-mb", "0", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=isa_env(level))
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return json.loads(r.stdout.strip().splitlines()[-1])["isa"]


def case_isa(build, work):
    ckpt, tok = stories_inputs()
    fp32 = make_package(os.path.join(work, "stories260K-fp32"), "--from-llama2c", ckpt,
                        "--tokenizer", tok, "--dtype", "fp32")
    top = isa_in_use(build, fp32, None)
    levels = ISA_LEVELS[:ISA_LEVELS.index(top)]
    if not levels:
        raise Skip(f"this CPU runs only the {top} kernels: no lower level to force")
    prompt = ort_generate(fp32, [1], 41)[0][0]  # BOS + 40 tokens of the story
    ok = True
    for name, args in (("fp32", ["--dtype", "fp32"]),
                       ("int4-acc0", ["--dtype", "int4", "--accuracy-level", "0"]),
                       ("int4-acc4", ["--dtype", "int4", "--accuracy-level", "4"])):
        d = make_package(os.path.join(work, f"stories260K-{name}"), "--from-llama2c", ckpt,
                         "--tokenizer", tok, *args)
        want = ours_json(build, d, prompt, 120)["sequences"][0]
        if name != "int4-acc4":
            ok &= compare(f"isa stories {name} at {top} vs onnxruntime-genai", want,
                          ort_generate(d, prompt, 120)[0][0])
        for level in levels:
            got_level = isa_in_use(build, d, level)
            if got_level != level:
                print(f"FAIL isa: OG_ISA={level} runs {got_level}")
                ok = False
                continue
            ok &= compare(f"isa stories {name} under OG_ISA={level}",
                          ours_json(build, d, prompt, 120, isa=level)["sequences"][0], want)
    return ok


def case_continuous(build, work):
    ckpt, tok = stories_inputs()
    d = make_package(os.path.join(work, "stories260K-fp32"), "--from-llama2c", ckpt,
                     "--tokenizer", tok, "--dtype", "fp32")
    extra = [403, 261, 300]
    theirs, _ = ort_generate(d, [1], 160, rewind=(140, extra))
    r = subprocess.run([os.path.join(build, "tests", "rewind-check"), d, "160", "140", "1",
                        ",".join(map(str, extra))], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL continuous: {r.stderr.strip()}")
        return False
    lines = [[int(x) for x in line.split(",")] for line in r.stdout.split()]
    ok = compare("continuous: first 160 tokens", lines[0], theirs[0])
    return ok & compare("continuous: rewind 140, append 3, continue", lines[1], theirs[1])


def case_prompts(build, work):
    ckpt, tok = stories_inputs()
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    from model_maker import llama2c
    d = make_package(os.path.join(work, "stories260K-fp32"), "--from-llama2c", ckpt,
                     "--tokenizer", tok, "--dtype", "fp32")
    pieces, scores, _ = llama2c.read_tokenizer_bin(tok, 512)
    prompts = ["Once upon a time", "Hello world!", "Lily's mom said, \"Lily, let's go.\"",
               "  two  spaces", "tab\there", "new\nline", "\u00fcn\u00efc\u00f6d\u00e9 \u2603",
               "The quick brown fox jumps over the lazy dog. 1234567890", "a", " x"]
    hexfile = os.path.join(work, "prompts.hex")
    with open(hexfile, "w") as f:
        f.write("".join(p.encode("utf-8").hex() + "\n" for p in prompts))
    r = subprocess.run([os.path.join(build, "tests", "tokenizer", "tok-cli"), "batch",
                        os.path.join(d, "tokenizer.json"), hexfile], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL prompts: tok-cli: {r.stderr.strip()}")
        return False
    ours = [[int(x) for x in line.split()[1:]] for line in r.stdout.splitlines() if line.startswith("E")]
    ok = len(ours) == len(prompts)
    for p, got in zip(prompts, ours):
        want = llama2c.llama2c_encode(p, pieces, scores)
        if got != want:
            print(f"FAIL prompts: {p!r}: ours {got}, llama2.c {want}")
            ok = False
    if ok:
        print(f"ok   prompts: {len(prompts)} prompts encode to llama2.c's ids")
    return ok


def case_qwen05(build, work):
    d = make_package(os.path.join(work, "qwen2.5-0.5b-int4-acc0"), "--synthetic", "qwen2.5-0.5b",
                     "--dtype", "int4", "--seed", "0", "--accuracy-level", "0")
    prompt = [9707, 11, 1879, 374, 264, 1273, 315, 279, 1614, 13]
    n = len(prompt) + 32
    theirs, _ = ort_generate(d, prompt, n)
    ours = ours_json(build, d, prompt, n)["sequences"][0]
    return compare("qwen2.5-0.5b int4 first 32 tokens", ours, theirs[0])


def ort_batch(model_dir, rows, max_length):
    """onnxruntime-genai on a right-padded batch; each row's generated tokens (up to EOS)."""
    import numpy as np
    import onnxruntime_genai as og
    cfg = og.Config(model_dir)
    cfg.clear_providers()
    model = og.Model(cfg)
    conf = json.load(open(os.path.join(model_dir, "genai_config.json")))["model"]
    pad = conf["pad_token_id"]
    eos = conf["eos_token_id"] if isinstance(conf["eos_token_id"], list) else [conf["eos_token_id"]]
    width = max(len(r) for r in rows)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=max_length, do_sample=False, batch_size=len(rows))
    gen = og.Generator(model, params)
    gen.append_tokens(np.array([r + [pad] * (width - len(r)) for r in rows], dtype=np.int32))
    while not gen.is_done():
        gen.generate_next_token()
    out = []
    for i in range(len(rows)):
        new = [int(t) for t in gen.get_sequence(i)][width:]
        cut = next((k for k, t in enumerate(new) if t in eos), len(new))
        out.append(new[:cut])
    return out


def ours_batch(build, model_dir, rows, max_length):
    cmd = [os.path.join(build, "onnx-genai"), "generate", "-m", model_dir, "--max-length",
           str(max_length), "--json"]
    for r in rows:
        cmd += ["--ids", ",".join(map(str, r))]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {res.stderr.strip()}")
    return json.loads(res.stdout)["sequences"]


def batch_checks(build, name, d, rows, max_length, ort_ragged=True):
    """A batch of prompts of different lengths: every row equals its single run (ours);
    a batch of equal prompts equals onnxruntime-genai's; and for attention that reads
    row lengths from the mask (GroupQueryAttention), onnxruntime-genai's right-padded
    rows equal ours too."""
    ok = True
    batch = ours_batch(build, d, rows, max_length)
    for i, r in enumerate(rows):
        single = ours_batch(build, d, [r], max_length)[0]
        ok &= compare(f"{name} batch row {i} ({len(r)} prompt tokens) = its single run", batch[i], single)
    equal = [r[:len(rows[-1])] for r in rows[:2]]
    w = len(equal[0])
    theirs = ort_batch(d, equal, max_length)
    ours = ours_batch(build, d, equal, max_length)
    for i in range(2):
        ok &= compare(f"{name} equal-length batch row {i} vs onnxruntime-genai", ours[i][w:], theirs[i])
    if ort_ragged:
        theirs = ort_batch(d, rows, max_length)
        width = max(len(r) for r in rows)
        for i, r in enumerate(rows):
            n = len(theirs[i]) if len(theirs[i]) < max_length - width else max_length - width
            ok &= compare(f"{name} ragged batch row {i} vs onnxruntime-genai (right-padded)",
                          batch[i][len(r):len(r) + n], theirs[i][:n])
    return ok


def case_pipeline(build, work):
    """A decoder-pipeline package (embeds -> transformer -> lm_head, made from stories260K):
    the same tokens as onnxruntime-genai and as the one-graph package; rewind; batches."""
    ckpt, tok = stories_inputs()
    d = make_package(os.path.join(work, "stories260K-pipeline"), "--from-llama2c", ckpt,
                     "--tokenizer", tok, "--dtype", "fp32", "--pipeline")
    one = make_package(os.path.join(work, "stories260K-fp32"), "--from-llama2c", ckpt,
                       "--tokenizer", tok, "--dtype", "fp32")
    prompt = [1, 403, 261, 300]
    theirs, _ = ort_generate(d, prompt, 64)
    ours = ours_json(build, d, prompt, 64)["sequences"][0]
    ok = compare("pipeline vs onnxruntime-genai", ours, theirs[0])
    ok &= compare("pipeline vs the one-graph package", ours, ours_json(build, one, prompt, 64)["sequences"][0])
    r = subprocess.run([os.path.join(build, "tests", "rewind-check"), d, "64", "20",
                        ",".join(map(str, prompt)), "411"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL pipeline rewind: {r.stderr.strip()}")
        return False
    lines = [[int(x) for x in line.split(",")] for line in r.stdout.split()]
    # onnxruntime-genai cannot rewind a pipeline: its fresh run of the same tokens is the oracle
    fresh, _ = ort_generate(d, lines[0][:20] + [411], 64)
    ok &= compare("pipeline rewind to 20 + [411] vs onnxruntime-genai's fresh run", lines[1], fresh[0])
    return ok & batch_checks(build, "pipeline", d, [[1, 403, 261, 300, 411, 500], [1, 5]], 32)


def case_batch(build, work):
    ckpt, tok = stories_inputs()
    d = make_package(os.path.join(work, "stories260K-fp32"), "--from-llama2c", ckpt,
                     "--tokenizer", tok, "--dtype", "fp32")
    rows = [[1, 403, 261, 300, 411, 500, 23, 426], [1, 403, 261, 378], [1, 5]]
    ok = batch_checks(build, "stories fp32", d, rows, 48)
    q = make_package(os.path.join(work, "qwen2.5-0.5b-int4-acc0"), "--synthetic", "qwen2.5-0.5b",
                     "--dtype", "int4", "--seed", "0", "--accuracy-level", "0")
    # real shapes make this the slow part: two rows, few tokens
    rows = [[9707, 11, 1879, 374, 264, 1273], [13, 9707]]
    ok &= batch_checks(build, "qwen2.5-0.5b int4", q, rows, 14)
    g = os.path.join(SHARED, "models", "ortgenai", "hf-internal-testing", "tiny-random-gpt2-fp32")
    if os.path.isdir(g):
        # gpt2's Attention masks columns: onnxruntime-genai right-pads into the cache, so
        # only the equal-length batch is compared with it
        ok &= batch_checks(build, "tiny gpt2", g, [[0, 0, 195, 731, 5, 9], [41, 554, 74], [7, 7]],
                           16, ort_ragged=False)
    return ok


CASES = {"batch": case_batch, "pipeline": case_pipeline, "qwen35": case_qwen35, "stories": case_stories, "stories4": case_stories4, "isa": case_isa,
         "continuous": case_continuous, "prompts": case_prompts, "qwen05": case_qwen05}


def make_all(work):
    try:
        ckpt, tok = stories_inputs()
    except Skip as e:
        print(f"SKIP making stories packages: {e}")
    else:
        make_package(os.path.join(work, "stories260K-fp32"), "--from-llama2c", ckpt,
                     "--tokenizer", tok, "--dtype", "fp32")
        make_package(os.path.join(work, "stories260K-pipeline"), "--from-llama2c", ckpt,
                     "--tokenizer", tok, "--dtype", "fp32", "--pipeline")
        for level in (0, 4):
            make_package(os.path.join(work, f"stories260K-int4-acc{level}"), "--from-llama2c",
                         ckpt, "--tokenizer", tok, "--dtype", "int4", "--accuracy-level",
                         str(level))
    make_package(os.path.join(work, "qwen2.5-0.5b-int4-acc0"), "--synthetic", "qwen2.5-0.5b",
                 "--dtype", "int4", "--seed", "0", "--accuracy-level", "0")
    print("packages written to", work)


def main():
    build, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    if sys.argv[3:] == ["--make"]:
        make_all(work)
        return
    names = sys.argv[3:] or list(CASES)
    passed = failed = skipped = 0
    for n in names:
        try:
            if CASES[n](build, work):
                passed += 1
            else:
                failed += 1
        except Skip as e:
            print(f"SKIP {n}: {e}")
            skipped += 1
        except Exception as e:  # an error in either runtime is a failure, with its message
            print(f"FAIL {n}: {e}")
            failed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
