"""What og.Images and og.Audios share: files the C library (src/media/) decodes, opened
from paths or from bytes held in memory, as onnxruntime-genai's classes open them."""
from __future__ import annotations

import ctypes
import os
from ctypes import c_char_p, c_size_t, c_void_p

from ._genai import _Handle, _Owned, _path
from ._lib import InvalidArgumentError, lib


class _MediaFiles(_Owned):
    _api = ""   # the C functions' prefix: og_images, og_audios (_open, _load, _count, _free)
    _none = ""  # what open_bytes was not given, in its error

    def __init__(self, ptr: int):
        self._h = _Handle(ptr, getattr(lib, self._api + "_free"))

    @classmethod
    def open(cls, *paths: str | os.PathLike):
        """Reads and decodes the files; a malformed one raises InvalidArgumentError naming it."""
        if not paths:
            raise InvalidArgumentError(f"{cls._what}.open: no paths given")
        raw = [_path(p, f"{cls._what}.open") for p in paths]
        arr = (c_char_p * len(raw))(*raw)
        out = c_void_p()
        getattr(lib, cls._api + "_open")(arr, len(raw), ctypes.byref(out))
        return cls(out.value)

    @classmethod
    def open_bytes(cls, *blobs: bytes):
        """Encoded files held in memory (onnxruntime-genai's open_bytes)."""
        if not blobs:
            raise InvalidArgumentError(f"{cls._what}.open_bytes: no {cls._none} given")
        keep = [bytes(b) for b in blobs]
        ptrs = (c_void_p * len(keep))(*[ctypes.cast(c_char_p(b), c_void_p) for b in keep])
        sizes = (c_size_t * len(keep))(*[len(b) for b in keep])
        out = c_void_p()
        getattr(lib, cls._api + "_load")(ptrs, sizes, len(keep), ctypes.byref(out))
        return cls(out.value)

    def __len__(self) -> int:
        return getattr(lib, self._api + "_count")(self._handle().ptr)
