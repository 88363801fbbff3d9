#!/usr/bin/env python3
"""`onnx-genai serve` with images and audio in chat requests (issue 26), over HTTP.

Images: a random Qwen3-VL package from the model maker (tools/make_model.py --type qwen3_vl,
as test_vision_generate.py uses) with a chat template written here in the form of Qwen's
(an image part becomes <|vision_start|><|image_pad|><|vision_end|>). OpenAI `image_url`
parts with base64 data: URLs (PNG, and JPEG where image-write-jpeg is built) must give the
greedy ids onnxruntime-genai 0.18 gives on the same package for the template's text of the
same conversation through its processor (og.Images.open, processor(prompt, images=...),
generator.set_inputs): one image with text around it, two images of different sizes in one
message, images in two user turns. The answer's ids are read from its logprobs (each
token's bytes, mapped back through the byte-level vocabulary: unique), since a random
model's text is not valid UTF-8 (a token that is part of a character has its own bytes
there, as OpenAI's `bytes` has them). /tokenize with an image gives the processor's input_ids.
Refused with a 400 naming the part: an http URL (the server fetches nothing), a file path,
bad base64, an image that does not decode, an audio part on this package.

Gemma 3 the same way on make_model --type gemma3 with a template in the form of Gemma 3's
(<start_of_image> for an image part, expanded to 256 soft tokens between blank lines).

Audio: the Whisper package of tests/audio/check_whisper_pipeline.py (plain ONNX ops, which
onnxruntime-genai runs) with a tokenizer written here whose decoder-prompt tokens lie in its
96-id vocabulary. An `input_audio` part (a WAV) gives the ids onnxruntime-genai gives for the
default decoder prompt and the clip's Whisper features (our processor's, which equal
transformers' as check_whisper_features.py holds; onnxruntime-genai's own differ from
transformers' at a few frames, so its features are not the oracle); format mp3 and an image
part are refused.

Exact: ids are integers. Usage: test_serve_media.py BUILD_DIR. Exit 77 without
onnxruntime-genai, onnx or the server binary. About 20 s.
"""
import base64
import io
import json
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = sys.argv[1] if len(sys.argv) > 1 else ""
CLI_ENV = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
STEPS = 12

try:
    import onnxruntime_genai as ort_og
    import onnx  # noqa: F401 (the model maker and the Whisper writer need it)
except ImportError as e:
    print(f"SKIP: {e} (tools/install_deps.sh installs onnxruntime-genai and onnx)")
    sys.exit(SKIP)
EXE = os.path.join(BUILD, "onnx-genai")
if not os.access(EXE, os.X_OK):
    print(f"SKIP: no server binary {EXE}")
    sys.exit(SKIP)

import onnx_genai as og  # noqa: E402 (PYTHONPATH and ONNX_GENAI_LIBRARY set by CTest)

sys.path[:0] = [os.path.join(ROOT, "tests", "audio"), os.path.join(ROOT, "tests", "serve")]
import check_whisper_pipeline as wp  # noqa: E402 (the Whisper package and tokenizer writers)
import server_harness as harness  # noqa: E402
from test_vision_generate import png_bytes  # noqa: E402

failures = []
IMG = "<|vision_start|><|image_pad|><|vision_end|>"
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.content is string %}"
    "{{ m.content }}{% else %}{% for c in m.content %}{% if c.type == 'image' or "
    "c.type == 'image_url' %}<|vision_start|><|image_pad|><|vision_end|>{% elif c.type == "
    "'text' %}{{ c.text }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def report(ok, what, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}{'' if ok else ': ' + str(detail)[:600]}")
    if not ok:
        failures.append(what)


class Server(harness.Server):
    """The shared server harness (tests/serve/server_harness.py), its post answering
    (status, the JSON or the raw body) as these cases read it."""

    def __init__(self, pkg):
        super().__init__(BUILD, pkg, drop_preload=True, check=report)

    def post(self, path, body):
        return self.call("POST", path, body)


def byte_vocab(pkg):
    """bytes -> id of a byte-level BPE tokenizer.json (GPT-2's byte-to-character table)."""
    back = {ch: b for b, ch in wp.byte_chars()}
    with open(os.path.join(pkg, "tokenizer.json"), encoding="utf-8") as f:
        vocab = json.load(f)["model"]["vocab"]
    return {bytes(back[ch] for ch in tok): i for tok, i in vocab.items()}


def answer_ids(j, vocab):
    """The answer's ids, from its logprobs' bytes (a token's own bytes, also where it is
    part of a UTF-8 character)."""
    if not isinstance(j, dict) or "choices" not in j:
        return f"no answer: {j}"
    lp = j["choices"][0].get("logprobs") or {}
    return [vocab.get(bytes(e["bytes"]), f"?{e['bytes']}") for e in lp.get("content", [])]


