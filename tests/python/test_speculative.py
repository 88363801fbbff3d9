"""Speculative decoding by prompt lookup (set_speculative_options) never changes a token.

Drafts are verified in one run that must give every position the bits of a one-token
step, and each token is still chosen as a plain step chooses it, so with speculation the
sequences are plain decoding's exactly: greedy, and sampled with the same seed (a one-point
proposal makes rejection sampling draw the same token from the same random number). This
holds on every package type (plain, int4 at accuracy levels 0 and 4, mixture of experts;
sliding windows, hybrids with conv and recurrent state; a layout whose KV columns are
shared decodes plainly and says so), with
max_length falling inside a drafted block, EOS, guidance, rewinds and appends in the
middle of a verified block, and get_logits at every step equal bit for bit. Fixed K and
chained lookup make the verifications happen (their count is asserted), and
onnxruntime-genai 0.18 with the same n-gram options gives the same ids on the same
prompt ids.
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import BUILD, GPT2, ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "serve"))
import server_harness as harness  # noqa: E402 (the server harness the serve tests share)

FIXED = dict(ngram_size=2, max_draft_tokens=6, ngram_chained_lookup=True, fixed_k=True)
FIXED3 = dict(ngram_size=3, max_draft_tokens=4, fixed_k=True)


def package(path):
    if not os.path.isfile(os.path.join(path, "genai_config.json")):
        pytest.skip(f"{path} is missing (the parity_packages / types_packages fixture did "
                    "not make it)")
    return path


def copy_package(src, dst, edit):
    """dst: package src with its files hard linked and genai_config.json as edit(config)
    leaves it (dst is made when missing)."""
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src):
        if f != "genai_config.json":
            os.link(os.path.join(src, f), os.path.join(dst, f))
    with open(os.path.join(src, "genai_config.json")) as f:
        cfg = json.load(f)
    edit(cfg)
    with open(os.path.join(dst, "genai_config.json"), "w") as f:
        json.dump(cfg, f)
    return str(dst)


PARITY = ["stories260K-fp32", "stories260K-int4-acc0", "stories260K-int4-acc4",
          "qwen2.5-0.5b-int4-acc0"]
# model types of the maker: KV only, sliding windows, mixtures of experts, and hybrids with
# conv and recurrent state (their state goes back to before a verification and runs the
# kept tokens again)
TYPES_ON = ["llama-fp32", "phi3-fp32", "qwen3-fp32", "gemma2-fp32-fullkv", "gemma2-fp32",
            "gptoss-int4-fullkv", "gptoss-int4", "chatglm-fp32", "granite-fp32",
            "qwen3_5_text-int4", "qwen3_5_moe_text-int4", "lfm2-int4", "granitemoehybrid-fp32"]
TYPES_OFF = []


def prompt(vocab, n=24):
    """A prompt with a repeated phrase, so that lookups find drafts from the start."""
    phrase = [(7 * x + 3) % vocab for x in range(1, 6)]
    return np.array((phrase * n)[:n], dtype=np.int32)


def generate(og, model, ids, max_length, spec=None, sample_seed=None, steps=None,
             logits=False, guidance=None):
    """(generator, sequence, asked logits) of a greedy (or seeded sampling) run; og is
    onnx_genai or onnxruntime_genai, which share this API."""
    p = og.GeneratorParams(model)
    opts = dict(max_length=max_length)
    if sample_seed is not None:
        opts.update(do_sample=True, top_k=8, temperature=1.5, random_seed=sample_seed)
    p.set_search_options(**opts)
    if guidance:
        p.set_guidance(*guidance)
    if spec:
        p.set_speculative_options(**spec)
    g = og.Generator(model, p)
    g.append_tokens(ids)
    seen = []
    while not g.is_done() and (steps is None or len(seen) < steps):
        if logits and len(seen) % 3 == 2:
            # (a step whose logits are asked for runs plainly: every third, so that
            # verifications happen between and some asks land inside a verified block)
            seen.append(np.array(g.get_logits()).copy())
        else:
            seen.append(None)
        g.generate_next_token()
    return g, list(g.get_sequence(0)), seen


@pytest.mark.parametrize("name", PARITY + TYPES_ON + TYPES_OFF)
def test_greedy_ids_equal_plain(og, name):
    base = os.path.join(BUILD, "parity_packages" if name in PARITY else "type_packages", name)
    m = og.Model(package(base))
    ids = prompt(200)
    _, plain, _ = generate(og, m, ids, 96)
    for spec in (FIXED, dict(ngram_size=3, max_draft_tokens=4),
                 dict(ngram_size=2, max_draft_tokens=16, ngram_chained_lookup=True, fixed_k=True)):
        g, got, _ = generate(og, m, ids, 96, spec)
        st = g.get_speculative_stats()
        assert got == plain, f"{name} {spec}: {got} != {plain}"
        if name in TYPES_OFF:
            assert not st["enabled"] and st["rounds"] == 0, (name, st)
        elif spec is FIXED:
            assert st["enabled"] and st["rounds"] > 0, (name, st)
            assert st["draft_tokens_accepted"] <= st["draft_tokens_proposed"]


def stories(og):
    return og.Model(package(os.path.join(BUILD, "parity_packages", "stories260K-fp32")))


STORY = ("Once upon a time, there was a little girl named Lily. She loved to play with her "
         "toys. One day, Lily went to the park. Once upon a time, there was a little")


def story_ids(og, model):
    """A text stories260K continues by repeating much of it (drafts hit)."""
    return np.array(og.Tokenizer(model).encode(STORY), dtype=np.int32)


def test_max_length_inside_drafted_block(og):
    m = stories(og)
    ids = story_ids(og, m)
    for max_length in range(len(ids) + 1, len(ids) + 12):
        _, plain, _ = generate(og, m, ids, max_length)
        _, got, _ = generate(og, m, ids, max_length, FIXED)
        assert got == plain and len(got) == max_length, max_length


def test_eos_inside_drafted_block(og, tmp_path):
    """Copies of stories260K whose EOS is a token the continuation holds: generation ends
    on it wherever it falls in a verified block, and nothing after it is handed out."""
    src = package(os.path.join(BUILD, "parity_packages", "stories260K-fp32"))
    ids = story_ids(og, stories(og))
    _, plain, _ = generate(og, stories(og), ids, 120)
    candidates = list(dict.fromkeys(plain[len(ids):]))[:8]
    rounds = 0
    for eos in candidates:
        d = copy_package(src, tmp_path / f"eos{eos}",
                         lambda c: c["model"].__setitem__("eos_token_id", int(eos)))
        m = og.Model(d)
        _, want, _ = generate(og, m, ids, 120)
        g, got, _ = generate(og, m, ids, 120, FIXED)
        assert got == want and len(want) < 120, eos
        rounds += g.get_speculative_stats()["rounds"]
    assert rounds > 0


def test_logits_equal_at_every_step(og):
    for name in ("stories260K-fp32", "stories260K-int4-acc4", "qwen2.5-0.5b-int4-acc0"):
        m = og.Model(package(os.path.join(BUILD, "parity_packages", name)))
        ids = story_ids(og, m) if name.startswith("stories") else prompt(300)
        _, plain, lp = generate(og, m, ids, len(ids) + 60, logits=True)
        g, got, ls = generate(og, m, ids, len(ids) + 60, FIXED3, logits=True)
        assert got == plain and g.get_speculative_stats()["draft_tokens_accepted"] > 0, name
        for k, (a, b) in enumerate(zip(lp, ls)):
            assert np.array_equal(a, b), f"{name}: logits of step {k} differ"


def test_sampling_same_draws(og):
    """Same seed, same tokens: the first 40 sampled tokens of 30 seeds."""
    m = stories(og)
    ids = story_ids(og, m)
    hits = 0
    for seed in range(30):
        _, plain, _ = generate(og, m, ids, len(ids) + 40, sample_seed=seed)
        g, got, _ = generate(og, m, ids, len(ids) + 40, FIXED, sample_seed=seed)
        assert got == plain, f"seed {seed}"
        hits += g.get_speculative_stats()["draft_tokens_accepted"]
    assert hits > 0, "no sampled draft was ever accepted: the case tests nothing"


@pytest.mark.parametrize("name", ["stories260K-fp32", "qwen3_5_text-int4", "lfm2-int4"])
def test_rewind_and_append_in_a_verified_block(og, name):
    """Rewinds and appends land between tokens of a block a verification decided (on
    hybrids the state goes back and the kept tokens run again)."""
    if name.startswith("stories"):
        m = stories(og)
        ids = story_ids(og, m)
    else:
        m = og.Model(package(os.path.join(BUILD, "type_packages", name)))
        ids = prompt(200)

    def script(spec):
        p = og.GeneratorParams(m)
        p.set_search_options(max_length=200)
        if spec:
            p.set_speculative_options(**spec)
        g = og.Generator(m, p)
        g.append_tokens(ids)
        out = []
        for step in range(60):
            g.generate_next_token()
            if step in (7, 23):
                n = len(g.get_sequence(0))
                g.rewind_to(n - 3)
            if step in (15, 40):
                g.append_tokens(ids[:5])
            out.append(list(g.get_sequence(0)))
        return out, g

    plain, _ = script(None)
    got, g = script(FIXED)
    assert got == plain
    assert g.get_speculative_stats()["rounds"] > 0


def test_guidance(og):
    m = stories(og)
    ids = story_ids(og, m)
    guide = ("regex", "(the|a|one|dog|cat| )+")
    _, plain, _ = generate(og, m, ids, 80, guidance=guide)
    g, got, _ = generate(og, m, ids, 80, FIXED, guidance=guide)
    assert got == plain


def test_onnxruntime_genai_same_ids(og):
    ort = pytest.importorskip("onnxruntime_genai")
    for name in ("stories260K-fp32", "qwen2.5-0.5b-int4-acc0"):
        path = package(os.path.join(BUILD, "parity_packages", name))
        ids = prompt(300)
        for spec in (dict(ngram_size=3, max_draft_tokens=4),
                     dict(ngram_size=2, max_draft_tokens=8, ngram_chained_lookup=True)):
            g, theirs, _ = generate(ort, ort.Model(path), ids, 120, spec)
            assert g.get_speculative_stats()["rounds"] > 0
            _, ours, _ = generate(og, og.Model(path), ids, 120, spec)
            assert ours == theirs, f"{name} {spec}"


def test_refusals(og):
    m = stories(og)
    for bad, what in ((dict(ngram_size=1), "ngram_size"), (dict(ngram_size=17), "ngram_size"),
                      (dict(ngram_size=3, max_draft_tokens=0), "max_draft_tokens"),
                      (dict(ngram_size=3, max_draft_tokens=17), "max_draft_tokens"),
                      (dict(ngram_chained_lookup=True), "ngram_chained_lookup")):
        p = og.GeneratorParams(m)
        p.set_speculative_options(**bad)
        with pytest.raises(og.InvalidArgumentError, match=what):
            og.Generator(m, p)
    p = og.GeneratorParams(m)
    with pytest.raises(og.InvalidArgumentError, match="unknown speculative option"):
        p.set_speculative_options(draft_tokens=3)
    assert p.get_speculative_options()["max_draft_tokens"] == 4.0


def test_layout_that_cannot_be_cut_decodes_plainly(og):
    """gpt2's Attention masks shared columns: no speculation, the same tokens."""
    m = og.Model(package(GPT2))
    ids = prompt(1000)
    _, plain, _ = generate(og, m, ids, 64)
    g, got, _ = generate(og, m, ids, 64, FIXED)
    assert got == plain and not g.get_speculative_stats()["enabled"]


