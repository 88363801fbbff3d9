#!/usr/bin/env python3
"""`generate --chat` and `run` split a reasoning model's <think> blocks from its answer as
`serve` does, where genai_config names no bor/eor tokens but the chat template writes the
blocks (Qwen3's and QwQ's: the block opens the answer; DeepSeek-R1's: the generation prompt
ends inside it).

The packages are nul_text.py's scripted decoders (logits = Gather(table, position_ids), so
greedy search writes exactly the chosen tokens through the real generator, tokenizer and
output code) with templates of both kinds. Oracles: HF tokenizers' decode of the scripted
ids, split as the templates themselves read an answer back
(answer.split('</think>')[-1].lstrip('\\n') for the answer, the part before it less its
newlines for the reasoning).

Cases: generate --chat --json ("thinking" and "text"), plain generate --chat (the answer
on stdout, the reasoning on stderr after "[thinking]"), --hide-reasoning (none printed),
--reasoning-format none (the text as written, no "thinking"), the R1 form, piped run.
Usage: reasoning_text.py BUILD_DIR SHARED_DIR. Exits 77 (skipped) when tok512.bin, onnx or
tokenizers is missing."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "serve")]
import nul_text  # noqa: E402
from nul_text import SKIP, check, write_package  # noqa: E402
from test_reasoning_tools import template_split  # noqa: E402  (the templates' read-back)

# Qwen3-like: the block opens the answer; an assistant turn read back without it.
QWEN_STYLE = ("{{ bos_token }}{% for m in messages %}{% if m['role'] == 'assistant' %}"
              "{{ m['content'].split('</think>')[-1] }}{% elif '<think>' not in m['content'] %}"
              "{{ m['content'] }}{% endif %}{% endfor %}")
# DeepSeek-R1-like: the generation prompt opens the block.
R1_STYLE = QWEN_STYLE + "{% if add_generation_prompt %}<think>\n{% endif %}"


def run(cmd, stdin=b""):
    p = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def main():
    build, shared = sys.argv[1], sys.argv[2]
    got = nul_text.tok512(shared)
    if not got:
        return SKIP
    tok_json, tok_cfg, tok = got
    words = lambda t: tok.encode(t, add_special_tokens=False).ids  # noqa: E731
    bin_ = os.path.join(build, "onnx-genai")
    tmp = tempfile.mkdtemp(prefix="og-think-")
    try:
        for name, tpl, prompt_text, said in (
                ("qwen", QWEN_STYLE, "Tom", "<think>\nI should greet.\n</think>\n\nHello there."),
                ("r1", R1_STYLE, "Tom<think>\n", "I should greet.\n</think>\n\nHello there.")):
            context = words(f"{tok_cfg['bos_token']}{prompt_text}")
            gen = words(said)
            full, head = tok.decode(context + gen), tok.decode(context)
            answer = full[len(head):] if full.startswith(head) else None
            check(answer is not None, f"{name}: oracle: the prompt's decode begins the sequence's")
            reasoning, content = template_split(("<think>\n" if name == "r1" else "") + answer)
            check(reasoning.strip() == "I should greet." and content == "Hello there.",
                  f"{name}: oracle split ({reasoning!r}, {content!r})")
            pkg = os.path.join(tmp, name)
            write_package(pkg, tok_json, tok_cfg, context + gen)
            with open(os.path.join(pkg, "tokenizer_config.json")) as f:
                cfg = json.load(f)
            cfg["chat_template"] = tpl
            with open(os.path.join(pkg, "tokenizer_config.json"), "w") as f:
                json.dump(cfg, f)
            chat = [bin_, "generate", "--chat", pkg, "-p", "Tom"]
            rc, out, err = run(chat + ["--json"])
            j = json.loads(out) if rc == 0 else {}
            check(rc == 0 and j.get("tokens") == gen, f"{name}: generate --chat --json: the scripted ids ({err.strip()})")
            check(j.get("thinking") == reasoning and j.get("text") == content,
                  f"{name}: --json: thinking {j.get('thinking')!r} and text {j.get('text')!r} as the template reads them back")
            rc, out, err = run(chat)
            check(rc == 0 and out == content + "\n" and f"[thinking] {reasoning}" in err,
                  f"{name}: generate --chat: the answer on stdout ({out!r}), the reasoning on stderr ({err!r})")
            rc, out, err = run(chat + ["--hide-reasoning"])
            check(rc == 0 and out == content + "\n" and "greet" not in err,
                  f"{name}: --hide-reasoning: the answer only ({out!r}, stderr {err!r})")
            rc, out, err = run(chat + ["--json", "--reasoning-format", "none"])
            j = json.loads(out) if rc == 0 else {}
            check(j.get("text") == answer and j.get("thinking") == "",
                  f"{name}: --reasoning-format none: the text as written ({j.get('text')!r})")
            rc, out, err = run([bin_, "run", pkg], stdin=b"Tom\n")
            check(rc == 0 and out == content + "\n", f"{name}: piped run: the answer's line ({out!r})")
        rc, _, err = run([bin_, "generate", "--chat", os.path.join(tmp, "qwen"), "-p", "x", "--reasoning-format", "deepseek"])
        check(rc != 0 and "--reasoning-format" in err, f"--reasoning-format deepseek is refused ({err.strip()})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{nul_text.failures} failed")
    return 1 if nul_text.failures else 0


if __name__ == "__main__":
    sys.exit(main())
