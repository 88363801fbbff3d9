"""onnxruntime-genai's Python API over the onnx-genai C library: Config, Model, Tokenizer,
TokenizerStream, GeneratorParams, Generator, Adapters, Tensor.

Every call goes to a C function of include/onnx_genai.h; nothing of the generation itself
(search, stopping, batching) is done here. Objects own their C handle through _Handle,
which frees it when the last Python reference (the object itself, or a child that needs
it: a generator keeps its model) goes; close() lets go early. The C library's sessions
are not re-entrant, so every call that may run a model's graphs holds that model's lock;
ctypes releases the GIL during C calls, so other Python threads run meanwhile.
"""
from __future__ import annotations

import builtins
import ctypes
import json
import os
import threading
from typing import Any, Iterable, Sequence, Union

import numpy as np

from . import _lib
from ._lib import InvalidArgumentError, UnsupportedError, check, lib, take_string
from ._tensor import int32_copy, take_tensor

PathLike = Union[str, "os.PathLike[str]"]

_I32P = ctypes.POINTER(ctypes.c_int32)


class _Handle:
    """A C object and its destructor; dependencies (parents) stay alive as long as it."""
    __slots__ = ("ptr", "_free", "_deps")

    def __init__(self, ptr: int, free, deps: tuple = ()):
        self.ptr = ptr
        self._free = free
        self._deps = deps

    def __del__(self):
        p, self.ptr = self.ptr, None
        if p:
            self._free(p)


class _Owned:
    _what = "object"
    _h: _Handle | None = None

    def _handle(self) -> _Handle:
        h = self._h
        if h is None:
            raise InvalidArgumentError(f"{self._what} is closed")
        return h

    def close(self) -> None:
        """Releases the C object now (it is freed once nothing that needs it is left).
        Using this object afterwards raises InvalidArgumentError."""
        self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _path(path: PathLike, what: str) -> bytes:
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"{what}: expected a path (str or os.PathLike), got {type(path).__name__}")
    return os.fsencode(path)


def _opt_str(s: str | None) -> bytes | None:
    return None if s is None else s.encode("utf-8")


# ---- Config and Model ----------------------------------------------------------------

class Config(_Owned):
    """A package's genai_config.json, to be changed before a Model opens from it."""
    _what = "Config"

    def __init__(self, path: PathLike):
        out = ctypes.c_void_p()
        p = _path(path, "Config")
        lib.og_config_open(p, ctypes.byref(out))
        self._h = _Handle(out.value, lib.og_config_free)
        self._path = os.fsdecode(p)

    def overlay(self, json_text: str) -> None:
        """Merges a JSON object into the config (objects key by key, other values
        replace), e.g. ``'{"search": {"max_length": 64}}'``."""
        if not isinstance(json_text, str):
            raise TypeError(f"overlay: expected a JSON string, got {type(json_text).__name__}")
        lib.og_config_overlay(self._handle().ptr, json_text.encode("utf-8"))

    def clear_providers(self) -> None:
        """Asks for the CPU (the only device this runtime computes on)."""
        lib.og_config_clear_providers(self._handle().ptr)

    def append_provider(self, provider: str) -> None:
        """"cpu" changes nothing; "cuda" (onnxruntime's CUDA provider) makes the model run
        on onnxruntime with it (opening the Model fails, naming the provider, where the
        onnxruntime found has no CUDA); any other raises UnsupportedError."""
        lib.og_config_append_provider(self._handle().ptr, str(provider).encode("utf-8"))

    def set_provider_option(self, provider: str, key: str, value: str) -> None:
        """Raises UnsupportedError: the CPU kernels take no provider options."""
        lib.og_config_set_provider_option(self._handle().ptr, str(provider).encode("utf-8"),
                                          str(key).encode("utf-8"), str(value).encode("utf-8"))


def _config_unsupported(name: str):
    def method(self, *args, **kwargs) -> None:
        raise UnsupportedError(f"Config.{name} is not supported by onnx-genai (it runs on the "
                               "CPU and reads the package's files as they are)")
    method.__name__ = name
    method.__doc__ = "Raises UnsupportedError: onnx-genai runs on the CPU from the package's files."
    return method


for _name in ("add_model_data", "remove_model_data",
              "set_decoder_provider_options_hardware_device_type",
              "set_decoder_provider_options_hardware_device_id",
              "set_decoder_provider_options_hardware_vendor_id",
              "clear_decoder_provider_options_hardware_device_type",
              "clear_decoder_provider_options_hardware_device_id",
              "clear_decoder_provider_options_hardware_vendor_id"):
    setattr(Config, _name, _config_unsupported(_name))


