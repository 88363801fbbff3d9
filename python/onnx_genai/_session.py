"""onnxruntime's InferenceSession shape over og_session: one ONNX graph run on the CPU, by
onnx-genai's own kernels or, where they lack an op, by onnxruntime (the backend)."""
from __future__ import annotations

import ctypes
import os
import threading
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from . import _lib
from ._genai import PathLike, _Handle, _Owned
from ._lib import InvalidArgumentError, UnsupportedError, lib
from ._tensor import Wrapped, take_tensor, type_name


class SessionOptions:
    """The options onnxruntime's SessionOptions offers that apply here: the number of
    threads; and onnx-genai's own: ``backend``, what runs the graph ("auto", the default:
    our kernels when there is one for every node, else onnxruntime with a RuntimeWarning
    naming the ops; "native"; "ort": onnxruntime, found as the C library finds it), and
    ``plan_memory`` (see its docstring). Other attributes may be set and are ignored."""

    def __init__(self):
        self.intra_op_num_threads = 0
        self.backend = "auto"
        self._plan_memory = None

    @property
    def plan_memory(self) -> int | None:
        """The most bytes a native session keeps in cached execution plans between runs
        (og_session_options.plan_memory). The native executor makes a plan per class of
        input shapes (buffer offsets and an arena for the run's intermediate values) and
        reuses it; beyond this many bytes the least recently used plans are evicted, and
        a later run of an evicted class plans again. None (the default): the library's
        default, 64 MiB; 0: no plan is kept between runs. An int of bytes; anything else
        is a TypeError, a negative value a ValueError. Ignored by onnxruntime.
        InferenceSession.plan_stats() reports what the session holds."""
        return self._plan_memory

    @plan_memory.setter
    def plan_memory(self, value: int | None) -> None:
        self._plan_memory = _lib.plan_memory_value(value, "SessionOptions.plan_memory")


class NodeArg:
    """A graph input or output as declared: name, shape (int for a fixed dimension, the
    symbol's name for a symbolic one, None for an unknown one) and type
    ("tensor(float)", ...)."""
    __slots__ = ("name", "shape", "type")

    def __init__(self, name: str, shape: list, type_: str):
        self.name = name
        self.shape = shape
        self.type = type_

    def __repr__(self) -> str:
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


_CPU = "CPUExecutionProvider"