def theirs_generate(model, prompt, paths, eos, steps=STEPS):
    proc = model.create_multimodal_processor()
    inputs = proc(prompt, images=ort_og.Images.open(*paths) if paths else None)
    ids = inputs["input_ids"].as_numpy()
    params = ort_og.GeneratorParams(model)
    params.set_search_options(max_length=int(ids.shape[-1]) + steps, do_sample=False)
    gen = ort_og.Generator(model, params)
    gen.set_inputs(inputs)
    out = []
    while not gen.is_done():
        gen.generate_next_token()
        out.append(int(gen.get_next_tokens()[0]))
    if out and out[-1] in eos:  # the server's answer ends before its EOS
        out = out[:-1]
    return [int(x) for x in ids.reshape(-1)], out


def render(msgs):
    """TEMPLATE's text of msgs ([(role, [text or image marker])])."""
    return "".join(f"<|im_start|>{r}\n" + "".join(IMG if p is None else p for p in parts) +
                   "<|im_end|>\n" for r, parts in msgs) + "<|im_start|>assistant\n"


def data_url(path):
    mime = "image/jpeg" if path.endswith(".jpg") else "image/png"
    with open(path, "rb") as f:
        return f"data:{mime};base64," + base64.b64encode(f.read()).decode()


def image_part(path):
    return {"type": "image_url", "image_url": {"url": data_url(path)}}


