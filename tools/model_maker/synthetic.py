"""Random-weight models at the real shapes of a few public checkpoints.

Weights are seeded numpy uniforms (much cheaper than normals at 262M values), generated
one layer at a time (so a full-size model never sits in memory at once) and kept small
(std 0.02, norms near 1) so activations stay finite in fp16 and after int4 rounding. The tokenizer is a small byte-level BPE
(GPT-2 byte alphabet plus a few merges) with the model's special tokens at their real
ids; the graph keeps the real vocab_size.
"""

import numpy as np

from .decoder import DecoderSpec

SPECS = {
    # Qwen/Qwen2.5-0.5B config.json
    "qwen2.5-0.5b": dict(
        model_type="qwen2", hidden_size=896, intermediate_size=4864, num_layers=24, num_heads=14,
        num_kv_heads=2, head_size=64, vocab_size=151936, context_length=32768, rms_eps=1e-6,
        rope_theta=1000000.0, qkv_bias=True, bos_token_id=151643, eos_token_id=151643,
        pad_token_id=151643),
    # Qwen/Qwen3-0.6B config.json
    "qwen3-0.6b": dict(
        model_type="qwen3", hidden_size=1024, intermediate_size=3072, num_layers=28, num_heads=16,
        num_kv_heads=8, head_size=128, vocab_size=151936, context_length=40960, rms_eps=1e-6,
        rope_theta=1000000.0, qk_norm=True, bos_token_id=151643, eos_token_id=151645,
        pad_token_id=151643),
    # meta-llama/Llama-3.2-1B config.json
    "llama-3.2-1b": dict(
        model_type="llama", hidden_size=2048, intermediate_size=8192, num_layers=16, num_heads=32,
        num_kv_heads=8, head_size=64, vocab_size=128256, context_length=131072, rms_eps=1e-5,
        rope_theta=500000.0,
        rope_scaling=dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
                          original_max_position_embeddings=8192),
        bos_token_id=128000, eos_token_id=128001, pad_token_id=128001),
    # Qwen/Qwen2.5-1.5B config.json
    "qwen2.5-1.5b": dict(
        model_type="qwen2", hidden_size=1536, intermediate_size=8960, num_layers=28, num_heads=12,
        num_kv_heads=2, head_size=128, vocab_size=151936, context_length=32768, rms_eps=1e-6,
        rope_theta=1000000.0, qkv_bias=True, bos_token_id=151643, eos_token_id=151643,
        pad_token_id=151643),
    # Qwen/Qwen2.5-3B config.json
    "qwen2.5-3b": dict(
        model_type="qwen2", hidden_size=2048, intermediate_size=11008, num_layers=36, num_heads=16,
        num_kv_heads=2, head_size=128, vocab_size=151936, context_length=32768, rms_eps=1e-6,
        rope_theta=1000000.0, qkv_bias=True, bos_token_id=151643, eos_token_id=151643,
        pad_token_id=151643),
    # meta-llama/Llama-3.1-8B config.json
    "llama-3.1-8b": dict(
        model_type="llama", hidden_size=4096, intermediate_size=14336, num_layers=32, num_heads=32,
        num_kv_heads=8, head_size=128, vocab_size=128256, context_length=131072, rms_eps=1e-5,
        rope_theta=500000.0,
        rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                          original_max_position_embeddings=8192),
        bos_token_id=128000, eos_token_id=128001, pad_token_id=128001),
    # microsoft/Phi-3-mini-4k-instruct config.json (head size 96, as many kv heads as heads)
    "phi-3-mini": dict(
        model_type="phi3", hidden_size=3072, intermediate_size=8192, num_layers=32, num_heads=32,
        num_kv_heads=32, head_size=96, vocab_size=32064, context_length=4096, rms_eps=1e-5,
        rope_theta=10000.0, bos_token_id=1, eos_token_id=[32007, 32001, 32000], pad_token_id=32000),
    # microsoft/Phi-4-mini-instruct config.json: 24 heads of 128 over 8 KV heads, a 200K
    # vocabulary, rotary over 3/4 of each head, LongRoPE from 4096 to 131072 positions (the
    # builder's Phi-3 LongRoPE class: two caches under an If). The 48 short and long factors
    # here are stand-ins (1.0, and a ramp to 48), not the released ones: the speed is the same.
    "phi-4-mini": dict(
        model_type="phi3", hidden_size=3072, intermediate_size=8192, num_layers=32, num_heads=24,
        num_kv_heads=8, head_size=128, vocab_size=200064, context_length=131072, rms_eps=1e-5,
        rope_theta=10000.0, partial_rotary=0.75,
        rope_scaling=dict(rope_type="longrope", original_max_position_embeddings=4096,
                          short_factor=[1.0] * 48, long_factor=[1.0 + i for i in range(48)]),
        bos_token_id=199999, eos_token_id=[200020, 199999], pad_token_id=199999),
}

