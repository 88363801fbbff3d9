#!/usr/bin/env python3
"""`onnx-genai serve`'s POST /slots/{id}?action=save|restore|erase (llama-server's slot
persistence, --slot-save-path), over real HTTP:

  slot_save  Without --slot-save-path: 501 with llama-server's message and error type.
             stories260K (blocks of 16): a greedy completion of a 40-token id prompt (its
             text `generate --ids`'s) leaves its tokens in slot 0; save writes the cached
             whole blocks (48 of the 51 positions computed) and n_written is the file's size;
             llama-server's refusals (Invalid filename for a path or "..", Invalid action,
             Invalid slot ID for a non-number and one out of range, 400 for a missing file),
             415 for a body that is not JSON; erase (n_erased: the slot's 52 tokens) takes the
             blocks out of the cache. A fresh server with blocks of 8 restores the file (48
             positions, n_read = the size): the same prompt takes 32 positions from the cache
             (usage.prompt_tokens_details, and a hit in /metrics) and a prompt of the first 51
             tokens of the answered sequence all 48, and both answers equal the first
             server's without the file, text and log-probabilities to the bit (the check
             fails when the restore writes no KV); erase empties it again. A file of another
             package (tiny-int4), a cut one, one with a flipped byte and one that is not a
             slot file are refused with 400 naming why. hybrid-qwen3_5 (recurrent and conv
             states): a 140-token prompt's save holds 128 positions (its last state snapshot,
             at a multiple of 64) and the state; restored in a fresh server the prompt takes
             128 from the cache and its answer's log-probabilities equal the first server's
             (they differ when the state and KV are not restored). A model served per
             sequence (on onnxruntime, when it loads) answers 501 naming why.
  slot_fields llama-server's request fields: id_slot 2 runs the completion in slot 2 (its
             save holds the 48 cached positions, slot 0's none; the answer generate's);
             cache_prompt false takes nothing from the prefix cache and counts no lookup,
             true (and id_slot -1) takes 32 positions, the answer the same each time; chat
             takes both; an id_slot beyond the slots, below -1, not an integer or with two
             choices, and a cache_prompt not a boolean, are 400 naming the field; a request
             naming a slot whose request runs is answered after that request ends. With
             --no-prefix-cache save, restore and erase all answer 501 saying why.

Usage: test_slots.py BUILD_DIR PACKAGES_DIR CASE. Exits 77 when a package is missing."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

from prompt_ids import token_prompts
from server_harness import SKIP, Server, check, run


def generate_ids(build, pkg, ids, max_new):
    """`generate --ids`: (the new ids, the whole sequence's text)."""
    out = subprocess.run([os.path.join(build, "onnx-genai"), "generate", "-m", pkg, "--ids",
                          ",".join(map(str, ids)), "--max-length", str(len(ids) + max_new), "--json"],
                         capture_output=True, text=True, check=True, timeout=300)
    j = json.loads(out.stdout)
    return j["sequences"][0][len(ids):], j["text"][0]


def story_prompt(build, stories):
    """A 40-token id prompt for stories260K, `generate --ids`'s 12 new ids for it and the
    whole sequence's text."""
    vocab = json.load(open(os.path.join(stories, "genai_config.json")))["model"]["vocab_size"]
    prompt = token_prompts(vocab, [40], 4242)[0]
    return (prompt, *generate_ids(build, stories, prompt, 12))


def complete(s, ids, max_tokens, logprobs=False):
    """Greedy /v1/completions of a token-id prompt: (the answer's text, or with logprobs its
    tokens' log-probabilities, and the cached tokens)."""
    body = {"prompt": ids, "max_tokens": max_tokens, "temperature": 0}
    if logprobs:
        body["logprobs"] = 0
    st, _, j, text = s.post("/v1/completions", body)
    if st != 200:
        raise SystemExit(f"completion failed: {st} {text!r}")
    cached = j["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0)
    c = j["choices"][0]
    return (c["text"], c["logprobs"]["token_logprobs"]) if logprobs else c["text"], cached


def action(s, slot, what, filename=None, model=None):
    q = f"/slots/{slot}?action={what}" + (f"&model={model}" if model else "")
    st, _, j, text = s.request("POST", q, {"filename": filename} if filename is not None else None)
    return st, j if j is not None else text


def error_is(st, j, status, message, what):
    got = (j or {}).get("error", {}) if isinstance(j, dict) else {}
    return check(st == status and message in got.get("message", ""),
                 f"{what}: {status} '{message}' (got {st} {got.get('message')!r})")


def case_slot_save(build, pkgs):
    stories = os.path.join(pkgs, "stories260K")
    tiny = os.path.join(pkgs, "tiny-int4")
    hybrid = os.path.join(pkgs, "hybrid-qwen3_5")
    for p in (stories, tiny, hybrid):
        if not os.path.exists(os.path.join(p, "genai_config.json")):
            print(f"SKIP: {p} is missing (serve_packages did not write it)")
            return SKIP
    tmp = tempfile.mkdtemp(prefix="og-slots-")
    prompt, want, want_text = story_prompt(build, stories)
    longer = (prompt + want)[:51]  # the answered sequence's first 51 tokens

    s = Server(build, stories)  # no --slot-save-path
    try:
        st, j = action(s, 0, "save", "x.bin")
        error_is(st, j, 501, "This server does not support slots action. Start it with `--slot-save-path`",
                 "without --slot-save-path")
        check(isinstance(j, dict) and j["error"].get("type") == "not_supported_error",
              f"... error type not_supported_error ({j})")
    finally:
        s.stop()

    s = Server(build, stories, "--slot-save-path", tmp, "--block-size", "16", "--max-batch", "4")
    try:
        # the answers without a restored cache first (the longer prompt's blocks stay cached
        # here but are not the slot's), then the prompt whose tokens slot 0 keeps
        text_longer, _ = complete(s, longer, 6, logprobs=True)
        text_a, _ = complete(s, prompt, 12, logprobs=True)
        check(len(text_a[1]) == 12, f"a 12-token completion ({len(text_a[1])})")
        prompt_text = s.post("/detokenize", {"tokens": prompt})[2]["prompt"]
        check(want_text == prompt_text + text_a[0], f"... generate's answer ({want_text[len(prompt_text):]!r} "
              f"vs {text_a[0]!r})")
        st, _, slots, _ = s.request("GET", "/slots")
        check(st == 200 and not slots[0]["is_processing"], "slot 0 idle after it")
        st, j = action(s, 0, "save", "story.bin")
        size = os.path.getsize(os.path.join(tmp, "story.bin")) if os.path.exists(os.path.join(tmp, "story.bin")) else -1
        check(st == 200 and j.get("id_slot") == 0 and j.get("filename") == "story.bin" and
              j.get("n_saved") == 48 and j.get("n_written") == size and "save_ms" in j.get("timings", {}),
              f"save: 48 positions (3 blocks of 16 of the 51 computed), n_written = the file's {size} bytes ({j})")
        check(not os.path.exists(os.path.join(tmp, "story.bin.tmp")), "no temporary file left")
        for bad in ("../story.bin", "a/b.bin", "..", "", " x"):
            st, j = action(s, 0, "save", bad)
            error_is(st, j, 400, "Invalid filename", f"save to {bad!r}")
        st, j = action(s, 0, "restore", "../../etc/passwd")
        error_is(st, j, 400, "Invalid filename", "restore from a path")
        st, j = action(s, 0, "frobnicate", "story.bin")
        error_is(st, j, 400, "Invalid action", "an unknown action")
        st, j = action(s, "x", "save", "story.bin")
        error_is(st, j, 400, "Invalid slot ID", "a slot id that is not a number")
        st, j = action(s, 9, "save", "story.bin")
        error_is(st, j, 400, "Invalid slot ID", "a slot beyond --max-batch")
        st, j = action(s, 0, "restore", "never-saved.bin")
        check(st == 400, f"restoring a file never saved: 400 ({st} {j})")
        st, _, j, _ = s.request("POST", "/slots/0?action=save", raw=b"filename=x",
                                headers={"Content-Type": "text/plain"})
        check(st == 415, f"a body that is not JSON: 415 ({st})")
        # erase: the slot's tokens (40 + 12) and their cached blocks go
        st, j = action(s, 0, "erase")
        check(st == 200 and j == {"id_slot": 0, "n_erased": 52}, f"erase: n_erased 52 ({j})")
        _, cached = complete(s, prompt, 4)
        check(cached == 0, f"after erase the prompt finds nothing cached ({cached})")
    finally:
        s.stop()

    # a fresh server, blocks of 8: the file's 48 positions are 6 of its blocks
    s = Server(build, stories, "--slot-save-path", tmp, "--block-size", "8", "--max-batch", "4")
    try:
        st, j = action(s, 1, "restore", "story.bin")
        check(st == 200 and j.get("id_slot") == 1 and j.get("n_restored") == 48 and
              j.get("n_read") == size and "restore_ms" in j.get("timings", {}),
              f"restore into a server with blocks of 8: 48 positions, n_read {size} ({j})")
        m0 = s.metrics()
        text, cached = complete(s, prompt, 12, logprobs=True)
        check(cached == 32, f"the same prompt takes 32 positions (4 blocks short of its last token) "
              f"from the restored cache ({cached})")
        check(text == text_a, f"... and answers as the server did without it ({text!r} vs {text_a!r})")
        m1 = s.metrics()
        check(m1["og_prefix_cache_hits_total"] > m0.get("og_prefix_cache_hits_total", 0),
              "the hit is counted in /metrics")
        text, cached = complete(s, longer, 6, logprobs=True)
        check(cached == 48 and text == text_longer,
              f"the answered sequence's first 51 tokens take all 48 restored positions ({cached}) "
              f"and answer as without them ({text!r} vs {text_longer!r})")
        st, j = action(s, 1, "erase")
        check(st == 200 and j.get("n_erased") == 48, f"erase the restored slot: its 48 tokens ({j})")
        _, cached = complete(s, prompt, 2)
        check(cached == 0, f"... and the prompt finds nothing cached after it ({cached})")
        # damaged files
        raw = open(os.path.join(tmp, "story.bin"), "rb").read()
        open(os.path.join(tmp, "cut.bin"), "wb").write(raw[:len(raw) // 2])
        flipped = bytearray(raw)
        flipped[len(raw) // 2] ^= 0x40
        open(os.path.join(tmp, "flipped.bin"), "wb").write(bytes(flipped))
        open(os.path.join(tmp, "junk.bin"), "wb").write(b"not a slot file at all")
        for name, why in (("cut.bin", "cut or damaged"), ("flipped.bin", "cut or damaged"),
                          ("junk.bin", "not a slot file")):
            st, j = action(s, 0, "restore", name)
            error_is(st, j, 400, why, f"restore {name}")
    finally:
        s.stop()

    s = Server(build, tiny, "--slot-save-path", tmp)
    try:
        st, j = action(s, 0, "restore", "story.bin")
        error_is(st, j, 400, "saved from the model 'stories260K'", "a file of another package")
    finally:
        s.stop()

    # per-sequence mode (the model on onnxruntime) has no pool to save from
    try:
        s = Server(build, tiny, "--slot-save-path", tmp, "--backend", "ort")
    except SystemExit as e:
        print(f"note: no per-sequence check, the server does not start on onnxruntime ({e})")
        s = None
    if s:
        try:
            complete(s, [5, 6, 7], 2)
            st, j = action(s, 0, "save", "ort.bin")
            error_is(st, j, 501, "needs the batched engine", "save in per-sequence mode")
        finally:
            s.stop()

    # a hybrid: the KV up to its last state snapshot, and that state
    hv = json.load(open(os.path.join(hybrid, "genai_config.json")))["model"]["vocab_size"]
    hp = token_prompts(hv, [140], 99)[0]
    s = Server(build, hybrid, "--slot-save-path", tmp, "--max-batch", "4")
    try:
        htext, _ = complete(s, hp, 8, logprobs=True)
        st, j = action(s, 0, "save", "hybrid.bin")
        check(st == 200 and j.get("n_saved") == 128, f"hybrid save: 128 positions (the snapshot at 128) ({j})")
    finally:
        s.stop()
    s = Server(build, hybrid, "--slot-save-path", tmp, "--max-batch", "4")
    try:
        st, j = action(s, 0, "restore", "hybrid.bin")
        check(st == 200 and j.get("n_restored") == 128, f"hybrid restore: 128 positions ({j})")
        text, cached = complete(s, hp, 8, logprobs=True)
        check(cached == 128 and text == htext,
              f"hybrid: the prompt takes 128 positions and the restored state ({cached}), and answers "
              f"as without them ({text!r} vs {htext!r})")
    finally:
        s.stop()
    return 0


def case_slot_fields(build, pkgs):
    """llama-server's request fields id_slot and cache_prompt on /v1/completions and chat."""
    stories = os.path.join(pkgs, "stories260K")  # run() skips without it
    tmp = tempfile.mkdtemp(prefix="og-slot-fields-")
    prompt, _, want_text = story_prompt(build, stories)

    def post(**fields):
        body = {"prompt": prompt, "max_tokens": 12, "temperature": 0, "logprobs": 0}
        body.update(fields)
        st, _, j, text = s.post("/v1/completions", body)
        return st, j if j is not None else text

    def answer(j):
        """(the answer's text, cached prompt tokens)"""
        return j["choices"][0]["text"], j["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0)

    s = Server(build, stories, "--slot-save-path", tmp, "--block-size", "16", "--max-batch", "4")
    try:
        prompt_text = s.post("/detokenize", {"tokens": prompt})[2]["prompt"]
        want_tokens = want_text[len(prompt_text):]  # generate's answer
        st, j = post(id_slot=2)
        check(st == 200 and answer(j)[0] == want_tokens, f"id_slot 2: generate's answer ({st})")
        st, j2 = action(s, 2, "save", "two.bin")
        st0, j0 = action(s, 0, "save", "zero.bin")
        check(st == 200 and j2.get("n_saved") == 48 and st0 == 200 and j0.get("n_saved") == 0,
              f"... it ran in slot 2: slot 2 saves its 48 cached positions, slot 0 none ({j2}, {j0})")
        # cache_prompt false: nothing taken from the cache (and no lookup counted), the same answer
        m0 = s.metrics()
        st, j = post(cache_prompt=False)
        m1 = s.metrics()
        check(st == 200 and answer(j) == (want_tokens, 0) and
              m1["og_prefix_cache_lookups_total"] == m0["og_prefix_cache_lookups_total"],
              f"cache_prompt false: no cached tokens, no lookup, the same answer ({st} {answer(j)[1] if st == 200 else j})")
        st, j = post(cache_prompt=True, id_slot=-1)
        check(st == 200 and answer(j) == (want_tokens, 32),
              f"cache_prompt true, id_slot -1: 32 positions from the cache, the same answer "
              f"({st} {answer(j)[1] if st == 200 else j})")
        st, _, j, _ = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}],
                                                      "max_tokens": 4, "temperature": 0, "id_slot": 3,
                                                      "cache_prompt": True})
        check(st == 200, f"chat takes id_slot and cache_prompt too ({st} {j})")
        for fields, what in (({"id_slot": 4}, "Invalid slot ID"), ({"id_slot": -2}, "Invalid slot ID"),
                             ({"id_slot": 1.5}, "must be an integer"),
                             ({"id_slot": 0, "n": 2}, "one choice"),
                             ({"cache_prompt": "yes"}, "must be true or false")):
            st, j = post(**fields)
            got = j.get("error", {}) if isinstance(j, dict) else {}
            check(st == 400 and what in got.get("message", "") and
                  got.get("param") == ("cache_prompt" if "cache_prompt" in fields else "id_slot"),
                  f"{fields}: 400 '{what}' naming the field ({st} {got})")
        # a busy slot: a request that names it runs once the slot's request has finished,
        # as llama-server defers it
        ends = {}

        def long_one():
            st, ev = s.stream("/v1/completions", {"prompt": prompt, "max_tokens": 400, "temperature": 0,
                                                  "ignore_eos": True, "stream": True, "id_slot": 1})
            ends["long"] = (time.monotonic(), st, len(ev))

        t = threading.Thread(target=long_one)
        t.start()
        busy = False
        for _ in range(400):
            busy = s.request("GET", "/slots")[2][1]["is_processing"]
            if busy or not t.is_alive():
                break
            time.sleep(0.005)
        st, j = post(id_slot=1)
        ends["short"] = time.monotonic()
        t.join()
        check(st == 200 and answer(j)[0] == want_tokens and ends["long"][1] == 200,
              f"id_slot 1 while slot 1 runs a request: answered, generate's answer ({st})")
        print(f"note: slot 1 was {'busy' if busy else 'not seen busy'} when the second request came")
        # the slot is given back as the request ends, just before its stream's last event
        # goes out: the second answer may come a moment before the first stream's [DONE],
        # never while 400 tokens are still being written (it would come seconds before)
        check(not busy or ends["short"] >= ends["long"][0] - 0.1,
              f"... after the slot's request ended ({ends['short'] - ends['long'][0]:+.3f} s)")
    finally:
        s.stop()

    # without the prefix cache, save, restore and erase alike are 501 saying why
    s = Server(build, stories, "--slot-save-path", tmp, "--no-prefix-cache")
    try:
        st, j = post(cache_prompt=True)
        check(st == 200 and answer(j)[0] == want_tokens, f"--no-prefix-cache: cache_prompt true answered ({st})")
        for what, name in (("save", "a.bin"), ("restore", "two.bin"), ("erase", None)):
            st, j = action(s, 0, what, name)
            error_is(st, j, 501, "needs the prefix cache", f"--no-prefix-cache: {what}")
            check(isinstance(j, dict) and j["error"].get("type") == "not_supported_error",
                  f"... error type not_supported_error ({j})")
    finally:
        s.stop()
    return 0


if __name__ == "__main__":
    sys.exit(run({"slot_save": case_slot_save, "slot_fields": case_slot_fields}, __doc__))
