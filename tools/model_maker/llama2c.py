"""llama2.c checkpoints (legacy float32 format) and tokenizers (tokenizer.bin).

Checkpoint: 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
seq_len; a negative vocab_size means a separate classifier follows), then float32
arrays: token_embedding [V, D], rms_att [L, D], wq [L, D, D], wk [L, KV, D],
wv [L, KV, D], wo [L, D, D], rms_ffn [L, D], w1 [L, F, D], w2 [L, D, F],
w3 [L, F, D], rms_final [D], freq_cis_real/imag [seq_len, head/2] (unused),
then wcls [V, D] when unshared. Every matrix is [out, in].

run.c rotates adjacent pairs (2j, 2j+1) of each head by pos * 10000^(-2j/head),
i.e. the interleaved convention. By default q/k rows are permuted within each head to
the half-split order (as Hugging Face's llama conversion does), so the package uses
GroupQueryAttention's default rotary_interleaved=0; keep_interleaved=True keeps
the original rows and sets rotary_interleaved=1 instead. RMSNorm eps is 1e-5.
"""

import struct

import numpy as np

from .decoder import DecoderSpec


class Llama2cWeights:
    def __init__(self, path, keep_interleaved=False):
        with open(path, "rb") as f:
            data = f.read()
        dim, hidden, n_layers, n_heads, n_kv, vocab, seq_len = struct.unpack_from("<7i", data, 0)
        self.shared = vocab > 0
        vocab = abs(vocab)
        self.dim, self.hidden, self.n_layers = dim, hidden, n_layers
        self.n_heads, self.n_kv, self.vocab, self.seq_len = n_heads, n_kv, vocab, seq_len
        self.head = dim // n_heads
        self.keep_interleaved = keep_interleaved
        kv_dim = n_kv * self.head
        arr = np.frombuffer(data, dtype="<f4", offset=28)
        pos = 0

        def take(*shape):
            nonlocal pos
            n = int(np.prod(shape))
            if pos + n > arr.size:
                raise ValueError(f"{path}: checkpoint truncated (needs {n} more floats at {pos})")
            out = arr[pos:pos + n].reshape(shape).astype(np.float32)
            pos += n
            return out

        self.tok = take(vocab, dim)
        self.rms_att = take(n_layers, dim)
        self.wq = take(n_layers, dim, dim)
        self.wk = take(n_layers, kv_dim, dim)
        self.wv = take(n_layers, kv_dim, dim)
        self.wo = take(n_layers, dim, dim)
        self.rms_ffn = take(n_layers, dim)
        self.w1 = take(n_layers, hidden, dim)
        self.w2 = take(n_layers, dim, hidden)
        self.w3 = take(n_layers, hidden, dim)
        self.rms_final = take(dim)
        take(seq_len, self.head // 2)  # freq_cis_real
        take(seq_len, self.head // 2)  # freq_cis_imag
        self.wcls = self.tok if self.shared else take(vocab, dim)
        if pos != arr.size:
            raise ValueError(f"{path}: {arr.size - pos} trailing floats; not a legacy llama2.c checkpoint")

    def spec(self):
        return DecoderSpec(
            model_type="llama", hidden_size=self.dim, intermediate_size=self.hidden,
            num_layers=self.n_layers, num_heads=self.n_heads, num_kv_heads=self.n_kv,
            head_size=self.head, vocab_size=self.vocab, context_length=self.seq_len,
            rms_eps=1e-5, rope_theta=10000.0, rotary_interleaved=1 if self.keep_interleaved else 0,
            bos_token_id=1, eos_token_id=2, pad_token_id=0)

    def _rotary_rows(self, w, n_heads):
        if self.keep_interleaved:
            return w
        d = self.head
        # rows (2j, 2j+1) of each head -> (j, j + d/2)
        return w.reshape(n_heads, d // 2, 2, -1).transpose(0, 2, 1, 3).reshape(n_heads * d, -1)

    # provider interface read by transformer.WeightSource
    def embed(self):
        return self.tok

    def layer(self, i):
        return {
            "input_norm": self.rms_att[i], "post_norm": self.rms_ffn[i],
            "q": self._rotary_rows(self.wq[i], self.n_heads),
            "k": self._rotary_rows(self.wk[i], self.n_kv),
            "v": self.wv[i], "o": self.wo[i],
            "gate": self.w1[i], "up": self.w3[i], "down": self.w2[i],
        }

    def final_norm(self):
        return self.rms_final

    def lm_head(self):
        return self.wcls


def read_tokenizer_bin(path, vocab_size):
    """Returns (pieces as bytes, scores, max_token_length)."""
    with open(path, "rb") as f:
        data = f.read()
    (max_len,) = struct.unpack_from("<i", data, 0)
    off = 4
    pieces, scores = [], []
    for i in range(vocab_size):
        if off + 8 > len(data):
            raise ValueError(f"{path}: truncated at token {i}")
        score, n = struct.unpack_from("<fi", data, off)
        off += 8
        pieces.append(data[off:off + n])
        scores.append(score)
        off += n
    return pieces, scores, max_len


SPIECE = "\u2581"


def tokenizer_json(pieces, scores):
    """SentencePiece-style BPE tokenizer.json equivalent to llama2.c's encoder.

    llama2.c merges, at each step, the adjacent pair whose concatenation has the best
    score (leftmost on ties). A BPE model reproduces that when its merges list holds
    every split (a, b) of every mergeable piece with a and b in the vocabulary, ranked
    by the merged piece's score. Text pieces use '\u2581' for spaces; tokens 0-2 are
    <unk>, <s>, </s>; <0xNN> pieces are the byte fallback.
    """
    n = len(pieces)
    names = []
    for i, p in enumerate(pieces):
        if i == 0:
            names.append("<unk>")
        elif i == 1:
            names.append("<s>")
        elif i == 2:
            names.append("</s>")
        else:
            names.append(p.decode("utf-8", errors="strict").replace(" ", SPIECE))
    vocab = {name: i for i, name in enumerate(names)}
    if len(vocab) != n:
        raise ValueError("duplicate pieces after mapping spaces to \u2581")
    is_byte = [3 <= i and names[i].startswith("<0x") and len(names[i]) == 6 for i in range(n)]
    ordinary = {names[i]: i for i in range(3, n) if not is_byte[i]}
    merges = []
    for i in range(3, n):
        if is_byte[i]:
            continue
        t = names[i]
        for cut in range(1, len(t)):
            a, b = t[:cut], t[cut:]
            if a in ordinary and b in ordinary:
                merges.append((-scores[i], i, cut, a, b))
    merges.sort()
    added = [
        {"id": i, "content": names[i], "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for i in range(3)
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SPIECE},
            {"type": "Replace", "pattern": {"String": " "}, "content": SPIECE},
        ]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}},
        },
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SPIECE}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0},
        ]},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
            "vocab": vocab,
            "merges": [[a, b] for _, _, _, a, b in merges],
        },
    }


