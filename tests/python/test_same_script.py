"""The same script (same_script.py) with `import onnxruntime_genai as og` and with
`import onnx_genai as og`, on every package in ../shared/models that onnxruntime-genai can
run and on the model-maker packages (made by ctest's parity_packages and type_packages
fixtures under OG_BUILD_DIR: stories260K and qwen2.5-shaped ones, and one of every model
type the maker writes): the records must be equal.

- generation records (greedy, rewind, batch 2 padded and with an early EOS, beams, every
  step's next tokens) exactly (on window-sized KV caches, where onnxruntime-genai refuses
  a rewind to an evicted position, the padded batch and beams, the records from there on are its on the same weights with
  full-length caches: the type_packages fixture's NAME-fullkv); where onnxruntime-genai's padded rows or its sequence after
  a rewind differ from its own single greedy runs (pad tokens and rewinds reaching the
  conv/recurrent state of a split VLM package), those single runs are the oracle and the
  record is listed;
- logits (get_output after the prompt and after a step, get_logits) in shape and dtype
  exactly, values within 1e-3 + 1e-3*|x| (float32) or 2e-2 + 2e-2*|x| (float16 models);
- tokenizer records (encode, encode_batch, decode, decode_batch, streaming decode)
  exactly, unless onnxruntime-genai's tokenizer differs there from Hugging Face
  `tokenizers` (the project's tokenizer oracle) and ours equals `tokenizers`: such
  records are listed (printed) and do not fail.

Prompts: for a package with tokenizer.json, two texts as `tokenizers` encodes them; for
one without, fixed ids. Packages are found, not listed: every genai_config.json under
../shared/models and the fixtures' folders. A package onnxruntime-genai cannot open is
skipped with its message (ours still runs the script there and must not crash); stories260K int4 with accuracy_level 4 is left out (int8 activations: reported
by tests/parity, not required).
"""
import glob
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import BUILD, SHARED

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "same_script.py")
TEXTS = ["Once upon a time", "The little dog ran"]


def found(root, pattern, leave_out=lambda d: False):
    """The package folders (holding genai_config.json) under root, or one placeholder that
    skips loudly when there are none (the data or the fixture is missing)."""
    dirs = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(root, pattern),
                                                        recursive=True))
    return [d for d in dirs if not leave_out(d)] or [os.path.join(root, "(none)")]


# every package in ../shared/models, found rather than listed (a package added there is
# compared too)
SHARED_PACKAGES = found(os.path.join(SHARED, "models"), "**/genai_config.json")
# the model-maker packages of ctest's parity_packages fixture, but those with MatMulNBits
# accuracy_level 4 (int8 activations: tests/parity reports them, equality not required)
MAKER_PACKAGES = found(os.path.join(BUILD, "parity_packages"), "*/genai_config.json",
                       lambda d: d.endswith("-acc4"))
# one package of every model type the maker writes (ctest's type_packages fixture)
TYPE_PACKAGES = found(os.path.join(BUILD, "type_packages"), "*/genai_config.json")
PACKAGES = SHARED_PACKAGES + MAKER_PACKAGES + TYPE_PACKAGES


def run(runtime, pkg, args):
    r = subprocess.run([sys.executable, SCRIPT, runtime, pkg, *args], capture_output=True,
                       text=True, timeout=600)
    records = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    return r.returncode, records, r.stderr.strip()