# Special tokens at their real ids (contiguous, as in the real tokenizers).
SPECIAL_TOKENS = {
    "qwen2.5-0.5b": [(151643, "<|endoftext|>"), (151644, "<|im_start|>"), (151645, "<|im_end|>")],
    "qwen3-0.6b": [(151643, "<|endoftext|>"), (151644, "<|im_start|>"), (151645, "<|im_end|>")],
    "qwen2.5-1.5b": [(151643, "<|endoftext|>"), (151644, "<|im_start|>"), (151645, "<|im_end|>")],
    "qwen2.5-3b": [(151643, "<|endoftext|>"), (151644, "<|im_start|>"), (151645, "<|im_end|>")],
    "llama-3.1-8b": [(128000, "<|begin_of_text|>"), (128001, "<|end_of_text|>")]
    + [(128000 + i, f"<|reserved_special_token_{i - 2}|>") for i in range(2, 9)]
    + [(128009, "<|eot_id|>")],
    "llama-3.2-1b": [(128000, "<|begin_of_text|>"), (128001, "<|end_of_text|>")]
    + [(128000 + i, f"<|reserved_special_token_{i - 2}|>") for i in range(2, 9)]
    + [(128009, "<|eot_id|>")],
    "phi-3-mini": [(32000, "<|endoftext|>"), (32001, "<|assistant|>")]
    + [(32000 + i, f"<|placeholder{i - 1}|>") for i in range(2, 6)]
    + [(32006, "<|system|>"), (32007, "<|end|>"), (32008, "<|placeholder5|>"),
       (32009, "<|placeholder6|>"), (32010, "<|user|>")],
    "phi-4-mini": [(199999, "<|endoftext|>")]
    + [(200000 + i, f"<|dummy_{i}|>") for i in range(18)]
    + [(200018, "<|endofprompt|>"), (200019, "<|assistant|>"), (200020, "<|end|>"), (200021, "<|user|>"),
       (200022, "<|system|>"), (200023, "<|tool|>")],
}


def make_spec(name, layers=None):
    if name not in SPECS:
        raise ValueError(f"unknown synthetic model {name!r}; one of {', '.join(SPECS)}")
    spec = DecoderSpec(**SPECS[name])
    if layers is not None:
        if layers < 1:
            raise ValueError("--layers must be at least 1")
        spec.num_layers = layers
    return spec


class RandomWeights:
    STD = 0.02

    def __init__(self, spec, seed):
        self.s = spec
        self.seed = seed
        self._embed = None

    def _rng(self, *key):
        return np.random.default_rng([self.seed, *key])

    def _normal(self, rng, shape, std=None):
        # uniform on [-a, a] with the requested standard deviation
        a = np.float32((std or self.STD) * np.sqrt(3.0))
        x = rng.random(shape, dtype=np.float32)
        x *= 2 * a
        x -= a
        return x

    def _norm(self, rng, n):
        return (1.0 + self._normal(rng, n, 0.1)).astype(np.float32)

    def embed(self):
        if self._embed is None:
            self._embed = self._normal(self._rng(1), (self.s.vocab_size, self.s.hidden_size))
        return self._embed

    def layer(self, i):
        s = self.s
        rng = self._rng(2, i)
        h, f = s.hidden_size, s.intermediate_size
        q, kv = s.num_heads * s.head_size, s.num_kv_heads * s.head_size
        w = {
            "input_norm": self._norm(rng, h), "post_norm": self._norm(rng, h),
            "q": self._normal(rng, (q, h)), "k": self._normal(rng, (kv, h)), "v": self._normal(rng, (kv, h)),
            "o": self._normal(rng, (h, q)),
            "gate": self._normal(rng, (f, h)), "up": self._normal(rng, (f, h)), "down": self._normal(rng, (h, f)),
        }
        if s.qkv_bias:
            w["q_bias"] = self._normal(rng, q, 0.1)
            w["k_bias"] = self._normal(rng, kv, 0.1)
            w["v_bias"] = self._normal(rng, kv, 0.1)
        if s.qk_norm:
            w["q_norm"] = self._norm(rng, s.head_size)
            w["k_norm"] = self._norm(rng, s.head_size)
        return w

    def final_norm(self):
        return self._norm(self._rng(3), self.s.hidden_size)

    def lm_head(self):
        # all three models tie lm_head to the embedding
        w = self.embed()
        self._embed = None
        return w


