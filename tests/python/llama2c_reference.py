"""A double-precision numpy forward pass of a llama2.c checkpoint (run.c's arithmetic:
RMSNorm eps 1e-5, rotary pairs (2j, 2j + 1) at 10000^(-2j / head), grouped-query
attention, SwiGLU), one token a step over a growing cache, optionally with the cache
quantized as onnx-genai's --kv-dtype int8 stores it: each (position, kv head) row as
int8 codes rint(x * 127 / amax) (ties to even) times amax / 127, the step's own row
included. Used as the oracle of what such a cache does to greedy decoding."""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))


class Llama2cReference:
    def __init__(self, checkpoint):
        from model_maker.llama2c import Llama2cWeights
        w = Llama2cWeights(checkpoint, keep_interleaved=True)
        self.dim, self.heads, self.kv_heads, self.head = w.dim, w.n_heads, w.n_kv, w.head
        d = lambda a: np.asarray(a, np.float64)  # noqa: E731
        self.tok, self.wcls, self.final = d(w.tok), d(w.wcls), d(w.rms_final)
        self.layers = [dict(att=d(w.rms_att[i]), ffn=d(w.rms_ffn[i]), q=d(w.wq[i]), k=d(w.wk[i]),
                            v=d(w.wv[i]), o=d(w.wo[i]), w1=d(w.w1[i]), w2=d(w.w2[i]),
                            w3=d(w.w3[i])) for i in range(w.n_layers)]

    @staticmethod
    def _rms(x, w):
        return x / np.sqrt(np.mean(x * x) + 1e-5) * w

    def _rope(self, x, pos, n):
        x = x.reshape(n, self.head // 2, 2).copy()
        th = pos * 10000.0 ** (-2.0 * np.arange(self.head // 2) / self.head)
        a, b = x[..., 0].copy(), x[..., 1].copy()
        x[..., 0] = a * np.cos(th) - b * np.sin(th)
        x[..., 1] = a * np.sin(th) + b * np.cos(th)
        return x.reshape(n, self.head)

    @staticmethod
    def int8_rows(x):
        """Rows of x (the last axis) through an int8 row: codes and scale per row."""
        amax = np.abs(x).max(axis=-1, keepdims=True)
        safe = np.where(amax > 0, amax, 1.0)
        return np.clip(np.rint(x * (127.0 / safe)), -127, 127) * (safe / 127.0) * (amax > 0)

    def run(self, first, steps, int8=False, force=None):
        """Logits of every step from token `first` and the greedy tokens; with `force`,
        those tokens are fed instead (teacher forcing)."""
        hd, H, KV = self.head, self.heads, self.kv_heads
        cache = [([], []) for _ in self.layers]
        logits, toks, t = [], [], first
        for pos in range(steps):
            x = self.tok[t].copy()
            for ly, (K, V) in zip(self.layers, cache):
                h = self._rms(x, ly["att"])
                q = self._rope(ly["q"] @ h, pos, H)
                k, v = self._rope(ly["k"] @ h, pos, KV), (ly["v"] @ h).reshape(KV, hd)
                if int8:
                    k, v = self.int8_rows(k), self.int8_rows(v)
                K.append(k)
                V.append(v)
                Ks, Vs = np.array(K), np.array(V)
                att = np.empty((H, hd))
                for i in range(H):
                    g = i // (H // KV)
                    s = Ks[:, g] @ q[i] / np.sqrt(hd)
                    p = np.exp(s - s.max())
                    att[i] = (p / p.sum()) @ Vs[:, g]
                x = x + ly["o"] @ att.reshape(-1)
                h = self._rms(x, ly["ffn"])
                a = ly["w1"] @ h
                x = x + ly["w2"] @ (a / (1.0 + np.exp(-a)) * (ly["w3"] @ h))
            row = self.wcls @ self._rms(x, self.final)
            logits.append(row)
            toks.append(int(np.argmax(row)))
            t = force[pos] if force is not None else toks[-1]
        return np.array(logits), toks