def images_case(tmp, paths):
    pkg = os.path.join(tmp, "qwen3_vl")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_model.py"), "--type",
                    "qwen3_vl", "--dtype", "fp32", "--out", pkg], check=True,
                   stdout=subprocess.DEVNULL)
    with open(os.path.join(pkg, "chat_template.jinja"), "w", encoding="utf-8") as f:
        f.write(TEMPLATE)
    with open(os.path.join(pkg, "genai_config.json"), encoding="utf-8") as f:
        eos = json.load(f)["model"]["eos_token_id"]
    eos = set(eos if isinstance(eos, list) else [eos])
    vocab = byte_vocab(pkg)
    theirs = ort_og.Model(pkg)
    s = Server(pkg)
    try:
        a, b, c = paths["a"], paths["b"], paths["c"]
        cases = [
            ("one image, text around it",
             [{"role": "user", "content": [{"type": "text", "text": "look "}, image_part(a),
                                           {"type": "text", "text": " and tell me"}]}],
             [("user", ["look ", None, " and tell me"])], [a]),
            ("two images of different sizes in one message (" + os.path.basename(c) + ")",
             [{"role": "user", "content": [image_part(b), {"type": "text", "text": "then"},
                                           image_part(c)]}],
             [("user", [None, "then", None])], [b, c]),
            ("images in two user turns",
             [{"role": "user", "content": [image_part(a), {"type": "text", "text": "what?"}]},
              {"role": "assistant", "content": "a cat"},
              {"role": "user", "content": [{"type": "text", "text": "and "}, image_part(b)]}],
             [("user", [None, "what?"]), ("assistant", ["a cat"]), ("user", ["and ", None])],
             [a, b]),
        ]
        for what, msgs, conv, files in cases:
            body = {"messages": msgs, "max_tokens": STEPS, "temperature": 0, "logprobs": True}
            st, j = s.post("/v1/chat/completions", body)
            ids, want = theirs_generate(theirs, render(conv), files, eos)
            got = answer_ids(j, vocab) if st == 200 else f"{st} {j}"
            report(got == want, f"chat, {what}: {len(want)} ids equal onnxruntime-genai's "
                   f"(prompt {len(ids)} tokens)", f"ours {got} theirs {want}")
            if what.startswith("one image"):
                st, tj = s.post("/tokenize", {"messages": msgs})
                got_ids = tj.get("tokens") if st == 200 else f"{st} {tj}"
                report(got_ids == ids, f"/tokenize with an image: the processor's {len(ids)} "
                       "input_ids", f"ours {got_ids} theirs {ids}")
                # another image of the same size gives other ids: the image reaches the model
                msgs2 = [{"role": "user", "content": [{"type": "text", "text": "look "},
                                                      image_part(paths["a2"]),
                                                      {"type": "text", "text": " and tell me"}]}]
                st, j2 = s.post("/v1/chat/completions", dict(body, messages=msgs2))
                report(st == 200 and answer_ids(j2, vocab) != got,
                       "another image of the same size: other ids", j2)
        st, j = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}],
                                                "max_tokens": 4, "temperature": 0})
        report(st == 200, f"a text-only request on the vision package ({st})", j)
        png = open(a, "rb").read()
        bad = [
            ("an http URL", {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
             "network"),
            ("a file path", {"type": "image_url", "image_url": {"url": "/etc/passwd"}}, "data: URL"),
            ("bad base64", {"type": "image_url", "image_url": {"url": "data:image/png;base64,@@"}},
             "base64"),
            ("a truncated PNG", {"type": "image_url", "image_url": {
                "url": "data:image/png;base64," + base64.b64encode(png[:len(png) // 2]).decode()}},
             "messages[0].content[1]"),
            ("audio on a vision package", {"type": "input_audio",
                                           "input_audio": {"data": "AAAA", "format": "wav"}},
             "takes no audio"),
        ]
        for what, part, words in bad:
            msgs = [{"role": "user", "content": [{"type": "text", "text": "x"}, part]}]
            st, j = s.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 2})
            msg = j["error"]["message"] if isinstance(j, dict) and "error" in j else str(j)
            param = j["error"].get("param") if isinstance(j, dict) and "error" in j else None
            report(st == 400 and param == "messages[0].content[1]" and words in msg,
                   f"refused: {what} (400, {msg[:100]!r})", f"{st} {param} {msg}")
    finally:
        s.stop()


GEMMA_TEMPLATE = (
    "{% for m in messages %}<start_of_turn>{{ m.role }}\n{% if m.content is string %}"
    "{{ m.content }}{% else %}{% for c in m.content %}{% if c.type == 'image' %}"
    "<start_of_image>{% elif c.type == 'text' %}{{ c.text }}{% endif %}{% endfor %}{% endif %}"
    "<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")


def gemma3_case(tmp, paths):
    """Gemma 3 (make_model --type gemma3) with a template in the form of Gemma 3's (an image
    part becomes <start_of_image>): one image, and an image in each of two turns, against
    onnxruntime-genai's processor on the template's text; /tokenize's ids."""
    pkg = os.path.join(tmp, "gemma3")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_model.py"), "--type",
                    "gemma3", "--dtype", "fp32", "--context", "1024", "--out", pkg], check=True,
                   stdout=subprocess.DEVNULL)
    with open(os.path.join(pkg, "chat_template.jinja"), "w", encoding="utf-8") as f:
        f.write(GEMMA_TEMPLATE)
    vocab, theirs = byte_vocab(pkg), ort_og.Model(pkg)
    with open(os.path.join(pkg, "genai_config.json"), encoding="utf-8") as f:
        eos = json.load(f)["model"]["eos_token_id"]
    eos = set(eos if isinstance(eos, list) else [eos])
    s = Server(pkg)
    try:
        a, c = paths["a"], paths["c"]
        one = [{"role": "user", "content": [image_part(a), {"type": "text", "text": "Describe it."}]}]
        text = "<start_of_turn>user\n<start_of_image>Describe it.<end_of_turn>\n<start_of_turn>model\n"
        st, j = s.post("/v1/chat/completions", {"messages": one, "max_tokens": STEPS,
                                                "temperature": 0, "logprobs": True})
        ids, want = theirs_generate(theirs, text, [a], eos)
        got = answer_ids(j, vocab) if st == 200 else f"{st} {j}"
        report(got == want, f"gemma3 chat, one image: {len(want)} ids equal onnxruntime-genai's "
               f"(prompt {len(ids)} tokens)", f"ours {got} theirs {want}")
        st, tj = s.post("/tokenize", {"messages": one})
        report(st == 200 and tj.get("tokens") == ids, f"gemma3 /tokenize with an image: the "
               f"processor's {len(ids)} input_ids", f"ours {tj} theirs {ids}")
        two = [{"role": "user", "content": [image_part(c), {"type": "text", "text": "this?"}]}]
        text = "<start_of_turn>user\n<start_of_image>this?<end_of_turn>\n<start_of_turn>model\n"
        st, j = s.post("/v1/chat/completions", {"messages": two, "max_tokens": STEPS,
                                                "temperature": 0, "logprobs": True})
        ids, want2 = theirs_generate(theirs, text, [c], eos)
        got = answer_ids(j, vocab) if st == 200 else f"{st} {j}"
        report(got == want2, f"gemma3 chat, another image: {len(want2)} ids equal "
               "onnxruntime-genai's", f"ours {got} theirs {want2}")
    finally:
        s.stop()


def write_whisper_tokenizer(pkg):
    """A byte-level tokenizer whose ids fit the package's 96: 90 byte symbols, then
    <|startoftranscript|>, <|en|>, <|transcribe|>, <|notimestamps|> at 90..93 and
    <|endoftext|> at 95 (the package's EOS)."""
    vocab = {ch: i for i, (_, ch) in enumerate(wp.byte_chars()[:90])}
    vocab["<|unused94|>"] = 94
    wp.save_tokenizer(pkg, vocab, {"<|startoftranscript|>": 90, "<|en|>": 91,
                                   "<|transcribe|>": 92, "<|notimestamps|>": 93,
                                   "<|endoftext|>": 95})
    return byte_vocab(pkg)


def audio_case(tmp, png_path):
    pkg = os.path.join(tmp, "whisper")
    wp.write_package(pkg)
    vocab = write_whisper_tokenizer(pkg)
    wav = io.BytesIO()
    with wave.open(wav, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        t = np.arange(24000) / 16000
        sig = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * np.random.default_rng(3).standard_normal(t.size)
        w.writeframes(np.round(np.clip(sig, -1, 1) * 32767).astype("<i2").tobytes())
    wav = wav.getvalue()
    # the oracle: onnxruntime-genai on the same package, fed the clip's Whisper features
    feats = og.Audios.open_bytes(wav).input_features(80).as_numpy()
    prompt = [90, 91, 92, 93]
    model = ort_og.Model(pkg)
    params = ort_og.GeneratorParams(model)
    params.set_search_options(max_length=len(prompt) + STEPS, do_sample=False)
    gen = ort_og.Generator(model, params)
    gen.set_model_input("audio_features", np.ascontiguousarray(feats, np.float32))
    gen.append_tokens(np.array([prompt], np.int32))
    while not gen.is_done():
        gen.generate_next_token()
    want = [int(x) for x in gen.get_sequence(0)[len(prompt):]]
    if want and want[-1] == 95:
        want = want[:-1]
    s = Server(pkg)
    try:
        part = {"type": "input_audio", "input_audio": {"data": base64.b64encode(wav).decode(),
                                                       "format": "wav"}}
        st, j = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": [part]}],
                                                "max_tokens": STEPS, "temperature": 0,
                                                "logprobs": True})
        got = answer_ids(j, vocab) if st == 200 else f"{st} {j}"
        report(got == want, f"Whisper, an input_audio part: {len(want)} ids equal "
               "onnxruntime-genai's (default decoder prompt)", f"ours {got} theirs {want}")
        st, j = s.post("/v1/completions", {"prompt": "<|startoftranscript|>", "max_tokens": 2})
        msg = j["error"]["message"] if isinstance(j, dict) and "error" in j else str(j)
        report(st == 400 and "input_audio" in msg, f"Whisper: a completion refused (400, "
               f"{msg[:80]!r})", f"{st} {msg}")
        for what, p, words in [
                ("mp3", {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "mp3"}},
                 "not read"),
                ("an image", image_part(png_path), "takes no images"),
                ("a WAV that is not one", {"type": "input_audio",
                                           "input_audio": {"data": "AAAAAAAA", "format": "wav"}},
                 "messages[0].content[0]")]:
            st, j = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": [p]}],
                                                    "max_tokens": 2})
            msg = j["error"]["message"] if isinstance(j, dict) and "error" in j else str(j)
            report(st == 400 and words in msg, f"Whisper: refused {what} (400, {msg[:100]!r})",
                   f"{st} {msg}")
    finally:
        s.stop()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(26)
        paths, arrays = {}, {}
        for name, (h, w) in {"a": (70, 100), "a2": (70, 100), "b": (64, 90),
                             "c": (150, 120)}.items():
            paths[name] = os.path.join(tmp, name + ".png")
            arrays[name] = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
            with open(paths[name], "wb") as f:
                f.write(png_bytes(arrays[name]))
        # a JPEG through libjpeg-turbo's writer where it is built (4:2:0)
        writer = os.path.join(BUILD, "tests", "images", "image-write-jpeg")
        if os.access(writer, os.X_OK):
            jpg, raw = os.path.join(tmp, "c.jpg"), os.path.join(tmp, "c.rgb")
            arrays["c"].tofile(raw)
            r = subprocess.run([writer, raw, "120", "150", "90", "420", jpg], capture_output=True,
                               env=CLI_ENV)
            if r.returncode == 0:
                paths["c"] = jpg
            else:
                print(f"no JPEG: {r.stderr.decode()[:200]}")
        images_case(tmp, paths)
        gemma3_case(tmp, paths)
        audio_case(tmp, paths["a"])
    if failures:
        print(f"{len(failures)} FAILED")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
