#!/usr/bin/env python3
"""The CLI writes generated text that holds NUL characters whole: a byte-fallback token
(<0x00> of llama2.c's tok512 tokenizer) decodes to one, and neither generate's JSON
("\\u0000" in "text") nor its plain output (the bytes) may stop there.

The package is written here: the tok512 tokenizer (tools/model_maker/llama2c.py, from
../shared/models/llama2c/tok512.bin) and a scripted decoder: logits = Gather(table,
position_ids), a one-hot row per position, so greedy (and beam) search produces exactly
the token sequence chosen below, through the real generator, tokenizer and output code.
Oracle: HF tokenizers decoding the same ids from the package's tokenizer.json.

Cases: generate --json (sequences and text), generate streaming (plain bytes), generate
--num-beams 2 (the non-streaming plain path), generate --chat --json (text and tokens),
run (one answer from standard input, plain bytes).
Usage: nul_text.py BUILD_DIR SHARED_DIR. Exits 77 (skipped) when tok512.bin, onnx or
tokenizers is missing."""
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

failures = 0


def check(cond, what):
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures += 1
    return cond


# A ChatML-less template, as the serving tests' stories260K has: the turns' text after <s>.
TEMPLATE = ("{{ bos_token }}{% for message in messages %}{{ message['content'] }}"
            "{% if not loop.last %}{{ ' ' }}{% endif %}{% endfor %}")
VOCAB = 512
MAX_LENGTH = 64


