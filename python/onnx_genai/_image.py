"""Images as onnxruntime-genai names them: ``og.Images.open(*paths)``,
``model.create_multimodal_processor()`` and ``processor(prompt, images=...)`` returning
``NamedTensors``. Decoding (PNG, JPEG) and the package's preprocessing
(processor_config.json) run in the C library (src/media/); the prompt's image tokens are
expanded here, as onnxruntime-genai 0.18's Qwen and Phi-3-vision processors expand them."""
from __future__ import annotations

import ctypes
import os
import re
from ctypes import POINTER, c_char_p, c_int, c_size_t, c_void_p

import numpy as np

from ._genai import Tensor, Tokenizer, _Handle, _Owned, _path
from ._lib import InvalidArgumentError, OgError, _fn, _st, lib
from ._media import _MediaFiles
from ._tensor import NUMPY_DTYPE, int32_copy

_fn("og_images_free", None, c_void_p)
_fn("og_images_count", c_size_t, c_void_p)
_fn("og_images_pixels", POINTER(ctypes.c_uint8), c_void_p, c_size_t, POINTER(c_int),
    POINTER(c_int))
_st("og_images_open", POINTER(c_char_p), c_size_t, POINTER(c_void_p))
_st("og_images_load", POINTER(c_void_p), POINTER(c_size_t), c_size_t, POINTER(c_void_p))
_fn("og_image_processor_free", None, c_void_p)
_fn("og_image_processor_name", c_char_p, c_void_p)
_st("og_image_processor_open", c_char_p, POINTER(c_void_p))
_st("og_image_processor_process", c_void_p, c_void_p, POINTER(c_void_p))
_fn("og_named_tensors_free", None, c_void_p)
_fn("og_named_tensors_count", c_size_t, c_void_p)
_fn("og_named_tensors_name", c_char_p, c_void_p, c_size_t)
_fn("og_named_tensors_at", c_void_p, c_void_p, c_size_t)


class Images(_MediaFiles):
    """Decoded images (PNG or JPEG, as RGB). ``Images.open("a.png", "b.jpg")`` as in
    onnxruntime-genai; a corrupt or truncated file raises InvalidArgumentError naming it,
    another format UnsupportedError."""
    _what = "Images"
    _api = "og_images"
    _none = "images"

    def pixels(self, index: int = 0) -> np.ndarray:
        """Image `index` as decoded: uint8 (height, width, 3), RGB (a copy)."""
        w, h = c_int(), c_int()
        p = lib.og_images_pixels(self._handle().ptr, index, ctypes.byref(w), ctypes.byref(h))
        if not p:
            raise IndexError(f"Images.pixels: index {index} out of range ({len(self)} images)")
        return np.ctypeslib.as_array(p, shape=(h.value, w.value, 3)).copy()


class NamedTensors:
    """Tensors by name, as onnxruntime-genai's processor returns them:
    ``result["pixel_values"].as_numpy()``, ``"name" in result``, ``result.keys()``."""

    def __init__(self, tensors: dict | None = None):
        self._t: dict[str, Tensor] = {}
        for k, v in (tensors or {}).items():
            self[k] = v

    def __getitem__(self, name: str) -> Tensor:
        try:
            return self._t[name]
        except KeyError:
            raise KeyError(f"Tensor with name: {name} not found.") from None

    def __setitem__(self, name: str, value) -> None:
        self._t[name] = value if isinstance(value, Tensor) else Tensor(np.asarray(value))

    def __delitem__(self, name: str) -> None:
        del self._t[name]

    def __contains__(self, name: str) -> bool:
        return name in self._t

    def __len__(self) -> int:
        return len(self._t)

    def keys(self) -> list[str]:
        return list(self._t)

    def __repr__(self) -> str:
        return f"NamedTensors({', '.join(self._t)})"


def _take_named(ptr: int) -> dict[str, np.ndarray]:
    out = {}
    try:
        for i in range(lib.og_named_tensors_count(ptr)):
            name = lib.og_named_tensors_name(ptr, i).decode("utf-8")
            t = lib.og_named_tensors_at(ptr, i)
            dims = lib.og_tensor_dims(t)
            shape = tuple(dims[j] for j in range(lib.og_tensor_rank(t)))
            dtype = NUMPY_DTYPE[lib.og_tensor_dtype(t)]
            nbytes = lib.og_tensor_size_bytes(t)
            buf = ctypes.string_at(lib.og_tensor_data(t), nbytes) if nbytes else b""
            out[name] = np.frombuffer(buf, dtype=dtype).reshape(shape).copy()
    finally:
        lib.og_named_tensors_free(ptr)
    return out