# (target, draft) pairs: the target itself (acceptance 1), its own float weights under an
# int4 target (close), and unrelated models, with hybrids on either side
DRAFT_PAIRS = [("parity_packages/stories260K-fp32", "parity_packages/stories260K-fp32"),
               ("parity_packages/stories260K-int4-acc4", "parity_packages/stories260K-fp32"),
               ("type_packages/qwen3_5_text-int4", "type_packages/qwen3_5_text-fp32"),
               ("type_packages/gptoss-int4", "type_packages/gptoss-fp32"),
               ("type_packages/llama-fp32", "type_packages/lfm2-int4"),
               ("type_packages/lfm2-int4", "type_packages/qwen3-fp32")]


@pytest.mark.parametrize("target,draft", DRAFT_PAIRS)
def test_draft_model_greedy_and_sampled(og, target, draft):
    m = og.Model(package(os.path.join(BUILD, target)))
    d = og.Model(package(os.path.join(BUILD, draft)))
    ids = story_ids(og, m) if "stories" in target else prompt(200)
    _, plain, _ = generate(og, m, ids, len(ids) + 48)
    for spec in (dict(draft_model=d, fixed_k=True, max_draft_tokens=5), dict(draft_model=d)):
        g, got, _ = generate(og, m, ids, len(ids) + 48, spec)
        assert got == plain, f"{target} drafted by {draft}, {spec}"
        if "fixed_k" in spec:
            st = g.get_speculative_stats()
            assert st["rounds"] > 0, st
            if target == draft:
                # the target drafting for itself: every drafted token is kept
                assert st["draft_tokens_accepted"] == st["draft_tokens_proposed"], st
    _, plain, _ = generate(og, m, ids, len(ids) + 32, sample_seed=7)
    _, got, _ = generate(og, m, ids, len(ids) + 32, dict(draft_model=d, fixed_k=True),
                         sample_seed=7)
    assert got == plain


