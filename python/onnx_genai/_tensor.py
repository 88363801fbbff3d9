"""numpy arrays to and from og_tensor: dtype tables, zero-copy wrapping of inputs and of
tensors the library hands over, string tensors."""
from __future__ import annotations

import ctypes

import numpy as np

from ._lib import InvalidArgumentError, OgString, UnsupportedError, lib

# ONNX TensorProto.DataType numbers (og_dtype) <-> numpy, and onnxruntime's type names.
_NUMPY = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
          7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32,
          13: np.uint64, 14: np.complex64, 15: np.complex128}
NUMPY_DTYPE = {k: np.dtype(v) for k, v in _NUMPY.items()}
OG_DTYPE = {v: k for k, v in NUMPY_DTYPE.items()}
STRING = 8
TYPE_NAMES = {1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
              7: "int64", 8: "string", 9: "bool", 10: "float16", 11: "double", 12: "uint32",
              13: "uint64", 14: "complex64", 15: "complex128", 16: "bfloat16",
              17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2",
              20: "float8e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4e2m1"}


# Types numpy lacks, as the ml_dtypes package (which onnx uses) spells them. Inputs of these
# dtypes are accepted by name; outputs need ml_dtypes installed. The 4-bit types hold one
# element per byte there and two per byte in ONNX (first in the low nibble).
_NAMED = {"bfloat16": 16, "float8_e4m3fn": 17, "float8_e4m3fnuz": 18, "float8_e5m2": 19,
          "float8_e5m2fnuz": 20, "uint4": 21, "int4": 22, "float4_e2m1fn": 23}
_NAMED_BY_CODE = {v: k for k, v in _NAMED.items()}
_PACKED = (21, 22, 23)


def _ml_dtype(code: int) -> np.dtype:
    try:
        import ml_dtypes
    except ImportError:
        raise UnsupportedError(f"a {TYPE_NAMES[code]} tensor needs the ml_dtypes package to be "
                               "returned as a numpy array (pip install ml_dtypes)") from None
    return np.dtype(getattr(ml_dtypes, _NAMED_BY_CODE[code]))


def type_name(og_dtype: int) -> str:
    """onnxruntime's spelling of a tensor type: "tensor(float)", ..."""
    return f"tensor({TYPE_NAMES.get(og_dtype, 'undefined')})"


def int32_copy(addr: int | None, n: int) -> np.ndarray:
    """A writable int32 array copied from n ids at a C address (a generator's or the
    tokenizer's). A ctypes array over the address costs a few times less than a ctypes
    pointer through np.ctypeslib.as_array, and this runs once or twice per token."""
    if not n:
        return np.zeros(0, dtype=np.int32)
    return np.frombuffer((ctypes.c_int32 * n).from_address(addr), dtype=np.int32).copy()


class _Owner:
    """Keeps a library-owned og_tensor alive for the numpy array viewing its memory."""
    __slots__ = ("__array_interface__", "_t")

    def __init__(self, t: int, shape: tuple, dtype: np.dtype, data: int):
        self._t = t
        self.__array_interface__ = {"shape": shape, "typestr": dtype.str,
                                    "data": (data, False), "version": 3}

    def __del__(self):
        t, self._t = self._t, None
        if t:
            lib.og_tensor_free(t)


def take_tensor(t: int) -> np.ndarray:
    """The numpy array of a tensor the library handed over; takes ownership of t. Numbers
    are viewed in place (the array keeps the tensor alive); strings become str objects."""
    try:
        dtype = lib.og_tensor_dtype(t)
        rank = lib.og_tensor_rank(t)
        dims = lib.og_tensor_dims(t)
        shape = tuple(dims[i] for i in range(rank))
        count = lib.og_tensor_element_count(t)
        if dtype == STRING:
            items = (OgString * count).from_address(lib.og_tensor_data(t)) if count else ()
            out = np.empty(shape, dtype=object)
            flat = out.reshape(-1)
            for i, s in enumerate(items):
                flat[i] = ctypes.string_at(s.data, s.size).decode("utf-8", "surrogateescape") \
                    if s.size else ""
            return out
        if dtype in _NAMED_BY_CODE:
            mld = _ml_dtype(dtype)
            raw = np.frombuffer(ctypes.string_at(lib.og_tensor_data(t),
                                                 lib.og_tensor_size_bytes(t)), dtype=np.uint8)
            if dtype in _PACKED:
                raw = np.stack([raw & 0x0F, raw >> 4], axis=-1).reshape(-1)[:count]
            return raw.copy().view(mld).reshape(shape)
        npd = NUMPY_DTYPE.get(dtype)
        if npd is None:
            raise UnsupportedError(f"a {TYPE_NAMES.get(dtype, dtype)} tensor has no numpy "
                                   "dtype to return it as")
        if count == 0:
            return np.empty(shape, dtype=npd)
        owner = _Owner(t, shape, npd, lib.og_tensor_data(t))
        t = None  # the owner frees it
        return np.asarray(owner)
    finally:
        if t:
            lib.og_tensor_free(t)


class Wrapped:
    """A borrowed og_tensor over a numpy array (or a copied string tensor), for one call.
    Keeps the array alive; close() frees the handle."""
    __slots__ = ("t", "_keep")

    def __init__(self, name: str, value, what: str = "input"):
        arr = value if isinstance(value, np.ndarray) else np.asarray(value)
        self._keep = None
        out = ctypes.c_void_p()
        ndim = arr.ndim
        dims = (ctypes.c_int64 * max(ndim, 1))(*arr.shape)
        if arr.dtype.kind in "OUS":
            items = [_as_bytes(name, x, what) for x in arr.reshape(-1).tolist()]
            strings = (OgString * max(len(items), 1))()
            for i, b in enumerate(items):
                strings[i].data = ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p)
                strings[i].size = len(b)
            self._keep = items
            lib.og_tensor_create_strings(dims, arr.ndim, strings, ctypes.byref(out))
        else:
            if arr.dtype.byteorder == ">":
                arr = arr.astype(arr.dtype.newbyteorder("="))
            dtype = OG_DTYPE.get(arr.dtype) or _NAMED.get(arr.dtype.name)
            if dtype in _PACKED:
                nib = np.ascontiguousarray(arr).reshape(-1).view(np.uint8) & 0x0F
                if nib.size % 2:
                    nib = np.append(nib, np.uint8(0))
                arr = (nib[0::2] | (nib[1::2] << 4)).astype(np.uint8)
            if dtype is None and getattr(arr.dtype.type, "__module__", "").startswith("ml_dtypes"):
                raise UnsupportedError(f"{what} '{name}': {arr.dtype} tensors are not "
                                       "supported by onnx-genai")
            if dtype is None:
                raise TypeError(f"{what} '{name}': numpy dtype {arr.dtype} has no ONNX tensor "
                                "type (accepted: bool, (u)int8-64, float16/32/64, complex, "
                                "str/bytes, and ml_dtypes' bfloat16, float8, (u)int4, float4)")
            arr = np.ascontiguousarray(arr)
            self._keep = arr
            lib.og_tensor_wrap(dtype, dims, ndim, ctypes.c_void_p(arr.ctypes.data),
                               arr.nbytes, ctypes.byref(out))
        self.t = out.value

    def close(self):
        t, self.t = self.t, None
        if t:
            lib.og_tensor_free(t)


def _as_bytes(name: str, x, what: str) -> bytes:
    if isinstance(x, str):
        return x.encode("utf-8", "surrogateescape")
    if isinstance(x, bytes):
        return x
    raise InvalidArgumentError(f"{what} '{name}': a string tensor holds str or bytes, not "
                               f"{type(x).__name__}")