class ImageProcessor(_Owned):
    """A package's image preprocessing (its processor_config.json), without a prompt."""
    _what = "ImageProcessor"

    def __init__(self, path: str | os.PathLike):
        out = c_void_p()
        lib.og_image_processor_open(_path(path, "ImageProcessor"), ctypes.byref(out))
        self._h = _Handle(out.value, lib.og_image_processor_free)

    @property
    def name(self) -> str:
        return lib.og_image_processor_name(self._handle().ptr).decode("utf-8")

    def process(self, images: Images) -> dict[str, np.ndarray]:
        out = c_void_p()
        lib.og_image_processor_process(self._handle().ptr, images._handle().ptr,
                                       ctypes.byref(out))
        return _take_named(out.value)


_PHI_TAG = re.compile(r"<\|image_\d+\|>")
_VISION_START, _VISION_END, _IMAGE_PAD = "<|vision_start|>", "<|vision_end|>", "<|image_pad|>"


class MultiModalProcessor:
    """``model.create_multimodal_processor()``: ``processor(prompt, images=...)`` returns
    NamedTensors with input_ids (the prompt's image placeholders expanded as
    onnxruntime-genai 0.18 expands them) and the image tensors."""

    def __init__(self, model):
        self._model = model
        self._tokenizer = Tokenizer(model)
        self._merge = 2
        self._images = None
        self._why_no_images = None
        try:
            self._images = ImageProcessor(model._dir)
        except OgError as e:  # a text-only package, or a config we cannot run: prompts only
            self._why_no_images = e
        if self._images is not None:
            import json
            try:
                with open(os.path.join(model._dir, "genai_config.json"), encoding="utf-8") as f:
                    vision = json.load(f).get("model", {}).get("vision", {})
                self._merge = int(vision.get("spatial_merge_size", 2))
            except (OSError, ValueError):
                pass

    def __call__(self, prompt: str | None = None, *, images: Images | None = None,
                 audios=None) -> NamedTensors:
        if audios is not None:
            return self._whisper(prompt, audios)
        prompt = prompt or ""
        result = NamedTensors()
        tensors = {}
        if images is not None:
            if self._images is None:
                raise InvalidArgumentError(f"MultiModalProcessor: the package {self._model._dir} "
                                           f"takes no images: {self._why_no_images}")
            tensors = self._images.process(images)
        name = self._images.name if self._images is not None else ""
        if "gemma" in name:
            return self._gemma(prompt, tensors)
        if "image_grid_thw" in tensors or (images is None and "qwen" in name):
            ids = self._qwen_ids(prompt, tensors.get("image_grid_thw"))
        elif "image_sizes" in tensors or (images is None and self._images is not None):
            ids = self._phi3_ids(prompt, tensors.get("num_image_tokens"))
        else:
            ids = self._tokenizer.encode(prompt)
        result["input_ids"] = np.asarray(ids, dtype=np.int32).reshape(1, -1)
        for k, v in tensors.items():
            result[k] = v
        if "image_grid_thw" not in tensors and images is None and "qwen" in getattr(
                self._images, "name", ""):
            result["num_image_tokens"] = np.zeros(1, np.int64)
        return result

    def _whisper(self, prompt, audios) -> NamedTensors:
        """A Whisper package (onnxruntime-genai's WhisperProcessor): audio_features, the
        log-mel features of each audio (its bins from audio_processor_config.json), and
        input_ids, the decoder prompt(s) tokenized ("<|startoftranscript|><|en|>
        <|transcribe|><|notimestamps|>"), one per audio; one prompt serves them all."""
        import json
        mh = self._model._handle()
        if lib.og_model_type(mh.ptr) != b"whisper":
            raise InvalidArgumentError(f"MultiModalProcessor: the package {self._model._dir} "
                                       "takes no audio")
        if not prompt:
            raise InvalidArgumentError("MultiModalProcessor: a Whisper package needs the decoder "
                                       "prompt (e.g. '<|startoftranscript|><|en|><|transcribe|>"
                                       "<|notimestamps|>')")
        n_mels = 80
        try:
            with open(os.path.join(self._model._dir, "audio_processor_config.json"),
                      encoding="utf-8") as f:
                for op in json.load(f)["feature_extraction"]["sequence"]:
                    attrs = op.get("operation", {}).get("attrs", {})
                    n_mels = int(attrs.get("n_mel", n_mels))
        except (OSError, ValueError, KeyError, TypeError):
            pass
        feats = audios.input_features(n_mels)
        count = feats.as_numpy().shape[0]
        prompts = [prompt] if isinstance(prompt, str) else list(prompt)
        if len(prompts) == 1:
            prompts = prompts * count
        if len(prompts) != count:
            raise InvalidArgumentError(f"MultiModalProcessor: {len(prompts)} prompts for "
                                       f"{count} audios")
        rows = [self._encode_plain(p) for p in prompts]
        if len({len(r) for r in rows}) != 1:
            raise InvalidArgumentError("MultiModalProcessor: the decoder prompts must have the "
                                       "same number of tokens (the decoder takes no mask)")
        return NamedTensors({"audio_features": feats,
                             "input_ids": np.stack(rows).astype(np.int32)})

    def _qwen_ids(self, prompt: str, grid) -> np.ndarray:
        n = 0 if grid is None else grid.shape[0]
        text = prompt
        if not text:
            text = " ".join(_VISION_START + " " + _VISION_END for _ in range(n))
        if text.count(_VISION_START) != n:
            raise InvalidArgumentError(f"Prompt contained {text.count(_VISION_START)} "
                                       f"vision_start tokens but received {n} images.")
        if n:
            out, pos = [], 0
            for i in range(n):
                at = text.index(_VISION_START, pos)
                out.append(text[pos:at])
                pads = int(np.prod(grid[i])) // (self._merge * self._merge)
                out.append(_VISION_START + _IMAGE_PAD * pads + _VISION_END)
                pos = at + len(_VISION_START)
                end = text.find(_VISION_END, pos)
                if end >= 0:
                    pos = end + len(_VISION_END)
            out.append(text[pos:])
            text = "".join(out)
        return self._tokenizer.encode(text)

    def _gemma(self, prompt: str, tensors: dict) -> NamedTensors:
        """Gemma 3 (onnxruntime-genai's GemmaImageProcessor): each <start_of_image> becomes
        the image's 256 soft tokens between blank lines; token_type_ids mark them."""
        pv = tensors.get("pixel_values")
        n = 0 if pv is None else pv.shape[0]
        text = prompt
        if not text:
            text = " ".join(["<start_of_image>"] * n)
        if text.count("<start_of_image>") != n:
            raise InvalidArgumentError(f"Prompt contained {text.count('<start_of_image>')} "
                                       f"image tokens but received {n} images.")
        soft = "<image_soft_token>"
        text = text.replace("<start_of_image>", "\n\n<start_of_image>" + soft * 256 +
                            "<end_of_image>\n\n")
        ids = np.asarray(self._tokenizer.encode(text), dtype=np.int32).reshape(1, -1)
        result = NamedTensors({"input_ids": ids})
        if pv is None:
            return result
        result["token_type_ids"] = (ids == self._tokenizer.to_token_id(soft)).astype(np.int32)
        result["pixel_values"] = pv
        result["num_image_tokens"] = np.array([256], np.int64)
        return result

    def _encode_plain(self, text: str) -> np.ndarray:
        """Ids without the post-processor's special tokens: onnxruntime-genai 0.18's Phi-3
        processor puts no BOS before any chunk of the prompt."""
        data = text.encode("utf-8", "surrogatepass")
        ids, n = c_void_p(), c_size_t()
        lib.og_tokenizer_encode(self._tokenizer._handle().ptr, data, len(data), 0,
                                ctypes.byref(ids), ctypes.byref(n))
        try:
            return int32_copy(ids.value, n.value)
        finally:
            lib.og_free(ids)

    def _phi3_ids(self, prompt: str, tokens) -> np.ndarray:
        n = 0 if tokens is None else tokens.size
        tags = _PHI_TAG.findall(prompt)
        chunks = _PHI_TAG.split(prompt)
        ids_of_tags = [int(t[8:-2]) for t in tags]
        if len(set(ids_of_tags)) != n:
            raise InvalidArgumentError("Number of unique image tags does not match the number "
                                       "of images.")
        flat = [] if tokens is None else tokens.reshape(-1).tolist()
        out = []
        for i, chunk in enumerate(chunks):
            out.extend(self._encode_plain(chunk).tolist())
            if i < len(ids_of_tags):
                k = ids_of_tags[i]
                if k < 1 or k > n:
                    raise InvalidArgumentError("Encountered unexpected value of image_id in the "
                                               f"prompt. Expected a value <= {n}. Actual value: "
                                               f"{k}")
                out.extend([-k] * int(flat[k - 1]))
        return np.asarray(out, dtype=np.int32)
