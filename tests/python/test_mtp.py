"""Speculative decoding with the MTP head onnxruntime-genai 0.18's builder exports
(set_speculative_options(mtp=True)), against onnxruntime-genai's own og.MtpGenerator.

The package is the builder's Qwen3.5 export of a tiny random checkpoint with one MTP layer
(tools/mtp_package.py: model.onnx with a hidden_states output, mtp.onnx, genai_config's
mtp block), whose head mostly drafts the token it is given again, so that drafts are kept
where the model repeats itself and refused elsewhere. On the same prompt ids, with
max_draft_tokens N and a fixed K (onnxruntime-genai's MtpGenerator always drafts N):

- the ids equal plain greedy decoding's, ours and onnxruntime-genai's, and
  og.MtpGenerator's;
- the verifications, drafted tokens and kept drafts equal og.MtpGenerator's get_stats()
  (rounds, draft_tokens_proposed, draft_tokens_accepted): the head is fed the same pairs
  (main hidden state at p - 1, token at p) at the same head positions and chains its own
  hidden state for further drafts, so it drafts the same tokens.

Also: max_length and EOS inside a drafted block (og.MtpGenerator keeps the EOS in its
sequence, which onnxruntime-genai's plain Generator and ours leave out at batch 1), seeded sampling equal to plain sampling,
rewinds after a speculative run, a batch (plain, said so), the cost model's own K, and the
refusals (a package without a head, another drafter beside it, beams).

onnxruntime-genai runs a copy (tools/mtp_package.py's OUT/ort): 0.18 cannot open its own
builder's shared_initializers lists on the CPU, and its MtpGenerator needs float16 logits
there; ours runs both the package as built and that copy.

Needs torch and transformers to make the package (the builder imports them): skipped
without them."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import BUILD, ROOT

PROMPTS = {"repeats": [100] * 6, "some": [7] * 10, "none": [5, 17, 99, 3, 250, 17, 99, 3, 41, 8]}


@pytest.fixture(scope="module")
def pkg():
    work = os.path.join(BUILD, "mtp_packages")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "mtp_package.py"), work],
                       capture_output=True, text=True)
    if r.returncode == 77:
        pytest.skip(f"no MTP package: {r.stderr.strip()}")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return r.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def ort():
    return pytest.importorskip("onnxruntime_genai")


def ours(og, model, ids, max_length, spec=None, seed=None, batch=None):
    p = og.GeneratorParams(model)
    opts = dict(max_length=max_length)
    if seed is not None:
        opts.update(do_sample=True, top_k=8, temperature=1.5, random_seed=seed)
    if batch:
        opts.update(batch_size=len(batch))
    p.set_search_options(**opts)
    if spec:
        p.set_speculative_options(**spec)
    g = og.Generator(model, p)
    g.append_tokens(np.array(batch or ids, dtype=np.int32))
    while not g.is_done():
        g.generate_next_token()
    if batch:
        return [[int(x) for x in g.get_sequence(r)] for r in range(len(batch))], g
    return [int(x) for x in g.get_sequence(0)], g.get_speculative_stats()


def theirs(ort, model, head, ids, max_length, n=None):
    p = ort.GeneratorParams(model)
    p.set_search_options(max_length=max_length, do_sample=False)
    if n is None:
        g = ort.Generator(model, p)
    else:
        p.set_speculative_options(max_draft_tokens=n)
        g = ort.MtpGenerator(model, head, p)
    g.append_tokens(np.array(ids, dtype=np.int32))
    while not g.is_done():
        g.generate_next_token()
    seq = g.get_sequence(0) if n is None else g.get_sequence()
    return [int(x) for x in seq], (g.get_stats() if n is not None else None)


def counts(st):
    return st["rounds"], st["draft_tokens_proposed"], st["draft_tokens_accepted"]


@pytest.fixture(scope="module")
def models(og, ort, pkg):
    return (og.Model(pkg), og.Model(os.path.join(pkg, "ort")),
            ort.Model(os.path.join(pkg, "ort")), ort.Model(os.path.join(pkg, "ort", "head")))


@pytest.mark.parametrize("prompt", sorted(PROMPTS))
def test_same_ids_and_drafts_as_onnxruntime_genai(og, ort, models, prompt):
    m, m_ort_copy, om, oh = models
    ids = PROMPTS[prompt]
    ml = len(ids) + 50
    plain, _ = ours(og, m, ids, ml)
    assert plain == theirs(ort, om, oh, ids, ml)[0]
    assert ours(og, m_ort_copy, ids, ml)[0] == plain
    kept = 0
    for n in (1, 3, 4):
        want, ost = theirs(ort, om, oh, ids, ml, n)
        for model in (m, m_ort_copy):
            got, st = ours(og, model, ids, ml, dict(mtp=True, max_draft_tokens=n, fixed_k=True))
            assert got == want == plain, (prompt, n)
            assert st["enabled"] and counts(st) == counts(ost), (prompt, n, st, counts(ost))
        kept += st["draft_tokens_accepted"]
    # the head's drafts are kept where the model repeats a token, and only there
    assert (kept > 30) if prompt == "repeats" else (kept > 0) if prompt == "some" else kept == 0


@pytest.mark.parametrize("extra", [1, 2, 3, 5, 6, 9])
def test_max_length_inside_a_block(og, ort, models, extra):
    m, _, om, oh = models
    ids = PROMPTS["repeats"]
    ml = len(ids) + extra
    plain, _ = ours(og, m, ids, ml)
    for n in (3, 4):
        want, ost = theirs(ort, om, oh, ids, ml, n)
        got, st = ours(og, m, ids, ml, dict(mtp=True, max_draft_tokens=n, fixed_k=True))
        assert got == want == plain and len(got) == ml
        assert counts(st) == counts(ost), (extra, n, st, counts(ost))


def test_eos_inside_a_block(og, ort, pkg, tmp_path):
    ids = PROMPTS["some"]
    ml = len(ids) + 40
    plain, _ = ours(og, og.Model(pkg), ids, ml)
    eos = plain[len(ids) + 12]  # a token the model reaches inside the generation
    dirs = {}
    for name, src in (("ours", pkg), ("ort", os.path.join(pkg, "ort"))):
        dst = tmp_path / name
        dst.mkdir()
        for f in os.listdir(src):
            if os.path.isfile(os.path.join(src, f)) and f != "genai_config.json":
                os.link(os.path.join(src, f), dst / f)
        with open(os.path.join(src, "genai_config.json")) as f:
            cfg = json.load(f)
        cfg["model"]["eos_token_id"] = eos
        (dst / "genai_config.json").write_text(json.dumps(cfg))
        dirs[name] = str(dst)
    m = og.Model(dirs["ours"])
    om = ort.Model(dirs["ort"])
    oh = ort.Model(os.path.join(pkg, "ort", "head"))
    stopped, _ = ours(og, m, ids, ml)
    assert stopped == theirs(ort, om, oh, ids, ml)[0]
    assert len(ids) + 12 <= len(stopped) < ml and stopped == plain[:len(stopped)]
    for n in (1, 4):
        want, _ = theirs(ort, om, oh, ids, ml, n)
        got, _ = ours(og, m, ids, ml, dict(mtp=True, max_draft_tokens=n, fixed_k=True))
        # (og.MtpGenerator's sequence keeps the EOS that its plain Generator's drops at
        # batch 1; ours is the plain one either way)
        assert got == stopped and want == stopped + [eos], n


def test_sampling_and_cost_model_equal_plain(og, models):
    m = models[0]
    for prompt in ("repeats", "some"):
        ids = PROMPTS[prompt]
        ml = len(ids) + 40
        for seed in (1, 7, 42):
            plain, _ = ours(og, m, ids, ml, seed=seed)
            got, st = ours(og, m, ids, ml, dict(mtp=True, max_draft_tokens=4, fixed_k=True),
                           seed=seed)
            assert got == plain, (prompt, seed)
            assert st["rounds"] > 0
        plain, _ = ours(og, m, ids, ml)
        got, _ = ours(og, m, ids, ml, dict(mtp=True, max_draft_tokens=4))  # the cost model's K
        assert got == plain


def test_rewind_after_speculation(og, models):
    m = models[0]
    ids = PROMPTS["repeats"]
    ml = len(ids) + 30
    plain, _ = ours(og, m, ids, ml)
    p = og.GeneratorParams(m)
    p.set_search_options(max_length=ml)
    p.set_speculative_options(mtp=True, max_draft_tokens=4, fixed_k=True)
    g = og.Generator(m, p)
    g.append_tokens(np.array(ids, dtype=np.int32))
    for _ in range(13):
        g.generate_next_token()
    for back in (len(ids) + 7, len(ids) + 2, 3):
        g.rewind_to(back)
        if back == 3:  # a new prompt after the old one's start
            g.append_tokens(np.array(ids[3:], dtype=np.int32))
        while not g.is_done():
            g.generate_next_token()
        assert [int(x) for x in g.get_sequence(0)] == plain, back
    assert g.get_speculative_stats()["draft_tokens_accepted"] > 0


def test_batch_decodes_plainly(og, models):
    m = models[0]
    rows = [PROMPTS["repeats"], [7, 7, 7, 7, 7, 7]]
    plain, _ = ours(og, m, None, 30, batch=rows)
    got, g = ours(og, m, None, 30, dict(mtp=True), batch=rows)
    assert got == plain
    assert not g.get_speculative_stats()["enabled"]


def test_refusals(og, pkg):
    head_only = og.Model(os.path.join(pkg, "ort", "head"))  # a package without model.mtp
    m = og.Model(pkg)
    cases = [(head_only, {}, dict(mtp=True), "has no MTP head"),
             (m, {}, dict(mtp=True, ngram_size=2), "choose one drafter"),
             (m, dict(num_beams=2), dict(mtp=True), "beam")]
    for model, search, spec, msg in cases:
        p = og.GeneratorParams(model)
        p.set_search_options(max_length=30, **search)
        p.set_speculative_options(**spec)
        with pytest.raises(Exception, match=msg):
            og.Generator(model, p)


def test_cli_generate(pkg):
    """generate --speculative mtp gives the plain ids; the package's tokenizer is a made-up
    one, so ids in and ids out."""
    cli = os.path.join(BUILD, "onnx-genai")
    if not os.access(cli, os.X_OK):
        pytest.skip(f"{cli} is missing (the build did not make the CLI)")
    ids = ",".join(str(i) for i in PROMPTS["repeats"])
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}

    def gen(*extra):
        r = subprocess.run([cli, "generate", pkg, "--ids", ids, "--max-length", "40", "--json",
                            *extra], capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["sequences"]
    plain = gen()
    assert gen("--speculative", "mtp", "--draft-fixed", "--draft-tokens", "3") == plain
    assert gen("--speculative", "mtp") == plain


def test_serve(pkg):
    """serve --speculative mtp: each request's head drafts from the hidden rows the
    batched steps return (batched mode, which /health reports); the answer is the plain
    server's. A package without a head is refused when the server starts."""
    from test_speculative import cli, completion
    prompt = "<unk>" * 6  # (the made-up tokenizer encodes its special tokens only)
    plain, _ = completion(["-m", pkg], prompt, 30)
    got, health = completion(["-m", pkg, "--speculative", "mtp", "--draft-fixed"], prompt, 30)
    assert got == plain and plain
    assert health.get("mode") == "batched", health
    r = cli("serve", "-m", os.path.join(pkg, "ort", "head"), "--port", "0", "--speculative", "mtp")
    assert r.returncode != 0 and "no MTP head" in r.stderr, r.stderr


def test_mtp_generator_same_script(og, ort, pkg):
    """og.MtpGenerator(model, mtp_model, params), onnxruntime-genai's class, in one script
    for both libraries: the same ids (less the EOS onnxruntime-genai keeps) and counts."""
    def run(lib, where):
        m = lib.Model(where)
        head = lib.Model(os.path.join(pkg, "ort", "head"))
        p = lib.GeneratorParams(m)
        p.set_search_options(max_length=40, do_sample=False)
        p.set_speculative_options(max_draft_tokens=3)
        g = lib.MtpGenerator(m, head, p)
        g.append_tokens(np.array(PROMPTS["repeats"], dtype=np.int32))
        while not g.is_done():
            g.generate_next_token()
        s = g.get_stats()
        return [int(x) for x in g.get_sequence()], counts(s), s["accepts"]
    ours_run, theirs_run = run(og, pkg), run(ort, os.path.join(pkg, "ort"))
    assert ours_run == theirs_run and ours_run[2] > 0, (ours_run, theirs_run)
