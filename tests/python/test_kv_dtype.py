"""The KV cache stored narrower than the package declares (Model(kv_dtype=...), the CLI's
--kv-dtype): float16 and bfloat16 rows, int8 and float8e4m3fn rows quantized per position
and kv head when written.

Teacher-forced (both runs fed the float32 cache's greedy tokens), the logits of every
step stay within a stated bound of the float32 cache's: over 510 steps of stories260K
(the whole context), 510 steps of a random-weight llama package from the model maker
(context 640, head size 32, seed 5, which writes no EOS in 511 greedy steps) and 48 steps
of a random-weight Qwen2.5-0.5B-shaped int4 package (head size 64). The bounds are twice
the worst case measured, rounded up (stories260K, logits up to ~23: float16 0.044,
bfloat16 0.47, int8 1.53, float8 3.04; the random llama, logits up to 3.7: 0.0017, 0.015,
0.073, 0.24; the Qwen2.5 shape: 0.0016, 0.0115, 0.049, 0.174), not a promise of equal
tokens: free-running greedy decoding on stories260K and the random llama follows the
float32 cache's tokens until a step whose top-two margin there is inside the bound (int8
leaves it at step 118 of the held 200-step BOS prompt of ../shared/models/README.md,
where float32's margin is 0.118, and at step 251 of the random llama's 511, margin
0.0009; float16 keeps all of both).
Why int8 leaves float32's greedy tokens on stories260K (issue 24 asked for equal ids): a
double-precision numpy forward pass of the same checkpoint with the same int8 cache
(llama2c_reference.py: every (position, kv head) row rint(x * 127 / amax) * amax / 127,
the step's own row included) leaves its float64 greedy tokens at the same step 118, and
our int8 greedy ids equal that reference's for all 200 steps, our logits within 1e-3 of
its at every step (measured 2.2e-4; its top-two margin is at least 0.0045 there): the
departure is the quantization's own, not our kernels'. (onnxruntime-genai 0.18 on the
builder's int8 caches of this checkpoint, scales calibrated on this very text, leaves the
float package's greedy tokens at step 185 per channel and 53 per tensor.)
The cache really is stored so (the present outputs' dtype and width; int8's 68 bytes per
row of 64 values is 0.27x float32), batches equal their rows run alone, and what cannot
be stored so is refused with the cache named."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import BUILD, GPT2, ROOT, SHARED

STORIES = os.path.join(BUILD, "parity_packages", "stories260K-fp32")
QWEN = os.path.join(BUILD, "parity_packages", "qwen2.5-0.5b-int4-acc0")
# the largest |logit difference| allowed at any step, per package and storage
BOUND = {"stories": {"f16": 0.1, "bf16": 1.0, "int8": 3.0, "fp8": 6.0},
         "random": {"f16": 0.004, "bf16": 0.03, "int8": 0.15, "fp8": 0.5},
         "qwen": {"f16": 0.004, "bf16": 0.03, "int8": 0.1, "fp8": 0.35}}


def package(path):
    if not os.path.isfile(os.path.join(path, "genai_config.json")):
        pytest.skip(f"{path} is missing (the parity_packages fixture did not make it)")
    return path


def greedy(og, path, kv, prompt, steps, force=None):
    """Logits of every step and the greedy choices; with `force`, those tokens are fed
    instead of the choices (teacher forcing)."""
    m = og.Model(path, kv_dtype=kv)
    p = og.GeneratorParams(m)
    p.set_search_options(max_length=len(prompt) + steps, do_sample=False)
    g = og.Generator(m, p)
    g.append_tokens(prompt)
    logits, ids = [], []
    for i in range(steps - 1):
        row = np.array(g.get_logits(), dtype=np.float64).reshape(-1)
        logits.append(row)
        ids.append(int(np.argmax(row)))
        if force is None:
            g.generate_next_token()
            assert int(g.get_next_tokens()[0]) == ids[-1]
        else:
            g.append_tokens([force[i]])
    return np.array(logits), ids


CASES = [("stories", STORIES, [1], 511), ("qwen", QWEN, [151644, 872, 198, 9707, 11], 48)]


@pytest.fixture(scope="module")
def random_llama(tmp_path_factory):
    """A random-weight llama package with a 640-position context (make_model.py)."""
    pytest.importorskip("onnx")
    out = tmp_path_factory.mktemp("kv_dtype") / "llama-640"
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_model.py"), "--type",
                    "llama", "--seed", "5", "--context", "640", "--out", str(out)], check=True,
                   capture_output=True, env=env)
    return str(out)


@pytest.mark.parametrize("name,path,prompt,steps", CASES, ids=[c[0] for c in CASES])
def test_logits_within_bound_of_float_cache(og, name, path, prompt, steps):
    within_bound_of_float_cache(og, name, package(path), prompt, steps)


def test_logits_within_bound_of_float_cache_random_512(og, random_llama):
    within_bound_of_float_cache(og, "random", random_llama, [5, 17, 42], 511)


def within_bound_of_float_cache(og, name, path, prompt, steps):
    ref, ids = greedy(og, path, None, prompt, steps)
    assert len(ids) == steps - 1
    top2 = np.sort(ref, axis=1)[:, -2:]
    margin = top2[:, 1] - top2[:, 0]
    for kv in ["f16", "bf16", "int8", "fp8"]:
        got, _ = greedy(og, path, kv, prompt, steps, force=ids)
        worst = np.abs(got - ref).max(axis=1)
        bound = BOUND[name][kv]
        print(f"{name} {kv}: max |dlogit| {worst.max():.4g} (bound {bound}), mean {worst.mean():.4g}")
        assert worst.max() <= bound, (kv, int(worst.argmax()), float(worst.max()))
        if name == "qwen":
            continue
        # greedy decoding leaves the float cache's path only at a near-tie
        _, free = greedy(og, path, kv, prompt, steps)
        first = next((i for i, (a, b) in enumerate(zip(free, ids)) if a != b), None)
        if first is not None:
            assert margin[first] <= bound, (kv, first, float(margin[first]))
        if kv == "f16" and name == "stories":
            assert free[:200] == ids[:200]
        if kv == "f16" and name == "random":
            assert free == ids


def test_int8_greedy_equals_the_int8_reference_on_stories260K(og):
    """Our int8 cache against a float64 numpy run of the checkpoint with the same int8
    rows: the held BOS prompt's 200 greedy steps equal, logits within 1e-3 at every step
    (teacher-forced on the reference's tokens), and both leave their float greedy tokens
    at the same step."""
    ckpt = os.path.join(SHARED, "models", "llama2c", "stories260K.bin")
    if not os.path.isfile(ckpt):
        pytest.skip(f"{ckpt} is missing")
    from llama2c_reference import Llama2cReference
    path, steps = package(STORIES), 200
    ref = Llama2cReference(ckpt)
    ref_logits, ref_ids = ref.run(1, steps, int8=True)
    _, ref_float = ref.run(1, steps)
    ours = run(og, og.Model(path, kv_dtype="int8"), [1], steps + 1)[0][1:]
    assert ours == ref_ids
    got, _ = greedy(og, path, "int8", [1], steps + 1, force=ref_ids)
    worst = np.abs(got - ref_logits).max(axis=1)
    print(f"stories int8 vs the float64 int8 reference: max |dlogit| {worst.max():.3g}")
    assert worst.max() <= 1e-3, (int(worst.argmax()), float(worst.max()))
    ours_float = run(og, og.Model(path), [1], steps + 1)[0][1:]
    leave = lambda a, b: next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)  # noqa: E731
    assert leave(ours, ours_float) == leave(ref_ids, ref_float) == 118


def test_cache_is_stored_quantized(og):
    path = package(QWEN)
    for kv, dtype, width in [("int8", np.int8, 68), ("f16", np.float16, 64), ("bf16", None, 64)]:
        m = og.Model(path, kv_dtype=kv)
        p = og.GeneratorParams(m)
        p.set_search_options(max_length=16)
        g = og.Generator(m, p)
        g.append_tokens([151644, 872, 198])
        g.generate_next_token()
        present = g.get_output("present.0.key")
        assert present.shape[-1] == width and present.shape[1] == 2
        if dtype is not None:
            assert present.dtype == dtype
        if kv == "int8":  # 0.27x float32's bytes per position
            assert width / (64 * 4) <= 0.27


def run(og, m, prompt, max_length, batch=1):
    p = og.GeneratorParams(m)
    p.set_search_options(max_length=max_length, do_sample=False, batch_size=batch)
    g = og.Generator(m, p)
    g.append_tokens(np.array(prompt, dtype=np.int32))
    while not g.is_done():
        g.generate_next_token()
    return [g.get_sequence(i).tolist() for i in range(batch)]


def test_batch_rows_equal_their_runs_alone(og):
    path = package(QWEN)
    prompts = [[151644, 872, 198, 9707, 11, 1879], [151644, 872, 198, 40, 1079, 264]]
    for kv in ["int8", "fp8"]:
        m = og.Model(path, kv_dtype=kv)
        alone = [run(og, m, pr, 28)[0] for pr in prompts]
        assert run(og, m, prompts, 28, batch=2) == alone, kv


def test_refused_where_it_cannot_be_stored(og):
    with pytest.raises(ValueError, match="kv_dtype"):
        og.Model(package(STORIES), kv_dtype="int4")
    if os.path.isfile(os.path.join(GPT2, "genai_config.json")):
        # gpt2's caches belong to MultiHeadAttention / Attention, not GroupQueryAttention
        with pytest.raises(Exception, match="past"):
            og.Model(GPT2, kv_dtype="int8")
    with pytest.raises(Exception, match="native backend"):
        og.Model(package(STORIES), kv_dtype="int8", backend="ort")


def test_cli_kv_dtype(og):
    exe = os.path.join(BUILD, "onnx-genai")
    if not os.path.isfile(exe):
        pytest.skip(f"{exe} is missing")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    path = package(STORIES)
    r = subprocess.run([exe, "generate", "-m", path, "--ids", "1", "--max-length", "120",
                        "--kv-dtype", "int8", "--json"], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["sequences"][0] == run(og, og.Model(path, kv_dtype="int8"), [1], 120)[0]
    r = subprocess.run([exe, "generate", "-m", path, "-p", "x", "--kv-dtype", "int4"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode != 0 and "--kv-dtype" in r.stderr and "int8" in r.stderr
