"""The two extra graphs of a split vision-language package (Qwen3.5's layout:
vision.onnx -> embedding.onnx -> the text decoder fed inputs_embeds) and its image
processor config. The model builder writes only the decoder (exclude_embeds); these are
our own small graphs with the I/O onnxruntime-genai's qwen3_5 pipeline expects:

  embedding.onnx  input_ids [B, S], image_features [N, hidden] -> inputs_embeds [B, S, hidden]:
                  the token embedding, with the k-th image token's row replaced by row k of
                  image_features (rows past the given features stay token embeddings)
  vision.onnx     pixel_values [patches, 3 * 2 * 16 * 16] (Qwen2.5-VL: 14 * 14 patches),
                  image_grid_thw [images, 3] ->
                  image_features [patches / 4, hidden]: each 2x2 group of patches
                  (spatial_merge_size 2) projected to the hidden size by one MatMul
  processor_config.json  Qwen3-VL image preprocessing whose Resize uses smart_resize
"""

import numpy as np
from onnx import TensorProto

from .graph import GraphWriter

PATCH = 3 * 2 * 16 * 16   # channels x temporal patch x patch x patch (Qwen3.5; Qwen2.5-VL: 14)
MERGE = 4                 # spatial_merge_size 2: 2 x 2 patches per image token


def patch_values(patch):
    """Values of one patch row: channels x temporal patch x patch x patch."""
    return 3 * 2 * patch * patch


def write_embedding(out_dir, hidden, table, image_token_id):
    """image_token_id None: Phi-3-vision's layout, where an image token is any negative id
    (-k for image k, as its processor writes them) and reads token 0's row otherwise."""
    g = GraphWriter(out_dir, "embedding.onnx")
    g.input("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"])
    g.input("image_features", TensorProto.FLOAT, ["num_image_tokens", hidden])
    g.output("inputs_embeds", TensorProto.FLOAT, ["batch_size", "sequence_length", hidden])
    b = "/embedding"
    w = g.initializer("model.embed_tokens.weight", table, np.float32)
    flat = g.node("Reshape", ["input_ids", g.const_i64([-1])], [f"{b}/ids_flat/output_0"], f"{b}/ids_flat")
    if image_token_id is None:
        zero = g.const_i64(0)
        is_img = g.node("Less", [flat, zero], [f"{b}/is_image/output_0"], f"{b}/is_image")
        neg = g.node("Less", ["input_ids", zero], [f"{b}/negative/output_0"], f"{b}/negative")
        ids = g.node("Where", [neg, zero, "input_ids"], [f"{b}/ids/output_0"], f"{b}/ids")
    else:
        tok = g.node("Constant", [], [f"{b}/image_token"], f"{b}/image_token",
                     value=_scalar_i64(image_token_id))
        is_img = g.node("Equal", [flat, tok], [f"{b}/is_image/output_0"], f"{b}/is_image")
        ids = "input_ids"
    emb = g.node("Gather", [w, ids], [f"{b}/Gather/output_0"], f"{b}/Gather")
    as_int = g.node("Cast", [is_img], [f"{b}/is_image_i64/output_0"], f"{b}/is_image_i64", to=TensorProto.INT64)
    rank = g.node("CumSum", [as_int, g.const_i64(0)], [f"{b}/rank/output_0"], f"{b}/rank")
    idx = g.node("Sub", [rank, g.const_i64([1])], [f"{b}/index/output_0"], f"{b}/index")
    # rows beyond the given features (or no image at all) read an appended zero row and
    # are not used: the token embedding stays
    n = g.node("Shape", ["image_features"], [f"{b}/n_features/output_0"], f"{b}/n_features", start=0, end=1)
    have = g.node("Less", [idx, n], [f"{b}/have_feature/output_0"], f"{b}/have_feature")
    use = g.node("And", [is_img, have], [f"{b}/use/output_0"], f"{b}/use")
    pick = g.node("Where", [use, idx, n], [f"{b}/pick/output_0"], f"{b}/pick")
    zero = g.initializer("zero_feature", np.zeros((1, hidden), np.float32), np.float32)
    feats = g.node("Concat", ["image_features", zero], [f"{b}/features/output_0"], f"{b}/features", axis=0)
    rows = g.node("Gather", [feats, pick], [f"{b}/rows/output_0"], f"{b}/rows", axis=0)
    shape = g.node("Shape", [emb], [f"{b}/shape/output_0"], f"{b}/shape")
    rows3 = g.node("Reshape", [rows, shape], [f"{b}/rows3/output_0"], f"{b}/rows3")
    ushape = g.node("Shape", ["input_ids"], [f"{b}/ids_shape/output_0"], f"{b}/ids_shape")
    use2 = g.node("Reshape", [use, ushape], [f"{b}/use2/output_0"], f"{b}/use2")
    use3 = g.node("Unsqueeze", [use2, g.const_i64([-1])], [f"{b}/use3/output_0"], f"{b}/use3")
    g.node("Where", [use3, rows3, emb], ["inputs_embeds"], f"{b}/merge")
    g.save()