class InferenceSession(_Owned):
    """An ONNX graph (a path or the model's bytes), run by onnx-genai's own kernels (or by
    onnxruntime: SessionOptions.backend):
    ``InferenceSession(path).run(output_names, {name: ndarray})`` as in onnxruntime."""
    _what = "InferenceSession"

    def __init__(self, path_or_bytes: PathLike | bytes, sess_options: SessionOptions | None = None,
                 providers: Sequence[Any] | None = None, provider_options: Any = None,
                 **kwargs: Any):
        for p in providers or ():
            name = p[0] if isinstance(p, (tuple, list)) else p
            if name != _CPU:
                raise UnsupportedError(f"execution provider '{name}' is not available: "
                                       f"onnx-genai runs on the CPU ({_CPU})")
        threads = int(getattr(sess_options, "intra_op_num_threads", 0) or 0)
        backend = _lib.backend_value(getattr(sess_options, "backend", "auto"))
        plan_memory = _lib.plan_memory_value(getattr(sess_options, "plan_memory", None),
                                             "SessionOptions.plan_memory")
        opts = _lib.options_with_plan_memory(_lib.SessionOptions, plan_memory,
                                             num_threads=threads, backend=backend,
                                             graph_optimization_level=-1)
        out = ctypes.c_void_p()
        self._bytes = None
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._bytes = bytes(path_or_bytes)  # must outlive the session
            lib.og_session_open_bytes(self._bytes, len(self._bytes), None, ctypes.byref(opts),
                                      ctypes.byref(out))
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            lib.og_session_open(os.fsencode(path_or_bytes), ctypes.byref(opts),
                                ctypes.byref(out))
        else:
            raise TypeError("InferenceSession: expected a path or the model's bytes, got "
                            f"{type(path_or_bytes).__name__}")
        self._h = _Handle(out.value, lib.og_session_close)
        self._lock = threading.Lock()
        why = lib.og_session_warning(out.value)
        if why:
            warnings.warn(why.decode("utf-8"), RuntimeWarning, stacklevel=2)
        self._inputs = self._describe(lib.og_session_input_count, lib.og_session_input_info)
        self._outputs = self._describe(lib.og_session_output_count, lib.og_session_output_info)

    def _describe(self, count, info) -> list[NodeArg]:
        h = self._handle()
        out = []
        for i in range(count(h.ptr)):
            v = _lib.ValueInfo()
            info(h.ptr, i, ctypes.byref(v))
            shape: list = []
            for d in range(max(v.rank, 0)):
                if v.dims[d] >= 0:
                    shape.append(int(v.dims[d]))
                else:
                    sym = v.dim_names[d] if v.dim_names else None
                    shape.append(sym.decode("utf-8") if sym else None)
            out.append(NodeArg(v.name.decode("utf-8"), shape, type_name(v.dtype)))
        return out

    def get_inputs(self) -> list[NodeArg]:
        """The graph's inputs as declared (name, shape, type)."""
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        """The graph's outputs as declared (name, shape, type)."""
        return list(self._outputs)

    @property
    def backend(self) -> str:
        """What runs the graph: "native" or "onnxruntime"."""
        return lib.og_session_backend(self._handle().ptr).decode("utf-8")

    def get_providers(self) -> list[str]:
        """["CPUExecutionProvider"]."""
        return [_CPU]

    def plan_stats(self) -> dict:
        """The execution plans the session caches now (SessionOptions.plan_memory bounds
        them): ``bytes`` held (plan tables and arenas, subgraphs' included), ``peak`` (the
        most since the session opened), ``plans`` cached, ``evicted`` (for the byte budget,
        since the session opened) and ``budget`` (the plan memory in effect). All zeros on
        onnxruntime."""
        st = _lib.PlanStats()
        lib.og_session_plan_stats(self._handle().ptr, ctypes.byref(st))
        return st.as_dict()

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any],
            run_options: Any = None) -> list[np.ndarray]:
        """Runs the graph: input_feed maps input names to numpy arrays (of the declared
        dtype; strings as str/bytes object arrays); returns the named outputs (all of
        them for None or []) as numpy arrays, in order."""
        if not isinstance(input_feed, Mapping):
            raise TypeError(f"run: input_feed must be a dict of name -> array, got "
                            f"{type(input_feed).__name__}")
        names = [o.name for o in self._outputs] if not output_names else list(output_names)
        for n in names:
            if not isinstance(n, str):
                raise TypeError(f"run: output names must be str, got {type(n).__name__}")
        wrapped: list[Wrapped] = []
        try:
            for k, v in input_feed.items():
                if not isinstance(k, str):
                    raise TypeError(f"run: input names must be str, got {type(k).__name__}")
                wrapped.append(Wrapped(k, v))
            n_in, n_out = len(wrapped), len(names)
            in_names = (ctypes.c_char_p * max(n_in, 1))(*[k.encode() for k in input_feed])
            in_tensors = (ctypes.c_void_p * max(n_in, 1))(*[w.t for w in wrapped])
            out_names = (ctypes.c_char_p * max(n_out, 1))(*[n.encode() for n in names])
            outs = (ctypes.c_void_p * max(n_out, 1))()
            with self._lock:
                lib.og_session_run(self._handle().ptr, in_names, in_tensors, n_in, out_names,
                                   outs, n_out)
        finally:
            for w in wrapped:
                w.close()
        return [take_tensor(outs[i]) for i in range(n_out)]


__all__ = ["InferenceSession", "SessionOptions", "NodeArg", "InvalidArgumentError"]
