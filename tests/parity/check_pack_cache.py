#!/usr/bin/env python3
"""The pack cache (src/base/pack_cache.h) never changes a token, whatever state its file is in.

On stories260K as int4 packages (MatMulNBits, accuracy_level 0 and 4, made by
tools/make_model.py), with OG_PACK_CACHE in a fresh folder and OG_PACK_CACHE_MIN_MB=0 (the
model is tiny): 200 greedy tokens with the cache off (accuracy_level 0: equal to
onnxruntime-genai's, the oracle), then the same ids when the file is written, when it is
mapped, and after each way it can go bad: a flipped byte in an entry, a flipped byte in the
header, a truncated file, another model's file at its name, the model's own file rewritten
(a new key: a second file), a bound too small to hold it, the cache disabled. `bench --json`
reports what each open did ("pack_cache": written, hit, rebuilt, off), and a bad file is
named on stderr with why.

Usage: check_pack_cache.py BUILD_DIR WORK_DIR   (exit 77: a missing input, skipped)
"""
import glob
import json
import os
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
ENTRY = 2 << 20  # the first entry's offset (PACK_CACHE_ALIGN)


def run(build, model, env, what):
    """(ids, stderr) of a 200-token greedy run, or the bench outcome when what == 'bench'."""
    if what == "bench":
        cmd = [os.path.join(build, "onnx-genai"), "bench", "-m", model, "-p", "1", "-n", "1",
               "-r", "1", "--probe-mb", "0", "--json"]
    else:
        cmd = [os.path.join(build, "onnx-genai"), "generate", "-m", model, "--ids", "1",
               "--max-length", "201", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return (out["pack_cache"] if what == "bench" else out["sequences"][0]), r.stderr


def last_entry_byte(path):
    """The offset of the last byte of the file's last entry (header: magic, version, key
    length, file size, index offset, entry count; index: id, offset, size, checksum)."""
    with open(path, "rb") as f:
        head = f.read(48)
        index_off, n = struct.unpack_from("<QQ", head, 24)
        f.seek(index_off)
        entries = [struct.unpack_from("<QQQQ", f.read(32)) for _ in range(n)]
    _, off, size, _ = max(entries, key=lambda e: e[1])
    return off + size - 1


def touch_weights(d):
    """Rewrites the package's model files with the same bytes (new times: a new key)."""
    for p in glob.glob(os.path.join(d, "*.onnx*")):
        with open(p, "rb") as fh:
            raw = fh.read()
        with open(p, "wb") as fh:
            fh.write(raw)


def flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x5A]))


def main():
    build, work = sys.argv[1], sys.argv[2]
    ckpt = os.path.join(SHARED, "models", "llama2c", "stories260K.bin")
    tok = os.path.join(SHARED, "models", "llama2c", "tok512.bin")
    for p in (ckpt, tok):
        if not os.path.exists(p):
            print(f"SKIP: {p} is missing")
            return 77
    try:
        import onnxruntime_genai as og
    except ImportError:
        print("SKIP: onnxruntime_genai (the oracle) is not installed")
        return 77
    os.makedirs(work, exist_ok=True)
    pkgs = {}
    for level in (0, 4):
        d = os.path.join(work, f"stories260K-int4-acc{level}")
        if not os.path.exists(os.path.join(d, "genai_config.json")):
            subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_model.py"),
                            "--from-llama2c", ckpt, "--tokenizer", tok, "--dtype", "int4",
                            "--accuracy-level", str(level), "--out", d], check=True,
                           capture_output=True)
        pkgs[level] = d
    cache = os.path.join(work, "pack-cache")
    shutil.rmtree(cache, ignore_errors=True)
    base = dict(os.environ)
    base.pop("OG_ISA", None)
    on = dict(base, OG_PACK_CACHE=cache, OG_PACK_CACHE_MIN_MB="0")
    off = dict(base, OG_PACK_CACHE="off")
    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    # the oracle: onnxruntime-genai's 200 tokens at accuracy_level 0
    cfg = og.Config(pkgs[0])
    cfg.clear_providers()
    model = og.Model(cfg)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=201, do_sample=False)
    gen = og.Generator(model, params)
    gen.append_tokens([1])
    while not gen.is_done():
        gen.generate_next_token()
    oracle = [int(t) for t in gen.get_sequence(0)]

    files = {}
    for level, d in pkgs.items():
        name = f"accuracy_level {level}"
        ref, _ = run(build, d, off, "gen")
        if level == 0:
            check(ref == oracle, f"{name}: cache off, 200 tokens equal onnxruntime-genai's")
        check(run(build, d, off, "bench")[0] == "off", f"{name}: OG_PACK_CACHE=off: no cache")
        before = set(glob.glob(os.path.join(cache, "*.pack")))
        check(run(build, d, on, "bench")[0] == "written", f"{name}: first open writes the file")
        new = set(glob.glob(os.path.join(cache, "*.pack"))) - before
        check(len(new) == 1, f"{name}: one file ({len(new)})")
        if len(new) != 1:
            continue
        f = files[level] = new.pop()
        ids, _ = run(build, d, on, "gen")
        check(ids == ref, f"{name}: ids from the mapped file equal the cache-off ids")
        check(run(build, d, on, "bench")[0] == "hit", f"{name}: later opens map it")
        bad = [("entry byte", lambda: flip(f, ENTRY + 100), "entry checksum differs"),
               ("last entry byte", lambda: flip(f, last_entry_byte(f)), "entry checksum differs"),
               ("header byte", lambda: flip(f, 200), "header checksum differs"),
               ("truncated", lambda: os.truncate(f, os.path.getsize(f) - 4096),
                "truncated or extended")]
        for what, spoil, why in bad:
            spoil()
            ids, err = run(build, d, on, "gen")
            check(ids == ref and why in err and "writing it again" in err,
                  f"{name}: {what}: reported ({why}), rebuilt, same ids")
            check(run(build, d, on, "bench")[0] == "hit", f"{name}: {what}: the new file maps")
    if len(files) == 2:
        # another model's file at this one's name: made for other files
        shutil.copyfile(files[4], files[0])
        ids, err = run(build, pkgs[0], on, "gen")
        check(ids == oracle and "made for other files" in err,
              "another model's file at the name: reported, rebuilt, same ids")
        # the model's weights rewritten: a new key, so a new file beside the old one
        touch_weights(pkgs[0])
        n0 = len(glob.glob(os.path.join(cache, "*.pack")))
        check(run(build, pkgs[0], on, "bench")[0] == "written",
              "weights rewritten: a new key, written again")
        check(len(glob.glob(os.path.join(cache, "*.pack"))) == n0 + 1, "the new file is another")
        ids, _ = run(build, pkgs[0], on, "gen")
        check(ids == oracle, "weights rewritten: same ids from the new file")
        # a bound that holds nothing: the least recently used files go, this one is not kept
        touch_weights(pkgs[0])  # a key with no file yet: the bound applies when writing
        tight = dict(on, OG_PACK_CACHE_MAX_MB="0")
        ids, err = run(build, pkgs[0], tight, "gen")
        check(ids == oracle and "exceed OG_PACK_CACHE_MAX_MB" in err,
              "bound of 0 MB: not cached, same ids")
    leftovers = [p for p in os.listdir(cache) if not p.endswith(".pack")] if os.path.isdir(cache) else []
    check(not leftovers, f"no temporary files left ({leftovers})")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
