#!/usr/bin/env python3
"""The chat commands as users meet them, on packages made from the parity fixture's
stories260K (a real trained model) with a chat template written here:

  - `template` renders exactly what jinja2 renders (jinja_env.py, the oracle);
  - `show` names the template;
  - `generate --chat`: stop strings cut the answer before them (also across tokens),
    --max-new-tokens, several EOS ids, reasoning/tool tokens of genai_config reported in
    their own channels (the expectation is rebuilt from the token ids with HF tokenizers'
    incremental decoding);
  - `run` with standard input piped: a turn per line, /exit;
  - `run` in a real terminal under tmux: two turns, the second taking the first turn's
    tokens from the KV cache and prefilling only what it adds, with the same answers as
    when the whole conversation runs again; Ctrl-C during an answer stops that answer
    and not the program (on the slower qwen2.5-0.5b-shaped package).

Usage: cli_test.py BUILD_DIR PARITY_PACKAGES_DIR WORK_DIR"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

TEMPLATE = ("{% for m in messages %}{% if m.role == 'system' %}{{ m.content }}\n"
            "{% elif m.role == 'user' %}{{ bos_token }}{{ m.content }}"
            "{% elif m.role == 'assistant' %}{{ m.content }}{{ eos_token }}{% endif %}{% endfor %}")
CHATML = ("{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}"
          "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else f": {detail}"))
    if not cond:
        failures.append(name)


def make_package(src, dst, template, config_edit=None):
    """A copy of package src with template in its tokenizer_config.json. Files are hard
    linked (a symbolic link out of the package folder is refused by the loader), or
    copied across file systems."""
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    for f in os.listdir(src):
        if f not in ("tokenizer_config.json", "genai_config.json"):
            try:
                os.link(os.path.join(src, f), os.path.join(dst, f))
            except OSError:
                shutil.copy(os.path.join(src, f), os.path.join(dst, f))
    with open(os.path.join(src, "tokenizer_config.json")) as f:
        cfg = json.load(f)
    cfg["chat_template"] = template
    with open(os.path.join(dst, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    with open(os.path.join(src, "genai_config.json")) as f:
        gcfg = json.load(f)
    if config_edit:
        config_edit(gcfg)
    with open(os.path.join(dst, "genai_config.json"), "w") as f:
        json.dump(gcfg, f, indent=1)
    return cfg


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def chat_json(binary, pkg, prompt, *extra):
    r = run([binary, "generate", "--chat", pkg, "-p", prompt, "--json", *extra])
    if r.returncode != 0:
        raise RuntimeError(f"generate --chat failed: {r.stderr}")
    return json.loads(r.stdout)


def incremental_pieces(tok, ids, context=()):
    """What each token adds to the text after the prompt's ids (`context`), as an
    incremental decoder (the oracle) sees it: decode(context + ids[:i + 1]) beyond
    decode(context + ids[:i]), as transformers' text-generation pipeline takes an answer
    (the whole decode beyond the prompt's)."""
    context = list(context)
    prev = tok.decode(context, skip_special_tokens=True)
    pieces = []
    for i in range(len(ids)):
        text = tok.decode(context + ids[: i + 1], skip_special_tokens=True)
        assert text.startswith(prev), (prev, text)
        pieces.append(text[len(prev):])
        prev = text
    return pieces


def test_commands(binary, stories, work):
    import jinja_env
    pkg = os.path.join(work, "stories-chat")
    cfg = make_package(stories, pkg, TEMPLATE)

    r = run([binary, "show", pkg])
    check("show_names_template", r.returncode == 0 and
          f"template 'default' from {pkg}/tokenizer_config.json chat_template" in r.stdout, r.stdout[-400:])

    msgs = [{"role": "system", "content": "Stories"}, {"role": "user", "content": "Once upon a time"},
            {"role": "assistant", "content": "there was a cat."}, {"role": "user", "content": "Tell more"}]
    mpath = os.path.join(work, "messages.json")
    with open(mpath, "w") as f:
        json.dump(msgs, f)
    r = run([binary, "template", pkg, "--messages", mpath, "--add-generation-prompt"])
    want = jinja_env.render(jinja_env.make_env(), TEMPLATE,
                            {"messages": msgs, "add_generation_prompt": True, "tools": None,
                             "documents": None, "bos_token": cfg["bos_token"], "eos_token": cfg["eos_token"],
                             "unk_token": cfg["unk_token"]})
    check("template_matches_jinja2", r.returncode == 0 and r.stdout == want, f"{r.stdout!r} vs {want!r}")
    r = run([binary, "template", pkg, "--messages", mpath, "--bos", "[B]"])
    check("template_bos_override", r.returncode == 0 and r.stdout.startswith("Stories\n[B]Once"), r.stdout)
    with open(os.path.join(work, "bad.json"), "w") as f:
        f.write("[{\"role\": ")
    r = run([binary, "template", pkg, "--messages", os.path.join(work, "bad.json")])
    check("template_bad_json", r.returncode == 1 and "messages: not valid JSON" in r.stderr
          and r.stderr.count("\n") == 1, r.stderr)
    r = run([binary, "template", stories, "--messages", mpath])
    check("template_none_in_package", r.returncode == 1 and "no chat template" in r.stderr, r.stderr)
    bad_tpl = os.path.join(work, "bad.jinja")
    with open(bad_tpl, "w") as f:
        f.write("{% for m in messages %}\n{{ m.content|shout }}\n{% endfor %}")
    r = run([binary, "template", bad_tpl, "--messages", mpath])
    check("template_unknown_filter", r.returncode == 1 and
          f"{bad_tpl}:2: TemplateAssertionError: No filter named 'shout'." in r.stderr, r.stderr)
    r = run([binary, "template", pkg])
    check("template_needs_messages", r.returncode == 1 and "--messages" in r.stderr, r.stderr)

    # the answer without stop strings: the reference for what follows
    prompt = "Lily saw a cat"
    full = chat_json(binary, pkg, prompt, "--max-new-tokens", "60")
    text, ids = full["text"], full["tokens"]
    check("max_new_tokens", full["generated_tokens"] == 60 and full["stop_reason"] == "max_new_tokens"
          and len(ids) == 60, str(full)[:300])

    import tokenizers
    tok = tokenizers.Tokenizer.from_file(os.path.join(stories, "tokenizer.json"))
    # the answer continues the rendered prompt, encoded as generate --chat does (no
    # special tokens added: the template writes them)
    with open(os.path.join(work, "one.json"), "w") as f:
        json.dump([{"role": "user", "content": prompt}], f)
    r = run([binary, "template", pkg, "--messages", os.path.join(work, "one.json"), "--add-generation-prompt"])
    context = tok.encode(r.stdout, add_special_tokens=False).ids
    pieces = incremental_pieces(tok, ids, context)
    check("answer_is_decoded_tokens", "".join(pieces) == text, f"{''.join(pieces)!r} vs {text!r}")

    # a stop string that spans tokens: the text is cut right before it
    k = next(i for i in range(8, len(pieces) - 3) if len(pieces[i]) > 1 and len(pieces[i + 1]) > 1)
    start = len("".join(pieces[:k])) + 1
    stop = text[start:start + len(pieces[k]) + 2]  # from inside token k into token k+1
    cut = chat_json(binary, pkg, prompt, "--max-new-tokens", "60", "--stop", "no such text", "--stop", stop)
    check("stop_string_across_tokens", cut["stop_reason"] == "stop_string" and
          cut["text"] == text[:text.index(stop)], f"stop {stop!r}: {cut['text']!r}")

    # plain generate: --max-new-tokens counts generated tokens, --stop cuts the text before
    # a stop string that spans tokens (the same stop, on the text generate continues)
    plain = json.loads(run([binary, "generate", stories, "-p", prompt, "--max-new-tokens", "40",
                            "--json"]).stdout)
    gen_ids = plain["sequences"][0]
    n_prompt = len(tok.encode(prompt).ids)
    check("generate_max_new_tokens", len(gen_ids) == n_prompt + 40, str(plain)[:300])
    gen_pieces = incremental_pieces(tok, gen_ids[n_prompt:], gen_ids[:n_prompt])
    gen_text = "".join(gen_pieces)
    k = next(i for i in range(6, len(gen_pieces) - 3)
             if len(gen_pieces[i]) > 1 and len(gen_pieces[i + 1]) > 1)
    start = len("".join(gen_pieces[:k])) + 1
    gstop = gen_text[start:start + len(gen_pieces[k]) + 2]
    r = run([binary, "generate", stories, "-p", prompt, "--max-new-tokens", "40", "--stop", gstop])
    check("generate_stop", r.returncode == 0 and
          r.stdout == prompt + gen_text[:gen_text.index(gstop)] + "\n", f"{gstop!r}: {r.stdout!r}")
    r = run([binary, "generate", stories, "-p", prompt, "--max-new-tokens", "40", "--stop", gstop,
             "--json"])
    want = tok.decode(gen_ids[:n_prompt], skip_special_tokens=True) + gen_text[:gen_text.index(gstop)]
    check("generate_stop_json", r.returncode == 0 and json.loads(r.stdout)["text"] == [want],
          f"{want!r}: {r.stdout[-300:]}")

    # several EOS ids: the config's list, any of them ends the answer
    comma = tok.token_to_id(",")
    first_comma = ids.index(comma) if comma in ids else None
    if first_comma is None:
        check("several_eos_ids", False, "the reference answer has no comma to use as an EOS id")
    else:
        eos_pkg = os.path.join(work, "stories-eos")
        make_package(stories, eos_pkg, TEMPLATE,
                     lambda g: g["model"].__setitem__("eos_token_id", [g["model"]["eos_token_id"], comma]))
        r = chat_json(binary, eos_pkg, prompt, "--max-new-tokens", "60")
        check("several_eos_ids", r["stop_reason"] == "eos" and r["tokens"] == ids[:first_comma]
              and r["text"] == "".join(pieces[:first_comma]), str(r)[:300])

    # reasoning between bor/eor and tool calls between bot/eot, reported apart from the answer
    period = tok.token_to_id(".")

    def channel_package(name, first, last):
        """stories with the channel's genai_config ids first and last: a comma and a period."""
        path = os.path.join(work, name)
        make_package(stories, path, TEMPLATE, lambda g: g["model"].update({first: comma, last: period}))
        return path
    ch_pkg = channel_package("stories-channels", "bor_token_id", "eor_token_id")
    r = chat_json(binary, ch_pkg, prompt, "--max-new-tokens", "60")
    answer, thinking, inside = "", "", False
    for t, p in zip(ids, pieces):
        if t == comma:
            inside = True
        elif t == period:
            inside = False
        elif inside:
            thinking += p
        else:
            answer += p
    check("reasoning_channel", r["tokens"] == ids and r["thinking"] == thinking and r["text"] == answer
          and thinking != "", f"{r['thinking']!r} / {r['text']!r} vs {thinking!r} / {answer!r}")
    r = run([binary, "generate", "--chat", ch_pkg, "-p", prompt, "--max-new-tokens", "60"])
    check("reasoning_on_stderr", r.returncode == 0 and r.stdout.rstrip("\n") == answer and
          "[thinking] " in r.stderr, f"{r.stdout!r} {r.stderr!r}")

    # one prompt from standard input when it is not a terminal
    r = run([binary, "run", pkg, "--max-new-tokens", "60"], input=prompt + "\n")
    check("run_reads_stdin", r.returncode == 0 and r.stdout == text + "\n", f"{r.stdout!r}")

    # tool calls between bot/eot: a list of calls (none here: the text is a story, not a
    # JSON call), the channel's text beside, as the reasoning channel's is rebuilt above
    tool_pkg = channel_package("stories-tools", "bot_token_id", "eot_token_id")
    r = chat_json(binary, tool_pkg, prompt, "--max-new-tokens", "60")
    check("tool_calls_is_a_list", r["tool_calls"] == [] and r["tool_call_text"] == thinking and
          r["text"] == answer, f"{r.get('tool_calls')!r} / {r.get('tool_call_text')!r} vs {thinking!r}")

    # not on a terminal: a turn per line of standard input, each answer on its line, the
    # conversation kept; /exit ends it (the line after it is not answered). The second
    # answer's oracle: the rendered conversation, encoded by HF tokenizers, through plain
    # `generate --ids`, decoded incrementally
    second = "Tom had a dog"
    r = run([binary, "run", pkg, "--max-new-tokens", "60"],
            input=f"{prompt}\n\n{second}\r\n/exit\nnot answered\n")
    conv = [{"role": "user", "content": prompt}, {"role": "assistant", "content": text},
            {"role": "user", "content": second}]
    rendered = jinja_env.render(jinja_env.make_env(), TEMPLATE,
                                {"messages": conv, "add_generation_prompt": True, "tools": None,
                                 "documents": None, "bos_token": cfg["bos_token"],
                                 "eos_token": cfg["eos_token"], "unk_token": cfg["unk_token"]})
    ctx = tok.encode(rendered, add_special_tokens=False).ids
    g = run([binary, "generate", "-m", pkg, "--ids", ",".join(map(str, ctx)),
             "--max-length", str(len(ctx) + 60), "--json"])
    new = json.loads(g.stdout)["sequences"][0][len(ctx):] if g.returncode == 0 else []
    want2 = "".join(incremental_pieces(tok, new, ctx))
    check("run_turn_per_line", r.returncode == 0 and want2 and r.stdout == text + "\n" + want2 + "\n",
          f"{r.stdout!r} vs {text!r} / {want2!r} ({r.stderr[-300:]!r})")
    r = run([binary, "run", pkg, "--max-new-tokens", "60"], input=f"/exit\n{prompt}\n")
    check("run_piped_exit", r.returncode == 0 and r.stdout == "", f"{r.stdout!r}")
    return pkg


class Tmux:
    def __init__(self, name, command, width=220):
        self.name = name
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
        # A tmux server whose last session was just killed exits; a new-session that reaches
        # it then fails with "server exited unexpectedly": try again on a fresh server.
        for _ in range(10):
            r = subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", str(width), "-y",
                                "50", command + "; echo EXITED $?; sleep 600"],
                               capture_output=True, text=True)
            if r.returncode == 0:
                return
            time.sleep(0.3)
        raise RuntimeError(f"tmux new-session: {r.stderr.strip()}")

    def send(self, *keys):
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def screen(self):
        r = subprocess.run(["tmux", "capture-pane", "-p", "-J", "-S", "-200", "-t", self.name],
                           capture_output=True, text=True)
        return r.stdout

    def wait(self, pattern, timeout):
        """The screen once pattern (multi-line; capture-pane drops trailing spaces, so a
        prompt reads ">>>") is on it, or None after timeout seconds."""
        end = time.time() + timeout
        while time.time() < end:
            s = self.screen()
            if re.search(pattern, s, re.MULTILINE):
                return s
            time.sleep(0.2)
        return None

    def close(self):
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def test_tmux_turns(binary, pkg, timeout):
    screens = {}
    for mode in ("reuse", "no-reuse"):
        cmd = f"{binary} run {pkg} --max-new-tokens 40 --verbose" + (" --no-cache-reuse" if mode == "no-reuse" else "")
        t = Tmux(f"og-chat-{os.getpid()}-{mode}", cmd)
        try:
            ok = t.wait(r"^>>>\s*$", timeout) is not None
            t.send("Once upon a time", "Enter")
            ok = ok and t.wait(r"^\[turn 1:.*\]\s*\n>>>\s*$", timeout) is not None
            t.send("Lily went to the park", "Enter")
            s = t.wait(r"^\[turn 2:.*\]\s*\n>>>\s*$", timeout)
            t.send("/exit", "Enter")
            s2 = t.wait(r"EXITED 0", timeout)
            screens[mode] = s
            check(f"tmux_two_turns_{mode}", ok and s is not None and s2 is not None, t.screen()[-800:])
        finally:
            t.close()
    if not screens.get("reuse") or not screens.get("no-reuse"):
        return
    stats = {m: re.findall(r"\[turn (\d): prompt (\d+) tokens \((\d+) from the cache, (\d+) prefilled.*?(\d+) tokens, .*?\]",
                           screens[m]) for m in screens}
    (_, p1, r1, f1, n1), (_, p2, r2, f2, _) = [tuple(map(int, x)) for x in stats["reuse"]]
    check("turn1_prefills_all", r1 == 0 and f1 == p1, str(stats["reuse"]))
    # turn 2 finds turn 1 (its prompt and answer, all but the last answer token, which was
    # never run) in the cache and prefills only the rest
    check("turn2_reuses_cache", r2 == p1 + n1 - 1 and f2 == p2 - r2 and f2 < p2, str(stats["reuse"]))
    (_, q1, _, _, _), (_, q2, s2, g2, _) = [tuple(map(int, x)) for x in stats["no-reuse"]]
    check("no_reuse_prefills_all", s2 == 0 and g2 == q2 and q2 == p2, str(stats["no-reuse"]))

    def answers(s):
        return [line.rstrip() for line in s.splitlines() if line.strip() and not line.startswith("[turn ")]
    check("reuse_same_answers", answers(screens["reuse"]) == answers(screens["no-reuse"]),
          f"{answers(screens['reuse'])} vs {answers(screens['no-reuse'])}")