def prompts(pkg):
    """(--ids/--text arguments, HF tokenizer or None)."""
    tj = os.path.join(pkg, "tokenizer.json")
    with open(os.path.join(pkg, "genai_config.json")) as f:
        model = json.load(f)["model"]
    vocab = int(model.get("vocab_size", 100))
    pad = int(model.get("pad_token_id", 0))
    hf, args = None, []
    ids = [[(x * 7 + 3) % vocab for x in range(5, 10)], [(x * 11 + 5) % vocab for x in (1, 2, 3)]]
    ids = [[t if t != pad else (t + 1) % vocab for t in row] for row in ids]
    if os.path.isfile(tj):
        from tokenizers import Tokenizer
        try:
            hf = Tokenizer.from_file(tj)
            text_ids = [hf.encode(t).ids for t in TEXTS]
        except Exception as e:  # not an oracle for this file: no tokenizer records
            print(f"HF tokenizers cannot encode with {tj} ({e}): no tokenizer records")
            hf = None
        if hf is not None:
            args = [a for t in TEXTS for a in ("--text", t)]
            # prompts as the tokenizer gives them, unless the model's vocabulary is smaller
            # (tiny-random-gpt2 keeps GPT-2's tokenizer with 1000 embeddings)
            if all(0 <= i < vocab and i != pad for row in text_ids for i in row[-1:]) and \
                    all(i < vocab for row in text_ids for i in row):
                ids = text_ids
    for row in ids:
        args += ["--ids", ",".join(map(str, row))]
    # a large package (the qwen2.5-0.5b-shaped one: 151936-entry vocabulary) generates
    # fewer tokens, to keep the test within a minute
    size = sum(os.path.getsize(os.path.join(pkg, f)) for f in os.listdir(pkg))
    if size > (100 << 20):
        args += ["--new", "5"]
    return args, hf


def hf_expected(hf, rec):
    """What `tokenizers` gives for a tokenizer record, or None for other records."""
    k = rec["kind"]
    if k == "encode":
        return {**rec, "ids": hf.encode(rec["text"]).ids}
    if k == "encode_batch":
        return None  # padding uses the config's pad id: compared row by row via encode
    if k == "decode":
        return {**rec, "text": hf.decode(rec["ids"], skip_special_tokens=True)}
    if k == "decode_batch":
        return None  # checked through the rows' decode below
    return None


def batch_from_singles(rec, prompts, singles, pad):
    """What a batch-2 record (batch2, batch2_eos) holds if each row is its prompt's single
    run (onnxruntime-genai's batch-1 sequences `singles`) in onnxruntime-genai's layout:
    prompt, pad tokens to the longer prompt, the generated tokens up to and including the
    EOS, then pad tokens; next tokens step by step (pad once a row is done). None where the
    single runs do not tell (a row that needs tokens past where its single run stopped)."""
    width, length = max(map(len, prompts)), len(rec["rows"][0])
    n_new = length - width
    rows, stops = [], []
    for p, single in zip(prompts, singles):
        gen = single[len(p):]  # it stops on the package's EOS (kept) or at max_length
        if "eos" in rec:  # the package's EOS replaced by the record's
            if rec["eos"] in gen[:n_new]:
                gen = gen[:gen.index(rec["eos"]) + 1]
            elif len(gen) < n_new:
                return None  # the single run stopped on an EOS that the batch run did not
        gen = gen[:n_new]
        stops.append(len(gen))
        rows.append(p + [pad] * (width - len(p)) + gen + [pad] * (n_new - len(gen)))
    steps = max(stops)
    return {**rec, "rows": rows, "next": [[r[width + k] for r in rows] for k in range(steps)]}


def close_values(a, b, tol):
    a, b = np.array(a), np.array(b)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= tol + tol * np.abs(b)))


@pytest.mark.parametrize("pkg", PACKAGES, ids=[os.path.basename(os.path.dirname(p)) + "/" +
                                              os.path.basename(p) for p in PACKAGES])
