"""Write a whole package: model.onnx (+ .data), genai_config.json, tokenizer files."""

import json
import os

from .decoder import arch_from_spec, pad_heads


def genai_config(spec, filename="model.onnx"):
    """genai_config.json in the shape onnxruntime-genai's model builder writes for CPU."""
    return {
        "model": {
            "bos_token_id": spec.bos_token_id,
            "context_length": spec.context_length,
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "filename": filename,
                "head_size": spec.head_size,
                "hidden_size": spec.hidden_size,
                "inputs": {
                    "input_ids": "input_ids",
                    "attention_mask": "attention_mask",
                    "past_key_names": "past_key_values.%d.key",
                    "past_value_names": "past_key_values.%d.value",
                },
                "outputs": {
                    "logits": "logits",
                    "present_key_names": "present.%d.key",
                    "present_value_names": "present.%d.value",
                },
                "num_attention_heads": spec.num_heads,
                "num_hidden_layers": spec.num_layers,
                "num_key_value_heads": spec.num_kv_heads,
            },
            "eos_token_id": spec.eos_token_id,
            "pad_token_id": spec.pad_token_id,
            "type": spec.model_type,
            "vocab_size": spec.vocab_size,
        },
        "search": search_section(spec.context_length),
    }


def search_section(max_length):
    """genai_config.json's search section as the builder writes it."""
    return {
        "diversity_penalty": 0.0,
        "do_sample": False,
        "early_stopping": True,
        "length_penalty": 1.0,
        "max_length": max_length,
        "min_length": 0,
        "no_repeat_ngram_size": 0,
        "num_beams": 1,
        "num_return_sequences": 1,
        "past_present_share_buffer": True,
        "repetition_penalty": 1.0,
        "temperature": 1.0,
        "top_k": 50,
        "top_p": 1.0,
    }


def kv_quant_config(cfg, opts):
    """With the builder's quantized KV caches its CPU config keeps past and present apart."""
    if opts.kv_quant != "none":
        cfg["search"]["past_present_share_buffer"] = False
    return cfg


def hidden_states_config(cfg, opts):
    """With exclude_lm_head the builder's config has no logits; without a cache (no_kv) it
    names no past or present. The hidden_states output itself is not in the builder's
    config: a runtime finds it by its name."""
    outs, ins = cfg["model"]["decoder"]["outputs"], cfg["model"]["decoder"]["inputs"]
    if opts.hidden_states == "exclude":
        outs.pop("logits", None)
    if opts.no_kv:
        for d in (ins, outs):
            for k in [k for k in d if k.startswith(("past_", "present_"))]:
                del d[k]
    return cfg


def write_sentence_transformers(out_dir, pooling, normalize):
    """The files sentence-transformers keeps beside a model, which say how its vectors are
    made: modules.json (Transformer, Pooling, and Normalize when normalize) and the Pooling
    module's 1_Pooling/config.json with one mode (cls, mean or lasttoken)."""
    mods = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        mods.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
        os.makedirs(os.path.join(out_dir, "2_Normalize"), exist_ok=True)
    write_json(os.path.join(out_dir, "modules.json"), mods)
    os.makedirs(os.path.join(out_dir, "1_Pooling"), exist_ok=True)
    with open(os.path.join(out_dir, "genai_config.json")) as f:
        hidden = json.load(f)["model"]["decoder"]["hidden_size"]
    modes = ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens", "lasttoken")
    cfg = {"word_embedding_dimension": hidden}
    cfg.update({f"pooling_mode_{m}": m == {"cls": "cls_token", "mean": "mean_tokens",
                                           "lasttoken": "lasttoken"}[pooling] for m in modes})
    cfg["include_prompt"] = True
    write_json(os.path.join(out_dir, "1_Pooling", "config.json"), cfg)


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=4, ensure_ascii=False)
        f.write("\n")


def write_package(out_dir, spec, weights, opts, tokenizer, tokenizer_cfg):
    """Build the graph and write every file; returns a summary dict."""
    os.makedirs(out_dir, exist_ok=True)
    if opts.head_multiple:
        spec, weights = pad_heads(spec, weights, opts.head_multiple)
    from .transformer import TransformerBuilder
    builder = TransformerBuilder(arch_from_spec(spec, opts.shared_embeddings), opts, out_dir)
    model_path, data_bytes = builder.build(weights, true_head=spec.true_head_size)
    info = _finish(out_dir, hidden_states_config(kv_quant_config(genai_config(spec), opts), opts), tokenizer,
                   tokenizer_cfg, builder,
                   model_path, data_bytes)
    info.update(head_size=spec.head_size, true_head_size=spec.true_head_size or spec.head_size)
    return info