def _bytes_to_unicode():
    # GPT-2's reversible byte -> printable character map used by ByteLevel
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) \
        + list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


# A few common English merges so that the tokenizer does more than map bytes.
_MERGE_WORDS = ["the", "and", "ing", "ion", "ed", "er", "in", "on", "an", "re", "he", "at", "is",
                "it", "or", "en", "to", "of", "as", "es", " t", " a", " s", " the", " and", " of",
                " to", " in", " is", " it", "hello", " world", "ll", "ou"]


def _bpe(word, ranks):
    """Plain BPE of a list of symbols under merge ranks (lowest rank first, leftmost)."""
    sym = list(word)
    while len(sym) > 1:
        best = min(range(len(sym) - 1), key=lambda i: (ranks.get((sym[i], sym[i + 1]), 1 << 30), i))
        if (sym[best], sym[best + 1]) not in ranks:
            break
        sym[best:best + 2] = [sym[best] + sym[best + 1]]
    return sym


def tokenizer_json(name):
    """The tokenizer of synthetic model `name` (its special tokens at their real ids)."""
    return byte_bpe_tokenizer(SPECIAL_TOKENS[name], llama_style=name.startswith("llama"))


def byte_bpe_tokenizer(specials, llama_style=False):
    """Byte-level BPE whose ids run densely up to the special tokens: 256 byte symbols, a
    few merges (each word's merges added until plain BPE turns the word into one token, so
    every BPE implementation agrees), then <|filler_N|> pieces that no text can produce,
    then `specials` ([(id, text)], contiguous ids)."""
    b2u = _bytes_to_unicode()
    vocab = {b2u[b]: i for i, b in enumerate(range(256))}
    merges, ranks = [], {}
    for word in _MERGE_WORDS:
        while True:
            sym = _bpe([b2u[b] for b in word.encode("utf-8")], ranks)
            if len(sym) == 1:
                break
            pair = (sym[0], sym[1])
            ranks[pair] = len(merges)
            merges.append(pair)
            vocab.setdefault(pair[0] + pair[1], len(vocab))
    first_special = specials[0][0]
    for i in range(len(vocab), first_special):
        vocab[f"<|filler_{i}|>"] = i
    added = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, c in specials]
    is_llama = llama_style
    pattern = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None if is_llama else {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        ]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                           "use_regex": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": is_llama, "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }
    if is_llama:
        bos = specials[0][1]
        tok["post_processor"] = {"type": "TemplateProcessing",
                                 "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                                            {"Sequence": {"id": "A", "type_id": 0}}],
                                 "pair": [{"SpecialToken": {"id": bos, "type_id": 0}},
                                          {"Sequence": {"id": "A", "type_id": 0}},
                                          {"SpecialToken": {"id": bos, "type_id": 1}},
                                          {"Sequence": {"id": "B", "type_id": 1}}],
                                 "special_tokens": {bos: {"id": bos, "ids": [specials[0][0]], "tokens": [bos]}}}
    return tok


def tokenizer_config(name, context_length):
    specials = SPECIAL_TOKENS[name]
    cfg = {
        "add_prefix_space": False,
        "added_tokens_decoder": {str(i): {"content": c, "lstrip": False, "normalized": False, "rstrip": False,
                                          "single_word": False, "special": True} for i, c in specials},
        "clean_up_tokenization_spaces": False,
        "model_max_length": context_length,
    }
    if name.startswith("llama"):
        cfg.update(bos_token=specials[0][1], eos_token=specials[1][1], tokenizer_class="PreTrainedTokenizerFast")
    elif name.startswith("phi-4"):
        cfg.update(bos_token=specials[0][1], eos_token=specials[0][1], pad_token=specials[0][1],
                   tokenizer_class="GPT2Tokenizer")
    else:
        cfg.update(bos_token=None, eos_token=specials[2][1] if name.startswith("qwen3") else specials[0][1],
                   pad_token=specials[0][1], errors="replace", split_special_tokens=False,
                   tokenizer_class="Qwen2Tokenizer")
    return cfg