class Model(_Owned):
    """A model package (a folder with genai_config.json), opened from its path or from a
    Config."""
    _what = "Model"

    def __init__(self, config_or_path: Config | PathLike, *, num_threads: int = 0,
                 backend: str = "auto", plan_memory: int | None = None,
                 kv_dtype: str | None = None):
        """backend: what runs the graphs: "auto" (our kernels when there is one for every
        node of every graph, else onnxruntime, with the ops named in ``warnings``),
        "native" or "ort" (onnxruntime).
        plan_memory: the most bytes each native session of the model keeps in cached
        execution plans between runs (one plan per class of input shapes; the least
        recently used are evicted beyond it): None for the library's default (64 MiB),
        0 to keep none; an int of bytes (TypeError otherwise, ValueError if negative).
        plan_stats() reports what the sessions hold.
        kv_dtype: how the KV cache is stored: None or "auto" (as the package declares),
        "f32", "f16", "bf16", or "int8" / "fp8" (quantized per position and kv head when
        written, about a quarter of float32's bytes; our kernels only)."""
        plan_memory = _lib.plan_memory_value(plan_memory, "Model plan_memory")
        opts = _lib.options_with_plan_memory(_lib.ModelOptions, plan_memory,
                                             num_threads=int(num_threads), allow_text_only=1,
                                             backend=_lib.backend_value(backend),
                                             graph_optimization_level=-1,
                                             kv_dtype=_lib.kv_dtype_value(kv_dtype, "Model kv_dtype"))
        out = ctypes.c_void_p()
        if isinstance(config_or_path, Config):
            lib.og_model_open_config(config_or_path._handle().ptr, ctypes.byref(opts),
                                     ctypes.byref(out))
            self._dir = config_or_path._path
        else:
            p = _path(config_or_path, "Model")
            lib.og_model_open(p, ctypes.byref(opts), ctypes.byref(out))
            self._dir = os.fsdecode(p)
        self._h = _Handle(out.value, lib.og_model_close)
        self._lock = threading.Lock()

    @property
    def type(self) -> str:
        """genai_config.json's model.type ("gpt2", "llama", ...)."""
        return lib.og_model_type(self._handle().ptr).decode("utf-8")

    @property
    def backend(self) -> str:
        """What runs the model's graphs: "native" or "onnxruntime"."""
        return lib.og_model_backend(self._handle().ptr).decode("utf-8")

    def plan_stats(self) -> dict:
        """The execution plans the model's sessions cache now, summed over its sessions
        (plan_memory bounds each): ``bytes``, ``peak``, ``plans``, ``evicted`` and
        ``budget`` (each session's plan memory), as InferenceSession.plan_stats()."""
        st = _lib.PlanStats()
        lib.og_model_plan_stats(self._handle().ptr, ctypes.byref(st))
        return st.as_dict()

    @property
    def device_type(self) -> str:
        """Always "CPU"."""
        return "CPU"

    @property
    def vocab_size(self) -> int:
        """The number of logits per position (genai_config.json's model.vocab_size)."""
        return lib.og_model_vocab_size(self._handle().ptr)

    @property
    def warnings(self) -> list[str]:
        """What the config's checks found odd (unknown keys, ...), one sentence each."""
        h = self._handle()
        return [lib.og_model_warning(h.ptr, i).decode("utf-8")
                for i in range(lib.og_model_warning_count(h.ptr))]

    def create_multimodal_processor(self):
        """The package's processor (onnxruntime-genai's name): ``processor(prompt,
        images=og.Images.open(...))`` returns NamedTensors (input_ids and the image
        tensors); see _image.MultiModalProcessor."""
        from ._image import MultiModalProcessor
        return MultiModalProcessor(self)


def _token_ids(source: Model | Config | None):
    """(token_id(key), eos ids) from a model or a config; -1 / [] without one."""
    if isinstance(source, Model):
        token_id, eos_ids = lib.og_model_token_id, lib.og_model_eos_token_ids
    elif isinstance(source, Config):
        token_id, eos_ids = lib.og_config_token_id, lib.og_config_eos_token_ids
    else:
        return (lambda key: -1), np.zeros(0, dtype=np.int32)
    h = source._handle()
    ids = _I32P()
    n = eos_ids(h.ptr, ctypes.byref(ids))
    return (lambda key: token_id(h.ptr, key.encode())), np.array(ids[:n], dtype=np.int32)


# ---- Tensor --------------------------------------------------------------------------