def test_tmux_commands(binary, pkg, timeout):
    """/system changes the conversation's start (nothing can come from the cache), /clear
    forgets it, Ctrl-C at the prompt gives a fresh prompt."""
    t = Tmux(f"og-chat-{os.getpid()}-cmds", f"{binary} run {pkg} --max-new-tokens 8 --verbose")
    try:
        ok = t.wait(r"^>>>\s*$", timeout) is not None
        t.send("Once upon a time", "Enter")
        ok = ok and t.wait(r"^\[turn 1:.*\]\s*\n>>>\s*$", timeout) is not None
        t.send("/system Tell a story", "Enter")
        ok = ok and t.wait(r"^\(system prompt set\)", timeout) is not None
        t.send("The dog", "Enter")
        s2 = t.wait(r"^\[turn 2: prompt (\d+) tokens \(0 from the cache", timeout)
        check("tmux_system_prompt", ok and s2 is not None and "Tell a story" in s2, t.screen()[-600:])
        t.send("/clear", "Enter")
        ok = t.wait(r"^\(conversation cleared\)", timeout) is not None
        t.send("The dog", "Enter")
        s3 = t.wait(r"^\[turn 3: prompt (\d+) tokens \(0 from the cache, (\d+) prefilled", timeout)
        if ok and s3:
            p2 = int(re.search(r"\[turn 2: prompt (\d+) tokens", s3).group(1))
            p3 = int(re.search(r"\[turn 3: prompt (\d+) tokens", s3).group(1))
            ok = p3 < p2  # the first turn is gone; the system prompt stays
        check("tmux_clear", ok and s3 is not None, t.screen()[-600:])
        # Ctrl-C only once the half line is on the screen, as a user sees it: the terminal
        # drops output it has not yet handed to tmux when the interrupt comes, so a Ctrl-C
        # sent at once can take the echo with it on a loaded machine
        t.send("half a line")
        ok = t.wait(r"^>>> half a line", timeout) is not None
        t.send("C-c")
        ok = ok and t.wait(r"^>>> half a line.*\n>>>\s*$", timeout) is not None
        check("tmux_ctrl_c_at_prompt", ok, t.screen()[-400:])
        t.send("/exit", "Enter")
        check("tmux_exit", t.wait(r"EXITED 0", timeout) is not None, t.screen()[-400:])
    finally:
        t.close()


