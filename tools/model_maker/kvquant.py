"""The model builder's quantized KV caches (its kv_cache_quant_scheme and
kv_cache_scale_file extra options), for the CPU's GroupQueryAttention:

  scheme    int8_per_tensor, int8_per_channel, int4_per_tensor, int4_per_channel (and the
            fp8_* ones, which onnxruntime's CPU kernel does not run); *_per_token is
            CUDA PagedAttention only, refused as the builder refuses it
  caches    past_key_values.N.key/value and present.N.key/value become int8 (last dim
            symbolic, as before), uint8 with (head_size + 1) // 2 bytes (two int4 codes
            a byte), or float8e4m3fn
  node      k_quant_type = v_quant_type = PER_TENSOR | PER_CHANNEL, kv_cache_bit_width
            8 | 4, inputs 12/13 the float32 initializers model.layers.N.attn.k_scale /
            v_scale: one value, or kv_heads * head_size
  config    search.past_present_share_buffer false (the builder shares only on CUDA)

The scale file is the builder's JSON: {"scales": {"k_scales": [...], "v_scales": [...]},
"layer_ids": [...] (optional: the layers with a KV cache, in the lists' order; default
0..layers-1), "qmax": Q (optional: the code range the scales were calibrated for; they
are then rescaled by Q / the scheme's qmax, int8 128, int4 8, fp8 448, in float64 and
then rounded to float32)}, possibly under a "model" section."""
import json

import numpy as np
from onnx import TensorProto

QMAX = {"int8": 128.0, "int4": 8.0, "fp8": 448.0}  # the builder's KV_CACHE_CALIBRATION_QMAX
SCHEMES = [f"{t}_{m}" for t in ("int8", "int4", "fp8") for m in ("per_tensor", "per_channel")]


def check_scheme(scheme):
    if scheme.endswith("per_token"):
        raise ValueError(f"kv_cache_quant_scheme {scheme}: per-token KV quantization requires CUDA "
                         "PagedAttention (as the builder says)")
    if scheme not in SCHEMES:
        raise ValueError(f"kv_cache_quant_scheme {scheme}: expected one of {', '.join(SCHEMES)}")


def mode_bits(scheme):
    """(k_quant_type, kv_cache_bit_width) of a scheme."""
    check_scheme(scheme)
    mode = "PER_CHANNEL" if scheme.endswith("per_channel") else "PER_TENSOR"
    return mode, 4 if scheme.startswith("int4") else 8


def cache_type(scheme, head_size):
    """(the caches' element type, their fixed last dim or None to keep it symbolic)."""
    check_scheme(scheme)
    if scheme.startswith("fp8"):
        return TensorProto.FLOAT8E4M3FN, None
    if scheme.startswith("int4"):
        return TensorProto.UINT8, (head_size + 1) // 2
    return TensorProto.INT8, None


def load_scales(path, scheme, kv_layers, num_layers, kv_heads, head_size):
    """{layer id: (k_scale, v_scale)} as float32 arrays, read and checked as the builder
    reads the file."""
    mode, _ = mode_bits(scheme)
    size = kv_heads * head_size if mode == "PER_CHANNEL" else 1
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    data = data.get("model", data)
    try:
        ks, vs = data["scales"]["k_scales"], data["scales"]["v_scales"]
    except (KeyError, TypeError):
        raise ValueError(f"{path}: scales.k_scales and scales.v_scales expected")
    ids = data.get("layer_ids", list(range(num_layers)))  # the builder's legacy dense order
    if "layer_ids" in data and sorted(ids) != sorted(kv_layers):
        raise ValueError(f"{path}: layer_ids {sorted(ids)} are not the KV-cache layers {sorted(kv_layers)}")
    if len(ks) != len(ids) or len(vs) != len(ids):
        raise ValueError(f"{path}: {len(ids)} per-layer scales expected, got k={len(ks)} v={len(vs)}")
    factor = 1.0
    if data.get("qmax") is not None:
        factor = float(data["qmax"]) / QMAX[scheme.split("_", 1)[0]]
    out = {}
    for n, lid in enumerate(ids):
        pair = []
        for what, src in (("k", ks), ("v", vs)):
            s = np.asarray(src[n], np.float32).reshape(-1)
            if s.size != size:
                raise ValueError(f"{path}: layer {lid} {what} scale has {s.size} values, expected {size}")
            s = (s.astype(np.float64) * factor).astype(np.float32)
            if not np.all(np.isfinite(s)) or np.any(s <= 0):
                raise ValueError(f"{path}: layer {lid} {what} scale must be finite and positive")
            pair.append(s)
        out[lid] = tuple(pair)
    return out


def layer_scales(scales, layer):
    """The two initializers' values of a layer."""
    if scales is None or layer not in scales:
        raise ValueError(f"no KV cache scales for layer {layer} (give a kv_cache_scale_file)")
    return scales[layer]


def calibrate(presents, scheme, kv_layers, kv_heads, head_size, path, margin=1.0):
    """Writes a scale file from a float run's present caches ({layer: (K, V)}, each
    [batch, kv_heads, positions, head_size]): amax / qmax per tensor or per channel (times
    margin), with qmax recorded, as a calibration tool hands the builder its file."""
    mode, _ = mode_bits(scheme)
    qmax = QMAX[scheme.split("_", 1)[0]]
    k_all, v_all = [], []
    for lid in kv_layers:
        pair = []
        for x in presents[lid]:
            x = np.abs(np.asarray(x, np.float64))
            amax = x.max(axis=(0, 2)).reshape(-1) if mode == "PER_CHANNEL" else np.array([x.max()])
            pair.append([float(max(a * margin, 1e-6) / qmax) for a in amax])
        k_all.append(pair[0] if mode == "PER_CHANNEL" else pair[0][0])
        v_all.append(pair[1] if mode == "PER_CHANNEL" else pair[1][0])
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"layer_ids": list(kv_layers), "qmax": qmax,
                   "scales": {"k_scales": k_all, "v_scales": v_all}}, f)
    return path