def test_draft_model_refusals(og):
    m = stories(og)
    qwen = og.Model(package(os.path.join(BUILD, "parity_packages", "qwen2.5-0.5b-int4-acc0")))
    cases = [(dict(draft_model=qwen), og.InvalidArgumentError, "must share the tokenizer"),
             (dict(draft_model=m, ngram_size=3), og.InvalidArgumentError, "cannot be combined")]
    # the same width, another tokenizer (the vision package adds special tokens)
    text = os.path.join(BUILD, "type_packages", "qwen3_5_text-fp32")
    vision = os.path.join(BUILD, "type_packages", "qwen3_5-fp32")
    if os.path.isdir(text) and os.path.isdir(vision):
        m2 = og.Model(package(text))
        p = og.GeneratorParams(m2)
        p.set_speculative_options(draft_model=og.Model(package(vision)))
        with pytest.raises(og.InvalidArgumentError, match="another tokenizer"):
            og.Generator(m2, p)
    for spec, err, what in cases:
        p = og.GeneratorParams(m)
        p.set_speculative_options(**spec)
        with pytest.raises(err, match=what):
            og.Generator(m, p)
    p = og.GeneratorParams(m)
    p.set_search_options(num_beams=2)
    p.set_speculative_options(draft_model=m)
    with pytest.raises(og.UnsupportedError, match="beam search"):
        og.Generator(m, p)
    with pytest.raises(TypeError, match="draft_model"):
        p.set_speculative_options(draft_model="path")