class Tensor:
    """A numpy array passed where onnxruntime-genai takes an og.Tensor (encode_batch's
    result, append_tokens' argument)."""

    def __init__(self, array):
        self._array = np.asarray(array)

    def as_numpy(self) -> np.ndarray:
        """The array itself (not a copy)."""
        return self._array

    def shape(self) -> list[int]:
        """The array's shape as a list."""
        return list(self._array.shape)

    def __array__(self, dtype=None, copy=None):
        return self._array if dtype is None else self._array.astype(dtype)

    def __repr__(self) -> str:
        return f"Tensor({self._array!r})"


# ---- Tokenizer -----------------------------------------------------------------------

class Tokenizer(_Owned):
    """The package's tokenizer (tokenizer.json, tokenizer_config.json), from a Model, a
    Config or a folder path."""
    _what = "Tokenizer"

    def __init__(self, source: Model | Config | PathLike):
        out = ctypes.c_void_p()  # needs nothing of the model once loaded
        if isinstance(source, Model):
            mh = source._handle()
            lib.og_tokenizer_create(mh.ptr, ctypes.byref(out))
            self._dir = source._dir
        elif isinstance(source, Config):
            self._dir = os.path.dirname(source._path) if os.path.isfile(source._path) \
                else source._path
            lib.og_tokenizer_open(os.fsencode(self._dir), ctypes.byref(out))
        else:
            p = _path(source, "Tokenizer")
            lib.og_tokenizer_open(p, ctypes.byref(out))
            self._dir = os.fsdecode(p)
            source = None
            cfg = os.path.join(self._dir, "genai_config.json")
            if os.path.isfile(cfg):
                source = Config(self._dir)
        self._h = _Handle(out.value, lib.og_tokenizer_free)
        token_id, self._eos = _token_ids(source)
        self._ids = {k: token_id(k) for k in ("bos_token_id", "pad_token_id", "bot_token_id",
                                              "eot_token_id", "bor_token_id", "eor_token_id")}

    # token ids from genai_config.json, as onnxruntime-genai's tokenizer reports them
    def _config_id(key: str):  # noqa: N805 (a helper run in the class body)
        return property(lambda self: self._ids[key],
                        doc=f"genai_config.json's {key} (-1 when it has none).")

    bos_token_id = _config_id("bos_token_id")
    pad_token_id = _config_id("pad_token_id")
    bot_token_id = _config_id("bot_token_id")
    eot_token_id = _config_id("eot_token_id")
    bor_token_id = _config_id("bor_token_id")
    eor_token_id = _config_id("eor_token_id")
    del _config_id

    @property
    def eos_token_ids(self) -> np.ndarray:
        """genai_config.json's eos_token_id as an int32 array (one or several ids)."""
        return self._eos.copy()

    def encode(self, text: str) -> np.ndarray:
        """Text -> int32 token ids, with the tokenizer's special tokens (e.g. BOS)."""
        if not isinstance(text, str):
            raise TypeError(f"encode: expected str, got {type(text).__name__}")
        data = text.encode("utf-8", "surrogatepass")
        ids = ctypes.c_void_p()
        n = ctypes.c_size_t()
        lib.og_tokenizer_encode(self._handle().ptr, data, len(data), 1, ctypes.byref(ids),
                                ctypes.byref(n))
        try:
            return int32_copy(ids.value, n.value)
        finally:
            lib.og_free(ids)

    def encode_batch(self, texts: Sequence[str]) -> Tensor:
        """Several texts -> one int32 [len(texts), longest] Tensor, shorter rows
        right-padded with the config's pad_token_id (as onnxruntime-genai does)."""
        if isinstance(texts, str) or not isinstance(texts, Iterable):
            raise TypeError("encode_batch: expected a sequence of str")
        rows = [self.encode(t) for t in texts]
        width = max((len(r) for r in rows), default=0)
        out = np.full((len(rows), width), self.pad_token_id, dtype=np.int32)
        for i, r in enumerate(rows):
            out[i, :len(r)] = r
        return Tensor(out)

    def decode(self, tokens) -> str:
        """int32 token ids -> text, special tokens left out."""
        arr = _token_array(tokens, "decode")
        if arr.ndim != 1:
            raise InvalidArgumentError(f"decode: expected a 1-D array of token ids, got shape "
                                       f"{arr.shape}")
        text = ctypes.c_void_p()
        n = ctypes.c_size_t()
        lib.og_tokenizer_decode_len(self._handle().ptr, arr.ctypes.data_as(_I32P), arr.size, 1,
                                    ctypes.byref(text), ctypes.byref(n))
        return take_string(text.value, n.value)  # by length: the text may hold NULs

    def decode_batch(self, tokens) -> list[str]:
        """Rows of a 2-D array (or Tensor) of token ids -> texts."""
        arr = _token_array(tokens, "decode_batch")
        if arr.ndim != 2:
            raise InvalidArgumentError(f"decode_batch: expected a 2-D array of token ids, got "
                                       f"shape {arr.shape}")
        return [self.decode(row) for row in arr]

    def to_token_id(self, token: str) -> int:
        """The id of a token given by its text, or -1."""
        if not isinstance(token, str):
            raise TypeError(f"to_token_id: expected str, got {type(token).__name__}")
        return int(lib.og_tokenizer_token_to_id(self._handle().ptr, token.encode("utf-8")))

    def create_stream(self) -> TokenizerStream:
        """A streaming decoder: feed generated ids one at a time, get complete text."""
        return TokenizerStream(self)

    def apply_chat_template(self, messages: str | list, *, template_str: str | None = None,
                            tools: str | list | None = None,
                            add_generation_prompt: bool = True) -> str:
        """Renders a conversation (a JSON string, or a list of message dicts) with the
        package's chat template, or with template_str when given (it sees the package's
        special tokens); tools is a JSON string (or list) of tool schemas. Rendered as
        Hugging Face transformers renders it."""
        msgs = messages if isinstance(messages, str) else json.dumps(messages)
        tools_json = tools if isinstance(tools, str) or tools is None else json.dumps(tools)
        out = ctypes.c_void_p()
        if template_str:
            data = template_str.encode("utf-8")
            lib.og_chat_template_from_string(data, len(data), ctypes.byref(out))
            h = _Handle(out.value, lib.og_chat_template_free)
            lib.og_chat_template_load_tokens(h.ptr, os.fsencode(self._dir))
        else:
            lib.og_chat_template_open(os.fsencode(self._dir), ctypes.byref(out))
            h = _Handle(out.value, lib.og_chat_template_free)
        opts = _lib.ChatOptions(ctypes.sizeof(_lib.ChatOptions), _opt_str(tools_json or None),
                                None, 1 if add_generation_prompt else 0, None, None)
        text = ctypes.c_void_p()
        lib.og_chat_template_apply(h.ptr, msgs.encode("utf-8"), ctypes.byref(opts),
                                   ctypes.byref(text))
        return take_string(text.value)


