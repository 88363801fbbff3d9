"""The C library through ctypes: loading, the declarations of include/onnx_genai.h that
the package uses, and statuses turned into exceptions.

Only what the header says is declared here; structs that the library fills or returns
carry spare bytes at the end, and those the package fills carry their own struct_size,
so a library whose structs have grown (the header's struct_size rule) still works.
"""
from __future__ import annotations

import ctypes
import os
from ctypes import (POINTER, Structure, c_char, c_char_p, c_float, c_int, c_int32, c_int64,
                    c_size_t, c_void_p)

__all__ = ["lib", "check", "OgError", "InvalidArgumentError", "InvalidModelError",
           "NotFoundError", "IOFailureError", "UnsupportedError", "OutOfMemoryError",
           "RuntimeFailureError", "IncompleteModelError"]


class OgError(RuntimeError):
    """An error reported by the onnx-genai C library. ``code`` is the ``og_code`` number,
    ``code_name`` its name ("invalid argument", ...); the message is the library's."""

    code = 7
    code_name = "runtime error"

    def __init__(self, message: str, code: int | None = None, code_name: str | None = None):
        super().__init__(message)
        if code is not None:
            self.code = code
        if code_name is not None:
            self.code_name = code_name


class InvalidArgumentError(OgError, ValueError):
    """The caller passed something wrong (OG_ERR_INVALID_ARGUMENT)."""
    code, code_name = 1, "invalid argument"


class InvalidModelError(OgError):
    """A model file or config is malformed (OG_ERR_INVALID_MODEL)."""
    code, code_name = 2, "invalid model"


class NotFoundError(OgError, LookupError):
    """A file, folder, input or output name does not exist (OG_ERR_NOT_FOUND)."""
    code, code_name = 3, "not found"


class IOFailureError(OgError):
    """Reading or writing a file failed (OG_ERR_IO)."""
    code, code_name = 4, "I/O error"


class UnsupportedError(OgError, NotImplementedError):
    """Valid, but not implemented by this runtime (OG_ERR_UNSUPPORTED)."""
    code, code_name = 5, "unsupported"


class OutOfMemoryError(OgError, MemoryError):
    """An allocation failed (OG_ERR_OUT_OF_MEMORY)."""
    code, code_name = 6, "out of memory"


class RuntimeFailureError(OgError):
    """Anything else that went wrong while running (OG_ERR_RUNTIME)."""
    code, code_name = 7, "runtime error"


class IncompleteModelError(OgError):
    """A package lacks a piece it needs to run (OG_ERR_INCOMPLETE_MODEL)."""
    code, code_name = 8, "incomplete model"


_BY_CODE = {c.code: c for c in (InvalidArgumentError, InvalidModelError, NotFoundError,
                                IOFailureError, UnsupportedError, OutOfMemoryError,
                                RuntimeFailureError, IncompleteModelError)}


def _library_path() -> str:
    env = os.environ.get("ONNX_GENAI_LIBRARY")
    if env:
        return env
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libonnx_genai.so")
    if os.path.exists(here):
        return here
    raise ImportError(f"onnx_genai: {here} is missing (install the package with "
                      "`pip install .` from the onnx-genai repository, or set "
                      "ONNX_GENAI_LIBRARY to a libonnx_genai.so)")


lib = ctypes.CDLL(_library_path())


def check(status: int | None) -> None:
    """Raises the exception for a non-NULL og_status * (and frees it)."""
    if status:
        raise error_from(status)


def error_from(status: int) -> OgError:
    code = lib.og_status_code(status)
    message = lib.og_status_message(status).decode("utf-8", "replace")
    lib.og_status_free(status)
    cls = _BY_CODE.get(code, OgError)
    return cls(message)


def _status_errcheck(result, func, args):
    if result:
        raise error_from(result)
    return None


# ---- structs -------------------------------------------------------------------------