def test_onnxruntime_genai_draft_model_same_ids(og, tmp_path):
    """onnxruntime-genai drafts with a package's `model.draft` block: stories260K fp32
    drafted by its int4 copy there and here give the same ids."""
    ort = pytest.importorskip("onnxruntime_genai")
    onnx = pytest.importorskip("onnx")
    target = package(os.path.join(BUILD, "parity_packages", "stories260K-fp32"))
    draft = package(os.path.join(BUILD, "parity_packages", "stories260K-int4-acc0"))
    copy_package(target, tmp_path, lambda c: c["model"].__setitem__(
        "draft", dict(c["model"]["decoder"], filename="draft.onnx")))
    onnx.save(onnx.load(os.path.join(draft, "model.onnx")), str(tmp_path / "draft.onnx"),
              save_as_external_data=True, location="draft.onnx.data")
    ids = np.array(og.Tokenizer(stories(og)).encode(STORY), dtype=np.int32)
    for spec in (dict(max_draft_tokens=4), dict(max_draft_tokens=8)):
        g, theirs, _ = generate(ort, ort.Model(str(tmp_path)), ids, len(ids) + 60, spec)
        assert g.get_speculative_stats()["draft_tokens_accepted"] > 0
        _, ours, _ = generate(og, stories(og), ids, len(ids) + 60,
                              dict(spec, draft_model=og.Model(draft)))
        assert ours == theirs, spec
        # the same package here: its model.draft drafts by default
        g, ours, _ = generate(og, og.Model(str(tmp_path)), ids, len(ids) + 60,
                              dict(spec, fixed_k=True))
        assert ours == theirs, spec
        assert g.get_speculative_stats()["draft_tokens_accepted"] > 0
    # where speculation does not apply (beams), the package's draft stays out of the way;
    # n-gram drafts instead of it when it is set aside
    m = og.Model(str(tmp_path))
    p = og.GeneratorParams(m)
    p.set_search_options(num_beams=2, max_length=len(ids) + 8)
    g = og.Generator(m, p)
    g.append_tokens(ids)
    while not g.is_done():
        g.generate_next_token()
    p = og.GeneratorParams(m)
    p.set_speculative_options(ngram_size=3)
    with pytest.raises(og.InvalidArgumentError, match="model.draft drafts by default"):
        og.Generator(m, p)
    p.set_speculative_options(draft_model=None)
    assert og.Generator(m, p).get_speculative_stats()["enabled"]


