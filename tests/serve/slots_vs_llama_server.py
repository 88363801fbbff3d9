#!/usr/bin/env python3
"""POST /slots/{id}?action=save|restore|erase against llama.cpp's llama-server, the API's
origin: the same calls to both servers (ours on tiny-int4, llama-server on the same weights
as GGUF Q4_0 by tools/make_gguf.py), and their answers compared: the status of every call,
the fields of save / restore / erase answers and their JSON types, the message of each
refusal (no --slot-save-path, a path as filename, an unknown action, a slot id that is
not a number), and n_restored = n_saved, n_erased = n_restored within each server; a
completion with llama-server's id_slot 1 and cache_prompt false answers as the first did,
and slot 1 then saves its positions, on both. A slot
id beyond the slots is the one difference kept: llama-server (0c1e5709, the version
bench/README.md builds) answers 200 and saves another slot; we answer 400 Invalid slot ID. How many positions a save holds is printed, not compared: llama-server saves
every token its slot holds, we the whole KV blocks the prefix cache holds (README).

Usage: slots_vs_llama_server.py BUILD_DIR PACKAGES_DIR, with OG_LLAMA_SERVER=PATH of a
llama-server binary (bench/README.md, "Building the peers"). Exits 77 without it or without
the gguf / onnx Python packages make_gguf.py needs."""
import json
import os
import subprocess
import sys
import tempfile

from server_harness import FAILS, SKIP, Process, check, free_port

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


PROMPT = ("Once upon a time there was a little robot who lived in a quiet town by the sea, and every "
          "morning it")


def shape(v):
    """The JSON value's structure: dicts by key, numbers as 'number'."""
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return type(v).__name__


