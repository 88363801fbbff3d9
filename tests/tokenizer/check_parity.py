#!/usr/bin/env python3
"""Tokenizer parity: our C tokenizer (through tok-cli) against HF tokenizers.

For each tokenizer (the GPT-2 and Phi-3-vision ones from the shared model folder, a
SentencePiece-style one made by make_sp_tokenizer.py, and two byte-level ones built here
from the GPT-2 vocabulary with Qwen2's and Llama-3's Split regexes), every case is
encoded with and without special tokens and decoded (keeping and skipping special
tokens, and through the streaming decoder, also as the continuation of a context: the ids
after the first one and after the first half, with the ids before as the stream's context,
against decode(all) beyond decode(context)); ids and text must match exactly.

Cases: every line of corpus.txt (escapes: \\n newline, \\r carriage return, \\\\
backslash), blocks of consecutive lines joined by newlines, the whole corpus as one
text, random mixtures (fixed seed) and byte strings that are not valid UTF-8 (HF gets them decoded with
errors="replace", which is the behaviour we document).

A tokenizer whose data file is missing is reported as SKIP; a disagreement fails.
Exit status: 0 when every tokenizer that ran agreed, 1 otherwise.
"""
import argparse
import json
import os
import subprocess
import sys
import unicodedata

from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                  r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def unescape(line):
    out, i = [], 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line):
            out.append({"n": "\n", "r": "\r", "\\": "\\"}.get(line[i + 1], line[i:i + 2]))
            i += 2
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def cases(corpus_path, seed=1234, n_random=150):
    with open(corpus_path, encoding="utf-8") as f:
        lines = [unescape(l) for l in f.read().split("\n")[:-1]]
    raw = [l.encode("utf-8") for l in lines]
    for i in range(0, len(lines), 5):
        raw.append("\n".join(lines[i:i + 5]).encode("utf-8"))
    raw.append("\n\n".join(lines).encode("utf-8"))
    raw.append(b"")
    # Not UTF-8: a lone continuation byte, a truncated sequence, an overlong form, a
    # surrogate, bytes past U+10FFFF, a truncated sequence at the very end.
    raw += [b"abc\x80def", b"caf\xc3 ok", b"\xc0\xafslash", b"sur\xed\xa0\x80rogate",
            b"big\xf4\x90\x80\x80 and \xff\xfe", b"tail \xe2\x82", b"\xf0\x9f\x98 emoji cut"]
    # Random text from a fixed seed: pieces of the corpus, random code points from
    # several planes, runs of spaces, special-token fragments and stray bytes.
    import random
    rng = random.Random(seed)
    alphabet = [" ", "  ", "\n", "\t", "<|endoftext|>", "<s>", "</s>", "<|user|>", "<|", "|>",
                "\u2581", "'s", "'LL", "0", "42", "\u0301", "\u200d", "\U0001F600", "\ufffd"]
    for _ in range(n_random):
        parts = []
        for _ in range(rng.randint(1, 12)):
            r = rng.random()
            if r < 0.3:
                parts.append(rng.choice(alphabet).encode())
            elif r < 0.55:
                line = rng.choice(lines)
                a = rng.randint(0, len(line))
                parts.append(line[a:a + rng.randint(1, 20)].encode())
            elif r < 0.85:
                cp = rng.choice([rng.randint(0x20, 0x7e), rng.randint(0xa0, 0x2fff),
                                 rng.randint(0x3000, 0xd7ff), rng.randint(0x10000, 0x1faff)])
                # Only characters that Unicode 3.2 already had: HF's character classes
                # come from older Unicode tables than utf8proc's (see docs), and random
                # recent code points would test the table versions, not the logic.
                if unicodedata.ucd_3_2_0.category(chr(cp)) == "Cn":
                    cp = 0x41 + cp % 26
                parts.append(chr(cp).encode())
            else:
                parts.append(bytes([rng.randint(0x80, 0xff)]))
        raw.append(b"".join(parts))
    return raw


def gpt2_based(gpt2_json, pattern, out_dir, llama3):
    """GPT-2's vocabulary with a regex Split + ByteLevel(use_regex=False) pipeline and
    added tokens exercising lstrip / rstrip / single_word / normalized."""
    tok = Tokenizer.from_file(gpt2_json)
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken("<|im_start|>", normalized=False),
                            AddedToken("<|im_end|>", normalized=False),
                            AddedToken("<mask>", lstrip=True, normalized=False)])
    tok.add_tokens([AddedToken("[SEP]", rstrip=True, normalized=False),
                    AddedToken("hello", single_word=True, normalized=True),
                    AddedToken("\u00c9COLE", normalized=True)])
    if llama3:
        bos = tok.token_to_id("<|im_start|>")
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single="<|im_start|> $A", special_tokens=[("<|im_start|>", bos)]),
        ])
        j = json.loads(tok.to_str())
        j["model"]["ignore_merges"] = True
        tok = Tokenizer.from_str(json.dumps(j))
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "tokenizer.json")
    tok.save(path)
    return path