def test_package_speculative_section_and_broken_draft(og, tmp_path):
    """genai_config's top-level "speculative" section sets the defaults; a model.draft that
    cannot be opened leaves a warning and plain decoding."""
    src = package(os.path.join(BUILD, "parity_packages", "stories260K-fp32"))
    section = {"ngram_size": 3, "max_draft_tokens": 6, "ngram_chained_lookup": True}
    m = og.Model(copy_package(src, tmp_path / "section",
                              lambda c: c.__setitem__("speculative", section)))
    p = og.GeneratorParams(m)
    got = p.get_speculative_options()
    assert (got["ngram_size"], got["max_draft_tokens"], got["ngram_chained_lookup"]) == (3, 6, True)
    ids = story_ids(og, m)
    _, plain, _ = generate(og, stories(og), ids, len(ids) + 40)
    g, seq, _ = generate(og, m, ids, len(ids) + 40, dict(fixed_k=True))
    assert seq == plain and g.get_speculative_stats()["rounds"] > 0
    broken = copy_package(src, tmp_path / "broken", lambda c: c["model"].__setitem__(
        "draft", dict(c["model"]["decoder"], filename="missing.onnx")))
    r = cli("generate", broken, "--ids", "1,403,407", "--max-length", "20")
    assert r.returncode == 0 and "model.draft is not used" in r.stderr, r.stderr


CLI = os.path.join(BUILD, "onnx-genai")


