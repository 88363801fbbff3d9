"""onnx-genai from Python: onnxruntime-genai's API over the onnx-genai C runtime.

A script written for onnxruntime-genai runs by changing its import::

    import onnx_genai as og

    model = og.Model("path/to/package")
    tokenizer = og.Tokenizer(model)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=64)
    generator = og.Generator(model, params)
    generator.append_tokens(tokenizer.encode("Once upon a time"))
    stream = tokenizer.create_stream()
    while not generator.is_done():
        generator.generate_next_token()
        print(stream.decode(generator.get_next_tokens()[0]), end="", flush=True)

``InferenceSession`` runs a single ONNX graph as onnxruntime's does. Errors raise
``OgError`` subclasses (all RuntimeErrors) carrying the C library's messages.
"""
from ._lib import (IncompleteModelError, InvalidArgumentError, InvalidModelError,
                   IOFailureError, NotFoundError, OgError, OutOfMemoryError,
                   RuntimeFailureError, UnsupportedError)
from ._genai import (Adapters, Config, Generator, GeneratorParams, Model, Tensor, Tokenizer,
                     TokenizerStream, is_cuda_available, is_dml_available,
                     is_openvino_available, is_qnn_available, is_webgpu_available)
from ._session import InferenceSession, NodeArg, SessionOptions
from ._image import Images, MultiModalProcessor, NamedTensors
from ._audio import Audios
from ._mtp import MtpGenerator

try:
    from importlib.metadata import version as _version
    __version__ = _version("onnx-genai")
except Exception:  # run from the source tree
    __version__ = "unknown"

__all__ = ["Adapters", "Audios", "Config", "Model", "Tokenizer", "TokenizerStream",
           "GeneratorParams", "Generator", "Tensor", "InferenceSession", "SessionOptions",
           "NodeArg", "OgError",
           "InvalidArgumentError", "InvalidModelError", "NotFoundError", "IOFailureError",
           "UnsupportedError", "OutOfMemoryError", "RuntimeFailureError",
           "IncompleteModelError", "is_cuda_available", "is_dml_available",
           "is_openvino_available", "is_qnn_available", "is_webgpu_available", "__version__"]
__all__ += ["Images", "MultiModalProcessor", "NamedTensors"]
__all__ += ["MtpGenerator"]