def variants(corpus_path, work):
    """Small BPE tokenizers trained here, one per combination of the components that the
    real tokenizers above do not use (other normalizers, every Split behaviour with and
    without invert, the other pre-tokenizers, subword prefix/suffix, unk without byte
    fallback, no decoder, Bert/Roberta post-processors)."""
    from tokenizers import models, trainers
    with open(corpus_path, encoding="utf-8") as f:
        train = [unescape(l) for l in f.read().split("\n")[:-1]]
    specials = ["[UNK]", "<s>", "</s>"]
    out = []

    def build(name, model, norm, pre, dec, post, byte_level=False, **trainer_kw):
        tok = Tokenizer(model)
        if norm is not None:
            tok.normalizer = norm
        if pre is not None:
            tok.pre_tokenizer = pre
        kw = dict(vocab_size=700, special_tokens=specials, limit_alphabet=90, show_progress=False)
        if byte_level:
            kw["initial_alphabet"] = pre_tokenizers.ByteLevel.alphabet()
            kw.pop("limit_alphabet")
        kw.update(trainer_kw)
        tok.train_from_iterator(train, trainers.BpeTrainer(**kw))
        if dec is not None:
            tok.decoder = dec
        if post is not None:
            tok.post_processor = post
        d = os.path.join(work, "variants", name)
        os.makedirs(d, exist_ok=True)
        tok.save(os.path.join(d, "tokenizer.json"))
        out.append((name, os.path.join(d, "tokenizer.json")))

    build("subword-affixes",
          models.BPE(unk_token="[UNK]", continuing_subword_prefix="##", end_of_word_suffix="</w>"),
          normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(), normalizers.Lowercase(),
                                normalizers.Strip()]),
          pre_tokenizers.BertPreTokenizer(), None,
          processors.BertProcessing(("</s>", 2), ("<s>", 1)),
          continuing_subword_prefix="##", end_of_word_suffix="</w>")
    build("nfkd-whitespace-split",
          models.BPE(unk_token="[UNK]", fuse_unk=True),
          normalizers.Sequence([normalizers.NFKD(), normalizers.Replace("  ", " "),
                                normalizers.Prepend("\u00a7"), normalizers.Strip(left=False, right=True)]),
          pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                   pre_tokenizers.Punctuation(behavior="contiguous"),
                                   pre_tokenizers.Digits(individual_digits=False)]),
          decoders.Sequence([decoders.Replace(Regex("[aeiou]"), "_"), decoders.Fuse(),
                             decoders.Strip(" ", 1, 0)]),
          processors.RobertaProcessing(("</s>", 2), ("<s>", 1)))
    build("whitespace-lowercase",
          models.BPE(unk_token="[UNK]"),
          normalizers.Sequence([normalizers.NFC(), normalizers.Lowercase()]),
          pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.CharDelimiterSplit("-")]),
          None, None)
    build("metaspace-always",
          models.BPE(unk_token="[UNK]", fuse_unk=True),
          normalizers.Lowercase(),
          pre_tokenizers.Metaspace(prepend_scheme="always", split=False),
          decoders.Metaspace(prepend_scheme="always"),
          processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 1), ("</s>", 2)]))
    build("metaspace-never",
          models.BPE(unk_token="[UNK]"),
          None,
          pre_tokenizers.Metaspace(prepend_scheme="never", split=True),
          decoders.Metaspace(prepend_scheme="never"), None)
    for behavior in ("removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"):
        for invert in (False, True):
            build(f"split-{behavior}{'-invert' if invert else ''}",
                  models.BPE(),
                  None,
                  pre_tokenizers.Sequence([
                      pre_tokenizers.Split(Regex(r"\s+|[,.!?]") if not invert else " ", behavior, invert=invert),
                      pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=False)]),
                  decoders.ByteLevel(), None, byte_level=True)
    return out