class GeneratorParams(Structure):
    """og_generator_params; filled by og_generator_params_default, whose result may be
    larger than the fields named here (the spare bytes keep what a newer library adds)."""
    _fields_ = [("struct_size", c_size_t), ("batch_size", c_int), ("max_length", c_int),
                ("min_length", c_int), ("do_sample", c_int), ("top_k", c_int),
                ("top_p", c_float), ("temperature", c_float),
                ("repetition_penalty", c_float), ("no_repeat_ngram_size", c_int),
                ("num_beams", c_int), ("num_return_sequences", c_int),
                ("length_penalty", c_float), ("early_stopping", c_int),
                ("random_seed", c_int64), ("padded_batch", c_int),
                ("all_logits", c_int), ("_guidance_type", c_void_p),
                ("_guidance_data", c_void_p), ("speculative_ngram_size", c_int),
                ("speculative_max_draft_tokens", c_int),
                ("speculative_ngram_chained_lookup", c_int),
                ("speculative_min_adaptive_k", c_int), ("speculative_cooldown", c_int),
                ("speculative_draft_model", c_void_p), ("speculative_fixed_k", c_int),
                ("speculative_mtp", c_int),
                ("_spare", c_char * 256)]


class SpeculativeStats(Structure):
    """og_speculative_stats"""
    _fields_ = [("struct_size", c_size_t), ("enabled", c_int), ("verifications", c_int64),
                ("drafted", c_int64), ("accepted", c_int64), ("emitted", c_int64),
                ("plain_steps", c_int64), ("acceptance", ctypes.c_double)]


GENERATOR_PARAMS_KNOWN = GeneratorParams._spare.offset


# og_backend: what runs the graphs
BACKENDS = {"auto": 0, "native": 1, "ort": 2}


def backend_value(backend: str) -> int:
    """og_backend for "auto", "native" or "ort" (ValueError otherwise)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend: {backend!r} is not one of auto, native, ort")
    return BACKENDS[backend]


SIZE_MAX = (1 << (8 * ctypes.sizeof(c_size_t))) - 1


def plan_memory_value(value, where: str) -> int | None:
    """og_session_options.plan_memory from a Python value: None (the library's default,
    OG_PLAN_MEMORY_DEFAULT) or an int of bytes, 0 to SIZE_MAX (TypeError / ValueError
    naming `where` otherwise)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where}: expected an int (bytes) or None, got "
                        f"{type(value).__name__} {value!r}")
    if value < 0 or value > SIZE_MAX:
        raise ValueError(f"{where}: {value} bytes is outside 0..{SIZE_MAX} (0: no plan is "
                         f"kept between runs; {SIZE_MAX}: bounded by count only)")
    return value


# --kv-dtype's names (og_model_options.kv_dtype): ONNX dtype numbers, 0 as declared.
KV_DTYPES = {"auto": 0, "f32": 1, "float32": 1, "f16": 10, "float16": 10, "bf16": 16,
             "bfloat16": 16, "int8": 3, "fp8": 17, "float8": 17}


def kv_dtype_value(value, where: str) -> int:
    """og_model_options.kv_dtype from a name (None: "auto"); ValueError naming `where`."""
    if value is None:
        return 0
    if not isinstance(value, str) or value not in KV_DTYPES:
        raise ValueError(f"{where}: {value!r} is not one of auto, f32, f16, bf16, int8, fp8")
    return KV_DTYPES[value]


class ModelOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("num_threads", c_int), ("allow_text_only", c_int),
                ("backend", c_int), ("ort_library", c_char_p), ("ort_provider", c_char_p),
                ("graph_optimization_level", c_int), ("plan_memory", c_size_t),
                ("kv_dtype", c_int)]


class SessionOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("num_threads", c_int), ("backend", c_int),
                ("ort_library", c_char_p), ("ort_provider", c_char_p),
                ("graph_optimization_level", c_int), ("plan_memory", c_size_t),
                ("kv_dtype", c_int)]


lib.og_model_options_default.restype = ModelOptions
lib.og_model_options_default.argtypes = []
lib.og_session_options_default.restype = SessionOptions
lib.og_session_options_default.argtypes = []