class TokenizerStream(_Owned):
    """Streaming decode: decode(token) returns the text that token completes ("" while a
    character is still incomplete)."""
    _what = "TokenizerStream"

    def __init__(self, tokenizer: Tokenizer):
        th = tokenizer._handle()
        out = ctypes.c_void_p()
        lib.og_tokenizer_stream_create(th.ptr, ctypes.byref(out))
        self._h = _Handle(out.value, lib.og_tokenizer_stream_free, (th,))
        self._lock = threading.Lock()
        self._piece = ctypes.c_void_p()
        self._len = ctypes.c_size_t()

    def _piece_text(self) -> str:
        # by length: a piece may be a NUL character
        p, n = self._piece.value, self._len.value
        return ctypes.string_at(p, n).decode("utf-8", "replace") if p and n else ""

    def decode(self, token: int) -> str:
        """The text this token completes ("" while a character is still incomplete)."""
        t = _token_int(token, "TokenizerStream.decode")
        with self._lock:
            lib.og_tokenizer_stream_decode_len(self._handle().ptr, t, ctypes.byref(self._piece),
                                               ctypes.byref(self._len))
            return self._piece_text()

    def set_context(self, tokens) -> None:
        """The ids that the next ones continue, e.g. the prompt (not in onnxruntime-genai):
        the pieces that follow are what they add to the decode of these ids, so a first
        piece such as "▁and" after "Tom" keeps its space. Drops what was held back."""
        arr = np.ascontiguousarray(np.asarray(tokens, dtype=np.int64).reshape(-1))
        if arr.size and (arr.min() < -2**31 or arr.max() >= 2**31):
            raise InvalidArgumentError("TokenizerStream.set_context: a token id does not fit in int32")
        ids = arr.astype(np.int32)
        with self._lock:
            lib.og_tokenizer_stream_set_context(
                self._handle().ptr, ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), ids.size)

    def flush(self) -> str:
        """What is still held back at the end of generation (not in onnxruntime-genai)."""
        with self._lock:
            lib.og_tokenizer_stream_flush_len(self._handle().ptr, ctypes.byref(self._piece),
                                              ctypes.byref(self._len))
            return self._piece_text()


def _token_int(token, what: str) -> int:
    if isinstance(token, (bool, np.bool_)) or not isinstance(token, (int, np.integer)):
        raise TypeError(f"{what}: expected an integer token id, got {type(token).__name__}")
    t = int(token)
    if not -2**31 <= t < 2**31:
        raise InvalidArgumentError(f"{what}: token id {t} does not fit in int32")
    return t


