"""Random weights by name: every tensor is drawn from its own generator, seeded by the
package seed and the tensor's name, so a tensor does not depend on which others were drawn
before it (or on the layout), and a full-size model is produced one tensor at a time.

Values are uniform with the requested standard deviation (uniforms are much cheaper than
normals at hundreds of millions of values) and kept where the ops expect them: norm scales
near 1, decays negative, Qwen3.5's A in [1, 16] as its initialisation draws it.

init="transformers" draws them as a Hugging Face model initialises itself for its config
instead (PreTrainedModel._init_weights with initializer_range): Linear, Conv1d and
embedding weights and attention sinks normal with std initializer_range (0.02 in every
config the catalog follows), biases zero, norm scales exactly 1 (a Gemma-style (1 + w)
norm starts at w = 0, which the builder writes as 1), dt_bias 1; A as above.
"""

import zlib

import numpy as np


class RandomTensors:
    def __init__(self, seed=0, std=0.08, init="uniform"):
        if init not in ("uniform", "transformers"):
            raise ValueError(f"unknown init {init!r}: uniform or transformers")
        self.seed = seed
        self.std = std if init == "uniform" else 0.02
        self.hf = init == "transformers"

    def _rng(self, name):
        return np.random.default_rng([self.seed, zlib.crc32(name.encode("utf-8"))])

    @staticmethod
    def _uniform(rng, shape, std):
        a = np.float32(std * np.sqrt(3.0))
        x = rng.random(shape, dtype=np.float32)
        x *= 2 * a
        x -= a
        return x

    def get(self, name, shape, kind="w"):
        """A float32 array of `shape` for the tensor `name`; `kind` says what it is for."""
        rng = self._rng(name)
        shape = tuple(int(s) for s in shape)
        if self.hf and kind in ("w", "emb", "conv", "sinks"):
            return rng.normal(0.0, self.std, shape).astype(np.float32)
        if self.hf and kind in ("norm", "dt_bias"):
            return np.ones(shape, np.float32)
        if self.hf and kind == "bias":
            return np.zeros(shape, np.float32)
        if kind in ("w", "emb"):
            return self._uniform(rng, shape, self.std)
        if kind == "norm":          # scale of a normalization
            return (1.0 + self._uniform(rng, shape, 0.1)).astype(np.float32)
        if kind == "bias":
            return self._uniform(rng, shape, 0.02)
        if kind == "zeros":
            return np.zeros(shape, np.float32)
        if kind == "neg_exp_A":     # -exp(A_log) with A ~ U(1, 16)
            return (-(1.0 + 15.0 * rng.random(shape, dtype=np.float32))).astype(np.float32)
        if kind == "dt_bias":
            return (1.0 + self._uniform(rng, shape, 0.1)).astype(np.float32)
        if kind == "conv":          # depthwise causal conv taps
            return self._uniform(rng, shape, 0.3)
        if kind == "sinks":
            return self._uniform(rng, shape, 1.0)
        raise ValueError(f"unknown weight kind {kind!r} for {name}")