def write_vision(out_dir, hidden, weight, patch=16):
    values = patch_values(patch)
    g = GraphWriter(out_dir, "vision.onnx")
    g.input("pixel_values", TensorProto.FLOAT, ["num_patches", values])
    g.input("image_grid_thw", TensorProto.INT64, ["num_images", 3])
    g.output("image_features", TensorProto.FLOAT, ["num_image_tokens", hidden])
    b = "/vision"
    r = g.node("Reshape", ["pixel_values", g.const_i64([-1, MERGE * values])], [f"{b}/merge/output_0"],
               f"{b}/merge")
    w = g.initializer("visual.merger.weight", np.ascontiguousarray(weight.T), np.float32)
    g.node("MatMul", [r, w], ["image_features"], f"{b}/proj")
    g.save()


PHI3V_ROW = 1512        # pixel values a row of the Phi-3-vision stand-in's projection reads


def write_phi3v_vision(out_dir, hidden, weight):
    """Phi-3-vision's I/O: pixel_values [images, crops, 3, 336, 336] (the HD crops and the
    global view) and image_sizes [images, 2] -> image_features [image tokens, hidden]. Each
    image's values become rows of PHI3V_ROW (means of 12 groups of 126 values, projected
    by one MatMul), and its first (h/336 * w/336 + 1) * 144 + 1 + (h/336 + 1) * 12 rows
    are its features: as many as the processor gives it image tokens."""
    g = GraphWriter(out_dir, "vision.onnx")
    g.input("pixel_values", TensorProto.FLOAT, ["num_images", "num_crops", 3, 336, 336])
    g.input("image_sizes", TensorProto.INT64, ["num_images", 2])
    g.output("image_features", TensorProto.FLOAT, ["num_image_tokens", hidden])
    b = "/vision"
    rows = g.node("Reshape", ["pixel_values", g.const_i64([0, -1, 12, PHI3V_ROW // 12])],
                  [f"{b}/rows/output_0"], f"{b}/rows")
    mean = g.node("ReduceMean", [rows, g.const_i64([3])], [f"{b}/mean/output_0"], f"{b}/mean",
                  keepdims=0)
    # scaled up: a group's mean of normalised values is small, and the features must move
    # the random decoder's choices (the tests check that another image gives other ids)
    w = g.initializer("vision.proj.weight", np.ascontiguousarray(weight.T) * 40.0, np.float32)
    proj = g.node("MatMul", [mean, w], [f"{b}/proj/output_0"], f"{b}/proj")  # [n, R, hidden]
    flat = g.node("Reshape", [proj, g.const_i64([-1, hidden])], [f"{b}/flat/output_0"], f"{b}/flat")
    # tokens per image from its padded size
    side = g.const_i64([336])
    hw = g.node("Div", ["image_sizes", side], [f"{b}/tiles/output_0"], f"{b}/tiles")  # [n, 2]
    th = g.node("Gather", [hw, g.const_i64(0)], [f"{b}/th/output_0"], f"{b}/th", axis=1)
    tw = g.node("Gather", [hw, g.const_i64(1)], [f"{b}/tw/output_0"], f"{b}/tw", axis=1)
    crops = g.node("Mul", [th, tw], [f"{b}/crops/output_0"], f"{b}/crops")
    c1 = g.node("Add", [crops, g.const_i64([1])], [f"{b}/crops1/output_0"], f"{b}/crops1")
    sub = g.node("Mul", [c1, g.const_i64([144])], [f"{b}/sub/output_0"], f"{b}/sub")
    h1 = g.node("Add", [th, g.const_i64([1])], [f"{b}/th1/output_0"], f"{b}/th1")
    nl = g.node("Mul", [h1, g.const_i64([12])], [f"{b}/newlines/output_0"], f"{b}/newlines")
    t0 = g.node("Add", [sub, nl], [f"{b}/t0/output_0"], f"{b}/t0")
    tokens = g.node("Add", [t0, g.const_i64([1])], [f"{b}/tokens/output_0"], f"{b}/tokens")  # [n]
    # rows r < tokens[k] of image k
    shape = g.node("Shape", [mean], [f"{b}/mshape/output_0"], f"{b}/mshape")
    r_n = g.node("Gather", [shape, g.const_i64(1)], [f"{b}/r_n/output_0"], f"{b}/r_n", axis=0)
    rng = g.node("Range", [g.const_i64(0), r_n, g.const_i64(1)], [f"{b}/range/output_0"], f"{b}/range")
    tk = g.node("Unsqueeze", [tokens, g.const_i64([1])], [f"{b}/tokens2/output_0"], f"{b}/tokens2")
    keep = g.node("Less", [rng, tk], [f"{b}/keep/output_0"], f"{b}/keep")  # [n, R]
    kf = g.node("Reshape", [keep, g.const_i64([-1])], [f"{b}/keep_flat/output_0"], f"{b}/keep_flat")
    nz = g.node("NonZero", [kf], [f"{b}/nz/output_0"], f"{b}/nz")
    idx = g.node("Reshape", [nz, g.const_i64([-1])], [f"{b}/idx/output_0"], f"{b}/idx")
    g.node("Gather", [flat, idx], ["image_features"], f"{b}/pick", axis=0)
    g.save()


GEMMA3_TOKENS = 256      # image tokens an image takes (mm_tokens_per_image)


def write_gemma3_vision(out_dir, hidden, weight):
    """Gemma 3's I/O: pixel_values [images, 3, 896, 896] -> image_features [images * 256,
    hidden]: each image's values as 256 rows (means of 12 groups), projected by one MatMul
    (scaled up as Phi-3-vision's stand-in is, so the features move the decoder)."""
    g = GraphWriter(out_dir, "vision.onnx")
    g.input("pixel_values", TensorProto.FLOAT, ["num_images", 3, 896, 896])
    g.output("image_features", TensorProto.FLOAT, ["num_image_tokens", hidden])
    b = "/vision"
    rows = g.node("Reshape", ["pixel_values", g.const_i64([-1, GEMMA3_TOKENS, 12, 3 * 896 * 896 // (GEMMA3_TOKENS * 12)])],
                  [f"{b}/rows/output_0"], f"{b}/rows")
    mean = g.node("ReduceMean", [rows, g.const_i64([3])], [f"{b}/mean/output_0"], f"{b}/mean", keepdims=0)
    w = g.initializer("vision.proj.weight", np.ascontiguousarray(weight.T) * 40.0, np.float32)
    proj = g.node("MatMul", [mean, w], [f"{b}/proj/output_0"], f"{b}/proj")
    g.node("Reshape", [proj, g.const_i64([-1, hidden])], ["image_features"], f"{b}/flat")
    g.save()


def gemma3_processor_config():
    """Gemma 3's image preprocessing (SigLIP: bicubic to 896 x 896, rescale, mean = std =
    0.5, channels first), as its packages ship it."""
    return {"processor": {"name": "gemma_3_image_processing", "transforms": [
        {"operation": {"name": "decode_image", "type": "DecodeImage", "attrs": {"color_space": "RGB"}}},
        {"operation": {"name": "resize", "type": "Resize",
                       "attrs": {"interpolation": "CUBIC", "width": 896, "height": 896, "keep_aspect_ratio": 0}}},
        {"operation": {"name": "rescale", "type": "Rescale"}},
        {"operation": {"name": "normalize", "type": "Normalize",
                       "attrs": {"mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]}}},
        {"operation": {"name": "to_channel_first", "type": "Permute3D", "attrs": {"dims": [2, 0, 1]}}}]}}


def phi3v_processor_config():
    """Phi-3-vision's image preprocessing as its packages ship it (the HD transform)."""
    return {"processor": {"name": "image_processing", "transforms": [
        {"operation": {"name": "decode_image", "domain": "com.microsoft.extensions",
                       "type": "DecodeImage", "attrs": {"color_space": "BGR"}}},
        {"operation": {"name": "convert_to_rgb", "domain": "com.microsoft.extensions",
                       "type": "ConvertRGB"}},
        {"operation": {"name": "phi3_image_transform", "domain": "com.microsoft.extensions",
                       "type": "Phi3ImageTransform", "attrs": {"num_crops": 4, "num_img_tokens": 144}}},
    ]}}


def _scalar_i64(v):
    import onnx
    return onnx.numpy_helper.from_array(np.array(v, dtype=np.int64))


def processor_config(qwen2_5=False):
    """Qwen3-VL-style image preprocessing (onnxruntime-extensions' processor format) whose
    Resize needs smart_resize: the size follows the image, snapped to 32-pixel multiples
    within a pixel budget. qwen2_5: Qwen2.5-VL's (14-pixel patches, 28-pixel multiples, CLIP
    mean and std, the normalisation's qwen2_5_vl flag), as its packages ship it."""
    if qwen2_5:
        mean, std, flag, patch, name = ([0.48145466, 0.4578275, 0.40821073],
                                        [0.26862954, 0.26130258, 0.27577711], "qwen2_5_vl", 14,
                                        "qwen2_5_image_processor")
    else:
        mean, std, flag, patch, name = [0.5] * 3, [0.5] * 3, "qwen3_vl", 16, "qwen3_vl_image_processor"

    def op(name, kind, **attrs):
        o = {"operation": {"name": name, "type": kind}}
        if attrs:
            o["operation"]["attrs"] = attrs
        return o
    return {"processor": {"name": name, "transforms": [
        op("decode_image", "DecodeImage", color_space="RGB"),
        op("convert_to_rgb", "ConvertRGB"),
        op("resize", "Resize", width=540, height=360, smart_resize=1, min_pixels=3136,
           max_pixels=12845056, patch_size=patch, merge_size=2),
        op("rescale", "Rescale", rescale_factor=1.0 / 255.0),
        op("normalize", "Normalize", mean=mean, std=std, **{flag: 1}),
        op("patch_image", "PatchImage", patch_size=patch, temporal_patch_size=2, merge_size=2),
    ]}}