def _token_array(tokens, what: str) -> np.ndarray:
    """Token ids as a C-contiguous int32 array: any integer dtype whose values fit (lists
    too); floats, bools and other types are refused."""
    if isinstance(tokens, Tensor):
        tokens = tokens.as_numpy()
    arr = tokens if isinstance(tokens, np.ndarray) else np.asarray(tokens)
    if arr.dtype == np.int32:
        return np.ascontiguousarray(arr)
    if arr.size == 0 and arr.dtype == np.float64:  # np.asarray([]) is float64
        return arr.astype(np.int32)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{what}: token ids must be integers, got an array of {arr.dtype}")
    if arr.size and (arr.min() < -2**31 or arr.max() >= 2**31):
        raise InvalidArgumentError(f"{what}: token ids must fit in int32")
    return np.ascontiguousarray(arr, dtype=np.int32)


# ---- GeneratorParams and Generator ---------------------------------------------------

# set_search_options names -> (og_generator_params field, kind). Names the C library has
# no field for are accepted only at the value that changes nothing.
_OPTIONS = {"batch_size": "int", "max_length": "int", "min_length": "int", "do_sample": "bool",
            "top_k": "int", "top_p": "float", "temperature": "float",
            "repetition_penalty": "float", "no_repeat_ngram_size": "int", "num_beams": "int",
            "num_return_sequences": "int", "length_penalty": "float",
            "early_stopping": "bool", "random_seed": "int"}
_NEUTRAL = {"diversity_penalty": 0.0, "chunk_size": 0}
_IGNORED = {"past_present_share_buffer"}  # decided from the model and the beams


class GeneratorParams:
    """Search options for a Generator, starting from the package's search block."""

    def __init__(self, model: Model):
        if not isinstance(model, Model):
            raise TypeError(f"GeneratorParams: expected a Model, got {type(model).__name__}")
        self._model = model
        self._p = lib.og_generator_params_default(model._handle().ptr)
        if self._p.struct_size < _lib.GENERATOR_PARAMS_KNOWN:
            raise ImportError(f"libonnx_genai's og_generator_params has {self._p.struct_size} "
                              f"bytes, fewer than this package knows "
                              f"({_lib.GENERATOR_PARAMS_KNOWN}): the library is older than it")
        self._p.padded_batch = 1  # onnxruntime-genai's batch layout
        self._extra: dict[str, Any] = {}
        self._draft = None

    def set_search_options(self, **options) -> None:
        """Sets search options by name: max_length, min_length, batch_size, do_sample,
        top_k, top_p, temperature, repetition_penalty, no_repeat_ngram_size, num_beams,
        num_return_sequences, length_penalty, early_stopping, random_seed. Values are
        checked when the Generator is made."""
        for name, value in options.items():
            kind = _OPTIONS.get(name)
            if kind is None:
                if name in _IGNORED:
                    _check_kind(name, value, "bool")
                    self._extra[name] = bool(value)
                    continue
                if name in _NEUTRAL:
                    if _check_kind(name, value, "float") != _NEUTRAL[name]:
                        raise UnsupportedError(f"search option '{name}' = {value} is not "
                                               f"supported (only {_NEUTRAL[name]})")
                    self._extra[name] = value
                    continue
                raise InvalidArgumentError(f"unknown search option '{name}' (known: "
                                           f"{', '.join(sorted([*_OPTIONS, *_NEUTRAL, *_IGNORED]))})")
            setattr(self._p, name, _check_kind(name, value, kind))

    def get_search_options(self) -> dict[str, Any]:
        """The search options as they stand, by name."""
        out: dict[str, Any] = {}
        for name, kind in _OPTIONS.items():
            v = getattr(self._p, name)
            out[name] = bool(v) if kind == "bool" else v
        out.update({k: v for k, v in _NEUTRAL.items()})
        out.update(self._extra)
        return dict(sorted(out.items()))

    def set_guidance(self, type: str, data: str, enable_ff_tokens: bool = False) -> None:
        """Constrains generation to a language: type "json_schema" (data: a JSON Schema),
        "json_object" (any JSON object; data ignored), "regex" (data: a regular expression
        the whole output matches) or "lark_grammar" (data: a Lark grammar), as
        onnxruntime-genai names them. An unknown type is an InvalidArgumentError here; a
        bad schema, regex or grammar is one when the Generator is made. Fast-forwarded
        tokens (enable_ff_tokens=True) are not supported: every token is a step."""
        if not isinstance(type, str) or not isinstance(data, str):
            raise TypeError("set_guidance(type, data): expected two str, got "
                            f"{builtins.type(type).__name__} and {builtins.type(data).__name__}")
        if enable_ff_tokens:
            raise UnsupportedError("set_guidance: enable_ff_tokens=True (fast-forwarded "
                                   "tokens) is not supported; every token is generated")
        t, d = type.encode(), data.encode()
        if b"\0" in d:
            raise InvalidArgumentError("set_guidance: data holds a NUL character")
        lib.og_generator_params_set_guidance(ctypes.byref(self._p), t, d)
        self._guidance = (t, d)  # the C params borrow them until the Generator is made

    def set_speculative_options(self, **options) -> None:
        """Speculative decoding by prompt lookup, with onnxruntime-genai's option names:
        ngram_size (0: off, 2..16: match the last ngram_size - 1 tokens),
        max_draft_tokens (1..16), ngram_chained_lookup, min_adaptive_k (0..16: the fewest
        tokens a verification checks), cooldown (accepted; the cost model steps plainly
        while drafts fail), and fixed_k (ours: always max_draft_tokens instead of the cost
        model's choice), draft_model (ours: a Model with the same tokenizer that drafts
        greedily; not with ngram_size) and mtp (ours: the package's MTP head drafts, as
        onnxruntime-genai's MtpGenerator drafts). The tokens are those of plain decoding (greedy, or
        sampled with the same seed); it applies to batch_size 1 without beams. Values are
        checked when the Generator is made."""
        _set_speculative_options(self, options)

    def get_speculative_options(self) -> dict[str, Any]:
        """The speculative options as they stand (numbers as float, as
        onnxruntime-genai returns them)."""
        return _get_speculative_options(self)