def options_with_plan_memory(cls, plan_memory: int | None, **fields):
    """An options struct (ModelOptions / SessionOptions) from the library's defaults
    (og_*_options_default), with `fields` set and plan_memory unless it is None."""
    o = (lib.og_model_options_default if cls is ModelOptions else lib.og_session_options_default)()
    o.struct_size = ctypes.sizeof(cls)
    for name, value in fields.items():
        setattr(o, name, value)
    if plan_memory is not None:
        o.plan_memory = plan_memory
    return o


class PlanStats(Structure):
    """og_plan_stats: struct_size says how much the library may write."""
    _fields_ = [("struct_size", c_size_t), ("bytes", c_size_t), ("peak", c_size_t),
                ("plans", c_size_t), ("evicted", c_size_t), ("budget", c_size_t)]

    def __init__(self):
        super().__init__()
        self.struct_size = ctypes.sizeof(self)

    def as_dict(self) -> dict:
        return {k: int(getattr(self, k)) for k in ("bytes", "peak", "plans", "evicted", "budget")}


class ChatOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("tools_json", c_char_p),
                ("documents_json", c_char_p), ("add_generation_prompt", c_int),
                ("extra_json", c_char_p), ("template_name", c_char_p)]


class ValueInfo(Structure):
    """og_value_info, written by the library (spare bytes for fields a newer one adds)."""
    _fields_ = [("name", c_char_p), ("dtype", c_int), ("rank", c_int),
                ("dims", POINTER(c_int64)), ("dim_names", POINTER(c_char_p)),
                ("_spare", c_char * 64)]


class OgString(Structure):
    _fields_ = [("data", c_void_p), ("size", c_size_t)]


# ---- functions -----------------------------------------------------------------------

P = c_void_p
PP = POINTER(c_void_p)
_I32P = POINTER(c_int32)
_I32PP = POINTER(_I32P)
_SIZEP = POINTER(c_size_t)


def _fn(name, restype, *argtypes, status=False):
    f = getattr(lib, name)
    f.argtypes = list(argtypes)
    f.restype = c_void_p if status else restype
    if status:
        f.errcheck = _status_errcheck
    return f


def _st(name, *argtypes):
    return _fn(name, None, *argtypes, status=True)


_fn("og_status_code", c_int, P)
_fn("og_status_message", c_char_p, P)
_fn("og_status_free", None, P)
_fn("og_free", None, P)

# tensors
_st("og_tensor_create", c_int, POINTER(c_int64), c_int, PP)
_st("og_tensor_wrap", c_int, POINTER(c_int64), c_int, c_void_p, c_size_t, PP)
_st("og_tensor_create_strings", POINTER(c_int64), c_int, POINTER(OgString), PP)
_fn("og_tensor_free", None, P)
_fn("og_tensor_dtype", c_int, P)
_fn("og_tensor_rank", c_int, P)
_fn("og_tensor_dims", POINTER(c_int64), P)
_fn("og_tensor_element_count", c_int64, P)
_fn("og_tensor_size_bytes", c_size_t, P)
_fn("og_tensor_data", c_void_p, P)

# sessions
_st("og_session_open", c_char_p, POINTER(SessionOptions), PP)
_st("og_session_open_bytes", c_void_p, c_size_t, c_char_p, POINTER(SessionOptions), PP)
_fn("og_session_close", None, P)
_fn("og_session_backend", c_char_p, P)
_fn("og_session_warning", c_char_p, P)
_fn("og_session_plan_stats", None, P, POINTER(PlanStats))
_fn("og_session_input_count", c_size_t, P)
_fn("og_session_output_count", c_size_t, P)
_st("og_session_input_info", P, c_size_t, POINTER(ValueInfo))
_st("og_session_output_info", P, c_size_t, POINTER(ValueInfo))
_st("og_session_run", P, POINTER(c_char_p), PP, c_size_t, POINTER(c_char_p), PP, c_size_t)