def tokenizer_config(context_length):
    return {
        "add_bos_token": True,
        "add_eos_token": False,
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "pad_token": None,
        "clean_up_tokenization_spaces": False,
        "legacy": False,
        "model_max_length": context_length,
        "sp_model_kwargs": {},
        "tokenizer_class": "LlamaTokenizer",
        "added_tokens_decoder": {
            str(i): {"content": c, "lstrip": False, "normalized": False, "rstrip": False,
                     "single_word": False, "special": True}
            for i, c in enumerate(["<unk>", "<s>", "</s>"])
        },
    }


def llama2c_encode(text, pieces, scores, bos=True, eos=False):
    """llama2.c's encode() (run.c), for checking tokenizer parity."""
    lookup = {p: i for i, p in enumerate(pieces)}
    toks = [1] if bos else []
    if text:
        toks.append(lookup[b" "])
    raw = text.encode("utf-8")
    i = 0
    while i < len(raw):
        # one UTF-8 codepoint (up to 4 bytes), as run.c groups continuation bytes
        j = i + 1
        while j < len(raw) and (raw[j] & 0xC0) == 0x80 and j - i < 4:
            j += 1
        cp = raw[i:j]
        if cp in lookup:
            toks.append(lookup[cp])
        else:
            toks.extend(b + 3 for b in cp)
        i = j
    start = 1 if bos else 0
    while True:
        best, best_id, best_at = -1e10, -1, -1
        for k in range(start, len(toks) - 1):
            pid = lookup.get(pieces[toks[k]] + pieces[toks[k + 1]], -1)
            if pid != -1 and scores[pid] > best:
                best, best_id, best_at = scores[pid], pid, k
        if best_at == -1:
            break
        toks[best_at:best_at + 2] = [best_id]
    if eos:
        toks.append(2)
    return toks
