"""onnxruntime-genai's MtpGenerator: decoding whose drafts come from a package's MTP head.

Ours is a Generator with set_speculative_options(mtp=True, fixed_k=True): the head is the
one the package's genai_config.json names (model.mtp, which onnxruntime-genai reads too);
the second model onnxruntime-genai takes (the head opened as a package of its own) is
accepted and not needed. The tokens are plain decoding's. One difference: at EOS
onnxruntime-genai's MtpGenerator keeps the EOS in its sequence, which its plain Generator
(and ours, either way) leaves out at batch 1.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._genai import Generator, GeneratorParams, Model
from ._lib import InvalidArgumentError


class MtpGenerator:
    """MtpGenerator(model, mtp_model, params): batch 1, one append_tokens, then
    generate_next_token() until is_done(); get_sequence() is the 1-D sequence and
    get_stats() what the drafts did (rounds, draft_tokens_proposed,
    draft_tokens_accepted, tokens_emitted, and accepts as onnxruntime-genai's alias)."""

    def __init__(self, model: Model, mtp_model: Model, params: GeneratorParams):
        if not isinstance(model, Model) or not isinstance(mtp_model, Model) or \
                not isinstance(params, GeneratorParams):
            raise TypeError("MtpGenerator(model, mtp_model, params): expected two Models and "
                            "GeneratorParams")
        if params._p.batch_size != 1 or params._p.num_beams != 1:
            raise InvalidArgumentError("MtpGenerator supports only batch_size=1 and num_beams=1")
        saved = (params._p.speculative_mtp, params._p.speculative_fixed_k)
        params._p.speculative_mtp, params._p.speculative_fixed_k = 1, 1
        try:
            self._g = Generator(model, params)
        finally:
            params._p.speculative_mtp, params._p.speculative_fixed_k = saved
        self._primed = False

    def append_tokens(self, tokens) -> None:
        if self._primed:
            raise InvalidArgumentError("MtpGenerator: append_tokens can only be called once")
        self._g.append_tokens(np.asarray(tokens, dtype=np.int32).reshape(-1))
        self._primed = True

    def generate_next_token(self) -> None:
        self._g.generate_next_token()

    def is_done(self) -> bool:
        return self._g.is_done()

    def get_sequence(self) -> np.ndarray:
        return self._g.get_sequence(0)

    def reset(self) -> None:
        self._g.rewind_to(0)
        self._primed = False

    def get_stats(self) -> dict[str, Any]:
        s = self._g.get_speculative_stats()
        return {"rounds": s["rounds"], "draft_tokens_proposed": s["draft_tokens_proposed"],
                "draft_tokens_accepted": s["draft_tokens_accepted"],
                "tokens_emitted": s["tokens_emitted"], "accepts": s["draft_tokens_accepted"]}