def _finish(out_dir, cfg, tokenizer, tokenizer_cfg, builder, model_path, data_bytes):
    """Writes the config and tokenizer files; the summary of a written package."""
    write_json(os.path.join(out_dir, "genai_config.json"), cfg)
    write_json(os.path.join(out_dir, "tokenizer.json"), tokenizer)
    write_json(os.path.join(out_dir, "tokenizer_config.json"), tokenizer_cfg)
    return {
        "dir": out_dir,
        "model_bytes": os.path.getsize(model_path),
        "data_bytes": data_bytes,
        "ops": dict(sorted(builder.g.op_counts.items())),
        "initializers": len(builder.g.initializers),
    }


# -- packages of any Arch (arch.py): hybrids, MoE, every model type of catalog.py --------

def arch_genai_config(a, split=False):
    """genai_config.json as the builder writes it for Arch a (split: the text decoder of a
    vision-language package, fed inputs_embeds, with its embedding and vision sections)."""
    from .arch import ATTENTION, CONV, LINEAR
    kinds = {a.kind(i) for i in range(a.layers)}
    ins = {"inputs_embeds": "inputs_embeds"} if split else {"input_ids": "input_ids"}
    ins["attention_mask"] = "attention_mask"
    outs = {"logits": "logits"}
    if a.position_rank():
        ins["position_ids"] = "position_ids"
    if ATTENTION in kinds:
        ins.update(past_key_names="past_key_values.%d.key", past_value_names="past_key_values.%d.value")
        outs.update(present_key_names="present.%d.key", present_value_names="present.%d.value")
    if kinds & {LINEAR, CONV}:
        ins["past_conv_names"] = "past.%d.conv"
        outs["present_conv_names"] = "present.%d.conv"
    if LINEAR in kinds:
        ins["past_recurrent_names"] = "past.%d.recurrent"
        outs["present_recurrent_names"] = "present.%d.recurrent"
    dec = {
        "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
        "filename": "model.onnx",
        "head_size": a.head_dim,
        "hidden_size": a.hidden,
        "inputs": ins,
        "outputs": outs,
        "num_attention_heads": a.heads,
        "num_hidden_layers": a.layers,
        "num_key_value_heads": a.kv_heads,
    }
    if CONV in kinds:
        dec["layer_types"] = ["conv" if a.kind(i) == CONV else "full_attention" for i in range(a.layers)]
        dec["conv_cache_size"] = a.conv_L - 1
    windowed = [i for i in a.attention_layers() if a.sliding(i)]
    if windowed and a.window_cache:  # full-length caches: the builder writes no section
        dec["sliding_window"] = {"window_size": a.sliding_window, "slide_key_value_cache": False,
                                 "slide_inputs": False, "layers": windowed, "cache_slack": 0}
    model = {"bos_token_id": a.bos, "context_length": a.context, "decoder": dec, "eos_token_id": a.eos,
             "pad_token_id": a.pad, "type": a.model_type, "vocab_size": a.vocab}
    model.update(a.config_extra)
    return {"model": model, "search": search_section(a.context)}