def continuation(tok, ids, k):
    """What ids[k:] add to the text after ids[:k]: decode(all) beyond decode(ids[:k]), as
    transformers' TextStreamer and text-generation pipeline take a continuation. Where
    the two decodes part inside the context's text (ids[:k] end in part of a character,
    decoded as U+FFFD), from the first character that differs."""
    full = tok.decode(ids, skip_special_tokens=True)
    ctx = tok.decode(ids[:k], skip_special_tokens=True)
    common = 0
    while common < min(len(full), len(ctx)) and full[common] == ctx[common]:
        common += 1
    return full[common:]


def run_one(name, path, cli, work, texts):
    tok = Tokenizer.from_file(path if path.endswith(".json") else os.path.join(path, "tokenizer.json"))
    hexfile = os.path.join(work, name + ".hex")
    with open(hexfile, "w") as f:
        for t in texts:
            f.write(t.hex() + "\n")
    res = subprocess.run([cli, "batch", path, hexfile], capture_output=True)
    if res.returncode != 0:
        print(f"FAIL {name}: tok-cli exited {res.returncode}: {res.stderr.decode(errors='replace')}")
        return len(texts), len(texts)
    out = res.stdout.decode().split("\n")
    mismatches = 0
    shown = 0
    for i, raw in enumerate(texts):
        rec = {l[0]: l[2:] for l in out[8 * i:8 * i + 8]}
        text = raw.decode("utf-8", errors="replace")
        ours = {
            "ids": [int(x) for x in rec["E"].split()],
            "ids_plain": [int(x) for x in rec["N"].split()],
            "decode": bytes.fromhex(rec["D"]).decode("utf-8"),
            "decode_skip": bytes.fromhex(rec["S"]).decode("utf-8"),
            "stream": bytes.fromhex(rec["T"]).decode("utf-8"),
            "stream_broken_pieces": int(rec["B"]),
            "continue_after_first": bytes.fromhex(rec["P"]).decode("utf-8"),
            "continue_after_half": bytes.fromhex(rec["C"]).decode("utf-8"),
        }
        ids = tok.encode(text, add_special_tokens=True).ids
        skip = tok.decode(ids, skip_special_tokens=True)
        hf = {
            "ids": ids,
            "ids_plain": tok.encode(text, add_special_tokens=False).ids,
            "decode": tok.decode(ids, skip_special_tokens=False),
            "decode_skip": skip,
            "stream": skip,
            "stream_broken_pieces": 0,
            "continue_after_first": continuation(tok, ids, 1 if ids else 0),
            "continue_after_half": continuation(tok, ids, len(ids) // 2),
        }
        bad = [k for k in hf if hf[k] != ours[k]]
        if bad:
            mismatches += 1
            if shown < 8:
                shown += 1
                print(f"  mismatch {name} case {i} {text[:60]!r}:")
                for k in bad:
                    print(f"    {k}: hf   {str(hf[k])[:300]}")
                    print(f"    {k}: ours {str(ours[k])[:300]}")
    return len(texts), mismatches


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seed", type=int, default=1234, help="seed of the random cases")
    ap.add_argument("--random", type=int, default=150, help="how many random cases")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    texts = cases(args.corpus, args.seed, args.random)

    gpt2_dir = os.path.join(args.shared, "models/ortgenai/hf-internal-testing/tiny-random-gpt2-fp32")
    phi3_dir = os.path.join(args.shared, "models/ortgenai/phi3-v")
    sp_dir = os.path.join(args.work, "sp")
    subprocess.run([sys.executable, os.path.join(here, "make_sp_tokenizer.py"), sp_dir], check=True)

    todo = [("sp", sp_dir)]
    for name, d in (("gpt2", gpt2_dir), ("phi3-v", phi3_dir)):
        if os.path.exists(os.path.join(d, "tokenizer.json")):
            todo.append((name, d))
        else:
            print(f"SKIP {name}: {d}/tokenizer.json is missing")
    gpt2_json = os.path.join(gpt2_dir, "tokenizer.json")
    if os.path.exists(gpt2_json):
        todo.append(("qwen2-style", gpt2_based(gpt2_json, QWEN2_PATTERN, os.path.join(args.work, "qwen2"), False)))
        todo.append(("llama3-style", gpt2_based(gpt2_json, LLAMA3_PATTERN, os.path.join(args.work, "llama3"), True)))
    else:
        print("SKIP qwen2-style, llama3-style: they are built from the GPT-2 tokenizer, which is missing")

    todo += variants(args.corpus, args.work)
    failed = 0
    for name, path in todo:
        n, bad = run_one(name, path, args.cli, args.work, texts)
        print(f"{'ok  ' if bad == 0 else 'FAIL'} {name}: {n} cases, {bad} mismatches")
        failed += bad > 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
