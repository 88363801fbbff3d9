"""Audio as onnxruntime-genai names it: ``og.Audios.open(*paths)``. The WAV files are read
and Whisper's log-mel ``input_features`` computed by the C library (src/media/)."""
from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_int, c_size_t, c_void_p

import numpy as np

from ._genai import Tensor
from ._lib import _fn, _st, lib
from ._media import _MediaFiles
from ._tensor import take_tensor

_fn("og_audios_free", None, c_void_p)
_fn("og_audios_count", c_size_t, c_void_p)
_fn("og_audios_samples", POINTER(ctypes.c_float), c_void_p, c_size_t, POINTER(c_size_t),
    POINTER(c_int))
_st("og_audios_open", POINTER(c_char_p), c_size_t, POINTER(c_void_p))
_st("og_audios_load", POINTER(c_void_p), POINTER(c_size_t), c_size_t, POINTER(c_void_p))
_st("og_audios_whisper_features", c_void_p, c_int, POINTER(c_void_p))
_st("og_audios_whisper_features_whole", c_void_p, c_int, POINTER(c_void_p))


class Audios(_MediaFiles):
    """Decoded audio files (WAV: PCM 8/16/24/32-bit or float 32/64-bit, channels averaged
    to mono). ``Audios.open("a.wav", "b.wav")`` as in onnxruntime-genai."""
    _what = "Audios"
    _api = "og_audios"
    _none = "audio"

    def samples(self, index: int = 0) -> tuple[np.ndarray, int]:
        """(mono float32 samples, sample rate in Hz) of audio `index` (a copy)."""
        n, rate = c_size_t(), c_int()
        p = lib.og_audios_samples(self._handle().ptr, index, ctypes.byref(n), ctypes.byref(rate))
        if not p:
            raise IndexError(f"Audios.samples: index {index} out of range ({len(self)} audios)")
        return np.ctypeslib.as_array(p, shape=(n.value,)).copy() if n.value else \
            np.zeros(0, np.float32), rate.value

    def input_features(self, n_mels: int = 80, whole: bool = False) -> Tensor:
        """Whisper's input_features as transformers' WhisperFeatureExtractor computes them:
        float32 (len(self), n_mels, 3000) of the first 30 s; with whole=True every audio
        whole, zero-padded to the longest (truncation=False, padding="longest"), for
        long-form decoding: (len(self), n_mels, longest / 160). Audio above 16 kHz is
        down-sampled first as onnxruntime-genai does; below 16 kHz raises."""
        out = c_void_p()
        fn = lib.og_audios_whisper_features_whole if whole else lib.og_audios_whisper_features
        fn(self._handle().ptr, int(n_mels), ctypes.byref(out))
        return Tensor(take_tensor(out.value))
