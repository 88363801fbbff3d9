#!/usr/bin/env python3
"""The chat-template corpus (../shared/chat-templates): every template x every
conversation rendered by `onnx-genai template` must be byte-identical to what jinja2
renders in transformers' environment (the corpus's render.py, run here at test time);
where jinja2 raises, ours must fail too, naming the same exception class.

Usage: corpus_test.py ONNX_GENAI_BINARY CORPUS_DIR"""
import json
import os
import subprocess
import sys
import tempfile

NOW = "2025-07-10T12:00:00"


def main():
    binary, corpus = sys.argv[1], sys.argv[2]
    if not os.path.isfile(os.path.join(corpus, "render.py")):
        print(f"SKIP: {corpus}/render.py is missing (the shared chat-template corpus is not "
              "beside the project)")
        return 77
    os.environ["CHAT_TEMPLATE_NOW"] = NOW
    sys.path.insert(0, corpus)
    try:
        import render  # the oracle: jinja2 in transformers' chat-template environment
    except ImportError as e:
        print(f"SKIP: the oracle cannot run ({e}); install tools/requirements.txt")
        return 77
    env = render.make_environment()
    with open(os.path.join(corpus, "conversations.json"), encoding="utf-8") as f:
        cases = json.load(f)
    tdir = os.path.join(corpus, "templates")
    names = sorted(n[:-6] for n in os.listdir(tdir) if n.endswith(".jinja"))
    ok = raised = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            base = os.path.join(tmp, case["name"])
            with open(base + ".messages.json", "w", encoding="utf-8") as f:
                json.dump(case["messages"], f, ensure_ascii=False)
            if case.get("tools") is not None:
                with open(base + ".tools.json", "w", encoding="utf-8") as f:
                    json.dump(case["tools"], f, ensure_ascii=False)
        for name in names:
            path = os.path.join(tdir, name + ".jinja")
            with open(path, encoding="utf-8", newline="") as f:
                source = f.read()
            tokens, _ = render.TOKENS.get(name, (render.DEFAULT_TOKENS, "default"))
            for case in cases:
                try:
                    want = render.render_case(env, source, case, tokens).encode("utf-8")
                    want_err = None
                except Exception as e:  # jinja2 raised: ours must fail as well
                    want, want_err = None, (type(e).__name__, str(e))
                base = os.path.join(tmp, case["name"])
                cmd = [binary, "template", path, "--messages", base + ".messages.json",
                       "--bos", tokens["bos_token"], "--eos", tokens["eos_token"]]
                if case.get("tools") is not None:
                    cmd += ["--tools", base + ".tools.json"]
                if case.get("add_generation_prompt"):
                    cmd.append("--add-generation-prompt")
                if case.get("extra"):
                    cmd += ["--extra", json.dumps(case["extra"])]
                r = subprocess.run(cmd, capture_output=True)
                label = f"{name} x {case['name']}"
                if want_err is not None:
                    err = r.stderr.decode(errors="replace").strip()
                    if r.returncode != 0 and want_err[0] + ":" in err:
                        raised += 1
                    elif r.returncode != 0:
                        failed += 1
                        print(f"FAIL {label}: jinja2 raised {want_err[0]}: {want_err[1]}; ours "
                              f"failed differently: {err}")
                    else:
                        failed += 1
                        print(f"FAIL {label}: jinja2 raised {want_err[0]}: {want_err[1]}; ours "
                              f"rendered {len(r.stdout)} bytes")
                elif r.returncode != 0:
                    failed += 1
                    print(f"FAIL {label}: ours failed: {r.stderr.decode(errors='replace').strip()}")
                elif r.stdout != want:
                    failed += 1
                    i = next((k for k in range(min(len(want), len(r.stdout)))
                              if want[k] != r.stdout[k]), min(len(want), len(r.stdout)))
                    print(f"FAIL {label}: differs at byte {i}: want {want[max(0, i - 40):i + 40]!r} "
                          f"got {r.stdout[max(0, i - 40):i + 40]!r}")
                else:
                    ok += 1
    print(f"{len(names)} templates x {len(cases)} conversations: {ok} identical, {raised} raised "
          f"in both, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