# set_speculative_options names (onnxruntime-genai's) -> (og_generator_params field, kind)
_SPECULATIVE = {"ngram_size": ("speculative_ngram_size", "int"),
                "max_draft_tokens": ("speculative_max_draft_tokens", "int"),
                "ngram_chained_lookup": ("speculative_ngram_chained_lookup", "bool"),
                "min_adaptive_k": ("speculative_min_adaptive_k", "int"),
                "cooldown": ("speculative_cooldown", "bool"),
                "fixed_k": ("speculative_fixed_k", "bool"),
                "mtp": ("speculative_mtp", "bool")}


def _set_speculative_options(params: GeneratorParams, options: dict) -> None:
    for name, value in options.items():
        if name == "draft_model":
            if value is not None and not isinstance(value, Model):
                raise TypeError(f"speculative option 'draft_model' takes a Model or None, got "
                                f"{type(value).__name__}")
            params._draft = value  # the C params borrow it; the Generator holds it too
            params._p.speculative_draft_model = value._handle().ptr if value else None
            continue
        if name not in _SPECULATIVE:
            raise InvalidArgumentError(f"unknown speculative option '{name}' (known: "
                                       f"{', '.join(sorted([*_SPECULATIVE, 'draft_model']))})")
        field, kind = _SPECULATIVE[name]
        setattr(params._p, field, _check_kind(name, value, kind))


def _get_speculative_options(params: GeneratorParams) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (field, kind) in _SPECULATIVE.items():
        v = getattr(params._p, field)
        out[name] = bool(v) if kind == "bool" else float(v)
    return out


def _check_kind(name: str, value, kind: str):
    if kind == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"search option '{name}' takes True or False, got {value!r}")
        return int(bool(value))
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer,
                                                                       np.floating)):
        raise TypeError(f"search option '{name}' takes a number, got {value!r}")
    if kind == "int":
        if float(value) != int(value):
            raise InvalidArgumentError(f"search option '{name}' takes an integer, got {value}")
        v = int(value)
        limit = 2**63 if name == "random_seed" else 2**31
        if not -limit <= v < limit:
            raise InvalidArgumentError(f"search option '{name}' = {v} is out of range")
        return v
    return float(value)