def arch_tokenizer(a, extra_specials=()):
    """A byte-level BPE tokenizer.json and tokenizer_config.json with the model's bos/pad and
    eos (and any extra special tokens) as contiguous special ids at the top of the range."""
    from .synthetic import byte_bpe_tokenizer
    eos = a.eos[0] if isinstance(a.eos, list) else a.eos
    named = {a.bos: "<|endoftext|>", a.pad: "<|endoftext|>", eos: "<|im_end|>"}
    for i, text in extra_specials:
        named[i] = text
    ids = sorted(named)
    lo = ids[0]
    specials = [(i, named.get(i, f"<|special_{i}|>")) for i in range(lo, ids[-1] + 1)]
    if lo < 300:
        raise ValueError("special token ids must lie above the byte and merge ids")
    tok = byte_bpe_tokenizer(specials)
    cfg = {
        "add_prefix_space": False,
        "added_tokens_decoder": {str(i): {"content": c, "lstrip": False, "normalized": False, "rstrip": False,
                                          "single_word": False, "special": True} for i, c in specials},
        "bos_token": named[a.bos], "eos_token": named[eos], "pad_token": named[a.pad],
        "clean_up_tokenization_spaces": False, "model_max_length": a.context,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    return tok, cfg


def write_arch_package(out_dir, a, opts, weights, split_ids=None):
    """Writes a package for Arch a: model.onnx (+ .data), genai_config.json, tokenizer files;
    with split_ids (the image token ids), a split vision-language package instead: the text
    decoder fed inputs_embeds, embedding.onnx, vision.onnx and processor_config.json."""
    from . import split as split_graphs
    from .transformer import TransformerBuilder
    os.makedirs(out_dir, exist_ok=True)
    if opts.dtype == "fp16" and (a.layer_types or a.mlp == "moe"):
        raise ValueError(f"{a.model_type}: fp16 packages are written for dense attention-only models only")
    builder = TransformerBuilder(a, opts, out_dir, inputs_embeds=split_ids is not None)
    model_path, data_bytes = builder.build(weights)
    cfg = hidden_states_config(kv_quant_config(arch_genai_config(a, split=split_ids is not None), opts), opts)
    extra = []
    if split_ids is not None and a.model_type == "phi3v":
        m = cfg["model"]
        m["type"] = "phi3v"
        m["embedding"] = {"filename": "embedding.onnx",
                          "inputs": {"input_ids": "input_ids", "image_features": "image_features"},
                          "outputs": {"inputs_embeds": "inputs_embeds"}}
        m["vision"] = {"filename": "vision.onnx",
                       "inputs": {"pixel_values": "pixel_values", "image_sizes": "image_sizes"},
                       "outputs": {"image_features": "image_features"}}
        table = weights.get("embed", (a.vocab, a.hidden), "emb")
        split_graphs.write_embedding(out_dir, a.hidden, table, None)
        split_graphs.write_phi3v_vision(out_dir, a.hidden,
                                        weights.get("vision.proj", (a.hidden, 12)))
        write_json(os.path.join(out_dir, "processor_config.json"), split_graphs.phi3v_processor_config())
    elif split_ids is not None and a.model_type == "gemma3":
        # the image tokens of Gemma 3's processor (<start_of_image> expands to them) below
        # the other specials
        img = {"boi_token_id": a.vocab - 8, "image_token_id": a.vocab - 7, "eoi_token_id": a.vocab - 6}
        m = cfg["model"]
        m["type"] = "gemma3"
        m["image_token_id"] = img["image_token_id"]
        m["embedding"] = {"filename": "embedding.onnx",
                          "inputs": {"input_ids": "input_ids", "image_features": "image_features"},
                          "outputs": {"inputs_embeds": "inputs_embeds"}}
        m["vision"] = {"filename": "vision.onnx", "inputs": {"pixel_values": "pixel_values"},
                       "outputs": {"image_features": "image_features"}}
        table = weights.get("embed", (a.vocab, a.hidden), "emb")
        split_graphs.write_embedding(out_dir, a.hidden, table, img["image_token_id"])
        split_graphs.write_gemma3_vision(out_dir, a.hidden, weights.get("vision.proj", (a.hidden, 12)))
        write_json(os.path.join(out_dir, "processor_config.json"), split_graphs.gemma3_processor_config())
        extra = [(img["boi_token_id"], "<start_of_image>"), (img["image_token_id"], "<image_soft_token>"),
                 (img["eoi_token_id"], "<end_of_image>")]
    elif split_ids is not None:
        vl_type = {"qwen3_5_text": "qwen3_5", "qwen3_5_moe_text": "qwen3_5_moe",
                   "qwen2_5_vl": "qwen2_5_vl", "qwen3_vl": "qwen3_vl"}[a.model_type]
        patch = 14 if vl_type == "qwen2_5_vl" else 16
        m = cfg["model"]
        m["type"] = vl_type
        m["embedding"] = {"filename": "embedding.onnx",
                          "inputs": {"input_ids": "input_ids", "image_features": "image_features"},
                          "outputs": {"inputs_embeds": "inputs_embeds"}}
        m["vision"] = {"filename": "vision.onnx", "spatial_merge_size": 2,
                       "inputs": {"pixel_values": "pixel_values", "image_grid_thw": "image_grid_thw"},
                       "outputs": {"image_features": "image_features"}}
        if patch != 16:
            m["vision"]["patch_size"] = patch
        for key in ("image_token_id", "video_token_id", "vision_start_token_id"):
            m[key] = split_ids[key]
        table = weights.get("embed", (a.vocab, a.hidden), "emb")
        split_graphs.write_embedding(out_dir, a.hidden, table, split_ids["image_token_id"])
        values = split_graphs.patch_values(patch)
        split_graphs.write_vision(out_dir, a.hidden,
                                  weights.get("visual.merger", (a.hidden, split_graphs.MERGE * values)), patch)
        write_json(os.path.join(out_dir, "processor_config.json"),
                   split_graphs.processor_config(qwen2_5=vl_type == "qwen2_5_vl"))
        names = {"vision_start_token_id": "<|vision_start|>", "vision_end_token_id": "<|vision_end|>",
                 "image_token_id": "<|image_pad|>", "video_token_id": "<|video_pad|>"}
        extra = [(split_ids[k], t) for k, t in names.items() if k in split_ids]
    tok, tok_cfg = arch_tokenizer(a, extra)
    return _finish(out_dir, cfg, tok, tok_cfg, builder, model_path, data_bytes)