def session(srv):
    """The calls, in order; returns {name: (status, body)}."""
    out = {}
    out["completion"] = srv.call("POST", "/v1/completions", {"prompt": PROMPT, "max_tokens": 8, "temperature": 0})
    # llama-server may run it in any slot (ours takes the first free one): save both, keep
    # the one that holds it
    saves = [srv.call("POST", f"/slots/{k}?action=save", {"filename": f"slot{k}.bin"}) for k in (0, 1)]
    k = 0 if saves[0][1].get("n_saved", 0) >= saves[1][1].get("n_saved", 0) else 1
    out["save"] = saves[k]
    out["bad_filename"] = srv.call("POST", "/slots/0?action=save", {"filename": "../a.bin"})
    out["bad_action"] = srv.call("POST", "/slots/0?action=frobnicate", {"filename": "a.bin"})
    out["bad_id"] = srv.call("POST", "/slots/x?action=save", {"filename": "a.bin"})
    out["far_id"] = srv.call("POST", "/slots/99?action=save", {"filename": "a.bin"})
    out["missing"] = srv.call("POST", "/slots/1?action=restore", {"filename": "never.bin"})
    out["restore"] = srv.call("POST", "/slots/1?action=restore", {"filename": f"slot{k}.bin"})
    out["erase"] = srv.call("POST", "/slots/1?action=erase")
    # llama-server's request fields: the completion runs in slot 1, computing its whole
    # prompt; slot 1 then saves its positions
    out["pinned"] = srv.call("POST", "/v1/completions", {"prompt": PROMPT, "max_tokens": 8, "temperature": 0,
                                                         "id_slot": 1, "cache_prompt": False})
    out["pinned_save"] = srv.call("POST", "/slots/1?action=save", {"filename": "pinned.bin"})
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    build, pkgs = sys.argv[1:]
    llama = os.environ.get("OG_LLAMA_SERVER")
    pkg = os.path.join(pkgs, "tiny-int4")
    if not llama or not os.access(llama, os.X_OK):
        print("SKIP: set OG_LLAMA_SERVER to a llama-server binary (bench/README.md)")
        return SKIP
    if not os.path.exists(os.path.join(pkg, "genai_config.json")):
        print(f"SKIP: {pkg} is missing")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="og-slots-llama-")
    gguf = os.path.join(tmp, "tiny.gguf")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_gguf.py"), "--package", pkg,
                        "--out", gguf], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"SKIP: make_gguf.py failed: {r.stderr.strip()[-500:]}")
        return SKIP
    answers = {}
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.dirname(llama) + ":" + env.get("LD_LIBRARY_PATH", "")
    for kind in ("llama", "ours"):
        d = os.path.join(tmp, kind)
        os.makedirs(d)
        port = free_port()
        if kind == "llama":
            cmd = [llama, "-m", gguf, "--host", "127.0.0.1", "--port", str(port), "-np", "2", "-c", "1024",
                   "-t", "1", "--slot-save-path", d + "/"]
            plain = [llama, "-m", gguf, "--host", "127.0.0.1", "-np", "2", "-c", "1024", "-t", "1"]
        else:
            cmd = [os.path.join(build, "onnx-genai"), "serve", "-m", pkg, "--port", str(port), "--max-batch", "2",
                   "--threads", "1", "--slot-save-path", d]
            plain = [os.path.join(build, "onnx-genai"), "serve", "-m", pkg, "--max-batch", "2", "--threads", "1"]
        s = Process(cmd, port, env)
        try:
            answers[kind] = session(s)
        finally:
            s.stop()
        port = free_port()
        s = Process(plain + ["--port", str(port)], port, env)
        try:
            answers[kind]["no_path"] = s.call("POST", "/slots/0?action=save", {"filename": "a.bin"})
        finally:
            s.stop()
    ll, us = answers["llama"], answers["ours"]
    for name in ll:
        print(f"{name}: llama-server {ll[name][0]} {json.dumps(ll[name][1])[:300]}")
        print(f"{name}: ours         {us[name][0]} {json.dumps(us[name][1])[:300]}")
        if name != "far_id":
            check(ll[name][0] == us[name][0], f"{name}: the same status ({ll[name][0]} / {us[name][0]})")
    # a slot id beyond the slots: llama-server (0c1e5709) saves some other slot with 200;
    # we refuse it as it refuses an id that is not a number
    check(us["far_id"][0] == 400 and us["far_id"][1]["error"]["message"].startswith("Invalid slot ID"),
          f"far_id: ours 400 Invalid slot ID (llama-server: {ll['far_id'][0]})")
    for name in ("save", "restore", "erase"):
        check(shape(ll[name][1]) == shape(us[name][1]),
              f"{name}: the same fields and types ({shape(ll[name][1])} / {shape(us[name][1])})")
    for name in ("no_path", "bad_filename", "bad_action", "bad_id"):
        lm = ll[name][1].get("error", {}).get("message", "") if isinstance(ll[name][1], dict) else ""
        um = us[name][1].get("error", {}).get("message", "") if isinstance(us[name][1], dict) else ""
        check(lm != "" and um.startswith(lm), f"{name}: our message starts with llama-server's ({lm!r} / {um!r})")
        lt = ll[name][1].get("error", {}).get("type") if isinstance(ll[name][1], dict) else None
        ut = us[name][1].get("error", {}).get("type") if isinstance(us[name][1], dict) else None
        check(lt == ut, f"{name}: the same error type ({lt} / {ut})")
    for kind, a in answers.items():
        check(a["pinned"][0] == 200 and a["pinned"][1]["choices"][0]["text"] == a["completion"][1]["choices"][0]["text"]
              and a["pinned_save"][0] == 200 and a["pinned_save"][1]["n_saved"] > 0,
              f"{kind}: id_slot 1, cache_prompt false: the same answer, and slot 1 then saves "
              f"{a['pinned_save'][1].get('n_saved') if isinstance(a['pinned_save'][1], dict) else a['pinned_save']} positions")
        if a["save"][0] == 200 and a["restore"][0] == 200 and a["erase"][0] == 200:
            check(a["restore"][1]["n_restored"] == a["save"][1]["n_saved"] and
                  a["restore"][1]["n_read"] == a["save"][1]["n_written"] and
                  a["erase"][1]["n_erased"] == a["restore"][1]["n_restored"],
                  f"{kind}: n_restored = n_saved, n_read = n_written, n_erased = n_restored "
                  f"({a['save'][1]['n_saved']}, {a['restore'][1]['n_restored']}, {a['erase'][1]['n_erased']})")
    print(f"slots_vs_llama_server: {len(FAILS)} failed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