class Generator(_Owned):
    """One generation: append prompt tokens, then generate_next_token() until is_done().
    Batches are laid out as onnxruntime-genai lays them out (padding and a kept EOS in
    the sequences)."""
    _what = "Generator"

    def __init__(self, model: Model, params: GeneratorParams):
        if not isinstance(model, Model) or not isinstance(params, GeneratorParams):
            raise TypeError("Generator(model, params): expected a Model and GeneratorParams")
        mh = model._handle()
        out = ctypes.c_void_p()
        draft = getattr(params, "_draft", None)
        keep = (mh, draft._handle()) if draft is not None else (mh,)
        lib.og_generator_create(mh.ptr, ctypes.byref(params._p), ctypes.byref(out))
        self._h = _Handle(out.value, lib.og_generator_destroy, keep)
        self._lock = model._lock
        self._vocab = lib.og_model_vocab_size(mh.ptr)
        self._batch = params._p.batch_size
        self._ids = ctypes.c_void_p()
        self._n = ctypes.c_size_t()
        self._out = (ctypes.byref(self._ids), ctypes.byref(self._n))  # made once: per token

    def get_speculative_stats(self) -> dict[str, Any]:
        """What speculative decoding did, under onnxruntime-genai's names: rounds
        (verifications), draft_tokens_proposed / draft_tokens_accepted, tokens_emitted (by
        the verifications), standard_fallback_steps (plain steps), acceptance_rate; and
        enabled (whether it applies to this generator) and estimated_acceptance (the
        cost model's running estimate)."""
        st = _lib.SpeculativeStats()
        st.struct_size = ctypes.sizeof(st)
        with self._lock:
            lib.og_generator_get_speculative_stats(self._handle().ptr, ctypes.byref(st))
        return {"enabled": bool(st.enabled), "rounds": st.verifications,
                "draft_tokens_proposed": st.drafted, "draft_tokens_evaluated": st.drafted,
                "draft_tokens_accepted": st.accepted, "tokens_emitted": st.emitted,
                "standard_fallback_steps": st.plain_steps,
                "acceptance_rate": st.accepted / st.drafted if st.drafted else 0.0,
                "estimated_acceptance": st.acceptance}

    def append_tokens(self, tokens) -> None:
        """Appends prompt tokens to every sequence and runs them through the model: a 1-D
        array (list, Tensor) for batch_size 1, or a [batch_size, n] array whose rows are
        right-padded with the pad token."""
        arr = _token_array(tokens, "append_tokens")
        if arr.ndim == 2 and arr.shape[0] != self._batch:
            raise InvalidArgumentError(f"append_tokens: {arr.shape[0]} rows of tokens for "
                                       f"batch_size {self._batch}")
        if arr.ndim > 2:
            raise InvalidArgumentError(f"append_tokens: expected a 1-D or 2-D array of token "
                                       f"ids, got shape {arr.shape}")
        with self._lock:
            lib.og_generator_append_tokens(self._handle().ptr, arr.ctypes.data_as(_I32P),
                                           arr.size)

    def generate_next_token(self) -> None:
        """Runs the model if needed and picks the next token of every sequence."""
        with self._lock:
            lib.og_generator_generate_next_token(self._handle().ptr)

    def is_done(self) -> bool:
        """True once every sequence has stopped (EOS or max_length)."""
        with self._lock:
            return bool(lib.og_generator_is_done(self._handle().ptr))

    def get_next_tokens(self) -> np.ndarray:
        """The tokens the last step chose, one per sequence (int32)."""
        with self._lock:
            lib.og_generator_get_next_tokens(self._handle().ptr, *self._out)
            return int32_copy(self._ids.value, self._n.value)

    def get_sequence(self, index: int) -> np.ndarray:
        """Sequence `index` (prompt and generated tokens, int32)."""
        i = _index(index, "get_sequence")
        with self._lock:
            lib.og_generator_get_sequence(self._handle().ptr, i, *self._out)
            return int32_copy(self._ids.value, self._n.value)

    def token_count(self) -> int:
        """The length of sequence 0."""
        return int(self.get_sequence(0).size)

    def rewind_to(self, new_length: int) -> None:
        """Cuts the sequences back to new_length tokens (batch_size 1, or 0)."""
        n = _index(new_length, "rewind_to")
        with self._lock:
            lib.og_generator_rewind_to(self._handle().ptr, n)

    def get_logits(self) -> np.ndarray:
        """The next-token logits, float32 [batch*beams, 1, vocab]."""
        out = ctypes.c_void_p()
        with self._lock:
            lib.og_generator_get_logits(self._handle().ptr, ctypes.byref(out))
        arr = take_tensor(out.value)
        return arr.reshape(arr.shape[0], 1, arr.shape[1])

    def get_output(self, name: str) -> np.ndarray:
        """An output of the last model run by graph name ("logits", "present.0.key", ...),
        as a numpy array of its dtype."""
        if not isinstance(name, str):
            raise TypeError(f"get_output: expected an output name, got {type(name).__name__}")
        out = ctypes.c_void_p()
        with self._lock:
            lib.og_generator_get_output(self._handle().ptr, name.encode("utf-8"),
                                        ctypes.byref(out))
        return take_tensor(out.value)

    def set_active_adapter(self, adapters: "Adapters", name: str) -> None:
        """Makes the LoRA adapter `name` of `adapters` active in this generator from its
        next model run on (onnxruntime-genai's Generator.set_active_adapter)."""
        if not isinstance(adapters, Adapters) or not isinstance(name, str):
            raise TypeError("set_active_adapter(adapters, name): expected Adapters and a str")
        ah = adapters._handle()
        with self._lock:
            lib.og_generator_set_active_adapter(self._handle().ptr, ah.ptr, name.encode("utf-8"))
        self._adapters = ah  # the C side counts its use; this keeps the handle's deps alive

    def set_inputs(self, named_tensors) -> None:
        """The processor's output (``processor(prompt, images=...)``: NamedTensors, or a dict
        of arrays) as the request's inputs, as onnxruntime-genai's Generator.set_inputs:
        input_ids, and pixel_values with image_grid_thw for a Qwen vision-language package
        (with image_sizes for Phi-3-vision). Runs the vision encoder and the prompt
        (og_generator_set_inputs)."""
        from ._tensor import Wrapped
        keys = named_tensors.keys() if hasattr(named_tensors, "keys") else None
        if keys is None:
            raise TypeError("set_inputs: expected NamedTensors or a dict of arrays")
        names, wrapped = [], []
        try:
            for k in keys:
                v = named_tensors[k]
                arr = v.as_numpy() if hasattr(v, "as_numpy") else np.asarray(v)
                names.append(k.encode("utf-8"))
                wrapped.append(Wrapped(k, arr))
            n = len(names)
            c_names = (ctypes.c_char_p * max(n, 1))(*names)
            c_tensors = (ctypes.c_void_p * max(n, 1))(*[w.t for w in wrapped])
            with self._lock:
                lib.og_generator_set_inputs(self._handle().ptr, c_names, c_tensors, n)
        finally:
            for w in wrapped:
                w.close()

    def set_model_input(self, name: str, value) -> None:
        """One model input by name (og_generator_set_model_input): a Whisper package's
        "audio_features" (runs its encoder once for the request), then "input_ids" (the
        decoder prompt, appended and run); other models take "input_ids"."""
        from ._tensor import Wrapped
        if not isinstance(name, str):
            raise TypeError(f"set_model_input: expected an input name, got {type(name).__name__}")
        arr = value.as_numpy() if hasattr(value, "as_numpy") else np.asarray(value)
        w = Wrapped(name, arr)
        try:
            with self._lock:
                lib.og_generator_set_model_input(self._handle().ptr, name.encode("utf-8"), w.t)
        finally:
            w.close()