def test_tmux_ctrl_c(binary, qwen, work, timeout):
    pkg = os.path.join(work, "qwen-chat")
    make_package(qwen, pkg, CHATML)
    t = Tmux(f"og-chat-{os.getpid()}-ctrlc", f"{binary} run {pkg} --max-length 512 --max-new-tokens 400 --verbose")
    try:
        ok = t.wait(r"^>>>\s*$", timeout) is not None
        t.send("Hello", "Enter")
        # once some of the answer is on the screen, Ctrl-C
        ok = ok and t.wait(r"^>>> Hello\s*\n\S.{7,}", timeout) is not None
        t.send("C-c")
        s = t.wait(r"\[stopped\]\s*\n\[turn 1:.*stop: interrupted\]\s*\n>>>\s*$", timeout)
        check("ctrl_c_stops_answer", ok and s is not None, t.screen()[-600:])
        t.send("/exit", "Enter")
        check("ctrl_c_program_lives_on", t.wait(r"EXITED 0", timeout) is not None, t.screen()[-300:])
    finally:
        t.close()


def main():
    build, parity, work = sys.argv[1], sys.argv[2], sys.argv[3]
    binary = os.path.join(build, "onnx-genai")
    stories = os.path.join(parity, "stories260K-fp32")
    if not os.path.isfile(os.path.join(stories, "genai_config.json")):
        print(f"SKIP: {stories} is missing (the parity_packages fixture did not make it)")
        return 77
    try:
        import jinja_env  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError as e:
        print(f"SKIP: an oracle is missing ({e}); install tools/requirements.txt")
        return 77
    os.makedirs(work, exist_ok=True)
    timeout = float(os.environ.get("OG_TMUX_TIMEOUT", "120"))
    pkg = test_commands(binary, stories, work)
    if shutil.which("tmux") is None:
        print("SKIP tmux tests: tmux is not installed (tools/install_deps.sh installs it)")
    else:
        test_tmux_turns(binary, pkg, timeout)
        test_tmux_commands(binary, pkg, timeout)
        qwen = os.path.join(parity, "qwen2.5-0.5b-int4-acc0")
        if os.path.isfile(os.path.join(qwen, "genai_config.json")):
            test_tmux_ctrl_c(binary, qwen, work, timeout)
        else:
            print(f"SKIP tmux Ctrl-C test: {qwen} is missing")
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
