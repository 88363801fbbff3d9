#!/usr/bin/env python3
"""Token bytes for guidance against llguidance, the oracle of constrained decoding.

For every id of the shared tokenizers (GPT-2's byte-level BPE, 50k; phi3-v's SentencePiece
with byte fallback, 32k), what guide-token-bytes prints (genai's token table: the bytes of
tok_token_bytes and the excluded flag) must equal llguidance's decode_bytes([id]) and
is_special_token(id).

One difference on purpose: llguidance uses the byte 0xFF internally to mark special tokens,
so it gives the token whose bytes are exactly 0xFF (GPT-2's 'ÿ', SentencePiece's <0xFF>) no
bytes and calls it special. We keep its byte and allow it: 0xFF is never part of UTF-8, so
no grammar accepts it, and the masks agree either way. The check asserts our rule there.

Exit 77 (skip) when llguidance or a tokenizer is missing.
"""
import argparse
import os
import subprocess
import sys

TOKENIZERS = [
    "models/ortgenai/hf-internal-testing/tiny-random-gpt2-fp32/tokenizer.json",
    "models/ortgenai/phi3-v/tokenizer.json",
]


def ours(tool, path):
    out = subprocess.run([tool, path], check=True, capture_output=True, text=True).stdout
    table = []
    for line in out.splitlines():
        parts = line.split(" ")
        assert int(parts[0]) == len(table), line
        table.append((parts[1] == "1", bytes.fromhex(parts[2])))
    return table


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--shared", required=True)
    a = ap.parse_args()
    try:
        import llguidance as L
    except ImportError:
        print("SKIP: llguidance is not installed (pip install llguidance)")
        return 77
    paths = [os.path.join(a.shared, p) for p in TOKENIZERS]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        print("SKIP: no tokenizer at", ", ".join(missing))
        return 77
    failed = 0
    for path in paths:
        tok = L.LLTokenizer(open(path, encoding="utf-8").read())
        table = ours(a.tool, path)
        n = tok.vocab_size
        if len(table) != n:
            print(f"FAIL {path}: {len(table)} tokens, llguidance has {n}")
            failed += 1
            continue
        bad = checked_ff = n_excluded = 0
        for i in range(n):
            excluded, got = table[i]
            n_excluded += excluded
            want, special = tok.decode_bytes([i]), tok.is_special_token(i)
            if got == b"\xff":
                # llguidance's marker byte (see the docstring): ours keeps and allows it
                checked_ff += 1
                if excluded or want != b"" or not special:
                    bad += 1
                    print(f"  id {i}: bytes ff excluded={excluded}; llguidance {want!r} "
                          f"special={special}")
                continue
            if got != want or excluded != special:
                bad += 1
                if bad <= 20:
                    print(f"  id {i}: ours {got!r} excluded={excluded}; llguidance {want!r} "
                          f"special={special}")
        name = os.path.relpath(path, a.shared)
        if bad or checked_ff != 1:
            print(f"FAIL {name}: {bad} of {n} tokens differ ({checked_ff} 0xFF tokens)")
            failed += 1
        else:
            print(f"ok   {name}: {n} tokens equal ({n_excluded} excluded; the 0xFF token kept)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