class Adapters(_Owned):
    """LoRA adapters over one model (onnxruntime-genai's og.Adapters): .onnx_adapter files
    loaded by name, made active per generator with Generator.set_active_adapter."""
    _what = "Adapters"

    def __init__(self, model: Model):
        if not isinstance(model, Model):
            raise TypeError("Adapters(model): expected a Model")
        mh = model._handle()
        out = ctypes.c_void_p()
        lib.og_adapters_create(mh.ptr, ctypes.byref(out))
        self._h = _Handle(out.value, lib.og_adapters_free, (mh,))
        self._lock = model._lock

    def load(self, file: PathLike, name: str) -> None:
        """Loads an .onnx_adapter file under `name`; an adapter whose parameters are not
        inputs of the model (name, dtype, shape) raises InvalidArgumentError."""
        if not isinstance(name, str):
            raise TypeError(f"load: expected an adapter name (str), got {type(name).__name__}")
        with self._lock:
            lib.og_adapters_load(self._handle().ptr, _path(file, "Adapters.load"),
                                 name.encode("utf-8"))

    def unload(self, name: str) -> None:
        """Unloads adapter `name`; raises while a generator has it active."""
        if not isinstance(name, str):
            raise TypeError(f"unload: expected an adapter name (str), got {type(name).__name__}")
        with self._lock:
            lib.og_adapters_unload(self._handle().ptr, name.encode("utf-8"))


def _index(value, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what}: expected an integer, got {type(value).__name__}")
    if value < 0:
        raise InvalidArgumentError(f"{what}: {value} is negative")
    return int(value)


def is_cuda_available() -> bool:
    """False: onnx-genai computes on the CPU only."""
    return False


def is_dml_available() -> bool:
    """False: onnx-genai computes on the CPU only."""
    return False


def is_openvino_available() -> bool:
    """False: onnx-genai computes on the CPU only."""
    return False


def is_qnn_available() -> bool:
    """False: onnx-genai computes on the CPU only."""
    return False


def is_webgpu_available() -> bool:
    """False: onnx-genai computes on the CPU only."""
    return False


__all__ = ["Config", "Model", "Tensor", "Tokenizer", "TokenizerStream", "GeneratorParams",
           "Generator", "Adapters", "check", "is_cuda_available", "is_dml_available",
           "is_openvino_available", "is_qnn_available", "is_webgpu_available"]