def test_same_script(pkg):
    if not os.path.isfile(os.path.join(pkg, "genai_config.json")):
        pytest.skip(f"{pkg} is missing (shared models not beside the project, or the "
                    "parity_packages fixture did not run)")
    args, hf = prompts(pkg)
    rc_t, theirs, err_t = run("onnxruntime_genai", pkg, args)
    fullkv = pkg + "-fullkv"
    if rc_t != 0 and os.path.isfile(os.path.join(fullkv, "genai_config.json")):
        # onnxruntime-genai refuses, on window-sized KV caches, a rewind to an evicted
        # position, padded batches and beams; the same weights with full-length caches (local_window_size kept) run them: their
        # records from where it stopped are the oracle (as in tests/parity/check_types.py)
        rc_f, full, err_f = run("onnxruntime_genai", fullkv, args)
        n = len(theirs)
        assert [r["kind"] for r in full[:n]] == [r["kind"] for r in theirs], \
            f"{fullkv} gives other records than {pkg}:\n{err_f[-2000:]}"
        print(f"onnxruntime-genai stopped on {pkg} after {n} records "
              f"({err_t.splitlines()[-1] if err_t else rc_t}); the rest from {fullkv}")
        theirs, rc_t, err_t = theirs + full[n:], rc_f, err_f
    rc_o, ours, err_o = run("onnx_genai", pkg, args)
    assert rc_o >= 0, f"onnx_genai crashed (signal {-rc_o}) on {pkg}:\n{err_o[-3000:]}"
    if rc_t != 0 and not any(r["kind"] == "greedy" for r in theirs):
        last = (lambda err, rc: err.splitlines()[-1] if err else f"exit {rc}")
        pytest.skip(f"onnxruntime-genai cannot run {pkg}: {last(err_t, rc_t)} (onnx_genai: "
                    f"{len(ours)} records" + (f", then {last(err_o, rc_o)})" if rc_o else ")"))
    assert rc_o == 0 or rc_t != 0, f"onnx_genai failed where onnxruntime_genai ran:\n{err_o}"
    assert len(ours) >= len(theirs), \
        f"onnx_genai printed {len(ours)} records, onnxruntime_genai {len(theirs)}:\n{err_o}"
    fp16 = any(r.get("dtype") == "float16" for r in theirs)
    tol = 2e-2 if fp16 else 1e-3
    failures, notes = [], []
    # A tie: greedy may part where onnxruntime-genai's two best logits are closer than the
    # two runtimes' logits differ (fp16 models); ids are then compared up to that point.
    spread = max((float(np.max(np.abs(np.array(o["values"]) - np.array(t["values"]))))
                  for t, o in zip(theirs, ours) if "logits" in t["kind"] and
                  o["kind"] == t["kind"] and len(o["values"]) == len(t["values"])), default=0.0)
    cut = None
    gt = next((r for r in theirs if r["kind"] == "greedy"), None)
    go = next((r for r in ours if r["kind"] == "greedy"), None)
    if gt and go and gt["ids"] != go["ids"]:
        first = next(i for i, (a, b) in enumerate(zip(gt["ids"] + [-1], go["ids"] + [-2])) if a != b)
        step = first - (len(gt["ids"]) - len(gt["next"]))
        if 0 <= step < len(gt["gaps"]) and gt["gaps"][step] <= 2 * spread:
            cut = first
            notes.append(f"greedy parts at position {first} where onnxruntime-genai's two best "
                         f"logits are {gt['gaps'][step]:.3g} apart, within the runtimes' logits "
                         f"difference {spread:.3g} (a tie): ids compared up to it")

    s1t = next((r for r in theirs if r["kind"] == "single1"), None)
    ids = [[int(x) for x in args[i + 1].split(",")] for i, a in enumerate(args) if a == "--ids"]
    with open(os.path.join(pkg, "genai_config.json")) as f:
        pad = int(json.load(f)["model"].get("pad_token_id", 0))

    def gen_view(r):
        """A generation record without the logit margins; up to the tie when there is one:
        sequences cut at position `cut`, next tokens of the steps before it."""
        r = {k: v for k, v in r.items() if k != "gaps"}
        if cut is None:
            return r
        steps = cut - (len(gt["ids"]) - len(gt["next"]))
        for k in ("ids", "rows"):
            if k in r:
                r[k] = [x[:cut] for x in r[k]] if r[k] and isinstance(r[k][0], list) else r[k][:cut]
        r["next"] = r["next"][:steps]
        return r

    for t, o in zip(theirs, ours):
        k = t["kind"]
        if "logits" in k:
            same = t["shape"] == o["shape"] and t["dtype"] == o["dtype"] and \
                close_values(o["values"], t["values"], tol)
            if not same and k == "prompt_logits" and o["shape"][1] == 1 and \
                    t["shape"][0] == o["shape"][0] and t["shape"][2] == o["shape"][2]:
                notes.append(f"get_output('logits') after the prompt: onnxruntime-genai "
                             f"{t['shape']}, ours {o['shape']} (a package with conv/recurrent "
                             "state runs its prompt in two parts; the last position is "
                             "compared in prompt_logits_last)")
                continue
        elif k in ("greedy", "single1", "batch2", "batch2_eos", "beams"):
            same = gen_view(t) == gen_view(o)
            if not same and cut is None and k.startswith("batch2") and s1t:
                # onnxruntime-genai's right-padded rows are not its single runs on packages
                # whose pad tokens reach the model's state (conv/recurrent state of a split
                # VLM package): the oracle is then its own single runs of each prompt
                want = batch_from_singles(t, ids, [gt["ids"], s1t["ids"]], pad)
                if want is not None and o == want and t != want:
                    notes.append(f"{k}: onnxruntime-genai's padded rows differ from its own "
                                 "single runs (pad tokens pass through the state); ours equal "
                                 "them")
                    continue
        elif k in ("rewind", "rewind_append"):
            same = t == o or (cut is not None and t["ids"][:cut] == o["ids"][:cut])
            if not same and cut is None and o["ids"] == gt["ids"] != t["ids"]:
                # greedy again after a rewind must give the greedy sequence; where
                # onnxruntime-genai's does not (a state it cannot rewind), that is the oracle
                notes.append(f"{k}: onnxruntime-genai's sequence after rewinding differs from "
                             "its own greedy run; ours equals that")
                continue
        else:
            same = t == o
        if same:
            continue
        if k in ("encode", "decode", "decode_batch", "encode_batch", "stream") and hf is not None:
            if k == "decode_batch":
                rows = next(r for r in ours if r["kind"] == "batch2")["rows"]
                want = [hf.decode(r, skip_special_tokens=True) for r in rows]
                ok = o["texts"] == want
            elif k == "encode_batch":
                ok = [row[:len(hf.encode(x).ids)] for row, x in zip(o["ids"], o["texts"])] == \
                    [hf.encode(x).ids for x in o["texts"]]
            elif k == "stream":
                # a stream holds back an incomplete character: what it gave must be a
                # prefix of `tokenizers`' decode of the same ids
                ok = hf.decode(o["ids"], skip_special_tokens=True).startswith("".join(o["pieces"]))
            else:
                ok = o == hf_expected(hf, o)
            if ok:
                notes.append(f"{k}: onnxruntime-genai {json.dumps(t, ensure_ascii=False)[:200]}; "
                             f"ours = HF tokenizers {json.dumps(o, ensure_ascii=False)[:200]}")
                continue
        failures.append(f"{k}:\n  onnxruntime_genai {json.dumps(t, ensure_ascii=False)[:600]}\n"
                        f"  onnx_genai        {json.dumps(o, ensure_ascii=False)[:600]}")
    print(f"\n{pkg}: {len(theirs)} records compared, {len(failures)} differ, {len(notes)} "
          "notes (tokenizer records where onnxruntime-genai differs from HF tokenizers and "
          "ours follows HF; ties; the prompt logits of state models; padded rows and "
          "rewinds held to onnxruntime-genai's single runs)")
    for n in notes:
        print("  note:", n)
    if rc_t != 0:
        print(f"  onnxruntime-genai stopped early: {err_t.splitlines()[-1]}")
    assert not failures, "\n".join(failures)