# configs and models
_st("og_config_open", c_char_p, PP)
_fn("og_config_free", None, P)
_st("og_config_overlay", P, c_char_p)
_st("og_config_clear_providers", P)
_st("og_config_append_provider", P, c_char_p)
_st("og_config_set_provider_option", P, c_char_p, c_char_p, c_char_p)
_fn("og_config_token_id", c_int32, P, c_char_p)
_fn("og_config_eos_token_ids", c_size_t, P, _I32PP)
_st("og_model_open", c_char_p, POINTER(ModelOptions), PP)
_st("og_model_open_config", P, POINTER(ModelOptions), PP)
_fn("og_model_close", None, P)
_fn("og_model_backend", c_char_p, P)
_fn("og_model_type", c_char_p, P)
_fn("og_model_vocab_size", c_int, P)
_fn("og_model_pad_token_id", c_int32, P)
_fn("og_model_token_id", c_int32, P, c_char_p)
_fn("og_model_eos_token_ids", c_size_t, P, _I32PP)
_fn("og_model_warning_count", c_size_t, P)
_fn("og_model_warning", c_char_p, P, c_size_t)
_fn("og_model_text_only", c_int, P, POINTER(c_char_p))
_fn("og_model_plan_stats", None, P, POINTER(PlanStats))

# generators
_fn("og_generator_params_default", GeneratorParams, P)
_st("og_generator_params_set_guidance", POINTER(GeneratorParams), c_char_p, c_char_p)
_st("og_generator_create", P, POINTER(GeneratorParams), PP)
_fn("og_generator_destroy", None, P)
_st("og_generator_append_tokens", P, _I32P, c_size_t)
_st("og_generator_set_model_input", P, c_char_p, P)
_st("og_generator_set_inputs", P, POINTER(c_char_p), POINTER(c_void_p), c_size_t)
_st("og_generator_generate_next_token", P)
_fn("og_generator_is_done", c_int, P)
# ids arrive as plain addresses (int32_copy reads them: faster than ctypes pointers)
_st("og_generator_get_sequence", P, c_size_t, PP, _SIZEP)
_st("og_generator_get_next_tokens", P, PP, _SIZEP)
_st("og_generator_rewind_to", P, c_size_t)
_st("og_generator_get_logits", P, PP)
_st("og_generator_get_output", P, c_char_p, PP)
_st("og_generator_get_speculative_stats", P, POINTER(SpeculativeStats))
_st("og_generator_set_active_adapter", P, P, c_char_p)

# LoRA adapters
_st("og_adapters_create", P, PP)
_fn("og_adapters_free", None, P)
_st("og_adapters_load", P, c_char_p, c_char_p)
_st("og_adapters_unload", P, c_char_p)

# tokenizers
_st("og_tokenizer_create", P, PP)
_st("og_tokenizer_open", c_char_p, PP)
_fn("og_tokenizer_free", None, P)
_st("og_tokenizer_encode", P, c_char_p, c_size_t, c_int, PP, _SIZEP)
_st("og_tokenizer_decode_len", P, _I32P, c_size_t, c_int, POINTER(c_void_p), _SIZEP)
_fn("og_tokenizer_token_to_id", c_int32, P, c_char_p)
_st("og_tokenizer_stream_create", P, PP)
_st("og_tokenizer_stream_decode_len", P, c_int32, POINTER(c_void_p), _SIZEP)
_st("og_tokenizer_stream_set_context", P, POINTER(c_int32), c_size_t)
_st("og_tokenizer_stream_flush_len", P, POINTER(c_void_p), _SIZEP)
_fn("og_tokenizer_stream_free", None, P)

# chat templates
_st("og_chat_template_open", c_char_p, PP)
_st("og_chat_template_create", P, PP)
_st("og_chat_template_from_string", c_char_p, c_size_t, PP)
_st("og_chat_template_load_tokens", P, c_char_p)
_fn("og_chat_template_free", None, P)
_st("og_chat_template_apply", P, c_char_p, POINTER(ChatOptions), POINTER(c_void_p))


def take_string(ptr: int, size: int | None = None) -> str:
    """A UTF-8 string the library handed over (og_free after reading): `size` bytes, or up
    to its NUL when the function reports no length."""
    try:
        if not ptr:
            return ""
        data = ctypes.string_at(ptr) if size is None else ctypes.string_at(ptr, size)
        return data.decode("utf-8", "replace")
    finally:
        lib.og_free(ptr)
