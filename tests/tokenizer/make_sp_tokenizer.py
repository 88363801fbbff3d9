#!/usr/bin/env python3
"""Builds a SentencePiece-style BPE tokenizer.json for the parity test.

Usage: make_sp_tokenizer.py OUT_DIR

It trains a small BPE with HF tokenizers' own trainer (on the test corpus and some
docstrings of the standard library), then rebuilds the vocabulary the way Llama-style
conversions lay it out: special tokens first, then the 256 <0xNN> byte tokens used by
byte_fallback, then the learned pieces. The pipeline is NFKC + a regex Replace, a
Metaspace (prepend_scheme "first") + Digits pre-tokenizer, BPE with byte_fallback,
unk and fuse_unk, a Metaspace/ByteFallback/Fuse decoder and a "<s> $A </s>" template.
The alphabet is limited on purpose so that rarer characters (CJK, emoji) go through
byte fallback. Writes OUT_DIR/tokenizer.json and OUT_DIR/tokenizer_config.json.
"""
import json
import os
import sys

from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                        pre_tokenizers, processors, trainers)


def training_text(corpus):
    import inspect
    import json as json_mod
    import string
    import textwrap
    texts = [corpus]
    for mod in (string, textwrap, json_mod, inspect, os):
        for name in sorted(dir(mod)):
            doc = getattr(getattr(mod, name), "__doc__", None)
            if isinstance(doc, str):
                texts.append(doc)
    return texts


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "corpus.txt"), encoding="utf-8") as f:
        corpus = f.read()

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([
        normalizers.NFKC(),
        normalizers.Replace(Regex("[\u200b\u2060\ufeff]"), ""),
    ])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=True),
        pre_tokenizers.Digits(individual_digits=True),
    ])
    trainer = trainers.BpeTrainer(vocab_size=1200, special_tokens=["<unk>", "<s>", "</s>"],
                                  limit_alphabet=120, show_progress=False)
    tok.train_from_iterator(training_text(corpus), trainer)

    j = json.loads(tok.to_str())
    learned = sorted(j["model"]["vocab"].items(), key=lambda kv: kv[1])
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    for piece, _ in learned:
        if piece not in vocab:
            vocab[piece] = len(vocab)
    j["model"]["vocab"] = vocab
    j["model"]["merges"] = [list(m) if isinstance(m, list) else m.split(" ", 1)
                            for m in j["model"]["merges"]]
    j["added_tokens"] = [
        {"id": 0, "content": "<unk>", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True},
        {"id": 1, "content": "<s>", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True},
        {"id": 2, "content": "</s>", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True},
    ]
    tok = Tokenizer.from_str(json.dumps(j))
    tok.add_special_tokens([AddedToken("<|user|>", lstrip=True, rstrip=True, normalized=False),
                            AddedToken("<|end|>", normalized=False)])
    tok.decoder = decoders.Sequence([
        decoders.Metaspace(replacement="\u2581", prepend_scheme="first"),
        decoders.ByteFallback(),
        decoders.Fuse(),
    ])
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 1), ("</s>", 2)])
    tok.save(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                   "add_bos_token": True, "add_eos_token": True}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