def cli_env():
    """The environment for the CLI: without the sanitizer runtime the sanitizer suite
    preloads into python3 (the sanitized CLI carries its own)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


def cli(*args, stdin=None):
    if not os.access(CLI, os.X_OK):
        pytest.skip(f"{CLI} is missing (the build did not make the CLI)")
    return subprocess.run([CLI, *args], capture_output=True, text=True, input=stdin,
                          timeout=300, env=cli_env())


def test_cli_generate_run_bench(og):
    """generate, run and bench take --speculative; the tokens are the plain ones."""
    pkg = package(os.path.join(BUILD, "parity_packages", "stories260K-fp32"))
    draft = package(os.path.join(BUILD, "parity_packages", "stories260K-int4-acc0"))
    ids = ",".join(str(i) for i in og.Tokenizer(stories(og)).encode(STORY))
    plain = json.loads(cli("generate", pkg, "--ids", ids, "--max-length", "120", "--json").stdout)
    for spec in (["--speculative", "ngram", "--draft-fixed"],
                 ["--speculative", "ngram", "--ngram-chained", "--draft-tokens", "8"],
                 ["--speculative", "draft", "--draft-model", draft, "--draft-fixed"]):
        r = cli("generate", pkg, "--ids", ids, "--max-length", "120", "--json", *spec)
        assert r.returncode == 0, r.stderr
        got = json.loads(r.stdout)
        assert got["sequences"] == plain["sequences"], spec
        assert got["speculative"]["verifications"] > 0, got["speculative"]
    lines = STORY + "\nThe dog\n"
    tpl = "{% for m in messages %}{{ m.content }}{% endfor %}"
    with open(os.path.join(BUILD, "spec-template.jinja"), "w") as f:
        f.write(tpl)
    args = ["run", pkg, "--template-file", os.path.join(BUILD, "spec-template.jinja"),
            "--max-new-tokens", "40"]
    for extra in ([], ["--stop", "park", "--stop", "Lily"]):  # stops inside drafted blocks
        a = cli(*args, *extra, stdin=lines)
        b = cli(*args, *extra, "--speculative", "ngram", "--draft-fixed", stdin=lines)
        assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
        assert a.stdout == b.stdout, extra
    r = cli("bench", pkg, "-p", "0", "-n", "32", "-r", "1", "--probe-mb", "0", "--json",
            "--speculative", "ngram", "--draft-fixed")
    assert r.returncode == 0, r.stderr
    tests = json.loads(r.stdout)["tests"]
    assert [t["name"] for t in tests] == ["tg32", "tg32+spec"]
    assert tests[1]["speculative"]["enabled"] and tests[1]["speculative"]["speedup_vs_plain"] > 0
    for bad, what in ((["--speculative", "mtp"], "MTP"), (["--speculative", "draft"], "--draft-model"),
                      (["--speculative", "ngram", "--ngram", "1"], "too small"),
                      (["--speculative", "draft", "--draft-model",
                        os.path.join(BUILD, "parity_packages", "qwen2.5-0.5b-int4-acc0")],
                       "must share the tokenizer")):
        r = cli("generate", pkg, "--ids", ids, "--max-length", "60", *bad)
        assert r.returncode != 0 and what in r.stderr, (bad, r.stderr)


def completion(args, prompt, max_tokens, stop=None):
    """A greedy /v1/completions answer from `onnx-genai serve ARGS`, /health, and the
    speculative counters of /metrics."""
    if not os.access(CLI, os.X_OK):
        pytest.skip(f"{CLI} is missing")
    s = harness.Server(BUILD, None, *args, drop_preload=True, check=None)
    try:
        body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
        if stop:
            body["stop"] = stop
        status, answer = s.call("POST", "/v1/completions", body)
        assert status == 200, answer
        health = s.call("GET", "/health")[1]
        metrics = s.request("GET", "/metrics")[3].decode()
        for name in ("verifications", "draft_tokens", "accepted_tokens"):
            m = re.search(r"^og_spec_%s_total\{[^}]*\} (\S+)$" % name, metrics, re.M)
            health[name] = float(m.group(1)) if m else None
        return answer["choices"][0]["text"], health
    finally:
        s.stop(timeout=60)


def test_serve_speculative(og):
    """serve --speculative ngram|draft: the batched engine verifies the drafts inside its
    steps (/health says batched, /metrics counts verifications and kept drafts); the answer
    is the plain server's, also cut by a stop string; a draft model of another tokenizer
    is refused."""
    pkg = package(os.path.join(BUILD, "parity_packages", "stories260K-fp32"))
    plain, _ = completion(["-m", pkg], STORY, 60)
    got, health = completion(["-m", pkg, "--speculative", "ngram", "--draft-fixed"], STORY, 60)
    assert got == plain
    assert health.get("mode") == "batched", health
    assert health["verifications"] > 0 and health["accepted_tokens"] > 0, health
    # a stop string inside a verified block: the answer ends before it, as plain
    stop = plain.split()[len(plain.split()) // 2]
    cut, _ = completion(["-m", pkg], STORY, 60, stop=[stop])
    got, health = completion(["-m", pkg, "--speculative", "ngram", "--draft-fixed"], STORY, 60,
                             stop=[stop])
    assert got == cut and len(cut) < len(plain), (stop, cut, got)
    # a draft model: its int4 copy drafts in each sequence's own generator of it
    draft = package(os.path.join(BUILD, "parity_packages", "stories260K-int4-acc0"))
    got, health = completion(["-m", pkg, "--speculative", "draft", "--draft-model", draft,
                              "--draft-fixed"], STORY, 60)
    assert got == plain and health.get("mode") == "batched", health
    assert health["verifications"] > 0 and health["accepted_tokens"] > 0, health
    other = os.path.join(BUILD, "parity_packages", "qwen2.5-0.5b-int4-acc0")
    r = cli("serve", "-m", pkg, "--port", "0", "--speculative", "draft", "--draft-model", other)
    assert r.returncode != 0 and "must share the tokenizer" in r.stderr, r.stderr
    r = cli("serve", "-m", pkg, "--port", "0", "--speculative", "draft")
    assert r.returncode != 0 and "--draft-model" in r.stderr, r.stderr