def write_package(out, tok_json, tok_cfg, script):
    """script: the ids the sequence must hold, position by position; the logits at
    position p pick script[p + 1], and EOS (2) after the end."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    os.makedirs(out, exist_ok=True)
    table = np.zeros((MAX_LENGTH, VOCAB), np.float32)
    for p in range(MAX_LENGTH):
        table[p, script[p + 1] if p + 1 < len(script) else 2] = 30.0
    g = helper.make_graph(
        [helper.make_node("Gather", ["table", "position_ids"], ["logits"], axis=0)], "scripted",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", VOCAB])],
        [numpy_helper.from_array(table, "table")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, os.path.join(out, "model.onnx"))
    cfg = {
        "model": {
            "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0, "type": "llama",
            "vocab_size": VOCAB, "context_length": MAX_LENGTH,
            "decoder": {
                "filename": "model.onnx", "head_size": 8, "hidden_size": 8,
                "num_attention_heads": 1, "num_key_value_heads": 1, "num_hidden_layers": 0,
                "inputs": {"input_ids": "input_ids", "position_ids": "position_ids"},
                "outputs": {"logits": "logits"},
            },
        },
        "search": {"do_sample": False, "max_length": MAX_LENGTH, "num_beams": 1,
                   "num_return_sequences": 1, "top_k": 1, "early_stopping": True,
                   "length_penalty": 1.0},
    }
    for name, obj in (("genai_config.json", cfg), ("tokenizer.json", tok_json),
                      ("tokenizer_config.json", dict(tok_cfg, chat_template=TEMPLATE))):
        with open(os.path.join(out, name), "w") as f:
            json.dump(obj, f)


def run(cmd, stdin=b""):
    p = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if p.returncode != 0:
        print(f"FAIL {' '.join(cmd)}: exit {p.returncode}: {p.stderr.decode(errors='replace')}")
    return p.returncode, p.stdout


def tok512(shared):
    """(tokenizer.json, tokenizer_config, HF Tokenizer) of llama2.c's tok512, or None after
    saying why not (no tok512.bin, onnx or tokenizers)."""
    tok_bin = os.path.join(shared, "models", "llama2c", "tok512.bin")
    if not os.path.exists(tok_bin):
        print(f"SKIP: {tok_bin} is missing (the shared test models are not beside the project)")
        return None
    try:
        import onnx  # noqa: F401
        from tokenizers import Tokenizer
    except ImportError as e:
        print(f"SKIP: {e.name} is not installed (tools/requirements.txt): no package or no oracle")
        return None
    from model_maker import llama2c

    pieces, scores, _ = llama2c.read_tokenizer_bin(tok_bin, VOCAB)
    tok_json = llama2c.tokenizer_json(pieces, scores)
    return tok_json, llama2c.tokenizer_config(MAX_LENGTH), Tokenizer.from_str(json.dumps(tok_json))


def main():
    build, shared = sys.argv[1], sys.argv[2]
    got = tok512(shared)
    if not got:
        return SKIP
    tok_json, tok_cfg, tok = got
    nul = tok.token_to_id("<0x00>")
    if not check(nul is not None and tok.decode([nul]) == "\x00", "the tokenizer has the byte token <0x00>"):
        return 1
    words = lambda t: tok.encode(t, add_special_tokens=False).ids  # noqa: E731
    gen = words("Once upon a time") + [nul] + words("there was a girl") + [nul, nul] + words("Lily ran")

    def after(context):
        """The generated tokens' text after the prompt's ids: decode(prompt + generated)
        beyond decode(prompt), as HF transformers' pipeline takes an answer."""
        full, head = tok.decode(context + gen), tok.decode(context)
        check(full.startswith(head), f"oracle: {head!r} begins {full!r}")
        return full[len(head):]
    bin_ = os.path.join(build, "onnx-genai")
    tmp = tempfile.mkdtemp(prefix="og-nul-")
    try:
        # generate -p: the prompt encoded with <s>; generate --chat / run: the template's text
        prompt = tok.encode("Tom").ids
        chat_prompt = tok.encode(f"{tok_cfg['bos_token']}Tom", add_special_tokens=False).ids
        pkg = os.path.join(tmp, "gen")
        write_package(pkg, tok_json, tok_cfg, prompt + gen)
        full = tok.decode(prompt + gen)
        answer = after(prompt)
        check(answer.count("\x00") == 3 and answer.endswith("Lily ran"), f"oracle answer {answer!r}")
        rc, out = run([bin_, "generate", pkg, "-p", "Tom", "--json"])
        if rc == 0:
            j = json.loads(out)
            check(j["sequences"] == [prompt + gen], f"generate --json: the scripted ids ({j['sequences']})")
            check(j["text"] == [full] and b"\\u0000" in out,
                  f"generate --json: text with NUL characters equals the decode of the ids ({j['text']!r})")
        rc, out = run([bin_, "generate", pkg, "-p", "Tom"])
        # the prompt as given, then the generated tokens' text after it (" Once", the
        # first piece's space kept, as in the whole sequence's decode)
        check(rc == 0 and out == ("Tom" + answer + "\n").encode(),
              f"generate: the streamed bytes hold the NUL bytes and what follows ({out!r})")
        rc, out = run([bin_, "generate", pkg, "-p", "Tom", "--num-beams", "2"])
        check(rc == 0 and out == (full + "\n").encode(), f"generate --num-beams 2: the bytes ({out!r})")

        pkg = os.path.join(tmp, "chat")
        write_package(pkg, tok_json, tok_cfg, chat_prompt + gen)
        answer = after(chat_prompt)  # after the template's text "<s>Tom"
        rc, out = run([bin_, "generate", "--chat", pkg, "-p", "Tom", "--json"])
        if rc == 0:
            j = json.loads(out)
            check(j["tokens"] == gen and j["stop_reason"] == "eos", f"generate --chat --json: the scripted ids ({j['tokens']})")
            check(j["text"] == answer and b"\\u0000" in out,
                  f"generate --chat --json: text with NUL characters equals the decode of the ids ({j['text']!r})")
        rc, out = run([bin_, "run", pkg], stdin=b"Tom\n")
        check(rc == 0 and out == (answer + "\n").encode(), f"run: the answer's bytes ({out!r})")
    finally:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
